//! DistilBERT (`modeling_distilbert.py`): BERT's layer with other names
//! (`q_lin`, `sa_layer_norm`, `ffn.lin1`, …), no segment embeddings, no
//! dropout after the attention's output projection, LayerNorm ε fixed at
//! 1e-12, and a head of `pre_classifier`, ReLU, dropout, `classifier`.

use serde::Deserialize;

use super::{Family, HeadActivation, Layout};
use crate::model::bert::config::{BertConfig, HiddenAct};

pub struct DistilBert;

/// `DistilBertConfig`'s names and defaults.
#[derive(Deserialize)]
struct DistilBertConfig {
    vocab_size: usize,
    #[serde(default = "dim")]
    dim: usize,
    #[serde(default = "n_layers")]
    n_layers: usize,
    #[serde(default = "n_heads")]
    n_heads: usize,
    #[serde(default = "hidden_dim")]
    hidden_dim: usize,
    #[serde(default)]
    activation: HiddenAct,
    #[serde(default = "p")]
    dropout: f64,
    #[serde(default = "p")]
    attention_dropout: f64,
    #[serde(default = "seq_classif_dropout")]
    seq_classif_dropout: f64,
    #[serde(default = "max_positions")]
    max_position_embeddings: usize,
    #[serde(default = "initializer_range")]
    initializer_range: f64,
    #[serde(default)]
    pad_token_id: u32,
    /// With sinusoidal positions the table is saved like a learnt one, so it
    /// loads; only fine-tuning differs (transformers freezes it, `grid` trains it).
    #[serde(default)]
    #[allow(dead_code)]
    sinusoidal_pos_embds: bool,
}

fn dim() -> usize {
    768
}
fn n_layers() -> usize {
    6
}
fn n_heads() -> usize {
    12
}
fn hidden_dim() -> usize {
    3072
}
fn p() -> f64 {
    0.1
}
fn seq_classif_dropout() -> f64 {
    0.2
}
fn max_positions() -> usize {
    512
}
fn initializer_range() -> f64 {
    0.02
}

impl Family for DistilBert {
    fn model_type(&self) -> &'static str {
        "distilbert"
    }

    fn read_config(&self, json: &[u8]) -> Result<BertConfig, String> {
        let c: DistilBertConfig = serde_json::from_slice(json).map_err(|e| e.to_string())?;
        let mut config =
            BertConfig::small(c.vocab_size, c.dim, c.n_layers, c.n_heads, c.hidden_dim, c.max_position_embeddings);
        config.model_type = self.model_type().into();
        config.hidden_act = c.activation;
        config.hidden_dropout_prob = c.dropout;
        config.attention_probs_dropout_prob = c.attention_dropout;
        config.classifier_dropout = Some(c.seq_classif_dropout);
        config.initializer_range = c.initializer_range;
        config.layer_norm_eps = 1e-12;
        config.pad_token_id = c.pad_token_id;
        config.type_vocab_size = 0;
        config.check()?;
        Ok(config)
    }

    fn layout(&self, _: &BertConfig) -> Layout {
        Layout {
            token_types: false,
            position_offset: 0,
            head_activation: HeadActivation::Relu,
            dropout_before_head: false,
            attention_output_dropout: false,
            relative_attention_buckets: None,
        }
    }

    fn key_remapping(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (r"^distilbert\.", ""),
            (r"^transformer\.layer\.", "encoder.layer."),
            (r"\.attention\.q_lin\.", ".attention.self.query."),
            (r"\.attention\.k_lin\.", ".attention.self.key."),
            (r"\.attention\.v_lin\.", ".attention.self.value."),
            (r"\.attention\.out_lin\.", ".attention.output.dense."),
            (r"\.sa_layer_norm\.", ".attention.output.LayerNorm."),
            (r"\.ffn\.lin1\.", ".intermediate.dense."),
            (r"\.ffn\.lin2\.", ".output.dense."),
            (r"\.output_layer_norm\.", ".output.LayerNorm."),
            (r"^pre_classifier\.", "pooler.dense."),
        ]
    }

    fn known_unused(&self) -> &'static [&'static str] {
        &[
            "vocab_transform.",
            "vocab_layer_norm.",
            "vocab_projector.",
            "classifier.",
            "qa_outputs.",
            "embeddings.position_ids",
        ]
    }

    fn head_output(&self) -> &'static str {
        "classifier"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_distilbert_names_into_the_encoder_config() {
        let json = br#"{"activation": "gelu", "architectures": ["DistilBertForMaskedLM"], "attention_dropout": 0.1,
            "dim": 768, "dropout": 0.1, "hidden_dim": 3072, "initializer_range": 0.02, "max_position_embeddings": 512,
            "model_type": "distilbert", "n_heads": 12, "n_layers": 6, "pad_token_id": 0, "qa_dropout": 0.1,
            "seq_classif_dropout": 0.2, "sinusoidal_pos_embds": false, "tie_weights_": true, "vocab_size": 30522}"#;
        let config = DistilBert.read_config(json).unwrap();
        assert_eq!((config.hidden_size, config.num_hidden_layers, config.num_attention_heads), (768, 6, 12));
        assert_eq!(
            (config.intermediate_size, config.type_vocab_size, config.model_type.as_str()),
            (3072, 0, "distilbert")
        );
        assert_eq!(config.classifier_dropout(), 0.2);
        let bad = br#"{"model_type": "distilbert", "vocab_size": 10, "dim": 30, "n_heads": 4}"#;
        assert!(DistilBert.read_config(bad).unwrap_err().contains("not a multiple of num_attention_heads"));
    }
}
