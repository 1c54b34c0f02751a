//! Model families as the pipeline sees them: what each architecture reads
//! from the grid file (its keys, defaults and training recipe), its part of a
//! train step's key and the files it reads, and how its `train` step fits
//! it. The models themselves (`model::<architecture>`) know nothing of grid
//! files, plans or steps.
//!
//! This file is the registry. A new architecture is its model folder under
//! `grid-core/src/model/` with its variants in `model/architecture.rs`, a
//! folder here (its [`Family`], `parse`, `key`, `assets`, `fit`, sizes), and
//! here: its keys in [`RawModel`], its variant of [`ArchitectureSpec`] and
//! an arm in each of its matches (the compiler points at every one).

pub mod bert;
pub mod bilstm;
pub mod rationale;
pub mod table;
mod train_data;

pub use train_data::TrainData;

use std::ops::Range;
use std::path::{Path, PathBuf};

use anyhow::Result;
use burn::tensor::backend::AutodiffBackend;
use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

use crate::context::StepContext;
use bert::{BertSpec, HeadInit, PositionInit};
use bilstm::{BiLstmSpec, PadEmbedding, VocabSpec};
use grid_cache::{Cache, CacheError};
use grid_core::model::{Architecture, ModelAssets};
use grid_core::values::{Positive, Share};
use rationale::RationaleSpec;
use table::{ModelSpec, OptimizerName, RawTraining, SpanError};

/// The registry: each architecture's family.
pub fn of(architecture: Architecture) -> &'static Family {
    match architecture {
        Architecture::Bilstm => &bilstm::FAMILY,
        Architecture::Bert => &bert::FAMILY,
        Architecture::Rationale => &rationale::FAMILY,
    }
}

/// A model's architecture with its own settings, as the grid file gives them.
#[derive(Debug, Clone, PartialEq)]
pub enum ArchitectureSpec {
    Bilstm(BiLstmSpec),
    Bert(BertSpec),
    Rationale(RationaleSpec),
}

impl ArchitectureSpec {
    /// The architecture's own keys of a `[[models]]` table, once the table's
    /// keys of other architectures have been refused.
    pub(crate) fn parse(raw: &RawModel, name: &str) -> Result<Self, SpanError> {
        Ok(match raw.architecture {
            Architecture::Bilstm => ArchitectureSpec::Bilstm(bilstm::parse(raw)),
            Architecture::Bert => ArchitectureSpec::Bert(bert::parse(raw, name)?),
            Architecture::Rationale => ArchitectureSpec::Rationale(rationale::parse(raw, name)?),
        })
    }

    pub fn architecture(&self) -> Architecture {
        match self {
            ArchitectureSpec::Bilstm(_) => Architecture::Bilstm,
            ArchitectureSpec::Bert(_) => Architecture::Bert,
            ArchitectureSpec::Rationale(_) => Architecture::Rationale,
        }
    }

    /// The `hf://` checkpoint the model starts from, if it names one.
    pub fn hub_checkpoint(&self) -> Option<&str> {
        match self {
            ArchitectureSpec::Bilstm(_) | ArchitectureSpec::Rationale(_) => None,
            ArchitectureSpec::Bert(spec) => bert::hub_checkpoint(spec),
        }
    }

    /// Multiply-adds per token of a forward pass, from the sizes the grid
    /// file gives; `None` where they are read only when a step runs.
    pub fn macs_per_token(&self) -> Option<f64> {
        match self {
            ArchitectureSpec::Bilstm(spec) => Some(bilstm::macs_per_token(spec)),
            ArchitectureSpec::Bert(spec) => bert::macs_per_token(spec),
            ArchitectureSpec::Rationale(spec) => Some(rationale::macs_per_token(spec)),
        }
    }

    /// The forward pass's multiply-adds per token, from the grid file or, for
    /// a checkpoint, from its config.json when that is already on this
    /// machine (nothing is downloaded to estimate).
    pub fn macs_per_token_with(&self, model: &str, assets: &ModelAssets) -> Option<f64> {
        self.macs_per_token().or_else(|| {
            let ModelAssets::Checkpoint { source, cache_root } = assets else { return None };
            if !source.dir(cache_root).join("config.json").is_file() {
                return None;
            }
            let layers = self.dense_layers(model, assets).ok()?;
            Some(layers.iter().map(|l| (l.inputs * l.outputs * l.per_pass) as f64).sum())
        })
    }

    /// Tokens the model reads for a text of `words` whitespace words: the
    /// BiLSTM reads words; a BERT-family tokenizer splits some into pieces
    /// (≈ 1.3 per word on SST-2 with BERT's WordPiece) and adds `[CLS]` and
    /// `[SEP]`. What `grid plan --estimate` counts tokens by.
    pub fn tokens_for_words(&self, words: f64) -> f64 {
        match self {
            ArchitectureSpec::Bilstm(_) | ArchitectureSpec::Rationale(_) => words,
            ArchitectureSpec::Bert(_) => 1.3 * words + 2.0,
        }
    }

    /// A rationale model's selector and target rate; `None` for the others.
    pub fn rationale_setting(&self) -> Option<grid_core::model::rationale::RationaleSetting> {
        match self {
            ArchitectureSpec::Rationale(spec) => Some(grid_core::model::rationale::RationaleSetting {
                selector: spec.selector,
                selection_rate: spec.selection_rate.get(),
            }),
            ArchitectureSpec::Bilstm(_) | ArchitectureSpec::Bert(_) => None,
        }
    }

    /// Whether its train step trains (a checkpoint taken as it is does not).
    pub fn trains(&self) -> bool {
        match self {
            ArchitectureSpec::Bilstm(_) | ArchitectureSpec::Rationale(_) => true,
            ArchitectureSpec::Bert(spec) => !matches!(spec.init, bert::BertInit::Pretrained { fine_tune: false, .. }),
        }
    }

    /// Its part of a train step's key; `asset_hash` stands for the content
    /// of the files it reads (see [`Self::assets`]).
    pub fn key(&self, asset_hash: Option<&str>) -> Value {
        match self {
            ArchitectureSpec::Bilstm(spec) => bilstm::key(spec, asset_hash),
            ArchitectureSpec::Bert(spec) => bert::key(spec, asset_hash),
            ArchitectureSpec::Rationale(spec) => rationale::key(spec, asset_hash),
        }
    }

    /// The external files model `model` reads (GloVe, a checkpoint), and the
    /// hash that stands for their content in its train keys.
    pub fn assets(&self, model: &str, base: &Path, cache: &Cache) -> Result<(ModelAssets, Option<String>), AssetError> {
        match self {
            ArchitectureSpec::Bilstm(spec) => bilstm::assets(spec, model, base, cache),
            ArchitectureSpec::Bert(spec) => bert::assets(spec, model, base, cache),
            ArchitectureSpec::Rationale(spec) => rationale::assets(spec, model, base, cache),
        }
    }

    /// Trains `model` on `data` and saves it under `out` (the `train` step).
    pub fn fit<B: AutodiffBackend>(
        &self,
        model: &ModelSpec,
        assets: &ModelAssets,
        data: &TrainData,
        out: &Path,
        ctx: &StepContext,
        device: &B::Device,
    ) -> Result<()> {
        match self {
            ArchitectureSpec::Bilstm(spec) => bilstm::fit::fit::<B>(model, spec, assets, data, out, ctx, device),
            ArchitectureSpec::Bert(spec) => bert::fit::fit::<B>(model, spec, assets, data, out, ctx, device),
            ArchitectureSpec::Rationale(spec) => rationale::fit::fit::<B>(model, spec, assets, data, out, ctx, device),
        }
    }

    /// The dense layers of one forward pass (what `grid bench gemm` times);
    /// a pretrained checkpoint's sizes come from its config.json in `assets`.
    pub fn dense_layers(&self, model: &str, assets: &ModelAssets) -> Result<Vec<DenseLayer>> {
        match self {
            ArchitectureSpec::Bilstm(spec) => Ok(bilstm::dense_layers(spec)),
            ArchitectureSpec::Bert(spec) => bert::dense_layers(spec, model, assets),
            ArchitectureSpec::Rationale(spec) => Ok(rationale::dense_layers(spec)),
        }
    }
}

/// Why a model's external files (GloVe, a checkpoint) cannot be used: found
/// while the grid is planned, so nothing has run.
#[derive(Debug, thiserror::Error)]
pub enum AssetError {
    #[error("model `{model}`: GloVe file {path} not found")]
    MissingGlove { model: String, path: PathBuf },
    #[error(
        "model `{model}`: GloVe file {path}:{line}: {found}-dimensional vectors, but `embedding_dim` is {expected}; set `embedding_dim = {found}`"
    )]
    GloveDimension { model: String, path: PathBuf, line: usize, found: usize, expected: usize },
    #[error("model `{model}`: GloVe: {source}")]
    Glove { model: String, source: grid_core::model::glove::GloveError },
    #[error("model `{model}`: checkpoint {path}: {message}")]
    Checkpoint { model: String, path: PathBuf, message: String },
    #[error(transparent)]
    Cache(#[from] CacheError),
}

/// One shape of dense layer in a model's forward pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DenseLayer {
    pub name: &'static str,
    pub inputs: usize,
    pub outputs: usize,
    /// How many layers of this shape one pass runs.
    pub per_pass: usize,
}

/// What an architecture says of itself to the grid file and the planner.
#[derive(Debug)]
pub struct Family {
    /// Its keys of `[[models]]`, beside `name`, `architecture` and `training`.
    pub keys: &'static [&'static str],
    /// What a key of another architecture most likely meant here.
    pub hint: fn(&str) -> Option<&'static str>,
    /// The training defaults.
    pub recipe: Recipe,
}

/// An architecture's training defaults; the rest are shared (weight decay
/// 5e-6, ≤ 35,000 steps, early stop after 10,000 without gain).
#[derive(Debug, Clone, Copy)]
pub struct Recipe {
    pub optimizer: OptimizerName,
    pub learning_rate: f64,
    pub batch_size: usize,
    /// A linear warm-up over this share of the steps then a linear decay; `None`: constant.
    pub warmup_share: Option<f64>,
    /// Clip the global gradient norm at this value; `None`: no clipping.
    pub max_grad_norm: Option<f64>,
    /// Keep the last weights rather than the best evaluation's, unless the
    /// grid file says `keep`.
    pub keep_last: bool,
}

/// A `[[models]]` table as written: every key of every architecture, each
/// architecture's `parse` reading its own.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawModel {
    pub(crate) name: Spanned<String>,
    pub(crate) architecture: Architecture,
    // Both: BiLSTM hidden size per direction / BERT hidden size; dropout.
    pub(crate) hidden_size: Option<Spanned<Positive>>,
    pub(crate) dropout: Option<Spanned<Share>>,
    // BiLSTM.
    pub(crate) embedding_dim: Option<Spanned<Positive>>,
    pub(crate) attention_size: Option<Spanned<Positive>>,
    pub(crate) mlp_size: Option<Spanned<usize>>,
    pub(crate) word_dropout: Option<Spanned<Share>>,
    pub(crate) glove: Option<Spanned<String>>,
    pub(crate) vocab: Option<Spanned<VocabSpec>>,
    pub(crate) pad_embedding: Option<Spanned<PadEmbedding>>,
    pub(crate) freeze_embeddings: Option<Spanned<bool>>,
    // BERT.
    pub(crate) checkpoint: Option<Spanned<String>>,
    pub(crate) num_hidden_layers: Option<Spanned<Positive>>,
    pub(crate) num_attention_heads: Option<Spanned<Positive>>,
    pub(crate) intermediate_size: Option<Spanned<Positive>>,
    pub(crate) wordpiece_vocab_size: Option<Spanned<Positive>>,
    pub(crate) lowercase: Option<Spanned<bool>>,
    pub(crate) position_init: Option<Spanned<PositionInit>>,
    pub(crate) head: Option<Spanned<HeadInit>>,
    pub(crate) fine_tune: Option<Spanned<bool>>,
    // Rationale.
    pub(crate) selector: Option<Spanned<grid_core::model::rationale::SelectorKind>>,
    pub(crate) selection_rate: Option<Spanned<Share>>,
    pub(crate) lambda: Option<Spanned<f64>>,
    pub(crate) rate_penalty: Option<Spanned<grid_core::model::rationale::rate::RateScope>>,
    pub(crate) predictor_input: Option<Spanned<grid_core::model::rationale::PredictorInput>>,
    #[serde(default)]
    pub(crate) training: RawTraining,
}

/// The architecture keys a table sets, with their spans, in the table's field order.
macro_rules! keys_set {
    ($raw:expr, $($key:ident),* $(,)?) => {
        [$((stringify!($key), $raw.$key.as_ref().map(|v| v.span()))),*]
            .into_iter()
            .filter_map(|(key, span)| span.map(|span| (key, span)))
            .collect::<Vec<(&'static str, Range<usize>)>>()
    };
}

impl RawModel {
    pub(crate) fn keys_set(&self) -> Vec<(&'static str, Range<usize>)> {
        keys_set!(
            self,
            hidden_size,
            dropout,
            embedding_dim,
            attention_size,
            mlp_size,
            word_dropout,
            glove,
            vocab,
            pad_embedding,
            freeze_embeddings,
            checkpoint,
            num_hidden_layers,
            num_attention_heads,
            intermediate_size,
            wordpiece_vocab_size,
            lowercase,
            position_init,
            head,
            fine_tune,
            selector,
            selection_rate,
            lambda,
            rate_penalty,
            predictor_input,
        )
    }
}
