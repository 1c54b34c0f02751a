//! `grid run`, `grid plan`, `grid report` and the worker's `grid step`: plan
//! the grid, then print the plan, hand the missing steps to a runner
//! (`dag::runner`), or compute named steps; print what came of it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use super::args::{Common, ExecutorChoice};
use super::compute::{compute_placed, prepare_kernel_cache, step_settings};
use super::{Failure, grid_and_plan_of, runtime, usage, verbosity_of};
use grid_cache::Cache;
use grid_pipeline::dag::executor::StepCommand;
use grid_pipeline::dag::executor::worker::{self, WorkerError};
use grid_pipeline::dag::runner::{Local, Runner, Slurm};
use grid_pipeline::dag::{self, Plan, RunOptions, StepStatus, Verbosity};

/// What the command does once the grid is planned.
pub(super) enum Action {
    /// Compute every missing step, where `executor` says, and report;
    /// `yes`: start however long the estimate.
    Run { executor: ExecutorChoice, wait: bool, yes: bool },
    /// Print the plan.
    Plan,
    /// Write the reports from the cache, beside published numbers if asked.
    Report { compare: Vec<PathBuf>, aliases: Vec<(String, String)> },
    /// A worker: compute the steps with these keys.
    Step { keys: Vec<String> },
}

impl Action {
    fn computes(&self) -> bool {
        matches!(self, Action::Run { .. } | Action::Step { .. })
    }
}

pub(super) fn run(action: Action, common: Common) -> Result<ExitCode, Failure> {
    let (compute, placed) = compute_placed(&common)?;
    if action.computes() {
        compute.check().map_err(|e| usage(anyhow::anyhow!(e)))?;
    }
    let (grid, cache, plan) = grid_and_plan_of(&common, compute.precision)?;
    let verbosity = verbosity_of(&common);
    let announce = verbosity > Verbosity::Quiet && matches!(action, Action::Run { .. } | Action::Plan);
    if announce {
        if let Some(why) = placed {
            eprintln!("device: {} (--device auto: {why})", compute.device);
        }
        if let Some(choice) = grid_kernels::linear::blas_choice() {
            eprintln!("note: {}", choice.describe());
        }
    }
    if let Action::Run { executor, yes, .. } = &action {
        // Compute nodes often cannot reach the Hub: checkpoints come first,
        // here, and before the estimate, which reads a checkpoint's sizes.
        dag::checkpoints::download(&grid, &plan, &cache, verbosity).map_err(|e| usage(anyhow::anyhow!(e)))?;
        let on_slurm = *executor == ExecutorChoice::Slurm;
        // Priced only for someone to read it or be asked.
        if announce || !*yes {
            let estimate = dag::estimate::estimate(&plan, &cache, rayon::current_num_threads());
            if announce {
                announce_estimate(&estimate, compute, on_slurm);
            }
            if !*yes && !confirm_long_run(&estimate, compute, on_slurm) {
                eprintln!("not started (run again with --yes to start without asking)");
                return Ok(ExitCode::from(1));
            }
        }
    }
    if action.computes() {
        prepare_kernel_cache(&common, compute, announce)?;
    }
    if verbosity > Verbosity::Quiet && !matches!(action, Action::Step { .. }) {
        for note in &plan.skipped {
            eprintln!("note: not planned: {note}");
        }
    }
    match &action {
        Action::Plan => {
            let lines = dag::status::lines(&plan, &cache).map_err(runtime)?;
            print!("{}", dag::status::render_plan(&lines));
            return Ok(ExitCode::SUCCESS);
        }
        Action::Step { keys } => {
            grid_core::interrupt::install_in_worker();
            return match worker::compute_keys(&plan, &cache, keys, &common.grid, compute, verbosity) {
                Ok(()) => Ok(ExitCode::SUCCESS),
                Err(e @ WorkerError::UnknownKey { .. }) => Err(usage(e)),
                Err(e @ WorkerError::Failed(_)) => Err(runtime(e)),
            };
        }
        Action::Run { .. } | Action::Report { .. } => {}
    }
    // Workers plan from the text planned here, whatever happens to the file
    // (a Slurm task may start hours later).
    let frozen = cache.freeze_grid(&grid.text).map_err(runtime)?;
    let settings = step_settings(&common, compute, verbosity, Some(frozen));
    let runner: Box<dyn Runner + '_> = match &action {
        Action::Run { executor: ExecutorChoice::Slurm, wait, .. } => Box::new(Slurm {
            settings,
            resources: &grid.slurm,
            gpu: matches!(compute.device, grid_core::backend::DeviceChoice::Cuda(_)),
            verbosity,
            wait: wait.then(|| common.reports.clone()),
        }),
        Action::Run { executor: ExecutorChoice::Local, .. } | Action::Report { .. } => Box::new(Local {
            options: RunOptions {
                jobs: common.jobs.unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)),
                gpu_jobs: usize::from(common.gpu_jobs),
                compute,
                verbosity,
                reports_dir: Some(common.reports.clone()),
                cache_only: matches!(action, Action::Report { .. }),
                worker: StepCommand::of_current_exe(&settings),
            },
        }),
        Action::Plan | Action::Step { .. } => unreachable!("planning and workers answered above"),
    };
    let started = Instant::now();
    let Some(outcome) = runner.run(&plan, &cache).map_err(runtime)? else { return Ok(ExitCode::SUCCESS) };
    if outcome.interrupted {
        eprintln!("{}", runner.interrupted(&outcome, started.elapsed()));
        return Ok(ExitCode::from(130));
    }
    finish_run(&plan, &cache, &common, &outcome, started, verbosity, &action)
}

/// `grid run`'s preamble: what the missing steps will take, and what would
/// be faster when that is over an hour on the chosen device.
fn announce_estimate(estimate: &dag::estimate::Estimate, compute: grid_core::backend::Compute, on_slurm: bool) {
    use dag::estimate::{self, GpuHere};
    if estimate.missing == 0 {
        return;
    }
    eprintln!("{}", estimate::summary_line(estimate));
    let gpu = if grid_core::backend::placement::gpu_available().is_ok() {
        GpuHere::Usable
    } else {
        match grid_core::backend::placement::visible_gpus().into_iter().next() {
            Some(name) => GpuHere::NeedsGpuBuild(name),
            None => GpuHere::None,
        }
    };
    if let Some(advice) = estimate::long_run_advice(estimate, target_of(compute), &gpu, on_slurm) {
        eprintln!("note: {advice}");
    }
}

fn target_of(compute: grid_core::backend::Compute) -> dag::estimate::Target {
    match compute.device {
        grid_core::backend::DeviceChoice::Cpu => dag::estimate::Target::Cpu,
        grid_core::backend::DeviceChoice::Cuda(_) => dag::estimate::Target::Gpu,
    }
}

/// Whether to start a run: yes unless it is predicted to take over a day
/// and a person at a terminal answers no. Scripts (stdin or stderr not a
/// terminal) and Slurm jobs are not asked.
fn confirm_long_run(estimate: &dag::estimate::Estimate, compute: grid_core::backend::Compute, on_slurm: bool) -> bool {
    use std::io::{BufRead, IsTerminal, Write};
    let target = target_of(compute);
    let in_slurm_job = std::env::var_os("SLURM_JOB_ID").is_some();
    if in_slurm_job || !dag::estimate::needs_confirmation(estimate, target, on_slurm) {
        return true;
    }
    if !(std::io::stdin().is_terminal() && std::io::stderr().is_terminal()) {
        return true;
    }
    let seconds = dag::estimate::predicted_seconds(estimate, target, on_slurm);
    eprint!(
        "This run is predicted to take {} here (the faster options are above). Start it? [y/N] ",
        dag::estimate::human_seconds(seconds)
    );
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes")
}

/// Prints the tables and the run's summary, checks verification, sets our
/// numbers beside published ones (`grid report --compare`), and maps what
/// failed to the exit code.
fn finish_run(
    plan: &Plan,
    cache: &Cache,
    common: &Common,
    outcome: &dag::RunOutcome,
    started: Instant,
    verbosity: Verbosity,
    action: &Action,
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
        let pulled = match outcome.pulled() {
            0 => String::new(),
            n => format!(" {n} pulled from the remote cache,"),
        };
        eprintln!(
            "{} steps: {ran} ran,{reused}{pulled} {} cached, {} failed or skipped ({:.1}s)",
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
    if let Action::Report { compare, aliases } = action
        && !compare.is_empty()
    {
        let reports = common.reports.join(&plan.grid_name);
        let print = |written: grid_pipeline::compare::Written| {
            println!("{}", written.markdown);
            eprintln!("comparison written to {} and {}", written.markdown_path.display(), written.csv_path.display());
        };
        grid_pipeline::compare::compare_with_published(plan, cache, &reports, compare, aliases, print)
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
    // `grid report` computes nothing: a missing step is a usage error there.
    Ok(ExitCode::from(if matches!(action, Action::Report { .. }) { 2 } else { 1 }))
}
