//! MPNet (`modeling_mpnet.py`; all-mpnet-base-v2 is the largest pretrained
//! encoder a package registry ships): BERT's encoder with positions counted
//! from `pad_token_id + 1` as RoBERTa's, no segment embeddings, and a bias on
//! every layer's attention scores by the query's and key's relative position
//! (T5's buckets, [`relative_bucket`]) from one table the layers share
//! (`encoder.relative_attention_bias`). The head is RoBERTa's
//! (`MPNetClassificationHead`: dropout, dense, tanh, dropout, `out_proj` on
//! `<s>`). Its checkpoints name the attention `attn.{q,k,v,o}` and its
//! LayerNorm `attention.LayerNorm`.

use super::{Family, HeadActivation, Layout};
use crate::model::bert::config::BertConfig;

pub struct MpNet;

/// The buckets `transformers` computes with, whatever the config says
/// (`compute_position_bias`'s default): half for keys before the query, half
/// after, each exact up to 8 and logarithmic up to [`MAX_DISTANCE`].
pub const BUCKETS: usize = 32;
const MAX_DISTANCE: usize = 128;

/// The table row of a key `relative` positions after its query
/// (`MPNetEncoder.relative_position_bucket`).
pub fn relative_bucket(relative: i64) -> usize {
    let half = BUCKETS / 2;
    let n = -relative;
    let side = if n < 0 { half } else { 0 };
    let n = n.unsigned_abs() as usize;
    let exact = half / 2;
    if n < exact {
        return side + n;
    }
    // In f32 as torch computes it, truncated toward zero by `.to(torch.long)`.
    let log = (n as f32 / exact as f32).ln() / (MAX_DISTANCE as f32 / exact as f32).ln();
    let large = exact + (log * (half - exact) as f32) as usize;
    side + large.min(half - 1)
}

impl Family for MpNet {
    fn model_type(&self) -> &'static str {
        "mpnet"
    }

    fn read_config(&self, json: &[u8]) -> Result<BertConfig, String> {
        let mut config = super::read_bert_names(json)?;
        if config.max_position_embeddings <= config.pad_token_id as usize + 1 {
            return Err(format!(
                "max_position_embeddings {} leaves no position after pad_token_id {} (MPNet counts positions from \
                 pad_token_id + 1)",
                config.max_position_embeddings, config.pad_token_id
            ));
        }
        let rows = config.relative_attention_num_buckets.unwrap_or(BUCKETS);
        if rows < BUCKETS {
            return Err(format!(
                "relative_attention_num_buckets {rows} is below the {BUCKETS} buckets MPNet's attention indexes"
            ));
        }
        config.relative_attention_num_buckets = Some(rows);
        Ok(config)
    }

    fn layout(&self, config: &BertConfig) -> Layout {
        Layout {
            token_types: false,
            position_offset: config.pad_token_id as usize + 1,
            head_activation: HeadActivation::Tanh,
            dropout_before_head: true,
            attention_output_dropout: true,
            relative_attention_buckets: Some(config.relative_attention_num_buckets.unwrap_or(BUCKETS)),
        }
    }

    fn key_remapping(&self) -> &'static [(&'static str, &'static str)] {
        &[
            // MPNetForSequenceClassification's encoder has no pooler; a bare
            // MPNetModel's (`pooler.dense`, tanh) starts the head's dense layer.
            (r"^mpnet\.pooler\.", "unused_pooler."),
            (r"^mpnet\.", ""),
            (r"^classifier\.dense\.", "pooler.dense."),
            (r"\.attention\.attn\.q\.", ".attention.self.query."),
            (r"\.attention\.attn\.k\.", ".attention.self.key."),
            (r"\.attention\.attn\.v\.", ".attention.self.value."),
            (r"\.attention\.attn\.o\.", ".attention.output.dense."),
            (r"\.attention\.LayerNorm\.", ".attention.output.LayerNorm."),
        ]
    }

    fn known_unused(&self) -> &'static [&'static str] {
        &["lm_head.", "classifier.out_proj.", "unused_pooler.", "embeddings.position_ids"]
    }

    fn head_output(&self) -> &'static str {
        "classifier.out_proj"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Buckets as `MPNetEncoder.relative_position_bucket` gives them (torch
    /// 2.15, transformers 5.25) for every relative position in −1000…1000:
    /// exact below 8, then from these distances on.
    #[test]
    fn buckets_match_transformers() {
        let from = [(8, 8), (12, 9), (16, 10), (23, 11), (32, 12), (46, 13), (64, 14), (91, 15)];
        let torch = |distance: usize| -> usize {
            if distance < 8 { distance } else { from.iter().rev().find(|(d, _)| distance >= *d).map_or(0, |(_, b)| *b) }
        };
        for distance in 0..=1000usize {
            let d = distance as i64;
            assert_eq!(relative_bucket(-d), torch(distance), "key {distance} before its query");
            if distance > 0 {
                assert_eq!(relative_bucket(d), 16 + torch(distance), "key {distance} after its query");
            }
        }
    }

    #[test]
    fn reads_all_mpnet_base_v2s_config() {
        let json = br#"{"architectures": ["MPNetForMaskedLM"], "attention_probs_dropout_prob": 0.1,
          "bos_token_id": 0, "eos_token_id": 2, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
          "hidden_size": 768, "initializer_range": 0.02, "intermediate_size": 3072, "layer_norm_eps": 1e-05,
          "max_position_embeddings": 514, "model_type": "mpnet", "num_attention_heads": 12,
          "num_hidden_layers": 12, "pad_token_id": 1, "relative_attention_num_buckets": 32,
          "transformers_version": "4.8.2", "vocab_size": 30527}"#;
        let config = super::super::read_config(json).unwrap();
        let layout = config.layout();
        assert_eq!(
            (layout.position_offset, layout.token_types, layout.relative_attention_buckets),
            (2, false, Some(32))
        );
        let few = String::from_utf8_lossy(json)
            .replace("\"relative_attention_num_buckets\": 32", "\"relative_attention_num_buckets\": 16");
        let error = super::super::read_config(few.as_bytes()).unwrap_err();
        assert!(error.contains("relative_attention_num_buckets 16 is below the 32"), "{error}");
    }
}
