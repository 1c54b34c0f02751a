//! A remote cache behind the local one (`--remote s3://bucket/prefix`, also
//! `gs://`, `az://`, `file://` or a plain folder): steps the local cache lacks
//! are pulled from it, and steps computed here are published to it, so that
//! machines with no shared filesystem share results by their keys.
//!
//! # Layout and protocol
//!
//! Under the URL's prefix:
//!
//! | object | what it is |
//! |---|---|
//! | `payloads/<kind>/<key[0..2]>/<key>/<upload>/<file>` | one writer's upload of a step's payload; `<upload>` is unique to the writer |
//! | `steps/<kind>/<key[0..2]>/<key>.json` | the step's record ([`Published`]): its manifest and the folder of the payload it vouches for |
//!
//! A writer uploads the payload files first, into a folder no other writer
//! uses, and then creates the record with a create-only (conditional) put.
//! The record is the commit point: a reader never looks at a payload without
//! a record, so a half-finished upload is never served. When two machines
//! compute one step, both uploads complete, one record wins, and the loser
//! removes its own upload: one copy is kept. A reader streams each file to
//! the local cache's staging folder, hashing as it goes, and installs the
//! step only if every size and sha256 matches the record's manifest.
//!
//! A step that took another's payload by content key (`reuse`) publishes a
//! record naming that step's upload instead of uploading the bytes again.
//!
//! A record that fails its check (it does not parse, names another step, or
//! its payload is missing or differs from its manifest) is set aside to
//! `damaged/<kind>/<key[0..2]>/<key>.<id>.json` by the reader that finds it,
//! so that the step counts as missing everywhere and the next machine to
//! compute it publishes a good copy; `grid gc --remote` removes set-aside
//! records after a day.

mod aws_profile;
pub mod gc;
pub mod lease;
mod store;

use std::path::Path;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::{Cache, CacheError, Kind, Manifest, StepKey};
pub use store::Created;
use store::{Store, StoreError};

/// A step's record on the remote: written last, after its payload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(bound(deserialize = "K: serde::de::DeserializeOwned"))]
pub struct Published<K> {
    /// The folder (relative to the remote's root) holding the payload files.
    pub payload: String,
    pub manifest: Manifest<K>,
}

/// What the remote holds for one step.
#[derive(Debug, Clone, PartialEq)]
pub enum RemoteEntry<K> {
    Missing,
    Published(Box<Published<K>>),
    /// A record that cannot be trusted (unreadable, or not this step's).
    Damaged(String),
}

/// A step's record as judged ([`Remote::entry`]), with the bytes read.
type Judged<K> = (RemoteEntry<K>, Vec<u8>);

/// How a pull went.
#[derive(Debug, Clone, PartialEq)]
pub enum Pulled<K> {
    /// Installed in the local cache, with the bytes that came.
    Installed { manifest: Box<Manifest<K>>, bytes: u64 },
    /// The remote does not hold the step.
    Missing,
    /// The remote's copy failed its check; nothing was installed, and the
    /// record was moved to `set_aside` (`None`: another reader moved it, or
    /// a writer replaced it, meanwhile).
    Damaged { why: String, set_aside: Option<String> },
}

/// `; set aside to <object>` for a damaged record moved out of the way
/// (nothing when another reader or a writer moved it first): what messages
/// about a [`Pulled::Damaged`] append to its `why`.
pub fn set_aside_note(set_aside: Option<&str>) -> String {
    set_aside.map(|object| format!("; set aside to {object}")).unwrap_or_default()
}

/// How a push went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pushed {
    /// The payload went up (this many bytes) and this record won.
    Uploaded { bytes: u64 },
    /// The record names the payload of the step it was reused from.
    SharedPayload,
    /// The remote held the step already (or another writer won the race);
    /// nothing of this writer's is left there.
    AlreadyThere,
}

/// The remote cache: where it is, and the store that reaches it.
#[derive(Debug)]
pub struct Remote {
    /// The location as the user gave it, without credentials: for messages.
    location: String,
    store: Store,
    /// Answers [`prefetch`](Remote::prefetch) read ahead for
    /// [`entry`](Remote::entry), each served once.
    prefetched: std::sync::Mutex<std::collections::HashMap<String, Option<Vec<u8>>>>,
}

impl Remote {
    /// Opens `location`: `s3://bucket/prefix`, `gs://bucket/prefix`,
    /// `az://container/prefix` (credentials and endpoints from each store's
    /// standard environment variables, `AWS_*`, `GOOGLE_*`, `AZURE_*`), or a
    /// folder (`file:///path` or a plain path), created when missing.
    pub fn open(location: &str) -> Result<Remote, CacheError> {
        let problem = |problem: String| CacheError::Remote { location: location.to_string(), problem };
        let (inner, prefix): (Arc<dyn object_store::ObjectStore>, object_store::path::Path) = match location
            .split_once("://")
        {
            None | Some(("file", _)) => {
                let folder = match location.strip_prefix("file://") {
                    Some(path) => std::path::PathBuf::from(path),
                    None => std::path::PathBuf::from(location),
                };
                std::fs::create_dir_all(&folder).map_err(|e| problem(format!("cannot create the folder: {e}")))?;
                let local = object_store::local::LocalFileSystem::new_with_prefix(&folder)
                    .map_err(|e| problem(e.to_string()))?
                    .with_automatic_cleanup(true);
                (Arc::new(local), object_store::path::Path::default())
            }
            Some((scheme, _)) => {
                if !matches!(scheme, "s3" | "s3a" | "gs" | "az" | "azure" | "abfs" | "abfss") {
                    return Err(problem(format!(
                        "unknown scheme `{scheme}://` (s3://, gs://, az:// or file:// are known)"
                    )));
                }
                let url = url::Url::parse(location).map_err(|e| problem(format!("not a URL: {e}")))?;
                let (_, prefix) = object_store::ObjectStoreScheme::parse(&url).map_err(|e| problem(e.to_string()))?;
                let inner: Arc<dyn object_store::ObjectStore> = match scheme {
                    "s3" | "s3a" => Arc::new(s3_builder(location).build().map_err(|e| problem(e.to_string()))?),
                    "gs" => Arc::new(
                        object_store::gcp::GoogleCloudStorageBuilder::from_env()
                            .with_url(location)
                            .build()
                            .map_err(|e| problem(e.to_string()))?,
                    ),
                    "az" | "azure" | "abfs" | "abfss" => Arc::new(
                        object_store::azure::MicrosoftAzureBuilder::from_env()
                            .with_url(location)
                            .build()
                            .map_err(|e| problem(e.to_string()))?,
                    ),
                    _ => unreachable!("schemes are checked above"),
                };
                (inner, prefix)
            }
        };
        let store = Store::new(inner, prefix).map_err(|e| problem(format!("cannot start its I/O threads: {e}")))?;
        Ok(Remote { location: without_credentials(location), store, prefetched: Default::default() })
    }

    /// A folder as a remote.
    pub fn folder(path: &Path) -> Result<Remote, CacheError> {
        Remote::open(&path.display().to_string())
    }

    /// Where the remote is, for messages (never with credentials).
    pub fn location(&self) -> &str {
        &self.location
    }

    fn error(&self, e: StoreError) -> CacheError {
        CacheError::Remote { location: self.location.clone(), problem: e.to_string() }
    }

    /// `steps/<kind>/<key[0..2]>/<key>.json`
    fn record_path<K: Kind>(kind: K, key: &StepKey) -> String {
        format!("steps/{}/{}/{}.json", kind.name(), &key.as_str()[..2], key.as_str())
    }

    /// What the remote holds for the step: its record, read and checked
    /// against the step (its payload is checked when pulled).
    pub fn entry<K: Kind>(&self, kind: K, key: &StepKey) -> Result<RemoteEntry<K>, CacheError> {
        let path = Self::record_path(kind, key);
        let ahead = self.prefetched.lock().ok().and_then(|mut read| read.remove(&path));
        match ahead {
            Some(Some(bytes)) => Ok(Self::judge(kind, key, &path, &bytes)),
            Some(None) => Ok(RemoteEntry::Missing),
            None => Ok(self.read_record(kind, key)?.map_or(RemoteEntry::Missing, |(entry, _)| entry)),
        }
    }

    /// Reads the records of `steps` at once (their requests overlapping), so
    /// that the next [`entry`](Self::entry) of each answers without a round
    /// trip: what a run's start, `plan`, `status` and an estimate ask of every
    /// step the local cache lacks. Each answer serves once; pulls and pushes
    /// always read afresh. A record that cannot be read now is asked again
    /// when its entry is.
    pub fn prefetch<K: Kind>(&self, steps: &[(K, &StepKey)]) {
        let paths: Vec<String> = steps.iter().map(|(kind, key)| Self::record_path(*kind, key)).collect();
        let read = self.store.get_many(&paths);
        let Ok(mut prefetched) = self.prefetched.lock() else { return };
        // Kept as read, judged when asked for: what the cache stores of a
        // step does not depend on its kind's type.
        for (path, bytes) in paths.into_iter().zip(read) {
            if let Ok(bytes) = bytes {
                prefetched.insert(path, bytes);
            }
        }
    }

    /// The step's record as [`entry`](Self::entry) judges it, with its bytes
    /// (`None`: there is none).
    fn read_record<K: Kind>(&self, kind: K, key: &StepKey) -> Result<Option<Judged<K>>, CacheError> {
        let path = Self::record_path(kind, key);
        let Some(bytes) = self.store.get(&path).map_err(|e| self.error(e))? else {
            return Ok(None);
        };
        Ok(Some((Self::judge(kind, key, &path, &bytes), bytes)))
    }

    /// A record's bytes, checked against the step it should be.
    fn judge<K: Kind>(kind: K, key: &StepKey, path: &str, bytes: &[u8]) -> RemoteEntry<K> {
        match serde_json::from_slice::<Published<K>>(bytes) {
            Err(e) => RemoteEntry::Damaged(format!("{path}: not a step record: {e}")),
            Ok(published) => {
                let manifest = &published.manifest;
                if manifest.kind != kind || &manifest.key != key {
                    let found = format!("{} {}", manifest.kind.name(), manifest.key.short());
                    RemoteEntry::Damaged(format!("{path}: belongs to {found}"))
                } else if let Some(file) = manifest.files.iter().find(|f| !is_plain_name(&f.name)) {
                    RemoteEntry::Damaged(format!("{path}: names a payload file `{}`", file.name))
                } else {
                    RemoteEntry::Published(Box::new(published))
                }
            }
        }
    }

    /// Moves the step's record to `damaged/…` if it is still `found` (the
    /// bytes judged damaged), so that no reader tries it again and a writer
    /// can publish the step afresh; where it went, or `None` when the record
    /// changed or went meanwhile. The payload it named is left to
    /// `grid gc --remote`, as an upload no record names.
    fn set_aside<K: Kind>(&self, kind: K, key: &StepKey, found: &[u8]) -> Result<Option<String>, CacheError> {
        let path = Self::record_path(kind, key);
        if self.store.get(&path).map_err(|e| self.error(e))?.as_deref() != Some(found) {
            return Ok(None);
        }
        let aside = format!("damaged/{}/{}/{}.{}.json", kind.name(), &key.as_str()[..2], key.as_str(), upload_id());
        self.store.put(&aside, found.to_vec()).map_err(|e| self.error(e))?;
        self.store.delete(&path).map_err(|e| self.error(e))?;
        Ok(Some(aside))
    }

    /// Whether the remote holds a record for the step.
    pub fn holds<K: Kind>(&self, kind: K, key: &StepKey) -> Result<bool, CacheError> {
        Ok(matches!(self.entry(kind, key)?, RemoteEntry::Published(_)))
    }

    /// Downloads the step into `cache` (which must not hold it; the caller
    /// holds the step's lock) and installs it there once every file checks out.
    /// A copy that fails its check is set aside (see the module's notes).
    pub fn pull<K: Kind>(&self, cache: &Cache, kind: K, key: &StepKey) -> Result<Pulled<K>, CacheError> {
        let damaged = |why: String, found: &[u8]| -> Result<Pulled<K>, CacheError> {
            Ok(Pulled::Damaged { why, set_aside: self.set_aside(kind, key, found)? })
        };
        let (published, found) = match self.read_record(kind, key)? {
            None | Some((RemoteEntry::Missing, _)) => return Ok(Pulled::Missing),
            Some((RemoteEntry::Damaged(why), found)) => return damaged(why, &found),
            Some((RemoteEntry::Published(published), found)) => (published, found),
        };
        let staging = cache.begin(kind, key)?;
        let mut bytes = 0;
        for file in &published.manifest.files {
            let object = format!("{}/{}", published.payload, file.name);
            match self.store.download_verified(&object, &staging.dir.join(&file.name), file.bytes, &file.sha256) {
                Ok(()) => bytes += file.bytes,
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&staging.dir);
                    return match e {
                        StoreError::Mismatch(why) => damaged(why, &found),
                        StoreError::Store(object_store::Error::NotFound { .. }) => {
                            damaged(format!("{object}: listed in the record but missing"), &found)
                        }
                        e => Err(self.error(e)),
                    };
                }
            }
        }
        cache.install(staging, &published.manifest)?;
        cache.mark_published(kind, key, &self.location);
        Ok(Pulled::Installed { manifest: Box::new(published.manifest.clone()), bytes })
    }

    /// Publishes a step of `cache` (valid there) to the remote: its payload
    /// into a folder of this writer's, then its record, create-only.
    pub fn push<K: Kind>(&self, cache: &Cache, manifest: &Manifest<K>) -> Result<Pushed, CacheError> {
        let (kind, key) = (manifest.kind, &manifest.key);
        let record = Self::record_path(kind, key);
        match self.read_record(kind, key)? {
            None | Some((RemoteEntry::Missing, _)) => {}
            // A record no reader can use gives way to this one.
            Some((RemoteEntry::Damaged(_), found)) => {
                self.set_aside(kind, key, &found)?;
            }
            Some((RemoteEntry::Published(_), _)) => {
                cache.mark_published(kind, key, &self.location);
                return Ok(Pushed::AlreadyThere);
            }
        }
        // One copy per content: a reused payload is named, not uploaded.
        let shared = match &manifest.reused_from {
            Some(from) => match self.entry(from.kind, &from.key)? {
                RemoteEntry::Published(source) if source.manifest.files == manifest.files => Some(source.payload),
                _ => None,
            },
            None => None,
        };
        let (payload, uploaded) = match shared {
            Some(payload) => (payload, None),
            None => {
                let folder =
                    format!("payloads/{}/{}/{}/{}", kind.name(), &key.as_str()[..2], key.as_str(), upload_id());
                let local = cache.step_dir(kind, key);
                let mut bytes = 0;
                for file in &manifest.files {
                    let uploaded = self.store.upload(&format!("{folder}/{}", file.name), &local.join(&file.name));
                    if let Err(e) = uploaded {
                        self.remove_upload(&folder);
                        return Err(self.error(e));
                    }
                    bytes += file.bytes;
                }
                (folder, Some(bytes))
            }
        };
        let published = Published { payload: payload.clone(), manifest: manifest.clone() };
        let json = serde_json::to_vec_pretty(&published).map_err(|source| CacheError::Manifest {
            path: std::path::PathBuf::from(format!("{}/{record}", self.location)),
            source,
        })?;
        match self.store.create(&record, json) {
            Ok(Created::Yes) => {
                cache.mark_published(kind, key, &self.location);
                Ok(uploaded.map_or(Pushed::SharedPayload, |bytes| Pushed::Uploaded { bytes }))
            }
            Ok(Created::AlreadyExists) => {
                // Another writer won: its copy is the one kept.
                if uploaded.is_some() {
                    self.remove_upload(&payload);
                }
                cache.mark_published(kind, key, &self.location);
                Ok(Pushed::AlreadyThere)
            }
            Err(e) => {
                if uploaded.is_some() {
                    self.remove_upload(&payload);
                }
                Err(self.error(e))
            }
        }
    }

    /// Removes this writer's upload (best effort: `grid gc --remote`
    /// collects what a failure here leaves).
    fn remove_upload(&self, folder: &str) {
        if let Ok(objects) = self.store.list(folder) {
            for (object, _) in objects {
                let _ = self.store.delete(&object);
            }
        }
    }

    /// Every object under `relative`, with its size (for `gc` and tests).
    pub fn list(&self, relative: &str) -> Result<Vec<(String, u64)>, CacheError> {
        self.store.list(relative).map_err(|e| self.error(e))
    }
}

impl Cache {
    /// Whether the step is in this cache, or on the remote behind it; a
    /// remote that cannot be asked counts as not holding it.
    pub fn available<K: Kind>(&self, kind: K, key: &StepKey) -> bool {
        matches!(self.lookup(kind, key), Ok(Some(_)))
            || self.remote().is_some_and(|remote| matches!(remote.holds(kind, key), Ok(true)))
    }

    /// Reads ahead the remote's records of those of `steps` this cache
    /// lacks (see [`Remote::prefetch`]); nothing without a remote.
    pub fn prefetch_remote<'a, K: Kind>(&self, steps: impl IntoIterator<Item = (K, &'a StepKey)>) {
        let Some(remote) = self.remote() else { return };
        let lacking: Vec<(K, &StepKey)> =
            steps.into_iter().filter(|(kind, key)| !matches!(self.lookup(*kind, key), Ok(Some(_)))).collect();
        remote.prefetch(&lacking);
    }

    /// `cache/<kind>/<key[0..2]>/<key>.published`: the remotes known to hold
    /// the step (their locations, one per line), so that a run does not ask.
    fn published_path<K: Kind>(&self, kind: K, key: &StepKey) -> std::path::PathBuf {
        self.root.join(kind.name()).join(&key.as_str()[..2]).join(format!("{}.published", key.as_str()))
    }

    /// Whether this cache remembers that the remote at `location` holds the step.
    pub fn known_published<K: Kind>(&self, kind: K, key: &StepKey, location: &str) -> bool {
        std::fs::read_to_string(self.published_path(kind, key)).is_ok_and(|text| text.lines().any(|l| l == location))
    }

    /// Remembers that the remote at `location` holds the step. Only saves a
    /// question later: a lost write costs one request.
    fn mark_published<K: Kind>(&self, kind: K, key: &StepKey, location: &str) {
        if self.known_published(kind, key, location) {
            return;
        }
        let path = self.published_path(kind, key);
        let mut text = std::fs::read_to_string(&path).unwrap_or_default();
        text.push_str(location);
        text.push('\n');
        let staged = path.with_extension(format!("published.{}", std::process::id()));
        if std::fs::write(&staged, text).is_ok() && std::fs::rename(&staged, &path).is_err() {
            let _ = std::fs::remove_file(&staged);
        }
    }
}

/// A payload file's name as a manifest may give it: one plain path component.
fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\']) && name != "manifest.json"
}

/// A name for one writer's upload, unique across machines and processes:
/// the time, and a hash of the time, the process and the host.
fn upload_id() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let seed =
        format!("{}:{}:{}:{}", now.as_nanos(), std::process::id(), hostname(), COUNTER.fetch_add(1, Ordering::Relaxed));
    format!("{}-{}", now.as_secs(), &super::files::sha256_hex(seed.as_bytes())[..16])
}

/// The S3 client's settings: the `AWS_*` environment, then what the shared
/// config files (`~/.aws/credentials`, `~/.aws/config`) give that it lacks.
fn s3_builder(location: &str) -> object_store::aws::AmazonS3Builder {
    let mut builder = object_store::aws::AmazonS3Builder::from_env().with_url(location);
    let profile = aws_profile::from_files(&|name| std::env::var(name).ok());
    if let (Some(id), Some(secret)) = (profile.access_key_id, profile.secret_access_key) {
        builder = builder.with_access_key_id(id).with_secret_access_key(secret);
        if let Some(token) = profile.session_token {
            builder = builder.with_token(token);
        }
    }
    if let Some(region) = profile.region {
        builder = builder.with_region(region);
    }
    builder
}

/// This machine's name, for leases and upload ids (empty when unknown).
fn hostname() -> String {
    std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .map(|h| h.trim().to_string())
        .unwrap_or_default()
}

/// `location` without a `user:password@` part.
fn without_credentials(location: &str) -> String {
    match url::Url::parse(location) {
        Ok(mut url) if !url.username().is_empty() || url.password().is_some() => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.to_string()
        }
        _ => location.to_string(),
    }
}

#[cfg(test)]
mod tests;
