//! `config.json` of a ModernBERT checkpoint, in `transformers`' names.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One layer's attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttentionKind {
    /// Every token attends to every token.
    Global,
    /// A token attends to the tokens at most `half_window` positions away.
    Local { half_window: usize },
}

/// How the classification head pools the last hidden states.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pooling {
    /// The first token's state.
    Cls,
    /// The mean over the real (unpadded) tokens.
    Mean,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
struct RopeParameters {
    rope_theta: f64,
    #[serde(default)]
    rope_type: Option<String>,
}

/// The hyper-parameters the encoder computes with; a trained model saves
/// them in its `config.json` (`checkpoint::ModelConfig`).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct ModernBertConfig {
    /// `modernbert`.
    pub model_type: String,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    #[serde(default = "default_norm_eps")]
    pub norm_eps: f64,
    #[serde(default)]
    pub norm_bias: bool,
    #[serde(default)]
    pub attention_bias: bool,
    #[serde(default)]
    pub mlp_bias: bool,
    #[serde(default)]
    pub classifier_bias: bool,
    #[serde(default = "default_activation")]
    pub hidden_activation: String,
    #[serde(default = "default_activation")]
    pub classifier_activation: String,
    #[serde(default = "default_pooling")]
    pub classifier_pooling: Pooling,
    /// The whole sliding window; a token sees half of it on each side.
    #[serde(default = "default_local_attention")]
    pub local_attention: usize,
    #[serde(default = "default_global_every")]
    pub global_attn_every_n_layers: usize,
    /// `full_attention` / `sliding_attention` per layer (transformers ≥ 5);
    /// older configs give `global_attn_every_n_layers` only.
    #[serde(default)]
    layer_types: Option<Vec<String>>,
    /// Rotary bases per attention kind (transformers ≥ 5) …
    #[serde(default)]
    rope_parameters: Option<BTreeMap<String, RopeParameters>>,
    /// … or, in older configs, these.
    #[serde(default = "default_global_theta")]
    global_rope_theta: f64,
    #[serde(default = "default_local_theta")]
    local_rope_theta: f64,
    pub pad_token_id: usize,
    pub max_position_embeddings: usize,
    /// The spread of fresh weights (truncated normals, see `load`).
    #[serde(default = "default_initializer_range")]
    pub initializer_range: f64,
    /// Where those normals are cut, in standard deviations.
    #[serde(default = "default_cutoff")]
    pub initializer_cutoff_factor: f64,
    /// Dropout after the embeddings' norm (training only, as every dropout).
    #[serde(default, deserialize_with = "null_as_zero")]
    pub embedding_dropout: f64,
    /// On the attention probabilities and after the output projection.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub attention_dropout: f64,
    /// Inside the GeGLU feed-forward layer, before its output projection.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub mlp_dropout: f64,
    /// After the classification head, before its output layer.
    #[serde(default, deserialize_with = "null_as_zero")]
    pub classifier_dropout: f64,
}

fn default_norm_eps() -> f64 {
    1e-5
}
fn default_activation() -> String {
    "gelu".into()
}
fn default_pooling() -> Pooling {
    Pooling::Cls
}
fn default_local_attention() -> usize {
    128
}
fn default_global_every() -> usize {
    3
}
fn default_global_theta() -> f64 {
    160_000.0
}
fn default_local_theta() -> f64 {
    10_000.0
}
/// transformers writes an unset dropout as `null`.
fn null_as_zero<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(0.0))
}
fn default_initializer_range() -> f64 {
    0.02
}
fn default_cutoff() -> f64 {
    2.0
}

impl ModernBertConfig {
    /// Reads and checks a `config.json`.
    pub fn from_json(json: &[u8]) -> Result<Self, String> {
        let config: ModernBertConfig = serde_json::from_slice(json).map_err(|e| e.to_string())?;
        config.check()?;
        Ok(config)
    }

    /// Refuses what the encoder does not compute, naming the field.
    pub fn check(&self) -> Result<(), String> {
        if self.model_type != super::MODEL_TYPE {
            return Err(format!("model_type = \"{}\": not a ModernBERT checkpoint", self.model_type));
        }
        if self.num_attention_heads == 0 || !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Err(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        if !(self.hidden_size / self.num_attention_heads).is_multiple_of(2) {
            return Err("rotary positions need an even head size (hidden_size / num_attention_heads)".into());
        }
        for (field, name) in
            [("hidden_activation", &self.hidden_activation), ("classifier_activation", &self.classifier_activation)]
        {
            if name != "gelu" {
                return Err(format!("{field} = \"{name}\": only \"gelu\" is computed"));
            }
        }
        if let Some(types) = &self.layer_types {
            if types.len() != self.num_hidden_layers {
                return Err(format!("layer_types has {} entries for {} layers", types.len(), self.num_hidden_layers));
            }
            if let Some(other) = types.iter().find(|t| *t != "full_attention" && *t != "sliding_attention") {
                return Err(format!("layer_types: unknown attention \"{other}\""));
            }
        }
        if let Some(params) = &self.rope_parameters
            && let Some((kind, p)) = params.iter().find(|(_, p)| p.rope_type.as_deref().is_some_and(|t| t != "default"))
        {
            return Err(format!(
                "rope_parameters.{kind}.rope_type = \"{}\": only the default rotary embedding is computed",
                p.rope_type.as_deref().unwrap_or_default()
            ));
        }
        for (field, p) in [
            ("embedding_dropout", self.embedding_dropout),
            ("attention_dropout", self.attention_dropout),
            ("mlp_dropout", self.mlp_dropout),
            ("classifier_dropout", self.classifier_dropout),
        ] {
            if !(0.0..1.0).contains(&p) {
                return Err(format!("{field} = {p}: a dropout probability is in [0, 1)"));
            }
        }
        if self.global_attn_every_n_layers == 0 {
            return Err("global_attn_every_n_layers is 0".into());
        }
        Ok(())
    }

    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }

    /// Layer `layer`'s attention: `layer_types` when given, else every
    /// `global_attn_every_n_layers`-th layer (from the first) is global.
    pub fn attention(&self, layer: usize) -> AttentionKind {
        let global = match &self.layer_types {
            Some(types) => types[layer] == "full_attention",
            None => layer.is_multiple_of(self.global_attn_every_n_layers),
        };
        if global { AttentionKind::Global } else { AttentionKind::Local { half_window: self.local_attention / 2 } }
    }

    /// Sets every dropout to `p` (a grid's `dropout` key).
    pub fn set_dropout(&mut self, p: f64) {
        self.embedding_dropout = p;
        self.attention_dropout = p;
        self.mlp_dropout = p;
        self.classifier_dropout = p;
    }

    /// The rotary base of an attention kind.
    pub fn rope_theta(&self, kind: AttentionKind) -> f64 {
        let (name, fallback) = match kind {
            AttentionKind::Global => ("full_attention", self.global_rope_theta),
            AttentionKind::Local { .. } => ("sliding_attention", self.local_rope_theta),
        };
        self.rope_parameters.as_ref().and_then(|p| p.get(name)).map_or(fallback, |p| p.rope_theta)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &str) -> Result<ModernBertConfig, String> {
        let json = format!(
            r#"{{"model_type": "modernbert", "vocab_size": 10, "hidden_size": 8, "intermediate_size": 12, "num_hidden_layers": 4,
                "num_attention_heads": 2, "pad_token_id": 0, "max_position_embeddings": 16{extra}}}"#
        );
        ModernBertConfig::from_json(json.as_bytes())
    }

    #[test]
    fn older_configs_alternate_by_global_attn_every_n_layers() {
        let c =
            config(r#", "global_attn_every_n_layers": 2, "local_attention": 6, "local_rope_theta": 500.0"#).unwrap();
        let kinds: Vec<AttentionKind> = (0..4).map(|l| c.attention(l)).collect();
        let local = AttentionKind::Local { half_window: 3 };
        assert_eq!(kinds, vec![AttentionKind::Global, local, AttentionKind::Global, local]);
        assert_eq!((c.rope_theta(AttentionKind::Global), c.rope_theta(local)), (160_000.0, 500.0));
    }

    #[test]
    fn what_is_not_computed_is_refused_by_name() {
        let e = config(r#", "hidden_activation": "silu""#).unwrap_err();
        assert!(e.contains("hidden_activation = \"silu\""), "{e}");
        let e =
            config(r#", "rope_parameters": {"full_attention": {"rope_theta": 1.0, "rope_type": "yarn"}}"#).unwrap_err();
        assert!(e.contains("rope_parameters.full_attention.rope_type = \"yarn\""), "{e}");
        let e = config(r#", "layer_types": ["full_attention"]"#).unwrap_err();
        assert!(e.contains("layer_types has 1 entries for 4 layers"), "{e}");
        let e = config(r#", "mlp_dropout": 1.5"#).unwrap_err();
        assert!(e.contains("mlp_dropout = 1.5"), "{e}");
    }

    /// A trained model's `config.json` reads back as the config it was
    /// trained with, in either generation of names.
    #[test]
    fn a_saved_config_reads_back_unchanged() {
        for extra in [
            r#", "global_attn_every_n_layers": 2, "local_rope_theta": 500.0, "mlp_dropout": 0.1"#,
            r#", "layer_types": ["full_attention", "sliding_attention", "sliding_attention", "full_attention"],
               "rope_parameters": {"full_attention": {"rope_theta": 8.0}, "sliding_attention": {"rope_theta": 4.0}}"#,
        ] {
            let c = config(extra).unwrap();
            let saved = serde_json::to_vec(&c).unwrap();
            assert_eq!(ModernBertConfig::from_json(&saved).unwrap(), c);
        }
    }
}
