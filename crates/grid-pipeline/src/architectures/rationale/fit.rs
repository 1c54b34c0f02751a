//! A rationale model from its spec: the BiLSTM's vocabulary and embeddings
//! (random or GloVe), training with its objective, the saved checkpoint and
//! its `training.json` (the selection rates it reached on validation).

use std::path::Path;

use anyhow::{Context, Result};
use burn::tensor::backend::AutodiffBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::RationaleSpec;
use crate::architectures::TrainData;
use crate::architectures::bilstm::PadEmbedding;
use crate::architectures::bilstm::fit::{Start, start};
use crate::architectures::table::ModelSpec;
use crate::context::StepContext;
use grid_core::model::ModelAssets;
use grid_core::model::glove::GloveCoverage;
use grid_core::model::rationale::{RationaleClassifier, RationaleConfig, saved};
use grid_core::text::TextEncoder;
use grid_core::train::train;

/// What `training.json` records of a rationale model beyond what every model records.
#[derive(Serialize)]
struct Details {
    glove: Option<GloveCoverage>,
    selector: &'static str,
    selection_rate: f64,
    lambda: f64,
    rate_penalty: &'static str,
    predictor_input: &'static str,
}

pub fn fit<B: AutodiffBackend>(
    model: &ModelSpec,
    spec: &RationaleSpec,
    assets: &ModelAssets,
    data: &TrainData,
    out: &Path,
    ctx: &StepContext,
    device: &B::Device,
) -> Result<()> {
    let predictor = &spec.predictor;
    let mut rng = ChaCha8Rng::seed_from_u64(model.training.seed);
    let Start { vocab, config, embeddings, coverage } = start(model, predictor, assets, data, &mut rng)?;
    let config = RationaleConfig {
        predictor: config,
        selector: spec.selector,
        selector_hidden_size: predictor.hidden_size.get(),
        selection_rate: spec.selection_rate.get(),
        lambda: spec.lambda,
        rate_scope: spec.rate_penalty.unwrap_or_default(),
        predictor_input: spec.predictor_input.unwrap_or_default(),
    };
    let mut classifier = RationaleClassifier::<B>::new(&config, &mut rng, embeddings, device);
    if predictor.pad_embedding == PadEmbedding::Zero {
        classifier = classifier.with_zero_pad_row(config.predictor.pad_id);
    }
    let max_length = data.max_length;
    let (train_enc, validation_enc) = data.encode(&vocab, max_length);
    let setup = ctx.train_setup(&vocab, predictor.word_dropout.get());
    let (best, summary) = train::<B, _>(classifier, &model.training, &setup, &train_enc, &validation_enc, device)
        .with_context(|| format!("model `{}`", model.name))?;
    saved::save(out, &best, max_length, &vocab)?;
    let details = Details {
        glove: coverage,
        selector: spec.selector.name(),
        selection_rate: spec.selection_rate.get(),
        lambda: spec.lambda,
        rate_penalty: config.rate_scope.name(),
        predictor_input: config.predictor_input.name(),
    };
    data.write_record(out, model.kind().name(), vocab.vocab_size(), details, summary)
}
