//! Trained classifiers of every architecture behind one type: `config.json`
//! (architecture and hyper-parameters) says which, and each architecture's
//! `saved.rs` writes and reads its own folder: `model.safetensors` (weights,
//! burn parameter paths), `config.json`, and the tokenizer (`vocab.json` for a
//! BiLSTM, `tokenizer.json` for BERT), as burn's text-classification example
//! keeps its config beside the weights.

use std::fs;
use std::path::{Path, PathBuf};

use burn::module::Module;
use burn::prelude::*;
use burn_store::{ModuleSnapshot, SafetensorsStore};
use serde::{Deserialize, Serialize};

use super::Architecture;
use super::bert::{BertClassifier, BertConfig};
use super::bilstm::{BiLstmClassifier, BiLstmConfig};
use super::{AttentionLeaf, Classifier};
use crate::model::AttentionView;
use crate::text::TextEncoder;

pub const WEIGHTS: &str = "model.safetensors";
pub const CONFIG: &str = "config.json";
pub const VOCAB: &str = "vocab.json";

/// `config.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "architecture", rename_all = "lowercase")]
pub enum ModelConfig {
    Bilstm {
        config: BiLstmConfig,
        max_length: usize,
    },
    /// `config` is the encoder's (Hugging Face names), with `vocab_size` grown by
    /// the shortcut tokens.
    Bert {
        config: BertConfig,
        num_outputs: usize,
        max_length: usize,
    },
}

impl ModelConfig {
    /// The architecture that saved it.
    pub fn architecture(&self) -> Architecture {
        match self {
            ModelConfig::Bilstm { .. } => Architecture::Bilstm,
            ModelConfig::Bert { .. } => Architecture::Bert,
        }
    }

    pub fn max_length(&self) -> usize {
        match self {
            ModelConfig::Bilstm { max_length, .. } | ModelConfig::Bert { max_length, .. } => *max_length,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: invalid JSON: {source}")]
    Json { path: PathBuf, source: serde_json::Error },
    #[error("{path}: cannot save or load weights: {message}")]
    Weights { path: PathBuf, message: String },
    #[error("{path}: tokenizer: {message}")]
    Tokenizer { path: PathBuf, message: String },
}

/// A trained classifier of any architecture. One lives per step, so the size
/// difference between variants costs nothing worth a box.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum AnyClassifier<B: Backend> {
    Bilstm(BiLstmClassifier<B>),
    Bert(BertClassifier<B>),
}

impl<B: Backend> AnyClassifier<B> {
    /// Stops tracking parameter gradients: salience differentiates with respect
    /// to the inputs only, and a backward pass through frozen weights skips every
    /// weight-gradient matmul.
    pub fn frozen(self) -> Self {
        match self {
            AnyClassifier::Bilstm(m) => AnyClassifier::Bilstm(m.no_grad()),
            AnyClassifier::Bert(m) => AnyClassifier::Bert(m.no_grad()),
        }
    }
}

impl<B: Backend> Classifier<B> for AnyClassifier<B> {
    fn embed(&self, ids: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        match self {
            AnyClassifier::Bilstm(m) => m.embed(ids),
            AnyClassifier::Bert(m) => m.embed(ids),
        }
    }
    fn logits_from_embeddings(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Tensor<B, 2> {
        match self {
            AnyClassifier::Bilstm(m) => m.logits_from_embeddings(embeddings, mask),
            AnyClassifier::Bert(m) => m.logits_from_embeddings(embeddings, mask),
        }
    }
    fn num_outputs(&self) -> usize {
        match self {
            AnyClassifier::Bilstm(m) => m.num_outputs(),
            AnyClassifier::Bert(m) => m.num_outputs(),
        }
    }
    fn max_length(&self) -> Option<usize> {
        match self {
            AnyClassifier::Bilstm(m) => m.max_length(),
            AnyClassifier::Bert(m) => m.max_length(),
        }
    }
    fn attention_scores(
        &self,
        embeddings: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        view: AttentionView,
    ) -> Option<Tensor<B, 2>> {
        match self {
            AnyClassifier::Bilstm(m) => m.attention_scores(embeddings, mask, view),
            AnyClassifier::Bert(m) => m.attention_scores(embeddings, mask, view),
        }
    }
    fn attention_leaf(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Option<AttentionLeaf<B>> {
        match self {
            AnyClassifier::Bilstm(m) => m.attention_leaf(embeddings, mask),
            AnyClassifier::Bert(m) => m.attention_leaf(embeddings, mask),
        }
    }
    fn deeplift_logits(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Option<Tensor<B, 2>> {
        match self {
            AnyClassifier::Bilstm(m) => m.deeplift_logits(embeddings, mask),
            AnyClassifier::Bert(m) => m.deeplift_logits(embeddings, mask),
        }
    }
}

pub struct Checkpoint<B: Backend> {
    pub model: AnyClassifier<B>,
    pub encoder: Box<dyn TextEncoder>,
    pub config: ModelConfig,
}

pub(crate) fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<(), CheckpointError> {
    let json =
        serde_json::to_vec_pretty(value).map_err(|source| CheckpointError::Json { path: path.into(), source })?;
    fs::write(path, json).map_err(|source| CheckpointError::Io { path: path.into(), source })
}

pub(crate) fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, CheckpointError> {
    let bytes = fs::read(path).map_err(|source| CheckpointError::Io { path: path.into(), source })?;
    serde_json::from_slice(&bytes).map_err(|source| CheckpointError::Json { path: path.into(), source })
}

pub(crate) fn save_weights<B: Backend, M: ModuleSnapshot<B>>(dir: &Path, model: &M) -> Result<(), CheckpointError> {
    let path = dir.join(WEIGHTS);
    let mut store = SafetensorsStore::from_file(&path);
    model.save_into(&mut store).map_err(|e| CheckpointError::Weights { path: path.clone(), message: e.to_string() })?;
    // Equal tensors, equal bytes: burn writes its metadata in hash order.
    super::canonical_header::canonicalize(&path).map_err(|source| CheckpointError::Io { path, source })
}

/// Overwrites every parameter of `model` from `dir`, refusing a partial match.
pub(crate) fn load_weights<B: Backend, M: ModuleSnapshot<B> + Clone>(
    dir: &Path,
    model: &mut M,
) -> Result<(), CheckpointError> {
    let path = dir.join(WEIGHTS);
    let mut store = SafetensorsStore::from_file(&path);
    let result = model
        .load_from(&mut store)
        .map_err(|e| CheckpointError::Weights { path: path.clone(), message: e.to_string() })?;
    if !result.missing.is_empty() || !result.errors.is_empty() {
        let missing: Vec<&str> = result.missing.iter().map(|(p, _)| p.as_str()).collect();
        return Err(CheckpointError::Weights {
            path,
            message: format!("missing tensors {missing:?}; errors {:?}", result.errors),
        });
    }
    *model = super::dtype::to_backend_float(model.clone());
    Ok(())
}

/// Loads a classifier saved by any architecture's `saved::save`.
pub fn load<B: Backend>(dir: &Path, device: &B::Device) -> Result<Checkpoint<B>, CheckpointError> {
    let config: ModelConfig = read_json(&dir.join(CONFIG))?;
    match &config {
        ModelConfig::Bilstm { config: c, .. } => {
            let (model, vocab) = super::bilstm::saved::load(dir, c, device)?;
            Ok(Checkpoint { model: AnyClassifier::Bilstm(model), encoder: Box::new(vocab), config })
        }
        ModelConfig::Bert { config: c, num_outputs, .. } => {
            let (model, tokenizer) = super::bert::saved::load(dir, c, *num_outputs, device)?;
            Ok(Checkpoint { model: AnyClassifier::Bert(model), encoder: Box::new(tokenizer), config })
        }
    }
}
