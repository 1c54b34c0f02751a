//! A rationale model in the grid file (Zhou et al. 2022 §7): the BiLSTM's
//! keys for the predictor (and the selector's sizes), `selector`,
//! `selection_rate`, `lambda`, `rate_penalty` and `predictor_input`; its recipe, its train key, the GloVe file it
//! reads; and how it is fitted ([`fit`]).

pub mod fit;

use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};

use super::AssetError;
use super::RawModel;
use super::bilstm::{self, BiLstmSpec};
use super::table::{OptimizerName, SpanError};
use super::{DenseLayer, Family, Recipe};
use grid_cache::Cache;
use grid_core::model::ModelAssets;
use grid_core::model::rationale::rate::RateScope;
use grid_core::model::rationale::{PredictorInput, SelectorKind};
use grid_core::values::Share;

/// The rationale model's entry in the registry ([`super::of`]).
pub const FAMILY: Family = Family {
    keys: &[
        "hidden_size",
        "dropout",
        "embedding_dim",
        "attention_size",
        "mlp_size",
        "word_dropout",
        "glove",
        "vocab",
        "pad_embedding",
        "selector",
        "selection_rate",
        "lambda",
        "rate_penalty",
        "predictor_input",
    ],
    hint,
    // Adam as Bastings et al. train theirs, clipped at norm 5 as they clip;
    // the rate 1e-3 and batch 64 are ours (Zhou et al. do not give theirs).
    // The last weights are kept: accuracy saturates long before the
    // selection rate settles on its target, so the best accuracy is an early,
    // off-rate model.
    recipe: Recipe {
        optimizer: OptimizerName::Adamw,
        learning_rate: 1e-3,
        batch_size: 64,
        warmup_share: None,
        max_grad_norm: Some(5.0),
        keep_last: true,
    },
};

/// What a key of another architecture most likely meant here.
fn hint(key: &str) -> Option<&'static str> {
    match key {
        "checkpoint" | "fine_tune" | "num_hidden_layers" | "num_attention_heads" => {
            Some("a rationale model's selector and predictor are BiLSTMs; a BERT predictor is not built yet")
        }
        "lowercase" => Some("for a rationale model, lower-casing is `vocab.lowercase`"),
        _ => None,
    }
}

/// The penalty strength when the grid file does not set `lambda`.
pub const DEFAULT_LAMBDA: f64 = 2.0;

/// A rationale model as the grid file gives it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RationaleSpec {
    /// The predictor's sizes; the selector's BiLSTM has its `hidden_size`
    /// and reads the same embeddings.
    pub predictor: BiLstmSpec,
    pub selector: SelectorKind,
    /// Zhou et al.'s `%Sel`.
    pub selection_rate: Share,
    /// `λ` of Eq. 5, a finite number > 0.
    pub lambda: f64,
    /// Which rate Eq. 5 holds to the target, when the file sets it (the
    /// batch's otherwise): set, it joins the train key.
    pub rate_penalty: Option<RateScope>,
    /// What the predictor reads, when the file sets it (every word, the
    /// unselected ones zeroed, otherwise): set, it joins the train key.
    pub predictor_input: Option<PredictorInput>,
}

/// Its keys of a `[[models]]` table: `selector` and `selection_rate` have no
/// default (they are what a rationale grid sweeps).
pub fn parse(raw: &RawModel, name: &str) -> Result<RationaleSpec, SpanError> {
    let table = || raw.name.span();
    let selector = raw.selector.as_ref().map(|s| *s.get_ref()).ok_or_else(|| {
        (Some(table()), format!("model `{name}`: a rationale model needs `selector = \"rl\"` or `\"hardkuma\"`"))
    })?;
    let selection_rate = raw.selection_rate.as_ref().map(|s| *s.get_ref()).ok_or_else(|| {
        (
            Some(table()),
            format!("model `{name}`: a rationale model needs `selection_rate` (Zhou et al.'s %Sel, e.g. 0.09)"),
        )
    })?;
    let lambda = match raw.lambda.as_ref().map(|l| (*l.get_ref(), l.span())) {
        None => DEFAULT_LAMBDA,
        Some((l, _)) if l.is_finite() && l > 0.0 => l,
        Some((l, span)) => {
            return Err((Some(span), format!("model `{name}`: `lambda` must be a finite number > 0, got {l}")));
        }
    };
    Ok(RationaleSpec {
        predictor: bilstm::parse(raw),
        selector,
        selection_rate,
        lambda,
        rate_penalty: raw.rate_penalty.as_ref().map(|r| *r.get_ref()),
        predictor_input: raw.predictor_input.as_ref().map(|p| *p.get_ref()),
    })
}

/// Its part of a train step's key (every field, as the BiLSTM's).
pub fn key(spec: &RationaleSpec, glove_hash: Option<&str>) -> Value {
    let RationaleSpec { predictor, selector, selection_rate, lambda, rate_penalty, predictor_input } = spec;
    let mut key = json!({
        "predictor": bilstm::key(predictor, glove_hash)["bilstm"],
        "selector": selector.name(),
        "selection_rate": selection_rate.get(),
        "lambda": lambda,
    });
    // Each joins the key only when set, so that every model trained before
    // they existed keeps its key.
    let object = key.as_object_mut().expect("an object");
    if let Some(scope) = rate_penalty {
        object.insert("rate_penalty".into(), json!(scope.name()));
    }
    if let Some(input) = predictor_input {
        object.insert("predictor_input".into(), json!(input.name()));
    }
    json!({ "rationale": key })
}

/// Multiply-adds per token: the predictor's, and the selector's BiLSTM and gate.
pub fn macs_per_token(spec: &RationaleSpec) -> f64 {
    let (e, h) = (spec.predictor.embedding_dim.get() as f64, spec.predictor.hidden_size.get() as f64);
    bilstm::macs_per_token(&spec.predictor) + 2.0 * 4.0 * h * (e + h) + 2.0 * h * 2.0
}

/// Its dense layers outside the recurrences: the predictor's.
pub fn dense_layers(spec: &RationaleSpec) -> Vec<DenseLayer> {
    bilstm::dense_layers(&spec.predictor)
}

/// The GloVe file it reads, if any, as the BiLSTM reads it.
pub fn assets(
    spec: &RationaleSpec,
    model: &str,
    base: &Path,
    cache: &Cache,
) -> Result<(ModelAssets, Option<String>), AssetError> {
    bilstm::assets(&spec.predictor, model, base, cache)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::architectures::bilstm::{PadEmbedding, VocabSpec};
    use grid_core::values::Positive;

    fn spec(selector: SelectorKind, rate: f64) -> RationaleSpec {
        RationaleSpec {
            predictor: BiLstmSpec {
                embedding_dim: Positive::new(8),
                hidden_size: Positive::new(8),
                attention_size: Positive::new(8),
                mlp_size: 8,
                dropout: Share::new(0.1),
                word_dropout: Share::new(0.0),
                glove: None,
                vocab: VocabSpec::default(),
                pad_embedding: PadEmbedding::Zero,
                freeze_embeddings: false,
            },
            selector,
            selection_rate: Share::new(rate),
            lambda: DEFAULT_LAMBDA,
            rate_penalty: None,
            predictor_input: None,
        }
    }

    /// The selector, its rate and λ are in the key; two rates, two keys.
    #[test]
    fn the_key_tells_selectors_and_rates_apart() {
        let rl = key(&spec(SelectorKind::Rl, 0.09), None);
        assert_eq!(rl["rationale"]["selector"], json!("rl"));
        assert_eq!(rl["rationale"]["predictor"]["pad_embedding"], json!("zero"));
        assert_ne!(rl, key(&spec(SelectorKind::Hardkuma, 0.09), None));
        assert_ne!(rl, key(&spec(SelectorKind::Rl, 0.11), None));
    }

    /// `rate_penalty` and `predictor_input` join the key only when set:
    /// the key of a model that sets neither is the one it had before they
    /// existed, and setting either (even to its default) is another model.
    #[test]
    fn the_penalty_scope_and_the_predictor_input_join_the_key_only_when_set() {
        let before = json!({ "rationale": {
            "predictor": key(&spec(SelectorKind::Rl, 0.09), None)["rationale"]["predictor"],
            "selector": "rl", "selection_rate": 0.09, "lambda": DEFAULT_LAMBDA,
        }});
        assert_eq!(key(&spec(SelectorKind::Rl, 0.09), None), before);
        let mut each = spec(SelectorKind::Rl, 0.09);
        each.rate_penalty = Some(RateScope::EachReview);
        assert_eq!(key(&each, None)["rationale"]["rate_penalty"], json!("each-review"));
        let mut batch = spec(SelectorKind::Rl, 0.09);
        batch.rate_penalty = Some(RateScope::Batch);
        assert_ne!(key(&batch, None), before);
        let mut selected = spec(SelectorKind::Rl, 0.09);
        selected.predictor_input = Some(PredictorInput::Selected);
        assert_eq!(key(&selected, None)["rationale"]["predictor_input"], json!("selected"));
    }
}
