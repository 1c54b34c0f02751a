//! The grid texts runs planned from: `cache/grids/<sha256>.toml`.
//!
//! A run's `grid step` workers (child processes, Slurm tasks that may start
//! hours later) plan the grid again to find their step. Read from the grid
//! file, an edit made meanwhile (a method added, a key deleted) gave them
//! other keys, or a grid their `--set` no longer applies to, and their steps
//! failed. So a run freezes the text it planned (the file with its `extends`
//! merged and its `--set` applied) here, under its own hash, and its workers
//! read that. Files are small, immutable and shared by every run of the same
//! text; each run of a text renews its file's modification time, so `grid gc`
//! can tell which texts no run has used for a while ([`collect_frozen`]).

use std::collections::HashSet;
use std::fs;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use super::gc::{modified_at, read_dir_or_empty};
use super::{Cache, CacheError, io_err};

/// How long after its last run a frozen grid stays whatever `gc` is told: a
/// Slurm array submitted from it may wait in the queue that long.
pub const FROZEN_GRACE: Duration = Duration::from_secs(7 * 86_400);

const FOLDER: &str = "grids";

impl Cache {
    /// Writes `text` as a frozen grid (once per distinct text) and returns its path.
    pub fn freeze_grid(&self, text: &str) -> Result<PathBuf, CacheError> {
        let path = self.frozen_grid_path(text);
        if fs::read_to_string(&path).is_ok_and(|written| written == text) {
            // Renewed, so that gc sees this text as in use. Best effort: a
            // cache this process may read but not touch still runs.
            let _ = fs::File::options().write(true).open(&path).and_then(|file| file.set_modified(SystemTime::now()));
            return Ok(path);
        }
        let dir = self.root.join(FOLDER);
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let staged = path.with_extension(format!("toml.{}", std::process::id()));
        fs::write(&staged, text).map_err(io_err(&staged))?;
        fs::rename(&staged, &path).map_err(io_err(&path))?;
        Ok(path)
    }

    /// Where `text` is (or would be) frozen.
    pub fn frozen_grid_path(&self, text: &str) -> PathBuf {
        self.root.join(FOLDER).join(format!("{}.toml", super::files::sha256_hex(text.as_bytes())))
    }
}

/// Which frozen grids `gc` removes.
#[derive(Debug, Clone, Copy)]
pub struct FrozenPolicy<'a> {
    /// The frozen paths of the grids `gc` keeps (`None`: no grids were given).
    pub keep: Option<&'a HashSet<PathBuf>>,
    /// `--older-than`, seconds since the Unix epoch.
    pub older_than: Option<u64>,
    /// Now, seconds since the Unix epoch.
    pub now: u64,
    pub dry_run: bool,
}

/// Removes (or, dry, lists) the frozen grids that no kept grid is and that
/// no run used within [`FROZEN_GRACE`]; with `older_than`, also the kept
/// ones last used before it (the grace still holds: a worker may need one).
pub fn collect_frozen(cache: &Cache, policy: FrozenPolicy<'_>) -> Result<Vec<PathBuf>, CacheError> {
    let grace_start = policy.now.saturating_sub(FROZEN_GRACE.as_secs());
    let mut removed = Vec::new();
    for path in read_dir_or_empty(&cache.root.join(FOLDER))? {
        if path.extension().is_none_or(|ext| ext != "toml") {
            continue;
        }
        // When a run last froze (or renewed) it.
        let used = modified_at(&path);
        let planned = policy.keep.is_none_or(|keep| keep.contains(&path));
        let recent = policy.older_than.is_none_or(|cutoff| used >= cutoff);
        if used >= grace_start || (planned && recent) {
            continue;
        }
        if !policy.dry_run {
            fs::remove_file(&path).map_err(io_err(&path))?;
        }
        removed.push(path);
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_per_text_holding_that_text() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let a = cache.freeze_grid("name = \"a\"\n").unwrap();
        assert_eq!(cache.freeze_grid("name = \"a\"\n").unwrap(), a);
        let b = cache.freeze_grid("name = \"b\"\n").unwrap();
        assert_ne!(a, b);
        assert_eq!(fs::read_to_string(&a).unwrap(), "name = \"a\"\n");
        assert!(a.starts_with(dir.path().join("grids")));
        assert_eq!(cache.frozen_grid_path("name = \"b\"\n"), b);
    }

    /// Sets a frozen grid's last use to `days` ago.
    fn age(path: &std::path::Path, days: u64) {
        let then = SystemTime::now() - Duration::from_secs(days * 86_400);
        fs::File::options().write(true).open(path).unwrap().set_modified(then).unwrap();
    }

    #[test]
    fn gc_keeps_kept_grids_and_recent_runs_and_removes_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let kept = cache.freeze_grid("name = \"kept\"\n").unwrap();
        let old = cache.freeze_grid("name = \"old\"\n").unwrap();
        let fresh = cache.freeze_grid("name = \"fresh\"\n").unwrap();
        age(&kept, 30);
        age(&old, 30);
        let now = crate::clock::unix_now();
        let keep: HashSet<PathBuf> = [kept.clone()].into();
        let policy = FrozenPolicy { keep: Some(&keep), older_than: None, now, dry_run: true };

        assert_eq!(collect_frozen(&cache, policy).unwrap(), vec![old.clone()]);
        assert!(old.exists(), "a dry run removes nothing");
        assert_eq!(collect_frozen(&cache, FrozenPolicy { dry_run: false, ..policy }).unwrap(), vec![old.clone()]);
        assert!(!old.exists() && kept.exists() && fresh.exists());

        // Without grids nothing is unplanned; --older-than removes by last use, past the grace.
        let no_grids = FrozenPolicy { keep: None, older_than: None, now, dry_run: false };
        assert!(collect_frozen(&cache, no_grids).unwrap().is_empty());
        let by_age = FrozenPolicy { older_than: Some(now - 86_400), ..no_grids };
        assert_eq!(collect_frozen(&cache, by_age).unwrap(), vec![kept.clone()]);
        assert!(fresh.exists(), "used today: a queued worker may still read it");
    }

    #[test]
    fn freezing_a_text_again_renews_its_last_use() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let path = cache.freeze_grid("name = \"a\"\n").unwrap();
        age(&path, 30);
        let stale = modified_at(&path);
        cache.freeze_grid("name = \"a\"\n").unwrap();
        assert!(modified_at(&path) > stale + 29 * 86_400);
    }
}
