//! Steps that failed, remembered so that `grid status` and `grid show` can say
//! why, and where the output of the attempt is: `<cache>/failed/<key>.json`
//! and, for a step run in a child process, `<key>.log`. Publishing the step
//! removes both; a failure never makes a step count as computed.

use std::fs;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{Cache, CacheError, Kind, StepKey, io_err};

/// The last failed attempt at a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure<K> {
    pub kind: K,
    pub label: String,
    pub error: String,
    /// Seconds since the Unix epoch when the attempt ended.
    pub at: u64,
    /// The attempt's output, when it ran in a child process.
    pub log: Option<PathBuf>,
}

/// Lines of a failed worker's output kept in its log: the end is what explains it.
const LOG_LINES: usize = 2_000;

impl Cache {
    fn failed_dir(&self) -> PathBuf {
        self.root.join("failed")
    }

    /// Records a failed attempt, replacing the previous record of the step.
    pub fn record_failure<K: Kind>(
        &self,
        kind: K,
        key: &StepKey,
        label: &str,
        error: &str,
        output: &[String],
    ) -> Result<Failure<K>, CacheError> {
        let dir = self.failed_dir();
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let log = if output.is_empty() {
            None
        } else {
            let path = dir.join(format!("{}.log", key.as_str()));
            let kept = &output[output.len().saturating_sub(LOG_LINES)..];
            fs::write(&path, kept.join("\n") + "\n").map_err(io_err(&path))?;
            Some(path)
        };
        self.record_failure_with_log(kind, key, label, error, log)
    }

    /// Records a failed attempt whose output is already in a file of its own
    /// (a Slurm task's log), replacing the previous record of the step.
    pub fn record_failure_with_log<K: Kind>(
        &self,
        kind: K,
        key: &StepKey,
        label: &str,
        error: &str,
        log: Option<PathBuf>,
    ) -> Result<Failure<K>, CacheError> {
        let at = crate::clock::unix_now();
        let failure = Failure { kind, label: label.to_string(), error: error.to_string(), at, log };
        super::write_json_whole(&self.failed_dir().join(format!("{}.json", key.as_str())), &failure)?;
        Ok(failure)
    }

    /// The last failed attempt at `key` since it was last published, if any.
    /// An unreadable record reads as none: it only ever explains.
    pub fn failure<K: Kind>(&self, key: &StepKey) -> Option<Failure<K>> {
        let bytes = fs::read(self.failed_dir().join(format!("{}.json", key.as_str()))).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Forgets the failures of a step that has now been computed.
    pub(super) fn clear_failure(&self, key: &StepKey) {
        for extension in ["json", "log"] {
            let _ = fs::remove_file(self.failed_dir().join(format!("{}.{extension}", key.as_str())));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::testing::StepKind;

    #[test]
    fn a_failure_is_remembered_with_its_log_until_the_step_is_published() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let key = StepKey::compute(StepKind::Train, &serde_json::json!({ "a": 1 }), &[]);
        assert_eq!(cache.failure::<StepKind>(&key), None);
        let lines: Vec<String> = (0..LOG_LINES + 10).map(|i| format!("line {i}")).collect();
        let recorded = cache.record_failure(StepKind::Train, &key, "train/x", "it broke", &lines).unwrap();
        let read = cache.failure::<StepKind>(&key).unwrap();
        assert_eq!(read, recorded);
        assert_eq!((read.label.as_str(), read.error.as_str()), ("train/x", "it broke"));
        let log = fs::read_to_string(read.log.unwrap()).unwrap();
        assert!(log.starts_with("line 10\n") && log.ends_with(&format!("line {}\n", LOG_LINES + 9)), "{log}");

        let staging = cache.begin(StepKind::Train, &key).unwrap();
        fs::write(staging.dir.join("out.txt"), "x").unwrap();
        cache.publish(staging, "train/x", &serde_json::json!({ "a": 1 }), Vec::new(), 0.1, "cpu").unwrap();
        assert_eq!(cache.failure::<StepKind>(&key), None);
        assert!(!dir.path().join("failed").join(format!("{}.log", key.as_str())).exists());
    }

    #[test]
    fn an_in_process_failure_has_no_log() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let key = StepKey::compute(StepKind::Score, &serde_json::json!({}), &[]);
        let failure = cache.record_failure(StepKind::Score, &key, "score/x", "no", &[]).unwrap();
        assert_eq!(failure.log, None);
    }
}
