//! `grid gc`: remove the cached steps that no kept grid plans.
//!
//! A cache shared by many grids and many edits of them grows without bound:
//! every changed parameter leaves the old key's folder behind. `gc` is given
//! the set of keys to keep (every step the user's grids plan, cached or not)
//! and removes the other step folders with their lock files and failure
//! records, and the staging folders in `tmp/` that no process is writing.
//! `labels/` (why a step will run) and downloaded checkpoints stay;
//! `kernels/` (compiled GPU kernels, expensive to rebuild and not tied to any
//! grid) goes only when asked for.
//!
//! A step being computed holds its lock; `gc` takes each lock without waiting
//! and leaves a busy step alone, so it is safe beside a running `grid run`.

use std::collections::HashSet;
use std::fs::{self, File};
use std::path::{Path, PathBuf};

use super::{Cache, CacheError, Kind, StepKey, io_err};

/// What a collection found, removed (or, dry, would remove) and kept.
#[derive(Debug, Clone, PartialEq)]
pub struct GcSummary<K> {
    /// Step folders removed (or to remove), with their kind.
    pub removed: Vec<(K, PathBuf)>,
    pub removed_bytes: u64,
    /// Step folders kept because a grid plans them.
    pub kept: usize,
    /// Step folders left because another process holds their lock.
    pub busy: Vec<PathBuf>,
    /// Staging folders of killed attempts (`tmp/`), removed (or to remove).
    pub leftovers: Vec<PathBuf>,
    /// Size of `kernels/`, and whether it was removed.
    pub kernel_bytes: u64,
    pub kernels_removed: bool,
}

impl<K> Default for GcSummary<K> {
    fn default() -> Self {
        GcSummary {
            removed: Vec::new(),
            removed_bytes: 0,
            kept: 0,
            busy: Vec::new(),
            leftovers: Vec::new(),
            kernel_bytes: 0,
            kernels_removed: false,
        }
    }
}

/// How far `gc` goes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GcOptions {
    /// Report only; remove nothing.
    pub dry_run: bool,
    /// Also remove `kernels/`.
    pub kernels: bool,
    /// Also remove every step finished before this time (seconds since the
    /// Unix epoch), whether a grid plans it or not.
    pub older_than: Option<u64>,
}

/// Removes every step folder of `cache` whose key is not in `keep` (when
/// given), or that finished before `options.older_than` (when given).
pub fn collect<K: Kind>(
    cache: &Cache,
    keep: Option<&HashSet<StepKey>>,
    options: GcOptions,
) -> Result<GcSummary<K>, CacheError> {
    let keep: Option<HashSet<&str>> = keep.map(|keep| keep.iter().map(StepKey::as_str).collect());
    let kept = |name: &str, entry: &Path| {
        let planned = keep.as_ref().is_none_or(|keep| keep.contains(name));
        let recent = options.older_than.is_none_or(|cutoff| finished_at(entry) >= cutoff);
        planned && recent
    };
    let mut summary = GcSummary::default();
    for &kind in K::ALL {
        let kind_dir = cache.root().join(kind.name());
        for shard in read_dir_or_empty(&kind_dir)? {
            for entry in read_dir_or_empty(&shard)? {
                let Some(name) = entry.file_name().and_then(|n| n.to_str()).map(str::to_owned) else { continue };
                // Lock files are removed with their step, below.
                if !entry.is_dir() || !is_key(&name) {
                    continue;
                }
                if kept(&name, &entry) {
                    summary.kept += 1;
                    continue;
                }
                let lock_path = shard.join(format!("{name}.lock"));
                let Lock::Free(_held) = try_lock(&lock_path)? else {
                    summary.busy.push(entry);
                    continue;
                };
                summary.removed_bytes += size_of(&entry);
                if !options.dry_run {
                    fs::remove_dir_all(&entry).map_err(io_err(&entry))?;
                    // Unlinking a held lock file is fine on Unix: the holder is us.
                    let _ = fs::remove_file(&lock_path);
                    let _ = fs::remove_file(shard.join(format!("{name}.checked")));
                    let _ = fs::remove_file(shard.join(format!("{name}.published")));
                }
                summary.removed.push((kind, entry));
            }
        }
    }
    summary.leftovers = cache.sweep_leftovers::<K>(options.dry_run)?;
    // Failure records of steps no grid plans explain nothing any more.
    let failed = cache.root().join("failed");
    for record in read_dir_or_empty(&failed)? {
        let Some(name) = record.file_name().and_then(|n| n.to_str()) else { continue };
        let key = name.split('.').next().unwrap_or_default();
        let planned = keep.as_ref().is_none_or(|keep| keep.contains(key));
        if is_key(key) && !planned && !options.dry_run {
            let _ = fs::remove_file(&record);
        }
    }
    let kernels = cache.root().join(super::KERNELS_FOLDER);
    summary.kernel_bytes = size_of(&kernels);
    if options.kernels && kernels.exists() {
        if !options.dry_run {
            fs::remove_dir_all(&kernels).map_err(io_err(&kernels))?;
        }
        summary.kernels_removed = true;
    }
    Ok(summary)
}

/// The part of a manifest that says when its step finished.
#[derive(serde::Deserialize)]
struct Finished {
    finished_at: u64,
}

/// When a step folder's step finished: its manifest's `finished_at`, or for
/// a folder without a readable manifest, the folder's modification time.
fn finished_at(step_dir: &Path) -> u64 {
    let from_manifest = fs::read(step_dir.join("manifest.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Finished>(&bytes).ok())
        .map(|m| m.finished_at);
    from_manifest.unwrap_or_else(|| modified_at(step_dir))
}

/// A path's modification time in seconds since the Unix epoch (0 when unknown).
pub(super) fn modified_at(path: &Path) -> u64 {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_secs())
}

fn is_key(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A step's lock, taken without waiting.
pub(super) enum Lock {
    /// No process computes the step; held (when the file exists) until dropped.
    Free(Option<File>),
    /// Another process holds it.
    Busy,
}

pub(super) fn try_lock(path: &Path) -> Result<Lock, CacheError> {
    let file = match File::options().write(true).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Lock::Free(None)),
        Err(e) => return Err(CacheError::Io { path: path.to_path_buf(), source: e }),
    };
    match file.try_lock() {
        Ok(()) => Ok(Lock::Free(Some(file))),
        Err(fs::TryLockError::WouldBlock) => Ok(Lock::Busy),
        Err(fs::TryLockError::Error(e)) => Err(CacheError::Io { path: path.to_path_buf(), source: e }),
    }
}

/// The entries of `dir`, sorted; none when it does not exist.
pub(super) fn read_dir_or_empty(dir: &Path) -> Result<Vec<PathBuf>, CacheError> {
    match fs::read_dir(dir) {
        Ok(entries) => {
            let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
            paths.sort();
            Ok(paths)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(CacheError::Io { path: dir.to_path_buf(), source: e }),
    }
}

/// Bytes of the files under `path` (0 if it does not exist).
fn size_of(path: &Path) -> u64 {
    let Ok(meta) = fs::symlink_metadata(path) else { return 0 };
    if !meta.is_dir() {
        return meta.len();
    }
    fs::read_dir(path).map(|entries| entries.flatten().map(|e| size_of(&e.path())).sum()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::testing::StepKind;

    fn publish(cache: &Cache, kind: StepKind, n: u64) -> StepKey {
        let params = serde_json::json!({ "n": n });
        let key = StepKey::compute(kind, &params, &[]);
        let _lock = cache.lock(kind, &key).unwrap();
        let staging = cache.begin(kind, &key).unwrap();
        fs::write(staging.dir.join("payload.txt"), vec![b'x'; 100]).unwrap();
        cache.publish(staging, &format!("{kind}/{n}"), &params, vec![], 0.0, "cpu").unwrap();
        key
    }

    #[test]
    fn removes_only_what_no_grid_keeps() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let kept = publish(&cache, StepKind::Train, 1);
        let stale = publish(&cache, StepKind::Train, 2);
        let stale_score = publish(&cache, StepKind::Score, 3);
        let kernels = dir.path().join("kernels/cuda/gpu");
        fs::create_dir_all(&kernels).unwrap();
        fs::write(kernels.join("k.bin"), [0u8; 10]).unwrap();
        let keep: HashSet<StepKey> = [kept.clone()].into();

        let dry = collect::<StepKind>(
            &cache,
            Some(&keep),
            GcOptions { dry_run: true, kernels: true, ..GcOptions::default() },
        )
        .unwrap();
        assert_eq!(dry.removed.len(), 2);
        assert_eq!(dry.kept, 1);
        assert!(dry.removed_bytes >= 200, "{dry:?}");
        assert_eq!(dry.kernel_bytes, 10);
        assert!(cache.lookup(StepKind::Train, &stale).unwrap().is_some(), "a dry run removes nothing");
        assert!(kernels.exists());

        let done = collect::<StepKind>(&cache, Some(&keep), GcOptions::default()).unwrap();
        assert_eq!(done.removed, dry.removed);
        assert!(cache.lookup(StepKind::Train, &kept).unwrap().is_some());
        assert!(cache.lookup(StepKind::Train, &stale).unwrap().is_none());
        assert!(cache.lookup(StepKind::Score, &stale_score).unwrap().is_none());
        let stale_dir = cache.step_dir(StepKind::Train, &stale);
        assert!(!stale_dir.with_file_name(format!("{stale}.lock")).exists(), "its lock file goes with it");
        assert!(kernels.exists(), "kernels stay unless asked for");
        assert!(!done.kernels_removed);

        let again =
            collect::<StepKind>(&cache, Some(&keep), GcOptions { kernels: true, ..GcOptions::default() }).unwrap();
        assert!(again.removed.is_empty());
        assert!(again.kernels_removed && !kernels.exists());
    }

    #[test]
    fn a_step_being_computed_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let busy = publish(&cache, StepKind::Attribute, 1);
        let held = cache.lock(StepKind::Attribute, &busy).unwrap();
        let summary = collect::<StepKind>(&cache, Some(&HashSet::new()), GcOptions::default()).unwrap();
        assert_eq!(summary.busy.len(), 1);
        assert!(summary.removed.is_empty());
        assert!(cache.lookup(StepKind::Attribute, &busy).unwrap().is_some());
        drop(held);
        let summary = collect::<StepKind>(&cache, Some(&HashSet::new()), GcOptions::default()).unwrap();
        assert_eq!(summary.removed.len(), 1);
    }

    #[test]
    fn older_than_removes_steps_finished_before_the_date_planned_or_not() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let old = publish(&cache, StepKind::Train, 1);
        let new = publish(&cache, StepKind::Train, 2);
        // Backdate one manifest by a day.
        let manifest = cache.step_dir(StepKind::Train, &old).join("manifest.json");
        let mut m: serde_json::Value = serde_json::from_slice(&fs::read(&manifest).unwrap()).unwrap();
        let finished = m["finished_at"].as_u64().unwrap();
        m["finished_at"] = serde_json::json!(finished - 86_400);
        fs::write(&manifest, serde_json::to_vec(&m).unwrap()).unwrap();
        // The file changed, so the step no longer checks out; gc goes by the manifest's date alone.
        let cutoff = Some(finished - 3_600);
        let by_age =
            collect::<StepKind>(&cache, None, GcOptions { older_than: cutoff, ..GcOptions::default() }).unwrap();
        assert_eq!(by_age.removed.len(), 1, "{by_age:?}");
        assert!(by_age.removed[0].1.ends_with(old.as_str()));
        assert!(cache.step_dir(StepKind::Train, &new).exists());
        // With grids too, a step goes when either says so.
        let keep: HashSet<StepKey> = HashSet::new();
        let both =
            collect::<StepKind>(&cache, Some(&keep), GcOptions { older_than: cutoff, ..GcOptions::default() }).unwrap();
        assert_eq!(both.removed.len(), 1);
        assert!(!cache.step_dir(StepKind::Train, &new).exists());
    }
}
