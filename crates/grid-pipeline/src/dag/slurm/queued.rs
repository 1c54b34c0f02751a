//! Steps handed to Slurm, remembered in the shared cache so that another
//! `grid run --executor slurm` submits nothing twice and `grid status` can
//! name the job: `<cache>/slurm/queued/<key>.json`. A record only counts
//! while `squeue` still lists its task; once the step is published the
//! record is moot (and `grid run` rewrites it when it submits again).

use std::fs;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use grid_cache::{Cache, CacheError, StepKey};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Queued {
    pub label: String,
    /// `<array job id>_<task id>`, as `squeue --array` prints it.
    pub task: String,
    /// Where the task's output goes.
    pub log: PathBuf,
    /// Seconds since the Unix epoch.
    pub submitted_at: u64,
}

impl Queued {
    /// The array's job id (what `scancel` and dependencies take).
    pub fn job(&self) -> &str {
        self.task.split('_').next().unwrap_or(&self.task)
    }
}

/// `<cache>/slurm/`: submissions' scripts and key lists, task logs, records.
pub fn slurm_dir(cache: &Cache) -> PathBuf {
    cache.root().join("slurm")
}

fn record_path(cache: &Cache, key: &StepKey) -> PathBuf {
    slurm_dir(cache).join("queued").join(format!("{}.json", key.as_str()))
}

pub fn record(cache: &Cache, key: &StepKey, queued: &Queued) -> Result<(), CacheError> {
    grid_cache::write_json_whole(&record_path(cache, key), queued)
}

/// The last submission of `key`, if any. An unreadable record reads as none:
/// at worst the step is submitted again, and its lock keeps it computed once.
pub fn read(cache: &Cache, key: &StepKey) -> Option<Queued> {
    serde_json::from_slice(&fs::read(record_path(cache, key)).ok()?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step_kind::StepKind;

    #[test]
    fn a_submission_is_remembered_per_key() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let key = StepKey::compute(StepKind::Train, &serde_json::json!({}), &[]);
        assert_eq!(read(&cache, &key), None);
        let queued =
            Queued { label: "train/x".into(), task: "12_3".into(), log: "/l/12_3.log".into(), submitted_at: 1 };
        record(&cache, &key, &queued).unwrap();
        assert_eq!(read(&cache, &key), Some(queued.clone()));
        assert_eq!(queued.job(), "12");
    }
}
