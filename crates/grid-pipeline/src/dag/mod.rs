//! From a [`Grid`] to a DAG of content-hashed steps, and running the ones the
//! cache lacks.
//!
//! Per dataset: one `corpus` step; per (dataset, shortcut): one `synth`; per
//! (dataset, model): one `train` on the original data, shared by every shortcut;
//! per (dataset, shortcut, model): a `train` on the mixed data and a `verify`;
//! per method: an `attribute`, an `erasure` when a metric needs one; per metric:
//! a `score`; per model cell: an `agreement` when asked; one `report` for the
//! grid. With `seeds = [..]`, everything from training down is planned per seed.
//! Steps are listed in an order where every input comes before its users.

pub mod checkpoints;
pub mod estimate;
pub mod executor;
pub mod gc;
pub mod hub_inputs;
pub mod lock;
pub mod params;
pub mod placement;
pub mod plan;
pub mod pull;
pub mod reuse;
pub mod run;
pub mod runner;
pub mod schedule;
pub mod slurm;
pub mod stale;
pub mod status;

use crate::step_kind::StepKind;
use crate::steps::Work;
use grid_cache::StepKey;

pub use plan::{PlanError, PlanOptions, plan};
pub use run::{RunOptions, RunOutcome, StepStatus, Verbosity, execute};

/// A step of the DAG.
#[derive(Debug, Clone)]
pub struct Step {
    pub kind: StepKind,
    /// Stable, human-readable identity, e.g. `train/sst2/st/lstm`.
    pub label: String,
    /// Indices of the steps this one reads, in a fixed order.
    pub inputs: Vec<usize>,
    /// The canonical parameters that went into the key.
    pub params: serde_json::Value,
    pub key: StepKey,
    pub work: Work,
}

/// The whole DAG, topologically ordered.
#[derive(Debug, Clone)]
pub struct Plan {
    pub grid_name: String,
    pub steps: Vec<Step>,
    /// Method × model pairs left out because the method does not apply to the
    /// architecture (e.g. `[MASK]` baselines on a BiLSTM), one sentence each.
    pub skipped: Vec<String>,
}

impl Plan {
    pub fn report_step(&self) -> Option<usize> {
        self.steps.iter().position(|s| s.kind == StepKind::Report)
    }
}

/// A plan of `(kind, inputs)` for tests of scheduling and submission: what
/// the steps do does not matter there.
#[cfg(test)]
pub(crate) fn test_plan(steps: &[(StepKind, &[usize])]) -> Plan {
    let steps = steps
        .iter()
        .enumerate()
        .map(|(i, (kind, inputs))| {
            let params = serde_json::json!({ "i": i });
            Step {
                kind: *kind,
                label: format!("{}/{i}", kind.name()),
                inputs: inputs.to_vec(),
                key: StepKey::compute(*kind, &params, &[]),
                params,
                work: Work::Score { metric: grid_methods::metrics::Metric::Precision, word_aggregation: None },
            }
        })
        .collect();
    Plan { grid_name: "t".into(), steps, skipped: Vec::new() }
}
