//! Staging folders that killed processes left behind. A step is written into
//! `<cache>/tmp/<kind>-<key>-<pid>` while its lock is held, then renamed into
//! place; a process killed in between leaves the folder. Whoever can take the
//! step's lock knows nobody is writing it, so the folder is garbage: the next
//! run and `grid gc` remove it.

use std::fs;
use std::path::PathBuf;

use super::gc::{Lock, try_lock};
use super::{Cache, CacheError, Kind, StepKey, io_err};

impl Cache {
    pub(super) fn staging_name<K: Kind>(kind: K, key: &StepKey) -> String {
        format!("{}-{}-{}", kind.name(), key.as_str(), std::process::id())
    }

    /// Whether an interrupted attempt at this step left a staging folder.
    pub fn has_leftover<K: Kind>(&self, kind: K, key: &StepKey) -> bool {
        let prefix = format!("{}-{}-", kind.name(), key.as_str());
        fs::read_dir(self.root.join("tmp"))
            .map(|entries| entries.flatten().any(|e| e.file_name().to_string_lossy().starts_with(&prefix)))
            .unwrap_or(false)
    }

    /// Removes (or, dry, lists) every staging folder whose step no process is
    /// computing, and the resume folders of cached steps. Folders of steps
    /// being computed, and names this version did not write, are left alone.
    pub fn sweep_leftovers<K: Kind>(&self, dry_run: bool) -> Result<Vec<PathBuf>, CacheError> {
        let tmp = self.root.join("tmp");
        let entries = match fs::read_dir(&tmp) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return self.sweep_resumed::<K>(dry_run),
            Err(e) => return Err(CacheError::Io { path: tmp, source: e }),
        };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        let mut swept = Vec::new();
        for path in paths {
            let Some((kind, key)) = path.file_name().and_then(|n| n.to_str()).and_then(parse::<K>) else { continue };
            let lock = self.lock_path(kind, &key);
            // Held while removing, so no process starts writing the step meanwhile.
            let Lock::Free(_held) = try_lock(&lock)? else { continue };
            if !dry_run {
                fs::remove_dir_all(&path).map_err(io_err(&path))?;
            }
            swept.push(path);
        }
        swept.extend(self.sweep_resumed::<K>(dry_run)?);
        Ok(swept)
    }
}

/// `<kind>-<64 hex key>-<pid>`.
fn parse<K: Kind>(name: &str) -> Option<(K, String)> {
    let mut parts = name.splitn(3, '-');
    let kind = parts.next()?;
    let key = parts.next()?;
    let pid = parts.next()?;
    let kind = K::named(kind)?;
    let is_key = key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit());
    (is_key && !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit())).then(|| (kind, key.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::testing::StepKind;

    #[test]
    fn a_killed_attempt_is_swept_and_one_in_progress_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let key = |n: u32| StepKey::compute(StepKind::Attribute, &serde_json::json!({ "n": n }), &[]);
        let (dead, alive) = (key(1), key(2));
        // A killed process: its staging folder stays, its lock went with it.
        let staging = cache.begin(StepKind::Attribute, &dead).unwrap();
        fs::write(staging.dir.join("attributions.jsonl"), "half a line").unwrap();
        drop(staging);
        // A process at work holds the lock while it writes.
        let _held = cache.lock(StepKind::Attribute, &alive).unwrap();
        let working = cache.begin(StepKind::Attribute, &alive).unwrap();
        // A folder of another layout is not ours to judge.
        let foreign = dir.path().join("tmp").join("attribute-0123456789ab-77");
        fs::create_dir_all(&foreign).unwrap();

        let listed = cache.sweep_leftovers::<StepKind>(true).unwrap();
        assert_eq!(listed.len(), 1);
        assert!(listed[0].exists(), "a dry sweep removes nothing");
        assert!(cache.has_leftover(StepKind::Attribute, &dead));

        let swept = cache.sweep_leftovers::<StepKind>(false).unwrap();
        assert_eq!(swept, listed);
        assert!(!cache.has_leftover(StepKind::Attribute, &dead));
        assert!(working.dir.exists() && foreign.exists());
        assert!(cache.has_leftover(StepKind::Attribute, &alive));
    }
}
