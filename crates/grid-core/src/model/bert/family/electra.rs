//! ELECTRA's discriminator (`modeling_electra.py`): BERT's encoder under
//! embeddings that may be narrower than it (`embedding_size`, projected up by
//! `embeddings_project` after their LayerNorm), and
//! `ElectraClassificationHead` (dropout, dense, GELU, dropout, `out_proj` on
//! `[CLS]`) in place of pooler + classifier. The generator and the
//! discriminator's replaced-token head are pre-training parts, left unused.
//! Its `config.json` uses BERT's names, `embedding_size` included.

use super::{Family, HeadActivation, Layout};
use crate::model::bert::config::BertConfig;

pub struct Electra;

impl Family for Electra {
    fn model_type(&self) -> &'static str {
        "electra"
    }

    fn layout(&self, _: &BertConfig) -> Layout {
        Layout {
            token_types: true,
            position_offset: 0,
            head_activation: HeadActivation::Gelu,
            dropout_before_head: true,
            attention_output_dropout: true,
            relative_attention_buckets: None,
        }
    }

    fn key_remapping(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (r"^electra\.embeddings_project\.", "embeddings.project."),
            (r"^electra\.", ""),
            (r"^classifier\.dense\.", "pooler.dense."),
        ]
    }

    fn known_unused(&self) -> &'static [&'static str] {
        &[
            "classifier.out_proj.",
            "discriminator_predictions.",
            "generator_predictions.",
            "generator_lm_head.",
            "embeddings.position_ids",
            "qa_outputs.",
        ]
    }

    fn head_output(&self) -> &'static str {
        "classifier.out_proj"
    }
}
