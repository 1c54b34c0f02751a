//! `grid gc --remote`: what the local collection does (`crate::gc`), on the
//! remote. A record goes first, then its payload, so a reader never finds a
//! record whose payload is being deleted; a payload another kept record names
//! (a reused training's) stays. Uploads no record names (a writer killed
//! mid-upload, or one that lost the race and could not clean up) go once
//! they are older than [`ORPHAN_GRACE`], which no upload in progress is.

use std::collections::{BTreeMap, HashSet};
use std::time::Duration;

use super::{Published, Remote};
use crate::{CacheError, Kind, StepKey};

/// How old an upload no record names must be before it is removed.
pub const ORPHAN_GRACE: Duration = Duration::from_secs(24 * 3600);

/// What a remote collection removed (or, dry, would remove) and kept.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteGcSummary<K> {
    /// Steps whose records were removed, with their kind and label.
    pub removed: Vec<(K, String)>,
    /// Bytes of the payloads removed with them, and of orphaned uploads.
    pub removed_bytes: u64,
    pub kept: usize,
    /// Upload folders no record names, removed (older than the grace).
    pub orphans: Vec<String>,
    /// Records that are not step records (left alone).
    pub unreadable: Vec<String>,
    /// Damaged records readers set aside (`damaged/…`), removed once older
    /// than the grace.
    pub set_aside: Vec<String>,
}

impl<K> Default for RemoteGcSummary<K> {
    fn default() -> Self {
        RemoteGcSummary {
            removed: Vec::new(),
            removed_bytes: 0,
            kept: 0,
            orphans: Vec::new(),
            unreadable: Vec::new(),
            set_aside: Vec::new(),
        }
    }
}

/// Which records go: those not in `keep` (when given) or finished before
/// `older_than` (when given).
#[derive(Debug, Clone, Copy)]
pub struct RemoteGcOptions<'a> {
    pub keep: Option<&'a HashSet<StepKey>>,
    pub older_than: Option<u64>,
    pub dry_run: bool,
    /// Seconds since the Unix epoch (the orphans' grace counts from it).
    pub now: u64,
}

impl Remote {
    /// Removes the records (and payloads) `options` does not keep, and old
    /// orphaned uploads.
    pub fn collect<K: Kind>(&self, options: RemoteGcOptions) -> Result<RemoteGcSummary<K>, CacheError> {
        let mut summary = RemoteGcSummary::default();
        let mut kept_payloads = HashSet::new();
        let mut doomed: Vec<(String, Published<K>)> = Vec::new();
        for (object, _) in self.list("steps")? {
            let Some((kind, key)) = record_key(&object) else {
                summary.unreadable.push(object);
                continue;
            };
            let published = match self.entry(kind, &key)? {
                super::RemoteEntry::Published(published) => *published,
                super::RemoteEntry::Missing => continue,
                super::RemoteEntry::Damaged(_) => {
                    summary.unreadable.push(object);
                    continue;
                }
            };
            let planned = options.keep.is_none_or(|keep| keep.contains(&key));
            let recent = options.older_than.is_none_or(|cutoff| published.manifest.finished_at >= cutoff);
            if planned && recent {
                summary.kept += 1;
                kept_payloads.insert(published.payload.clone());
            } else {
                doomed.push((object, published));
            }
        }
        let uploads = self.uploads()?;
        for (record, published) in &doomed {
            summary.removed.push((published.manifest.kind, published.manifest.label.clone()));
            if !kept_payloads.contains(&published.payload) {
                summary.removed_bytes += uploads.get(&published.payload).map_or(0, |(_, bytes)| *bytes);
            }
            if !options.dry_run {
                self.store.delete(record).map_err(|e| self.error(e))?;
            }
        }
        let doomed_payloads: HashSet<&String> = doomed.iter().map(|(_, p)| &p.payload).collect();
        let grace = ORPHAN_GRACE.as_secs();
        for (folder, (objects, bytes)) in &uploads {
            if kept_payloads.contains(folder) {
                continue;
            }
            let removed_with_record = doomed_payloads.contains(folder);
            let old = upload_started(folder).is_some_and(|at| at + grace <= options.now);
            if !removed_with_record && !old {
                continue;
            }
            if !removed_with_record {
                summary.orphans.push(folder.clone());
                summary.removed_bytes += bytes;
            }
            if !options.dry_run {
                for object in objects {
                    self.store.delete(object).map_err(|e| self.error(e))?;
                }
            }
        }
        for (object, bytes) in self.list("damaged")? {
            if set_aside_at(&object).is_some_and(|at| at + grace <= options.now) {
                summary.set_aside.push(object.clone());
                summary.removed_bytes += bytes;
                if !options.dry_run {
                    self.store.delete(&object).map_err(|e| self.error(e))?;
                }
            }
        }
        Ok(summary)
    }

    /// Every upload folder (`payloads/<kind>/<xx>/<key>/<upload>`) with its
    /// objects and their bytes.
    fn uploads(&self) -> Result<BTreeMap<String, (Vec<String>, u64)>, CacheError> {
        let mut uploads: BTreeMap<String, (Vec<String>, u64)> = BTreeMap::new();
        for (object, bytes) in self.list("payloads")? {
            let parts: Vec<&str> = object.split('/').collect();
            if parts.len() < 6 {
                continue;
            }
            let folder = parts[..5].join("/");
            let entry = uploads.entry(folder).or_default();
            entry.0.push(object);
            entry.1 += bytes;
        }
        Ok(uploads)
    }
}

/// The kind and key of a record's object path, `steps/<kind>/<xx>/<key>.json`.
fn record_key<K: Kind>(object: &str) -> Option<(K, StepKey)> {
    let mut parts = object.strip_prefix("steps/")?.split('/');
    let kind: K = serde_json::from_value(serde_json::Value::String(parts.next()?.to_string())).ok()?;
    let _shard = parts.next()?;
    let key = StepKey::parse(parts.next()?.strip_suffix(".json")?)?;
    parts.next().is_none().then_some((kind, key))
}

/// When an upload began: its folder's name starts with the Unix seconds.
fn upload_started(folder: &str) -> Option<u64> {
    folder.rsplit('/').next()?.split('-').next()?.parse().ok()
}

/// When a damaged record was set aside: `damaged/<kind>/<xx>/<key>.<secs>-<hash>.json`.
fn set_aside_at(object: &str) -> Option<u64> {
    let name = object.rsplit('/').next()?.strip_suffix(".json")?;
    name.split_once('.')?.1.split('-').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::Cache;
    use crate::kind::testing::StepKind;

    fn publish(cache: &Cache, remote: &Remote, n: u32) -> StepKey {
        let params = serde_json::json!({ "n": n });
        let key = StepKey::compute(StepKind::Score, &params, &[]);
        let staging = cache.begin(StepKind::Score, &key).unwrap();
        fs::write(staging.dir.join("scores.json"), format!("[{n}]")).unwrap();
        let manifest = cache.publish(staging, &format!("score/{n}"), &params, Vec::new(), 1.0, "cpu").unwrap();
        remote.push(cache, &manifest).unwrap();
        key
    }

    #[test]
    fn what_no_grid_plans_goes_record_first_and_old_orphans_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let remote_dir = dir.path().join("remote");
        let remote = Remote::folder(&remote_dir).unwrap();
        let cache = Cache::open(dir.path().join("cache")).unwrap();
        let (kept, dropped) = (publish(&cache, &remote, 1), publish(&cache, &remote, 2));
        // A killed writer's upload, a day and a minute old; and one in progress.
        let old = remote_dir.join("payloads/score/ab").join("ab".repeat(32)).join("1000-deadbeef");
        fs::create_dir_all(&old).unwrap();
        fs::write(old.join("scores.json"), "[9]").unwrap();
        let young = remote_dir.join("payloads/score/cd").join("cd".repeat(32)).join("90000-feedface");
        fs::create_dir_all(&young).unwrap();
        fs::write(young.join("scores.json"), "[8]").unwrap();

        // Damaged records readers set aside, one a day and a minute old.
        let aside = remote_dir.join("damaged/score/ab");
        fs::create_dir_all(&aside).unwrap();
        fs::write(aside.join(format!("{}.1000-0123abcd.json", "ab".repeat(32))), "{}").unwrap();
        fs::write(aside.join(format!("{}.90000-0123abcd.json", "ab".repeat(32))), "{}").unwrap();

        let keep = HashSet::from([kept.clone()]);
        let now = 1000 + 24 * 3600 + 60;
        let options = RemoteGcOptions { keep: Some(&keep), older_than: None, dry_run: true, now };
        let dry = remote.collect(options).unwrap();
        assert_eq!(dry.removed, [(StepKind::Score, "score/2".to_string())]);
        assert_eq!(dry.kept, 1);
        assert_eq!(dry.orphans.len(), 1, "{:?}", dry.orphans);
        assert!(dry.orphans[0].ends_with("1000-deadbeef"));
        assert_eq!(dry.set_aside.len(), 1, "{:?}", dry.set_aside);
        assert!(dry.set_aside[0].contains(".1000-"));
        assert_eq!(dry.removed_bytes, 3 + 3 + 2);
        assert!(remote.holds(StepKind::Score, &dropped).unwrap(), "a dry run removes nothing");

        let done = remote.collect(RemoteGcOptions { dry_run: false, ..options }).unwrap();
        assert_eq!(done, dry);
        assert!(!remote.holds(StepKind::Score, &dropped).unwrap());
        assert!(remote.holds(StepKind::Score, &kept).unwrap());
        let left: Vec<String> = remote.list("payloads").unwrap().into_iter().map(|(o, _)| o).collect();
        assert_eq!(left.len(), 2, "the kept step's payload and the young upload: {left:?}");
        assert!(left.iter().any(|o| o.contains("90000-feedface")));
        let aside_left: Vec<String> = remote.list("damaged").unwrap().into_iter().map(|(o, _)| o).collect();
        assert_eq!(aside_left.len(), 1, "the young set-aside record stays: {aside_left:?}");
        // What is kept is still served whole.
        let other = Cache::open(dir.path().join("other")).unwrap();
        assert!(matches!(remote.pull(&other, StepKind::Score, &kept).unwrap(), super::super::Pulled::Installed { .. }));
    }

    #[test]
    fn record_paths_parse_and_others_do_not() {
        let key = "ef".repeat(32);
        assert_eq!(
            record_key::<StepKind>(&format!("steps/train/ef/{key}.json")),
            Some((StepKind::Train, StepKey::parse(&key).unwrap()))
        );
        assert_eq!(record_key::<StepKind>(&format!("steps/nonsense/ef/{key}.json")), None);
        assert_eq!(record_key::<StepKind>("steps/train/ef/short.json"), None);
        assert_eq!(upload_started("payloads/train/ef/k/1764382000-0123abcd"), Some(1_764_382_000));
        assert_eq!(set_aside_at(&format!("damaged/train/ef/{key}.1764382000-0123abcd.json")), Some(1_764_382_000));
        assert_eq!(set_aside_at(&format!("damaged/train/ef/{key}.json")), None);
    }
}
