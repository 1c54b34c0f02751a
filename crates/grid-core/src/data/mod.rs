//! Datasets as the pipeline sees them: every source (a local table file or the
//! built-in generated corpus) is mapped into one [`Example`] type and one
//! [`Corpus`] with train / validation / test splits.

pub mod csv_records;
pub mod generated;
pub mod table;

use serde::{Deserialize, Serialize};

/// One labelled text. Labels are class indices `0..num_labels`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Example {
    pub text: String,
    pub label: u32,
}

/// The three splits every step downstream of `corpus` works with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Corpus {
    pub train: Vec<Example>,
    pub validation: Vec<Example>,
    pub test: Vec<Example>,
}

impl Corpus {
    /// Number of classes: one more than the largest label seen in any split.
    pub fn num_labels(&self) -> u32 {
        self.train.iter().chain(&self.validation).chain(&self.test).map(|e| e.label + 1).max().unwrap_or(0)
    }
}

/// Whitespace words: the unit shortcut insertion works on (PROTOCOL §1) and the
/// BiLSTM's tokens.
pub fn words(text: &str) -> Vec<&str> {
    text.split_whitespace().collect()
}
