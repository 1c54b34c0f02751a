//! The `transformers` model families that share BERT's encoder computation:
//! post-LayerNorm self-attention layers over word + position (+ segment)
//! embeddings (+ MPNet's relative-position bias on the attention scores), and
//! a two-layer head on the first token. What differs between
//! them is how `config.json` names the hyper-parameters, how the checkpoint
//! names the tensors, where positions start, and the head's nonlinearity: each
//! family states those in its own file, and [`FAMILIES`] registers it. A new
//! family of this shape is one file plus a line there.

mod bert;
mod distilbert;
mod electra;
mod mpnet;
mod roberta;

use super::config::BertConfig;
pub use mpnet::relative_bucket;

/// What one family of checkpoints is.
pub trait Family: Sync {
    /// `config.json`'s `model_type`.
    fn model_type(&self) -> &'static str;

    /// Reads a Hugging Face `config.json` of this family into the encoder's
    /// config, refusing what the encoder does not compute. By default the
    /// family uses BERT's names.
    fn read_config(&self, json: &[u8]) -> Result<BertConfig, String> {
        read_bert_names(json)
    }

    /// How the encoder is laid out for this family.
    fn layout(&self, config: &BertConfig) -> Layout;

    /// Checkpoint tensor names → the encoder's field paths, applied in order
    /// before the renamings every family shares (`attention.self`, LayerNorm).
    fn key_remapping(&self) -> &'static [(&'static str, &'static str)];

    /// Tensors (by name after remapping) the encoder has no place for and
    /// that may be left out: pre-training heads, the classification head's
    /// output layer (read on its own), buffers older versions saved.
    fn known_unused(&self) -> &'static [&'static str];

    /// The checkpoint's name of the classification head's output layer
    /// (`…weight`, `…bias`), in a `*ForSequenceClassification` checkpoint.
    fn head_output(&self) -> &'static str;
}

/// The parts of the computation that differ between families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// Segment (token-type) embeddings are added: BERT and RoBERTa, not DistilBERT.
    pub token_types: bool,
    /// The position id of the first token: RoBERTa counts from `pad_token_id + 1`.
    pub position_offset: usize,
    /// The nonlinearity after the head's first dense layer (BERT's pooler,
    /// RoBERTa's `classifier.dense`, DistilBERT's `pre_classifier`).
    pub head_activation: HeadActivation,
    /// Dropout on the first token's state before that dense layer (RoBERTa's head).
    pub dropout_before_head: bool,
    /// Dropout after the attention's output projection (BERT and RoBERTa).
    pub attention_output_dropout: bool,
    /// MPNet: a learned bias on every layer's attention scores by the
    /// relative position of query and key, from a table of this many rows
    /// (`relative_attention_num_buckets`) shared by the layers.
    pub relative_attention_buckets: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HeadActivation {
    #[default]
    Tanh,
    Relu,
    /// ELECTRA's `classifier.dense` (transformers' `gelu`, the exact one).
    Gelu,
}

/// A `config.json` in BERT's names, checked.
fn read_bert_names(json: &[u8]) -> Result<BertConfig, String> {
    let config: BertConfig = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    config.check()?;
    Ok(config)
}

/// Every family `grid` reads, by `model_type`.
pub static FAMILIES: &[&dyn Family] =
    &[&bert::Bert, &roberta::Roberta, &distilbert::DistilBert, &electra::Electra, &mpnet::MpNet];

/// Checkpoints a grid's `bert` model also takes whose computation has its
/// own room (`model::modernbert`, `model::deberta`; see
/// `model::pretrained`): named where a `model_type` is refused.
pub const OWN_ROOMS: &[&str] = &[crate::model::modernbert::MODEL_TYPE, crate::model::deberta::MODEL_TYPE];

/// The family of a `model_type`.
pub fn family(model_type: &str) -> Result<&'static dyn Family, String> {
    FAMILIES.iter().copied().find(|f| f.model_type() == model_type).ok_or_else(|| {
        let known: Vec<&str> = FAMILIES.iter().map(|f| f.model_type()).chain(OWN_ROOMS.iter().copied()).collect();
        format!("model_type `{model_type}` is not supported (supported: {})", known.join(", "))
    })
}

/// Reads any registered family's `config.json` by its `model_type` (BERT's
/// when the key is absent, as in old checkpoints).
pub fn read_config(json: &[u8]) -> Result<BertConfig, String> {
    family(&model_type(json)?)?.read_config(json)
}

/// A `config.json`'s `model_type`; `bert` when absent, as in old checkpoints.
pub fn model_type(json: &[u8]) -> Result<String, String> {
    #[derive(serde::Deserialize)]
    struct ModelType {
        #[serde(default)]
        model_type: Option<String>,
    }
    let ModelType { model_type } = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    Ok(model_type.unwrap_or_else(|| "bert".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_found_by_its_model_type_and_others_are_named() {
        for f in FAMILIES {
            assert_eq!(family(f.model_type()).map(|g| g.model_type()), Ok(f.model_type()));
        }
        let error = family("xlnet").err().unwrap();
        assert!(
            error.contains(
                "`xlnet` is not supported (supported: bert, roberta, distilbert, electra, mpnet, modernbert, deberta-v2)"
            ),
            "{error}"
        );
    }
}
