//! A `bert` model whose checkpoint's encoder has a room of its own
//! (`model::pretrained`: ModernBERT, DeBERTa-v2/v3), chosen by its
//! `model_type`: fitted as the BERT family's are (the shortcut tokens
//! appended to its tokenizer with embedding rows of their own, a fresh head
//! or the checkpoint's, the same recipe and record), on its own encoder. A
//! new room is a variant of [`Room`] and an arm in [`fit`] and
//! [`dense_layers`] (the compiler asks for both).

use std::path::Path;

use anyhow::{Context, Result};
use burn::module::AutodiffModule;
use burn::tensor::backend::AutodiffBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::fit::{Details, PretrainedRecord};
use super::{BertInit, BertSpec};
use super::{DenseLayer, HeadInit};
use crate::architectures::TrainData;
use crate::architectures::table::ModelSpec;
use crate::context::StepContext;
use grid_core::model::Classifier;
use grid_core::model::deberta::{self, DebertaClassifier};
use grid_core::model::hub::CheckpointSource;
use grid_core::model::modernbert::{self, ModernBertClassifier};
use grid_core::model::objective::Trainable;
use grid_core::model::pretrained::{ClassifierStart, PretrainedClassifier};
use grid_core::text::TextEncoder;
use grid_core::text::subword::SubwordEncoder;
use grid_core::train::train;

/// An encoder with a room of its own, as a checkpoint's `model_type` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Room {
    ModernBert,
    Deberta,
}

impl Room {
    /// The room of a checkpoint's `model_type`; `None` for the BERT
    /// family's, which has none of its own.
    pub fn of(model_type: &str) -> Option<Room> {
        match model_type {
            modernbert::MODEL_TYPE => Some(Room::ModernBert),
            deberta::MODEL_TYPE => Some(Room::Deberta),
            _ => None,
        }
    }
}

/// Where a checkpoint is fitted.
pub struct Checkpoint<'a> {
    pub source: &'a CheckpointSource,
    /// The resolved folder.
    pub dir: &'a Path,
    pub room: Room,
}

/// Fits `checkpoint` on its room's encoder and saves it under `out`.
pub fn fit<B: AutodiffBackend>(
    model: &ModelSpec,
    spec: &BertSpec,
    checkpoint: &Checkpoint,
    data: &TrainData,
    out: &Path,
    ctx: &StepContext,
    device: &B::Device,
) -> Result<()> {
    match checkpoint.room {
        Room::ModernBert => fit_room::<B, ModernBertClassifier<B>>(model, spec, checkpoint, data, out, ctx, device),
        Room::Deberta => fit_room::<B, DebertaClassifier<B>>(model, spec, checkpoint, data, out, ctx, device),
    }
}

/// Fine-tunes (or, with `fine_tune = false`, takes) a checkpoint of encoder `M`.
fn fit_room<B, M>(
    model: &ModelSpec,
    spec: &BertSpec,
    checkpoint: &Checkpoint,
    data: &TrainData,
    out: &Path,
    ctx: &StepContext,
    device: &B::Device,
) -> Result<()>
where
    B: AutodiffBackend,
    M: PretrainedClassifier<B> + Trainable<B> + AutodiffModule<B>,
    M::InnerModule: Classifier<B::InnerBackend> + PretrainedClassifier<B::InnerBackend>,
{
    let BertInit::Pretrained { head, fine_tune, .. } = spec.init else {
        anyhow::bail!("model `{}`: a {} model starts from a checkpoint", model.name, M::MODEL_TYPE)
    };
    let rng = &mut ChaCha8Rng::seed_from_u64(model.training.seed);
    let context = || format!("model `{}`", model.name);
    let num_outputs = data.num_outputs();
    let tokenizer = SubwordEncoder::from_pretrained_dir(checkpoint.dir, data.shortcut_tokens).with_context(context)?;
    let start = match head {
        HeadInit::Fresh => ClassifierStart::Fresh,
        HeadInit::Checkpoint => ClassifierStart::Checkpoint,
    };
    let (classifier, report) = M::load_pretrained(checkpoint.dir, num_outputs, start, rng, device)
        .with_context(|| format!("model `{}`: checkpoint {}", model.name, checkpoint.source))?;
    let added = tokenizer.vocab_size().saturating_sub(classifier.vocab_size());
    let mut classifier = classifier.with_added_tokens(added, rng);
    if let Some(p) = spec.dropout {
        classifier = classifier.with_dropout(p.get());
    }
    let max_length = classifier.max_positions().map_or(data.max_length, |m| data.max_length.min(m));
    let (train_enc, validation_enc) = data.encode(&tokenizer, max_length);
    let setup = ctx.train_setup(&tokenizer, 0.0);
    let (best, summary) = if fine_tune {
        train::<B, _>(classifier, &model.training, &setup, &train_enc, &validation_enc, device).with_context(context)?
    } else {
        grid_core::train::untrained::<B, _>(classifier, &setup, &validation_enc, device)
    };
    best.save(out, num_outputs, max_length, &tokenizer)?;
    let pretrained = PretrainedRecord {
        source: checkpoint.source.to_string(),
        added_tokens: added,
        head_from_checkpoint: start == ClassifierStart::Checkpoint,
        load: report,
    };
    data.write_record(
        out,
        model.kind().name(),
        tokenizer.vocab_size(),
        Details { pretrained: Some(pretrained) },
        summary,
    )
}

/// The dense layers per forward pass of the checkpoint in `dir`, whose
/// encoder is `room`'s.
pub fn dense_layers(dir: &Path, room: Room) -> Result<Vec<DenseLayer>> {
    let layer = |name, inputs, outputs, per_pass| DenseLayer { name, inputs, outputs, per_pass };
    match room {
        // Per layer the fused query/key/value projection, the output
        // projection, the GeGLU's input-and-gate and its output.
        Room::ModernBert => modernbert::load::read_config(dir).map_err(Into::into).map(|c| {
            let (h, i, layers) = (c.hidden_size, c.intermediate_size, c.num_hidden_layers);
            vec![
                layer("attention q/k/v", h, 3 * h, layers),
                layer("attention output", h, h, layers),
                layer("GeGLU in and gate", h, 2 * i, layers),
                layer("GeGLU out", i, h, layers),
            ]
        }),
        // BERT's per token; the relative table's projections run once per
        // batch, not per token, and are left out.
        Room::Deberta => deberta::load::read_config(dir).map_err(Into::into).map(|c| {
            let (h, i, layers) = (c.hidden_size, c.intermediate_size, c.num_hidden_layers);
            vec![
                layer("attention q/k/v/output", h, h, 4 * layers),
                layer("feed-forward in", h, i, layers),
                layer("feed-forward out", i, h, layers),
            ]
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures").join(name)
    }

    /// What the estimate and `grid bench gemm` count for each room, from
    /// its checkpoint's config.json; the BERT family's is not this file's.
    #[test]
    fn each_room_counts_its_own_dense_layers() {
        let shapes = |name: &str, model_type: &str| -> Vec<(usize, usize, usize)> {
            let room = Room::of(model_type).expect("a room of its own");
            let layers = dense_layers(&fixture(name), room).unwrap();
            layers.iter().map(|l| (l.inputs, l.outputs, l.per_pass)).collect()
        };
        // hidden 32, intermediate 48, 3 layers.
        assert_eq!(
            shapes("modernbert_transformers", "modernbert"),
            vec![(32, 96, 3), (32, 32, 3), (32, 96, 3), (48, 32, 3)]
        );
        // hidden 32, intermediate 48, 2 layers.
        assert_eq!(shapes("deberta_transformers", "deberta-v2"), vec![(32, 32, 8), (32, 48, 2), (48, 32, 2)]);
        assert_eq!(Room::of("bert"), None);
        let wrong = dense_layers(&fixture("bert_transformers"), Room::Deberta).unwrap_err();
        assert!(format!("{wrong:#}").contains("config.json"), "{wrong:#}");
    }
}
