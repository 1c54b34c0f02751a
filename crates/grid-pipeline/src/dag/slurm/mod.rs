//! `grid run --executor slurm`: every missing step of the plan becomes a task
//! of a Slurm job array over the shared cache, each task running `grid step`
//! on its keys. Arrays follow the DAG's waves ([`waves`]) with `afterany`
//! dependencies, so Slurm, not this process, orders the work. A failing task
//! cancels the queued tasks that need its step ([`cancel_dependents`]), and a
//! task skips a step whose inputs did not complete, so a failure ends its own
//! branch and nothing else ([`sbatch::ArrayJob::args`] says why not `afterok`).
//! Submission returns at once with the job ids; `--wait` follows the jobs and
//! writes the reports at the end.
//!
//! Everything runs on the cluster, score, agreement and report steps
//! included (batched, [`waves::SMALL_STEPS_PER_TASK`] per task), so a
//! submission needs nothing of the submitting machine afterwards.

pub mod queued;
pub mod sbatch;
pub mod waves;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use self::queued::Queued;
use self::sbatch::ArrayJob;
use self::waves::{Class, Pending};
use super::Plan;
use super::executor::StepCommand;
use super::run::{RunOutcome, StepStatus, Verbosity, outcome};
use crate::spec::slurm::SlurmSpec;
use crate::step_kind::StepKind;
use grid_cache::Cache;

pub struct SlurmOptions<'a> {
    /// The worker command, with absolute paths: tasks may start elsewhere.
    pub command: StepCommand,
    pub resources: &'a SlurmSpec,
    /// `--device cuda`: model steps ask for `--gres=gpu:1`.
    pub gpu: bool,
    pub verbosity: Verbosity,
}

/// One submitted array.
#[derive(Debug, Clone)]
pub struct Submitted {
    pub job: String,
    pub class: Class,
    pub steps: usize,
}

/// What a submission did.
#[derive(Debug, Clone)]
pub struct Submission {
    pub arrays: Vec<Submitted>,
    /// Steps already queued or running from an earlier submission.
    pub in_flight: usize,
    /// Per step: cached before (None), submitted now, or in flight.
    pub pending: Vec<Option<Pending>>,
    /// The `<job>_<task>` computing each pending step.
    pub tasks: HashMap<usize, String>,
}

impl Submission {
    pub fn submitted_steps(&self) -> usize {
        self.arrays.iter().map(|a| a.steps).sum()
    }
}

/// Submits every step the cache lacks and no queued or running task
/// computes already.
pub fn submit(plan: &Plan, cache: &Cache, options: &SlurmOptions) -> Result<Submission> {
    cache.sweep_leftovers::<StepKind>(false)?;
    let queue = sbatch::queued_tasks()?;
    let mut pending = Vec::with_capacity(plan.steps.len());
    let mut tasks = HashMap::new();
    for (i, step) in plan.steps.iter().enumerate() {
        if cache.lookup(step.kind, &step.key)?.is_some() {
            pending.push(None);
        } else if let Some(q) = queued::read(cache, &step.key).filter(|q| queue.contains_key(&q.task)) {
            tasks.insert(i, q.task.clone());
            pending.push(Some(Pending::InFlight(q.task)));
        } else {
            pending.push(Some(Pending::Submit));
        }
    }
    let in_flight = tasks.len();
    let arrays = waves::arrays(plan, &pending);
    let mut submission = Submission { arrays: Vec::new(), in_flight, pending, tasks };
    if arrays.is_empty() {
        return Ok(submission);
    }

    // Absolute: tasks and the failure records they write name these paths.
    let root = absolute(&queued::slurm_dir(cache));
    let logs = root.join("logs");
    let now = grid_cache::clock::unix_now();
    let folder = root.join("submissions").join(format!("{now}-{}", std::process::id()));
    std::fs::create_dir_all(&logs).with_context(|| format!("cannot create {}", logs.display()))?;
    std::fs::create_dir_all(&folder).with_context(|| format!("cannot create {}", folder.display()))?;
    let script = folder.join("task.sh");
    write_executable(&script, &sbatch::task_script(&options.command.program, &options.command.args, &logs))?;

    let mut ids: Vec<String> = Vec::new();
    for (a, array) in arrays.iter().enumerate() {
        let keys_file = folder.join(format!("{a:03}-{}.keys", array.class.name()));
        let lines: Vec<String> = array
            .tasks
            .iter()
            .map(|task| task.iter().map(|&i| plan.steps[i].key.as_str()).collect::<Vec<_>>().join(" "))
            .collect();
        std::fs::write(&keys_file, lines.join("\n") + "\n")
            .with_context(|| format!("cannot write {}", keys_file.display()))?;
        let job = ArrayJob {
            name: format!("grid-{}-{}", plan.grid_name, array.class.name()),
            tasks: array.tasks.len(),
            after: array.after_arrays.iter().map(|&b| ids[b].clone()).chain(array.after_jobs.iter().cloned()).collect(),
            resources: options.resources.resources(array.class.resource_kind()),
            gpu: options.gpu && matches!(array.class, Class::Kind(kind) if kind.is_model_step()),
            log_pattern: logs.join("%A_%a.log"),
            script: script.clone(),
            keys_file,
        };
        let id = match job.submit() {
            Ok(id) => id,
            Err(e) => {
                // Half a submission would leave arrays waiting on ones never
                // submitted: take back what went in, so a rerun starts clean.
                let _ = sbatch::cancel(&ids);
                return Err(e.context(format!("{} arrays were submitted and are cancelled", ids.len())));
            }
        };
        for (t, task) in array.tasks.iter().enumerate() {
            let name = format!("{id}_{t}");
            for &i in task {
                let step = &plan.steps[i];
                let record = Queued {
                    label: step.label.clone(),
                    task: name.clone(),
                    log: logs.join(format!("{name}.log")),
                    submitted_at: now,
                };
                queued::record(cache, &step.key, &record)?;
                submission.tasks.insert(i, name.clone());
            }
        }
        submission.arrays.push(Submitted { job: id.clone(), class: array.class, steps: array.steps().count() });
        ids.push(id);
    }
    Ok(submission)
}

fn write_executable(path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", path.display()))
}

/// Follows the submission's tasks until Slurm no longer lists any of them,
/// then reads what each step became from the cache. Ctrl-C stops following
/// (the jobs go on).
pub fn wait(
    plan: &Plan,
    cache: &Cache,
    submission: &Submission,
    verbosity: Verbosity,
    reports_dir: Option<&Path>,
) -> Result<RunOutcome> {
    let ours: HashSet<&str> = submission.tasks.values().map(String::as_str).collect();
    let watched: Vec<usize> = submission.tasks.keys().copied().collect();
    let bar = if verbosity == Verbosity::Quiet {
        ProgressBar::hidden()
    } else {
        ProgressBar::with_draw_target(Some(watched.len() as u64), ProgressDrawTarget::stderr())
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} slurm [{bar:25}] {pos}/{len} steps {elapsed} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    let mut pause = Duration::from_millis(250);
    loop {
        let done = watched
            .iter()
            .filter(|&&i| cache.lookup(plan.steps[i].kind, &plan.steps[i].key).ok().flatten().is_some())
            .count();
        bar.set_position(done as u64);
        let queue = sbatch::queued_tasks()?;
        let left = ours.iter().filter(|t| queue.contains_key(**t)).count();
        bar.set_message(format!("{left} tasks queued or running"));
        if left == 0 || grid_core::interrupt::requested() {
            break;
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_secs(5));
    }
    bar.finish_and_clear();
    let stopped = grid_core::interrupt::requested();
    let mut status = Vec::with_capacity(plan.steps.len());
    for (i, step) in plan.steps.iter().enumerate() {
        let manifest = cache.lookup(step.kind, &step.key)?;
        status.push(match (&submission.pending[i], manifest) {
            (None, _) => Some(StepStatus::Cached),
            (Some(Pending::Submit), Some(m)) => Some(StepStatus::of_published(&m)),
            // An earlier submission's task computed it, not this run.
            (Some(Pending::InFlight(_)), Some(_)) => Some(StepStatus::Cached),
            // Stopped following: the task may still compute it.
            (Some(_), None) if stopped => None,
            (Some(_), None) => {
                let task = submission.tasks.get(&i).cloned().unwrap_or_default();
                let missing_input = step.inputs.iter().find(|&&j| {
                    let input = &plan.steps[j];
                    cache.lookup(input.kind, &input.key).ok().flatten().is_none()
                });
                Some(match cache.failure::<StepKind>(&step.key) {
                    Some(f) => StepStatus::Failed {
                        error: match f.log {
                            Some(log) => format!("{} (Slurm task {task}, log {})", f.error, log.display()),
                            None => format!("{} (Slurm task {task})", f.error),
                        },
                    },
                    None => StepStatus::Skipped {
                        because: match missing_input {
                            Some(&j) => format!("input `{}` did not complete", plan.steps[j].label),
                            None => format!("Slurm task {task} ended without computing it (was it cancelled?)"),
                        },
                    },
                })
            }
        });
    }
    Ok(outcome(plan, cache, status, reports_dir)?)
}

/// A step that a Slurm task of an earlier submission is to compute.
#[derive(Debug, Clone, PartialEq)]
pub struct OnSlurm {
    pub queued: Queued,
    /// Slurm's state of the task: `PENDING`, `RUNNING`, …
    pub state: String,
}

/// The steps that Slurm still lists a task for, from the records of earlier
/// submissions: for `grid status`. Empty when nothing was ever submitted; an
/// error when records exist but `squeue` cannot be asked.
pub fn queued_steps(plan: &Plan, cache: &Cache) -> Result<HashMap<usize, OnSlurm>> {
    let records: Vec<(usize, Queued)> =
        plan.steps.iter().enumerate().filter_map(|(i, s)| queued::read(cache, &s.key).map(|q| (i, q))).collect();
    if records.is_empty() {
        return Ok(HashMap::new());
    }
    let queue = sbatch::queued_tasks()?;
    Ok(records
        .into_iter()
        .filter_map(|(i, queued)| queue.get(&queued.task).map(|state| (i, OnSlurm { state: state.clone(), queued })))
        .collect())
}

/// Under a Slurm task, whose parent is Slurm: records the failure of step
/// `failed` with the task's `log`, then takes the queued tasks that could only
/// skip off the queue. Problems with either are warnings: the step's own
/// failure is what the task reports.
pub fn task_failed(plan: &Plan, cache: &Cache, failed: usize, error: &str, log: &Path) {
    let step = &plan.steps[failed];
    if let Err(e) = cache.record_failure_with_log(step.kind, &step.key, &step.label, error, Some(log.to_path_buf())) {
        eprintln!("warning: the failure of {} was not recorded: {e}", step.label);
    }
    let own = std::env::var("SLURM_ARRAY_JOB_ID")
        .ok()
        .zip(std::env::var("SLURM_ARRAY_TASK_ID").ok())
        .map(|(job, task)| format!("{job}_{task}"));
    match cancel_dependents(plan, cache, failed, own.as_deref()) {
        Ok(cancelled) if !cancelled.is_empty() => {
            eprintln!("cancelled the Slurm tasks of steps that need {}: {}", step.label, cancelled.join(" "))
        }
        Ok(_) => {}
        Err(e) => eprintln!("warning: the tasks that need {} were not cancelled: {e:#}", step.label),
    }
}

/// Under a Slurm task whose step `failed`: cancels the queued tasks whose
/// every step depends on it (they could only skip), and returns them. A task
/// that also holds a step of another branch (a batch of small steps) is left
/// to run; it skips what it cannot compute. The calling task is never
/// cancelled (`own_task`).
pub fn cancel_dependents(plan: &Plan, cache: &Cache, failed: usize, own_task: Option<&str>) -> Result<Vec<String>> {
    let n = plan.steps.len();
    let mut doomed = vec![false; n];
    doomed[failed] = true;
    // Plan order is topological: one pass finds every step downstream.
    for i in failed + 1..n {
        doomed[i] = plan.steps[i].inputs.iter().any(|&j| doomed[j]);
    }
    let queue = sbatch::queued_tasks()?;
    let mut only_doomed: HashMap<String, bool> = HashMap::new();
    for (i, step) in plan.steps.iter().enumerate() {
        if let Some(q) = queued::read(cache, &step.key).filter(|q| queue.contains_key(&q.task)) {
            *only_doomed.entry(q.task).or_insert(true) &= doomed[i];
        }
    }
    let mut tasks: Vec<String> =
        only_doomed.into_iter().filter(|(task, all)| *all && Some(task.as_str()) != own_task).map(|(t, _)| t).collect();
    tasks.sort();
    sbatch::cancel(&tasks)?;
    Ok(tasks)
}

/// Absolute, so that a task started in another folder finds the same files.
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
