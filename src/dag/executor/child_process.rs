//! Runs a step in a `grid step` child process, whose progress lines are
//! passed on and whose output is kept for the failure record.

use std::io::BufRead;
use std::process::{Command, Stdio};

use super::worker::FOUND_CACHED;
use super::{Executor, Finished, Job, StepCommand};
use crate::dag::StepStatus;

pub struct ChildProcess {
    pub command: StepCommand,
}

impl Executor for ChildProcess {
    fn run(&self, job: &Job) -> Finished {
        let step = &job.plan.steps[job.index];
        let program = &self.command.program;
        let child = Command::new(program)
            .args(self.command.args_for(step.key.as_str()))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn();
        let mut child = match child {
            Ok(child) => {
                crate::interrupt::register_child(child.id());
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
        if let Some(stderr) = child.stderr.take() {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if line == FOUND_CACHED {
                    found_cached = true;
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
        crate::interrupt::forget_child(child.id());
        let succeeded = exit.as_ref().is_ok_and(|s| s.success());
        let status = match job.cache.lookup(step.kind, &step.key) {
            // Another process computed it while this one waited for the lock.
            Ok(Some(_)) if succeeded && found_cached => StepStatus::Cached,
            Ok(Some(manifest)) if succeeded => StepStatus::Ran { seconds: manifest.seconds },
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
