//! The cache serves only what it can vouch for: a step folder counts as cached
//! when its manifest parses, names the step's kind and key, and every payload
//! file it lists is there with the size and sha256 it was published with.
//!
//! Hashing every payload on every plan would cost seconds on grids with large
//! checkpoints, so a successful check is remembered beside the step's lock
//! (`<key>.checked`: each file's size and modification time). A file written
//! since (even to the same size) has a new modification time and is hashed
//! again. A damaged entry is never deleted: [`Cache::set_aside`] moves it to
//! `cache/damaged/` for inspection, and the step is computed afresh.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

use super::files::sha256_of;
use super::{Cache, CacheError, Kind, Manifest, StepKey, io_err};

/// What the cache holds for one step.
// Looked at one step at a time and never stored in bulk: boxing the manifest
// would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Entry<K> {
    /// Nothing: the step was never published here (or was collected).
    Missing,
    /// A complete result, checked against its manifest.
    Valid(Manifest<K>),
    /// A folder that cannot be trusted; the step must be computed again.
    Damaged(Damage),
}

/// Why a cached step cannot be served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    /// The file at fault.
    pub path: PathBuf,
    pub problem: String,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.problem)
    }
}

/// A file as last seen intact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Seen {
    name: String,
    bytes: u64,
    modified_ns: u128,
}

fn seen(dir: &Path, name: &str) -> io::Result<Seen> {
    let meta = fs::metadata(dir.join(name))?;
    let modified_ns =
        meta.modified().ok().and_then(|m| m.duration_since(UNIX_EPOCH).ok()).map(|d| d.as_nanos()).unwrap_or(0);
    Ok(Seen { name: name.to_string(), bytes: meta.len(), modified_ns })
}

impl Cache {
    /// `cache/<kind>/<key[0..2]>/<key>.checked`: the files of the last good check.
    fn checked_path<K: Kind>(&self, kind: K, key: &StepKey) -> PathBuf {
        self.root.join(kind.name()).join(&key.as_str()[..2]).join(format!("{}.checked", key.as_str()))
    }

    /// The step's entry, checked against its manifest. Only an I/O error on the
    /// cache folder itself (not on the step's files) is an error.
    pub fn entry<K: Kind>(&self, kind: K, key: &StepKey) -> Result<Entry<K>, CacheError> {
        let dir = self.step_dir(kind, key);
        let manifest_path = dir.join("manifest.json");
        let bytes = match fs::read(&manifest_path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Entry::Missing),
            Err(e) => return Ok(damaged(&manifest_path, format!("unreadable: {e}"))),
        };
        let manifest: Manifest<K> = match serde_json::from_slice(&bytes) {
            Ok(m) => m,
            Err(e) => return Ok(damaged(&manifest_path, format!("not a manifest: {e}"))),
        };
        if manifest.kind != kind || &manifest.key != key {
            let found = format!("{} {}", manifest.kind.name(), manifest.key.short());
            return Ok(damaged(&manifest_path, format!("belongs to {found}, not {} {}", kind.name(), key.short())));
        }
        let mut now = Vec::with_capacity(manifest.files.len() + 1);
        for file in std::iter::once("manifest.json").chain(manifest.files.iter().map(|f| f.name.as_str())) {
            match seen(&dir, file) {
                Ok(s) => now.push(s),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Ok(damaged(&dir.join(file), "listed in the manifest but missing".into()));
                }
                Err(e) => return Ok(damaged(&dir.join(file), format!("unreadable: {e}"))),
            }
        }
        let memo = self.checked_path(kind, key);
        let remembered: Option<Vec<Seen>> = fs::read(&memo).ok().and_then(|b| serde_json::from_slice(&b).ok());
        if remembered.as_ref() == Some(&now) {
            return Ok(Entry::Valid(manifest));
        }
        for (file, s) in manifest.files.iter().zip(&now[1..]) {
            let path = dir.join(&file.name);
            if s.bytes != file.bytes {
                return Ok(damaged(&path, format!("{} bytes, published with {}", s.bytes, file.bytes)));
            }
            match sha256_of(&path) {
                Ok(sum) if sum == file.sha256 => {}
                Ok(_) => return Ok(damaged(&path, "content differs from the published checksum".into())),
                Err(e) => return Ok(damaged(&path, format!("unreadable: {e}"))),
            }
        }
        // Remembering only saves time: a lost race or a read-only cache costs a re-hash.
        if let Ok(json) = serde_json::to_vec(&now) {
            let tmp = memo.with_extension(format!("checked.{}", std::process::id()));
            if fs::write(&tmp, json).is_ok() && fs::rename(&tmp, &memo).is_err() {
                let _ = fs::remove_file(&tmp);
            }
        }
        Ok(Entry::Valid(manifest))
    }

    /// Moves a damaged step folder to `cache/damaged/<kind>-<key>-<seconds>/`,
    /// so that it can be computed again and nothing is lost. Call it holding
    /// the step's lock. Returns where it went (`None`: there was no folder).
    pub fn set_aside<K: Kind>(&self, kind: K, key: &StepKey) -> Result<Option<PathBuf>, CacheError> {
        let dir = self.step_dir(kind, key);
        if !dir.exists() {
            return Ok(None);
        }
        let aside_root = self.root.join("damaged");
        fs::create_dir_all(&aside_root).map_err(io_err(&aside_root))?;
        let stamp = crate::clock::unix_now();
        let target = aside_root.join(format!("{}-{}-{stamp}-{}", kind.name(), key.short(), std::process::id()));
        fs::rename(&dir, &target).map_err(io_err(&target))?;
        let _ = fs::remove_file(self.checked_path(kind, key));
        Ok(Some(target))
    }
}

fn damaged<K>(path: &Path, problem: String) -> Entry<K> {
    Entry::Damaged(Damage { path: path.to_path_buf(), problem })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::testing::StepKind;

    fn published(cache: &Cache) -> (StepKind, StepKey, PathBuf) {
        let kind = StepKind::Attribute;
        let params = serde_json::json!({ "method": "gxil" });
        let key = StepKey::compute(kind, &params, &[]);
        let _lock = cache.lock(kind, &key).unwrap();
        let staging = cache.begin(kind, &key).unwrap();
        fs::write(staging.dir.join("attributions.jsonl"), "{\"scores\":[0.25,0.5]}\n").unwrap();
        fs::write(staging.dir.join("summary.json"), "{}").unwrap();
        cache.publish(staging, "attribute/x", &params, vec![], 0.1, "cpu").unwrap();
        let dir = cache.step_dir(kind, &key);
        (kind, key, dir)
    }

    fn problem(entry: Entry<StepKind>) -> String {
        match entry {
            Entry::Damaged(d) => d.to_string(),
            other => panic!("expected damage, got {other:?}"),
        }
    }

    #[test]
    fn an_intact_entry_is_valid_and_remembered() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let (kind, key, _) = published(&cache);
        assert!(matches!(cache.entry(kind, &key).unwrap(), Entry::Valid(_)));
        assert!(cache.checked_path(kind, &key).is_file());
        assert!(matches!(cache.entry(kind, &key).unwrap(), Entry::Valid(_)));
        let other = StepKey::compute(kind, &serde_json::json!({ "method": "random" }), &[]);
        assert_eq!(cache.entry(kind, &other).unwrap(), Entry::Missing);
    }

    #[test]
    fn a_flipped_byte_is_caught_even_after_a_good_check() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let (kind, key, step) = published(&cache);
        assert!(matches!(cache.entry(kind, &key).unwrap(), Entry::Valid(_)));
        let path = step.join("attributions.jsonl");
        let mut bytes = fs::read(&path).unwrap();
        bytes[12] ^= 0x01; // same size
        std::thread::sleep(std::time::Duration::from_millis(20));
        fs::write(&path, bytes).unwrap();
        let p = problem(cache.entry(kind, &key).unwrap());
        assert!(p.contains("attributions.jsonl") && p.contains("content differs"), "{p}");
        assert_eq!(cache.lookup(kind, &key).unwrap(), None, "lookup serves only valid entries");
    }

    #[test]
    fn a_missing_or_cut_file_or_a_broken_manifest_is_damage() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let (kind, key, step) = published(&cache);
        fs::remove_file(step.join("summary.json")).unwrap();
        assert!(problem(cache.entry(kind, &key).unwrap()).contains("summary.json: listed in the manifest but missing"));
        fs::write(step.join("summary.json"), "{}").unwrap();
        fs::write(step.join("attributions.jsonl"), "{\"sco").unwrap();
        assert!(problem(cache.entry(kind, &key).unwrap()).contains("bytes, published with"));
        let manifest = step.join("manifest.json");
        let text = fs::read(&manifest).unwrap();
        fs::write(&manifest, &text[..text.len() / 2]).unwrap();
        assert!(problem(cache.entry(kind, &key).unwrap()).contains("manifest.json: not a manifest"));
    }

    #[test]
    fn a_damaged_entry_is_set_aside_not_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let (kind, key, step) = published(&cache);
        fs::remove_file(step.join("summary.json")).unwrap();
        let aside = cache.set_aside(kind, &key).unwrap().unwrap();
        assert!(aside.starts_with(dir.path().join("damaged")));
        assert!(aside.join("attributions.jsonl").is_file(), "the payload is kept for inspection");
        assert_eq!(cache.entry(kind, &key).unwrap(), Entry::Missing);
        assert_eq!(cache.set_aside(kind, &key).unwrap(), None);
    }
}
