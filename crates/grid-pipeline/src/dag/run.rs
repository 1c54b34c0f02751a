//! Running a plan locally: cached steps are skipped, the rest run as soon as
//! their inputs exist ([`super::schedule`] decides which), each on its
//! executor ([`super::executor`]), with progress bars. A failing step fails
//! only the steps that depend on it; everything else still runs and is kept.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::Plan;
use super::executor::in_process::InputPull;
use super::executor::{ChildProcess, Executors, Finished, InProcess, Job, StepCommand};
use super::schedule::{Limits, Schedule};
use crate::step_kind::StepKind;
use crate::steps;
use grid_cache::{Cache, CacheError};
use grid_core::backend::Compute;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub jobs: usize,
    /// Model steps at once on a CUDA device (`--gpu-jobs`); on the CPU, `jobs`.
    pub gpu_jobs: usize,
    pub compute: Compute,
    pub verbosity: Verbosity,
    /// Where the report's files are copied (`<dir>/<grid name>/`).
    pub reports_dir: Option<PathBuf>,
    /// `grid report`: compute nothing but the report itself.
    pub cache_only: bool,
    /// Run model steps (train, verify, attribute, erasure) in `grid step`
    /// child processes when several run at once: burn's autodiff graph is
    /// guarded by one process-wide lock, which serialises threads.
    pub worker: Option<StepCommand>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StepStatus {
    Cached,
    Ran {
        seconds: f64,
    },
    /// Not computed here: pulled from the remote cache (`--remote`), this
    /// many bytes.
    Pulled {
        bytes: u64,
    },
    /// Not computed: the cache held the same work under another key (its
    /// inputs differ only in what it does not read; see `dag::reuse`).
    Reused {
        /// The step whose result it took.
        from: grid_cache::InputRef<StepKind>,
    },
    Failed {
        error: String,
    },
    /// Not run because an input failed or is missing.
    Skipped {
        because: String,
    },
}

impl StepStatus {
    /// How a step this run published went, from its manifest.
    pub fn of_published(manifest: &grid_cache::Manifest<StepKind>) -> StepStatus {
        match &manifest.reused_from {
            Some(from) => StepStatus::Reused { from: from.clone() },
            None => StepStatus::Ran { seconds: manifest.seconds },
        }
    }

    /// Whether the step's result is in the cache now.
    pub fn is_done(&self) -> bool {
        matches!(
            self,
            StepStatus::Cached | StepStatus::Ran { .. } | StepStatus::Reused { .. } | StepStatus::Pulled { .. }
        )
    }
}

/// Where a reused step's result came from, for a run's log.
pub fn reused_from(from: &grid_cache::InputRef<StepKind>) -> String {
    format!("cached as {}, whose inputs differ only in what this step does not read", from.short_name())
}

#[derive(Debug, Clone)]
pub struct StepRecord {
    pub index: usize,
    pub kind: StepKind,
    pub label: String,
    pub status: StepStatus,
}

#[derive(Debug, Clone, Default)]
pub struct RunOutcome {
    pub records: Vec<StepRecord>,
    /// Report files copied into the reports folder.
    pub report_files: Vec<PathBuf>,
    /// The tables as text, when the report exists.
    pub console: Option<String>,
    /// A stop was asked for (Ctrl-C): what had not finished is `Skipped`
    /// with the reason [`INTERRUPTED`].
    pub interrupted: bool,
}

/// Why a step did not run or finish when the run was stopped.
pub const INTERRUPTED: &str = "interrupted";

/// Model steps at a time: on a GPU `--gpu-jobs` (default one: each holds its
/// own CUDA context and competes for memory), never more than `jobs`; on the
/// CPU, `jobs`, except under LibTorch, whose operations already use every
/// core (OpenMP), and which then runs its model steps in this process
/// (`Executors::for_step`; the small quickstart grid took 26.1 s with two
/// at once in child processes, 24.9 s with one at a time there, 5.5 s with
/// one here). Data, score and report steps run beside them on the CPU.
fn model_jobs(compute: grid_core::backend::Compute, jobs: usize, gpu_jobs: usize) -> usize {
    use grid_core::backend::{BackendKind, DeviceChoice};
    match (compute.device, compute.backend) {
        (DeviceChoice::Cuda(_), _) => gpu_jobs.clamp(1, jobs.max(1)),
        (DeviceChoice::Cpu, BackendKind::LibTorch) => 1,
        (DeviceChoice::Cpu, _) => jobs,
    }
}

impl RunOutcome {
    pub fn executed(&self) -> impl Iterator<Item = &StepRecord> {
        self.records.iter().filter(|r| matches!(r.status, StepStatus::Ran { .. }))
    }

    pub fn executed_of(&self, kind: StepKind) -> usize {
        self.executed().filter(|r| r.kind == kind).count()
    }

    pub fn cached(&self) -> usize {
        self.records.iter().filter(|r| r.status == StepStatus::Cached).count()
    }

    /// Steps pulled from the remote cache.
    pub fn pulled(&self) -> usize {
        self.records.iter().filter(|r| matches!(r.status, StepStatus::Pulled { .. })).count()
    }

    /// Steps that took the result of the same work under another key.
    pub fn reused(&self) -> usize {
        self.records.iter().filter(|r| matches!(r.status, StepStatus::Reused { .. })).count()
    }

    pub fn failures(&self) -> impl Iterator<Item = &StepRecord> {
        self.records.iter().filter(|r| matches!(r.status, StepStatus::Failed { .. } | StepStatus::Skipped { .. }))
    }

    pub fn succeeded(&self) -> bool {
        self.failures().next().is_none()
    }
}

fn bar_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {prefix:<40} [{bar:25}] {pos}/{len} {elapsed} {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ")
}

/// Runs every step the cache lacks.
pub fn execute(plan: &Plan, cache: &Cache, options: &RunOptions) -> Result<RunOutcome, CacheError> {
    // What killed processes left half-written; the steps themselves rerun.
    for leftover in cache.sweep_leftovers::<StepKind>(false)? {
        if options.verbosity >= Verbosity::Verbose {
            eprintln!("removed {} (left by an interrupted step)", leftover.display());
        }
    }
    // A step the remote holds counts as cached: it is pulled only when a step
    // that runs reads it (`executor::in_process`), or it is the report.
    cache.prefetch_remote(plan.steps.iter().map(|s| (s.kind, &s.key)));
    let cached = plan
        .steps
        .iter()
        .map(|step| Ok(cache.lookup(step.kind, &step.key)?.is_some() || remote_holds(cache, step.kind, &step.key)?))
        .collect::<Result<Vec<bool>, CacheError>>()?;
    let multi = MultiProgress::with_draw_target(if options.verbosity == Verbosity::Quiet {
        ProgressDrawTarget::hidden()
    } else {
        ProgressDrawTarget::stderr()
    });
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let say = |line: String| {
        if options.verbosity > Verbosity::Quiet {
            // A hidden draw target (a pipe, a log file) drops `println`.
            if terminal {
                let _ = multi.println(line);
            } else {
                eprintln!("{line}");
            }
        }
    };
    let jobs = options.jobs.max(1);
    let model_jobs = model_jobs(options.compute, jobs, options.gpu_jobs);
    let mut schedule = Schedule::new(plan, &cached, Limits { jobs, model_jobs }, options.cache_only);
    let executors = Executors {
        in_process: InProcess { compute: options.compute, one_at_a_time: jobs == 1 },
        model_steps: options
            .worker
            .clone()
            .map(|command| ChildProcess::new(command, options.compute.device, model_jobs)),
    };
    let log_lines = options.verbosity >= Verbosity::Verbose || (options.verbosity == Verbosity::Normal && !terminal);

    std::thread::scope(|scope| {
        let (done_tx, done_rx) = mpsc::channel::<(usize, Finished)>();
        let mut stopped_children = false;
        loop {
            for i in schedule.start_ready(grid_core::interrupt::requested()) {
                let step = &plan.steps[i];
                let bar = multi.add(ProgressBar::new(0).with_style(bar_style()).with_prefix(step.label.clone()));
                bar.enable_steady_tick(Duration::from_millis(200));
                let tx = done_tx.clone();
                let executor = executors.for_step(step.kind, model_jobs);
                // A training that starts alone takes every core: a chain's
                // training ran 1.9x faster so. Not the other model steps: a
                // tiny model's verification or maps gain nothing from a
                // second thread, and overlapping the next step's share cost
                // the quickstart 2-6%.
                let every_core = step.kind == StepKind::Train && schedule.lone_model_step();
                let label = step.label.clone();
                scope.spawn(move || {
                    let log = move |line: String| {
                        if log_lines {
                            eprintln!("         {label}: {line}");
                        }
                    };
                    let finished = executor.run(&Job { plan, cache, index: i, progress: &bar, log: &log, every_core });
                    bar.finish_and_clear();
                    let _ = tx.send((i, finished));
                });
            }
            if schedule.running() == 0 {
                break;
            }
            let (i, Finished { status: result, output }) = loop {
                match done_rx.recv_timeout(Duration::from_millis(200)) {
                    Ok(done) => break done,
                    Err(mpsc::RecvTimeoutError::Timeout) if grid_core::interrupt::requested() && !stopped_children => {
                        grid_core::interrupt::stop_children();
                        stopped_children = true;
                        say("stopping: no step starts any more; waiting for the running ones to stop".into());
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => unreachable!("the scheduler holds a sender"),
                }
            };
            // A step stopped by the request did not fail: nothing is recorded.
            let result = match result {
                StepStatus::Failed { .. } if grid_core::interrupt::requested() => {
                    StepStatus::Skipped { because: INTERRUPTED.into() }
                }
                result => result,
            };
            let step = &plan.steps[i];
            if matches!(result, StepStatus::Ran { .. })
                && step.kind == StepKind::Train
                && let Err(e) = super::placement::record_training(plan, i, cache, options.compute.device)
            {
                say(format!("warning: the training rate of {} was not recorded for --device auto: {e}", step.label));
            }
            match &result {
                StepStatus::Ran { seconds } => say(format!("     ran {} in {seconds:.1}s", step.label)),
                StepStatus::Cached => say(format!("  cached {} (computed by another process)", step.label)),
                StepStatus::Reused { from } => say(format!("  reused {}: {}", step.label, reused_from(from))),
                StepStatus::Pulled { bytes } => say(format!(
                    "  pulled {} from the remote cache ({})",
                    step.label,
                    super::estimate::human_bytes(*bytes)
                )),
                StepStatus::Failed { error } => {
                    say(format!("  FAILED {}: {error}", step.label));
                    // For `grid status` / `grid show`; the run goes on without it.
                    if let Err(e) = cache.record_failure(step.kind, &step.key, &step.label, error, &output) {
                        say(format!("warning: the failure of {} was not recorded: {e}", step.label));
                    }
                }
                StepStatus::Skipped { .. } => {}
            }
            schedule.finish(i, result);
        }
    });
    let statuses = schedule.into_statuses();
    publish_cached(plan, cache, &statuses, options.verbosity);
    outcome(plan, cache, statuses, options.reports_dir.as_deref())
}

/// Publishes to the remote cache (if any) the steps this run found cached
/// locally that the remote may lack: a cache filled before `--remote` was
/// given, or a push that failed. Steps the cache knows the remote holds cost
/// nothing; a failure is a warning, as for a step just computed.
fn publish_cached(plan: &Plan, cache: &Cache, statuses: &[Option<StepStatus>], verbosity: Verbosity) {
    use grid_cache::remote::Pushed;
    let Some(remote) = cache.remote() else { return };
    let started = std::time::Instant::now();
    let (mut uploaded, mut bytes) = (0, 0);
    for (step, status) in plan.steps.iter().zip(statuses) {
        // What the cache knows the remote holds costs no lookup nor request.
        if !matches!(status, Some(StepStatus::Cached)) || cache.known_published(step.kind, &step.key, remote.location())
        {
            continue;
        }
        let Ok(Some(manifest)) = cache.lookup(step.kind, &step.key) else { continue };
        match remote.push(cache, &manifest) {
            Ok(Pushed::Uploaded { bytes: b }) => (uploaded, bytes) = (uploaded + 1, bytes + b),
            Ok(Pushed::SharedPayload) => uploaded += 1,
            Ok(Pushed::AlreadyThere) => {}
            Err(e) => eprintln!("warning: {}: not published to the remote cache: {e}", step.label),
        }
    }
    if uploaded > 0 && verbosity > Verbosity::Quiet {
        eprintln!(
            "published {uploaded} cached steps the remote lacked to {} ({} in {:.1}s)",
            remote.location(),
            super::estimate::human_bytes(bytes),
            started.elapsed().as_secs_f64()
        );
    }
}

/// The run's records from each step's status (`None`: never reached, or not
/// finished when the run was stopped), with the report's tables copied into
/// `reports_dir` and read for the console when the report exists.
pub fn outcome(
    plan: &Plan,
    cache: &Cache,
    status: Vec<Option<StepStatus>>,
    reports_dir: Option<&std::path::Path>,
) -> Result<RunOutcome, CacheError> {
    let interrupted = grid_core::interrupt::requested();
    let records: Vec<StepRecord> = plan
        .steps
        .iter()
        .enumerate()
        .map(|(i, s)| StepRecord {
            index: i,
            kind: s.kind,
            label: s.label.clone(),
            status: status[i].clone().unwrap_or_else(|| StepStatus::Skipped {
                because: if interrupted { INTERRUPTED } else { "not reached" }.into(),
            }),
        })
        .collect();
    let mut outcome = RunOutcome { records, interrupted, ..Default::default() };
    if let Some(report) = plan.report_step()
        && outcome.records[report].status.is_done()
    {
        // A report the remote holds comes down to be shown.
        let step = &plan.steps[report];
        if cache.lookup(step.kind, &step.key)?.is_none() {
            let problem = |problem: String| CacheError::Remote { location: remote_location(cache), problem };
            match crate::dag::executor::in_process::pull_input(cache, step.kind, &step.key, &step.label) {
                Ok(InputPull::Present) => {}
                Ok(InputPull::Damaged(why)) => {
                    return Err(problem(format!("the report: {why}; run again to compute it")));
                }
                Err(e) => return Err(problem(e.to_string())),
            }
        }
        let dir = cache.step_dir(StepKind::Report, &plan.steps[report].key);
        outcome.console = std::fs::read_to_string(dir.join(steps::report::CONSOLE)).ok();
        if let Some(reports) = reports_dir {
            outcome.report_files = copy_report(&dir, &reports.join(&plan.grid_name))?;
        }
    }
    Ok(outcome)
}

/// Whether the remote cache behind `cache` (if any) holds the step.
fn remote_holds(cache: &Cache, kind: StepKind, key: &grid_cache::StepKey) -> Result<bool, CacheError> {
    cache.remote().map_or(Ok(false), |remote| remote.holds(kind, key))
}

fn remote_location(cache: &Cache) -> String {
    cache.remote().map_or_else(String::new, |r| r.location().to_string())
}

fn copy_report(from: &std::path::Path, to: &std::path::Path) -> Result<Vec<PathBuf>, CacheError> {
    let io = |path: &std::path::Path| {
        let path = path.to_path_buf();
        move |source| CacheError::Io { path, source }
    };
    std::fs::create_dir_all(to).map_err(io(to))?;
    let mut files = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(from).map_err(io(from))?.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        if name == "manifest.json" || name == steps::report::CONSOLE {
            continue;
        }
        let target = to.join(&name);
        std::fs::copy(entry.path(), &target).map_err(io(&target))?;
        files.push(target);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::model_jobs;
    use grid_core::backend::{BackendKind, Compute, DeviceChoice, Precision};
    use grid_core::buckets::Buckets;

    fn on(backend: BackendKind, device: DeviceChoice) -> Compute {
        Compute { backend, device, precision: Precision::F32, buckets: Buckets::EXACT }
    }

    #[test]
    fn gpu_jobs_limit_model_steps_on_cuda_only_and_never_exceed_jobs() {
        let cuda = |index| on(BackendKind::LibTorch, DeviceChoice::Cuda(index));
        assert_eq!(model_jobs(cuda(0), 16, 1), 1);
        assert_eq!(model_jobs(cuda(0), 16, 4), 4);
        assert_eq!(model_jobs(cuda(1), 2, 4), 2, "no more than --jobs");
        assert_eq!(model_jobs(on(BackendKind::Flex, DeviceChoice::Cpu), 8, 1), 8, "--gpu-jobs is for the GPU");
        assert_eq!(model_jobs(on(BackendKind::LibTorch, DeviceChoice::Cpu), 8, 1), 1, "torch uses every core");
    }
}
