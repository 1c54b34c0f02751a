//! RoBERTa (`modeling_roberta.py`): BERT's encoder with positions counted from
//! `pad_token_id + 1` (fairseq's convention; position rows below it are never
//! used), a one-row segment table, and `RobertaClassificationHead` (dropout,
//! dense, tanh, dropout, `out_proj` on `<s>`) in place of pooler + classifier.
//!
//! transformers numbers positions from the ids, skipping padding; `grid` runs
//! from embeddings, where transformers (`inputs_embeds`) numbers them in
//! sequence: the two agree on every right-padded input, and a `<pad>` that
//! erasure puts inside a text keeps the positions of the words after it.

use super::{Family, HeadActivation, Layout};
use crate::model::bert::config::BertConfig;

pub struct Roberta;

impl Family for Roberta {
    fn model_type(&self) -> &'static str {
        "roberta"
    }

    fn read_config(&self, json: &[u8]) -> Result<BertConfig, String> {
        let config = super::read_bert_names(json)?;
        if config.max_position_embeddings <= config.pad_token_id as usize + 1 {
            return Err(format!(
                "max_position_embeddings {} leaves no position after pad_token_id {} (RoBERTa counts positions from \
                 pad_token_id + 1)",
                config.max_position_embeddings, config.pad_token_id
            ));
        }
        Ok(config)
    }

    fn layout(&self, config: &BertConfig) -> Layout {
        Layout {
            token_types: true,
            position_offset: config.pad_token_id as usize + 1,
            head_activation: HeadActivation::Tanh,
            dropout_before_head: true,
            attention_output_dropout: true,
            relative_attention_buckets: None,
        }
    }

    fn key_remapping(&self) -> &'static [(&'static str, &'static str)] {
        &[
            // RobertaModel's pooler is not part of RobertaForSequenceClassification,
            // whose head starts with `classifier.dense`.
            (r"^roberta\.pooler\.", "unused_pooler."),
            (r"^roberta\.", ""),
            (r"^classifier\.dense\.", "pooler.dense."),
        ]
    }

    fn known_unused(&self) -> &'static [&'static str] {
        &["lm_head.", "classifier.out_proj.", "unused_pooler.", "embeddings.position_ids", "qa_outputs."]
    }

    fn head_output(&self) -> &'static str {
        "classifier.out_proj"
    }
}
