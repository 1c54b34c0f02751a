//! The registry of architectures: each one's name, what it offers salience
//! methods, its saved `config.json` and its trained classifier behind one type.
//! A new architecture is its folder under `model/` (its model, `saved.rs`, its
//! `Trainable`), its `pub mod` in `model/mod.rs`, and its variants and arms
//! here; the compiler points at every arm. The pipeline has its own registry
//! (`grid_pipeline::architectures`).

use std::path::Path;

use burn::module::Module;
use burn::prelude::*;
use serde::{Deserialize, Serialize};

use super::bert::{BertClassifier, BertConfig};
use super::bilstm::{BiLstmClassifier, BiLstmConfig};
use super::checkpoint::CheckpointError;
use super::deberta::{DebertaClassifier, DebertaConfig};
use super::modernbert::{ModernBertClassifier, ModernBertConfig};
use super::rationale::{RationaleClassifier, RationaleConfig, Selection};
use super::{AttentionLeaf, AttentionView, Classifier};
use crate::text::TextEncoder;

/// Model architectures `grid` can train.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Architecture {
    Bilstm,
    Bert,
    /// Select-then-predict (Zhou et al. 2022 §7): a selector's rationale
    /// and a BiLSTM predictor on it.
    Rationale,
}

impl Architecture {
    /// Its `architecture = "…"` in the grid file.
    pub fn name(self) -> &'static str {
        match self {
            Architecture::Bilstm => "bilstm",
            Architecture::Bert => "bert",
            Architecture::Rationale => "rationale",
        }
    }

    /// How the papers' tables print it.
    pub fn label(self) -> &'static str {
        match self {
            Architecture::Bilstm => "LSTM",
            Architecture::Bert => "BERT",
            Architecture::Rationale => "Rationale",
        }
    }

    /// What salience methods can rely on. A pretrained BERT vocabulary without
    /// `[MASK]` is caught when its attribution step runs.
    pub fn traits(self) -> ModelTraits {
        match self {
            Architecture::Bilstm => ModelTraits {
                mask_token: false,
                additive_attention: true,
                transformer_attention: false,
                rationale: false,
            },
            Architecture::Bert => ModelTraits {
                mask_token: true,
                additive_attention: false,
                transformer_attention: true,
                rationale: false,
            },
            // The predictor's additive attention, over its gated input.
            Architecture::Rationale => ModelTraits {
                mask_token: false,
                additive_attention: true,
                transformer_attention: false,
                rationale: true,
            },
        }
    }
}

impl std::fmt::Display for Architecture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a model offers for a salience method to apply to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelTraits {
    /// The vocabulary has a `[MASK]` token.
    pub mask_token: bool,
    /// Additive attention over the input (the BiLSTM).
    pub additive_attention: bool,
    /// Transformer self-attention layers with a `[CLS]` row (BERT).
    pub transformer_attention: bool,
    /// It selects a rationale of its own (`rationale`).
    pub rationale: bool,
}

/// `config.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "architecture", rename_all = "lowercase")]
pub enum ModelConfig {
    Bilstm {
        config: BiLstmConfig,
        max_length: usize,
    },
    /// `config` is the encoder's (Hugging Face names), with `vocab_size` grown by
    /// the shortcut tokens.
    Bert {
        config: BertConfig,
        num_outputs: usize,
        max_length: usize,
    },
    /// A ModernBERT checkpoint fine-tuned or taken as it is: a grid names it
    /// `bert` (any transformers encoder), its computation is its own.
    #[serde(rename = "modernbert")]
    ModernBert {
        config: ModernBertConfig,
        num_outputs: usize,
        max_length: usize,
    },
    /// A DeBERTa-v2/v3 checkpoint, likewise.
    Deberta {
        config: DebertaConfig,
        num_outputs: usize,
        max_length: usize,
    },
    Rationale {
        config: RationaleConfig,
        max_length: usize,
    },
}

impl ModelConfig {
    /// The architecture that saved it.
    pub fn architecture(&self) -> Architecture {
        match self {
            ModelConfig::Bilstm { .. } => Architecture::Bilstm,
            ModelConfig::Bert { .. } | ModelConfig::ModernBert { .. } | ModelConfig::Deberta { .. } => {
                Architecture::Bert
            }
            ModelConfig::Rationale { .. } => Architecture::Rationale,
        }
    }

    pub fn max_length(&self) -> usize {
        match self {
            ModelConfig::Bilstm { max_length, .. }
            | ModelConfig::Bert { max_length, .. }
            | ModelConfig::ModernBert { max_length, .. }
            | ModelConfig::Deberta { max_length, .. }
            | ModelConfig::Rationale { max_length, .. } => *max_length,
        }
    }

    /// The classifier and its tokenizer saved in `dir` under this config.
    pub(super) fn load<B: Backend>(
        &self,
        dir: &Path,
        device: &B::Device,
    ) -> Result<(AnyClassifier<B>, Box<dyn TextEncoder>), CheckpointError> {
        Ok(match self {
            ModelConfig::Bilstm { config, .. } => {
                let (model, vocab) = super::bilstm::saved::load(dir, config, device)?;
                (AnyClassifier::Bilstm(model), Box::new(vocab))
            }
            ModelConfig::Bert { config, num_outputs, .. } => {
                let (model, tokenizer) = super::bert::saved::load(dir, config, *num_outputs, device)?;
                (AnyClassifier::Bert(model), Box::new(tokenizer))
            }
            ModelConfig::ModernBert { config, num_outputs, .. } => {
                let (model, tokenizer) = super::modernbert::saved::load(dir, config, *num_outputs, device)?;
                (AnyClassifier::ModernBert(model), Box::new(tokenizer))
            }
            ModelConfig::Deberta { config, num_outputs, .. } => {
                let (model, tokenizer) = super::deberta::saved::load(dir, config, *num_outputs, device)?;
                (AnyClassifier::Deberta(model), Box::new(tokenizer))
            }
            ModelConfig::Rationale { config, .. } => {
                let (model, vocab) = super::rationale::saved::load(dir, config, device)?;
                (AnyClassifier::Rationale(model), Box::new(vocab))
            }
        })
    }
}

/// A trained classifier of any architecture. One lives per step, so the size
/// difference between variants costs nothing worth a box.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum AnyClassifier<B: Backend> {
    Bilstm(BiLstmClassifier<B>),
    Bert(BertClassifier<B>),
    ModernBert(ModernBertClassifier<B>),
    Deberta(DebertaClassifier<B>),
    Rationale(RationaleClassifier<B>),
}

impl<B: Backend> AnyClassifier<B> {
    /// Stops tracking parameter gradients: salience differentiates with respect
    /// to the inputs only, and a backward pass through frozen weights skips every
    /// weight-gradient matmul.
    pub fn frozen(self) -> Self {
        match self {
            AnyClassifier::Bilstm(m) => AnyClassifier::Bilstm(m.no_grad()),
            AnyClassifier::Bert(m) => AnyClassifier::Bert(m.no_grad()),
            AnyClassifier::ModernBert(m) => AnyClassifier::ModernBert(m.no_grad()),
            AnyClassifier::Deberta(m) => AnyClassifier::Deberta(m.no_grad()),
            AnyClassifier::Rationale(m) => AnyClassifier::Rationale(m.no_grad()),
        }
    }
}

impl<B: Backend> Classifier<B> for AnyClassifier<B> {
    fn family(&self) -> &'static str {
        match self {
            AnyClassifier::Bilstm(m) => m.family(),
            AnyClassifier::Bert(m) => m.family(),
            AnyClassifier::ModernBert(m) => m.family(),
            AnyClassifier::Deberta(m) => m.family(),
            AnyClassifier::Rationale(m) => m.family(),
        }
    }
    fn embed(&self, ids: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        match self {
            AnyClassifier::Bilstm(m) => m.embed(ids),
            AnyClassifier::Bert(m) => m.embed(ids),
            AnyClassifier::ModernBert(m) => m.embed(ids),
            AnyClassifier::Deberta(m) => m.embed(ids),
            AnyClassifier::Rationale(m) => m.embed(ids),
        }
    }
    fn logits_from_embeddings(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Tensor<B, 2> {
        match self {
            AnyClassifier::Bilstm(m) => m.logits_from_embeddings(embeddings, mask),
            AnyClassifier::Bert(m) => m.logits_from_embeddings(embeddings, mask),
            AnyClassifier::ModernBert(m) => m.logits_from_embeddings(embeddings, mask),
            AnyClassifier::Deberta(m) => m.logits_from_embeddings(embeddings, mask),
            AnyClassifier::Rationale(m) => m.logits_from_embeddings(embeddings, mask),
        }
    }
    fn num_outputs(&self) -> usize {
        match self {
            AnyClassifier::Bilstm(m) => m.num_outputs(),
            AnyClassifier::Bert(m) => m.num_outputs(),
            AnyClassifier::ModernBert(m) => m.num_outputs(),
            AnyClassifier::Deberta(m) => m.num_outputs(),
            AnyClassifier::Rationale(m) => m.num_outputs(),
        }
    }
    fn max_length(&self) -> Option<usize> {
        match self {
            AnyClassifier::Bilstm(m) => m.max_length(),
            AnyClassifier::Bert(m) => m.max_length(),
            AnyClassifier::ModernBert(m) => m.max_length(),
            AnyClassifier::Deberta(m) => m.max_length(),
            AnyClassifier::Rationale(m) => m.max_length(),
        }
    }
    fn attention_scores(
        &self,
        embeddings: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        view: AttentionView,
    ) -> Option<Tensor<B, 2>> {
        match self {
            AnyClassifier::Bilstm(m) => m.attention_scores(embeddings, mask, view),
            AnyClassifier::Bert(m) => m.attention_scores(embeddings, mask, view),
            AnyClassifier::ModernBert(m) => m.attention_scores(embeddings, mask, view),
            AnyClassifier::Deberta(m) => m.attention_scores(embeddings, mask, view),
            AnyClassifier::Rationale(m) => m.attention_scores(embeddings, mask, view),
        }
    }
    fn attention_leaf(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Option<AttentionLeaf<B>> {
        match self {
            AnyClassifier::Bilstm(m) => m.attention_leaf(embeddings, mask),
            AnyClassifier::Bert(m) => m.attention_leaf(embeddings, mask),
            AnyClassifier::ModernBert(m) => m.attention_leaf(embeddings, mask),
            AnyClassifier::Deberta(m) => m.attention_leaf(embeddings, mask),
            AnyClassifier::Rationale(m) => m.attention_leaf(embeddings, mask),
        }
    }
    fn selection(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Option<Selection<B>> {
        match self {
            AnyClassifier::Rationale(m) => m.selection(embeddings, mask),
            AnyClassifier::Bilstm(_)
            | AnyClassifier::Bert(_)
            | AnyClassifier::ModernBert(_)
            | AnyClassifier::Deberta(_) => None,
        }
    }
    fn selection_target(&self) -> Option<f64> {
        match self {
            AnyClassifier::Rationale(m) => m.selection_target(),
            AnyClassifier::Bilstm(_)
            | AnyClassifier::Bert(_)
            | AnyClassifier::ModernBert(_)
            | AnyClassifier::Deberta(_) => None,
        }
    }
    fn deeplift_logits(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Option<Tensor<B, 2>> {
        match self {
            AnyClassifier::Bilstm(m) => m.deeplift_logits(embeddings, mask),
            AnyClassifier::Bert(m) => m.deeplift_logits(embeddings, mask),
            AnyClassifier::ModernBert(m) => m.deeplift_logits(embeddings, mask),
            AnyClassifier::Deberta(m) => m.deeplift_logits(embeddings, mask),
            AnyClassifier::Rationale(m) => m.deeplift_logits(embeddings, mask),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_grid_files_words() {
        for architecture in [Architecture::Bilstm, Architecture::Bert, Architecture::Rationale] {
            let parsed: Architecture = serde_json::from_value(serde_json::json!(architecture.name())).unwrap();
            assert_eq!(parsed, architecture);
            assert_eq!(architecture.to_string(), architecture.name());
        }
    }
}
