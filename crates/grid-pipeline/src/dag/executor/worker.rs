//! The command line of a `grid step` worker: the same grid, planned with the
//! same options as the run that starts it, computing the one step named by
//! its key. Child processes and cluster jobs both run it.

use std::ffi::OsString;
use std::path::PathBuf;

/// What `grid step` prints (stderr) when the step was cached by the time it
/// held the lock, so that whoever started it does not claim to have computed it.
pub const FOUND_CACHED: &str = "step: found cached";

/// The options a worker must plan with to find the same keys.
#[derive(Debug, Clone, Default)]
pub struct StepSettings {
    pub grid: PathBuf,
    pub cache: PathBuf,
    pub data_root: Option<PathBuf>,
    pub device: String,
    pub backend: String,
    /// `--set` overrides, in order.
    pub overrides: Vec<String>,
    /// The grid text the run planned ([`crate::cache::Cache::freeze_grid`]):
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
            data_root,
            device,
            backend,
            overrides,
            frozen,
            precision,
            shape_buckets,
            autotune,
            quiet,
        } = settings;
        let mut args: Vec<OsString> = vec!["step".into(), grid.into(), "--cache".into(), cache.into()];
        if let Some(root) = data_root {
            args.extend(["--data-root".into(), root.into()]);
        }
        args.extend(["--device".into(), device.into(), "--backend".into(), backend.into()]);
        match frozen {
            Some(text) => args.extend(["--frozen".into(), text.into()]),
            None => {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_plans_with_every_option_of_its_run() {
        let settings = StepSettings {
            grid: "g.toml".into(),
            cache: "/c".into(),
            data_root: Some("/d".into()),
            device: "cpu".into(),
            backend: "flex".into(),
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
            "step g.toml --cache /c --data-root /d --device cpu --backend flex --set a.b=1 --set c=2 \
             --precision f32 --shape-buckets auto --autotune balanced -q --key abc"
        );
        // The frozen text holds the overrides already.
        let frozen = StepSettings { frozen: Some("/c/grids/f.toml".into()), ..settings };
        assert_eq!(
            args(&frozen),
            "step g.toml --cache /c --data-root /d --device cpu --backend flex --frozen /c/grids/f.toml \
             --precision f32 --shape-buckets auto --autotune balanced -q --key abc"
        );
    }
}
