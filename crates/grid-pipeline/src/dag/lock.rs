//! `<grid>.lock`: the Hub references a grid names without a commit (a
//! branch, a tag, or no revision: `main`), resolved once to the commit they
//! pointed to and to each file's size and sha256, and written beside the grid
//! the way `Cargo.lock` and `uv.lock` are. Later runs, and other machines
//! given the file, read the same bytes: the lock is written over the grid as
//! overrides (`datasets.sst2.train = { file = "hf://…@<commit>/…", sha256, bytes }`,
//! `models.bert.checkpoint = "hf://…@<commit>"`), so the frozen grid text a
//! run hands its workers holds them too. `grid lock` (or `--update-lock`)
//! moves it on purpose. A reference pinned to a commit in the grid needs no
//! entry.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use toml_edit::{InlineTable, Value};

use crate::spec::Grid;
use crate::spec::overrides::Override;
use grid_core::model::hub::{self, CheckpointSource, Checksums, HubClient, HubError, HubFile};

/// The format written; a lock of another version is refused, not guessed at.
pub const VERSION: u32 = 1;

/// What to do with the lock file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// Use its entries; resolve and add what it lacks.
    Read,
    /// Resolve every unpinned reference anew and rewrite it (`grid lock`).
    Update,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockFile {
    pub version: u32,
    #[serde(default, rename = "file", skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<LockedFile>,
    #[serde(default, rename = "checkpoint", skip_serializing_if = "Vec::is_empty")]
    pub checkpoints: Vec<LockedCheckpoint>,
}

impl Default for LockFile {
    fn default() -> Self {
        LockFile { version: VERSION, files: Vec::new(), checkpoints: Vec::new() }
    }
}

/// A dataset file: the reference as the grid writes it, and what it resolved to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedFile {
    pub reference: String,
    /// `None` when the server did not say (then the bytes alone are locked).
    pub commit: Option<String>,
    pub bytes: u64,
    pub sha256: String,
}

/// A checkpoint: its commit, and its files' bytes once they were downloaded.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedCheckpoint {
    pub reference: String,
    pub commit: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, LockedBytes>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LockedBytes {
    pub bytes: u64,
    pub sha256: String,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("{path}: {message}")]
    Unreadable { path: PathBuf, message: String },
    #[error("{path}: {source}")]
    Write { path: PathBuf, source: std::io::Error },
    #[error("{grid}: {what}: {reference}: {source}")]
    Hub { grid: PathBuf, what: String, reference: String, source: Box<HubError> },
    #[error(
        "{grid}: {reference}: {} says sha256 {locked}, but {what} has sha256 {found}; `grid lock {grid}` moves the lock on purpose",
        lock_path(grid).display()
    )]
    Disagrees { grid: PathBuf, reference: String, locked: String, what: String, found: String },
}

/// What the lock makes of a grid.
#[derive(Debug, Default)]
pub struct Locked {
    /// The lock's entries as overrides of the grid, in the grid's order.
    pub overrides: Vec<Override>,
    /// References resolved by this call (and written to the lock file).
    pub resolved: Vec<String>,
    /// References the Hub could not resolve now, and why (offline, a 404):
    /// a plan names them again when it needs them; `grid lock` fails on them.
    pub unresolved: Vec<(String, String)>,
    pub path: PathBuf,
}

/// `bert_sweep.toml` → `bert_sweep.lock`.
pub fn lock_path(grid: &Path) -> PathBuf {
    grid.with_extension("lock")
}

impl LockFile {
    /// The lock file at `path`; an empty lock when there is none.
    pub fn read(path: &Path) -> Result<LockFile, LockError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LockFile::default()),
            Err(e) => return Err(LockError::Unreadable { path: path.into(), message: e.to_string() }),
        };
        let lock: LockFile = toml::from_str(&text).map_err(|e| {
            let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1).unwrap_or(1);
            LockError::Unreadable { path: path.into(), message: format!("line {line}: {}", e.message().trim_end()) }
        })?;
        if lock.version != VERSION {
            let message = format!(
                "lock version {} (this grid writes version {VERSION}); run `grid lock` to rewrite it",
                lock.version
            );
            return Err(LockError::Unreadable { path: path.into(), message });
        }
        Ok(lock)
    }

    fn write(&self, path: &Path, grid: &Path) -> Result<(), LockError> {
        let body = toml::to_string_pretty(self)
            .map_err(|e| LockError::Write { path: path.into(), source: std::io::Error::other(e) })?;
        let text = format!(
            "# The Hub references of {} that name no commit, resolved to the commit and\n\
             # bytes they had (written by grid; `grid lock` moves it on purpose). Commit it\n\
             # beside the grid, so other machines read the same files.\n{body}",
            grid.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
        );
        let tmp = path.with_extension(format!("lock.{}", std::process::id()));
        std::fs::write(&tmp, text).map_err(|source| LockError::Write { path: tmp.clone(), source })?;
        std::fs::rename(&tmp, path).map_err(|source| LockError::Write { path: path.into(), source })
    }
}

/// Reads (or, for references it lacks, writes) the lock beside `grid`, and
/// gives the overrides that pin the grid to it. A reference the Hub cannot be
/// asked about now (offline) is left to the plan, which names every such file
/// at once.
pub fn apply(grid: &Grid, cache_root: &Path, client: &HubClient, mode: LockMode) -> Result<Locked, LockError> {
    let path = lock_path(&grid.path);
    let on_disk = match mode {
        LockMode::Read => LockFile::read(&path)?,
        // Rewritten whole, even when the old one is unreadable.
        LockMode::Update => LockFile::read(&path).unwrap_or_default(),
    };
    let mut lock = match mode {
        LockMode::Read => on_disk.clone(),
        LockMode::Update => LockFile::default(),
    };
    let mut locked = Locked { path: path.clone(), ..Locked::default() };
    let hub_err = |what: String, reference: &str, source: HubError| LockError::Hub {
        grid: grid.path.clone(),
        what,
        reference: reference.to_string(),
        source: Box::new(source),
    };
    let disagrees = |reference: &str, locked: &str, what: String, found: &str| LockError::Disagrees {
        grid: grid.path.clone(),
        reference: reference.to_string(),
        locked: locked.to_string(),
        what,
        found: found.to_string(),
    };

    for dataset in &grid.datasets {
        for (split, file) in dataset.split_files() {
            let Some(address) = file.hub_address() else { continue };
            let Ok(hub_file) = address.parse::<HubFile>() else { continue };
            if hub::is_commit(&hub_file.revision) {
                continue;
            }
            let what = || format!("dataset `{}`", dataset.name);
            let entry = match lock.files.iter().find(|e| e.reference == address) {
                Some(entry) => entry.clone(),
                None => {
                    // A file the Hub cannot serve now is the plan's to report,
                    // with every other one it lacks.
                    let commit = match client.commit_of(&hub_file.repo, &hub_file.revision, &hub_file.path) {
                        Ok(commit) => commit,
                        Err(e) => {
                            locked.unresolved.push((address.to_string(), e.to_string()));
                            continue;
                        }
                    };
                    let at = at_revision(&hub_file, commit.as_deref());
                    client
                        .dataset_file_shown(&at, file.pin.as_ref(), cache_root)
                        .map_err(|e| hub_err(what(), address, e))?;
                    let record = at.cached_record(cache_root).map_err(|e| hub_err(what(), address, e))?;
                    let entry = LockedFile {
                        reference: address.to_string(),
                        commit,
                        bytes: record.size,
                        sha256: record.sha256,
                    };
                    lock.files.push(entry.clone());
                    locked.resolved.push(address.to_string());
                    entry
                }
            };
            if let Some(pin) = &file.pin
                && !pin.sha256.eq_ignore_ascii_case(&entry.sha256)
            {
                return Err(disagrees(address, &entry.sha256, "the grid's own `sha256`".into(), &pin.sha256));
            }
            let at = at_revision(&hub_file, entry.commit.as_deref());
            if at.dir(cache_root).is_dir() {
                let record = at.cached_record(cache_root).map_err(|e| hub_err(what(), address, e))?;
                if !record.sha256.eq_ignore_ascii_case(&entry.sha256) {
                    let what = format!("the cached copy in {}", at.dir(cache_root).display());
                    return Err(disagrees(address, &entry.sha256, what, &record.sha256));
                }
            }
            let mut table = InlineTable::new();
            table.insert("file", Value::from(at.to_string()));
            table.insert("sha256", Value::from(entry.sha256.clone()));
            table.insert("bytes", Value::from(i64::try_from(entry.bytes).unwrap_or(i64::MAX)));
            let key = ["datasets", dataset.name.as_str(), split];
            let text = format!("{}={} (from {})", key.join("."), at, path.display());
            locked.overrides.push(Override::setting(&key, Value::InlineTable(table), text));
        }
    }

    for model in &grid.models {
        let Some(reference) = model.architecture.hub_checkpoint() else { continue };
        let Ok(CheckpointSource::Hub { repo, revision }) = reference.parse::<CheckpointSource>() else { continue };
        if hub::is_commit(&revision) {
            continue;
        }
        let index = match lock.checkpoints.iter().position(|e| e.reference == reference) {
            Some(index) => index,
            None => {
                // Without a commit there is nothing to lock a checkpoint to; a
                // Hub that cannot answer now leaves it to the run to report.
                let commit = match client.commit_of(&repo, &revision, "config.json") {
                    Ok(Some(commit)) => commit,
                    Ok(None) => {
                        let why = "the Hub named no commit (X-Repo-Commit) for it".to_string();
                        locked.unresolved.push((reference.to_string(), why));
                        continue;
                    }
                    Err(e) => {
                        locked.unresolved.push((reference.to_string(), e.to_string()));
                        continue;
                    }
                };
                lock.checkpoints.push(LockedCheckpoint {
                    reference: reference.to_string(),
                    commit,
                    files: BTreeMap::new(),
                });
                locked.resolved.push(reference.to_string());
                lock.checkpoints.len() - 1
            }
        };
        let entry = &mut lock.checkpoints[index];
        let source = CheckpointSource::Hub { repo: repo.clone(), revision: entry.commit.clone() };
        let dir = source.dir(cache_root);
        // Its files' bytes are locked once it is downloaded, and checked after.
        if let Ok(checksums) = Checksums::read(&dir) {
            for (name, record) in &checksums.files {
                match entry.files.get(name) {
                    Some(bytes) if !bytes.sha256.eq_ignore_ascii_case(&record.sha256) => {
                        let what = format!("the cached {}", dir.join(name).display());
                        return Err(disagrees(reference, &bytes.sha256, what, &record.sha256));
                    }
                    Some(_) => {}
                    None => {
                        entry
                            .files
                            .insert(name.clone(), LockedBytes { bytes: record.size, sha256: record.sha256.clone() });
                    }
                }
            }
        }
        let key = ["models", model.name.as_str(), "checkpoint"];
        let text = format!("{}={source} (from {})", key.join("."), path.display());
        locked.overrides.push(Override::setting(&key, Value::from(source.to_string()), text));
    }

    let empty = lock.files.is_empty() && lock.checkpoints.is_empty();
    // No file is written for a grid with nothing to lock.
    if (path.exists() || !empty) && lock != on_disk {
        lock.write(&path, &grid.path)?;
    }
    Ok(locked)
}

/// The file at `commit` when known, else at the revision the grid names.
fn at_revision(file: &HubFile, commit: Option<&str>) -> HubFile {
    HubFile { revision: commit.unwrap_or(&file.revision).to_string(), ..file.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_file_that_cannot_be_read_names_its_line_or_its_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("grid.lock");
        assert_eq!(LockFile::read(&path).unwrap(), LockFile::default(), "no file: an empty lock");
        std::fs::write(&path, "version = 1\n\n[[file]]\nreference = \"hf://datasets/o/n/x.csv\"\nbytes = \"many\"\n")
            .unwrap();
        let err = LockFile::read(&path).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}: line 5: ", path.display())), "{err}");
        std::fs::write(&path, "version = 2\n").unwrap();
        let err = LockFile::read(&path).unwrap_err().to_string();
        assert!(err.contains("lock version 2") && err.contains("grid lock"), "{err}");
        // What it writes, it reads back.
        let lock = LockFile {
            version: VERSION,
            files: vec![LockedFile {
                reference: "hf://datasets/o/n/x.csv".into(),
                commit: Some("a".repeat(40)),
                bytes: 3,
                sha256: "ab".repeat(32),
            }],
            checkpoints: Vec::new(),
        };
        lock.write(&path, Path::new("grid.toml")).unwrap();
        assert!(std::fs::read_to_string(&path).unwrap().starts_with("# The Hub references of grid.toml"));
        assert_eq!(LockFile::read(&path).unwrap(), lock);
    }
}
