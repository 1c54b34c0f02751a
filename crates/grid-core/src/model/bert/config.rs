//! `config.json` as Hugging Face writes it for `model_type = "bert"`
//! (`transformers.BertConfig`), read leniently: unknown keys are ignored, since
//! real checkpoints carry many (`architectures`, `transformers_version`, …), but
//! anything that would change the computation is checked. Other families
//! ([`super::family`]) read their own names into this config; `model_type`
//! says which family's layout the encoder takes.

use serde::{Deserialize, Serialize};

use super::family::{Family, Layout};

/// The encoder's hyper-parameters; names and defaults are `BertConfig`'s.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BertConfig {
    #[serde(default = "model_type")]
    pub model_type: String,
    pub vocab_size: usize,
    /// The width of the embeddings when it differs from `hidden_size`
    /// (ELECTRA-small: 128 under 256); a linear layer projects them up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_size: Option<usize>,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    #[serde(default)]
    pub hidden_act: HiddenAct,
    #[serde(default = "dropout")]
    pub hidden_dropout_prob: f64,
    #[serde(default = "dropout")]
    pub attention_probs_dropout_prob: f64,
    /// Dropout before the classification head; `hidden_dropout_prob` when absent.
    #[serde(default)]
    pub classifier_dropout: Option<f64>,
    #[serde(default = "max_positions")]
    pub max_position_embeddings: usize,
    #[serde(default = "type_vocab")]
    pub type_vocab_size: usize,
    #[serde(default = "initializer_range")]
    pub initializer_range: f64,
    #[serde(default = "layer_norm_eps")]
    pub layer_norm_eps: f64,
    #[serde(default)]
    pub pad_token_id: u32,
    #[serde(default = "absolute")]
    pub position_embedding_type: String,
    /// MPNet's relative-position table's rows; absent for every other family
    /// (and from their saved configs, whose keys stay as they were).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relative_attention_num_buckets: Option<usize>,
}

/// `hidden_act`: the activation of the feed-forward block.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HiddenAct {
    /// The exact, erf-based GELU (BERT's).
    #[default]
    Gelu,
    /// The tanh approximation.
    #[serde(alias = "gelu_pytorch_tanh")]
    GeluNew,
    Relu,
}

fn model_type() -> String {
    "bert".into()
}
fn dropout() -> f64 {
    0.1
}
fn max_positions() -> usize {
    512
}
fn type_vocab() -> usize {
    2
}
fn initializer_range() -> f64 {
    0.02
}
fn layer_norm_eps() -> f64 {
    1e-12
}
fn absolute() -> String {
    "absolute".into()
}

impl BertConfig {
    /// A randomly initialised BERT of the given shape (the quickstart's tiny
    /// model); everything else keeps `BertConfig`'s defaults.
    pub fn small(
        vocab_size: usize,
        hidden_size: usize,
        num_hidden_layers: usize,
        num_attention_heads: usize,
        intermediate_size: usize,
        max_position_embeddings: usize,
    ) -> Self {
        Self {
            model_type: model_type(),
            vocab_size,
            embedding_size: None,
            hidden_size,
            num_hidden_layers,
            num_attention_heads,
            intermediate_size,
            hidden_act: HiddenAct::Gelu,
            hidden_dropout_prob: dropout(),
            attention_probs_dropout_prob: dropout(),
            classifier_dropout: None,
            max_position_embeddings,
            type_vocab_size: type_vocab(),
            initializer_range: initializer_range(),
            layer_norm_eps: layer_norm_eps(),
            pad_token_id: 0,
            position_embedding_type: absolute(),
            relative_attention_num_buckets: None,
        }
    }

    /// The width of the word, position and segment embeddings.
    pub fn embedding_width(&self) -> usize {
        self.embedding_size.unwrap_or(self.hidden_size)
    }

    /// The family of `model_type`; [`Self::check`] has refused any other.
    pub fn family(&self) -> Result<&'static dyn Family, String> {
        super::family::family(&self.model_type)
    }

    /// How the encoder is laid out (BERT's for a `model_type` no family has,
    /// which [`Self::check`] refuses before anything is built).
    pub fn layout(&self) -> Layout {
        match self.family() {
            Ok(family) => family.layout(self),
            Err(_) => super::family::FAMILIES[0].layout(self),
        }
    }

    /// Refuses what this implementation does not compute, with the field's name.
    pub fn check(&self) -> Result<(), String> {
        let layout = self.family()?.layout(self);
        if self.position_embedding_type != "absolute" {
            return Err(format!(
                "position_embedding_type `{}` is not supported (only `absolute`)",
                self.position_embedding_type
            ));
        }
        if self.num_attention_heads == 0 || !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Err(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        for (name, value) in [
            ("vocab_size", self.vocab_size),
            ("num_hidden_layers", self.num_hidden_layers),
            ("intermediate_size", self.intermediate_size),
            ("embedding_size", self.embedding_width()),
            ("max_position_embeddings", self.max_position_embeddings),
            ("type_vocab_size", if layout.token_types { self.type_vocab_size } else { 1 }),
        ] {
            if value == 0 {
                return Err(format!("{name} must be positive"));
            }
        }
        // Drawn from or divided by: a bad value would panic or poison every weight.
        if !(self.initializer_range.is_finite() && self.initializer_range >= 0.0) {
            return Err(format!("initializer_range must be a finite number ≥ 0, got {}", self.initializer_range));
        }
        if !(self.layer_norm_eps.is_finite() && self.layer_norm_eps > 0.0) {
            return Err(format!("layer_norm_eps must be a finite number > 0, got {}", self.layer_norm_eps));
        }
        for (name, p) in [
            ("hidden_dropout_prob", Some(self.hidden_dropout_prob)),
            ("attention_probs_dropout_prob", Some(self.attention_probs_dropout_prob)),
            ("classifier_dropout", self.classifier_dropout),
        ] {
            if let Some(p) = p
                && !(0.0..1.0).contains(&p)
            {
                return Err(format!("{name} must be in [0, 1), got {p}"));
            }
        }
        Ok(())
    }

    pub fn head_size(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }

    pub fn classifier_dropout(&self) -> f64 {
        self.classifier_dropout.unwrap_or(self.hidden_dropout_prob)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_hugging_face_config_and_ignores_bookkeeping_keys() {
        let json = r#"{
          "_name_or_path": "nreimers/MiniLM-L6-H384-uncased", "architectures": ["BertModel"],
          "attention_probs_dropout_prob": 0.1, "gradient_checkpointing": false, "hidden_act": "gelu",
          "hidden_dropout_prob": 0.1, "hidden_size": 384, "initializer_range": 0.02,
          "intermediate_size": 1536, "layer_norm_eps": 1e-12, "max_position_embeddings": 512,
          "model_type": "bert", "num_attention_heads": 12, "num_hidden_layers": 6, "pad_token_id": 0,
          "position_embedding_type": "absolute", "transformers_version": "4.8.2", "type_vocab_size": 2,
          "use_cache": true, "vocab_size": 30522 }"#;
        let config: BertConfig = serde_json::from_str(json).unwrap();
        assert_eq!(config.check(), Ok(()));
        assert_eq!((config.hidden_size, config.head_size(), config.num_hidden_layers), (384, 32, 6));
        assert_eq!(config.layer_norm_eps, 1e-12);
    }

    #[test]
    fn refuses_other_model_types_and_shapes() {
        let mut config = BertConfig::small(100, 64, 2, 2, 128, 64);
        config.model_type = "xlnet".into();
        assert!(config.check().unwrap_err().contains("model_type `xlnet` is not supported"));
        let mut config = BertConfig::small(100, 64, 2, 3, 128, 64);
        assert!(config.check().unwrap_err().contains("multiple of num_attention_heads"));
        config.num_attention_heads = 2;
        config.position_embedding_type = "relative_key".into();
        assert!(config.check().unwrap_err().contains("relative_key"));
        let mut config = BertConfig::small(100, 64, 2, 2, 128, 64);
        config.initializer_range = -0.02;
        assert!(config.check().unwrap_err().contains("initializer_range must be"));
        config.initializer_range = 0.02;
        config.hidden_dropout_prob = 1.5;
        assert!(config.check().unwrap_err().contains("hidden_dropout_prob must be in [0, 1)"));
    }
}
