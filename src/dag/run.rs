//! Running a plan: cached steps are skipped, the rest run as soon as their
//! inputs exist, up to `jobs` at a time. A failing step fails only the steps
//! that depend on it; everything else still runs and is kept.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::backend::Compute;
use crate::cache::{Cache, CacheError, Entry, InputRef, StepKind};
use crate::steps::{self, StepContext};

use super::Plan;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    Quiet,
    Normal,
    Verbose,
}

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub jobs: usize,
    pub compute: Compute,
    pub verbosity: Verbosity,
    /// Where the report's files are copied (`<dir>/<grid name>/`).
    pub reports_dir: Option<PathBuf>,
    /// `grid report`: compute nothing but the report itself.
    pub cache_only: bool,
    /// Run model steps (train, verify, attribute) in child processes of this
    /// command, so that they run truly in parallel: burn's autodiff graph is
    /// guarded by one process-wide lock, which serialises threads.
    pub worker: Option<WorkerCommand>,
}

/// What `grid step` prints (stderr) when the step was cached by the time it
/// held the lock, so that the parent does not claim to have computed it.
pub const WORKER_FOUND_CACHED: &str = "step: found cached";

/// How to run one step in a child process: `program args… --key <key>`.
#[derive(Debug, Clone)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<std::ffi::OsString>,
}

impl WorkerCommand {
    /// Runs step `index` in a child process; its progress lines go to `log`.
    /// Returns the status and everything the child wrote (kept as the log of
    /// a failure).
    fn run(
        &self,
        plan: &Plan,
        cache: &Cache,
        index: usize,
        log: &(dyn Fn(String) + Sync),
    ) -> (StepStatus, Vec<String>) {
        use std::io::BufRead;
        let step = &plan.steps[index];
        let child = std::process::Command::new(&self.program)
            .args(&self.args)
            .arg("--key")
            .arg(step.key.as_str())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(child) => {
                crate::interrupt::register_child(child.id());
                child
            }
            Err(e) => {
                let error = format!("cannot start {}: {e}", self.program.display());
                return (StepStatus::Failed { error }, Vec::new());
            }
        };
        let mut output = Vec::new();
        let mut last_error = None;
        let mut found_cached = false;
        if let Some(stderr) = child.stderr.take() {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if line == WORKER_FOUND_CACHED {
                    found_cached = true;
                    continue;
                }
                match line.strip_prefix("error: ") {
                    Some(error) => last_error = Some(error.to_string()),
                    None => log(line.clone()),
                }
                output.push(line);
            }
        }
        let status = child.wait();
        crate::interrupt::forget_child(child.id());
        let outcome = match cache.lookup(step.kind, &step.key) {
            // Another process computed it while this one waited for the lock.
            Ok(Some(_)) if found_cached && status.as_ref().is_ok_and(|s| s.success()) => StepStatus::Cached,
            Ok(Some(manifest)) if status.as_ref().is_ok_and(|s| s.success()) => {
                StepStatus::Ran { seconds: manifest.seconds }
            }
            _ => StepStatus::Failed {
                error: last_error.unwrap_or_else(|| match status {
                    Ok(s) => format!("worker exited with {s}"),
                    Err(e) => format!("worker: {e}"),
                }),
            },
        };
        (outcome, output)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum StepStatus {
    Cached,
    Ran {
        seconds: f64,
    },
    Failed {
        error: String,
    },
    /// Not run because an input failed or is missing.
    Skipped {
        because: String,
    },
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
    for leftover in cache.sweep_leftovers(false)? {
        if options.verbosity >= Verbosity::Verbose {
            eprintln!("removed {} (left by an interrupted step)", leftover.display());
        }
    }
    let n = plan.steps.len();
    let mut status: Vec<Option<StepStatus>> = vec![None; n];
    for (i, step) in plan.steps.iter().enumerate() {
        if cache.lookup(step.kind, &step.key)?.is_some() {
            status[i] = Some(StepStatus::Cached);
        }
    }
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
    // One GPU, one model step at a time (each would hold its own CUDA context and
    // compete for memory); data, score and report steps run beside it on the CPU.
    let model_jobs = match options.compute.device {
        crate::backend::DeviceChoice::Cuda(_) => 1,
        crate::backend::DeviceChoice::Cpu => jobs,
    };
    let is_model_step =
        |kind: StepKind| matches!(kind, StepKind::Train | StepKind::Verify | StepKind::Attribute | StepKind::Erasure);
    // Data steps take seconds and are where bad data shows (labels, empty
    // splits, shortcut tokens already in the text): they go first, and no
    // model trains while one is still running or ready.
    let is_data_step = |kind: StepKind| matches!(kind, StepKind::Corpus | StepKind::Synth);
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| !is_data_step(plan.steps[i].kind));
    let mut consumers: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, step) in plan.steps.iter().enumerate() {
        for &j in &step.inputs {
            consumers[j].push(i);
        }
    }

    std::thread::scope(|scope| -> Result<(), CacheError> {
        let (done_tx, done_rx) = mpsc::channel::<(usize, StepStatus, Vec<String>)>();
        let mut running = 0usize;
        let mut running_models = 0usize;
        let mut running_data = 0usize;
        let mut started = vec![false; n];
        let mut stopped_children = false;
        let doomed = |s: &Option<StepStatus>| matches!(s, Some(StepStatus::Failed { .. } | StepStatus::Skipped { .. }));
        loop {
            // Settle steps whose inputs failed (plan order is topological)...
            for i in 0..n {
                if status[i].is_some() || started[i] {
                    continue;
                }
                let step = &plan.steps[i];
                let blocked = step.inputs.iter().find(|&&j| doomed(&status[j]));
                if let Some(&input) = blocked {
                    let input = &plan.steps[input].label;
                    status[i] = Some(StepStatus::Skipped { because: format!("input `{input}` did not complete") });
                    continue;
                }
                if options.cache_only && step.kind != StepKind::Report {
                    status[i] = Some(StepStatus::Skipped { because: "not in the cache (run `grid run` first)".into() });
                }
            }
            // ...and, backwards, steps whose every consumer is doomed: an
            // original model whose shortcut data all failed is never used. The
            // report takes whatever it can get, so it never dooms its inputs.
            for i in (0..n).rev() {
                if status[i].is_none()
                    && !started[i]
                    && !consumers[i].is_empty()
                    && consumers[i].iter().all(|&c| plan.steps[c].kind != StepKind::Report && doomed(&status[c]))
                {
                    status[i] =
                        Some(StepStatus::Skipped { because: "every step that would use it did not complete".into() });
                }
            }
            let ready = |i: usize, started: &[bool]| {
                status[i].is_none()
                    && !started[i]
                    && plan.steps[i]
                        .inputs
                        .iter()
                        .all(|&j| matches!(status[j], Some(StepStatus::Cached | StepStatus::Ran { .. })))
            };
            let data_pending =
                running_data > 0 || order.iter().any(|&i| is_data_step(plan.steps[i].kind) && ready(i, &started));
            // Then start what is ready, data steps first (nothing once stopped).
            let stopping = crate::interrupt::requested();
            for &i in &order {
                let step = &plan.steps[i];
                if stopping || !ready(i, &started) || running >= jobs {
                    continue;
                }
                if is_model_step(step.kind) && (running_models >= model_jobs || data_pending) {
                    continue;
                }
                started[i] = true;
                running += 1;
                running_models += usize::from(is_model_step(step.kind));
                running_data += usize::from(is_data_step(step.kind));
                let bar = multi.add(ProgressBar::new(0).with_style(bar_style()).with_prefix(step.label.clone()));
                bar.enable_steady_tick(Duration::from_millis(200));
                let tx = done_tx.clone();
                let compute = options.compute;
                let worker = options.worker.as_ref().filter(|_| jobs > 1 && is_model_step(step.kind));
                let label = step.label.clone();
                let log_lines =
                    options.verbosity >= Verbosity::Verbose || (options.verbosity == Verbosity::Normal && !terminal);
                scope.spawn(move || {
                    let log = move |line: String| {
                        if log_lines {
                            eprintln!("         {label}: {line}");
                        }
                    };
                    let (result, output) = match worker {
                        Some(w) => w.run(plan, cache, i, &log),
                        None => (run_one(plan, cache, i, compute, &bar, &log), Vec::new()),
                    };
                    bar.finish_and_clear();
                    let _ = tx.send((i, result, output));
                });
            }
            if running == 0 {
                break;
            }
            let (i, result, output) = loop {
                match done_rx.recv_timeout(Duration::from_millis(200)) {
                    Ok(done) => break done,
                    Err(mpsc::RecvTimeoutError::Timeout) if crate::interrupt::requested() && !stopped_children => {
                        crate::interrupt::stop_children();
                        stopped_children = true;
                        say("stopping: no step starts any more; waiting for the running ones to stop".into());
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(mpsc::RecvTimeoutError::Disconnected) => unreachable!("the scheduler holds a sender"),
                }
            };
            // A step stopped by the request did not fail: nothing is recorded.
            let result = match result {
                StepStatus::Failed { .. } if crate::interrupt::requested() => {
                    StepStatus::Skipped { because: INTERRUPTED.into() }
                }
                result => result,
            };
            running -= 1;
            let step = &plan.steps[i];
            running_models -= usize::from(is_model_step(step.kind));
            running_data -= usize::from(is_data_step(step.kind));
            match &result {
                StepStatus::Ran { seconds } => say(format!("     ran {} in {seconds:.1}s", step.label)),
                StepStatus::Cached => say(format!("  cached {} (computed by another process)", step.label)),
                StepStatus::Failed { error } => {
                    say(format!("  FAILED {}: {error}", step.label));
                    // For `grid status` / `grid show`; the run goes on without it.
                    if let Err(e) = cache.record_failure(step.kind, &step.key, &step.label, error, &output) {
                        say(format!("warning: the failure of {} was not recorded: {e}", step.label));
                    }
                }
                StepStatus::Skipped { .. } => {}
            }
            status[i] = Some(result);
        }
        Ok(())
    })?;

    let interrupted = crate::interrupt::requested();
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
        && matches!(outcome.records[report].status, StepStatus::Cached | StepStatus::Ran { .. })
    {
        let dir = cache.step_dir(StepKind::Report, &plan.steps[report].key);
        outcome.console = std::fs::read_to_string(dir.join(steps::report::CONSOLE)).ok();
        if let Some(reports) = &options.reports_dir {
            outcome.report_files = copy_report(&dir, &reports.join(&plan.grid_name))?;
        }
    }
    Ok(outcome)
}

/// Runs step `index` in this process (locks, re-checks the cache, publishes).
pub fn run_one(
    plan: &Plan,
    cache: &Cache,
    index: usize,
    compute: Compute,
    bar: &ProgressBar,
    log: &(dyn Fn(String) + Sync),
) -> StepStatus {
    let step = &plan.steps[index];
    let attempt = || -> anyhow::Result<StepStatus> {
        let _lock = cache.lock(step.kind, &step.key)?;
        match cache.entry(step.kind, &step.key)? {
            Entry::Valid(_) => return Ok(StepStatus::Cached),
            Entry::Missing => {}
            Entry::Damaged(damage) => {
                let aside = cache.set_aside(step.kind, &step.key)?;
                let moved = aside.map(|p| format!("; moved to {}", p.display())).unwrap_or_default();
                log(format!("cached result damaged ({damage}){moved}; computing it again"));
                eprintln!("warning: {}: cached result damaged ({damage}){moved}; computing it again", step.label);
            }
        }
        let started = Instant::now();
        let staging = cache.begin(step.kind, &step.key)?;
        let inputs = step.inputs.iter().map(|&j| cache.step_dir(plan.steps[j].kind, &plan.steps[j].key)).collect();
        let ctx = StepContext { inputs, compute, progress: bar, log };
        let result =
            catch_unwind(AssertUnwindSafe(|| steps::execute(&step.work, &ctx, &staging.dir))).unwrap_or_else(|panic| {
                let message = panic
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| panic.downcast_ref::<&str>().copied())
                    .unwrap_or("unknown panic");
                Err(anyhow::anyhow!("panicked: {message}"))
            });
        if let Err(e) = result {
            let _ = std::fs::remove_dir_all(&staging.dir);
            return Err(e);
        }
        let seconds = started.elapsed().as_secs_f64();
        let input_refs = step
            .inputs
            .iter()
            .map(|&j| InputRef {
                kind: plan.steps[j].kind,
                key: plan.steps[j].key.clone(),
                label: plan.steps[j].label.clone(),
            })
            .collect();
        cache.publish(staging, &step.label, &step.params, input_refs, seconds, &compute.to_string())?;
        Ok(StepStatus::Ran { seconds })
    };
    attempt().unwrap_or_else(|e| StepStatus::Failed { error: crate::errors::one_line(&e) })
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
