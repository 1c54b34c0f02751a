//! Runs a step in a `grid step` child process, whose progress lines are
//! passed on and whose output is kept for the failure record.

use std::io::BufRead;
use std::process::{Command, Stdio};

use super::worker::{FOUND_CACHED, PULLED};
use super::{Executor, Finished, Job, StepCommand};
use crate::dag::StepStatus;
use grid_core::backend::DeviceChoice;

pub struct ChildProcess {
    pub command: StepCommand,
    /// rayon's threads in each child (`RAYON_NUM_THREADS`); `None`: its default.
    pub threads: Option<usize>,
}

impl ChildProcess {
    /// A child per model step on `device`, `model_jobs` of them at once.
    pub fn new(command: StepCommand, device: DeviceChoice, model_jobs: usize) -> Self {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let user_set = std::env::var_os("RAYON_NUM_THREADS").is_some();
        Self { command, threads: threads_per_step(device, cores, model_jobs, user_set) }
    }
}

/// The cores shared among the model steps that run at once, on the CPU. With
/// rayon's default (every core in every child), a 2-core machine training two
/// models ran four threads on two cores, and the idle ones spun and yielded:
/// 12% of a profile, and the quickstart 10% slower. A user's own
/// `RAYON_NUM_THREADS` (which children inherit) is left alone, as are GPU
/// steps, whose host threads mostly wait.
fn threads_per_step(device: DeviceChoice, cores: usize, model_jobs: usize, user_set: bool) -> Option<usize> {
    match device {
        DeviceChoice::Cpu if !user_set && model_jobs > 1 => Some((cores / model_jobs).max(1)),
        _ => None,
    }
}

impl ChildProcess {
    /// rayon's threads for a child running `job`: every core (rayon's
    /// default, or the user's `RAYON_NUM_THREADS`) for a lone model step,
    /// else the share.
    fn threads_for(&self, every_core: bool) -> Option<usize> {
        if every_core { None } else { self.threads }
    }
}

impl Executor for ChildProcess {
    fn run(&self, job: &Job) -> Finished {
        let step = &job.plan.steps[job.index];
        let program = &self.command.program;
        let mut command = Command::new(program);
        if let Some(threads) = self.threads_for(job.every_core) {
            command.env("RAYON_NUM_THREADS", threads.to_string());
        }
        // `GRID_BLAS=auto` was measured here, before any step ran: a child
        // takes the choice (a path, or empty for `gemm`) rather than timing
        // the libraries again beside its siblings on the same cores.
        if let Some(choice) = grid_kernels::linear::blas_choice() {
            command.env(grid_kernels::blas::ENV, choice.library.map(|l| l.path().as_os_str()).unwrap_or_default());
        }
        let child = command
            .args(self.command.args_for(step.key.as_str()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(child) => {
                grid_core::interrupt::register_child(child.id());
                child
            }
            Err(e) => {
                let error = format!("cannot start {}: {e}", program.display());
                return Finished { status: StepStatus::Failed { error }, output: Vec::new() };
            }
        };
        let mut output = Vec::new();
        let mut last_error = None;
        let mut found_cached = false;
        let mut pulled: Option<u64> = None;
        if let Some(stderr) = child.stderr.take() {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if line == FOUND_CACHED {
                    found_cached = true;
                    continue;
                }
                if let Some(bytes) = line.strip_prefix(PULLED).and_then(|b| b.trim().parse().ok()) {
                    pulled = Some(bytes);
                    continue;
                }
                match line.strip_prefix("error: ") {
                    Some(error) => last_error = Some(error.to_string()),
                    None => (job.log)(line.clone()),
                }
                output.push(line);
            }
        }
        let exit = child.wait();
        grid_core::interrupt::forget_child(child.id());
        let succeeded = exit.as_ref().is_ok_and(|s| s.success());
        let status = match job.cache.lookup(step.kind, &step.key) {
            // Another process computed it while this one waited for the lock.
            Ok(Some(_)) if succeeded && found_cached => StepStatus::Cached,
            Ok(Some(manifest)) if succeeded => {
                pulled.map_or_else(|| StepStatus::of_published(&manifest), |bytes| StepStatus::Pulled { bytes })
            }
            _ => StepStatus::Failed {
                error: last_error.unwrap_or_else(|| match exit {
                    Ok(s) => format!("worker exited with {s}"),
                    Err(e) => format!("worker: {e}"),
                }),
            },
        };
        Finished { status, output }
    }
}

#[cfg(test)]
mod tests {
    use super::{ChildProcess, StepCommand, threads_per_step};
    use grid_core::backend::DeviceChoice;

    #[test]
    fn children_share_the_cores_on_the_cpu_only() {
        assert_eq!(threads_per_step(DeviceChoice::Cpu, 2, 2, false), Some(1));
        assert_eq!(threads_per_step(DeviceChoice::Cpu, 16, 4, false), Some(4));
        assert_eq!(threads_per_step(DeviceChoice::Cpu, 2, 8, false), Some(1), "at least one");
        assert_eq!(threads_per_step(DeviceChoice::Cpu, 2, 2, true), None, "the user's setting stands");
        assert_eq!(threads_per_step(DeviceChoice::Cpu, 2, 1, false), None, "one step at a time: every core");
        assert_eq!(threads_per_step(DeviceChoice::Cuda(0), 16, 4, false), None);
        // A lone model step takes every core; the others their share.
        let child =
            ChildProcess { command: StepCommand { program: "grid".into(), args: Vec::new() }, threads: Some(1) };
        assert_eq!((child.threads_for(true), child.threads_for(false)), (None, Some(1)));
    }
}
