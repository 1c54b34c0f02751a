//! Which training checkpoints an image model explains beside its kept
//! weights (Zhou et al.'s Figure 4, §5.2): `checkpoints = n` asks for `n`
//! models met during training, log-spaced over its evaluations from the
//! first to the last (accuracy moves most early in training).
//!
//! A run of fixed length knows its evaluations before it starts, so its
//! checkpoints are steps (`step-250`). A run that may stop early (at an
//! accuracy bar, or out of patience) does not: its checkpoints are
//! positions, "the k-th of n", which the train step resolves to steps once
//! the run has ended, over the evaluations it made. While it trains it keeps
//! the model of every evaluation that some end could choose for a position
//! before the last (a handful: `E^(k/(n−1))` rounded, over every count `E`
//! of evaluations), and the last evaluation's when it ends.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// One of a model's checkpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Checkpoint {
    /// At this step, in a run of fixed length. Serialised as the bare step,
    /// as the cache keys have always held it.
    Step(usize),
    /// The `spaced`-th (from 0) of `of` positions, log-spaced over the
    /// evaluations of a run that may stop early.
    Spaced { spaced: usize, of: usize },
}

impl Checkpoint {
    /// The tail of its steps' labels.
    pub fn label(self) -> String {
        match self {
            Checkpoint::Step(step) => format!("step-{step}"),
            Checkpoint::Spaced { spaced, of } => format!("checkpoint-{}-of-{of}", spaced + 1),
        }
    }
}

/// The checkpoints one training run keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Checkpoints {
    /// These steps (none: no checkpoints).
    Steps(Vec<usize>),
    /// `spaced` positions, resolved when the run ends.
    Spaced { spaced: usize },
}

impl Checkpoints {
    pub fn is_empty(&self) -> bool {
        match self {
            Checkpoints::Steps(steps) => steps.is_empty(),
            Checkpoints::Spaced { spaced } => *spaced == 0,
        }
    }

    /// Each checkpoint, in training order.
    pub fn each(&self) -> Vec<Checkpoint> {
        match self {
            Checkpoints::Steps(steps) => steps.iter().map(|&s| Checkpoint::Step(s)).collect(),
            Checkpoints::Spaced { spaced } => {
                (0..*spaced).map(|k| Checkpoint::Spaced { spaced: k, of: *spaced }).collect()
            }
        }
    }
}

/// The steps a run of `max_steps` evaluates at: every `every` steps, and at
/// the end.
pub fn evaluation_steps(max_steps: usize, every: usize) -> Vec<usize> {
    let mut evaluations: Vec<usize> = (1..=max_steps / every.max(1)).map(|j| j * every).collect();
    if evaluations.last() != Some(&max_steps) {
        evaluations.push(max_steps);
    }
    evaluations
}

/// Which evaluation (from 1) of `evaluations` position `k` of `n` falls on:
/// `evaluations^(k/(n−1))`, rounded (the last position is the last
/// evaluation; one position alone is the last too).
pub fn spaced_evaluation(k: usize, n: usize, evaluations: usize) -> usize {
    let last = evaluations as f64;
    let at = if n <= 1 { last } else { last.powf(k as f64 / (n - 1) as f64) };
    (at.round() as usize).clamp(1, evaluations.max(1))
}

/// The evaluations (from 1) that position `k < n − 1` of `n` may fall on,
/// whatever the run's count of evaluations up to `most`: what a run that
/// may stop early keeps while it trains.
pub fn candidate_evaluations(n: usize, most: usize) -> BTreeSet<usize> {
    (1..=most).flat_map(|count| (0..n.saturating_sub(1)).map(move |k| spaced_evaluation(k, n, count))).collect()
}

/// The steps `n` positions fall on in a run whose evaluations were `run`
/// (in order, the last where it ended).
pub fn resolve(n: usize, run: &[usize]) -> Vec<usize> {
    (0..n).map(|k| run[spaced_evaluation(k, n, run.len()) - 1]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_log_spaced_from_the_first_evaluation_to_the_last() {
        // Twelve evaluations: 12^(k/3) = 1, 2.3, 5.2, 12.
        let run = evaluation_steps(300, 25);
        assert_eq!(resolve(4, &run), [25, 50, 125, 300]);
        // A run stopped at its 16th evaluation of 30: 16^(k/2) = 1, 4, 16.
        let full = evaluation_steps(1500, 50);
        assert_eq!(resolve(3, &full[..16]), [50, 200, 800]);
        // One position is the last evaluation.
        assert_eq!(resolve(1, &full[..7]), [350]);
    }

    #[test]
    fn every_position_an_early_end_can_choose_is_a_candidate() {
        let full = evaluation_steps(1500, 50);
        for n in 1..6 {
            let candidates = candidate_evaluations(n, full.len());
            for count in 1..=full.len() {
                for k in 0..n.saturating_sub(1) {
                    assert!(candidates.contains(&spaced_evaluation(k, n, count)), "n {n}, count {count}, k {k}");
                }
            }
        }
        // Few: three positions over at most 30 evaluations keep five.
        assert_eq!(candidate_evaluations(3, 30).into_iter().collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
        assert!(candidate_evaluations(1, 30).is_empty());
    }

    #[test]
    fn a_step_serialises_as_the_bare_step_the_keys_always_held() {
        assert_eq!(serde_json::to_value(Checkpoint::Step(250)).unwrap(), serde_json::json!(250));
        assert_eq!(serde_json::to_value(Checkpoints::Steps(vec![25, 300])).unwrap(), serde_json::json!([25, 300]));
        let spaced = Checkpoint::Spaced { spaced: 1, of: 3 };
        assert_eq!(serde_json::to_value(spaced).unwrap(), serde_json::json!({ "spaced": 1, "of": 3 }));
        assert_eq!(serde_json::from_value::<Checkpoint>(serde_json::json!({ "spaced": 1, "of": 3 })).unwrap(), spaced);
        assert_eq!(spaced.label(), "checkpoint-2-of-3");
        assert_eq!(Checkpoint::Step(250).label(), "step-250");
    }
}
