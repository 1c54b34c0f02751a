//! ModernBERT (Warner et al. 2024; `transformers`' `ModernBertModel`): a
//! pre-LayerNorm encoder with rotary positions, a GeGLU feed-forward layer,
//! no biases, and attention that alternates between global and a sliding
//! window. Its computation differs from BERT's in every layer, so it has its
//! own room rather than a `bert::family` entry.
//!
//! Here: the encoder and its classification head, read from a Hugging Face
//! folder and checked against `transformers` (`tests/fixtures/
//! modernbert_transformers`, `scripts/family_fixtures.py`), behind the
//! `Classifier` seam (`classifier.rs`). Still to come before grid files can
//! name it (issue 44): its entry in the architecture registries, its
//! byte-level BPE tokenizer with `[CLS] … [SEP]`, training and saving.

pub mod classifier;
pub mod config;
pub mod encoder;
pub mod load;

pub use config::{AttentionKind, ModernBertConfig, Pooling};
pub use encoder::ModernBertClassifier;
