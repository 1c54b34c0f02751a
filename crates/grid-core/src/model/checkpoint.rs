//! Trained classifiers of every architecture behind one type: `config.json`
//! (architecture and hyper-parameters) says which, and each architecture's
//! `saved.rs` writes and reads its own folder: `model.safetensors` (weights,
//! burn parameter paths), `config.json`, and the tokenizer (`vocab.json` for a
//! BiLSTM, `tokenizer.json` for BERT), as burn's text-classification example
//! keeps its config beside the weights.

use std::fs;
use std::path::{Path, PathBuf};

use burn::prelude::*;
use burn_store::{ModuleSnapshot, SafetensorsStore};
use serde::{Deserialize, Serialize};

pub use super::architecture::{AnyClassifier, ModelConfig};
use crate::text::TextEncoder;

pub const WEIGHTS: &str = "model.safetensors";
pub const CONFIG: &str = "config.json";
pub const VOCAB: &str = "vocab.json";

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

/// A subword model's trained folder (the BERT family, ModernBERT, DeBERTa):
/// its weights, `config` as `config.json` and its tokenizer.
pub(crate) fn save_subword<B: Backend, M: ModuleSnapshot<B>>(
    dir: &Path,
    model: &M,
    config: &ModelConfig,
    tokenizer: &crate::text::subword::SubwordEncoder,
) -> Result<(), CheckpointError> {
    save_weights(dir, model)?;
    write_json(&dir.join(CONFIG), config)?;
    tokenizer.save(dir).map_err(|e| CheckpointError::Tokenizer { path: dir.into(), message: e.to_string() })
}

/// What [`save_subword`] wrote, read back: `checked` is the config's own
/// check, `model` builds a model of its shape (every parameter is then
/// overwritten, so any initialisation will do).
pub(crate) fn load_subword<B: Backend, M: ModuleSnapshot<B> + Clone>(
    dir: &Path,
    checked: Result<(), String>,
    model: impl FnOnce() -> M,
) -> Result<(M, crate::text::subword::SubwordEncoder), CheckpointError> {
    checked.map_err(|message| CheckpointError::Weights { path: dir.join(CONFIG), message })?;
    let tokenizer = crate::text::subword::SubwordEncoder::load(dir)
        .map_err(|e| CheckpointError::Tokenizer { path: dir.into(), message: e.to_string() })?;
    let mut model = model();
    load_weights(dir, &mut model)?;
    Ok((model, tokenizer))
}

/// Loads a classifier saved by any architecture's `saved::save`.
pub fn load<B: Backend>(dir: &Path, device: &B::Device) -> Result<Checkpoint<B>, CheckpointError> {
    let config: ModelConfig = read_json(&dir.join(CONFIG))?;
    let (model, encoder) = config.load(dir, device)?;
    Ok(Checkpoint { model, encoder, config })
}
