//! The content-addressed step cache: the layer under the pipeline. A step's
//! payload and its progress files are opaque here; it depends on no other
//! layer of `grid` (ARCHITECTURE.md).
//!
//! # What goes into a step's key
//!
//! `key = sha256(canonical JSON of {kind, version, params, inputs})`, where
//!
//! | part | what it is |
//! |---|---|
//! | `kind` | the step kind's name (`corpus`, `synth`, `train`, `verify`, `attribute`, `score`, `report`; the pipeline's) |
//! | `version` | the kind's implementation version ([`Kind::version`]); bump it when a kind's semantics change |
//! | `params` | the step's parameters, serialised by a function that destructures the parameter struct field by field (see `dag::params`), so a new field forces a decision |
//! | `inputs` | the keys of the steps it reads, in a fixed order |
//!
//! Deliberately left out: absolute paths (a data file is hashed by content, so
//! moving the data or the project keeps the cache), the device and thread count
//! (results are the same up to float rounding), attribution batch sizes (likewise),
//! the binary itself, and display names that do not change results. Identical
//! keys mean identical results, so one cache can serve every grid file and every
//! machine that mounts it.
//!
//! A key follows its inputs' keys whole, also the parts a step does not read.
//! Kinds that read less (a training reads its data's train and validation
//! splits, not the test split) also get a content key, and take a published
//! result of the same work instead of recomputing it (`reuse`, `dag::reuse`).
//!
//! # On disk
//!
//! `cache/<kind>/<key[0..2]>/<key>/` holds the payload files and `manifest.json`
//! (key, parameters, input keys, payload checksums, timings, versions). A step is
//! written into `cache/tmp/<kind>-<key>-<pid>/` and renamed into place only when
//! complete, after its files and the folder are synced to the device (and the
//! receiving folder after the rename): a crash or a power cut leaves a
//! temporary folder, never a half-written result that looks complete. An exclusive lock on `cache/<kind>/<key[0..2]>/<key>.lock`
//! keeps two processes from computing one step; the second waits, then finds the
//! step cached. `cache/labels/` remembers, per step label (e.g.
//! `train/sst2/st/lstm`), the parameters of the last key computed for it, only so
//! that `grid plan` can say *why* a step will run.

pub mod check;
pub mod clock;
mod durable;
mod failures;
pub mod files;
mod frozen;
pub mod gc;
mod kind;
mod leftovers;
pub mod remote;
mod resume;
mod reuse;

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use check::{Damage, Entry};
pub use failures::Failure;
pub use frozen::{FROZEN_GRACE, FrozenPolicy, collect_frozen};
pub use kind::Kind;
pub use remote::Remote;
pub use reuse::ContentKey;

/// The folder under a cache root where the GPU backends keep compiled kernels
/// (`grid_core::backend::kernel_cache`); `gc` keeps it unless asked. A test of
/// the `grid` crate checks that the two agree.
pub const KERNELS_FOLDER: &str = "kernels";

/// A step's content hash, 64 lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StepKey(String);

impl StepKey {
    /// `sha256` over the canonical JSON of kind, version, params and input keys.
    pub fn compute<K: Kind>(kind: K, params: &serde_json::Value, inputs: &[StepKey]) -> StepKey {
        // serde_json's default map is ordered by key, so this serialisation is canonical.
        let canonical = serde_json::json!({
            "kind": kind.name(),
            "version": kind.version(),
            "params": params,
            "inputs": inputs,
        });
        StepKey(files::sha256_hex(canonical.to_string().as_bytes()))
    }

    /// A key as written in folder names: 64 lowercase hex digits.
    pub fn parse(text: &str) -> Option<StepKey> {
        let is_key = text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        is_key.then(|| StepKey(text.to_string()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first 12 hex digits, for display.
    pub fn short(&self) -> &str {
        &self.0[..12]
    }
}

impl std::fmt::Display for StepKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// One input of a step, as recorded in its manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputRef<K> {
    pub kind: K,
    pub key: StepKey,
    pub label: String,
}

impl<K: Kind> Manifest<K> {
    /// This step, as a step reading it would record it.
    pub fn reference(&self) -> InputRef<K> {
        InputRef { kind: self.kind, key: self.key.clone(), label: self.label.clone() }
    }
}

impl<K> InputRef<K> {
    /// `<short key> (<label>)`, for one line of text.
    pub fn short_name(&self) -> String {
        format!("{} ({})", self.key.short(), self.label)
    }
}

/// One payload file with its checksum.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PayloadFile {
    pub name: String,
    pub bytes: u64,
    pub sha256: String,
}

/// `manifest.json`: everything needed to explain and check a cached step.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound(deserialize = "K: serde::de::DeserializeOwned"))]
pub struct Manifest<K> {
    pub kind: K,
    pub key: StepKey,
    pub version: u32,
    pub label: String,
    pub params: serde_json::Value,
    pub inputs: Vec<InputRef<K>>,
    pub files: Vec<PayloadFile>,
    /// Seconds since the Unix epoch when the step finished.
    pub finished_at: u64,
    pub seconds: f64,
    pub grid_version: String,
    pub device: String,
    /// What the step computed, by content: its kind, version and parameters
    /// and the digests of the input files it reads. Written by the kinds whose
    /// keys name more than they read (see `dag::reuse`); absent otherwise and
    /// in manifests written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_key: Option<ContentKey>,
    /// The published step whose payload this one took, with the same content
    /// key, instead of computing it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_from: Option<InputRef<K>>,
    /// What the step computed, in the units the pipeline's cost model prices
    /// (`dag::estimate`), so that estimates of other grids learn from it.
    /// Opaque here; absent in manifests written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<serde_json::Value>,
}

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
    #[error("{path}: corrupt manifest: {source}")]
    Manifest { path: PathBuf, source: serde_json::Error },
    /// The remote cache (`--remote`) failed or holds something it cannot vouch for.
    #[error("remote cache {location}: {problem}")]
    Remote { location: String, problem: String },
}

/// Writes `value` as JSON to `path` (creating its folder) through a file of
/// this process renamed into place, so a reader never sees half a record.
pub fn write_json_whole(path: &Path, value: &impl Serialize) -> Result<(), CacheError> {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).map_err(io_err(parent))?;
    }
    let json =
        serde_json::to_vec_pretty(value).map_err(|source| CacheError::Manifest { path: path.to_path_buf(), source })?;
    let staged = path.with_extension(format!("json.{}", std::process::id()));
    fs::write(&staged, json).map_err(io_err(&staged))?;
    fs::rename(&staged, path).map_err(io_err(path))
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> CacheError + '_ {
    move |source| CacheError::Io { path: path.to_path_buf(), source }
}

/// The cache directory, and the remote cache behind it, if any.
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
    /// Where steps missing here are looked for, and computed ones published
    /// to (`--remote`; see [`remote`]).
    remote: Option<Arc<Remote>>,
}

/// Held while a step is being computed; released on drop.
#[derive(Debug)]
pub struct StepLock {
    _file: File,
}

/// A step being written: its folder is renamed into place by [`Cache::publish`].
#[derive(Debug)]
pub struct Staging<K> {
    pub dir: PathBuf,
    kind: K,
    key: StepKey,
    /// Recorded in the manifest ([`Manifest::content_key`]).
    pub content_key: Option<ContentKey>,
    /// Set by [`Cache::take_payload`].
    reused_from: Option<InputRef<K>>,
    /// Recorded in the manifest ([`Manifest::work`]).
    pub work: Option<serde_json::Value>,
}

/// What `cache/labels/<label>.json` remembers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelRecord<K> {
    pub key: StepKey,
    pub version: u32,
    pub params: serde_json::Value,
    pub inputs: Vec<InputRef<K>>,
}

impl Cache {
    pub fn open(root: impl Into<PathBuf>) -> Result<Cache, CacheError> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(io_err(&root))?;
        Ok(Cache { root, remote: None })
    }

    /// This cache with `remote` behind it.
    pub fn with_remote(self, remote: Remote) -> Cache {
        Cache { remote: Some(Arc::new(remote)), ..self }
    }

    /// The remote cache behind this one, if any.
    pub fn remote(&self) -> Option<&Remote> {
        self.remote.as_deref()
    }

    /// The remote cache, shared (for what outlives a borrow: a lease's renewer).
    pub fn remote_shared(&self) -> Option<Arc<Remote>> {
        self.remote.clone()
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `cache/<kind>/<key[0..2]>/<key>`
    pub fn step_dir<K: Kind>(&self, kind: K, key: &StepKey) -> PathBuf {
        self.root.join(kind.name()).join(&key.as_str()[..2]).join(key.as_str())
    }

    /// The manifest of a complete step whose payload checks out against it
    /// ([`Cache::entry`]); `None` when missing or damaged.
    pub fn lookup<K: Kind>(&self, kind: K, key: &StepKey) -> Result<Option<Manifest<K>>, CacheError> {
        Ok(match self.entry(kind, key)? {
            Entry::Valid(manifest) => Some(manifest),
            Entry::Missing | Entry::Damaged(_) => None,
        })
    }

    /// `cache/<kind>/<key[0..2]>/<key>.lock`, held while the step is computed.
    fn lock_path<K: Kind>(&self, kind: K, key: &str) -> PathBuf {
        self.root.join(kind.name()).join(&key[..2]).join(format!("{key}.lock"))
    }

    /// Blocks until this process holds the step's lock.
    pub fn lock<K: Kind>(&self, kind: K, key: &StepKey) -> Result<StepLock, CacheError> {
        let path = self.lock_path(kind, key.as_str());
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).map_err(io_err(dir))?;
        }
        let file = File::options().create(true).truncate(false).write(true).open(&path).map_err(io_err(&path))?;
        file.lock().map_err(io_err(&path))?;
        Ok(StepLock { _file: file })
    }

    /// A fresh temporary folder for a step's payload.
    pub fn begin<K: Kind>(&self, kind: K, key: &StepKey) -> Result<Staging<K>, CacheError> {
        let dir = self.root.join("tmp").join(Self::staging_name(kind, key));
        if dir.exists() {
            fs::remove_dir_all(&dir).map_err(io_err(&dir))?;
        }
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        Ok(Staging { dir, kind, key: key.clone(), content_key: None, reused_from: None, work: None })
    }

    /// Checksums the payload, writes the manifest and renames the folder into place.
    pub fn publish<K: Kind>(
        &self,
        staging: Staging<K>,
        label: &str,
        params: &serde_json::Value,
        inputs: Vec<InputRef<K>>,
        seconds: f64,
        device: &str,
    ) -> Result<Manifest<K>, CacheError> {
        let mut files = Vec::new();
        let mut names: Vec<PathBuf> = fs::read_dir(&staging.dir)
            .map_err(io_err(&staging.dir))?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(io_err(&staging.dir))?;
        names.sort();
        for path in names {
            let bytes = fs::metadata(&path).map_err(io_err(&path))?.len();
            files.push(PayloadFile {
                name: path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
                bytes,
                sha256: files::sha256_of(&path).map_err(io_err(&path))?,
            });
        }
        let manifest = Manifest {
            kind: staging.kind,
            key: staging.key.clone(),
            version: staging.kind.version(),
            label: label.to_string(),
            params: params.clone(),
            inputs,
            files,
            finished_at: crate::clock::unix_now(),
            seconds,
            grid_version: env!("CARGO_PKG_VERSION").to_string(),
            device: device.to_string(),
            content_key: staging.content_key.clone(),
            reused_from: staging.reused_from.clone(),
            work: staging.work.clone(),
        };
        self.install(staging, &manifest)?;
        Ok(manifest)
    }

    /// Writes `manifest` beside the staged payload it describes (whose files
    /// the caller has checked against it) and renames the folder into place,
    /// durably: payload, manifest and folder are synced to the device before
    /// the rename, and the folder receiving it after (`durable`).
    pub(crate) fn install<K: Kind>(&self, staging: Staging<K>, manifest: &Manifest<K>) -> Result<(), CacheError> {
        let manifest_path = staging.dir.join("manifest.json");
        let json = serde_json::to_vec_pretty(manifest)
            .map_err(|source| CacheError::Manifest { path: manifest_path.clone(), source })?;
        fs::write(&manifest_path, json).map_err(io_err(&manifest_path))?;
        for file in manifest.files.iter().map(|f| staging.dir.join(&f.name)).chain([manifest_path]) {
            durable::sync_file(&file).map_err(io_err(&file))?;
        }
        durable::sync_dir(&staging.dir).map_err(io_err(&staging.dir))?;

        let target = self.step_dir(staging.kind, &staging.key);
        let parent = target.parent().unwrap_or(&self.root);
        fs::create_dir_all(parent).map_err(io_err(parent))?;
        if target.exists() {
            // Only a folder without a manifest can be here (we hold the lock):
            // the remains of an older, interrupted layout. Replace it.
            fs::remove_dir_all(&target).map_err(io_err(&target))?;
        }
        fs::rename(&staging.dir, &target).map_err(io_err(&target))?;
        durable::sync_dir(parent).map_err(io_err(parent))?;
        self.remember_label(&manifest.label, manifest)?;
        self.clear_failure(&manifest.key);
        Ok(())
    }

    fn label_path(&self, label: &str) -> PathBuf {
        let safe: String = label
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.' { c } else { '~' })
            .collect();
        self.root.join("labels").join(format!("{safe}.json"))
    }

    fn remember_label<K: Kind>(&self, label: &str, manifest: &Manifest<K>) -> Result<(), CacheError> {
        let path = self.label_path(label);
        let record = LabelRecord {
            key: manifest.key.clone(),
            version: manifest.version,
            params: manifest.params.clone(),
            inputs: manifest.inputs.clone(),
        };
        write_json_whole(&path, &record)
    }

    /// What was last computed under this label, if anything.
    pub fn label_record<K: Kind>(&self, label: &str) -> Option<LabelRecord<K>> {
        let bytes = fs::read(self.label_path(label)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Whether another process is computing this step now (holds its lock).
    pub fn is_computing<K: Kind>(&self, kind: K, key: &StepKey) -> Result<bool, CacheError> {
        Ok(matches!(gc::try_lock(&self.lock_path(kind, key.as_str()))?, gc::Lock::Busy))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kind::testing::StepKind;

    #[test]
    fn key_depends_on_everything_and_only_that() {
        let p = serde_json::json!({"b": 1, "a": [1.5, "x"]});
        let same = serde_json::json!({"a": [1.5, "x"], "b": 1});
        let k = StepKey::compute(StepKind::Train, &p, &[]);
        assert_eq!(k, StepKey::compute(StepKind::Train, &same, &[]), "key order must not matter");
        assert_ne!(k, StepKey::compute(StepKind::Verify, &p, &[]));
        assert_ne!(k, StepKey::compute(StepKind::Train, &serde_json::json!({"b": 2, "a": [1.5, "x"]}), &[]));
        assert_ne!(k, StepKey::compute(StepKind::Train, &p, std::slice::from_ref(&k)));
        assert_eq!(k.as_str().len(), 64);
    }

    #[test]
    fn publish_is_atomic_and_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let params = serde_json::json!({"x": 1});
        let key = StepKey::compute(StepKind::Corpus, &params, &[]);
        assert!(cache.lookup(StepKind::Corpus, &key).unwrap().is_none());
        let _lock = cache.lock(StepKind::Corpus, &key).unwrap();
        let staging = cache.begin(StepKind::Corpus, &key).unwrap();
        fs::write(staging.dir.join("data.txt"), "hello").unwrap();
        // Not visible before publishing.
        assert!(cache.lookup(StepKind::Corpus, &key).unwrap().is_none());
        assert!(cache.has_leftover(StepKind::Corpus, &key));
        let m = cache.publish(staging, "corpus/x", &params, vec![], 0.5, "cpu").unwrap();
        assert_eq!(m.files.len(), 1);
        assert_eq!(m.files[0].sha256, files::sha256_hex(b"hello"));
        assert_eq!(cache.lookup(StepKind::Corpus, &key).unwrap(), Some(m));
        assert!(!cache.has_leftover(StepKind::Corpus, &key));
        assert_eq!(cache.label_record::<StepKind>("corpus/x").unwrap().key, key);
    }

    #[test]
    fn manifest_schema_is_stable() {
        // Pins the manifest's JSON field names: changing them orphans every cache.
        let m = Manifest {
            kind: StepKind::Score,
            key: StepKey("ab".repeat(32)),
            version: 1,
            label: "score/l".into(),
            params: serde_json::json!({"metric": "rank"}),
            inputs: vec![InputRef {
                kind: StepKind::Attribute,
                key: StepKey("cd".repeat(32)),
                label: "attribute/l".into(),
            }],
            files: vec![PayloadFile { name: "scores.json".into(), bytes: 3, sha256: "ef".repeat(32) }],
            finished_at: 1,
            seconds: 0.25,
            grid_version: "0.1.0".into(),
            device: "cpu".into(),
            content_key: None,
            reused_from: None,
            work: None,
        };
        let v = serde_json::to_value(&m).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "device",
                "files",
                "finished_at",
                "grid_version",
                "inputs",
                "key",
                "kind",
                "label",
                "params",
                "seconds",
                "version"
            ]
        );
        assert_eq!(v["kind"], "score");
        assert_eq!(v["inputs"][0]["kind"], "attribute");
        let back: Manifest<StepKind> = serde_json::from_value(v).unwrap();
        assert_eq!(back, m);

        // A step that took another's payload says so under two more names.
        let taken = Manifest {
            content_key: Some(ContentKey::of(&serde_json::json!("work"))),
            reused_from: Some(InputRef {
                kind: StepKind::Score,
                key: StepKey("ef".repeat(32)),
                label: "score/k".into(),
            }),
            ..m
        };
        let v = serde_json::to_value(&taken).unwrap();
        assert_eq!(v["reused_from"]["label"], "score/k");
        assert_eq!(v["content_key"].as_str().map(str::len), Some(64));
        assert_eq!(serde_json::from_value::<Manifest<StepKind>>(v).unwrap(), taken);
    }
}
