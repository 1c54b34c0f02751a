//! Reading Hugging Face BERT checkpoints (`config.json` + `model.safetensors`)
//! into [`BertModel`], and growing the word-embedding matrix for shortcut tokens.

use std::path::{Path, PathBuf};

use burn::module::Param;
use burn::prelude::*;
use burn_store::{ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

use super::config::BertConfig;
use super::encoder::BertModel;

pub const CONFIG: &str = "config.json";
pub const WEIGHTS: &str = "model.safetensors";

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: invalid BERT config: {message}")]
    Config { path: PathBuf, message: String },
    #[error("{path}: {message}")]
    Weights { path: PathBuf, message: String },
}

/// Checkpoint tensors a BERT folder may hold that the encoder has no place for,
/// by name prefix after the `bert.` prefix is dropped: the pre-training heads,
/// a fine-tuned model's own head (a fresh one is trained), and the position-id
/// buffer older transformers saved. Anything else unused is an error: a tensor
/// that loads nowhere is a naming the loader does not know, not a detail.
pub const KNOWN_UNUSED: &[&str] = &["cls.", "classifier.", "qa_outputs.", "embeddings.position_ids", "lm_head."];

/// What loading found beyond the encoder's own tensors.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LoadReport {
    /// Checkpoint tensors the encoder has no place for, all of them
    /// [`KNOWN_UNUSED`] (e.g. `cls.predictions.*`).
    pub unused: Vec<String>,
    /// Whether the checkpoint had no pooler, so it was initialised randomly.
    pub random_pooler: bool,
}

pub fn read_config(dir: &Path) -> Result<BertConfig, LoadError> {
    let path = dir.join(CONFIG);
    let bytes = std::fs::read(&path).map_err(|source| LoadError::Io { path: path.clone(), source })?;
    let config: BertConfig =
        serde_json::from_slice(&bytes).map_err(|e| LoadError::Config { path: path.clone(), message: e.to_string() })?;
    config.check().map_err(|message| LoadError::Config { path, message })?;
    Ok(config)
}

/// Loads a pretrained encoder. `rng` initialises anything the checkpoint lacks
/// (only the pooler may be absent).
pub fn load_pretrained<B: Backend>(
    dir: &Path,
    rng: &mut ChaCha8Rng,
    device: &B::Device,
) -> Result<(BertConfig, BertModel<B>, LoadReport), LoadError> {
    let config = read_config(dir)?;
    let path = dir.join(WEIGHTS);
    if !path.is_file() {
        return Err(LoadError::Weights { path, message: "no such file".into() });
    }
    let mut model = BertModel::<B>::new(&config, rng, device);
    // Checkpoint names → our field names; the adapter transposes Linear weights.
    // LayerNorm parameters are renamed to burn's gamma/beta here, from both
    // namings: `weight/bias` (PyTorch) and `gamma/beta` (Google's TF checkpoints
    // and their conversions). Left to the adapter, weight/bias would load through
    // its fallback lookup yet be reported unused, which hid real unused tensors.
    let mut store = SafetensorsStore::from_file(&path)
        .with_from_adapter(PyTorchToBurnAdapter)
        .with_key_remapping(r"^bert\.", "")
        .with_key_remapping(r"\.attention\.self\.", ".attention.self_attention.")
        .with_key_remapping(r"(?:LayerNorm|layer_norm)\.(?:weight|gamma)$", "layer_norm.gamma")
        .with_key_remapping(r"(?:LayerNorm|layer_norm)\.(?:bias|beta)$", "layer_norm.beta")
        .allow_partial(true);
    let result =
        model.load_from(&mut store).map_err(|e| LoadError::Weights { path: path.clone(), message: e.to_string() })?;
    if !result.errors.is_empty() {
        let errors: Vec<String> = result.errors.iter().map(|e| e.to_string()).collect();
        return Err(LoadError::Weights {
            path,
            message: format!("tensors do not fit config.json: {}", errors.join("; ")),
        });
    }
    let missing: Vec<&str> =
        result.missing.iter().map(|(p, _)| p.as_str()).filter(|p| !p.starts_with("pooler.")).collect();
    if !missing.is_empty() {
        return Err(LoadError::Weights {
            path,
            message: format!("not a BERT checkpoint: missing tensors {}", missing.join(", ")),
        });
    }
    let unknown: Vec<&str> = result
        .unused
        .iter()
        .map(String::as_str)
        .filter(|name| !KNOWN_UNUSED.iter().any(|known| name.starts_with(known)))
        .collect();
    if !unknown.is_empty() {
        return Err(LoadError::Weights {
            path,
            message: format!(
                "{} checkpoint tensor(s) would load into nothing: {} (names as read after dropping `bert.`; \
                 tensors grid knows to leave out: {})",
                unknown.len(),
                unknown.join(", "),
                KNOWN_UNUSED.join(" ")
            ),
        });
    }
    let random_pooler = result.missing.iter().any(|(p, _)| p.starts_with("pooler."));
    let model = crate::model::dtype::to_backend_float(model);
    Ok((config, model, LoadReport { unused: result.unused, random_pooler }))
}

/// Appends `added` rows to the word-embedding matrix (new tokens such as `#0`,
/// `#1`, `contoken`). Each new row is the mean of the existing rows plus
/// N(0, initializer_range²) noise: the mean keeps a new token's first logits close
/// to an ordinary word's (Hewitt 2021, as `resize_token_embeddings` now does), the
/// noise makes the new tokens distinguishable from one another.
pub fn add_word_embeddings<B: Backend>(
    model: BertModel<B>,
    added: usize,
    std: f64,
    rng: &mut ChaCha8Rng,
) -> BertModel<B> {
    if added == 0 {
        return model;
    }
    let mut model = model;
    let weight = model.embeddings.word_embeddings.weight.val();
    let [_, hidden] = weight.dims();
    let device = weight.device();
    let mean: Vec<f32> = weight.clone().mean_dim(0).into_data().convert::<f32>().to_vec().unwrap_or_default();
    let noise = Normal::new(0.0f32, std as f32).unwrap_or_else(|_| Normal::new(0.0, 0.02).expect("valid"));
    let rows: Vec<f32> =
        (0..added).flat_map(|_| mean.iter().map(|m| m + noise.sample(rng)).collect::<Vec<_>>()).collect();
    let rows = Tensor::<B, 2>::from_data(TensorData::new(rows, [added, hidden]), &device);
    model.embeddings.word_embeddings.weight = Param::from_tensor(Tensor::cat(vec![weight, rows], 0).detach());
    model
}
