//! `config.json` of a DeBERTa-v2/v3 checkpoint (`model_type = "deberta-v2"`),
//! in `transformers`' names.

use serde::{Deserialize, Deserializer, Serialize};

/// The hyper-parameters the encoder computes with.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct DebertaConfig {
    /// `deberta-v2` (DeBERTa-v3 checkpoints say so too).
    pub model_type: String,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    #[serde(default = "default_act")]
    pub hidden_act: String,
    #[serde(default = "default_eps")]
    pub layer_norm_eps: f64,
    #[serde(default = "default_positions")]
    pub max_position_embeddings: usize,
    /// Word embeddings narrower than the encoder are projected up.
    #[serde(default)]
    pub embedding_size: Option<usize>,
    /// Absolute positions added to the word embeddings (DeBERTa-v3: false).
    #[serde(default = "default_true")]
    pub position_biased_input: bool,
    #[serde(default)]
    pub type_vocab_size: usize,
    #[serde(default)]
    pub relative_attention: bool,
    /// `< 1`: `max_position_embeddings`.
    #[serde(default = "default_minus_one")]
    pub max_relative_positions: i64,
    /// `> 0`: relative distances are bucketed logarithmically into this many
    /// per side (DeBERTa-v3: 256).
    #[serde(default = "default_minus_one")]
    pub position_buckets: i64,
    /// `c2p` / `p2c`, as a list or `"p2c|c2p"`.
    #[serde(default, deserialize_with = "att_types")]
    pub pos_att_type: Vec<String>,
    /// Position projections shared with the content's (DeBERTa-v3: true).
    #[serde(default)]
    pub share_att_key: bool,
    /// `layer_norm`: the relative embeddings pass through the encoder's LayerNorm.
    #[serde(default = "default_none")]
    pub norm_rel_ebd: String,
    /// `> 0`: a convolution after the first layer (DeBERTa-v2-xlarge), not computed.
    #[serde(default)]
    pub conv_kernel_size: usize,
    #[serde(default = "default_act")]
    pub pooler_hidden_act: String,
    #[serde(default)]
    pub pooler_hidden_size: Option<usize>,
    pub pad_token_id: usize,
    #[serde(default = "default_range")]
    pub initializer_range: f64,
    #[serde(default = "default_dropout")]
    pub hidden_dropout_prob: f64,
    #[serde(default = "default_dropout")]
    pub attention_probs_dropout_prob: f64,
    #[serde(default, deserialize_with = "null_as_none")]
    pub cls_dropout: Option<f64>,
    #[serde(default)]
    pub pooler_dropout: f64,
}

fn default_act() -> String {
    "gelu".into()
}
fn default_eps() -> f64 {
    1e-7
}
fn default_positions() -> usize {
    512
}
fn default_true() -> bool {
    true
}
fn default_minus_one() -> i64 {
    -1
}
fn default_none() -> String {
    "none".into()
}
fn default_range() -> f64 {
    0.02
}
fn default_dropout() -> f64 {
    0.1
}

fn null_as_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Option::<f64>::deserialize(d)
}

fn att_types<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Types {
        Text(String),
        List(Vec<String>),
    }
    Ok(match Option::<Types>::deserialize(d)? {
        None => Vec::new(),
        Some(Types::Text(text)) => text.split('|').map(|t| t.trim().to_lowercase()).filter(|t| !t.is_empty()).collect(),
        Some(Types::List(list)) => list.into_iter().map(|t| t.trim().to_lowercase()).collect(),
    })
}

impl DebertaConfig {
    /// Reads and checks a `config.json`.
    pub fn from_json(json: &[u8]) -> Result<Self, String> {
        let config: DebertaConfig = serde_json::from_slice(json).map_err(|e| e.to_string())?;
        config.check()?;
        Ok(config)
    }

    /// Refuses what the encoder does not compute, naming the field.
    pub fn check(&self) -> Result<(), String> {
        if self.model_type != super::MODEL_TYPE {
            return Err(format!("model_type = \"{}\": not a DeBERTa-v2/v3 checkpoint", self.model_type));
        }
        if self.num_attention_heads == 0 || !self.hidden_size.is_multiple_of(self.num_attention_heads) {
            return Err(format!(
                "hidden_size {} is not a multiple of num_attention_heads {}",
                self.hidden_size, self.num_attention_heads
            ));
        }
        for (field, name) in [("hidden_act", &self.hidden_act), ("pooler_hidden_act", &self.pooler_hidden_act)] {
            if name != "gelu" {
                return Err(format!("{field} = \"{name}\": only \"gelu\" is computed"));
            }
        }
        if let Some(other) = self.pos_att_type.iter().find(|t| *t != "c2p" && *t != "p2c") {
            return Err(format!("pos_att_type: \"{other}\" is not computed (c2p, p2c are)"));
        }
        if self.relative_attention && !self.pos_att_type.is_empty() && !self.share_att_key {
            return Err("share_att_key = false (DeBERTa-v2's own position projections) is not computed; \
                        DeBERTa-v3 shares them"
                .into());
        }
        if self.conv_kernel_size > 0 {
            return Err(format!("conv_kernel_size = {}: the convolution layer is not computed", self.conv_kernel_size));
        }
        if self.pooler_hidden_size.is_some_and(|p| p != self.hidden_size) {
            return Err("pooler_hidden_size differs from hidden_size".into());
        }
        Ok(())
    }

    pub fn head_dim(&self) -> usize {
        self.hidden_size / self.num_attention_heads
    }

    pub fn embedding_size(&self) -> usize {
        self.embedding_size.unwrap_or(self.hidden_size)
    }

    /// The relative positions one side of the table spans.
    pub fn max_relative_positions(&self) -> usize {
        if self.max_relative_positions < 1 {
            self.max_position_embeddings
        } else {
            self.max_relative_positions as usize
        }
    }

    /// Rows of relative embeddings per side: the buckets, or every position.
    pub fn attention_span(&self) -> usize {
        if self.position_buckets > 0 { self.position_buckets as usize } else { self.max_relative_positions() }
    }

    pub fn c2p(&self) -> bool {
        self.relative_attention && self.pos_att_type.iter().any(|t| t == "c2p")
    }

    pub fn p2c(&self) -> bool {
        self.relative_attention && self.pos_att_type.iter().any(|t| t == "p2c")
    }

    pub fn norm_relative_embeddings(&self) -> bool {
        self.norm_rel_ebd.split('|').any(|t| t.trim().eq_ignore_ascii_case("layer_norm"))
    }

    /// Sets its dropouts to `p` (a grid's `dropout` key): hidden and
    /// attention, and the classifier's through the hidden one.
    pub fn set_dropout(&mut self, p: f64) {
        self.hidden_dropout_prob = p;
        self.attention_probs_dropout_prob = p;
        self.cls_dropout = None;
    }

    /// The dropout before the classification layer.
    pub fn classifier_dropout(&self) -> f64 {
        self.cls_dropout.unwrap_or(self.hidden_dropout_prob)
    }

    /// The relative distance `query − key` as the table row it reads:
    /// itself up to half the buckets, logarithmically further (DeBERTa's
    /// `make_log_bucket_position`), then shifted by the span and clamped
    /// into the table.
    pub fn relative_row(&self, distance: i64) -> usize {
        let span = self.attention_span() as i64;
        let bucket = if self.position_buckets > 0 {
            log_bucket(distance, self.position_buckets, self.max_relative_positions() as i64)
        } else {
            distance
        };
        (bucket + span).clamp(0, 2 * span - 1) as usize
    }
}

/// `make_log_bucket_position` for one distance, in f32 as torch computes it.
fn log_bucket(distance: i64, buckets: i64, max_position: i64) -> i64 {
    let mid = buckets / 2;
    if distance.abs() <= mid {
        return distance;
    }
    let (abs, mid_f) = (distance.abs() as f32, mid as f32);
    let ratio = ((max_position - 1) as f32 / mid_f).ln();
    let log = ((abs / mid_f).ln() / ratio * (mid_f - 1.0)).ceil() + mid_f;
    distance.signum() * log as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(extra: &str) -> Result<DebertaConfig, String> {
        let json = format!(
            r#"{{"model_type": "deberta-v2", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
                "num_attention_heads": 2, "intermediate_size": 12, "pad_token_id": 0, "relative_attention": true,
                "share_att_key": true{extra}}}"#
        );
        DebertaConfig::from_json(json.as_bytes())
    }

    /// deberta-v3-base's buckets (256, 512 positions): distances up to 128
    /// are themselves, further ones grow logarithmically, the sign kept.
    #[test]
    fn distances_fall_into_log_buckets() {
        let c =
            config(r#", "position_buckets": 256, "max_relative_positions": -1, "pos_att_type": "p2c|c2p""#).unwrap();
        assert_eq!(c.pos_att_type, vec!["p2c", "c2p"]);
        assert_eq!(c.attention_span(), 256);
        assert_eq!(log_bucket(128, 256, 512), 128);
        assert_eq!(log_bucket(-5, 256, 512), -5);
        // ceil(ln(511/128) / ln(511/128) · 127) + 128 = 255.
        assert_eq!(log_bucket(511, 256, 512), 255);
        assert_eq!(log_bucket(-511, 256, 512), -255);
        assert!(log_bucket(200, 256, 512) > 128 && log_bucket(200, 256, 512) < 255);
        assert_eq!(c.relative_row(0), 256);
        assert_eq!(c.relative_row(-511), 1);
    }

    #[test]
    fn what_is_not_computed_is_refused_by_name() {
        let e = config(r#", "conv_kernel_size": 3"#).unwrap_err();
        assert!(e.contains("conv_kernel_size = 3"), "{e}");
        let e = config(r#", "pos_att_type": ["p2p"]"#).unwrap_err();
        assert!(e.contains("\"p2p\""), "{e}");
        let e = config(r#", "hidden_act": "relu""#).unwrap_err();
        assert!(e.contains("hidden_act = \"relu\""), "{e}");
    }
}
