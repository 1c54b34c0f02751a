//! The architectures `grid` can train, and what each offers salience methods.
//! A new one is a folder under `model/`, a variant here and its family in the
//! pipeline's registry (`family::of`).

use serde::{Deserialize, Serialize};

/// Model architectures `grid` can train.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Architecture {
    Bilstm,
    Bert,
}

impl Architecture {
    /// Its `architecture = "…"` in the grid file.
    pub fn name(self) -> &'static str {
        match self {
            Architecture::Bilstm => "bilstm",
            Architecture::Bert => "bert",
        }
    }

    /// What salience methods can rely on. A pretrained BERT vocabulary without
    /// `[MASK]` is caught when its attribution step runs.
    pub fn traits(self) -> ModelTraits {
        match self {
            Architecture::Bilstm => {
                ModelTraits { mask_token: false, additive_attention: true, transformer_attention: false }
            }
            Architecture::Bert => {
                ModelTraits { mask_token: true, additive_attention: false, transformer_attention: true }
            }
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_grid_files_words() {
        for architecture in [Architecture::Bilstm, Architecture::Bert] {
            let parsed: Architecture = serde_json::from_value(serde_json::json!(architecture.name())).unwrap();
            assert_eq!(parsed, architecture);
            assert_eq!(architecture.to_string(), architecture.name());
        }
    }
}
