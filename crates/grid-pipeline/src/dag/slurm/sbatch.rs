//! Talking to Slurm through its own commands: `sbatch` submits, `squeue`
//! says what is still queued or running, `scancel` stops. No daemon of ours.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::spec::slurm::SlurmResources;

/// Everything `sbatch` is told about one array.
#[derive(Debug, Clone, PartialEq)]
pub struct ArrayJob {
    pub name: String,
    pub tasks: usize,
    /// Array job ids this one waits for: it starts once all of their tasks
    /// have ended, however they ended.
    pub after: Vec<String>,
    pub resources: SlurmResources,
    /// `--gres=gpu:1`: a model step on `--device cuda`.
    pub gpu: bool,
    /// `--output`/`--error` pattern (`%A` array job id, `%a` task).
    pub log_pattern: PathBuf,
    pub script: PathBuf,
    /// The script's one argument: the file whose line `task + 1` holds that task's keys.
    pub keys_file: PathBuf,
}

impl ArrayJob {
    /// sbatch's arguments. The dependency is `afterany`, not `afterok`: an
    /// array holds steps of many branches, and one failed task would make
    /// `afterok` cancel every branch of the next array. Instead each task
    /// checks its inputs in the cache and skips a step whose inputs did not
    /// complete, so a failure stops its own branch only.
    pub fn args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = vec![
            "--parsable".into(),
            format!("--job-name={}", self.name).into(),
            format!("--array=0-{}", self.tasks.saturating_sub(1)).into(),
            concat("--output=", &self.log_pattern),
            concat("--error=", &self.log_pattern),
        ];
        if !self.after.is_empty() {
            args.push(format!("--dependency=afterany:{}", self.after.join(":")).into());
        }
        let r = &self.resources;
        let flags =
            [("--partition", &r.partition), ("--account", &r.account), ("--time", &r.time), ("--mem", &r.memory)];
        for (flag, value) in flags {
            if let Some(value) = value {
                args.push(format!("{flag}={value}").into());
            }
        }
        if let Some(cpus) = r.cpus {
            args.push(format!("--cpus-per-task={cpus}").into());
        }
        if self.gpu {
            args.push("--gres=gpu:1".into());
        }
        args.extend(r.sbatch_args.iter().map(OsString::from));
        args.push(self.script.clone().into());
        args.push(self.keys_file.clone().into());
        args
    }

    /// Submits the array; returns its job id.
    pub fn submit(&self) -> Result<String> {
        let output = Command::new("sbatch")
            .args(self.args())
            .output()
            .context("cannot run sbatch (is Slurm's client installed and SLURM_CONF set?)")?;
        if !output.status.success() {
            bail!("sbatch refused job {}: {}", self.name, String::from_utf8_lossy(&output.stderr).trim());
        }
        // `--parsable`: `<id>` or `<id>;<cluster>`.
        let text = String::from_utf8_lossy(&output.stdout);
        let id = text.trim().split(';').next().unwrap_or_default().to_string();
        if id.is_empty() || !id.chars().all(|c| c.is_ascii_digit()) {
            bail!("sbatch printed no job id for {}: {text:?}", self.name);
        }
        Ok(id)
    }
}

fn concat(flag: &str, path: &Path) -> OsString {
    let mut arg = OsString::from(flag);
    arg.push(path);
    arg
}

/// The batch script every task runs: the keys on its line of the keys file,
/// each one `--key`, appended to the worker command.
pub fn task_script(program: &Path, args: &[OsString], log_dir: &Path) -> String {
    let mut command = vec![quote(&program.to_string_lossy())];
    command.extend(args.iter().map(|a| quote(&a.to_string_lossy())));
    format!(
        "#!/bin/bash\n\
         # Written by `grid run --executor slurm`: computes the steps of one task.\n\
         set -u\n\
         line=$(sed -n \"$((SLURM_ARRAY_TASK_ID + 1))p\" \"$1\")\n\
         keys=()\n\
         for key in $line; do keys+=(--key \"$key\"); done\n\
         export GRID_STEP_LOG={}/\"${{SLURM_ARRAY_JOB_ID}}_${{SLURM_ARRAY_TASK_ID}}.log\"\n\
         exec {} \"${{keys[@]}}\"\n",
        quote(&log_dir.to_string_lossy()),
        command.join(" ")
    )
}

/// Single-quoted for bash.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// This user's array tasks still queued or running, as `<job>_<task>`, with
/// Slurm's state (`PENDING`, `RUNNING`, …).
pub fn queued_tasks() -> Result<HashMap<String, String>> {
    let output = Command::new("squeue")
        .args(["--noheader", "--array", "--me", "--format=%i %T"])
        .output()
        .context("cannot run squeue (is Slurm's client installed and SLURM_CONF set?)")?;
    if !output.status.success() {
        bail!("squeue failed: {}", String::from_utf8_lossy(&output.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.trim().split_once(' ').map(|(task, state)| (task.to_string(), state.trim().to_string())))
        .collect())
}

/// Cancels jobs, or single array tasks (`<job>_<task>`).
pub fn cancel(jobs: &[String]) -> Result<()> {
    if jobs.is_empty() {
        return Ok(());
    }
    let status = Command::new("scancel").args(jobs).status().context("cannot run scancel")?;
    if !status.success() {
        bail!("scancel {} failed", jobs.join(" "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_array_asks_for_its_resources_and_waits_for_its_inputs() {
        let job = ArrayJob {
            name: "grid-train".into(),
            tasks: 3,
            after: vec!["11".into(), "12".into()],
            resources: SlurmResources {
                partition: Some("gpu".into()),
                time: Some("04:00:00".into()),
                cpus: Some(4),
                sbatch_args: vec!["--qos=high".into()],
                ..Default::default()
            },
            gpu: true,
            log_pattern: "/c/slurm/logs/%A_%a.log".into(),
            script: "/c/slurm/task.sh".into(),
            keys_file: "/c/slurm/k.keys".into(),
        };
        let args: Vec<String> = job.args().into_iter().map(|a| a.into_string().unwrap()).collect();
        assert_eq!(
            args.join(" "),
            "--parsable --job-name=grid-train --array=0-2 --output=/c/slurm/logs/%A_%a.log \
             --error=/c/slurm/logs/%A_%a.log --dependency=afterany:11:12 \
             --partition=gpu --time=04:00:00 --cpus-per-task=4 --gres=gpu:1 --qos=high \
             /c/slurm/task.sh /c/slurm/k.keys"
        );
    }

    #[test]
    fn the_task_script_quotes_what_it_passes_on() {
        let script = task_script(Path::new("/bin/grid"), &["step".into(), "it's.toml".into()], Path::new("/l"));
        assert!(script.contains("exec '/bin/grid' 'step' 'it'\\''s.toml' \"${keys[@]}\""), "{script}");
        assert!(script.contains("GRID_STEP_LOG='/l'/\"${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}.log\""), "{script}");
    }
}
