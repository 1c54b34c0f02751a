//! Compiled GPU kernels and autotune results, kept under the grid cache.
//!
//! cubecl compiles (NVRTC) and autotunes kernels per shape, on one CPU thread;
//! by default it keeps the compiled kernels nowhere and the autotune results in a
//! `target/` folder near the working directory, so every `grid step` process
//! started over (NOTES-gpu: minutes per process). `grid` sets cubecl's
//! configuration from code, before any GPU client exists, to one folder per
//! backend and device under the cache: `<cache>/kernels/<backend>/<device>/`.
//! Every step, every process and every node sharing the cache reuses it, and a
//! user places no configuration file. `grid gc` keeps the folder unless asked
//! (`--kernels`): it belongs to a device, not to any grid.

use std::path::{Path, PathBuf};

/// The folder under a grid cache that holds compiled kernels.
pub const FOLDER: &str = "kernels";

/// How hard cubecl searches for the fastest kernel of a new shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AutotuneLevel {
    /// One candidate per operation where cubecl allows it: the least compiling.
    Minimal,
    /// cubecl's default.
    #[default]
    Balanced,
    Extensive,
    Full,
}

impl std::str::FromStr for AutotuneLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "minimal" => Ok(Self::Minimal),
            "balanced" => Ok(Self::Balanced),
            "extensive" => Ok(Self::Extensive),
            "full" => Ok(Self::Full),
            _ => Err(format!("unknown autotune level `{s}`; use minimal, balanced, extensive or full")),
        }
    }
}

/// The kernel folder of one backend on one device. `device` names the GPU model
/// and driver (compiled PTX is valid for that pair only); characters that do not
/// belong in a file name become `-`.
pub fn folder(cache_root: &Path, backend: &str, device: &str) -> PathBuf {
    let tag: String =
        device.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '-' }).collect();
    cache_root.join(FOLDER).join(backend).join(tag)
}

/// Whether `dir` holds no compiled kernel yet: the first run on a device, whose
/// first minutes go to compiling.
pub fn is_cold(dir: &Path) -> bool {
    std::fs::read_dir(dir).map(|mut entries| entries.next().is_none()).unwrap_or(true)
}

/// Before a run on cubecl: points it at the cache's kernel folder for this
/// device before any GPU client exists, and (`announce`) says so when the
/// folder is new, since the first run on a device spends its first minutes
/// compiling kernels. Nothing to do on another backend.
pub fn prepare(cache_root: &Path, compute: super::Compute, level: AutotuneLevel, announce: bool) -> Result<(), String> {
    let (super::BackendKind::Cubecl, super::DeviceChoice::Cuda(_index)) = (compute.backend, compute.device) else {
        return Ok(());
    };
    #[cfg(feature = "cuda")]
    {
        let tag = super::cuda_driver::device_tag(_index).map_err(|e| format!("--device cuda: {e}"))?;
        let dir = folder(cache_root, "cuda", &tag);
        if announce && is_cold(&dir) {
            eprintln!(
                "compiling GPU kernels for {tag} into {}: the first run on a device spends its first minutes \
                 on this; later runs, steps and nodes sharing the cache reuse them",
                dir.display()
            );
        }
        configure_cubecl(&dir, level)?;
    }
    // Without the feature, `Compute::check` has already refused CUDA.
    #[cfg(not(feature = "cuda"))]
    let _ = (cache_root, level, announce);
    Ok(())
}

/// Points cubecl's kernel and autotune caches at `dir`, with `level`. Must run
/// before the first GPU client is created (cubecl reads its configuration once);
/// a second call in the same process is a no-op that says so.
#[cfg(feature = "cuda")]
pub fn configure_cubecl(dir: &Path, level: AutotuneLevel) -> Result<(), String> {
    use cubecl::config::autotune::AutotuneLevel as Level;
    use cubecl::config::cache::CacheConfig;
    use cubecl::config::{CubeClRuntimeConfig, RuntimeConfig};

    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut config = CubeClRuntimeConfig::default();
    config.compilation.cache = Some(CacheConfig::File(dir.join("compiled")));
    config.autotune.cache = CacheConfig::File(dir.join("autotune"));
    config.autotune.level = match level {
        AutotuneLevel::Minimal => Level::Minimal,
        AutotuneLevel::Balanced => Level::Balanced,
        AutotuneLevel::Extensive => Level::Extensive,
        AutotuneLevel::Full => Level::Full,
    };
    // cubecl panics on a second `set`; its storage tells whether one happened.
    if CubeClRuntimeConfig::storage().lock().is_some() {
        return Err("cubecl's configuration was read before grid could set it".into());
    }
    CubeClRuntimeConfig::set(config);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_folder_per_backend_and_device_under_the_cache() {
        let dir = folder(Path::new("cache"), "cuda", "NVIDIA H100 80GB HBM3 / driver 580.159.04");
        assert_eq!(dir, Path::new("cache/kernels/cuda/NVIDIA-H100-80GB-HBM3---driver-580.159.04"));
    }

    #[test]
    fn a_missing_or_empty_folder_is_cold() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(is_cold(&tmp.path().join("absent")));
        assert!(is_cold(tmp.path()));
        std::fs::write(tmp.path().join("kernel.ptx"), "x").unwrap();
        assert!(!is_cold(tmp.path()));
    }

    #[test]
    fn autotune_levels_parse() {
        assert_eq!("minimal".parse(), Ok(AutotuneLevel::Minimal));
        assert!("max".parse::<AutotuneLevel>().is_err());
    }
}
