//! What a model trains on, as the `train` step hands it to an architecture:
//! the examples, the length limit and the shortcut tokens its vocabulary must
//! hold whole; and `training.json`, the record every architecture writes.

use std::path::Path;

use anyhow::Result;
use serde::Serialize;

use grid_core::data::Example;
use grid_core::text::TextEncoder;
use grid_core::train::{TrainExample, TrainSummary};
use grid_methods::shortcut::{ShortcutKind, ShortcutTokens};

/// The examples and text limits a model trains on.
pub struct TrainData<'a> {
    pub train: &'a [Example],
    pub validation: &'a [Example],
    pub max_length: usize,
    pub shortcut_tokens: &'a [String],
    /// The rule planted in the data, if any: which validation examples carry it.
    pub planted: Option<(ShortcutKind, &'a ShortcutTokens)>,
}

impl TrainData<'_> {
    /// 1 output for two classes (a logit), C for C > 2.
    pub fn num_outputs(&self) -> usize {
        let classes = self.train.iter().chain(self.validation).map(|e| e.label + 1).max().unwrap_or(2).max(2);
        if classes == 2 { 1 } else { classes as usize }
    }

    /// The training and validation examples as token ids, the validation
    /// examples that carry the planted pattern marked.
    pub fn encode(&self, encoder: &dyn TextEncoder, max_length: usize) -> (Vec<TrainExample>, Vec<TrainExample>) {
        let encode = |examples: &[Example], mark: bool| -> Vec<TrainExample> {
            examples
                .iter()
                .map(|e| TrainExample {
                    ids: encoder.encode(&e.text, max_length).ids,
                    label: e.label,
                    marked: mark && self.planted.is_some_and(|(kind, tokens)| kind.is_planted_in(tokens, &e.text)),
                })
                .collect()
        };
        (encode(self.train, false), encode(self.validation, true))
    }

    /// Writes `training.json`: what every architecture records, and its own
    /// `details` (GloVe coverage, the checkpoint it started from, …) beside them.
    pub fn write_record<D: Serialize>(
        &self,
        out: &Path,
        architecture: &str,
        vocab_size: usize,
        details: D,
        summary: TrainSummary,
    ) -> Result<()> {
        #[derive(Serialize)]
        struct TrainingRecord<'a, D> {
            architecture: &'a str,
            train_examples: usize,
            validation_examples: usize,
            vocab_size: usize,
            #[serde(flatten)]
            details: D,
            summary: TrainSummary,
        }
        crate::io::write_json(
            &out.join("training.json"),
            &TrainingRecord {
                architecture,
                train_examples: self.train.len(),
                validation_examples: self.validation.len(),
                vocab_size,
                details,
                summary,
            },
        )
    }
}
