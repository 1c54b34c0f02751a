//! A `bert` model whose checkpoint is a ModernBERT (`model_type =
//! "modernbert"`): fitted as the BERT family's are (the shortcut tokens
//! appended to its tokenizer with embedding rows of their own, a fresh head
//! or the checkpoint's, the same recipe and record), on its own encoder
//! (`model::modernbert`).

use std::path::Path;

use anyhow::{Context, Result};
use burn::tensor::backend::AutodiffBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::fit::{Details, PretrainedRecord};
use super::{DenseLayer, HeadInit};
use crate::architectures::TrainData;
use crate::model::hub::CheckpointSource;
use crate::model::modernbert::load::{ClassifierStart, add_word_embeddings, load_pretrained, read_config};
use crate::model::modernbert::saved;
use crate::spec::{BertInit, BertSpec, ModelSpec};
use crate::steps::StepContext;
use crate::text::TextEncoder;
use crate::text::subword::SubwordEncoder;
use crate::train::{TrainSetup, train};

/// The `model_type` this file fits.
pub const MODEL_TYPE: &str = "modernbert";

/// Fine-tunes (or, with `fine_tune = false`, takes) the ModernBERT
/// checkpoint `source`, resolved to `dir`, and saves it under `out`.
#[allow(clippy::too_many_arguments)]
pub fn fit<B: AutodiffBackend>(
    model: &ModelSpec,
    spec: &BertSpec,
    source: &CheckpointSource,
    dir: &Path,
    data: &TrainData,
    out: &Path,
    ctx: &StepContext,
    device: &B::Device,
) -> Result<()> {
    let BertInit::Pretrained { head, fine_tune, .. } = spec.init else {
        anyhow::bail!("model `{}`: a ModernBERT starts from a checkpoint", model.name)
    };
    let rng = &mut ChaCha8Rng::seed_from_u64(model.training.seed);
    let context = || format!("model `{}`", model.name);
    let num_outputs = data.num_outputs();
    let tokenizer = SubwordEncoder::from_pretrained_dir(dir, data.shortcut_tokens).with_context(context)?;
    let start = match head {
        HeadInit::Fresh => ClassifierStart::Fresh,
        HeadInit::Checkpoint => ClassifierStart::Checkpoint,
    };
    let (classifier, report) = load_pretrained::<B>(dir, num_outputs, start, rng, device)
        .with_context(|| format!("model `{}`: checkpoint {source}", model.name))?;
    let added = tokenizer.vocab_size().saturating_sub(classifier.config().vocab_size);
    let mut classifier = add_word_embeddings(classifier, added, rng);
    if let Some(p) = spec.dropout {
        classifier = classifier.with_dropout(p.get());
    }
    let max_length = data.max_length.min(classifier.config().max_position_embeddings);
    let (train_enc, validation_enc) = data.encode(&tokenizer, max_length);
    let setup = TrainSetup {
        pad_id: tokenizer.pad_id(),
        unk_id: tokenizer.unk_id(),
        word_dropout: 0.0,
        progress: ctx.progress,
        log: ctx.log,
        buckets: ctx.compute.buckets,
        snapshots: ctx.snapshots.as_ref(),
        stop: &crate::interrupt::requested,
    };
    let (best, summary) = if fine_tune {
        train::<B, _>(classifier, &model.training, &setup, &train_enc, &validation_enc, device).with_context(context)?
    } else {
        crate::train::untrained::<B, _>(classifier, &setup, &validation_enc, device)
    };
    saved::save(out, &best, num_outputs, max_length, &tokenizer)?;
    let pretrained = PretrainedRecord {
        source: source.to_string(),
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

/// Its dense layers per forward pass: per layer the fused query/key/value
/// projection, the output projection, the GeGLU's input-and-gate and its
/// output.
pub fn dense_layers(dir: &Path) -> Result<Vec<DenseLayer>> {
    let config = read_config(dir)?;
    let (h, i, layers) = (config.hidden_size, config.intermediate_size, config.num_hidden_layers);
    let layer = |name, inputs, outputs, per_pass| DenseLayer { name, inputs, outputs, per_pass };
    Ok(vec![
        layer("attention q/k/v", h, 3 * h, layers),
        layer("attention output", h, h, layers),
        layer("GeGLU in and gate", h, 2 * i, layers),
        layer("GeGLU out", i, h, layers),
    ])
}
