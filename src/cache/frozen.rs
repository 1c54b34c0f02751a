//! The grid texts runs planned from: `cache/grids/<sha256>.toml`.
//!
//! A run's `grid step` workers (child processes, Slurm tasks that may start
//! hours later) plan the grid again to find their step. Read from the grid
//! file, an edit made meanwhile (a method added, a key deleted) gave them
//! other keys, or a grid their `--set` no longer applies to, and their steps
//! failed. So a run freezes the text it planned (the file with its `extends`
//! merged and its `--set` applied) here, under its own hash, and its workers
//! read that. Files are small, immutable and shared by every run of the same
//! text; `grid gc` leaves them.

use std::fs;
use std::path::PathBuf;

use super::{Cache, CacheError, io_err};

impl Cache {
    /// Writes `text` as a frozen grid (once per distinct text) and returns its path.
    pub fn freeze_grid(&self, text: &str) -> Result<PathBuf, CacheError> {
        let dir = self.root.join("grids");
        let path = dir.join(format!("{}.toml", super::files::sha256_hex(text.as_bytes())));
        if fs::read_to_string(&path).is_ok_and(|written| written == text) {
            return Ok(path);
        }
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
        let staged = path.with_extension(format!("toml.{}", std::process::id()));
        fs::write(&staged, text).map_err(io_err(&staged))?;
        fs::rename(&staged, &path).map_err(io_err(&path))?;
        Ok(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_file_per_text_holding_that_text() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::open(dir.path()).unwrap();
        let a = cache.freeze_grid("name = \"a\"\n").unwrap();
        assert_eq!(cache.freeze_grid("name = \"a\"\n").unwrap(), a);
        let b = cache.freeze_grid("name = \"b\"\n").unwrap();
        assert_ne!(a, b);
        assert_eq!(fs::read_to_string(&a).unwrap(), "name = \"a\"\n");
        assert!(a.starts_with(dir.path().join("grids")));
    }
}
