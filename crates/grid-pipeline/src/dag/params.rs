//! The parameters that go into each step kind's key.
//!
//! Each function destructures its inputs field by field, without `..`: a new
//! field in a spec struct fails to compile here until someone decides whether it
//! changes results (hash it) or not (name it with `_` and say why).

use serde_json::{Value, json};

use grid_core::backend::Precision;

use crate::spec::{
    BestBy, DatasetSource, DatasetSpec, Keep, ModelSpec, SplitLimits, Subset, TestSet, TrainingSpec, VerificationSpec,
};
use grid_core::data::generated::GeneratedCorpusOptions;
use grid_methods::metrics::Metric;
use grid_methods::metrics::WordAggregation;
use grid_methods::salience::Method;
use grid_methods::shortcut::{ShortcutOptions, ShortcutTokens};

/// Content hashes of a dataset's split files (their paths stay out of keys).
#[derive(Debug, Clone)]
pub struct FileHashes {
    pub train: String,
    pub validation: Option<String>,
    pub test: String,
}

pub fn corpus(dataset: &DatasetSpec, hashes: Option<&FileHashes>) -> Value {
    let DatasetSpec {
        name: _, // display only
        source,
        limits,
        validation_share,
        max_length: _,    // used by train/attribute, not by the corpus
        insert_within: _, // used by synth, in its key through `ShortcutOptions`
        batch_size: _,    // used by train, through `ModelSpec::for_dataset`
    } = dataset;
    let SplitLimits { train, validation, test, max_words } = limits;
    let source = match source {
        DatasetSource::Generated(GeneratedCorpusOptions { train, validation, test, seed, classes }) => {
            let mut generated = json!({
                "train": train, "validation": validation, "test": test, "seed": seed,
                "grammar": grid_core::data::generated::GRAMMAR_VERSION,
            });
            // Binary corpora keep the keys they had before classes were general.
            if *classes != 2 {
                generated["classes"] = json!(classes);
            }
            json!({ "generated": generated })
        }
        DatasetSource::Files {
            train: _, // hashed by content below
            validation: _,
            test: _,
            format,
            text_column,
            label_column,
            label_names,
            classes,
        } => {
            let hashes = hashes.expect("file datasets are planned with their hashes");
            // The label check reads the class count; label names already fix it.
            let declared = (label_names.is_none() && *classes != 2).then_some(*classes);
            let mut files = json!({
                    "train": hashes.train,
                    "validation": hashes.validation,
                    "test": hashes.test,
                    "format": format.map(|f| f.name()),
                    "text_column": text_column,
                    "label_column": label_column,
                    "label_names": label_names,
            });
            if let Some(classes) = declared {
                files["classes"] = json!(classes);
            }
            json!({ "files": files })
        }
    };
    let mut limits = json!({ "train": train.map(|v| v.get()), "validation": validation.map(|v| v.get()), "test": test.map(|v| v.get()) });
    // Only when set: the keys from before it existed stay.
    if let (Some(words), Some(object)) = (max_words, limits.as_object_mut()) {
        object.insert("max_words".into(), json!(words.get()));
    }
    json!({
        "source": source,
        "limits": limits,
        // Only used when there is no validation file; harmless otherwise.
        "validation_share": validation_share.get(),
    })
}

pub fn synth(options: &ShortcutOptions) -> Value {
    let ShortcutOptions { kind, tokens, mix_share, lone_share, max_distance, insert_within, keep_probability, seed } =
        options;
    // Each family hashes only what it reads, so tuning one never reruns the other.
    if kind.article_layout().is_some() {
        return json!({ "kind": kind.name(), "keep_probability": keep_probability, "seed": seed });
    }
    json!({
        "kind": kind.name(),
        "tokens": tokens_value(tokens),
        "mix_share": mix_share,
        "lone_share": lone_share,
        "max_distance": max_distance,
        "insert_within": insert_within,
        "seed": seed,
    })
}

/// Binary tokens keep the paper's role names, and so the keys they always had.
fn tokens_value(tokens: &ShortcutTokens) -> Value {
    let ShortcutTokens { indicators, context } = tokens;
    match indicators.as_slice() {
        [zero, one] => json!({ "zero": zero, "one": one, "context": context }),
        _ => json!({ "indicators": indicators, "context": context }),
    }
}

/// `data`: `"original"` or `"shortcut"` (which input the model trains on).
/// `asset_hash`: the content of the model's external inputs (GloVe file or
/// pretrained checkpoint), or the pinned `hf://` id.
pub fn train(model: &ModelSpec, max_length: usize, tokens: &[String], data: &str, asset_hash: Option<&str>) -> Value {
    let ModelSpec {
        name: _, // display only
        architecture,
        training,
    } = model;
    let architecture = architecture.key(asset_hash);
    // Original data has no planted pattern, so `balanced` selects by accuracy
    // there: the same model, under the same key.
    let mut training = training.clone();
    if data == "original"
        && let Keep::Best { by, .. } = &mut training.keep
    {
        *by = BestBy::Accuracy;
    }
    json!({
        "architecture": architecture,
        "data": data,
        "max_length": max_length,
        "shortcut_tokens": tokens,
        "training": training_value(&training),
    })
}

fn training_value(training: &TrainingSpec) -> Value {
    let TrainingSpec {
        batch_size,
        optimizer,
        learning_rate,
        weight_decay,
        schedule,
        max_steps,
        eval_every,
        keep,
        max_grad_norm,
        stop_at_accuracy,
        seed,
    } = training;
    let mut value = json!({
        "batch_size": batch_size.get(),
        "optimizer": serde_json::to_value(optimizer).unwrap_or(Value::Null),
        "learning_rate": learning_rate,
        "weight_decay": weight_decay,
        "schedule": serde_json::to_value(schedule).unwrap_or(Value::Null),
        "max_steps": max_steps.get(),
        "eval_every": eval_every.get(),
        "max_grad_norm": max_grad_norm,
        "seed": seed,
    });
    // `patience` as before for `keep = "best"`, so its keys did not change.
    let (key, kept) = match keep {
        Keep::Best { patience, .. } => ("patience", json!(patience.get())),
        Keep::Last => ("keep", json!("last")),
    };
    if let Some(object) = value.as_object_mut() {
        object.insert(key.into(), kept);
        // Only when it is not the accuracy that every key had before it existed.
        if let Keep::Best { by: by @ BestBy::Balanced, .. } = keep {
            object.insert("best_by".into(), json!(by.name()));
        }
        // Only when set: every key before it existed trained to the end.
        if let Some(bar) = stop_at_accuracy {
            object.insert("stop_at_accuracy".into(), json!(bar.get()));
        }
    }
    value
}

/// Adds the float type to a model step's parameters when it is not f32.
pub fn with_precision(mut params: Value, precision: Precision) -> Value {
    if precision != Precision::F32
        && let Some(object) = params.as_object_mut()
    {
        object.insert("precision".into(), json!(precision.to_string()));
    }
    params
}

pub fn verify(thresholds: &VerificationSpec) -> Value {
    let VerificationSpec { min_synthetic_accuracy, chance_tolerance, max_original_drop } = thresholds;
    json!({
        "min_synthetic_accuracy": min_synthetic_accuracy.get(),
        "chance_tolerance": chance_tolerance.get(),
        "max_original_drop": max_original_drop.get(),
    })
}

/// The attribution batch size stays out: it changes speed, not results.
pub fn attribute(
    method: Method,
    sample: usize,
    test_set: TestSet,
    subset: Subset,
    seed: u64,
    max_length: usize,
) -> Value {
    let mut value = json!({
        "method": method.to_string(),
        "sample": sample,
        "test_set": match test_set {
            TestSet::Synthetic => "synthetic",
            TestSet::Flip => "flip",
            TestSet::Original => "original",
        },
        "seed": seed,
        "max_length": max_length,
    });
    // Every example, as before the option existed: those keys stay.
    if subset != Subset::All {
        value["subset"] = json!(subset.name());
    }
    value
}

/// Word aggregation enters only when set, so per-token scoring keys do not depend on it.
pub fn score(metric: Metric, aggregation: Option<WordAggregation>) -> Value {
    let bootstrap = grid_methods::metrics::bootstrap::Bootstrap::default();
    let mut params = json!({ "metric": metric.name(), "bootstrap": bootstrap });
    if let Some(how) = aggregation {
        params["word_aggregation"] = json!(how.name());
    }
    params
}

/// Erasure: the rationale ratios, the soft-erasure sampling and the
/// convention change results; the batch size does not. Only a convention
/// other than the paper's joins the key, so the keys of existing grids hold.
pub fn erasure(settings: &grid_methods::metrics::erasure::Settings) -> Value {
    let grid_methods::metrics::erasure::Settings { ratios, soft_samples, seed, convention } = settings;
    let mut params = json!({ "ratios": ratios, "soft_samples": soft_samples, "seed": seed });
    if *convention != grid_methods::metrics::erasure::Convention::Paper {
        params["convention"] = json!(convention.name());
    }
    params
}

/// Agreement: the compared methods are named by their inputs' keys; `k` and the
/// word aggregation change results.
pub fn agreement(options: &crate::steps::agreement::Options) -> Value {
    let crate::steps::agreement::Options { methods, top_k, word_aggregation } = options;
    let mut params = json!({ "methods": methods, "top_k": top_k });
    if let Some(how) = word_aggregation {
        params["word_aggregation"] = json!(how.name());
    }
    params
}

#[cfg(test)]
mod tests {
    /// The paper's convention keeps the keys erasure steps had before there
    /// was a choice; the authors' code's is another step.
    #[test]
    fn only_another_erasure_convention_joins_the_key() {
        use grid_methods::metrics::erasure::{Convention, Settings};
        let paper = Settings::default();
        assert_eq!(
            erasure(&paper),
            serde_json::json!({ "ratios": [0.01, 0.05, 0.1, 0.2, 0.5], "soft_samples": 1, "seed": 0 })
        );
        let authors = Settings { convention: Convention::AuthorsCode, ..paper };
        assert_eq!(erasure(&authors)["convention"], "authors-code");
    }

    use super::*;
    use crate::spec::{Keep, Optimizer, Positive, Schedule};

    #[test]
    fn keep_and_best_by_join_the_training_key_only_when_not_the_default() {
        let mut training = TrainingSpec {
            batch_size: Positive::new(32),
            optimizer: Optimizer::Adamw,
            learning_rate: 1e-3,
            weight_decay: 0.0,
            schedule: Schedule::Constant,
            max_steps: Positive::new(100),
            eval_every: Positive::new(10),
            keep: Keep::Best { patience: Positive::new(50), by: BestBy::Accuracy },
            max_grad_norm: None,
            stop_at_accuracy: None,
            seed: 1,
        };
        let best = training_value(&training);
        // The key `best` had before `keep`, `best_by` and `stop_at_accuracy` existed.
        assert_eq!(best["patience"], json!(50));
        assert!(best.get("keep").is_none() && best.get("best_by").is_none(), "{best}");
        assert!(best.get("stop_at_accuracy").is_none(), "{best}");
        training.stop_at_accuracy = Some(crate::spec::Share::new(0.97));
        assert_eq!(training_value(&training)["stop_at_accuracy"], json!(0.97));
        training.stop_at_accuracy = None;
        training.keep = Keep::Best { patience: Positive::new(50), by: BestBy::Balanced };
        let balanced = training_value(&training);
        assert_eq!((&balanced["patience"], &balanced["best_by"]), (&json!(50), &json!("balanced")));
        training.keep = Keep::Last;
        let last = training_value(&training);
        assert_eq!(last["keep"], json!("last"));
        assert!(last.get("patience").is_none(), "{last}");
    }

    #[test]
    fn every_example_keeps_the_attribute_key_a_subset_changes_it() {
        let key = |subset| attribute(Method::Random, 10, TestSet::Synthetic, subset, 7, 48);
        assert!(key(Subset::All).get("subset").is_none(), "keys from before subsets stay");
        assert_eq!(key(Subset::Correct)["subset"], "correct");
        assert_ne!(key(Subset::Correct), key(Subset::Misclassified));
    }
}
