//! Executors: what computes a step once the scheduler (`dag::run`) says it
//! may run. The scheduler owns the ready set, the limits and the progress
//! display; an executor only runs the one step it is given and says how that
//! went. A new local executor is one file here implementing [`Executor`] and a
//! line in [`Executors::for_step`].

pub mod attempts;
pub mod child_process;
pub mod cpu_wait;
pub mod in_process;
pub mod pauses;
pub mod worker;

use indicatif::ProgressBar;

use super::{Plan, StepStatus};
use crate::step_kind::StepKind;
use grid_cache::Cache;

pub use child_process::ChildProcess;
pub use in_process::InProcess;
pub use worker::{StepCommand, StepSettings};

/// One step to compute, with where to report progress.
pub struct Job<'a> {
    pub plan: &'a Plan,
    pub cache: &'a Cache,
    pub index: usize,
    pub progress: &'a ProgressBar,
    /// Progress lines, for logs when no bar is drawn.
    pub log: &'a (dyn Fn(String) + Sync),
    /// The step may use every core: a training that is the only model step
    /// able to run now (`Schedule::lone_model_step`); else its executor's
    /// share of them.
    pub every_core: bool,
}

/// How a step went, with everything its computation printed (kept as the log
/// of a failure; empty when it ran in this process).
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    pub status: StepStatus,
    pub output: Vec<String>,
}

/// Computes one step: locks it, re-checks the cache, runs it, publishes it.
pub trait Executor: Sync {
    fn run(&self, job: &Job) -> Finished;
}

/// The executors of a local run: every step in this process, except model
/// steps, which go to child processes when several run at once (burn's
/// autodiff graph is guarded by one process-wide lock, so threads would take
/// turns).
pub struct Executors {
    pub in_process: InProcess,
    pub model_steps: Option<ChildProcess>,
}

impl Executors {
    /// `model_jobs`: model steps at a time (`dag::run::model_jobs`); one
    /// runs here, so a step pays no process start (nor, on LibTorch, the
    /// second of torch's start each process paid: the small quickstart grid
    /// on LibTorch took 24.9 s in child processes, 5.5 s here).
    pub fn for_step(&self, kind: StepKind, model_jobs: usize) -> &dyn Executor {
        match &self.model_steps {
            Some(child) if model_jobs > 1 && kind.is_model_step() => child,
            _ => &self.in_process,
        }
    }
}
