//! Which steps read less than their inputs' keys say, and what they do read:
//! their content keys ([`grid_cache::ContentKey`]).
//!
//! A training run reads its data's `train.jsonl` and `validation.jsonl` and
//! nothing else, but its input (the corpus, or the synth step built on it)
//! is keyed by the test split too. So changing `limits.test`, or the test
//! file, gave every model a new key and trained it again, to the same
//! weights. With a content key over the files it reads, such a step takes the
//! published result of the same training ([`find`]). Every other kind reads
//! its inputs whole, so its key already says what it computes from.

use serde_json::{Value, json};

use super::{Plan, Step};
use crate::step_kind::StepKind;
use grid_cache::{Cache, CacheError, ContentKey, Manifest};

/// The payload files a step of `kind` reads from each of its inputs, for the
/// kinds that read less than the whole payload.
fn files_read(kind: StepKind) -> Option<&'static [&'static str]> {
    match kind {
        StepKind::Train => Some(&["train.jsonl", "validation.jsonl"]),
        StepKind::Corpus
        | StepKind::Synth
        | StepKind::Verify
        | StepKind::Evaluate
        | StepKind::Attribute
        | StepKind::Erasure
        | StepKind::Agreement
        | StepKind::Score
        | StepKind::Report
        | StepKind::Crowd => None,
    }
}

/// The content key of a step of `kind` at `version` with `params`, from the
/// manifests of its inputs (in input order); `None` for a kind that reads its
/// inputs whole, or when an input lacks a file the kind reads.
pub fn content_key(kind: StepKind, version: u32, params: &Value, inputs: &[Manifest<StepKind>]) -> Option<ContentKey> {
    let files = files_read(kind)?;
    let read = inputs
        .iter()
        .map(|input| {
            let digests = files
                .iter()
                .map(|name| {
                    let file = input.files.iter().find(|f| f.name == *name)?;
                    Some(((*name).to_string(), Value::from(file.sha256.clone())))
                })
                .collect::<Option<serde_json::Map<String, Value>>>()?;
            // The rule planted in the data says which validation examples
            // count as marked (`training.best_by = "balanced"`, the log); it is
            // in the synth step's parameters, not in the files' names (no
            // other kind plants one).
            let planted = (input.kind == StepKind::Synth)
                .then(|| input.params.get("kind").cloned())
                .flatten()
                .unwrap_or(Value::Null);
            Some(json!({ "files": digests, "planted": planted }))
        })
        .collect::<Option<Vec<Value>>>()?;
    Some(ContentKey::of(&json!({
        "kind": kind.name(),
        "version": version,
        "params": params,
        "reads": read,
    })))
}

/// A step's content key and, when the cache holds one, a checked result of
/// the same work under another key.
pub struct SameWork {
    pub content_key: ContentKey,
    pub published: Option<Manifest<StepKind>>,
}

/// For a step whose inputs are published: its content key and a result to
/// take, if any. `None` for kinds keyed by their inputs whole.
pub fn find(plan: &Plan, cache: &Cache, step: &Step) -> Result<Option<SameWork>, CacheError> {
    if files_read(step.kind).is_none() {
        return Ok(None);
    }
    let inputs: Option<Vec<Manifest<StepKind>>> = step
        .inputs
        .iter()
        .map(|&j| {
            let input = &plan.steps[j];
            cache.manifest(input.kind, &input.key)
        })
        .collect();
    let Some(content_key) =
        inputs.and_then(|inputs| content_key(step.kind, step.kind.version(), &step.params, &inputs))
    else {
        return Ok(None);
    };
    let published = cache.find_same_work(step.kind, &step.key, &content_key, |candidate| recorded(cache, candidate))?;
    Ok(Some(SameWork { content_key, published }))
}

/// For `grid plan`: what a missing step of a kind that reads less than its
/// inputs will take from the cache, when its inputs are published and the
/// same work is; otherwise what it reads, since a rerun of its inputs may
/// leave that as it was. `None` for other kinds.
pub fn outlook(plan: &Plan, cache: &Cache, step: &Step) -> Result<Option<String>, CacheError> {
    let Some(files) = files_read(step.kind) else { return Ok(None) };
    Ok(Some(match find(plan, cache, step)? {
        Some(SameWork { published: Some(from), .. }) => {
            format!("the same work is cached as {} and will be taken", from.reference().short_name())
        }
        Some(SameWork { published: None, .. }) => "no cached result does the same work".to_string(),
        None => format!("a cached result is taken if its inputs' {} are as before", files.join(" and ")),
    }))
}

/// A published step's content key: as its manifest records it, or (for a
/// manifest written before content keys) from the manifests of its inputs,
/// while the cache still holds them.
fn recorded(cache: &Cache, step: &Manifest<StepKind>) -> Option<ContentKey> {
    if let Some(key) = &step.content_key {
        return Some(key.clone());
    }
    let inputs: Vec<Manifest<StepKind>> =
        step.inputs.iter().map(|input| cache.manifest(input.kind, &input.key)).collect::<Option<_>>()?;
    content_key(step.kind, step.version, &step.params, &inputs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use grid_cache::{PayloadFile, StepKey};

    fn data(kind: StepKind, params: Value, files: &[(&str, &str)]) -> Manifest<StepKind> {
        Manifest {
            kind,
            key: StepKey::compute(kind, &params, &[]),
            version: kind.version(),
            label: format!("{kind}/x"),
            params,
            inputs: Vec::new(),
            files: files
                .iter()
                .map(|(name, sha)| PayloadFile { name: (*name).into(), bytes: 1, sha256: (*sha).into() })
                .collect(),
            finished_at: 0,
            seconds: 0.0,
            grid_version: "0".into(),
            device: "cpu".into(),
            content_key: None,
            reused_from: None,
            work: None,
        }
    }

    fn synth(kind: &str, test: &str) -> Manifest<StepKind> {
        data(
            StepKind::Synth,
            json!({ "kind": kind, "test": test }),
            &[("train.jsonl", "t"), ("validation.jsonl", "v"), ("test.jsonl", test)],
        )
    }

    #[test]
    fn a_training_is_keyed_by_the_splits_it_reads_not_by_the_test_split() {
        let params = json!({ "lr": 0.001 });
        let key = |input: Manifest<StepKind>| content_key(StepKind::Train, 1, &params, &[input]).unwrap();
        let base = key(synth("st", "a"));
        assert_eq!(base, key(synth("st", "b")), "another test split, another synth key: the same training");
        assert_ne!(base, key(synth("tic", "a")), "the planted rule decides which examples are marked");
        let other_train = data(
            StepKind::Synth,
            json!({ "kind": "st" }),
            &[("train.jsonl", "t2"), ("validation.jsonl", "v"), ("test.jsonl", "a")],
        );
        assert_ne!(base, key(other_train));
        assert_ne!(base, content_key(StepKind::Train, 1, &json!({ "lr": 0.01 }), &[synth("st", "a")]).unwrap());
        assert_ne!(base, content_key(StepKind::Train, 2, &params, &[synth("st", "a")]).unwrap(), "version");
        let corpus = data(StepKind::Corpus, json!({}), &[("train.jsonl", "t"), ("validation.jsonl", "v")]);
        assert_ne!(base, key(corpus), "the original data plants no rule");
    }

    #[test]
    fn kinds_that_read_whole_inputs_and_inputs_without_the_files_have_none() {
        assert!(content_key(StepKind::Verify, 4, &json!({}), &[synth("st", "a")]).is_none());
        let bare = data(StepKind::Synth, json!({ "kind": "st" }), &[("train.jsonl", "t")]);
        assert!(content_key(StepKind::Train, 1, &json!({}), &[bare]).is_none());
    }
}
