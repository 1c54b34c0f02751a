//! Missing steps → Slurm job arrays: one array per wave of independent steps
//! of one kind (a step's wave is one more than the latest wave among the
//! inputs it waits for), each array depending on the arrays and in-flight
//! jobs that compute its inputs. Score, agreement and report steps take
//! seconds: they go into one `small` array per wave, many steps per task.

use std::collections::{BTreeMap, BTreeSet};

use crate::dag::Plan;
use crate::step_kind::StepKind;

/// Steps of a `small` array task: each starts a `grid step` that plans the
/// grid once and then runs them one after the other.
pub const SMALL_STEPS_PER_TASK: usize = 64;
/// Tasks per array: Slurm's default `MaxArraySize` is 1001.
pub const MAX_ARRAY_TASKS: usize = 1000;

/// What an array runs: one step kind, or the small kinds together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    Kind(StepKind),
    Small,
}

impl Class {
    pub fn of(kind: StepKind) -> Self {
        match kind {
            StepKind::Score | StepKind::Agreement | StepKind::Report | StepKind::Crowd => Class::Small,
            kind => Class::Kind(kind),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Class::Kind(kind) => kind.name(),
            Class::Small => "small",
        }
    }

    /// The kind whose `[slurm.<kind>]` resources the array asks for.
    pub fn resource_kind(self) -> StepKind {
        match self {
            Class::Kind(kind) => kind,
            Class::Small => StepKind::Score,
        }
    }
}

/// Where a step's result will come from when it is not cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pending {
    /// To be submitted now.
    Submit,
    /// A job submitted earlier is still queued or running (`<job>_<task>`).
    InFlight(String),
}

/// One job array to submit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Array {
    pub class: Class,
    pub wave: usize,
    /// The steps of each task, in plan order.
    pub tasks: Vec<Vec<usize>>,
    /// Arrays (indices into the returned list) this one waits for.
    pub after_arrays: Vec<usize>,
    /// Jobs submitted earlier that this one waits for (array job ids).
    pub after_jobs: Vec<String>,
}

impl Array {
    pub fn steps(&self) -> impl Iterator<Item = usize> + '_ {
        self.tasks.iter().flatten().copied()
    }
}

/// The arrays that compute every step marked [`Pending::Submit`], in an order
/// where each comes after the arrays it waits for.
pub fn arrays(plan: &Plan, pending: &[Option<Pending>]) -> Vec<Array> {
    let n = plan.steps.len();
    let mut wave = vec![0usize; n];
    let mut groups: BTreeMap<(usize, Class), Vec<usize>> = BTreeMap::new();
    for i in 0..n {
        if pending[i] != Some(Pending::Submit) {
            continue;
        }
        wave[i] = plan.steps[i]
            .inputs
            .iter()
            .filter(|&&j| pending[j] == Some(Pending::Submit))
            .map(|&j| wave[j] + 1)
            .max()
            .unwrap_or(0);
        groups.entry((wave[i], Class::of(plan.steps[i].kind))).or_default().push(i);
    }
    let mut arrays: Vec<Array> = Vec::new();
    let mut array_of = vec![usize::MAX; n];
    for ((wave, class), steps) in groups {
        let per_task = if class == Class::Small { SMALL_STEPS_PER_TASK } else { 1 };
        let tasks: Vec<Vec<usize>> = steps.chunks(per_task).map(<[usize]>::to_vec).collect();
        for chunk in tasks.chunks(MAX_ARRAY_TASKS) {
            let index = arrays.len();
            let mut after_arrays = BTreeSet::new();
            let mut after_jobs = BTreeSet::new();
            for &i in chunk.iter().flatten() {
                array_of[i] = index;
                for &j in &plan.steps[i].inputs {
                    match &pending[j] {
                        Some(Pending::Submit) => {
                            after_arrays.insert(array_of[j]);
                        }
                        Some(Pending::InFlight(task)) => {
                            after_jobs.insert(task.split('_').next().unwrap_or(task).to_string());
                        }
                        None => {}
                    }
                }
            }
            arrays.push(Array {
                class,
                wave,
                tasks: chunk.to_vec(),
                after_arrays: after_arrays.into_iter().collect(),
                after_jobs: after_jobs.into_iter().collect(),
            });
        }
    }
    arrays
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::test_plan as plan;

    #[test]
    fn one_array_per_wave_and_kind_with_its_dependencies() {
        use StepKind::*;
        // corpus 0 → synth 1, 2 → train 3 (on 1), train 4 (on 2) → score 5, 6 → report 7
        let plan = plan(&[
            (Corpus, &[]),
            (Synth, &[0]),
            (Synth, &[0]),
            (Train, &[1]),
            (Train, &[2]),
            (Score, &[3]),
            (Score, &[4]),
            (Report, &[5, 6]),
        ]);
        let pending = vec![Some(Pending::Submit); 8];
        let arrays = arrays(&plan, &pending);
        type Summary<'a> = (&'a str, usize, Vec<Vec<usize>>, Vec<usize>);
        let summary: Vec<Summary> =
            arrays.iter().map(|a| (a.class.name(), a.wave, a.tasks.clone(), a.after_arrays.clone())).collect();
        assert_eq!(
            summary,
            vec![
                ("corpus", 0, vec![vec![0]], vec![]),
                ("synth", 1, vec![vec![1], vec![2]], vec![0]),
                ("train", 2, vec![vec![3], vec![4]], vec![1]),
                ("small", 3, vec![vec![5, 6]], vec![2]),
                ("small", 4, vec![vec![7]], vec![3]),
            ]
        );
    }

    #[test]
    fn cached_inputs_are_not_waited_for_and_in_flight_ones_by_job() {
        use StepKind::*;
        let plan = plan(&[(Corpus, &[]), (Train, &[0]), (Train, &[0]), (Verify, &[1, 2])]);
        // 0 cached, 1 still running from an earlier submission, 2 to submit.
        let pending = vec![None, Some(Pending::InFlight("41_3".into())), Some(Pending::Submit), Some(Pending::Submit)];
        let arrays = arrays(&plan, &pending);
        assert_eq!(arrays.len(), 2);
        assert_eq!((arrays[0].class, arrays[0].wave, arrays[0].after_jobs.len()), (Class::Kind(Train), 0, 0));
        assert_eq!(arrays[1].class, Class::Kind(Verify));
        assert_eq!((arrays[1].after_arrays.clone(), arrays[1].after_jobs.clone()), (vec![0], vec!["41".to_string()]));
    }
}
