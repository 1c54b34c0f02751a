//! The `grid` command line: as thin as ripgrep's core crate. Arguments are
//! parsed here; everything else is a library call.
//!
//! Exit codes: 0 success, 1 a step failed, 2 bad usage or configuration, 130
//! stopped by Ctrl-C.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use crate::backend::Compute;
use crate::cache::Cache;
use crate::dag::executor::{self, Job, StepCommand, StepSettings};
use crate::dag::{self, Plan, PlanOptions, RunOptions, StepStatus, Verbosity};
use crate::spec::Grid;

#[derive(Debug, Parser)]
#[command(
    name = "grid",
    version,
    about = "Declarative experiment grids for evaluating input-salience methods on shortcut-trained classifiers"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Plan the grid, run every step the cache lacks, write the reports.
    Run {
        #[command(flatten)]
        common: Common,
        /// Where steps run: `local` (this machine), or `slurm` (every missing
        /// step as a task of a Slurm job array over the shared cache; see the
        /// grid's `[slurm]` table).
        #[arg(long, default_value = "local")]
        executor: ExecutorChoice,
        /// With `--executor slurm`: follow the jobs until they end, then write
        /// the reports (without it, `grid run` returns after submitting).
        #[arg(long)]
        wait: bool,
    },
    /// Show every step: cached, or why it will run.
    Plan {
        #[command(flatten)]
        common: Common,
        /// One JSON object per step (label, kind, key, state and its details), as an array.
        #[arg(long)]
        json: bool,
    },
    /// Where every step stands: cached, running (another process holds its
    /// lock), failed (the error and the log of the last attempt), damaged, or
    /// missing (and why it would run).
    Status {
        #[command(flatten)]
        common: Common,
        /// One JSON object per step, as an array.
        #[arg(long)]
        json: bool,
    },
    /// Everything about one step: its state, parameters, inputs, files, and
    /// why it would run.
    Show {
        #[command(flatten)]
        common: Common,
        /// The step's label (`train/sst2/st/lstm`) or the start of its key
        /// (at least 6 hex digits, as `grid plan` prints 12).
        step: String,
        /// As one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Re-render the tables from the cache only; computes nothing else.
    Report {
        #[command(flatten)]
        common: Common,
        /// Published numbers to set beside ours, cell by cell, with which
        /// findings hold (e.g. experiments/reference/bastings2022_precision_rank.csv).
        /// Repeatable.
        #[arg(long)]
        compare: Vec<PathBuf>,
        /// Compare our dataset OURS with the published PUBLISHED, e.g.
        /// `--compare-as generated=sst2`. Repeatable.
        #[arg(long, value_name = "OURS=PUBLISHED")]
        compare_as: Vec<String>,
    },
    /// Time attribution methods on the grid's trained shortcut models (from the
    /// cache): attributions per second, with date, commit and machine.
    Bench {
        #[command(flatten)]
        common: Common,
        /// Method configs to time, comma-separated (default: the grid's own).
        #[arg(long, value_delimiter = ',')]
        methods: Option<Vec<String>>,
        /// Timed examples per model and method.
        #[arg(long, default_value_t = 64)]
        examples: usize,
        /// Only models whose train step label contains this, e.g. `/st/`.
        #[arg(long)]
        only: Option<String>,
        /// Also write the rows and their context as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Overrides the grid's `internal_batch_size` (IG steps / SmoothGrad copies per pass).
        #[arg(long)]
        internal_batch_size: Option<usize>,
        /// Overrides the grid's `perturbations_per_eval` (LIME / KernelSHAP / occlusion).
        #[arg(long)]
        perturbations_per_eval: Option<usize>,
        /// Write every timed example (token ids, prediction, scores) as JSON lines
        /// here, for `scripts/captum_bench.py` to explain the same inputs.
        #[arg(long)]
        dump: Option<PathBuf>,
        /// Instead of methods: a roofline of the dense products (GEMMs) of the
        /// grid's models, grid's path beside single matmuls, torch's `F.linear`
        /// (when `--python` has torch) and the machine's measured ceiling.
        #[arg(long)]
        gemm: bool,
        /// With `--gemm`: tokens per example (padded) in every batch.
        #[arg(long, default_value_t = 32, requires = "gemm")]
        tokens: usize,
        /// With `--gemm`: the Python whose torch is timed on the same shapes;
        /// `none` skips it.
        #[arg(long, default_value = "python3", requires = "gemm")]
        python: String,
    },
    /// Remove cached steps that none of the given grids plans (as `grid run`
    /// would plan them, under either precision), and/or that finished before
    /// `--older-than`; compiled GPU kernels stay unless `--kernels` is given.
    /// Steps being computed are left alone, and so is every frozen grid text
    /// a run used in the last seven days.
    Gc {
        /// Grid files whose steps are kept.
        #[arg(required_unless_present = "older_than")]
        grids: Vec<PathBuf>,
        /// Also remove steps finished before this date (`2026-11-01`, UTC) or
        /// this many days ago (`30d`), whether a grid plans them or not.
        #[arg(long, value_name = "DATE|Nd")]
        older_than: Option<String>,
        /// Cache folder.
        #[arg(long, default_value = "cache", env = "GRID_CACHE")]
        cache: PathBuf,
        /// Folder relative data paths resolve against (default: each grid file's folder).
        #[arg(long, env = "GRID_DATA_ROOT")]
        data_root: Option<PathBuf>,
        /// Overrides applied to every grid, as for `grid run` (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Say what would be removed; remove nothing.
        #[arg(long)]
        dry_run: bool,
        /// Also remove `<cache>/kernels/` (compiled GPU kernels and autotune results).
        #[arg(long)]
        kernels: bool,
    },
    /// Lu et al.'s crowd study: export the tasks for people, import their answers.
    Crowd {
        #[command(subcommand)]
        command: CrowdCommand,
    },
    /// Run the one step with this key (what `run` starts for each model step
    /// when `--jobs` > 1; also the unit of work for a cluster scheduler).
    #[command(hide = true)]
    Step {
        #[command(flatten)]
        common: Common,
        /// The step's key (64 hex digits, as `grid plan` shows its first 12);
        /// repeatable: the steps run one after the other.
        #[arg(long, required = true)]
        key: Vec<String>,
    },
}

/// `grid run --executor`.
#[derive(Debug, Subcommand)]
enum CrowdCommand {
    /// Write a study from the grid's cached attributions: `study.json`,
    /// `questionnaire.html` (self-contained, one task at a time) and
    /// `tasks.csv` (a platform's import layout), with attention checks.
    Export {
        #[command(flatten)]
        common: Common,
        /// Folder for the study (default: `<reports>/<grid name>/crowd/study`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Models to explain, comma-separated (default: every model).
        #[arg(long, value_delimiter = ',')]
        models: Vec<String>,
        /// Method configs, comma-separated (default: the grid's).
        #[arg(long, value_delimiter = ',')]
        methods: Vec<String>,
        /// Top-k settings, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "5,10,20,30,40")]
        k: Vec<usize>,
        /// Examples per model cell, balanced over the labels.
        #[arg(long, default_value_t = 100)]
        examples: usize,
        /// Answers collected per task.
        #[arg(long, default_value_t = 5)]
        answers: usize,
        /// Attention checks per batch.
        #[arg(long, default_value_t = 2)]
        checks: usize,
        /// Salience tasks per batch at most: what one person answers (Lu et al.: 100).
        #[arg(long, default_value_t = 100)]
        batch_size: usize,
        /// Seed of the example choice and the dealing into batches.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Label names, comma-separated (default: the dataset's `label_names`).
        #[arg(long, value_delimiter = ',')]
        labels: Vec<String>,
    },
    /// Answer the study with simulated workers: the explained model reads only
    /// the shown words and draws a label from its softmax ("don't know" near
    /// chance). Writes an answers file for `grid crowd import`, which labels
    /// every table as simulated.
    Simulate {
        #[command(flatten)]
        common: Common,
        /// The study (its folder or `study.json`; default: where export writes it).
        #[arg(long)]
        study: Option<PathBuf>,
        /// The answers file to write (default: `<study folder>/../simulated-answers.csv`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Seed of the simulated workers' draws.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// "Don't know" when the drawn label's probability is below 1/C + this.
        #[arg(long, default_value_t = 0.1)]
        unsure_margin: f64,
    },
    /// Score a platform's answers (CSV: worker, task, answer) against the
    /// study: Lu et al.'s accuracy per k, score, Flips and Aids, and the
    /// attention checks per worker.
    Import {
        #[command(flatten)]
        common: Common,
        /// The answers file.
        answers: PathBuf,
        /// The study (its folder or `study.json`; default: where export writes it).
        #[arg(long)]
        study: Option<PathBuf>,
        /// Leave out every answer of a worker who failed an attention check.
        #[arg(long)]
        exclude_failed_checks: bool,
        /// Lu et al.'s published accuracies to set beside ours, with which
        /// findings hold (experiments/reference/lu2024_crowd_accuracy.csv).
        #[arg(long)]
        compare: Option<PathBuf>,
        /// Compare our dataset OURS with the published PUBLISHED, e.g. `sst2=imdb`.
        #[arg(long, value_name = "OURS=PUBLISHED")]
        compare_as: Vec<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ExecutorChoice {
    Local,
    Slurm,
}

#[derive(Debug, Args)]
struct Common {
    /// The grid file (TOML).
    grid: PathBuf,
    /// Cache folder.
    #[arg(long, default_value = "cache", env = "GRID_CACHE")]
    cache: PathBuf,
    /// Folder the report tables are written to (under `<grid name>/`).
    #[arg(long, default_value = "reports")]
    reports: PathBuf,
    /// Folder relative data paths resolve against (default: the grid file's folder).
    #[arg(long, env = "GRID_DATA_ROOT")]
    data_root: Option<PathBuf>,
    /// `auto`, `cpu`, or `cuda` / `cuda:N` in builds with the `cuda` or
    /// `libtorch` feature. `auto`: the GPU when this build has a GPU backend,
    /// the machine a GPU, and the grid a model large enough to pay for it
    /// (`backend::placement`), else the CPU; the run says which and why.
    #[arg(long, default_value = "auto")]
    device: String,
    /// What computes: `flex` (burn's CPU backend), `cubecl` (burn-cuda, feature
    /// `cuda`) or `libtorch` (PyTorch's kernels, CPU or CUDA, feature `libtorch`).
    /// Default: flex on CPU; on CUDA libtorch when built in, else cubecl.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// `f32`; `bf16-mixed` with `--backend libtorch` (f32 weights and
    /// optimizer state, bf16 products and attention inside the fused blocks, as
    /// PyTorch's autocast); or `bf16` on CUDA (bf16 weights and activations).
    #[arg(long, default_value = "f32")]
    precision: String,
    /// Padding of batch shapes before they reach a model: `exact`, or a length
    /// multiple N (lengths to multiples of N, batches to powers of two, so a GPU
    /// compiles kernels for a handful of shapes). Default: exact on CPU, 16 on CUDA.
    #[arg(long, default_value = "auto")]
    shape_buckets: String,
    /// CUDA: how hard cubecl searches for the fastest kernel of each new shape
    /// (minimal, balanced, extensive, full). Results are kept under
    /// `<cache>/kernels/`, so each shape is tuned once per device.
    #[arg(long, default_value = "balanced")]
    autotune: String,
    /// Changes a key of the grid file, as if written there (repeatable):
    /// `models.bert.checkpoint=DIR`, `datasets.sst2.limits.train=8000`. An
    /// entry of `[[models]]` or `[[datasets]]` is named by its `name`.
    /// `~KEY` deletes a key or an entry: `~datasets.imdb`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
    /// Workers only: plan from this frozen grid text (the run's, in
    /// `<cache>/grids/`), read as if it were GRID, instead of the file.
    #[arg(long, hide = true, value_name = "FILE")]
    frozen: Option<PathBuf>,
    /// Steps run at the same time (default: the number of CPU cores).
    #[arg(long, short = 'j')]
    jobs: Option<usize>,
    /// CUDA: model steps (train, verify, attribute, erasure) sharing the GPU at
    /// once, each in its own process and CUDA context. Small models are bound by
    /// kernel-launch latency and leave the GPU idle (the quickstart's showed 0%
    /// utilisation on an H200), so a few at once fill it; large ones want 1.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    gpu_jobs: u16,
    /// Print only the tables and errors.
    #[arg(long, short = 'q', conflicts_with = "verbose")]
    quiet: bool,
    /// Print more about each step.
    #[arg(long, short = 'v')]
    verbose: bool,
}

/// Parses arguments, runs, and maps the outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(Failure::Usage(e)) => {
            eprintln!("error: {}", crate::errors::one_line(&e));
            ExitCode::from(2)
        }
        Err(Failure::Runtime(e)) => {
            eprintln!("error: {}", crate::errors::one_line(&e));
            ExitCode::from(1)
        }
    }
}

enum Failure {
    /// Bad arguments or configuration: exit 2.
    Usage(anyhow::Error),
    /// Something broke while running: exit 1.
    Runtime(anyhow::Error),
}

fn usage<E: Into<anyhow::Error>>(e: E) -> Failure {
    Failure::Usage(e.into())
}
fn runtime<E: Into<anyhow::Error>>(e: E) -> Failure {
    Failure::Runtime(e.into())
}

fn run(cli: Cli) -> Result<ExitCode, Failure> {
    let mut comparisons: (Vec<PathBuf>, Vec<(String, String)>) = (Vec::new(), Vec::new());
    let (command, common, key) = match cli.command {
        Command::Bench { common, gemm: true, only, json, internal_batch_size, tokens, python, .. } => {
            let options = crate::bench::gemm::GemmOptions {
                tokens: tokens.max(1),
                attribution_batch: internal_batch_size.unwrap_or(GEMM_ATTRIBUTION_BATCH).max(1),
                filter: only,
                python: (python != "none").then_some(python),
            };
            return bench_gemm(common, options, json);
        }
        Command::Bench {
            common,
            methods,
            examples,
            only,
            json,
            dump,
            internal_batch_size,
            perturbations_per_eval,
            ..
        } => {
            let knobs = (internal_batch_size, perturbations_per_eval);
            return bench(common, methods, examples, only, json, dump, knobs);
        }
        Command::Gc { grids, older_than, cache, data_root, set, dry_run, kernels } => {
            let older_than = older_than
                .map(|text| cutoff(&text).map_err(|e| usage(anyhow::anyhow!("--older-than {text}: {e}"))))
                .transpose()?;
            return gc(&grids, cache, data_root, set, crate::cache::gc::GcOptions { dry_run, kernels, older_than });
        }
        Command::Run { common, executor: ExecutorChoice::Slurm, wait } => return run_on_slurm(common, wait),
        Command::Run { common, executor: ExecutorChoice::Local, wait } => {
            if wait {
                return Err(usage(anyhow::anyhow!("--wait goes with --executor slurm")));
            }
            ("run", common, None)
        }
        Command::Plan { common, json: false } => ("plan", common, None),
        Command::Plan { common, json: true } => {
            let (cache, plan) = plan_of(&common, compute_of(&common)?)?;
            let lines = dag::status::lines(&plan, &cache).map_err(runtime)?;
            println!("{}", serde_json::to_string_pretty(&lines).map_err(runtime)?);
            return Ok(ExitCode::SUCCESS);
        }
        Command::Status { common, json } => {
            let (cache, plan) = plan_of(&common, compute_of(&common)?)?;
            let lines = dag::status::lines(&plan, &cache).map_err(runtime)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&lines).map_err(runtime)?);
            } else {
                print!("{}", dag::status::render_lines(&lines));
            }
            return Ok(ExitCode::SUCCESS);
        }
        Command::Show { common, step, json } => {
            let (cache, plan) = plan_of(&common, compute_of(&common)?)?;
            let index = dag::status::find(&plan, &step).map_err(|e| usage(anyhow::anyhow!(e)))?;
            let detail = dag::status::detail(&plan, &cache, index).map_err(runtime)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&detail).map_err(runtime)?);
            } else {
                print!("{}", dag::status::render_detail(&detail));
            }
            return Ok(ExitCode::SUCCESS);
        }
        Command::Report { common, compare, compare_as } => {
            let aliases = compare_as
                .iter()
                .map(|a| crate::report::compare::parse_alias(a).map_err(|e| usage(anyhow::anyhow!("--compare-as {e}"))))
                .collect::<Result<Vec<_>, _>>()?;
            comparisons = (compare, aliases);
            ("report", common, None)
        }
        Command::Step { common, key } => ("step", common, Some(key)),
        Command::Crowd { command } => return crowd(command),
    };
    let (compute, placed) = compute_placed(&common)?;
    if command == "run" || command == "step" {
        compute.check().map_err(|e| usage(anyhow::anyhow!(e)))?;
    }
    let (grid, cache, plan) = grid_and_plan_of(&common, compute)?;
    let verbosity = verbosity_of(&common);
    if let Some(why) = placed
        && verbosity > Verbosity::Quiet
        && (command == "run" || command == "plan")
    {
        eprintln!("device: {} (--device auto: {why})", compute.device);
    }
    if let Some(choice) = grid_kernels::blas::auto_choice()
        && verbosity > Verbosity::Quiet
        && (command == "run" || command == "plan")
    {
        eprintln!("note: {}", choice.describe());
    }
    if command == "run" || command == "step" {
        prepare_kernel_cache(&common, compute, command == "run" && verbosity > Verbosity::Quiet)?;
    }
    if verbosity > Verbosity::Quiet && key.is_none() {
        for note in &plan.skipped {
            eprintln!("note: not planned: {note}");
        }
    }
    if command == "plan" {
        let lines = dag::status::lines(&plan, &cache).map_err(runtime)?;
        print!("{}", dag::status::render_plan(&lines));
        return Ok(ExitCode::SUCCESS);
    }
    if let Some(keys) = key {
        return run_steps(&plan, &cache, &keys, &common.grid, compute, verbosity);
    }
    if command == "run" {
        dag::checkpoints::download(&plan, &cache, verbosity);
    }
    let jobs = common.jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    // Workers plan from the text planned here, whatever happens to the file.
    let frozen = cache.freeze_grid(&grid.text).map_err(runtime)?;
    let worker = StepCommand::of_current_exe(&step_settings(&common, compute, verbosity, Some(frozen)));
    let options = RunOptions {
        jobs,
        gpu_jobs: usize::from(common.gpu_jobs),
        compute,
        verbosity,
        reports_dir: Some(common.reports.clone()),
        cache_only: command == "report",
        worker,
    };
    let started = std::time::Instant::now();
    if command == "run" {
        crate::interrupt::install();
    }
    let outcome = dag::execute(&plan, &cache, &options).map_err(runtime)?;
    if outcome.interrupted {
        let unfinished = outcome.failures().count();
        eprintln!(
            "interrupted after {:.1}s: {} steps ran, {} were cached, {unfinished} did not run or finish; \
             `grid run` again computes only what is missing",
            started.elapsed().as_secs_f64(),
            outcome.executed().count(),
            outcome.cached()
        );
        return Ok(ExitCode::from(130));
    }
    finish_run(&plan, &cache, &common, &outcome, started, verbosity, command, &comparisons)
}

/// Prints the tables and the run's summary, checks verification, sets our
/// numbers beside published ones (`grid report --compare`), and maps what
/// failed to the exit code.
#[allow(clippy::too_many_arguments)]
fn finish_run(
    plan: &Plan,
    cache: &Cache,
    common: &Common,
    outcome: &dag::RunOutcome,
    started: std::time::Instant,
    verbosity: Verbosity,
    command: &str,
    comparisons: &(Vec<PathBuf>, Vec<(String, String)>),
) -> Result<ExitCode, Failure> {
    if let Some(console) = &outcome.console {
        println!("{console}");
    }
    if verbosity > Verbosity::Quiet {
        let ran = outcome.executed().count();
        let reused = match outcome.reused() {
            0 => String::new(),
            n => format!(" {n} reused (the same work was cached under another key),"),
        };
        eprintln!(
            "{} steps: {ran} ran,{reused} {} cached, {} failed or skipped ({:.1}s)",
            outcome.records.len(),
            outcome.cached(),
            outcome.failures().count(),
            started.elapsed().as_secs_f64()
        );
        if let Some(first) = outcome.report_files.first() {
            eprintln!("reports written to {}", first.parent().unwrap_or(Path::new(".")).display());
        }
    }
    for (label, verification) in dag::status::verifications(plan, cache) {
        if !verification.passed {
            eprintln!("warning: {label} failed verification: {}", verification.failures.join("; "));
        }
        if !verification.close_calls.is_empty() {
            eprintln!("note: {label} is a close call: {}", verification.close_calls.join("; "));
        }
    }
    if !comparisons.0.is_empty() {
        let reports = common.reports.join(&plan.grid_name);
        let print = |written: dag::compare::Written| {
            println!("{}", written.markdown);
            eprintln!("comparison written to {} and {}", written.markdown_path.display(), written.csv_path.display());
        };
        dag::compare::compare_with_published(plan, cache, &reports, &comparisons.0, &comparisons.1, print)
            .map_err(|e| if e.is_usage() { usage(e) } else { runtime(e) })?;
    }
    let failures: Vec<_> = outcome.failures().collect();
    if failures.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    for f in failures.iter().take(20) {
        match &f.status {
            StepStatus::Failed { error } => eprintln!("error: {} failed: {error}", f.label),
            StepStatus::Skipped { because } => eprintln!("error: {} skipped: {because}", f.label),
            _ => {}
        }
    }
    Ok(ExitCode::from(if command == "report" { 2 } else { 1 }))
}

fn verbosity_of(common: &Common) -> Verbosity {
    if common.quiet {
        Verbosity::Quiet
    } else if common.verbose {
        Verbosity::Verbose
    } else {
        Verbosity::Normal
    }
}

fn load_grid(common: &Common) -> Result<Grid, Failure> {
    match &common.frozen {
        Some(_) if !common.set.is_empty() => {
            Err(usage(anyhow::anyhow!("--frozen takes no --set: the frozen text holds the run's overrides")))
        }
        Some(frozen) => Grid::load_frozen(frozen, &common.grid).map_err(usage),
        None => Grid::load_with(&common.grid, &overrides(&common.set)?).map_err(usage),
    }
}

/// `grid step --key K…`: computes the named steps in this process, one after
/// the other. Under a Slurm task (`GRID_STEP_LOG` set by its script) each
/// failure is recorded with the task's log, since no parent is there to do it.
fn run_steps(
    plan: &Plan,
    cache: &Cache,
    keys: &[String],
    grid: &Path,
    compute: Compute,
    verbosity: Verbosity,
) -> Result<ExitCode, Failure> {
    let mut indices = Vec::with_capacity(keys.len());
    for key in keys {
        let index = plan.steps.iter().position(|s| s.key.as_str() == key).ok_or_else(|| {
            usage(anyhow::anyhow!(
                "no step of {} has key {key} (a worker of a run whose `grid` binary or grid file changed \
                 meanwhile plans other keys: run the grid again)",
                grid.display()
            ))
        })?;
        indices.push(index);
    }
    let task_log = std::env::var_os("GRID_STEP_LOG").map(PathBuf::from);
    let bar = indicatif::ProgressBar::hidden();
    let mut failed = Vec::new();
    for index in indices {
        let step = &plan.steps[index];
        // Under Slurm a task starts once its input tasks ended, however they
        // ended: a step whose inputs are not there is skipped, not failed.
        let missing = step
            .inputs
            .iter()
            .map(|&j| &plan.steps[j])
            .find(|input| !matches!(cache.lookup(input.kind, &input.key), Ok(Some(_))));
        if let Some(input) = missing {
            eprintln!("skipped {}: input `{}` did not complete", step.label, input.label);
            continue;
        }
        let label = step.label.clone();
        // A parent labels a lone step's lines itself; a batch names each step.
        let log = |line: String| match verbosity {
            Verbosity::Quiet => {}
            _ if keys.len() > 1 => eprintln!("{label}: {line}"),
            _ => eprintln!("{line}"),
        };
        let job = Job { plan, cache, index, progress: &bar, log: &log };
        // One step at a time in this process: on rayon's pool (see `InProcess`).
        let status =
            crate::backend::on_worker_thread(compute.device, || executor::in_process::compute_step(&job, compute));
        match status {
            StepStatus::Failed { error } => {
                if let Some(task_log) = &task_log {
                    crate::dag::slurm::task_failed(plan, cache, index, &error, task_log);
                }
                failed.push((step.label.as_str(), error));
            }
            StepStatus::Cached if keys.len() == 1 => eprintln!("{}", executor::worker::FOUND_CACHED),
            StepStatus::Ran { seconds } if keys.len() > 1 && verbosity > Verbosity::Quiet => {
                eprintln!("ran {} in {seconds:.1}s", step.label)
            }
            StepStatus::Reused { from } if keys.len() > 1 && verbosity > Verbosity::Quiet => {
                eprintln!("reused {}: {}", step.label, crate::dag::run::reused_from(&from))
            }
            _ => {}
        }
    }
    match failed.as_slice() {
        [] => Ok(ExitCode::SUCCESS),
        [(_, error)] if keys.len() == 1 => Err(runtime(anyhow::anyhow!(error.clone()))),
        _ => {
            let each: Vec<String> = failed.iter().map(|(label, error)| format!("{label}: {error}")).collect();
            Err(runtime(anyhow::anyhow!("{} of {} steps failed: {}", failed.len(), keys.len(), each.join("; "))))
        }
    }
}

/// `grid run --executor slurm [--wait]`.
fn run_on_slurm(common: Common, wait: bool) -> Result<ExitCode, Failure> {
    use crate::dag::slurm::{self, SlurmOptions};
    let compute = compute_of(&common)?;
    compute.check().map_err(|e| usage(anyhow::anyhow!(e)))?;
    let (grid, cache, plan) = grid_and_plan_of(&common, compute)?;
    let verbosity = verbosity_of(&common);
    // Tasks may start hours later: they plan from the text planned here.
    let frozen = cache.freeze_grid(&grid.text).map_err(runtime)?;
    let mut settings = step_settings(&common, compute, verbosity, Some(frozen));
    // Tasks may start in another folder: every path absolute.
    settings.grid = slurm::absolute(&settings.grid);
    settings.cache = slurm::absolute(&settings.cache);
    settings.frozen = settings.frozen.as_deref().map(slurm::absolute);
    settings.data_root = settings.data_root.as_deref().map(slurm::absolute);
    let command = StepCommand::of_current_exe(&settings)
        .ok_or_else(|| runtime(anyhow::anyhow!("cannot find this `grid` executable for the Slurm tasks to run")))?;
    prepare_kernel_cache(&common, compute, verbosity > Verbosity::Quiet)?;
    // Compute nodes often cannot reach the Hub: checkpoints come first, here.
    dag::checkpoints::download(&plan, &cache, verbosity);
    let gpu = matches!(compute.device, crate::backend::DeviceChoice::Cuda(_));
    let options = SlurmOptions { command, resources: &grid.slurm, gpu, verbosity };
    let submission = slurm::submit(&plan, &cache, &options).map_err(runtime)?;
    if verbosity > Verbosity::Quiet {
        for array in &submission.arrays {
            eprintln!("submitted job {} ({} steps of {})", array.job, array.steps, array.class.name());
        }
        let logs = slurm::queued::slurm_dir(&cache).join("logs");
        eprintln!(
            "{} steps submitted in {} job arrays, {} already queued or running, {} cached; task logs in {}",
            submission.submitted_steps(),
            submission.arrays.len(),
            submission.in_flight,
            submission.pending.iter().filter(|p| p.is_none()).count(),
            logs.display()
        );
    }
    if !wait {
        return Ok(ExitCode::SUCCESS);
    }
    crate::interrupt::install();
    let started = std::time::Instant::now();
    let outcome = slurm::wait(&plan, &cache, &submission, verbosity, Some(&common.reports)).map_err(runtime)?;
    if outcome.interrupted {
        eprintln!("stopped following the jobs; they go on (`grid status` shows them, `scancel` stops them)");
        return Ok(ExitCode::from(130));
    }
    finish_run(&plan, &cache, &common, &outcome, started, verbosity, "run", &(Vec::new(), Vec::new()))
}

/// The options a `grid step` worker of this command plans with: the run's
/// settings, its device as resolved here (a worker does not place the grid
/// again).
fn step_settings(common: &Common, compute: Compute, verbosity: Verbosity, frozen: Option<PathBuf>) -> StepSettings {
    StepSettings {
        frozen,
        grid: common.grid.clone(),
        cache: common.cache.clone(),
        data_root: common.data_root.clone(),
        device: compute.device.to_string(),
        backend: common.backend.clone(),
        overrides: common.set.clone(),
        precision: common.precision.clone(),
        shape_buckets: common.shape_buckets.clone(),
        autotune: common.autotune.clone(),
        quiet: verbosity == Verbosity::Quiet,
    }
}

/// `--device`, `--backend`, `--precision` and `--shape-buckets`.
fn compute_of(common: &Common) -> Result<Compute, Failure> {
    compute_placed(common).map(|(compute, _)| compute)
}

/// [`compute_of`], and for `--device auto` why it chose the device.
fn compute_placed(common: &Common) -> Result<(Compute, Option<String>), Failure> {
    let (device, why) = match common.device.as_str() {
        "auto" => {
            use crate::backend::placement;
            let gpu = placement::gpu_available();
            // With a GPU to choose, the grid's models and the rates its cache
            // measured for them (without one, no planning twice).
            let models = if gpu.is_ok() {
                let precision =
                    common.precision.parse().map_err(|e: String| usage(anyhow::anyhow!("--precision: {e}")))?;
                let grid = load_grid(common)?;
                let cache = Cache::open(&common.cache).map_err(runtime)?;
                let options = PlanOptions { data_root: common.data_root.clone(), precision };
                let plan = dag::plan(&grid, &cache, &options).map_err(usage)?;
                dag::placement::models(&plan, &cache)
            } else {
                Vec::new()
            };
            let placed = placement::auto_device(&models, gpu);
            (placed.device, Some(placed.why))
        }
        device => (device.parse().map_err(|e: String| usage(anyhow::anyhow!("--device: {e}")))?, None),
    };
    compute_on(common, device).map(|compute| (compute, why))
}

fn compute_on(common: &Common, device: crate::backend::DeviceChoice) -> Result<Compute, Failure> {
    let precision = common.precision.parse().map_err(|e: String| usage(anyhow::anyhow!("--precision: {e}")))?;
    let backend = match common.backend.as_str() {
        "auto" => crate::backend::BackendKind::default_for(device),
        name => name.parse().map_err(|e: String| usage(anyhow::anyhow!("--backend: {e}")))?,
    };
    let mut compute = Compute::with_backend(backend, device, precision);
    // A `GRID_BLAS` that does not load fails here, before any step runs,
    // rather than as a silent fall-back to `gemm` in every step.
    grid_kernels::blas::active().map_err(|e| usage(anyhow::anyhow!(e)))?;
    if common.shape_buckets != "auto" {
        compute.buckets =
            common.shape_buckets.parse().map_err(|e: String| usage(anyhow::anyhow!("--shape-buckets: {e}")))?;
    }
    Ok(compute)
}

/// On cubecl, points it at the cache's kernel folder for this device before
/// any GPU client exists, and (`announce`) says so when the folder is new: the
/// first run on a device spends its first minutes compiling kernels.
fn prepare_kernel_cache(common: &Common, compute: Compute, announce: bool) -> Result<(), Failure> {
    #[cfg(feature = "cuda")]
    use crate::backend::kernel_cache;
    use crate::backend::kernel_cache::AutotuneLevel;
    let level: AutotuneLevel =
        common.autotune.parse().map_err(|e: String| usage(anyhow::anyhow!("--autotune: {e}")))?;
    let (crate::backend::BackendKind::Cubecl, crate::backend::DeviceChoice::Cuda(_index)) =
        (compute.backend, compute.device)
    else {
        return Ok(());
    };
    #[cfg(feature = "cuda")]
    {
        let tag = crate::backend::cuda_driver::device_tag(_index)
            .map_err(|e| runtime(anyhow::anyhow!("--device cuda: {e}")))?;
        let dir = kernel_cache::folder(&common.cache, "cuda", &tag);
        if announce && kernel_cache::is_cold(&dir) {
            eprintln!(
                "compiling GPU kernels for {tag} into {}: the first run on a device spends its first minutes \
                 on this; later runs, steps and nodes sharing the cache reuse them",
                dir.display()
            );
        }
        kernel_cache::configure_cubecl(&dir, level).map_err(|e| runtime(anyhow::anyhow!(e)))?;
    }
    #[cfg(not(feature = "cuda"))]
    let _ = (level, announce); // `compute.check()` has already refused CUDA here.
    Ok(())
}

/// The `--set KEY=VALUE` arguments, parsed.
fn overrides(set: &[String]) -> Result<Vec<crate::spec::overrides::Override>, Failure> {
    set.iter()
        .map(|s| s.parse::<crate::spec::overrides::Override>())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| usage(anyhow::anyhow!(e)))
}

fn crowd(command: CrowdCommand) -> Result<ExitCode, Failure> {
    use crate::crowd::{export, import, run, tables};
    let default_dir = |common: &Common, grid_name: &str| common.reports.join(grid_name).join("crowd").join("study");
    match command {
        CrowdCommand::Export {
            common,
            out,
            models,
            methods,
            k,
            examples,
            answers,
            checks,
            batch_size,
            seed,
            labels,
        } => {
            let (grid, cache, plan) = grid_and_plan_of(&common, compute_of(&common)?)?;
            let out = out.unwrap_or_else(|| default_dir(&common, &grid.name));
            let selection = export::Selection { models, methods };
            let asked = export::CliExport { ks: k, examples, answers, checks, batch_size, seed };
            let (study, files) =
                run::export_study(&grid, &plan, &cache, &selection, &asked, &labels, &out).map_err(usage)?;
            let salience = study.salience_tasks().count();
            let per_example = (study.methods.len() * study.ks.len()).max(1);
            let largest = study.batches.iter().map(Vec::len).max().unwrap_or(0);
            println!(
                "{salience} tasks ({} examples × {} methods × {} k), {answers} answers each, dealt into {} batches of at most {largest} tasks (with {checks} attention checks each):",
                salience / per_example,
                study.methods.len(),
                study.ks.len(),
                study.batches.len(),
            );
            for file in files {
                println!("  {}", file.display());
            }
            Ok(ExitCode::SUCCESS)
        }
        CrowdCommand::Simulate { common, study, out, seed, unsure_margin } => {
            let compute = compute_of(&common)?;
            let (grid, cache, plan) = grid_and_plan_of(&common, compute)?;
            let study_path = study.unwrap_or_else(|| default_dir(&common, &grid.name));
            let study = export::read_study(&study_path).map_err(usage)?;
            let models = crate::crowd::simulate::model_dirs(&plan, &cache, &study).map_err(usage)?;
            let options = crate::crowd::simulate::SimulateOptions { seed, unsure_margin };
            let csv = crate::crowd::simulate::simulate(&study, &models, compute, options).map_err(runtime)?;
            let out =
                out.unwrap_or_else(|| common.reports.join(&grid.name).join("crowd").join("simulated-answers.csv"));
            if let Some(dir) = out.parent() {
                std::fs::create_dir_all(dir).map_err(runtime)?;
            }
            std::fs::write(&out, csv).map_err(|e| runtime(anyhow::anyhow!("writing {}: {e}", out.display())))?;
            println!("simulated answers: {}", out.display());
            println!("score them with: grid crowd import {} {}", common.grid.display(), out.display());
            Ok(ExitCode::SUCCESS)
        }
        CrowdCommand::Import { common, answers, study, exclude_failed_checks, compare, compare_as } => {
            let aliases = compare_as
                .iter()
                .map(|a| crate::report::compare::parse_alias(a).map_err(|e| usage(anyhow::anyhow!("--compare-as {e}"))))
                .collect::<Result<Vec<_>, _>>()?;
            let grid = load_grid(&common)?;
            let cache = Cache::open(&common.cache).map_err(runtime)?;
            let study = study.unwrap_or_else(|| default_dir(&common, &grid.name));
            let options = import::ImportOptions { exclude_failed_checks };
            let outcome = run::import_answers(&cache, &study, &answers, options, &common.reports).map_err(usage)?;
            let imported = &outcome.imported;
            for warning in &imported.warnings {
                eprintln!("warning: {warning}");
            }
            for cell in &imported.cells {
                println!("{}", tables::accuracy_markdown(imported, cell));
            }
            // A long list of workers goes to its file only.
            if imported.workers.len() <= 20 {
                println!("{}", tables::workers_markdown(imported));
            } else {
                let failed = imported.workers.iter().filter(|w| w.checks_failed > 0).count();
                println!(
                    "{} workers, {failed} of them failed an attention check (per worker: crowd_workers.md)\n",
                    imported.workers.len()
                );
            }
            if let Some(path) = compare {
                let published = crate::crowd::compare::read_published(&path).map_err(usage)?;
                let comparisons = crate::crowd::compare::compare(imported, &published, &aliases);
                let text = crate::crowd::compare::render_markdown(imported, &comparisons, &path);
                println!("{text}");
                let dir = common.reports.join(&imported.grid).join("crowd");
                let file = dir.join("compare_lu2024.md");
                std::fs::write(&file, text).map_err(|e| runtime(anyhow::anyhow!("writing {}: {e}", file.display())))?;
            }
            eprintln!(
                "{} answers from {} workers{}; tables in {}",
                imported.answers,
                imported.workers.len(),
                if outcome.cached {
                    " (cached: the same study and answers were imported before)".to_string()
                } else if outcome.cells_cached > 0 {
                    format!(
                        " ({} model cells scored, {} unchanged since an earlier import and taken from the cache)",
                        outcome.cells_scored, outcome.cells_cached
                    )
                } else {
                    String::new()
                },
                outcome.files.first().and_then(|f| f.parent()).map(|p| p.display().to_string()).unwrap_or_default()
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// The grid file, planned against its cache.
fn plan_of(common: &Common, compute: Compute) -> Result<(Cache, Plan), Failure> {
    grid_and_plan_of(common, compute).map(|(_, cache, plan)| (cache, plan))
}

/// The grid as loaded (with `--set`), its cache and its plan.
fn grid_and_plan_of(common: &Common, compute: Compute) -> Result<(Grid, Cache, Plan), Failure> {
    let grid = load_grid(common)?;
    let cache = Cache::open(&common.cache).map_err(runtime)?;
    let options = PlanOptions { data_root: common.data_root.clone(), precision: compute.precision };
    let plan = dag::plan(&grid, &cache, &options).map_err(usage)?;
    Ok((grid, cache, plan))
}

/// `grid gc`: the keys every grid plans, under every precision, are kept.
fn gc(
    grids: &[PathBuf],
    cache_dir: PathBuf,
    data_root: Option<PathBuf>,
    set: Vec<String>,
    options: crate::cache::gc::GcOptions,
) -> Result<ExitCode, Failure> {
    let settings = overrides(&set)?;
    let cache = Cache::open(&cache_dir).map_err(runtime)?;
    let grids =
        grids.iter().map(|grid| Grid::load_with(grid, &settings)).collect::<Result<Vec<_>, _>>().map_err(usage)?;
    let collected = dag::gc::collect(&cache, &grids, data_root, options).map_err(|e| match e {
        dag::gc::GcError::Plan(e) => usage(e),
        dag::gc::GcError::Cache(e) => runtime(e),
    })?;
    let (summary, frozen) = (collected.steps, collected.frozen);
    let verb = if options.dry_run { "would remove" } else { "removed" };
    let grace_days = crate::cache::FROZEN_GRACE.as_secs() / 86_400;
    for path in &frozen {
        eprintln!("{verb} grid text {} (no run used it for {grace_days} days)", path.display());
    }
    for (kind, dir) in &summary.removed {
        eprintln!("{verb} {kind} {}", dir.display());
    }
    for dir in &summary.busy {
        eprintln!("left {} (being computed)", dir.display());
    }
    for dir in &summary.leftovers {
        eprintln!("{verb} {} (left by an interrupted step)", dir.display());
    }
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let kept = match (grids.is_empty(), options.older_than.is_some()) {
        (false, false) => "that the grids plan",
        (true, _) => "finished since the date",
        (false, true) => "that the grids plan, finished since the date",
    };
    eprintln!(
        "{verb} {} steps ({:.1} MiB); kept {} {kept}",
        summary.removed.len(),
        mib(summary.removed_bytes),
        summary.kept
    );
    if summary.kernel_bytes > 0 {
        let what = if summary.kernels_removed { verb } else { "kept (--kernels removes them)" };
        eprintln!("compiled kernels, {:.1} MiB: {what}", mib(summary.kernel_bytes));
    }
    Ok(ExitCode::SUCCESS)
}

/// `--older-than`: a date (`2026-11-01`, midnight UTC) or `N` days before now
/// (`30d`), as seconds since the Unix epoch.
fn cutoff(text: &str) -> Result<u64, String> {
    if let Some(days) = text.strip_suffix('d') {
        let days: u64 = days.parse().map_err(|_| "expected a date like 2026-11-01 or days like 30d".to_string())?;
        let now = crate::clock::unix_now();
        return Ok(now.saturating_sub(days * 86_400));
    }
    let date = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .map_err(|e| format!("expected a date like 2026-11-01 or days like 30d ({e})"))?;
    let midnight = date.and_hms_opt(0, 0, 0).ok_or("not a time of day")?.and_utc().timestamp();
    u64::try_from(midnight).map_err(|_| "a date before 1970".to_string())
}

fn bench(
    common: Common,
    methods: Option<Vec<String>>,
    examples: usize,
    only: Option<String>,
    json: Option<PathBuf>,
    dump: Option<PathBuf>,
    (internal_batch_size, perturbations_per_eval): (Option<usize>, Option<usize>),
) -> Result<ExitCode, Failure> {
    let compute = compute_of(&common)?;
    compute.check().map_err(|e| usage(anyhow::anyhow!(e)))?;
    prepare_kernel_cache(&common, compute, true)?;
    let methods = methods
        .map(|names| names.iter().map(|n| n.trim().parse::<crate::salience::Method>()).collect::<Result<Vec<_>, _>>())
        .transpose()
        .map_err(usage)?;
    let (cache, plan) = plan_of(&common, compute)?;
    let bench_options = crate::bench::BenchOptions {
        methods,
        examples: examples.max(1),
        filter: only,
        dump,
        internal_batch_size: internal_batch_size.map(|n| n.max(1)),
        perturbations_per_eval: perturbations_per_eval.map(|n| n.max(1)),
    };
    // As `grid run` computes a step: on the pool's thread (see `on_worker_thread`).
    let rows =
        crate::backend::on_worker_thread(compute.device, || crate::bench::run(&plan, &cache, compute, &bench_options))
            .map_err(runtime)?;
    let context = crate::bench::context(compute, &common.grid);
    print!("{}", crate::bench::markdown(&context, &rows));
    if let Some(path) = json {
        write_json(&path, &serde_json::json!({ "context": context, "rows": rows }))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Examples per attribution batch that `grid bench --gemm` times unless
/// `--internal-batch-size` says otherwise.
const GEMM_ATTRIBUTION_BATCH: usize = 32;

/// `grid bench --gemm`: see [`crate::bench::gemm`].
fn bench_gemm(
    common: Common,
    options: crate::bench::gemm::GemmOptions,
    json: Option<PathBuf>,
) -> Result<ExitCode, Failure> {
    use crate::bench::gemm;
    let compute = compute_of(&common)?;
    compute.check().map_err(|e| usage(anyhow::anyhow!(e)))?;
    prepare_kernel_cache(&common, compute, true)?;
    let (_cache, plan) = plan_of(&common, compute)?;
    let shapes = gemm::shapes(&plan, &options).map_err(runtime)?;
    if shapes.is_empty() {
        return Err(usage(anyhow::anyhow!("{}: no models to time", common.grid.display())));
    }
    let threads = rayon::current_num_threads();
    let rates = crate::backend::on_worker_thread(compute.device, || {
        crate::with_autodiff_backend!(compute, |B, device| Ok(gemm::time_shapes::<B>(&shapes, &device)))
    })
    .map_err(runtime)?;
    let peak = gemm::peak(threads);
    let (torch, torch_note) = match &options.python {
        None => (None, Some("--python none".to_string())),
        Some(python) => {
            let script = tempfile::Builder::new().suffix(".py").tempfile().map_err(runtime)?;
            std::fs::write(script.path(), include_str!("../scripts/torch_gemm.py")).map_err(runtime)?;
            match gemm::torch_rates(python, script.path(), &shapes, threads) {
                Ok(rates) => (Some(rates), None),
                Err(why) => (None, Some(why)),
            }
        }
    };
    let rows = shapes
        .into_iter()
        .zip(rates)
        .enumerate()
        .map(|(i, (shape, (grid, grid_blas, single_matmuls)))| gemm::GemmRow {
            shape,
            grid,
            grid_blas,
            single_matmuls,
            torch: torch.as_ref().map(|rates| rates[i]),
        })
        .collect();
    let blas = grid_kernels::matmul::blas_in_use().map(|library| library.path().display().to_string());
    let auto = grid_kernels::blas::auto_choice().map(|choice| choice.describe());
    let roofline = gemm::Roofline { threads, peak, rows, torch_note, blas, auto };
    let context = crate::bench::context(compute, &common.grid);
    print!("{}", gemm::markdown(&context, &roofline));
    if let Some(path) = json {
        write_json(&path, &serde_json::json!({ "context": context, "roofline": roofline }))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A benchmark's `--json` file.
fn write_json(path: &Path, value: &serde_json::Value) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value).map_err(runtime)?;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display())).map_err(runtime)
}
