//! A BiLSTM in the grid file: its keys, their defaults (Bastings et al.
//! appendix A.1), its training recipe, the parameters of its
//! train key and the external file (GloVe) it reads; and how it is fitted ([`fit`]).

pub mod fit;

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::AssetError;
use super::RawModel;
use super::table::{OptimizerName, value};
use super::{DenseLayer, Family, Recipe};
use crate::paths::resolve;
use grid_cache::Cache;
use grid_core::model::ModelAssets;
use grid_core::model::glove::{self, GloveError};
use grid_core::values::{Positive, Share};

/// The BiLSTM's entry in the registry ([`super::of`]).
pub const FAMILY: Family = Family {
    keys: &[
        "hidden_size",
        "dropout",
        "embedding_dim",
        "attention_size",
        "mlp_size",
        "word_dropout",
        "glove",
        "vocab",
        "pad_embedding",
        "freeze_embeddings",
    ],
    hint,
    // The paper's LSTM recipe: SGD (momentum 0.9), lr 0.03, batch 64, a constant rate, no clipping.
    recipe: Recipe {
        optimizer: OptimizerName::Sgd,
        learning_rate: 0.03,
        batch_size: 64,
        warmup_share: None,
        max_grad_norm: None,
        keep_last: false,
    },
};

/// What a key of another architecture most likely meant here.
fn hint(key: &str) -> Option<&'static str> {
    (key == "lowercase").then_some("for a BiLSTM, lower-casing is `vocab.lowercase`")
}

/// BiLSTM hyper-parameters (defaults: Bastings et al. appendix A.1).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BiLstmSpec {
    pub embedding_dim: Positive,
    pub hidden_size: Positive,
    pub attention_size: Positive,
    /// The hidden layer between the attention context and the logits; 0:
    /// none (Zhou et al. 2022, App. B.1).
    pub mlp_size: usize,
    pub dropout: Share,
    pub word_dropout: Share,
    /// GloVe-format text file (`word v1 … vd` per line) to initialise embeddings;
    /// relative to the data root.
    pub glove: Option<String>,
    pub vocab: VocabSpec,
    pub pad_embedding: PadEmbedding,
    /// The embedding matrix (GloVe's or drawn) stays as it starts while the
    /// rest trains, as in Zhou et al.'s code.
    pub freeze_embeddings: bool,
}

/// What the BiLSTM's `[PAD]` embedding row is. Padding positions never reach
/// the output (the recurrence and the attention are masked), so the row only
/// matters where `[PAD]` stands in for a word: the IG baseline `pad` and the
/// erasure metrics' "zeroed-out" input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PadEmbedding {
    /// A row of the embedding matrix like any other (drawn as the words the
    /// GloVe file lacks are, and updated by the optimiser), as in the paper's
    /// set-up, where `igl-pad` and `igl-zero` differ.
    Learned,
    /// Fixed at zero, as PyTorch's `padding_idx` keeps it: `igl-pad` is then
    /// `igl-zero`.
    Zero,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct VocabSpec {
    #[serde(default = "vocab_max")]
    pub max_size: Positive,
    #[serde(default = "vocab_min")]
    pub min_count: Positive,
    #[serde(default = "yes")]
    pub lowercase: bool,
}

fn vocab_max() -> Positive {
    Positive::new(50_000)
}
fn vocab_min() -> Positive {
    Positive::new(1)
}
fn yes() -> bool {
    true
}

impl Default for VocabSpec {
    fn default() -> Self {
        Self { max_size: vocab_max(), min_count: vocab_min(), lowercase: true }
    }
}

/// Its keys of a `[[models]]` table (the registry has refused every other
/// architecture's), defaults where unset.
pub fn parse(raw: &RawModel) -> BiLstmSpec {
    BiLstmSpec {
        embedding_dim: value(&raw.embedding_dim, Positive::new(300)),
        hidden_size: value(&raw.hidden_size, Positive::new(256)),
        attention_size: value(&raw.attention_size, Positive::new(256)),
        mlp_size: value(&raw.mlp_size, 256),
        dropout: value(&raw.dropout, Share::new(0.5)),
        word_dropout: value(&raw.word_dropout, Share::new(0.1)),
        glove: raw.glove.as_ref().map(|g| g.get_ref().clone()),
        vocab: value(&raw.vocab, VocabSpec::default()),
        pad_embedding: value(&raw.pad_embedding, PadEmbedding::Learned),
        freeze_embeddings: value(&raw.freeze_embeddings, false),
    }
}

/// Its part of a train step's key. Destructured field by field, without `..`:
/// a new field fails to compile here until someone decides whether it changes
/// results (hash it) or not (name it with `_` and say why).
pub fn key(spec: &BiLstmSpec, glove_hash: Option<&str>) -> Value {
    let BiLstmSpec {
        embedding_dim,
        hidden_size,
        attention_size,
        mlp_size,
        dropout,
        word_dropout,
        glove: _, // hashed by content
        vocab,
        pad_embedding,
        freeze_embeddings,
    } = spec;
    let VocabSpec { max_size, min_count, lowercase } = vocab;
    let mut bilstm = json!({
        "embedding_dim": embedding_dim.get(),
        "hidden_size": hidden_size.get(),
        "attention_size": attention_size.get(),
        "mlp_size": mlp_size,
        "dropout": dropout.get(),
        "word_dropout": word_dropout.get(),
        "glove": glove_hash,
        "vocab": { "max_size": max_size.get(), "min_count": min_count.get(), "lowercase": lowercase },
    });
    // Always in the key: before it existed the embeddings never trained (the
    // zeroed pad row had left the weight outside the autodiff graph's leaves),
    // so no BiLSTM cached then may be served for one that trains them.
    if let Some(object) = bilstm.as_object_mut() {
        object.insert("pad_embedding".into(), json!(pad_embedding));
        // Only when set: every key from before it existed trained them.
        if *freeze_embeddings {
            object.insert("freeze_embeddings".into(), json!(true));
        }
    }
    json!({ "bilstm": bilstm })
}

/// Multiply-adds per token of a forward pass: two directions of four gates
/// over input and state, then attention and the hidden layer.
pub fn macs_per_token(spec: &BiLstmSpec) -> f64 {
    let (e, h) = (spec.embedding_dim.get() as f64, spec.hidden_size.get() as f64);
    let (a, m) = (spec.attention_size.get() as f64, spec.mlp_size as f64);
    2.0 * 4.0 * h * (e + h) + 2.0 * h * a + 2.0 * h * m
}

/// Its dense layers outside the recurrence: the attention projection.
pub fn dense_layers(spec: &BiLstmSpec) -> Vec<DenseLayer> {
    let name = "attention projection";
    vec![DenseLayer { name, inputs: 2 * spec.hidden_size.get(), outputs: spec.attention_size.get(), per_pass: 1 }]
}

/// The GloVe file it reads, if any, and its content hash for the key.
pub fn assets(
    spec: &BiLstmSpec,
    model: &str,
    base: &Path,
    cache: &Cache,
) -> Result<(ModelAssets, Option<String>), AssetError> {
    match &spec.glove {
        None => Ok((ModelAssets::None, None)),
        Some(p) => {
            let path = resolve(base, Path::new(p));
            if !path.is_file() {
                return Err(AssetError::MissingGlove { model: model.to_string(), path });
            }
            let glove_error = |source| AssetError::Glove { model: model.to_string(), source };
            match glove::dimension(&path).map_err(glove_error)? {
                None => return Err(glove_error(GloveError::Empty { path })),
                Some((found, line)) if found != spec.embedding_dim.get() => {
                    return Err(AssetError::GloveDimension {
                        model: model.to_string(),
                        path,
                        line,
                        found,
                        expected: spec.embedding_dim.get(),
                    });
                }
                Some(_) => {}
            }
            let hash = cache.file_hash(&path)?;
            Ok((ModelAssets::Glove(path), Some(hash)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pad_embedding_is_always_in_the_bilstm_key() {
        let mut spec = BiLstmSpec {
            embedding_dim: Positive::new(8),
            hidden_size: Positive::new(8),
            attention_size: Positive::new(8),
            mlp_size: 8,
            dropout: Share::new(0.5),
            word_dropout: Share::new(0.1),
            glove: None,
            vocab: VocabSpec::default(),
            pad_embedding: PadEmbedding::Zero,
            freeze_embeddings: false,
        };
        assert_eq!(key(&spec, None)["bilstm"]["pad_embedding"], json!("zero"));
        assert!(key(&spec, None)["bilstm"].get("freeze_embeddings").is_none(), "keys from before it stay");
        spec.freeze_embeddings = true;
        assert_eq!(key(&spec, None)["bilstm"]["freeze_embeddings"], json!(true));
        spec.pad_embedding = PadEmbedding::Learned;
        assert_eq!(key(&spec, None)["bilstm"]["pad_embedding"], json!("learned"));
    }
}
