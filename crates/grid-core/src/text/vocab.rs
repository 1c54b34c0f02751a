//! The BiLSTM's word vocabulary: whitespace words, lower-cased (shortcut tokens
//! kept verbatim), `[PAD]` = 0, `[UNK]` = 1, then the shortcut tokens, then the
//! training words by descending frequency (ties alphabetical, so the order is a
//! pure function of the data).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::{Encoded, TextEncoder};

pub const PAD: &str = "[PAD]";
pub const UNK: &str = "[UNK]";

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WordVocab {
    words: Vec<String>,
    lowercase: bool,
    #[serde(skip)]
    index: HashMap<String, u32>,
}

impl WordVocab {
    /// Builds the vocabulary from training texts. Words seen fewer than
    /// `min_count` times map to `[UNK]`; at most `max_size` entries in all.
    pub fn build<'a>(
        texts: impl IntoIterator<Item = &'a str>,
        reserved: &[String],
        min_count: usize,
        max_size: usize,
        lowercase: bool,
    ) -> Self {
        let mut counts: HashMap<String, usize> = HashMap::new();
        for text in texts {
            for word in text.split_whitespace() {
                if reserved.iter().any(|r| r == word) {
                    continue;
                }
                *counts.entry(normalise(word, lowercase)).or_default() += 1;
            }
        }
        let mut frequent: Vec<(String, usize)> = counts.into_iter().filter(|(_, c)| *c >= min_count).collect();
        frequent.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut words: Vec<String> = vec![PAD.into(), UNK.into()];
        words.extend(reserved.iter().cloned());
        let room = max_size.saturating_sub(words.len());
        words.extend(frequent.into_iter().take(room).map(|(w, _)| w));
        Self::from_words(words, lowercase)
    }

    pub fn from_words(words: Vec<String>, lowercase: bool) -> Self {
        let index = words.iter().enumerate().map(|(i, w)| (w.clone(), i as u32)).collect();
        Self { words, lowercase, index }
    }

    /// Restores the lookup table after deserialisation.
    pub fn reindexed(self) -> Self {
        Self::from_words(self.words, self.lowercase)
    }

    pub fn id(&self, word: &str) -> u32 {
        self.index.get(word).or_else(|| self.index.get(&normalise(word, self.lowercase))).copied().unwrap_or(1)
    }

    pub fn words(&self) -> &[String] {
        &self.words
    }
}

fn normalise(word: &str, lowercase: bool) -> String {
    if lowercase { word.to_lowercase() } else { word.to_string() }
}

impl TextEncoder for WordVocab {
    fn encode(&self, text: &str, max_length: usize) -> Encoded {
        let ids: Vec<u32> = text.split_whitespace().take(max_length).map(|w| self.id(w)).collect();
        let word_of_token = (0..ids.len()).map(Some).collect();
        Encoded { ids, word_of_token }
    }

    fn pad_id(&self) -> u32 {
        0
    }

    fn unk_id(&self) -> u32 {
        1
    }

    fn vocab_size(&self) -> usize {
        self.words.len()
    }

    fn token(&self, id: u32) -> String {
        self.words.get(id as usize).map_or(UNK, String::as_str).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_lookup() {
        let reserved = vec!["#0".to_string(), "#1".to_string()];
        let v = WordVocab::build(["b a a", "c A b", "rare"], &reserved, 2, 100, true);
        assert_eq!(v.words(), &["[PAD]", "[UNK]", "#0", "#1", "a", "b"]);
        let e = v.encode("A #1 zzz b", 3);
        assert_eq!(e.ids, vec![4, 3, 1]);
        assert_eq!(e.word_of_token, vec![Some(0), Some(1), Some(2)]);
        assert_eq!([v.token(3), v.token(4), v.token(99)], ["#1", "a", "[UNK]"]);
    }

    #[test]
    fn max_size_and_round_trip() {
        let v = WordVocab::build(["x y z x y x"], &[], 1, 4, false);
        assert_eq!(v.words(), &["[PAD]", "[UNK]", "x", "y"]);
        let json = serde_json::to_string(&v).unwrap();
        let back: WordVocab = serde_json::from_str::<WordVocab>(&json).unwrap().reindexed();
        assert_eq!(back.id("y"), 3);
    }
}
