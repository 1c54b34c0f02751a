//! Content hashes of input files (datasets, GloVe vectors), memoised by
//! (path, size, modification time) in `cache/file-hashes.json` so that planning
//! does not re-read gigabytes. The memo only saves time: keys use the hash.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Cache, CacheError};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Seen {
    bytes: u64,
    modified_ns: u128,
    sha256: String,
}

/// sha256 of bytes, as 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// sha256 of a file's content, read in chunks (checkpoints run to gigabytes).
pub(super) fn sha256_of(path: &Path) -> std::io::Result<String> {
    let mut file = fs::File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(hex::encode(hasher.finalize()))
}

impl Cache {
    /// sha256 of a file's content.
    pub fn file_hash(&self, path: &Path) -> Result<String, CacheError> {
        let io = |source| CacheError::Io { path: path.to_path_buf(), source };
        let meta = fs::metadata(path).map_err(io)?;
        let modified_ns =
            meta.modified().ok().and_then(|m| m.duration_since(UNIX_EPOCH).ok()).map(|d| d.as_nanos()).unwrap_or(0);
        let id = fs::canonicalize(path).map_err(io)?.to_string_lossy().into_owned();
        let memo_path = self.root().join("file-hashes.json");
        let mut memo: BTreeMap<String, Seen> =
            fs::read(&memo_path).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
        if let Some(seen) = memo.get(&id).filter(|s| s.bytes == meta.len() && s.modified_ns == modified_ns) {
            return Ok(seen.sha256.clone());
        }
        let sha256 = sha256_of(path).map_err(io)?;
        memo.insert(id, Seen { bytes: meta.len(), modified_ns, sha256: sha256.clone() });
        // A lost race between two processes only costs a re-hash later.
        let tmp = memo_path.with_extension(format!("json.{}", std::process::id()));
        if let Ok(json) = serde_json::to_vec_pretty(&memo)
            && fs::write(&tmp, json).is_ok()
        {
            let _ = fs::rename(&tmp, &memo_path);
        }
        Ok(sha256)
    }
}
