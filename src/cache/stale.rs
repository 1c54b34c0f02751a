//! Why a step will run: the first difference between what is planned and what
//! was last computed under the same label (cargo's `DirtyReason`, for grids).

use serde_json::Value;

use super::{Cache, StepKey, StepKind};

#[derive(Debug, Clone, PartialEq)]
pub enum StaleReason {
    /// Nothing was ever computed under this label in this cache.
    NeverRun,
    /// The step kind's implementation version changed.
    VersionBumped { old: u32, new: u32 },
    /// A parameter changed (dotted path into the parameters).
    ParamChanged { field: String, old: Option<Value>, new: Option<Value> },
    /// An input step changed (its label), so this one must follow.
    InputChanged { input: String },
    /// An earlier attempt was interrupted and left a temporary folder.
    Incomplete,
    /// An earlier training run was interrupted after a snapshot: it goes on
    /// from that step.
    Resumes { step: usize },
    /// The key was computed before but its folder is gone (e.g. `grid gc`).
    Removed,
}

impl std::fmt::Display for StaleReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let show = |v: &Option<Value>| v.as_ref().map(|v| v.to_string()).unwrap_or_else(|| "(absent)".into());
        match self {
            StaleReason::NeverRun => write!(f, "never computed"),
            StaleReason::VersionBumped { old, new } => write!(f, "step version changed from {old} to {new}"),
            StaleReason::ParamChanged { field, old, new } => {
                write!(f, "parameter `{field}` changed from {} to {}", show(old), show(new))
            }
            StaleReason::InputChanged { input } => write!(f, "input `{input}` changed"),
            StaleReason::Incomplete => write!(f, "an earlier run was interrupted"),
            StaleReason::Resumes { step } => {
                write!(f, "an earlier run was interrupted; training resumes from its snapshot at step {step}")
            }
            StaleReason::Removed => write!(f, "the cached result was removed"),
        }
    }
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
    if let Some(step) = crate::train::Snapshots::step_in(&cache.resume_dir(kind, key)) {
        return StaleReason::Resumes { step };
    }
    if cache.has_leftover(kind, key) {
        return StaleReason::Incomplete;
    }
    let Some(previous) = cache.label_record(label) else {
        return StaleReason::NeverRun;
    };
    if previous.key == *key {
        return StaleReason::Removed;
    }
    if previous.version != kind.version() {
        return StaleReason::VersionBumped { old: previous.version, new: kind.version() };
    }
    if let Some((field, old, new)) = first_difference("", &previous.params, params) {
        return StaleReason::ParamChanged { field, old, new };
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

fn first_difference(path: &str, old: &Value, new: &Value) -> Option<Difference> {
    let join = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            keys.into_iter().find_map(|k| match (a.get(k), b.get(k)) {
                (Some(x), Some(y)) => first_difference(&join(k), x, y),
                (x, y) => Some((join(k), x.cloned(), y.cloned())),
            })
        }
        _ if old == new => None,
        _ => {
            Some((if path.is_empty() { "(params)".into() } else { path.into() }, Some(old.clone()), Some(new.clone())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finds_the_first_changed_field() {
        let d = first_difference("", &json!({"a": 1, "b": {"c": 2, "d": 3}}), &json!({"a": 1, "b": {"c": 2, "d": 4}}));
        assert_eq!(d, Some(("b.d".into(), Some(json!(3)), Some(json!(4)))));
        let added = first_difference("", &json!({"a": 1}), &json!({"a": 1, "z": true}));
        assert_eq!(added, Some(("z".into(), None, Some(json!(true)))));
        assert_eq!(first_difference("", &json!({"a": [1]}), &json!({"a": [1]})), None);
    }

    #[test]
    fn sentences() {
        let r =
            StaleReason::ParamChanged { field: "limits.train".into(), old: Some(json!(100)), new: Some(json!(200)) };
        assert_eq!(r.to_string(), "parameter `limits.train` changed from 100 to 200");
        assert_eq!(
            StaleReason::InputChanged { input: "corpus/sst2".into() }.to_string(),
            "input `corpus/sst2` changed"
        );
    }
}
