//! `[slurm]`: what `grid run --executor slurm` asks of the cluster for each
//! step. Never part of a key: where a step runs does not change its result.
//!
//! ```toml
//! [slurm]
//! partition = "gpu"
//! account = "nlp"
//! time = "04:00:00"
//! memory = "16G"
//! cpus = 4
//! sbatch_args = ["--qos=normal"]
//!
//! [slurm.train]          # any of the keys above, for one step kind
//! time = "12:00:00"
//! ```
//!
//! Per-kind tables: `corpus`, `synth`, `train`, `verify`, `attribute`,
//! `erasure`, and `small` (score, agreement and report steps, which run
//! batched). `--set slurm.partition=short` works as for any key.

use serde::Deserialize;

use crate::step_kind::StepKind;

/// Resources of one job; unset keys are left to the cluster's defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmResources {
    pub partition: Option<String>,
    pub account: Option<String>,
    /// `--time`, in any format sbatch takes (`30`, `04:00:00`, `1-00:00:00`).
    pub time: Option<String>,
    /// `--mem` (`16G`, `4000M`).
    pub memory: Option<String>,
    /// `--cpus-per-task`.
    pub cpus: Option<u32>,
    /// Passed to sbatch as they are, after everything else.
    #[serde(default)]
    pub sbatch_args: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmSpec {
    pub partition: Option<String>,
    pub account: Option<String>,
    pub time: Option<String>,
    pub memory: Option<String>,
    pub cpus: Option<u32>,
    #[serde(default)]
    pub sbatch_args: Vec<String>,
    pub corpus: Option<SlurmResources>,
    pub synth: Option<SlurmResources>,
    pub train: Option<SlurmResources>,
    pub verify: Option<SlurmResources>,
    pub attribute: Option<SlurmResources>,
    pub erasure: Option<SlurmResources>,
    /// Score, agreement and report steps.
    pub small: Option<SlurmResources>,
}

impl SlurmSpec {
    /// What a job of `kind` asks for: its kind's table over the defaults,
    /// key by key; `sbatch_args` of both, the defaults' first.
    pub fn resources(&self, kind: StepKind) -> SlurmResources {
        let specific = match kind {
            StepKind::Corpus => &self.corpus,
            StepKind::Synth => &self.synth,
            StepKind::Train => &self.train,
            // Evaluation is a verification's original-test pass.
            StepKind::Verify | StepKind::Evaluate => &self.verify,
            StepKind::Attribute => &self.attribute,
            StepKind::Erasure => &self.erasure,
            // Crowd imports never run on a cluster; small if they did.
            StepKind::Agreement | StepKind::Score | StepKind::Report | StepKind::Crowd => &self.small,
        };
        let own = specific.clone().unwrap_or_default();
        SlurmResources {
            partition: own.partition.or_else(|| self.partition.clone()),
            account: own.account.or_else(|| self.account.clone()),
            time: own.time.or_else(|| self.time.clone()),
            memory: own.memory.or_else(|| self.memory.clone()),
            cpus: own.cpus.or(self.cpus),
            sbatch_args: self.sbatch_args.iter().chain(&own.sbatch_args).cloned().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_table_overrides_the_defaults_key_by_key() {
        let spec: SlurmSpec = toml::from_str(
            r#"
            partition = "gpu"
            time = "01:00:00"
            sbatch_args = ["--qos=normal"]
            [train]
            time = "12:00:00"
            sbatch_args = ["--exclusive"]
            "#,
        )
        .unwrap();
        let train = spec.resources(StepKind::Train);
        assert_eq!(train.partition.as_deref(), Some("gpu"));
        assert_eq!(train.time.as_deref(), Some("12:00:00"));
        assert_eq!(train.sbatch_args, ["--qos=normal", "--exclusive"]);
        assert_eq!(spec.resources(StepKind::Score).time.as_deref(), Some("01:00:00"));
        assert!(toml::from_str::<SlurmSpec>("gpus = 2").is_err(), "unknown keys are refused");
    }
}
