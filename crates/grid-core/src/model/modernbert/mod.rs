//! ModernBERT (Warner et al. 2024; `transformers`' `ModernBertModel`): a
//! pre-LayerNorm encoder with rotary positions, a GeGLU feed-forward layer,
//! no biases, and attention that alternates between global and a sliding
//! window. Its computation differs from BERT's in every layer, so it has its
//! own room rather than a `bert::family` entry.
//!
//! Here: the encoder and its classification head, read from a Hugging Face
//! folder and checked against `transformers` (`tests/fixtures/
//! modernbert_transformers`, `scripts/family_fixtures.py`), behind the
//! `Classifier` seam (`classifier.rs`) and `Trainable`; a trained model's
//! folder (`saved.rs`). Its tokenizer is `text::subword`'s byte-level BPE. A
//! grid names it as any transformers checkpoint (`architecture = "bert"`,
//! `checkpoint = …`): its `model_type` sends it here.

pub mod classifier;
pub mod config;
pub mod encoder;
pub mod load;
pub mod saved;

/// Its checkpoints' `config.json` `model_type`.
pub const MODEL_TYPE: &str = "modernbert";

pub use config::{AttentionKind, ModernBertConfig, Pooling};
pub use encoder::ModernBertClassifier;
