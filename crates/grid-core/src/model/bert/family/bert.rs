//! BERT (`modeling_bert.py`), the shape the encoder is written in: its names
//! need no mapping beyond the shared ones.

use super::{Family, HeadActivation, Layout};
use crate::model::bert::config::BertConfig;

pub struct Bert;

impl Family for Bert {
    fn model_type(&self) -> &'static str {
        "bert"
    }

    fn layout(&self, _: &BertConfig) -> Layout {
        Layout {
            token_types: true,
            position_offset: 0,
            head_activation: HeadActivation::Tanh,
            dropout_before_head: false,
            attention_output_dropout: true,
            relative_attention_buckets: None,
        }
    }

    fn key_remapping(&self) -> &'static [(&'static str, &'static str)] {
        &[(r"^bert\.", "")]
    }

    fn known_unused(&self) -> &'static [&'static str] {
        &["cls.", "classifier.", "qa_outputs.", "embeddings.position_ids", "lm_head."]
    }

    fn head_output(&self) -> &'static str {
        "classifier"
    }
}
