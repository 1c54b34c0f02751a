//! Turning text into model token ids, behind one small trait so that steps
//! downstream (training, verification, salience) do not care which tokenizer a
//! model uses.

pub mod sentencepiece;
pub mod subword;
pub mod vocab;

/// A text encoded for one model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Encoded {
    /// Token ids, truncated to the model's maximum length.
    pub ids: Vec<u32>,
    /// For each token, the index of the whitespace word it came from; `None` for
    /// special tokens ([CLS], [SEP]), which are never ranked.
    pub word_of_token: Vec<Option<usize>>,
}

impl Encoded {
    /// Token positions that came from word `word`.
    pub fn tokens_of_word(&self, word: usize) -> impl Iterator<Item = usize> + '_ {
        self.word_of_token.iter().enumerate().filter(move |(_, w)| **w == Some(word)).map(|(t, _)| t)
    }
}

/// What every tokenizer offers the pipeline.
pub trait TextEncoder: Send + Sync {
    /// Encodes and truncates to `max_length` tokens.
    fn encode(&self, text: &str, max_length: usize) -> Encoded;
    fn pad_id(&self) -> u32;
    fn unk_id(&self) -> u32;
    /// `[MASK]`, if the vocabulary has one (a BiLSTM's word vocabulary does not).
    fn mask_id(&self) -> Option<u32> {
        None
    }
    fn vocab_size(&self) -> usize;
    /// The display string of token `id`, for reports; `[UNK]` for an id outside the vocabulary.
    fn token(&self, id: u32) -> String;
}
