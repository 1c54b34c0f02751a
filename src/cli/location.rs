//! `--cache s3://bucket/prefix` (also `gs://`, `az://`, `file://`): a cache
//! that lives in an object store. Steps compute from files, so the store is
//! the remote (`--remote`) behind a local working copy kept per URL under
//! the user's cache folder; every command then sees a folder and a remote,
//! child processes and Slurm tasks included.

use std::path::{Path, PathBuf};

use super::args::{Command, CrowdCommand};

/// Rewrites `--cache URL` into a working-copy folder and `--remote URL`.
pub(super) fn resolve(command: &mut Command) -> anyhow::Result<()> {
    let (cache, remote) = cache_options(command);
    let Some(url) = url_of(cache) else { return Ok(()) };
    if let Some(other) = remote.as_deref() {
        anyhow::bail!(
            "--cache {url} is a remote cache already; --remote {other} names a second one (give one of them)"
        );
    }
    let home = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache")))
        .ok_or_else(|| {
            anyhow::anyhow!("--cache {url}: no HOME to keep its working copy in (give --cache FOLDER --remote {url})")
        })?;
    *cache = working_copy(&home, &url);
    *remote = Some(url);
    Ok(())
}

/// `<home>/grid/remotes/<sha256(url)[..16]>`: one working copy per remote,
/// kept between runs (`grid gc` collects it like any cache folder).
fn working_copy(home: &Path, url: &str) -> PathBuf {
    home.join("grid").join("remotes").join(&grid_cache::files::sha256_hex(url.as_bytes())[..16])
}

/// The URL a `--cache` value names, if it is one (`scheme://…`).
fn url_of(cache: &Path) -> Option<String> {
    let text = cache.to_str()?;
    let (scheme, rest) = text.split_once("://")?;
    let plain = !scheme.is_empty() && scheme.chars().all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    (plain && !rest.is_empty()).then(|| text.to_string())
}

/// The command's `--cache` and `--remote`, where it has them.
fn cache_options(command: &mut Command) -> (&mut PathBuf, &mut Option<String>) {
    let common = match command {
        Command::Gc { cache, remote, .. } | Command::Ledger { cache, remote, .. } => return (cache, remote),
        Command::Run { common, .. }
        | Command::Plan { common, .. }
        | Command::Status { common, .. }
        | Command::Show { common, .. }
        | Command::Pull { common, .. }
        | Command::Report { common, .. }
        | Command::Bench { common, .. }
        | Command::Step { common, .. }
        | Command::Lock { common } => common,
        Command::Crowd { command } => match command {
            CrowdCommand::Export { common, .. }
            | CrowdCommand::Simulate { common, .. }
            | CrowdCommand::Import { common, .. } => common,
        },
    };
    (&mut common.cache, &mut common.remote)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_folders() {
        assert_eq!(url_of(Path::new("s3://lab/grid")), Some("s3://lab/grid".into()));
        assert_eq!(url_of(Path::new("file:///srv/cache")), Some("file:///srv/cache".into()));
        assert_eq!(url_of(Path::new("cache")), None);
        assert_eq!(url_of(Path::new("/data/cache")), None);
        assert_eq!(url_of(Path::new("odd://")), None);
        assert_eq!(url_of(Path::new("we ird://x")), None);
    }

    #[test]
    fn each_remote_has_its_own_working_copy() {
        let home = Path::new("/home/u/.cache");
        let a = working_copy(home, "s3://lab/grid");
        assert!(a.starts_with("/home/u/.cache/grid/remotes"));
        assert_eq!(a, working_copy(home, "s3://lab/grid"));
        assert_ne!(a, working_copy(home, "s3://lab/other"));
    }
}
