//! Encoders with a room of their own (ModernBERT, DeBERTa) as fine-tuning
//! sees them: loaded from a Hugging Face folder with a fresh classification
//! layer or the checkpoint's, grown by rows for the shortcut tokens, given a
//! grid's dropout, and saved. The pipeline fits any of them with one
//! function (`architectures::bert::own_room`); a new one implements this
//! trait and adds its `model_type` to `OWN_ROOMS`.

use std::path::Path;

use burn::prelude::*;
use rand_chacha::ChaCha8Rng;

use super::bert::load::{LoadError, LoadReport};
use super::checkpoint::CheckpointError;
use crate::text::subword::SubwordEncoder;

/// Where the classification layer starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassifierStart {
    /// The checkpoint's, its labels fitting the data's classes (a two-label
    /// layer serves a binary model as `l₁ − l₀`).
    Checkpoint,
    /// Drawn afresh as `transformers` initialises it; a layer in the
    /// checkpoint is left out. What sits before it (a prediction head, a
    /// pooler) is the checkpoint's where it has one, else drawn too.
    Fresh,
}

/// A pretrained classifier with its own encoder.
pub trait PretrainedClassifier<B: Backend>: Sized {
    /// The `config.json` `model_type` it reads.
    const MODEL_TYPE: &'static str;

    /// Loads checkpoint folder `dir` for `num_outputs` logits; `rng` draws
    /// what the checkpoint does not give.
    fn load_pretrained(
        dir: &Path,
        num_outputs: usize,
        start: ClassifierStart,
        rng: &mut ChaCha8Rng,
        device: &B::Device,
    ) -> Result<(Self, LoadReport), LoadError>;

    /// Word-embedding rows in the model (its vocabulary before added tokens).
    fn vocab_size(&self) -> usize;

    /// `added` word-embedding rows appended for new tokens, each the mean of
    /// the others plus noise (`bert::load::add_word_embeddings`).
    fn with_added_tokens(self, added: usize, rng: &mut ChaCha8Rng) -> Self;

    /// Its dropouts set to `p` (a grid's `dropout` key).
    fn with_dropout(self, p: f64) -> Self;

    /// The longest input its positions allow, if any.
    fn max_positions(&self) -> Option<usize>;

    /// Writes its trained folder (`checkpoint::load` reads it back).
    fn save(
        &self,
        dir: &Path,
        num_outputs: usize,
        max_length: usize,
        tokenizer: &SubwordEncoder,
    ) -> Result<(), CheckpointError>;
}
