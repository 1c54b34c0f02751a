//! Pretrained checkpoints: a local directory, or `hf://org/name[@revision]`
//! downloaded once from the Hugging Face hub into the cache.
//!
//! Either way [`resolve`] returns a directory holding `config.json`,
//! `model.safetensors` and `tokenizer.json` (or `vocab.txt`, or SentencePiece's
//! `spm.model`), plus
//! `tokenizer_config.json` when the repository has one. The revision defaults to
//! `main`; a one-part id (`hf://bert-base-uncased`) is a valid hub repository.
//!
//! # On disk
//!
//! `<cache>/hub/<org>--<name>/<revision>/` holds the files and `checksums.json`
//! (per file: sha256, size and URL, plus the commit the revision pointed to).
//! The hub forbids `--` in repository names, so the folder name is unambiguous; a
//! `/` in a revision (`refs/pr/1`) is written `%2F`.
//!
//! - **Downloaded once.** A published directory is never refreshed: `main` stays
//!   at the commit recorded in `checksums.json`. Pin a commit for reproducible
//!   grids; delete the directory to fetch a newer `main`.
//! - **Atomic.** Files are written into a temporary `.<revision>~partial-XXXXXX/`
//!   beside the target and renamed into place only when all are complete and
//!   verified. A crash leaves that temporary folder (the next download removes
//!   it), never a half-written checkpoint that looks complete.
//! - **One downloader.** An exclusive lock on `<revision>.lock` keeps two processes
//!   from downloading one checkpoint; the second waits, then finds it published.
//!   Reading a published directory takes no lock.
//! - **Verified.** sha256 is computed while streaming. Large (LFS) files come with
//!   their sha256 in `X-Linked-Etag`, checked before anything is published; small
//!   files' `ETag` is a git blob sha1 and is not checked. Every later [`resolve`]
//!   checks that each file listed in `checksums.json` still has its size: one stat
//!   per file, not a re-hash of a 400 MB weights file.
//!
//! # Network
//!
//! `GET {HF_ENDPOINT}/{repo}/resolve/{revision}/{file}`, where `HF_ENDPOINT`
//! defaults to `https://huggingface.co`, with `Authorization: Bearer $HF_TOKEN`
//! when that is set. Redirects are followed by hand: the hub answers an LFS file
//! with a redirect to a CDN, `X-Linked-Etag` is only on that redirect, and the
//! token must go to the endpoint's own origin, never to the CDN.

use std::collections::BTreeMap;
use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Where `HF_ENDPOINT` points when unset.
pub const DEFAULT_ENDPOINT: &str = "https://huggingface.co";
/// The revision of `hf://org/name` without `@…`.
pub const DEFAULT_REVISION: &str = "main";
/// The record written into every downloaded checkpoint.
pub const CHECKSUMS: &str = "checksums.json";

const SCHEME: &str = "hf://";
const CONFIG: &str = "config.json";
const WEIGHTS: &str = "model.safetensors";
/// Older checkpoints' weights, which grid does not read (see [`HubError::PytorchWeightsOnly`]).
const PYTORCH_WEIGHTS: &str = "pytorch_model.bin";
const TOKENIZER: &str = "tokenizer.json";
const VOCAB: &str = "vocab.txt";
/// SentencePiece's own model file: DeBERTa-v3 ships it instead of tokenizer.json.
const SPM: &str = crate::text::sentencepiece::SPM_FILE;
const TOKENIZER_CONFIG: &str = "tokenizer_config.json";
/// The hub redirects once (to the CDN), twice for a renamed repository.
const MAX_REDIRECTS: usize = 5;

/// A file of a dataset repository on the Hub:
/// `hf://datasets/<org>/<name>[@<revision>]/<path>`. Pin a commit for a grid
/// that reads the same bytes next year; the keys hold the file's content, not
/// this address, so a local copy of the same bytes gives the same keys.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HubFile {
    /// `datasets/<org>/<name>`.
    pub repo: String,
    pub revision: String,
    /// The file's path in the repository, `/`-separated.
    pub path: String,
}

impl HubFile {
    /// Whether `input` is written as a hub dataset file (valid or not).
    pub fn is_hub(input: &str) -> bool {
        input.starts_with(SCHEME)
    }

    /// Its published folder under `cache_root` (`hub/datasets--org--name/<revision>/<path>~file/`).
    pub fn dir(&self, cache_root: &Path) -> PathBuf {
        hub_dir(cache_root, &self.repo, &self.revision).join(format!("{}~file", self.path.replace('/', "%2F")))
    }

    /// What its published copy under `cache_root` records of it (sha256, size).
    pub fn cached_record(&self, cache_root: &Path) -> Result<FileRecord, HubError> {
        let dir = self.dir(cache_root);
        let checksums = Checksums::read(&dir)?;
        checksums.files.get(&self.path).cloned().ok_or_else(|| HubError::Corrupt {
            path: dir.join(CHECKSUMS),
            problem: format!("no record of {}", self.path),
            dir: dir.clone(),
        })
    }
}

impl FromStr for HubFile {
    type Err = HubError;

    fn from_str(input: &str) -> Result<Self, HubError> {
        let invalid = |reason: String| HubError::InvalidSource { input: input.to_string(), reason };
        let expected = "expected hf://datasets/org/name[@revision]/path/to/file";
        let Some(rest) = input.strip_prefix(SCHEME).and_then(|r| r.strip_prefix("datasets/")) else {
            return Err(invalid(expected.into()));
        };
        let mut parts = rest.splitn(3, '/');
        let (Some(org), Some(name_revision), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(invalid(expected.into()));
        };
        let (name, revision) = name_revision.split_once('@').unwrap_or((name_revision, DEFAULT_REVISION));
        let repo = format!("{org}/{name}");
        validate_repo(&repo).map_err(invalid)?;
        validate_revision(revision).map_err(invalid)?;
        if path.is_empty() || path.split('/').any(|p| p.is_empty() || p == "." || p == ".." || p.contains('~')) {
            return Err(invalid(format!("`{path}` is not a file path in the repository")));
        }
        Ok(HubFile { repo: format!("datasets/{repo}"), revision: revision.to_string(), path: path.to_string() })
    }
}

impl fmt::Display for HubFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}@{}/{}", self.repo, self.revision, self.path)
    }
}

/// The bytes a file must have: its sha256 and, when known, its size. A grid
/// that pins a file reads those bytes or stops: a download that differs is
/// never published, and a cached or local copy that differs is refused.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pin {
    /// Lower-case hex, 64 digits.
    pub sha256: String,
    pub bytes: Option<u64>,
}

impl Pin {
    /// A pin from a grid file's `sha256` (any case) and `bytes`.
    pub fn new(sha256: &str, bytes: Option<u64>) -> Result<Pin, String> {
        let sha256 = sha256.trim();
        if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(format!("`sha256 = \"{sha256}\"` is not a sha256 (64 hexadecimal digits)"));
        }
        Ok(Pin { sha256: sha256.to_ascii_lowercase(), bytes })
    }

    /// Whether content with this hash and size is the pinned content; the
    /// error says what differs, the pinned value first.
    pub fn check(&self, sha256: &str, bytes: u64) -> Result<(), PinMismatch> {
        let size_differs = self.bytes.is_some_and(|b| b != bytes);
        if size_differs || !self.sha256.eq_ignore_ascii_case(sha256) {
            return Err(PinMismatch {
                pinned: self.clone(),
                found_sha256: sha256.to_ascii_lowercase(),
                found_bytes: bytes,
            });
        }
        Ok(())
    }
}

/// Content that is not the pinned content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PinMismatch {
    pub pinned: Pin,
    pub found_sha256: String,
    pub found_bytes: u64,
}

impl fmt::Display for PinMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "pinned sha256 {}", self.pinned.sha256)?;
        if let Some(bytes) = self.pinned.bytes {
            write!(f, " ({bytes} bytes)")?;
        }
        write!(f, ", found sha256 {} ({} bytes)", self.found_sha256, self.found_bytes)
    }
}

/// Where a model's pretrained checkpoint comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CheckpointSource {
    /// A directory on this machine, used in place.
    Local(PathBuf),
    /// `hf://repo@revision`, downloaded into the cache.
    Hub { repo: String, revision: String },
}

impl CheckpointSource {
    /// The directory [`resolve`] returns, whether or not it exists yet.
    pub fn dir(&self, cache_root: &Path) -> PathBuf {
        match self {
            CheckpointSource::Local(dir) => dir.clone(),
            CheckpointSource::Hub { repo, revision } => hub_dir(cache_root, repo, revision),
        }
    }
}

impl FromStr for CheckpointSource {
    type Err = HubError;

    fn from_str(input: &str) -> Result<Self, HubError> {
        let invalid = |reason: String| HubError::InvalidSource { input: input.to_string(), reason };
        let Some(id) = input.strip_prefix(SCHEME) else {
            if input.trim().is_empty() {
                return Err(invalid("empty; expected a directory or hf://org/name".into()));
            }
            // `hf:/org/name` would otherwise silently become a relative path.
            if input.starts_with("hf:") {
                return Err(invalid("hub checkpoints are written hf://org/name".into()));
            }
            return Ok(CheckpointSource::Local(PathBuf::from(input)));
        };
        // Repository names cannot contain `@`, so the first one starts the revision.
        let (repo, revision) = id.split_once('@').unwrap_or((id, DEFAULT_REVISION));
        validate_repo(repo).map_err(invalid)?;
        validate_revision(revision).map_err(invalid)?;
        Ok(CheckpointSource::Hub { repo: repo.to_string(), revision: revision.to_string() })
    }
}

impl fmt::Display for CheckpointSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CheckpointSource::Local(dir) => write!(f, "{}", dir.display()),
            CheckpointSource::Hub { repo, revision } if revision == DEFAULT_REVISION => write!(f, "{SCHEME}{repo}"),
            CheckpointSource::Hub { repo, revision } => write!(f, "{SCHEME}{repo}@{revision}"),
        }
    }
}

/// The hub's own rules for repository ids (`huggingface_hub.utils.validate_repo_id`),
/// checked here so that a typo fails when the grid is read, not at download time.
fn validate_repo(repo: &str) -> Result<(), String> {
    if repo.is_empty() {
        return Err("the repository id is empty; expected hf://org/name".into());
    }
    let parts: Vec<&str> = repo.split('/').collect();
    if parts.len() > 2 {
        return Err(format!("expected hf://org/name, found {} path parts", parts.len()));
    }
    for part in parts {
        if part.is_empty() {
            return Err("empty path part; expected hf://org/name".into());
        }
        if let Some(c) = part.chars().find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))) {
            return Err(format!("{c:?} is not allowed in a repository id (letters, digits, '-', '_' and '.' are)"));
        }
        if part.contains("..") || part.contains("--") {
            return Err("'..' and '--' are not allowed in a repository id".into());
        }
        if part.starts_with(['-', '.']) || part.ends_with(['-', '.']) {
            return Err(format!("`{part}` may not start or end with '-' or '.'"));
        }
    }
    Ok(())
}

/// Whether a revision is a full commit hash (40 hex digits): the one kind
/// that always names the same files.
pub fn is_commit(revision: &str) -> bool {
    revision.len() == 40 && revision.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Branch, tag or commit. `~` cannot occur (git forbids it in ref names), which
/// keeps the temporary folder names apart from every revision's.
fn validate_revision(revision: &str) -> Result<(), String> {
    if revision.is_empty() {
        return Err("the revision after '@' is empty".into());
    }
    if let Some(c) = revision.chars().find(|&c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))) {
        return Err(format!("{c:?} is not allowed in a revision (letters, digits, '-', '_', '.' and '/' are)"));
    }
    if revision.contains("..") || revision.contains("//") || revision.starts_with('/') || revision.ends_with('/') {
        return Err(format!("`{revision}` is not a valid revision"));
    }
    Ok(())
}

#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("`{input}`: not a checkpoint source: {reason}")]
    InvalidSource { input: String, reason: String },
    #[error("{dir}: no such checkpoint directory")]
    NoDirectory { dir: PathBuf },
    #[error(
        "{dir}: {file} is missing (a checkpoint directory holds config.json, model.safetensors, and tokenizer.json, vocab.txt or spm.model)"
    )]
    MissingFile { dir: PathBuf, file: String },
    #[error(
        "{dir}: the weights are in pytorch_model.bin only; grid reads model.safetensors. Convert them once (needs \
         torch and safetensors): {command}"
    )]
    PytorchWeightsOnly { dir: PathBuf, command: String },
    #[error("{url}: HTTP {status}{detail}")]
    Http { url: String, status: u16, detail: String },
    #[error("{url}: {message}")]
    Network { url: String, message: String },
    #[error("{url}: not in the cache, and HF_HUB_OFFLINE is set")]
    Offline { url: String },
    #[error("{url}: checksum mismatch (expected {expected}, got {actual})")]
    ChecksumMismatch { url: String, expected: String, actual: String },
    #[error("{reference}: the server sent other bytes than the grid pins: {mismatch}; nothing was kept")]
    ServedOtherBytes { reference: String, mismatch: PinMismatch },
    #[error(
        "{reference}: the cached copy in {dir} is not the pinned file: {mismatch}; delete {dir} to download it again"
    )]
    CachedOtherBytes { reference: String, dir: PathBuf, mismatch: PinMismatch },
    #[error("{path}: {problem}; delete {dir} to download the checkpoint again")]
    Corrupt { path: PathBuf, problem: String, dir: PathBuf },
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: io::Error },
}

impl HubError {
    /// The Hub could not be asked: no network, or `HF_HUB_OFFLINE`.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, HubError::Network { .. } | HubError::Offline { .. })
    }
}

fn io_err(path: &Path) -> impl FnOnce(io::Error) -> HubError + '_ {
    move |source| HubError::Io { path: path.to_path_buf(), source }
}

/// What a download reports as it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress<'a> {
    /// A file started; `total` is its length when the server sent one.
    Start { file: &'a str, total: Option<u64> },
    /// This many more bytes of the current file arrived.
    Advance(u64),
    /// The current file is complete.
    Finish { file: &'a str, bytes: u64 },
}

/// The bar a download is shown on: file name, bytes, rate; hidden when not `visible`.
pub fn download_bar(visible: bool) -> indicatif::ProgressBar {
    if !visible {
        return indicatif::ProgressBar::hidden();
    }
    indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template("{msg:>24} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    )
}

/// Shows downloads on `bar`, one file at a time (a hidden bar shows nothing).
pub fn bar_progress(bar: &indicatif::ProgressBar) -> impl Fn(Progress<'_>) + '_ {
    move |event| match event {
        Progress::Start { file, total } => {
            bar.reset();
            bar.set_length(total.unwrap_or(0));
            bar.set_message(file.to_string());
        }
        Progress::Advance(bytes) => bar.inc(bytes),
        Progress::Finish { .. } => {}
    }
}

/// `checksums.json`: what was downloaded, for the cheap check on every later use
/// and to say which commit a branch pointed to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checksums {
    pub repo: String,
    pub revision: String,
    /// The commit `revision` resolved to (`X-Repo-Commit`), when the server said.
    pub commit: Option<String>,
    pub files: BTreeMap<String, FileRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRecord {
    pub sha256: String,
    pub size: u64,
    pub url: String,
}

impl Checksums {
    /// The record of a published checkpoint directory.
    pub fn read(dir: &Path) -> Result<Checksums, HubError> {
        let path = dir.join(CHECKSUMS);
        let corrupt = |problem: String| HubError::Corrupt { path: path.clone(), problem, dir: dir.to_path_buf() };
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(corrupt("missing".into())),
            Err(e) => return Err(HubError::Io { path, source: e }),
        };
        serde_json::from_slice(&bytes).map_err(|e| corrupt(format!("unreadable: {e}")))
    }
}

/// Resolves `source` with the endpoint and token from the environment
/// (`HF_ENDPOINT`, `HF_TOKEN`); see [`HubClient::resolve`]. Pass
/// [`bar_progress`] to show downloads on a bar, or `&|_| {}`.
pub fn resolve(
    source: &CheckpointSource,
    cache_root: &Path,
    progress: &dyn Fn(Progress<'_>),
) -> Result<PathBuf, HubError> {
    HubClient::from_env().resolve(source, cache_root, progress)
}

/// Talks to one hub endpoint. Built from the environment in production and
/// directly in tests, which must not set process-wide variables.
#[derive(Clone)]
pub struct HubClient {
    endpoint: String,
    token: Option<String>,
    agent: ureq::Agent,
    /// `HF_HUB_OFFLINE`: what the cache holds serves, nothing is requested.
    offline: bool,
}

/// Whether `HF_HUB_OFFLINE` asks for no network, as `huggingface_hub` reads it.
pub fn offline_from_env() -> bool {
    std::env::var("HF_HUB_OFFLINE")
        .is_ok_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
}

impl fmt::Debug for HubClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never print the token.
        f.debug_struct("HubClient")
            .field("endpoint", &self.endpoint)
            .field("token", &self.token.as_ref().map(|_| "<set>"))
            .finish()
    }
}

impl HubClient {
    pub fn new(endpoint: &str, token: Option<String>) -> HubClient {
        let agent = ureq::AgentBuilder::new()
            // Followed by hand, see the module docs.
            .redirects(0)
            .timeout_connect(Duration::from_secs(30))
            // Per read, not for the whole body: weights files are large.
            .timeout_read(Duration::from_secs(60))
            .user_agent(concat!("grid/", env!("CARGO_PKG_VERSION")))
            .build();
        HubClient {
            endpoint: endpoint.trim_end_matches('/').to_string(),
            // A token pasted from a file often ends in a newline, which no header may hold.
            token: token.map(|t| t.trim().to_string()).filter(|t| !t.is_empty()),
            agent,
            offline: false,
        }
    }

    /// A client that requests nothing: only what the cache holds serves.
    pub fn offline(mut self, offline: bool) -> HubClient {
        self.offline = offline;
        self
    }

    /// `HF_ENDPOINT` (default [`DEFAULT_ENDPOINT`]) and `HF_TOKEN`.
    pub fn from_env() -> HubClient {
        let endpoint = std::env::var("HF_ENDPOINT").ok().filter(|e| !e.trim().is_empty());
        HubClient::new(endpoint.as_deref().unwrap_or(DEFAULT_ENDPOINT), std::env::var("HF_TOKEN").ok())
            .offline(offline_from_env())
    }

    /// The checkpoint directory for `source`: a local directory after checking
    /// its files, or the cached download of a hub checkpoint under `cache_root`
    /// (downloaded first if absent, then checked against `checksums.json`).
    pub fn resolve(
        &self,
        source: &CheckpointSource,
        cache_root: &Path,
        progress: &dyn Fn(Progress<'_>),
    ) -> Result<PathBuf, HubError> {
        match source {
            CheckpointSource::Local(dir) => {
                check_layout(dir)?;
                Ok(dir.clone())
            }
            CheckpointSource::Hub { repo, revision } => {
                let target = hub_dir(cache_root, repo, revision);
                // Only complete checkpoints are ever renamed into place, so no lock is needed to use one.
                if target.is_dir() {
                    verify_published(&target)?;
                    return Ok(target);
                }
                self.download(repo, revision, &target, progress)?;
                verify_published(&target)?;
                Ok(target)
            }
        }
    }

    fn download(
        &self,
        repo: &str,
        revision: &str,
        target: &Path,
        progress: &dyn Fn(Progress<'_>),
    ) -> Result<(), HubError> {
        self.publish(target, |dir| self.fetch_all(repo, revision, dir, progress))
    }

    /// Downloads a dataset file, `hf://datasets/…`, into the cache once, and
    /// gives its path there; a later call checks it against its record. With
    /// a `pin`, a download of other bytes is never published and a cached
    /// copy of other bytes is refused.
    pub fn dataset_file(
        &self,
        file: &HubFile,
        pin: Option<&Pin>,
        cache_root: &Path,
        progress: &dyn Fn(Progress<'_>),
    ) -> Result<PathBuf, HubError> {
        let target = file.dir(cache_root);
        if !target.is_dir() {
            self.publish(&target, |dir| {
                let mut checksums = Checksums {
                    repo: file.repo.clone(),
                    revision: file.revision.clone(),
                    commit: None,
                    files: BTreeMap::new(),
                };
                if let Some(parent) = dir.join(&file.path).parent() {
                    fs::create_dir_all(parent).map_err(io_err(parent))?;
                }
                let fetched = self
                    .fetch(&file.repo, &file.revision, &file.path, dir, false, progress)?
                    .expect("a missing file is an error when not `missing_ok`");
                if let Some(pin) = pin {
                    pin.check(&fetched.record.sha256, fetched.record.size)
                        .map_err(|mismatch| HubError::ServedOtherBytes { reference: file.to_string(), mismatch })?;
                }
                checksums.commit = fetched.commit;
                checksums.files.insert(file.path.clone(), fetched.record);
                Ok(checksums)
            })?;
        }
        verify_files(&target)?;
        if let Some(pin) = pin {
            let record = file.cached_record(cache_root)?;
            pin.check(&record.sha256, record.size).map_err(|mismatch| HubError::CachedOtherBytes {
                reference: file.to_string(),
                dir: target.clone(),
                mismatch,
            })?;
        }
        Ok(target.join(&file.path))
    }

    /// [`HubClient::dataset_file`], saying on stderr what it downloads, with a
    /// progress bar, when the cache lacks the file.
    pub fn dataset_file_shown(
        &self,
        file: &HubFile,
        pin: Option<&Pin>,
        cache_root: &Path,
    ) -> Result<PathBuf, HubError> {
        if file.dir(cache_root).is_dir() {
            return self.dataset_file(file, pin, cache_root, &|_| {});
        }
        eprintln!("downloading {file}");
        let bar = download_bar(true);
        let result = self.dataset_file(file, pin, cache_root, &bar_progress(&bar));
        bar.finish_and_clear();
        result
    }

    /// Fills a staging folder beside `target` with `fetch` (which returns what
    /// it fetched), records the checksums, and renames it into place: whole or
    /// not at all, one process at a time.
    fn publish(&self, target: &Path, fetch: impl FnOnce(&Path) -> Result<Checksums, HubError>) -> Result<(), HubError> {
        let (Some(parent), Some(name)) = (target.parent(), target.file_name()) else {
            return Err(HubError::NoDirectory { dir: target.to_path_buf() });
        };
        fs::create_dir_all(parent).map_err(io_err(parent))?;
        let name = name.to_string_lossy().into_owned();
        let lock_path = parent.join(format!("{name}.lock"));
        let lock =
            File::options().create(true).truncate(false).write(true).open(&lock_path).map_err(io_err(&lock_path))?;
        lock.lock().map_err(io_err(&lock_path))?;

        // Another process may have published it while we waited for the lock
        // (the caller checks what it finds).
        if target.is_dir() {
            return Ok(());
        }
        // Holding the lock, any temporary folder for this revision is a dead process's.
        let prefix = format!(".{name}~partial-");
        if let Ok(entries) = fs::read_dir(parent) {
            for entry in entries.flatten() {
                if entry.file_name().to_string_lossy().starts_with(&prefix) {
                    let _ = fs::remove_dir_all(entry.path());
                }
            }
        }

        // Dropped (and deleted) on every early return below.
        let staging = tempfile::Builder::new().prefix(&prefix).tempdir_in(parent).map_err(io_err(parent))?;
        let checksums = fetch(staging.path())?;
        let record_path = staging.path().join(CHECKSUMS);
        let json = serde_json::to_vec_pretty(&checksums)
            .map_err(|e| HubError::Io { path: record_path.clone(), source: e.into() })?;
        fs::write(&record_path, json).map_err(io_err(&record_path))?;

        let staged = staging.keep();
        if let Err(source) = fs::rename(&staged, target) {
            let _ = fs::remove_dir_all(&staged);
            return Err(HubError::Io { path: target.to_path_buf(), source });
        }
        drop(lock);
        Ok(())
    }

    /// The commit `revision` of `repo` points to now, as the Hub answers a
    /// HEAD of one of its files (`X-Repo-Commit`); `None` when it does not say.
    /// `repo` is `org/name` or `datasets/org/name`.
    pub fn commit_of(&self, repo: &str, revision: &str, file: &str) -> Result<Option<String>, HubError> {
        let url = self.resolve_url(repo, revision, file)?;
        let mut request = self.agent.head(&url);
        if let Some(token) = &self.token {
            request = request.set("Authorization", &format!("Bearer {token}"));
        }
        match request.call() {
            // The Hub's own answer (often a redirect to its CDN) carries the header.
            Ok(response) => {
                Ok(response.header("x-repo-commit").map(|c| c.trim().to_string()).filter(|c| !c.is_empty()))
            }
            Err(ureq::Error::Status(status, response)) => {
                let detail = http_detail(status, &response, file, self.token.is_some(), &url, &url);
                Err(HubError::Http { url, status, detail })
            }
            Err(ureq::Error::Transport(t)) => Err(HubError::Network { url, message: transport_message(&t) }),
        }
    }

    /// `{endpoint}/{repo}/resolve/{revision}/{file}`, the one address a file
    /// is asked for; offline, an error instead.
    fn resolve_url(&self, repo: &str, revision: &str, file: &str) -> Result<String, HubError> {
        let url = format!("{}/{repo}/resolve/{}/{file}", self.endpoint, revision.replace('/', "%2F"));
        if self.offline {
            return Err(HubError::Offline { url });
        }
        Ok(url)
    }

    /// Downloads every checkpoint file of `repo@revision` into `dir`.
    fn fetch_all(
        &self,
        repo: &str,
        revision: &str,
        dir: &Path,
        progress: &dyn Fn(Progress<'_>),
    ) -> Result<Checksums, HubError> {
        let mut checksums =
            Checksums { repo: repo.to_string(), revision: revision.to_string(), commit: None, files: BTreeMap::new() };
        let mut fetch = |file: &str, missing_ok: bool| -> Result<bool, HubError> {
            let Some(fetched) = self.fetch(repo, revision, file, dir, missing_ok, progress)? else {
                return Ok(false);
            };
            checksums.commit = checksums.commit.take().or(fetched.commit);
            checksums.files.insert(file.to_string(), fetched.record);
            Ok(true)
        };
        // Small files first, so that a repository without a usable tokenizer
        // fails before its weights are downloaded.
        fetch(CONFIG, false)?;
        if !fetch(TOKENIZER, true)? && !fetch(VOCAB, true)? {
            fetch(SPM, false)?;
        }
        fetch(TOKENIZER_CONFIG, true)?;
        fetch(WEIGHTS, false)?;
        Ok(checksums)
    }

    /// Downloads one file into `dir`, verifying its LFS sha256 when the hub sends
    /// one. `Ok(None)` when it answers 404 and `missing_ok`.
    fn fetch(
        &self,
        repo: &str,
        revision: &str,
        file: &str,
        dir: &Path,
        missing_ok: bool,
        progress: &dyn Fn(Progress<'_>),
    ) -> Result<Option<Fetched>, HubError> {
        let url = self.resolve_url(repo, revision, file)?;
        let mut current = url.clone();
        let mut expected = None;
        let mut commit = None;
        let mut redirects = 0;
        let response = loop {
            let mut request = self.agent.get(&current).set("Accept-Encoding", "identity");
            if let Some(token) = &self.token
                && origin(&current).eq_ignore_ascii_case(origin(&self.endpoint))
            {
                request = request.set("Authorization", &format!("Bearer {token}"));
            }
            let response = match request.call() {
                Ok(response) => response,
                Err(ureq::Error::Status(404, _)) if missing_ok => return Ok(None),
                Err(ureq::Error::Status(status, response)) => {
                    let detail = http_detail(status, &response, file, self.token.is_some(), &url, &current);
                    return Err(HubError::Http { url, status, detail });
                }
                Err(ureq::Error::Transport(t)) => {
                    return Err(HubError::Network { url, message: transport_message(&t) });
                }
            };
            // The hub's headers come on its own answer, before the redirect to the CDN.
            expected = expected.or_else(|| response.header("x-linked-etag").and_then(lfs_sha256));
            commit = commit.or_else(|| response.header("x-repo-commit").map(str::to_string));
            if !(300..400).contains(&response.status()) {
                break response;
            }
            redirects += 1;
            let location = response.header("location");
            match location {
                Some(location) if redirects <= MAX_REDIRECTS => current = join_location(&current, location),
                _ => {
                    let detail = match location {
                        Some(_) => format!(": more than {MAX_REDIRECTS} redirects"),
                        None => ": redirect without a Location".to_string(),
                    };
                    return Err(HubError::Http { url, status: response.status(), detail });
                }
            }
        };

        let total = response.header("content-length").and_then(|v| v.parse().ok());
        progress(Progress::Start { file, total });
        let path = dir.join(file);
        let mut out = File::create(&path).map_err(io_err(&path))?;
        let mut body = response.into_reader();
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let n = match body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    return Err(HubError::Network {
                        url,
                        message: format!("download interrupted after {size} bytes: {e}"),
                    });
                }
            };
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n]).map_err(io_err(&path))?;
            size += n as u64;
            progress(Progress::Advance(n as u64));
        }
        // On disk before the rename publishes it, so a power cut cannot leave a
        // published directory with empty files.
        out.sync_all().map_err(io_err(&path))?;
        let sha256 = hex::encode(hasher.finalize());
        if let Some(expected) = expected
            && expected != sha256
        {
            return Err(HubError::ChecksumMismatch { url, expected, actual: sha256 });
        }
        progress(Progress::Finish { file, bytes: size });
        Ok(Some(Fetched { record: FileRecord { sha256, size, url }, commit }))
    }
}

struct Fetched {
    record: FileRecord,
    commit: Option<String>,
}

/// `<cache_root>/hub/<org>--<name>/<revision>`
fn hub_dir(cache_root: &Path, repo: &str, revision: &str) -> PathBuf {
    cache_root.join("hub").join(repo.replace('/', "--")).join(revision_dir_name(revision))
}

fn revision_dir_name(revision: &str) -> String {
    revision.replace('/', "%2F")
}

/// The one command that writes `model.safetensors` beside a checkpoint's
/// `pytorch_model.bin`: every tensor copied out of shared storage (tied
/// embeddings share it, which safetensors refuses), tagged `pt` as
/// transformers' own conversion does.
fn conversion_command(dir: &Path) -> String {
    let path = |file: &str| dir.join(file).display().to_string().replace('\\', "\\\\").replace('\'', "\\'");
    format!(
        "python3 -c \"import torch; from safetensors.torch import save_file; \
         state = torch.load('{}', map_location='cpu', weights_only=True); \
         save_file({{k: v.contiguous().clone() for k, v in state.items()}}, '{}', metadata={{'format': 'pt'}})\"",
        path(PYTORCH_WEIGHTS),
        path(WEIGHTS)
    )
}

/// The files every checkpoint directory needs.
fn check_layout(dir: &Path) -> Result<(), HubError> {
    if !dir.is_dir() {
        return Err(HubError::NoDirectory { dir: dir.to_path_buf() });
    }
    let missing = |file: &str| HubError::MissingFile { dir: dir.to_path_buf(), file: file.to_string() };
    if !dir.join(WEIGHTS).is_file() && dir.join(PYTORCH_WEIGHTS).is_file() {
        return Err(HubError::PytorchWeightsOnly { dir: dir.to_path_buf(), command: conversion_command(dir) });
    }
    for file in [CONFIG, WEIGHTS] {
        if !dir.join(file).is_file() {
            return Err(missing(file));
        }
    }
    if ![TOKENIZER, VOCAB, SPM].iter().any(|file| dir.join(file).is_file()) {
        return Err(missing("tokenizer.json (or vocab.txt, or spm.model)"));
    }
    Ok(())
}

/// The cheap check of a downloaded checkpoint: every recorded file is still there
/// with its recorded size.
fn verify_published(dir: &Path) -> Result<(), HubError> {
    verify_files(dir)?;
    check_layout(dir)
}

/// Every file `checksums.json` records is there, at its recorded size (the
/// cheap check; the sha256 was checked as it downloaded).
fn verify_files(dir: &Path) -> Result<(), HubError> {
    let checksums = Checksums::read(dir)?;
    for (file, record) in &checksums.files {
        let path = dir.join(file);
        let problem = match fs::metadata(&path) {
            Ok(meta) if meta.len() == record.size => continue,
            Ok(meta) => format!("{} bytes, expected {} (truncated or modified)", meta.len(), record.size),
            Err(e) if e.kind() == io::ErrorKind::NotFound => "missing".to_string(),
            Err(e) => return Err(HubError::Io { path, source: e }),
        };
        return Err(HubError::Corrupt { path, problem, dir: dir.to_path_buf() });
    }
    Ok(())
}

/// The sha256 in an `X-Linked-Etag` header (`"<64 hex>"`), if it is one.
fn lfs_sha256(etag: &str) -> Option<String> {
    let etag = etag.trim();
    let etag = etag.strip_prefix("W/").unwrap_or(etag).trim_matches('"');
    (etag.len() == 64 && etag.bytes().all(|b| b.is_ascii_hexdigit())).then(|| etag.to_ascii_lowercase())
}

/// What follows `HTTP <status>` in an error: the hub's explanation (or the
/// status text), then what to do about it.
fn http_detail(
    status: u16,
    response: &ureq::Response,
    file: &str,
    has_token: bool,
    url: &str,
    current: &str,
) -> String {
    let mut detail = String::new();
    // The hub explains refusals in `X-Error-Message` ("Entry not found", "Access to model … is restricted").
    if let Some(message) = response.header("x-error-message").filter(|m| !m.is_empty()) {
        detail.push_str(&format!(": {message}"));
    } else if !response.status_text().is_empty() {
        detail.push_str(&format!(" {}", response.status_text()));
    }
    if current != url {
        detail.push_str(&format!(" (after a redirect to {})", origin(current)));
    }
    let hint = match status {
        // The hub also answers 401 for repositories that do not exist, so as not to reveal private ones.
        401 | 403 if has_token => {
            "; HF_TOKEN is set but was refused: check that it can read this repository and that you accepted the model's terms"
        }
        401 | 403 => {
            "; the repository may not exist, or it is gated or private: accept its terms on the hub and set HF_TOKEN"
        }
        404 if file == SPM => "; the repository has neither tokenizer.json, vocab.txt nor spm.model",
        404 if file == WEIGHTS => {
            "; grid loads safetensors weights only (a repository with only pytorch_model.bin may have a converted revision, e.g. @refs/pr/N)"
        }
        429 => "; rate limited: wait, or set HF_TOKEN",
        500..=599 => "; server error: try again later",
        _ => "",
    };
    detail.push_str(hint);
    detail
}

/// A transport error without the URL, which [`HubError::Network`] prints itself.
fn transport_message(t: &ureq::Transport) -> String {
    let mut message = t.kind().to_string();
    if let Some(m) = t.message() {
        message.push_str(&format!(": {m}"));
    }
    if let Some(source) = std::error::Error::source(t) {
        message.push_str(&format!(": {source}"));
    }
    message
}

/// `scheme://authority` of an absolute URL.
fn origin(url: &str) -> &str {
    let start = url.find("://").map_or(0, |i| i + 3);
    let end = url[start..].find(['/', '?', '#']).map_or(url.len(), |i| start + i);
    &url[..end]
}

/// Resolves a `Location` header against the URL that sent it (RFC 3986, the
/// forms servers actually send: absolute, scheme-relative, absolute-path, relative).
fn join_location(base: &str, location: &str) -> String {
    if location.starts_with("http://") || location.starts_with("https://") {
        location.to_string()
    } else if location.starts_with("//") {
        let scheme = base.split_once("://").map_or("https", |(scheme, _)| scheme);
        format!("{scheme}:{location}")
    } else if location.starts_with('/') {
        format!("{}{location}", origin(base))
    } else {
        let path = base.split(['?', '#']).next().unwrap_or(base);
        let dir_end = path.rfind('/').filter(|&i| i >= origin(base).len()).map_or(path.len(), |i| i + 1);
        let dir = &path[..dir_end];
        if dir.ends_with('/') { format!("{dir}{location}") } else { format!("{dir}/{location}") }
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::collections::HashMap;
    use std::io::{BufRead, BufReader};
    use std::net::{TcpListener, TcpStream};
    use std::sync::{Arc, Mutex};

    use super::*;

    /// One canned answer of the test server.
    #[derive(Debug, Clone)]
    struct Reply {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
        /// Sends only this many body bytes (after the full Content-Length), then hangs up.
        cut_after: Option<usize>,
    }

    impl Reply {
        fn ok(body: &[u8]) -> Reply {
            Reply { status: 200, headers: vec![], body: body.to_vec(), cut_after: None }
        }

        fn status(status: u16) -> Reply {
            Reply { status, headers: vec![], body: vec![], cut_after: None }
        }

        fn redirect(location: &str) -> Reply {
            Reply::status(302).header("Location", location)
        }

        fn header(mut self, name: &str, value: &str) -> Reply {
            self.headers.push((name.to_string(), value.to_string()));
            self
        }
    }

    /// What the server saw of one request.
    #[derive(Debug, Clone)]
    struct Seen {
        path: String,
        authorization: Option<String>,
    }

    /// A minimal HTTP/1.1 server on 127.0.0.1, routing by path (unknown paths get
    /// 404) and recording every request.
    struct Server {
        base: String,
        seen: Arc<Mutex<Vec<Seen>>>,
    }

    impl Server {
        fn start(routes: Vec<(String, Reply)>) -> Server {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            let base = format!("http://{}", listener.local_addr().unwrap());
            let routes: HashMap<String, Reply> = routes.into_iter().collect();
            let seen = Arc::new(Mutex::new(Vec::new()));
            let log = Arc::clone(&seen);
            // Lives until the test binary exits. One connection at a time is
            // enough: every reply closes its connection.
            std::thread::spawn(move || {
                for stream in listener.incoming().flatten() {
                    serve(stream, &routes, &log);
                }
            });
            Server { base, seen }
        }

        fn paths(&self) -> Vec<String> {
            self.seen.lock().unwrap().iter().map(|s| s.path.clone()).collect()
        }

        fn client(&self) -> HubClient {
            HubClient::new(&self.base, None)
        }
    }

    fn serve(stream: TcpStream, routes: &HashMap<String, Reply>, log: &Mutex<Vec<Seen>>) {
        let mut reader = BufReader::new(&stream);
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_string();
        let mut authorization = None;
        loop {
            line.clear();
            if matches!(reader.read_line(&mut line), Ok(0) | Err(_)) || line.trim_end().is_empty() {
                break;
            }
            if let Some((name, value)) = line.trim_end().split_once(':')
                && name.eq_ignore_ascii_case("authorization")
            {
                authorization = Some(value.trim().to_string());
            }
        }
        log.lock().unwrap().push(Seen { path: path.clone(), authorization });
        let reply = routes.get(&path).cloned().unwrap_or_else(|| Reply::status(404));
        let mut head = format!(
            "HTTP/1.1 {} Canned\r\nContent-Length: {}\r\nConnection: close\r\n",
            reply.status,
            reply.body.len()
        );
        for (name, value) in &reply.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        let body = &reply.body[..reply.cut_after.unwrap_or(reply.body.len())];
        let mut stream = &stream;
        let _ = stream.write_all(head.as_bytes()).and_then(|()| stream.write_all(body));
    }

    const CONFIG_JSON: &[u8] = br#"{"hidden_size": 4}"#;
    const TOKENIZER_JSON: &[u8] = br#"{"model": {"type": "WordPiece"}}"#;
    const VOCAB_TXT: &[u8] = b"[PAD]\n[UNK]\nhello\n";
    /// The git blob sha1 the hub sends as `ETag` for small files: must be ignored.
    const GIT_ETAG: &str = "\"0123456789abcdef0123456789abcdef01234567\"";

    /// Bigger than one read buffer, so the download takes several reads.
    fn weights() -> Vec<u8> {
        (0..150_000u32).map(|i| (i % 251) as u8).collect()
    }

    fn sha(bytes: &[u8]) -> String {
        hex::encode(Sha256::digest(bytes))
    }

    /// Routes for `org/name` at `main`.
    fn repo(files: Vec<(&str, Reply)>) -> Vec<(String, Reply)> {
        files.into_iter().map(|(file, reply)| (format!("/org/name/resolve/main/{file}"), reply)).collect()
    }

    /// `org/name` as the hub serves it: small files directly, the weights as a
    /// redirect to `cdn` carrying their sha256 (`etag_sha`) in `X-Linked-Etag`.
    fn hub_repo(cdn: &Server, etag_sha: &str) -> Server {
        Server::start(repo(vec![
            (CONFIG, Reply::ok(CONFIG_JSON).header("ETag", GIT_ETAG).header("X-Repo-Commit", "c0ffee")),
            (TOKENIZER, Reply::ok(TOKENIZER_JSON).header("ETag", GIT_ETAG)),
            (
                WEIGHTS,
                Reply::redirect(&format!("{}/blobs/weights?signature=x", cdn.base))
                    .header("X-Linked-Etag", &format!("\"{etag_sha}\""))
                    .header("ETag", GIT_ETAG),
            ),
        ]))
    }

    fn cdn() -> Server {
        Server::start(vec![("/blobs/weights?signature=x".to_string(), Reply::ok(&weights()))])
    }

    fn hub_source() -> CheckpointSource {
        "hf://org/name".parse().unwrap()
    }

    fn quiet(_: Progress<'_>) {}

    fn leftovers(dir: &Path) -> Vec<String> {
        fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|n| n.contains('~'))
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn parses_and_displays_sources() {
        let hub = |repo: &str, revision: &str| CheckpointSource::Hub { repo: repo.into(), revision: revision.into() };
        let cases = [
            ("hf://sentence-transformers/all-MiniLM-L6-v2", hub("sentence-transformers/all-MiniLM-L6-v2", "main")),
            ("hf://bert-base-uncased", hub("bert-base-uncased", "main")),
            ("hf://org/name@v1.0", hub("org/name", "v1.0")),
            ("hf://org/name@refs/pr/1", hub("org/name", "refs/pr/1")),
            ("checkpoints/bert", CheckpointSource::Local(PathBuf::from("checkpoints/bert"))),
        ];
        for (text, expected) in cases {
            let parsed: CheckpointSource = text.parse().unwrap();
            assert_eq!(parsed, expected, "{text}");
            assert_eq!(parsed.to_string(), text, "display round-trips");
        }
        assert_eq!("hf://org/name@main".parse::<CheckpointSource>().unwrap().to_string(), "hf://org/name");
        let root = Path::new("/cache");
        assert_eq!(hub("org/name", "refs/pr/1").dir(root), Path::new("/cache/hub/org--name/refs%2Fpr%2F1"));
        assert_eq!(hub("bert-base-uncased", "main").dir(root), Path::new("/cache/hub/bert-base-uncased/main"));
    }

    #[test]
    fn rejects_malformed_ids() {
        let cases = [
            ("", "empty"),
            ("hf://", "empty"),
            ("hf://a/b/c", "3 path parts"),
            ("hf://org/", "empty path part"),
            ("hf://org/my model", "' ' is not allowed"),
            ("hf://../name", "'..'"),
            ("hf://org/a..b", "'..'"),
            ("hf://org/a--b", "'--'"),
            ("hf://org/-name", "start or end"),
            ("hf://org/name@", "revision after '@' is empty"),
            ("hf://org/name@a b", "' ' is not allowed in a revision"),
            ("hf://org/name@../x", "not a valid revision"),
            ("hf:/org/name", "hf://org/name"),
        ];
        for (text, needle) in cases {
            let err = text.parse::<CheckpointSource>().unwrap_err().to_string();
            assert!(err.contains(&format!("`{text}`")) && err.contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn downloads_publishes_and_records_checksums() {
        let cdn = cdn();
        let hub = hub_repo(&cdn, &sha(&weights()));
        let cache = tempfile::tempdir().unwrap();
        let client = HubClient::new(&hub.base, Some("secret".into()));
        let (started, advanced, finished) = (Cell::new(0), Cell::new(0u64), Cell::new(0u64));
        let progress = |event: Progress<'_>| match event {
            Progress::Start { .. } => started.set(started.get() + 1),
            Progress::Advance(n) => advanced.set(advanced.get() + n),
            Progress::Finish { bytes, .. } => finished.set(finished.get() + bytes),
        };

        let dir = client.resolve(&hub_source(), cache.path(), &progress).unwrap();

        assert_eq!(dir, cache.path().join("hub/org--name/main"));
        assert_eq!(fs::read(dir.join(CONFIG)).unwrap(), CONFIG_JSON);
        assert_eq!(fs::read(dir.join(TOKENIZER)).unwrap(), TOKENIZER_JSON);
        assert_eq!(fs::read(dir.join(WEIGHTS)).unwrap(), weights());
        assert!(!dir.join(TOKENIZER_CONFIG).exists(), "optional file answered 404");

        let checksums = Checksums::read(&dir).unwrap();
        assert_eq!((checksums.repo.as_str(), checksums.revision.as_str()), ("org/name", "main"));
        assert_eq!(checksums.commit.as_deref(), Some("c0ffee"));
        assert_eq!(checksums.files.keys().collect::<Vec<_>>(), [CONFIG, WEIGHTS, TOKENIZER]);
        let record = &checksums.files[WEIGHTS];
        assert_eq!(record.sha256, sha(&weights()));
        assert_eq!(record.size, weights().len() as u64);
        assert_eq!(record.url, format!("{}/org/name/resolve/main/model.safetensors", hub.base));
        assert_eq!(checksums.files[CONFIG].sha256, sha(CONFIG_JSON));

        let total = (CONFIG_JSON.len() + TOKENIZER_JSON.len() + weights().len()) as u64;
        assert_eq!((started.get(), advanced.get(), finished.get()), (3, total, total));
        assert!(leftovers(dir.parent().unwrap()).is_empty(), "temporary folder removed");
        assert!(cache.path().join("hub/org--name/main.lock").exists());

        // The token goes to the hub, never to the CDN it redirects to.
        let hub_seen = hub.seen.lock().unwrap().clone();
        assert_eq!(hub_seen.len(), 4);
        assert!(hub_seen.iter().all(|s| s.authorization.as_deref() == Some("Bearer secret")));
        let cdn_seen = cdn.seen.lock().unwrap().clone();
        assert_eq!(cdn_seen.len(), 1);
        assert_eq!(cdn_seen[0].authorization, None);
    }

    #[test]
    fn second_resolve_makes_no_requests() {
        let cdn = cdn();
        let hub = hub_repo(&cdn, &sha(&weights()));
        let cache = tempfile::tempdir().unwrap();
        let first = hub.client().resolve(&hub_source(), cache.path(), &quiet).unwrap();
        let requests = (hub.paths().len(), cdn.paths().len());
        let second = hub.client().resolve(&hub_source(), cache.path(), &quiet).unwrap();
        assert_eq!(first, second);
        assert_eq!((hub.paths().len(), cdn.paths().len()), requests);
    }

    #[test]
    fn concurrent_resolves_download_once() {
        let cdn = cdn();
        let hub = hub_repo(&cdn, &sha(&weights()));
        let cache = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = std::thread::scope(|scope| {
            let workers: Vec<_> =
                (0..3).map(|_| scope.spawn(|| hub.client().resolve(&hub_source(), cache.path(), &quiet))).collect();
            workers.into_iter().map(|w| w.join().unwrap().unwrap()).collect()
        });
        assert!(dirs.iter().all(|d| d == &dirs[0]));
        assert_eq!(cdn.paths().len(), 1, "the weights were downloaded once");
        assert_eq!(hub.paths().len(), 4, "each file was asked for once: {:?}", hub.paths());
    }

    #[test]
    fn checksum_mismatch_publishes_nothing() {
        let cdn = cdn();
        let wrong = sha(b"something else");
        let hub = hub_repo(&cdn, &wrong);
        let cache = tempfile::tempdir().unwrap();
        let err = hub.client().resolve(&hub_source(), cache.path(), &quiet).unwrap_err().to_string();
        let expected = format!(
            "{}/org/name/resolve/main/model.safetensors: checksum mismatch (expected {wrong}, got {})",
            hub.base,
            sha(&weights())
        );
        assert_eq!(err, expected);
        let repo_dir = cache.path().join("hub/org--name");
        assert!(!repo_dir.join("main").exists());
        assert!(leftovers(&repo_dir).is_empty(), "temporary folder removed");
    }

    #[test]
    fn interrupted_download_publishes_nothing() {
        let mut cut = Reply::ok(&weights());
        cut.cut_after = Some(70_000);
        let hub = Server::start(repo(vec![
            (CONFIG, Reply::ok(CONFIG_JSON)),
            (TOKENIZER, Reply::ok(TOKENIZER_JSON)),
            (WEIGHTS, cut),
        ]));
        let cache = tempfile::tempdir().unwrap();
        let err = hub.client().resolve(&hub_source(), cache.path(), &quiet).unwrap_err().to_string();
        assert!(err.contains("model.safetensors: download interrupted"), "{err}");
        assert!(!cache.path().join("hub/org--name/main").exists());
    }

    #[test]
    fn falls_back_to_vocab_txt() {
        let hub = Server::start(repo(vec![
            (CONFIG, Reply::ok(CONFIG_JSON)),
            (VOCAB, Reply::ok(VOCAB_TXT)),
            (TOKENIZER_CONFIG, Reply::ok(b"{}")),
            (WEIGHTS, Reply::ok(&weights()).header("X-Linked-Etag", &format!("\"{}\"", sha(&weights())))),
        ]));
        let cache = tempfile::tempdir().unwrap();
        let dir = hub.client().resolve(&hub_source(), cache.path(), &quiet).unwrap();
        assert_eq!(fs::read(dir.join(VOCAB)).unwrap(), VOCAB_TXT);
        assert!(!dir.join(TOKENIZER).exists());
        assert_eq!(
            Checksums::read(&dir).unwrap().files.keys().collect::<Vec<_>>(),
            [CONFIG, WEIGHTS, TOKENIZER_CONFIG, VOCAB]
        );
        assert!(hub.paths().iter().any(|p| p.ends_with(TOKENIZER)), "tokenizer.json was tried first");
    }

    /// DeBERTa-v3's repositories: `spm.model`, no tokenizer.json or vocab.txt.
    #[test]
    fn falls_back_to_spm_model() {
        let spm = b"a sentencepiece model";
        let hub = Server::start(repo(vec![
            (CONFIG, Reply::ok(CONFIG_JSON)),
            (SPM, Reply::ok(spm)),
            (WEIGHTS, Reply::ok(&weights()).header("X-Linked-Etag", &format!("\"{}\"", sha(&weights())))),
        ]));
        let cache = tempfile::tempdir().unwrap();
        let dir = hub.client().resolve(&hub_source(), cache.path(), &quiet).unwrap();
        assert_eq!(fs::read(dir.join(SPM)).unwrap(), spm);
        assert_eq!(Checksums::read(&dir).unwrap().files.keys().collect::<Vec<_>>(), [CONFIG, WEIGHTS, SPM]);
    }

    #[test]
    fn missing_tokenizer_fails_before_the_weights() {
        let hub = Server::start(repo(vec![(CONFIG, Reply::ok(CONFIG_JSON)), (WEIGHTS, Reply::ok(&weights()))]));
        let cache = tempfile::tempdir().unwrap();
        let err = hub.client().resolve(&hub_source(), cache.path(), &quiet).unwrap_err().to_string();
        assert!(
            err.contains("/spm.model: HTTP 404") && err.contains("neither tokenizer.json, vocab.txt nor spm.model"),
            "{err}"
        );
        assert!(!hub.paths().iter().any(|p| p.ends_with(WEIGHTS)));
    }

    #[test]
    fn missing_config_names_the_url() {
        let hub = Server::start(vec![]);
        let cache = tempfile::tempdir().unwrap();
        let err = hub.client().resolve(&hub_source(), cache.path(), &quiet).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}/org/name/resolve/main/config.json: HTTP 404", hub.base)), "{err}");
        assert!(!cache.path().join("hub/org--name/main").exists());
    }

    #[test]
    fn refused_access_mentions_hf_token() {
        let hub = Server::start(repo(vec![(
            CONFIG,
            Reply::status(401).header("X-Error-Message", "Access to model org/name is restricted."),
        )]));
        let cache = tempfile::tempdir().unwrap();
        let err = hub.client().resolve(&hub_source(), cache.path(), &quiet).unwrap_err().to_string();
        assert!(
            err.contains("config.json: HTTP 401: Access to model org/name is restricted.")
                && err.contains("set HF_TOKEN"),
            "{err}"
        );
        let with_token = HubClient::new(&hub.base, Some("t".into()));
        let err = with_token.resolve(&hub_source(), cache.path(), &quiet).unwrap_err().to_string();
        assert!(err.contains("HF_TOKEN is set but was refused"), "{err}");
    }

    #[test]
    fn unreachable_endpoint_is_an_error() {
        // Bound then dropped: nothing listens there any more.
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let client = HubClient::new(&format!("http://127.0.0.1:{port}"), None);
        let cache = tempfile::tempdir().unwrap();
        let err = client.resolve(&hub_source(), cache.path(), &quiet).unwrap_err().to_string();
        assert!(err.starts_with(&format!("http://127.0.0.1:{port}/org/name/resolve/main/config.json: ")), "{err}");
    }

    #[test]
    fn truncated_or_deleted_file_after_publish_is_reported() {
        let cdn = cdn();
        let hub = hub_repo(&cdn, &sha(&weights()));
        let cache = tempfile::tempdir().unwrap();
        let dir = hub.client().resolve(&hub_source(), cache.path(), &quiet).unwrap();

        File::options().write(true).open(dir.join(WEIGHTS)).unwrap().set_len(10).unwrap();
        let err = hub.client().resolve(&hub_source(), cache.path(), &quiet).unwrap_err().to_string();
        assert!(err.contains("model.safetensors: 10 bytes, expected 150000"), "{err}");
        assert!(err.contains(&format!("delete {}", dir.display())), "{err}");

        fs::write(dir.join(WEIGHTS), weights()).unwrap();
        fs::remove_file(dir.join(TOKENIZER)).unwrap();
        let err = hub.client().resolve(&hub_source(), cache.path(), &quiet).unwrap_err().to_string();
        assert!(err.contains("tokenizer.json: missing; delete"), "{err}");
    }

    #[test]
    fn local_directory_needs_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let source = CheckpointSource::Local(dir.path().to_path_buf());
        let client = HubClient::new("http://127.0.0.1:9", None);
        fs::write(dir.path().join(CONFIG), CONFIG_JSON).unwrap();
        fs::write(dir.path().join(TOKENIZER), TOKENIZER_JSON).unwrap();
        let err = client.resolve(&source, Path::new("unused"), &quiet).unwrap_err().to_string();
        assert!(err.starts_with(&format!("{}: model.safetensors is missing", dir.path().display())), "{err}");

        fs::write(dir.path().join(WEIGHTS), weights()).unwrap();
        fs::remove_file(dir.path().join(TOKENIZER)).unwrap();
        let err = client.resolve(&source, Path::new("unused"), &quiet).unwrap_err().to_string();
        assert!(err.contains("tokenizer.json (or vocab.txt, or spm.model) is missing"), "{err}");

        fs::write(dir.path().join(VOCAB), VOCAB_TXT).unwrap();
        assert_eq!(client.resolve(&source, Path::new("unused"), &quiet).unwrap(), dir.path());

        let gone = CheckpointSource::Local(dir.path().join("nope"));
        let err = client.resolve(&gone, Path::new("unused"), &quiet).unwrap_err().to_string();
        assert!(err.contains("nope: no such checkpoint directory"), "{err}");
    }

    const DATA: &[u8] = b"text,label\nthe film was great,1\nan awful plot,0\n";

    fn data_file() -> HubFile {
        "hf://datasets/org/data@c0ffee/sst2/train.csv".parse().unwrap()
    }

    fn data_route(reply: Reply) -> Vec<(String, Reply)> {
        vec![("/datasets/org/data/resolve/c0ffee/sst2/train.csv".to_string(), reply)]
    }

    #[test]
    fn dataset_addresses_parse_and_refuse_what_is_not_a_file() {
        let file = data_file();
        assert_eq!(
            (file.repo.as_str(), file.revision.as_str(), file.path.as_str()),
            ("datasets/org/data", "c0ffee", "sst2/train.csv")
        );
        assert_eq!(file.to_string(), "hf://datasets/org/data@c0ffee/sst2/train.csv");
        let main: HubFile = "hf://datasets/org/data/train.parquet".parse().unwrap();
        assert_eq!((main.revision.as_str(), main.path.as_str()), ("main", "train.parquet"));
        for bad in [
            "hf://org/data/train.csv",
            "hf://datasets/org/data",
            "hf://datasets/org/data@c0ffee/../x.csv",
            "hf://datasets/org/da ta/x.csv",
        ] {
            let err = bad.parse::<HubFile>().unwrap_err().to_string();
            assert!(err.starts_with(&format!("`{bad}`: not a checkpoint source")) || err.contains(bad), "{bad}: {err}");
        }
    }

    #[test]
    fn a_dataset_file_downloads_once_verified() {
        let hub = Server::start(data_route(Reply::ok(DATA).header("X-Linked-Etag", &format!("\"{}\"", sha(DATA)))));
        let cache = tempfile::tempdir().unwrap();
        let path = hub.client().dataset_file(&data_file(), None, cache.path(), &quiet).unwrap();
        assert_eq!(fs::read(&path).unwrap(), DATA);
        assert!(path.starts_with(cache.path().join("hub/datasets--org--data/c0ffee")), "{}", path.display());
        let checksums = Checksums::read(path.parent().unwrap().parent().unwrap()).unwrap();
        assert_eq!(checksums.files["sst2/train.csv"].sha256, sha(DATA));
        // Served from the cache the second time, after checking it.
        assert_eq!(hub.client().dataset_file(&data_file(), None, cache.path(), &quiet).unwrap(), path);
        assert_eq!(hub.paths().len(), 1);
        // A file changed on disk is caught, naming it.
        fs::write(&path, b"text,label\n").unwrap();
        let err = hub.client().dataset_file(&data_file(), None, cache.path(), &quiet).unwrap_err().to_string();
        assert!(err.contains("train.csv") && err.contains("truncated or modified"), "{err}");
    }

    #[test]
    fn a_pinned_dataset_file_is_published_and_served_only_with_its_bytes() {
        let pin = Pin::new(&sha(DATA).to_uppercase(), Some(DATA.len() as u64)).unwrap();
        let other = b"text,label\nsomething else,1\n";
        // Served other bytes: refused with both hashes, nothing published.
        let hub = Server::start(data_route(Reply::ok(other)));
        let cache = tempfile::tempdir().unwrap();
        let err = hub.client().dataset_file(&data_file(), Some(&pin), cache.path(), &quiet).unwrap_err().to_string();
        assert!(
            err.contains("hf://datasets/org/data@c0ffee/sst2/train.csv")
                && err.contains(&format!("pinned sha256 {} ({} bytes)", sha(DATA), DATA.len()))
                && err.contains(&format!("found sha256 {} ({} bytes)", sha(other), other.len()))
                && err.contains("nothing was kept"),
            "{err}"
        );
        assert!(!data_file().dir(cache.path()).exists());
        // A copy cached without the pin is checked against it once pinned.
        let path = hub.client().dataset_file(&data_file(), None, cache.path(), &quiet).unwrap();
        assert_eq!(fs::read(&path).unwrap(), other);
        let err = hub.client().dataset_file(&data_file(), Some(&pin), cache.path(), &quiet).unwrap_err().to_string();
        assert!(err.contains("the cached copy in") && err.contains("delete"), "{err}");
        // The pinned bytes download and serve.
        let hub = Server::start(data_route(Reply::ok(DATA)));
        let cache = tempfile::tempdir().unwrap();
        let path = hub.client().dataset_file(&data_file(), Some(&pin), cache.path(), &quiet).unwrap();
        assert_eq!(fs::read(&path).unwrap(), DATA);
        assert_eq!(hub.client().dataset_file(&data_file(), Some(&pin), cache.path(), &quiet).unwrap(), path);
        assert_eq!(hub.paths().len(), 1);
        for bad in ["abc", &"g".repeat(64)] {
            assert!(Pin::new(bad, None).unwrap_err().contains("is not a sha256"), "{bad}");
        }
    }

    #[test]
    fn a_wrong_checksum_or_a_cut_download_names_the_file_and_publishes_nothing() {
        let wrong = "ab".repeat(32);
        let mut cut = Reply::ok(DATA).header("X-Linked-Etag", &format!("\"{}\"", sha(DATA)));
        cut.cut_after = Some(10);
        for (reply, expected) in [
            (Reply::ok(DATA).header("X-Linked-Etag", &format!("\"{wrong}\"")), "checksum mismatch"),
            (cut, "download interrupted"),
        ] {
            let hub = Server::start(data_route(reply));
            let cache = tempfile::tempdir().unwrap();
            let err = hub.client().dataset_file(&data_file(), None, cache.path(), &quiet).unwrap_err().to_string();
            assert!(
                err.contains("/datasets/org/data/resolve/c0ffee/sst2/train.csv") && err.contains(expected),
                "{err}"
            );
            assert!(!data_file().dir(cache.path()).exists());
            let left = leftovers(&cache.path().join("hub/datasets--org--data/c0ffee"));
            // The lock file stays, as a checkpoint's does; no partial folder.
            assert!(left.iter().all(|n| n.ends_with(".lock")), "temporary folder removed: {left:?}");
        }
    }

    #[test]
    fn weights_in_pytorch_model_bin_only_name_the_command_that_converts_them() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("it's");
        fs::create_dir_all(&dir).unwrap();
        for file in [CONFIG, PYTORCH_WEIGHTS, TOKENIZER] {
            fs::write(dir.join(file), b"{}").unwrap();
        }
        let source = CheckpointSource::Local(dir.clone());
        let err = resolve(&source, tmp.path(), &|_| {}).unwrap_err().to_string();
        assert!(err.contains("pytorch_model.bin only"), "{err}");
        let command = conversion_command(&dir);
        assert!(err.ends_with(&command), "{err}");
        // The paths are quoted for Python, an apostrophe in them escaped.
        assert!(
            command.contains(&format!(
                "torch.load('{}/pytorch_model.bin'",
                dir.parent().unwrap().join("it\\'s").display()
            )),
            "{command}"
        );
        // With model.safetensors beside it, the .bin is not looked at.
        fs::write(dir.join(WEIGHTS), b"x").unwrap();
        assert!(resolve(&source, tmp.path(), &|_| {}).is_ok());
    }

    #[test]
    fn reads_lfs_etags_only() {
        let hex = "ab".repeat(32);
        assert_eq!(lfs_sha256(&format!("\"{hex}\"")), Some(hex.clone()));
        assert_eq!(lfs_sha256(&format!("W/\"{}\"", hex.to_uppercase())), Some(hex));
        assert_eq!(lfs_sha256(GIT_ETAG), None, "a git sha1 is not a sha256");
        assert_eq!(lfs_sha256("\"\""), None);
    }

    #[test]
    fn joins_redirect_locations() {
        let base = "https://huggingface.co/org/name/resolve/main/model.safetensors?x=1";
        assert_eq!(join_location(base, "https://cdn.example/a?s=1"), "https://cdn.example/a?s=1");
        assert_eq!(join_location(base, "//cdn.example/a"), "https://cdn.example/a");
        assert_eq!(join_location(base, "/api/new/name"), "https://huggingface.co/api/new/name");
        assert_eq!(join_location(base, "other.bin"), "https://huggingface.co/org/name/resolve/main/other.bin");
        assert_eq!(origin("http://127.0.0.1:80/x?y"), "http://127.0.0.1:80");
    }
}
