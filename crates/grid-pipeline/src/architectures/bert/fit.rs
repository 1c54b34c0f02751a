//! A BERT-family classifier from its spec: a pretrained checkpoint of any
//! registered family (its tokenizer with the shortcut tokens appended, the
//! word-embedding rows they need, a fresh head or the checkpoint's own), or a
//! randomly initialised BERT with a WordPiece vocabulary learnt from the
//! training split; then training, and the saved checkpoint with its
//! `training.json`.

use std::path::Path;

use anyhow::{Context, Result};
use burn::tensor::backend::AutodiffBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::{BertInit, BertSpec, HeadInit, PositionInit};
use crate::architectures::TrainData;
use crate::architectures::table::ModelSpec;
use crate::context::StepContext;
use grid_core::model::ModelAssets;
use grid_core::model::bert::encoder::BertModel;
use grid_core::model::bert::load::{LoadReport, add_word_embeddings, load_head, load_pretrained, model_type};
use grid_core::model::bert::{BertClassifier, BertConfig, saved};
use grid_core::model::hub;
use grid_core::text::TextEncoder;
use grid_core::text::subword::SubwordEncoder;
use grid_core::train::train;

/// What `training.json` records of a BERT beyond what every model records.
#[derive(Serialize)]
pub(super) struct Details {
    pub(super) pretrained: Option<PretrainedRecord>,
}

/// Where a fine-tuned model started from.
#[derive(Debug, Serialize)]
pub(super) struct PretrainedRecord {
    pub(super) source: String,
    /// Word-embedding rows appended for the shortcut tokens.
    pub(super) added_tokens: usize,
    /// Whether the classification head is the checkpoint's (`head = "checkpoint"`).
    pub(super) head_from_checkpoint: bool,
    pub(super) load: LoadReport,
}

/// Trains the BERT-family model `spec` describes on `data` and saves it under
/// `out`; `assets` holds the resolved checkpoint of a pretrained one.
pub fn fit<B: AutodiffBackend>(
    model: &ModelSpec,
    spec: &BertSpec,
    assets: &ModelAssets,
    data: &TrainData,
    out: &Path,
    ctx: &StepContext,
    device: &B::Device,
) -> Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(model.training.seed);
    let context = || format!("model `{}`", model.name);
    let num_outputs = data.num_outputs();
    let dir = match assets {
        ModelAssets::Checkpoint { source, cache_root } => {
            Some(hub::resolve(source, cache_root, &hub::bar_progress(ctx.progress)).with_context(context)?)
        }
        // A BERT from scratch; GloVe is a BiLSTM's (the planner gives a BERT none).
        ModelAssets::None | ModelAssets::Glove(_) => None,
    };
    // A checkpoint whose computation has its own room is fitted there.
    if let (Some(dir), ModelAssets::Checkpoint { source, .. }) = (&dir, assets)
        && let Some(room) = super::own_room::Room::of(&model_type(dir).with_context(context)?)
    {
        let checkpoint = super::own_room::Checkpoint { source, dir, room };
        return super::own_room::fit::<B>(model, spec, &checkpoint, data, out, ctx, device);
    }
    let (tokenizer, mut config, encoder, head, pretrained) = match (&spec.init, assets, dir) {
        (BertInit::Pretrained { head, .. }, ModelAssets::Checkpoint { source, .. }, Some(dir)) => {
            let tokenizer = SubwordEncoder::from_pretrained_dir(&dir, data.shortcut_tokens).with_context(context)?;
            let (mut config, encoder, report) = load_pretrained::<B>(&dir, &mut rng, device).with_context(context)?;
            // Rows for the shortcut tokens the tokenizer appended.
            let added = tokenizer.vocab_size().saturating_sub(config.vocab_size);
            let encoder = add_word_embeddings(encoder, added, config.initializer_range, &mut rng);
            let head = match head {
                HeadInit::Fresh => None,
                HeadInit::Checkpoint => Some(
                    load_head::<B>(&dir, &config, num_outputs, device).with_context(context)?.with_context(|| {
                        format!(
                            "model `{}`: head = \"checkpoint\", but {source} has no classification head (`{}.weight`)",
                            model.name,
                            config.family().map(|f| f.head_output()).unwrap_or("classifier")
                        )
                    })?,
                ),
            };
            config.vocab_size += added;
            let record = PretrainedRecord {
                source: source.to_string(),
                added_tokens: added,
                head_from_checkpoint: head.is_some(),
                load: report,
            };
            (tokenizer, config, encoder, head, Some(record))
        }
        (BertInit::Random(shape), _, _) => {
            let texts = data.train.iter().map(|e| e.text.as_str());
            let tokenizer = SubwordEncoder::train(texts, shape.vocab_size.get(), data.shortcut_tokens, shape.lowercase)
                .with_context(context)?;
            let config = BertConfig::small(
                tokenizer.vocab_size(),
                shape.hidden_size.get(),
                shape.num_hidden_layers.get(),
                shape.num_attention_heads.get(),
                shape.intermediate_size.get(),
                data.max_length,
            );
            // The normal draw happens either way, so the other weights do not move.
            let mut encoder = BertModel::<B>::new(&config, &mut rng, device);
            if shape.positions == PositionInit::Sinusoidal {
                encoder = encoder.with_sinusoidal_positions(config.initializer_range);
            }
            (tokenizer, config, encoder, None, None)
        }
        (BertInit::Pretrained { checkpoint, .. }, _, _) => {
            anyhow::bail!("model `{}`: checkpoint `{checkpoint}` was not resolved by the plan", model.name)
        }
    };
    if let Some(p) = spec.dropout {
        config.hidden_dropout_prob = p.get();
        config.attention_probs_dropout_prob = p.get();
        config.classifier_dropout = None;
    }
    let encoder = encoder.with_dropout(&config);
    // RoBERTa's first position rows are never used: the encoder says how many are.
    let max_length = data.max_length.min(encoder.max_length());
    let classifier = match head {
        Some(head) => BertClassifier::with_head(encoder, head, &config),
        None => BertClassifier::with_encoder(encoder, &config, num_outputs, &mut rng, device),
    };
    let (train_enc, validation_enc) = data.encode(&tokenizer, max_length);
    let setup = ctx.train_setup(&tokenizer, 0.0);
    let fine_tune = !matches!(spec.init, BertInit::Pretrained { fine_tune: false, .. });
    let (best, summary) = if fine_tune {
        train::<B, _>(classifier, &model.training, &setup, &train_enc, &validation_enc, device).with_context(context)?
    } else {
        grid_core::train::untrained::<B, _>(classifier, &setup, &validation_enc, device)
    };
    saved::save(out, &best, &config, num_outputs, max_length, &tokenizer)?;
    data.write_record(out, model.kind().name(), tokenizer.vocab_size(), Details { pretrained }, summary)
}
