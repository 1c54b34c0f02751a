//! Paths a grid file names, as the pipeline reads them.

use std::path::{Path, PathBuf};

/// `relative` against `base` (the data root or the grid file's folder),
/// unless it is absolute.
pub(crate) fn resolve(base: &Path, relative: &Path) -> PathBuf {
    if relative.is_absolute() { relative.to_path_buf() } else { base.join(relative) }
}
