//! Resume folders: `<cache>/resume/<kind>-<key>/`, where a long step keeps
//! what it needs to go on after an interruption (a training run's snapshots,
//! see `train::Snapshots`). Written only while the step's lock is held;
//! removed once the step is published, and by `grid gc` / the next run when
//! the step is cached. A folder of a step not yet cached is progress, not
//! garbage: it is kept.

use std::fs;
use std::path::PathBuf;

use super::gc::{Lock, try_lock};
use super::{Cache, CacheError, Entry, Kind, StepKey, io_err};

impl Cache {
    /// The step's resume folder (not created here).
    pub fn resume_dir<K: Kind>(&self, kind: K, key: &StepKey) -> PathBuf {
        self.root.join("resume").join(format!("{}-{}", kind.name(), key.as_str()))
    }

    /// Removes the step's resume folder (its result is published).
    pub fn remove_resume<K: Kind>(&self, kind: K, key: &StepKey) -> Result<(), CacheError> {
        let dir = self.resume_dir(kind, key);
        match fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(CacheError::Io { path: dir, source: e }),
            _ => Ok(()),
        }
    }

    /// Removes (or, dry, lists) the resume folders of steps that are cached
    /// and that no process is computing.
    pub(super) fn sweep_resumed<K: Kind>(&self, dry_run: bool) -> Result<Vec<PathBuf>, CacheError> {
        let root = self.root.join("resume");
        let entries = match fs::read_dir(&root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(CacheError::Io { path: root, source: e }),
        };
        let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        paths.sort();
        let mut swept = Vec::new();
        for path in paths {
            let Some((kind, key)) = path.file_name().and_then(|n| n.to_str()).and_then(parse::<K>) else { continue };
            let Lock::Free(_held) = try_lock(&self.lock_path(kind, key.as_str()))? else { continue };
            if !matches!(self.entry(kind, &key)?, Entry::Valid(_)) {
                continue;
            }
            if !dry_run {
                fs::remove_dir_all(&path).map_err(io_err(&path))?;
            }
            swept.push(path);
        }
        Ok(swept)
    }
}

/// `<kind>-<64 hex key>`.
fn parse<K: Kind>(name: &str) -> Option<(K, StepKey)> {
    let (kind, key) = name.split_once('-')?;
    let kind = K::named(kind)?;
    StepKey::parse(key).map(|key| (kind, key))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::testing::StepKind;

    #[test]
    fn a_resume_folder_is_kept_until_its_step_is_cached() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let key = StepKey::compute(StepKind::Train, &serde_json::json!({ "n": 1 }), &[]);
        let resume = cache.resume_dir(StepKind::Train, &key);
        fs::create_dir_all(&resume).unwrap();
        fs::write(resume.join("snapshot.json"), "{}").unwrap();
        assert!(cache.sweep_resumed::<StepKind>(false).unwrap().is_empty(), "not cached: progress, kept");
        assert!(resume.exists());

        let staging = cache.begin(StepKind::Train, &key).unwrap();
        fs::write(staging.dir.join("model.safetensors"), "weights").unwrap();
        cache.publish(staging, "train/x", &serde_json::json!({}), Vec::new(), 1.0, "cpu").unwrap();
        assert_eq!(cache.sweep_resumed::<StepKind>(true).unwrap(), vec![resume.clone()], "dry: listed");
        assert!(resume.exists());
        assert_eq!(cache.sweep_resumed::<StepKind>(false).unwrap(), vec![resume.clone()]);
        assert!(!resume.exists());
        cache.remove_resume(StepKind::Train, &key).unwrap();
    }
}
