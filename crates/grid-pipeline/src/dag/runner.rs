//! Runners: where the steps a plan's cache lacks are computed. `Local`
//! schedules them here (threads and `grid step` child processes, through
//! `executor::Executor`); `Slurm` hands them to a cluster as job arrays and
//! may follow them. A new one is one file (or folder) implementing [`Runner`]
//! and its arm in the binary's `--executor` choice.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};

use super::executor::{StepCommand, StepSettings};
use super::run::{RunOptions, RunOutcome, Verbosity, execute};
use super::{Plan, slurm};
use crate::spec::slurm::SlurmSpec;
use grid_cache::Cache;

/// Computes, or has computed, every step of a plan the cache lacks.
pub trait Runner {
    /// `None`: handed over and not followed (nothing finished to report yet).
    fn run(&self, plan: &Plan, cache: &Cache) -> Result<Option<RunOutcome>>;

    /// What to tell the user when Ctrl-C stopped [`Runner::run`] after `elapsed`.
    fn interrupted(&self, outcome: &RunOutcome, elapsed: Duration) -> String;
}

/// This machine: the scheduler of `dag::run` with its executors.
pub struct Local {
    pub options: RunOptions,
}

impl Runner for Local {
    fn run(&self, plan: &Plan, cache: &Cache) -> Result<Option<RunOutcome>> {
        // `grid report` computes nothing that Ctrl-C would need to stop cleanly.
        if !self.options.cache_only {
            grid_core::interrupt::install();
        }
        Ok(Some(execute(plan, cache, &self.options)?))
    }

    fn interrupted(&self, outcome: &RunOutcome, elapsed: Duration) -> String {
        format!(
            "interrupted after {:.1}s: {} steps ran, {} were cached, {} did not run or finish; \
             `grid run` again computes only what is missing",
            elapsed.as_secs_f64(),
            outcome.executed().count(),
            outcome.cached(),
            outcome.failures().count()
        )
    }
}

/// A Slurm cluster: one job array per wave of steps of one resource class,
/// each task a `grid step` worker (`dag::slurm`).
pub struct Slurm<'a> {
    /// The worker's settings as this run planned; made absolute here, since
    /// tasks may start in another folder.
    pub settings: StepSettings,
    pub resources: &'a SlurmSpec,
    /// `--device cuda`: model steps ask for a GPU.
    pub gpu: bool,
    pub verbosity: Verbosity,
    /// `--wait`: follow the jobs to the end, then write the reports there.
    pub wait: Option<PathBuf>,
}

impl Runner for Slurm<'_> {
    fn run(&self, plan: &Plan, cache: &Cache) -> Result<Option<RunOutcome>> {
        let mut settings = self.settings.clone();
        settings.grid = slurm::absolute(&settings.grid);
        settings.cache = slurm::absolute(&settings.cache);
        settings.frozen = settings.frozen.as_deref().map(slurm::absolute);
        settings.data_root = settings.data_root.as_deref().map(slurm::absolute);
        let command = StepCommand::of_current_exe(&settings)
            .context("cannot find this `grid` executable for the Slurm tasks to run")?;
        let options =
            slurm::SlurmOptions { command, resources: self.resources, gpu: self.gpu, verbosity: self.verbosity };
        let submission = slurm::submit(plan, cache, &options)?;
        if self.verbosity > Verbosity::Quiet {
            for array in &submission.arrays {
                eprintln!("submitted job {} ({} steps of {})", array.job, array.steps, array.class.name());
            }
            let logs = slurm::queued::slurm_dir(cache).join("logs");
            eprintln!(
                "{} steps submitted in {} job arrays, {} already queued or running, {} cached; task logs in {}",
                submission.submitted_steps(),
                submission.arrays.len(),
                submission.in_flight,
                submission.pending.iter().filter(|p| p.is_none()).count(),
                logs.display()
            );
        }
        let Some(reports) = &self.wait else { return Ok(None) };
        grid_core::interrupt::install();
        slurm::wait(plan, cache, &submission, self.verbosity, Some(reports)).map(Some)
    }

    fn interrupted(&self, _outcome: &RunOutcome, _elapsed: Duration) -> String {
        "stopped following the jobs; they go on (`grid status` shows them, `scancel` stops them)".to_string()
    }
}
