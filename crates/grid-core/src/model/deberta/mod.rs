//! DeBERTa-v3 (He et al. 2021, 2023; `transformers`' `DebertaV2Model`, whose
//! `model_type` DeBERTa-v3 checkpoints share): a post-LayerNorm encoder like
//! BERT's, but with no absolute positions and disentangled attention over a
//! table of relative-position embeddings (`encoder.rs`). That attention
//! differs from BERT's in every layer, so it has its own room rather than a
//! `bert::family` entry, as ModernBERT does.
//!
//! Here: the encoder and its classification head, read from a Hugging Face
//! folder and checked against `transformers` (`tests/fixtures/
//! deberta_transformers`, `scripts/family_fixtures.py`), behind the
//! `Classifier` seam, `Trainable` and `PretrainedClassifier`
//! (`classifier.rs`); a trained model's folder (`saved.rs`). Its tokenizer
//! is `text::subword`'s SentencePiece unigram. A grid names it as any
//! transformers checkpoint (`architecture = "bert"`, `checkpoint = …`): its
//! `model_type` (`deberta-v2`) sends it here.

pub mod classifier;
pub mod config;
pub mod encoder;
pub mod load;
pub mod saved;

/// Its checkpoints' `config.json` `model_type` (DeBERTa-v3's too).
pub const MODEL_TYPE: &str = "deberta-v2";

pub use config::DebertaConfig;
pub use encoder::DebertaClassifier;
