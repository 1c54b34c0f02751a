//! Which steps may run now: the ready set of a local run. A step is ready
//! when every input is cached or has run; a step whose input failed is
//! skipped, and so is one whose every user was skipped (an original model
//! whose shortcut data all failed is never used). Limits: `jobs` steps at a
//! time, one model step at a time on a GPU, and no model step while a data
//! step is running or ready (data steps take seconds and are where bad data
//! shows, so a doomed grid fails before any model trains).

use super::{Plan, StepStatus};
use crate::step_kind::StepKind;

/// How many steps may run at once.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub jobs: usize,
    /// Model steps (train, verify, attribute, erasure) at once: 1 on a GPU.
    pub model_jobs: usize,
}

pub struct Schedule<'a> {
    plan: &'a Plan,
    /// Settled steps; `None` while pending or running.
    status: Vec<Option<StepStatus>>,
    started: Vec<bool>,
    consumers: Vec<Vec<usize>>,
    /// Data steps first, then plan order.
    order: Vec<usize>,
    limits: Limits,
    /// `grid report`: nothing but the report may run.
    report_only: bool,
    running: usize,
    running_models: usize,
    running_data: usize,
}

impl<'a> Schedule<'a> {
    /// `cached[i]`: step `i` is already in the cache.
    pub fn new(plan: &'a Plan, cached: &[bool], limits: Limits, report_only: bool) -> Self {
        let n = plan.steps.len();
        let status = cached.iter().map(|&c| c.then_some(StepStatus::Cached)).collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by_key(|&i| !plan.steps[i].kind.is_data_step());
        let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, step) in plan.steps.iter().enumerate() {
            for &j in &step.inputs {
                consumers[j].push(i);
            }
        }
        let limits = Limits { jobs: limits.jobs.max(1), model_jobs: limits.model_jobs.max(1) };
        Self {
            plan,
            status,
            started: vec![false; n],
            consumers,
            order,
            limits,
            report_only,
            running: 0,
            running_models: 0,
            running_data: 0,
        }
    }

    pub fn running(&self) -> usize {
        self.running
    }

    /// Settles what can no longer run, then marks as started and returns the
    /// steps that may start now (none once `stopping`).
    pub fn start_ready(&mut self, stopping: bool) -> Vec<usize> {
        self.settle();
        let data_pending = self.running_data > 0
            || self.order.iter().any(|&i| self.plan.steps[i].kind.is_data_step() && self.is_ready(i));
        let mut starting = Vec::new();
        if stopping {
            return starting;
        }
        for k in 0..self.order.len() {
            let i = self.order[k];
            let kind = self.plan.steps[i].kind;
            if !self.is_ready(i) || self.running >= self.limits.jobs {
                continue;
            }
            if kind.is_model_step() && (self.running_models >= self.limits.model_jobs || data_pending) {
                continue;
            }
            self.started[i] = true;
            self.running += 1;
            self.running_models += usize::from(kind.is_model_step());
            self.running_data += usize::from(kind.is_data_step());
            starting.push(i);
        }
        starting
    }

    /// Whether the one model step running is alone: no other model step
    /// waits to start, and no data step (which could make one ready) runs or
    /// waits. Such a step may use every core (`Job::every_core`): sharing
    /// them with model steps that cannot run left half of a 2-core machine
    /// idle through a chain of model steps.
    pub fn lone_model_step(&self) -> bool {
        self.running_models == 1
            && self.running_data == 0
            && !self.order.iter().any(|&i| {
                let kind = self.plan.steps[i].kind;
                (kind.is_model_step() || kind.is_data_step()) && self.is_ready(i)
            })
    }

    /// Records how a started step ended.
    pub fn finish(&mut self, i: usize, status: StepStatus) {
        let kind = self.plan.steps[i].kind;
        self.running -= 1;
        self.running_models -= usize::from(kind.is_model_step());
        self.running_data -= usize::from(kind.is_data_step());
        self.status[i] = Some(status);
    }

    /// Every step's status; `None` for steps that never started or finished.
    pub fn into_statuses(self) -> Vec<Option<StepStatus>> {
        self.status
    }

    fn is_ready(&self, i: usize) -> bool {
        self.status[i].is_none()
            && !self.started[i]
            && self.plan.steps[i].inputs.iter().all(|&j| self.status[j].as_ref().is_some_and(StepStatus::is_done))
    }

    fn settle(&mut self) {
        let doomed = |s: &Option<StepStatus>| matches!(s, Some(StepStatus::Failed { .. } | StepStatus::Skipped { .. }));
        let n = self.plan.steps.len();
        // Steps whose inputs failed (plan order is topological)...
        for i in 0..n {
            if self.status[i].is_some() || self.started[i] {
                continue;
            }
            let step = &self.plan.steps[i];
            if let Some(&input) = step.inputs.iter().find(|&&j| doomed(&self.status[j])) {
                let input = &self.plan.steps[input].label;
                self.status[i] = Some(StepStatus::Skipped { because: format!("input `{input}` did not complete") });
            } else if self.report_only && step.kind != StepKind::Report {
                self.status[i] =
                    Some(StepStatus::Skipped { because: "not in the cache (run `grid run` first)".into() });
            }
        }
        // ...and, backwards, steps whose every consumer is doomed. The report
        // takes whatever it can get, so it never dooms its inputs.
        for i in (0..n).rev() {
            let consumers = &self.consumers[i];
            if self.status[i].is_none()
                && !self.started[i]
                && !consumers.is_empty()
                && consumers.iter().all(|&c| self.plan.steps[c].kind != StepKind::Report && doomed(&self.status[c]))
            {
                self.status[i] =
                    Some(StepStatus::Skipped { because: "every step that would use it did not complete".into() });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::test_plan as plan;

    const CPU: Limits = Limits { jobs: 4, model_jobs: 4 };

    #[test]
    fn no_model_step_starts_while_a_data_step_runs() {
        use StepKind::*;
        // Two corpora; a model trains on the first while the second still reads.
        let plan = plan(&[(Corpus, &[]), (Train, &[0]), (Corpus, &[]), (Report, &[1])]);
        let mut s = Schedule::new(&plan, &[false; 4], CPU, false);
        assert_eq!(s.start_ready(false), vec![0, 2]);
        s.finish(0, StepStatus::Ran { seconds: 0.0 });
        assert_eq!(s.start_ready(false), Vec::<usize>::new(), "corpus 2 is still running");
        s.finish(2, StepStatus::Ran { seconds: 0.0 });
        assert_eq!(s.start_ready(false), vec![1]);
        s.finish(1, StepStatus::Cached);
        assert_eq!(s.start_ready(false), vec![3]);
    }

    #[test]
    fn a_failure_skips_its_users_and_inputs_nothing_else_uses() {
        use StepKind::*;
        // 0 original model, used only by verify 3 (with shortcut model 1);
        // 1 fails, so 3 and its score 4 are skipped, and so is 0 when it has
        // not started yet (2, a data step, holds it back).
        let plan = plan(&[(Train, &[]), (Train, &[]), (Synth, &[]), (Verify, &[0, 1]), (Score, &[3])]);
        let mut s = Schedule::new(&plan, &[true, false, false, false, false], CPU, false);
        assert_eq!(s.start_ready(false), vec![2]);
        s.finish(2, StepStatus::Ran { seconds: 0.0 });
        assert_eq!(s.start_ready(false), vec![1]);
        s.finish(1, StepStatus::Failed { error: "boom".into() });
        assert!(s.start_ready(false).is_empty());
        let status = s.into_statuses();
        assert!(matches!(&status[3], Some(StepStatus::Skipped { because }) if because.contains("train/1")));
        assert!(matches!(status[4], Some(StepStatus::Skipped { .. })));
    }

    #[test]
    fn an_unused_input_is_not_computed() {
        use StepKind::*;
        // 0 is used only by 2, which cannot run because 1 failed.
        let plan = plan(&[(Train, &[]), (Synth, &[]), (Verify, &[0, 1])]);
        let mut s = Schedule::new(&plan, &[false; 3], CPU, false);
        assert_eq!(s.start_ready(false), vec![1], "the data step first");
        s.finish(1, StepStatus::Failed { error: "labels".into() });
        assert!(s.start_ready(false).is_empty());
        let status = s.into_statuses();
        assert!(matches!(&status[0], Some(StepStatus::Skipped { because }) if because.contains("would use it")));
    }

    #[test]
    fn a_gpu_runs_one_model_step_at_a_time_and_a_stop_starts_nothing() {
        use StepKind::*;
        let plan = plan(&[(Train, &[]), (Train, &[]), (Score, &[]), (Report, &[0, 1, 2])]);
        let mut s = Schedule::new(&plan, &[false; 4], Limits { jobs: 4, model_jobs: 1 }, false);
        assert_eq!(s.start_ready(false), vec![0, 2]);
        s.finish(0, StepStatus::Ran { seconds: 0.0 });
        assert!(s.start_ready(true).is_empty());
        assert_eq!(s.start_ready(false), vec![1]);
    }

    /// A model step that is the only one able to run is told so (it may
    /// take every core); model steps that start together, or one that
    /// another waits behind, are not.
    #[test]
    fn a_lone_model_step_is_told_so() {
        use StepKind::*;
        let two = Limits { jobs: 2, model_jobs: 2 };
        // A chain: corpus, training, verification.
        let chain = plan(&[(Corpus, &[]), (Train, &[0]), (Verify, &[1])]);
        let mut s = Schedule::new(&chain, &[false; 3], two, false);
        assert_eq!(s.start_ready(false), vec![0]);
        assert!(!s.lone_model_step(), "no model step runs");
        s.finish(0, StepStatus::Ran { seconds: 0.0 });
        assert_eq!(s.start_ready(false), vec![1]);
        assert!(s.lone_model_step());
        s.finish(1, StepStatus::Ran { seconds: 0.0 });
        assert_eq!(s.start_ready(false), vec![2]);
        assert!(s.lone_model_step());
        // Two trainings on one corpus start together and share.
        let side_by_side = plan(&[(Corpus, &[]), (Train, &[0]), (Train, &[0])]);
        let mut s = Schedule::new(&side_by_side, &[true, false, false], two, false);
        assert_eq!(s.start_ready(false), vec![1, 2]);
        assert!(!s.lone_model_step());
        // One at a time, the other waiting: not alone either.
        let mut s = Schedule::new(&side_by_side, &[true, false, false], Limits { jobs: 2, model_jobs: 1 }, false);
        assert_eq!(s.start_ready(false), vec![1]);
        assert!(!s.lone_model_step(), "step 2 waits for it");
    }

    #[test]
    fn a_report_only_run_computes_nothing_but_the_report() {
        use StepKind::*;
        let plan = plan(&[(Train, &[]), (Score, &[0]), (Report, &[1])]);
        let mut s = Schedule::new(&plan, &[true, true, false], CPU, true);
        assert_eq!(s.start_ready(false), vec![2]);
        let mut s = Schedule::new(&plan, &[true, false, false], CPU, true);
        assert!(s.start_ready(false).is_empty());
        let status = s.into_statuses();
        assert!(matches!(&status[1], Some(StepStatus::Skipped { because }) if because.contains("grid run")));
        assert!(matches!(status[2], Some(StepStatus::Skipped { .. })));
    }
}
