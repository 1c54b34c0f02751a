//! A `grid step` worker: its command line (the same grid, planned with the
//! same options as the run that starts it) and what it does, computing the
//! steps named by their keys. Child processes and cluster jobs both run it.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::Job;
use crate::dag::{Plan, StepStatus, Verbosity};
use grid_cache::Cache;
use grid_core::backend::Compute;

/// What `grid step` prints (stderr) when the step was cached by the time it
/// held the lock, so that whoever started it does not claim to have computed it.
pub const FOUND_CACHED: &str = "step: found cached";

/// What `grid step` prints (stderr) before the bytes when it pulled its step
/// from the remote cache instead of computing it.
pub const PULLED: &str = "step: pulled from the remote cache, bytes: ";

/// The options a worker must plan with to find the same keys.
#[derive(Debug, Clone, Default)]
pub struct StepSettings {
    pub grid: PathBuf,
    pub cache: PathBuf,
    /// The remote cache behind it (`--remote`), if any.
    pub remote: Option<String>,
    pub data_root: Option<PathBuf>,
    pub device: String,
    pub backend: String,
    /// `--with` fragments, in order, written before the `--set` overrides.
    pub fragments: Vec<PathBuf>,
    /// `--set` overrides, in order.
    pub overrides: Vec<String>,
    /// The grid text the run planned ([`grid_cache::Cache::freeze_grid`]):
    /// when set, the worker plans from it (`--frozen`) with no `--set`, which
    /// the text already holds.
    pub frozen: Option<PathBuf>,
    pub precision: String,
    pub shape_buckets: String,
    pub autotune: String,
    pub quiet: bool,
}

/// `program step <grid> <options…> --key <key>`.
#[derive(Debug, Clone)]
pub struct StepCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

impl StepCommand {
    /// The worker command of `program` (normally this very binary).
    pub fn new(program: PathBuf, settings: &StepSettings) -> Self {
        let StepSettings {
            grid,
            cache,
            remote,
            data_root,
            device,
            backend,
            fragments,
            overrides,
            frozen,
            precision,
            shape_buckets,
            autotune,
            quiet,
        } = settings;
        let mut args: Vec<OsString> = vec!["step".into(), grid.into(), "--cache".into(), cache.into()];
        if let Some(remote) = remote {
            args.extend(["--remote".into(), remote.into()]);
        }
        if let Some(root) = data_root {
            args.extend(["--data-root".into(), root.into()]);
        }
        args.extend(["--device".into(), device.into(), "--backend".into(), backend.into()]);
        match frozen {
            Some(text) => args.extend(["--frozen".into(), text.into()]),
            None => {
                for fragment in fragments {
                    args.extend(["--with".into(), fragment.into()]);
                }
                for setting in overrides {
                    args.extend(["--set".into(), setting.into()]);
                }
            }
        }
        args.extend(["--precision".into(), precision.into()]);
        args.extend(["--shape-buckets".into(), shape_buckets.into()]);
        args.extend(["--autotune".into(), autotune.into()]);
        if *quiet {
            args.push("-q".into());
        }
        Self { program, args }
    }

    /// This binary's worker command, when the running executable can be found.
    pub fn of_current_exe(settings: &StepSettings) -> Option<Self> {
        std::env::current_exe().ok().map(|program| Self::new(program, settings))
    }

    /// The arguments for one step, after the program.
    pub fn args_for(&self, key: &str) -> Vec<OsString> {
        let mut args = self.args.clone();
        args.extend(["--key".into(), key.into()]);
        args
    }
}

/// Why `grid step` did not compute everything it was asked.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// A key this plan lacks: bad usage, not a failed step.
    #[error(
        "no step of {grid} has key {key} (a worker of a run whose `grid` binary or grid file changed \
         meanwhile plans other keys: run the grid again)"
    )]
    UnknownKey { grid: String, key: String },
    #[error("{0}")]
    Failed(String),
}

/// `grid step --key K…`: computes the named steps in this process, one after
/// the other. Under a Slurm task (`GRID_STEP_LOG` set by its script) each
/// failure is recorded with the task's log, since no parent is there to do it.
pub fn compute_keys(
    plan: &Plan,
    cache: &Cache,
    keys: &[String],
    grid: &Path,
    compute: Compute,
    verbosity: Verbosity,
) -> Result<(), WorkerError> {
    let mut indices = Vec::with_capacity(keys.len());
    for key in keys {
        let index = plan
            .steps
            .iter()
            .position(|s| s.key.as_str() == key)
            .ok_or_else(|| WorkerError::UnknownKey { grid: grid.display().to_string(), key: key.clone() })?;
        indices.push(index);
    }
    let task_log = std::env::var_os("GRID_STEP_LOG").map(PathBuf::from);
    let bar = indicatif::ProgressBar::hidden();
    let mut failed = Vec::new();
    for index in indices {
        let step = &plan.steps[index];
        if grid_core::interrupt::requested() {
            failed.push((step.label.as_str(), "not started: stopped on request".to_string()));
            continue;
        }
        // Under Slurm a task starts once its input tasks ended, however they
        // ended: a step whose inputs are not there is skipped, not failed.
        let missing =
            step.inputs.iter().map(|&j| &plan.steps[j]).find(|input| !cache.available(input.kind, &input.key));
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
        let job = Job { plan, cache, index, progress: &bar, log: &log, every_core: false };
        // One step at a time in this process: on rayon's pool (see `InProcess`).
        let status =
            grid_core::backend::on_worker_thread(compute.device, || super::in_process::compute_step(&job, compute));
        match status {
            StepStatus::Failed { error } => {
                if let Some(task_log) = &task_log {
                    crate::dag::slurm::task_failed(plan, cache, index, &error, task_log);
                }
                failed.push((step.label.as_str(), error));
            }
            StepStatus::Cached if keys.len() == 1 => eprintln!("{FOUND_CACHED}"),
            StepStatus::Pulled { bytes } if keys.len() == 1 => eprintln!("{PULLED}{bytes}"),
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
        [] => Ok(()),
        [(_, error)] if keys.len() == 1 => Err(WorkerError::Failed(error.clone())),
        _ => {
            let each: Vec<String> = failed.iter().map(|(label, error)| format!("{label}: {error}")).collect();
            Err(WorkerError::Failed(format!("{} of {} steps failed: {}", failed.len(), keys.len(), each.join("; "))))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_plans_with_every_option_of_its_run() {
        let settings = StepSettings {
            grid: "g.toml".into(),
            cache: "/c".into(),
            remote: Some("s3://lab/grid".into()),
            data_root: Some("/d".into()),
            device: "cpu".into(),
            backend: "flex".into(),
            fragments: vec!["local.toml".into()],
            overrides: vec!["a.b=1".into(), "c=2".into()],
            frozen: None,
            precision: "f32".into(),
            shape_buckets: "auto".into(),
            autotune: "balanced".into(),
            quiet: true,
        };
        let args = |settings: &StepSettings| -> String {
            let command = StepCommand::new("/bin/grid".into(), settings);
            let args: Vec<String> = command.args_for("abc").into_iter().map(|a| a.into_string().unwrap()).collect();
            args.join(" ")
        };
        assert_eq!(
            args(&settings),
            "step g.toml --cache /c --remote s3://lab/grid --data-root /d --device cpu --backend flex --with local.toml --set a.b=1 --set c=2 \
             --precision f32 --shape-buckets auto --autotune balanced -q --key abc"
        );
        // The frozen text holds the overrides already.
        let frozen = StepSettings { frozen: Some("/c/grids/f.toml".into()), ..settings };
        assert_eq!(
            args(&frozen),
            "step g.toml --cache /c --remote s3://lab/grid --data-root /d --device cpu --backend flex --frozen /c/grids/f.toml \
             --precision f32 --shape-buckets auto --autotune balanced -q --key abc"
        );
    }
}
