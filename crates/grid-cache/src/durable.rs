//! Making a publish survive a power cut. A rename is atomic, but without an
//! fsync the kernel may write the renamed folder's entry to disk before the
//! files' bytes: after a crash the step looks published and its payload is
//! empty (the check on read would then find it damaged and compute it again,
//! but the work is lost). So each payload file and the staging folder are
//! synced before the rename, and the folder that receives it after.

use std::fs::File;
use std::io;
use std::path::Path;

/// Flushes a file's bytes and metadata to the device.
pub(crate) fn sync_file(path: &Path) -> io::Result<()> {
    File::open(path)?.sync_all()
}

/// Flushes a folder's entries (names created or renamed in it) to the device.
/// Windows cannot open a folder as a file; its renames are journaled by NTFS.
pub(crate) fn sync_dir(path: &Path) -> io::Result<()> {
    if cfg!(unix) { File::open(path)?.sync_all() } else { Ok(()) }
}
