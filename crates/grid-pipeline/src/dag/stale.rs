//! Why a step will run: the first difference between what is planned and what
//! was last computed under the same label (cargo's `DirtyReason`, for grids).

use serde_json::Value;

use crate::step_kind::StepKind;
use grid_cache::{Cache, StepKey};

#[derive(Debug, Clone, PartialEq)]
pub enum StaleReason {
    /// Nothing was ever computed under this label in this cache.
    NeverRun,
    /// The step kind's implementation version changed.
    VersionBumped { old: u32, new: u32 },
    /// A parameter changed (dotted path into the parameters), and perhaps
    /// others (their paths, in order).
    ParamChanged { field: String, old: Option<Value>, new: Option<Value>, others: Vec<String> },
    /// An input step changed (its label), so this one must follow.
    InputChanged { input: String },
    /// An earlier attempt was interrupted and left a temporary folder.
    Incomplete,
    /// An earlier attempt was interrupted and kept its progress: the step goes
    /// on from there.
    Resumes(Kept),
    /// The key was computed before but its folder is gone (e.g. `grid gc`).
    Removed,
}

impl std::fmt::Display for StaleReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<Value>| v.as_ref().map(|v| v.to_string()).unwrap_or_else(|| "(absent)".into());
        match self {
            StaleReason::NeverRun => write!(f, "never computed"),
            StaleReason::VersionBumped { old, new } => write!(f, "step version changed from {old} to {new}"),
            StaleReason::ParamChanged { field, old, new, others } => {
                write!(f, "parameter `{field}` changed from {} to {}", show(old), show(new))?;
                match others.as_slice() {
                    [] => Ok(()),
                    [other] => write!(f, ", and `{other}`"),
                    [first, second] => write!(f, ", and `{first}`, `{second}`"),
                    [first, second, rest @ ..] => write!(f, ", and `{first}`, `{second}`, {} more", rest.len()),
                }
            }
            StaleReason::InputChanged { input } => write!(f, "input `{input}` changed"),
            StaleReason::Incomplete => write!(f, "an earlier run was interrupted"),
            StaleReason::Resumes(Kept::Snapshot { step }) => {
                write!(f, "an earlier run was interrupted; training resumes from its snapshot at step {step}")
            }
            StaleReason::Resumes(Kept::Explained { examples }) => {
                write!(
                    f,
                    "an earlier run was interrupted; attribution goes on after the {examples} examples it explained"
                )
            }
            StaleReason::Removed => write!(f, "the cached result was removed"),
        }
    }
}

/// What an interrupted or running attempt at a step has kept in its resume
/// folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    /// A training snapshot at this step.
    Snapshot { step: usize },
    /// This many explained examples of an attribution.
    Explained { examples: usize },
}

impl std::fmt::Display for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Kept::Snapshot { step } => write!(f, "a snapshot at training step {step}"),
            Kept::Explained { examples } => write!(f, "{examples} examples explained"),
        }
    }
}

/// What an interrupted or running attempt at `(kind, key)` has kept in its
/// resume folder, if anything.
pub fn kept_progress(cache: &Cache, kind: StepKind, key: &StepKey) -> Option<Kept> {
    let dir = cache.resume_dir(kind, key);
    if let Some(step) = grid_core::train::Snapshots::step_in(&dir) {
        return Some(Kept::Snapshot { step });
    }
    crate::steps::attribute::progress::examples_in(&dir).map(|examples| Kept::Explained { examples })
}

/// Explains why `(kind, key)` under `label` is not cached.
pub fn explain(
    cache: &Cache,
    kind: StepKind,
    key: &StepKey,
    label: &str,
    params: &Value,
    inputs: &[(String, StepKey)],
) -> StaleReason {
    if let Some(kept) = kept_progress(cache, kind, key) {
        return StaleReason::Resumes(kept);
    }
    if cache.has_leftover(kind, key) {
        return StaleReason::Incomplete;
    }
    let Some(previous) = cache.label_record::<StepKind>(label) else {
        return StaleReason::NeverRun;
    };
    if previous.key == *key {
        return StaleReason::Removed;
    }
    if previous.version != kind.version() {
        return StaleReason::VersionBumped { old: previous.version, new: kind.version() };
    }
    let mut changed = differences("", &previous.params, params).into_iter();
    if let Some((field, old, new)) = changed.next() {
        return StaleReason::ParamChanged { field, old, new, others: changed.map(|(field, ..)| field).collect() };
    }
    for (input_label, input_key) in inputs {
        let changed = previous.inputs.iter().find(|i| &i.label == input_label).is_none_or(|i| &i.key != input_key);
        if changed {
            return StaleReason::InputChanged { input: input_label.clone() };
        }
    }
    StaleReason::InputChanged { input: "(input set)".into() }
}

type Difference = (String, Option<Value>, Option<Value>);

/// Every changed field, in key order (the first is the one a reason names).
fn differences(path: &str, old: &Value, new: &Value) -> Vec<Difference> {
    let join = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter()
                .flat_map(|k| match (a.get(k), b.get(k)) {
                    (Some(x), Some(y)) => differences(&join(k), x, y),
                    (x, y) => vec![(join(k), x.cloned(), y.cloned())],
                })
                .collect()
        }
        _ if old == new => Vec::new(),
        _ => {
            vec![(if path.is_empty() { "(params)".into() } else { path.into() }, Some(old.clone()), Some(new.clone()))]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_every_changed_field_in_order() {
        let d = differences("", &json!({"a": 1, "b": {"c": 2, "d": 3}}), &json!({"a": 1, "b": {"c": 2, "d": 4}}));
        assert_eq!(d, vec![("b.d".into(), Some(json!(3)), Some(json!(4)))]);
        let two = differences("", &json!({"a": 1, "m": {"t": 5}}), &json!({"a": 2, "m": {"t": 5}, "z": true}));
        assert_eq!(two, vec![("a".into(), Some(json!(1)), Some(json!(2))), ("z".into(), None, Some(json!(true)))]);
        assert_eq!(differences("", &json!({"a": [1]}), &json!({"a": [1]})), vec![]);
    }

    #[test]
    fn sentences() {
        let changed = |others: &[&str]| StaleReason::ParamChanged {
            field: "limits.test".into(),
            old: Some(json!(100)),
            new: Some(json!(200)),
            others: others.iter().map(|o| o.to_string()).collect(),
        };
        assert_eq!(changed(&[]).to_string(), "parameter `limits.test` changed from 100 to 200");
        assert_eq!(
            changed(&["limits.train"]).to_string(),
            "parameter `limits.test` changed from 100 to 200, and `limits.train`"
        );
        assert_eq!(
            changed(&["a", "b", "c", "d"]).to_string(),
            "parameter `limits.test` changed from 100 to 200, and `a`, `b`, 2 more"
        );
        assert_eq!(
            StaleReason::InputChanged { input: "corpus/sst2".into() }.to_string(),
            "input `corpus/sst2` changed"
        );
    }

    #[test]
    fn kept_progress_reads_explained_examples_from_an_attribution_folder() {
        use crate::steps::attribute::AttributedExample;
        use crate::steps::attribute::progress::Progress;
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let key = StepKey::compute(StepKind::Attribute, &json!({ "method": "igl-zero-1000" }), &[]);
        assert!(kept_progress(&cache, StepKind::Attribute, &key).is_none());

        let example = |index| AttributedExample {
            index,
            tokens: vec!["[CLS]".into(), "#1".into(), "[SEP]".into()],
            word_of_token: vec![None, Some(0), None],
            ground_truth: vec![1],
            distractors: Vec::new(),
            label: 1,
            predicted: 1,
            scores: vec![0.0, 1.0, 0.0],
            completeness_gap: None,
        };
        let mut progress =
            Progress::new(cache.resume_dir(StepKind::Attribute, &key), std::time::Duration::ZERO, "inputs".into());
        progress.finished(0, vec![example(3), example(8)], &[]).unwrap();
        let kept = kept_progress(&cache, StepKind::Attribute, &key).unwrap();
        assert_eq!(kept, Kept::Explained { examples: 2 });
        assert_eq!(kept.to_string(), "2 examples explained");
        assert_eq!(
            StaleReason::Resumes(kept).to_string(),
            "an earlier run was interrupted; attribution goes on after the 2 examples it explained"
        );
    }
}
