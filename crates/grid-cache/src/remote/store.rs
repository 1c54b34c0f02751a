//! The object store behind a remote cache, as the few blocking calls the
//! remote protocol needs. `object_store` is async; `grid` computes on plain
//! threads, so each call is driven to completion on a small tokio runtime
//! this wrapper owns.

use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::Arc;

use futures_util::StreamExt;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, WriteMultipart};
use sha2::{Digest, Sha256};

/// Files up to this size go up in one request; larger ones in parts of it.
const PART_BYTES: usize = 16 << 20;

/// Requests in flight when many small objects are read at once.
const GETS_IN_FLIGHT: usize = 32;

/// What went wrong talking to the store, or with what it returned.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{0}")]
    Store(#[from] object_store::Error),
    #[error("{path}: {source}")]
    Local { path: String, source: std::io::Error },
    /// The bytes that arrived are not the ones published.
    #[error("{0}")]
    Mismatch(String),
}

/// Whether a create-only write took place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    Yes,
    /// Another writer created the object first; it was left as it was.
    AlreadyExists,
}

pub struct Store {
    inner: Arc<dyn ObjectStore>,
    /// Every path is under this one (the URL's path).
    prefix: ObjectPath,
    runtime: tokio::runtime::Runtime,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Store({}, {})", self.inner, self.prefix)
    }
}

impl Store {
    pub fn new(inner: Arc<dyn ObjectStore>, prefix: ObjectPath) -> std::io::Result<Store> {
        // Two threads: one transfer's requests overlap another's hashing.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("grid-remote")
            .enable_all()
            .build()?;
        Ok(Store { inner, prefix, runtime })
    }

    /// `relative` under the prefix.
    fn path(&self, relative: &str) -> ObjectPath {
        relative.split('/').filter(|p| !p.is_empty()).fold(self.prefix.clone(), |path, part| path.join(part))
    }

    /// The object's bytes; `None` when there is none.
    pub fn get(&self, relative: &str) -> Result<Option<Vec<u8>>, StoreError> {
        let path = self.path(relative);
        self.runtime.block_on(async {
            match self.inner.get(&path).await {
                Ok(found) => Ok(Some(found.bytes().await?.to_vec())),
                Err(object_store::Error::NotFound { .. }) => Ok(None),
                Err(e) => Err(e.into()),
            }
        })
    }

    /// Several objects' bytes, in the order asked, with up to
    /// [`GETS_IN_FLIGHT`] requests at once: a grid's records are many small
    /// objects, and one at a time each costs a round trip.
    pub fn get_many(&self, relatives: &[String]) -> Vec<Result<Option<Vec<u8>>, StoreError>> {
        let paths: Vec<ObjectPath> = relatives.iter().map(|r| self.path(r)).collect();
        self.runtime.block_on(async {
            futures_util::stream::iter(paths.iter().map(|path| async move {
                match self.inner.get(path).await {
                    Ok(found) => Ok(Some(found.bytes().await?.to_vec())),
                    Err(object_store::Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(e.into()),
                }
            }))
            .buffered(GETS_IN_FLIGHT)
            .collect()
            .await
        })
    }

    /// Streams the object into `dest`, hashing as it arrives: `Err` unless
    /// exactly `bytes` bytes with this sha256 came.
    pub fn download_verified(&self, relative: &str, dest: &Path, bytes: u64, sha256: &str) -> Result<(), StoreError> {
        let path = self.path(relative);
        let local = |source| StoreError::Local { path: dest.display().to_string(), source };
        let mut file = File::create(dest).map_err(local)?;
        let (got, sum) = self.runtime.block_on(async {
            let mut stream = self.inner.get(&path).await?.into_stream();
            let mut hasher = Sha256::new();
            let mut got = 0u64;
            while let Some(chunk) = stream.next().await {
                let chunk = chunk?;
                got += chunk.len() as u64;
                if got > bytes {
                    return Err(StoreError::Mismatch(format!("{path}: more than the {bytes} bytes published")));
                }
                hasher.update(&chunk);
                file.write_all(&chunk).map_err(local)?;
            }
            Ok::<_, StoreError>((got, hex::encode(hasher.finalize())))
        })?;
        if got != bytes {
            return Err(StoreError::Mismatch(format!("{path}: {got} bytes, published with {bytes}")));
        }
        if sum != sha256 {
            return Err(StoreError::Mismatch(format!("{path}: content differs from the published checksum")));
        }
        Ok(())
    }

    /// Uploads a file (overwriting: callers write to paths no one else does).
    pub fn upload(&self, relative: &str, source: &Path) -> Result<(), StoreError> {
        let path = self.path(relative);
        let local = |e| StoreError::Local { path: source.display().to_string(), source: e };
        let mut file = File::open(source).map_err(local)?;
        let size = file.metadata().map_err(local)?.len();
        self.runtime.block_on(async {
            if size <= PART_BYTES as u64 {
                let mut bytes = Vec::with_capacity(size as usize);
                file.read_to_end(&mut bytes).map_err(local)?;
                self.inner.put(&path, PutPayload::from(bytes)).await?;
                return Ok(());
            }
            let mut upload = WriteMultipart::new_with_chunk_size(self.inner.put_multipart(&path).await?, PART_BYTES);
            let mut buffer = vec![0u8; PART_BYTES];
            loop {
                let n = file.read(&mut buffer).map_err(local)?;
                if n == 0 {
                    break;
                }
                upload.wait_for_capacity(4).await?;
                upload.write(&buffer[..n]);
            }
            upload.finish().await?;
            Ok(())
        })
    }

    /// Writes the object, replacing any there.
    pub fn put(&self, relative: &str, bytes: Vec<u8>) -> Result<(), StoreError> {
        let path = self.path(relative);
        self.runtime.block_on(async { self.inner.put(&path, PutPayload::from(bytes)).await.map(|_| ()) })?;
        Ok(())
    }

    /// Writes the object only if none exists at the path (a conditional put).
    pub fn create(&self, relative: &str, bytes: Vec<u8>) -> Result<Created, StoreError> {
        let path = self.path(relative);
        let options = PutOptions { mode: PutMode::Create, ..Default::default() };
        self.runtime.block_on(async {
            match self.inner.put_opts(&path, PutPayload::from(bytes), options).await {
                Ok(_) => Ok(Created::Yes),
                Err(object_store::Error::AlreadyExists { .. }) => Ok(Created::AlreadyExists),
                Err(e) => Err(e.into()),
            }
        })
    }

    /// Every object under `relative`, as paths relative to the prefix, with their sizes.
    pub fn list(&self, relative: &str) -> Result<Vec<(String, u64)>, StoreError> {
        let path = self.path(relative);
        let prefix = self.prefix.as_ref().to_string();
        self.runtime.block_on(async {
            let mut found = Vec::new();
            let mut stream = self.inner.list(Some(&path));
            while let Some(meta) = stream.next().await {
                let meta = meta?;
                let full = meta.location.as_ref();
                let relative = full.strip_prefix(prefix.as_str()).unwrap_or(full).trim_start_matches('/');
                found.push((relative.to_string(), meta.size));
            }
            Ok(found)
        })
    }

    /// Removes the object; one already gone is not an error.
    pub fn delete(&self, relative: &str) -> Result<(), StoreError> {
        let path = self.path(relative);
        self.runtime.block_on(async {
            match self.inner.delete(&path).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                Err(e) => Err(e.into()),
            }
        })
    }
}
