//! A BiLSTM from its spec: the word vocabulary of the training split, the
//! embedding matrix (random, or GloVe where the file has the word), training,
//! and the saved checkpoint with its `training.json`.

use std::path::Path;

use anyhow::{Context, Result};
use burn::tensor::backend::AutodiffBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use super::{BiLstmSpec, PadEmbedding};
use crate::architectures::TrainData;
use crate::architectures::table::ModelSpec;
use crate::context::StepContext;
use grid_core::model::ModelAssets;
use grid_core::model::bilstm::{BiLstmClassifier, BiLstmConfig, saved};
use grid_core::model::glove::{self, GloveCoverage};
use grid_core::text::TextEncoder;
use grid_core::text::vocab::WordVocab;
use grid_core::train::train;

/// What `training.json` records of a BiLSTM beyond what every model records.
#[derive(Serialize)]
struct Details {
    glove: Option<GloveCoverage>,
}

/// What a BiLSTM-sized model starts from: the training split's vocabulary,
/// its config, and the embedding rows (GloVe's where the file has the word)
/// with their coverage. The rationale model's predictor starts from the same.
pub(crate) struct Start {
    pub vocab: WordVocab,
    pub config: BiLstmConfig,
    pub embeddings: Option<Vec<f32>>,
    pub coverage: Option<GloveCoverage>,
}

/// [`Start`] for `spec` on `data`; `rng` draws the rows GloVe lacks.
pub(crate) fn start(
    model: &ModelSpec,
    spec: &BiLstmSpec,
    assets: &ModelAssets,
    data: &TrainData,
    rng: &mut ChaCha8Rng,
) -> Result<Start> {
    let vocab = WordVocab::build(
        data.train.iter().map(|e| e.text.as_str()),
        data.shortcut_tokens,
        spec.vocab.min_count.get(),
        spec.vocab.max_size.get(),
        spec.vocab.lowercase,
    );
    let config = BiLstmConfig {
        vocab_size: vocab.vocab_size(),
        embedding_dim: spec.embedding_dim.get(),
        hidden_size: spec.hidden_size.get(),
        attention_size: spec.attention_size.get(),
        mlp_size: spec.mlp_size,
        num_outputs: data.num_outputs(),
        dropout: spec.dropout.get(),
        pad_id: vocab.pad_id(),
    };
    let (embeddings, coverage) = match assets {
        ModelAssets::Glove(path) => {
            let (matrix, coverage) = glove::load(path, vocab.words(), config.embedding_dim, rng)
                .with_context(|| format!("model `{}`: GloVe", model.name))?;
            (Some(matrix), Some(coverage))
        }
        // Random embeddings; a checkpoint is a BERT's (the planner gives a BiLSTM none).
        ModelAssets::None | ModelAssets::Checkpoint { .. } => (None, None),
    };
    Ok(Start { vocab, config, embeddings, coverage })
}

/// Trains the BiLSTM `spec` describes on `data` and saves it under `out`;
/// `assets` holds the resolved GloVe file, when the spec names one.
pub fn fit<B: AutodiffBackend>(
    model: &ModelSpec,
    spec: &BiLstmSpec,
    assets: &ModelAssets,
    data: &TrainData,
    out: &Path,
    ctx: &StepContext,
    device: &B::Device,
) -> Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(model.training.seed);
    let Start { vocab, config, embeddings, coverage } = start(model, spec, assets, data, &mut rng)?;
    let mut classifier = BiLstmClassifier::<B>::new(&config, &mut rng, embeddings, device);
    if spec.pad_embedding == PadEmbedding::Zero {
        classifier = classifier.with_zero_pad_row(config.pad_id);
    }
    if spec.freeze_embeddings {
        classifier = classifier.with_frozen_embeddings();
    }
    let max_length = data.max_length;
    let (train_enc, validation_enc) = data.encode(&vocab, max_length);
    let setup = ctx.train_setup(&vocab, spec.word_dropout.get());
    let (best, summary) = train::<B, _>(classifier, &model.training, &setup, &train_enc, &validation_enc, device)
        .with_context(|| format!("model `{}`", model.name))?;
    saved::save(out, &best, &config, max_length, &vocab)?;
    data.write_record(out, model.kind().name(), vocab.vocab_size(), Details { glove: coverage }, summary)
}
