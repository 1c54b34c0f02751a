//! `--device`, `--backend`, `--precision`, `--shape-buckets`, `--autotune`:
//! what computes, and the options a worker of this command plans with.

use std::path::PathBuf;

use super::args::Common;
use super::{Failure, load_grid, runtime, usage};
use crate::backend::Compute;
use crate::cache::Cache;
use crate::dag::executor::StepSettings;
use crate::dag::{self, PlanOptions, Verbosity};

/// The options a `grid step` worker of this command plans with: the run's
/// settings, its device as resolved here (a worker does not place the grid
/// again).
pub(super) fn step_settings(
    common: &Common,
    compute: Compute,
    verbosity: Verbosity,
    frozen: Option<PathBuf>,
) -> StepSettings {
    StepSettings {
        frozen,
        grid: common.grid.clone(),
        cache: common.cache.clone(),
        data_root: common.data_root.clone(),
        device: compute.device.to_string(),
        backend: common.backend.clone(),
        overrides: common.set.clone(),
        precision: common.precision.clone(),
        shape_buckets: common.shape_buckets.clone(),
        autotune: common.autotune.clone(),
        quiet: verbosity == Verbosity::Quiet,
    }
}

/// `--device`, `--backend`, `--precision` and `--shape-buckets`.
pub(super) fn compute_of(common: &Common) -> Result<Compute, Failure> {
    compute_placed(common).map(|(compute, _)| compute)
}

/// [`compute_of`], and for `--device auto` why it chose the device.
pub(super) fn compute_placed(common: &Common) -> Result<(Compute, Option<String>), Failure> {
    let (device, why) = match common.device.as_str() {
        "auto" => {
            use crate::backend::placement;
            let gpu = placement::gpu_available();
            // With a GPU to choose, the grid's models and the rates its cache
            // measured for them (without one, no planning twice).
            let models = if gpu.is_ok() {
                let precision =
                    common.precision.parse().map_err(|e: String| usage(anyhow::anyhow!("--precision: {e}")))?;
                let grid = load_grid(common)?;
                let cache = Cache::open(&common.cache).map_err(runtime)?;
                let options = PlanOptions { data_root: common.data_root.clone(), precision };
                let plan = dag::plan(&grid, &cache, &options).map_err(usage)?;
                dag::placement::models(&plan, &cache)
            } else {
                Vec::new()
            };
            let placed = placement::auto_device(&models, gpu);
            (placed.device, Some(placed.why))
        }
        device => (device.parse().map_err(|e: String| usage(anyhow::anyhow!("--device: {e}")))?, None),
    };
    compute_on(common, device).map(|compute| (compute, why))
}

pub(super) fn compute_on(common: &Common, device: crate::backend::DeviceChoice) -> Result<Compute, Failure> {
    let precision = common.precision.parse().map_err(|e: String| usage(anyhow::anyhow!("--precision: {e}")))?;
    let backend = match common.backend.as_str() {
        "auto" => crate::backend::BackendKind::default_for(device),
        name => name.parse().map_err(|e: String| usage(anyhow::anyhow!("--backend: {e}")))?,
    };
    let mut compute = Compute::with_backend(backend, device, precision);
    // A `GRID_BLAS` that does not load fails here, before any step runs,
    // rather than as a silent fall-back to `gemm` in every step.
    grid_kernels::blas::active().map_err(|e| usage(anyhow::anyhow!(e)))?;
    if common.shape_buckets != "auto" {
        compute.buckets =
            common.shape_buckets.parse().map_err(|e: String| usage(anyhow::anyhow!("--shape-buckets: {e}")))?;
    }
    Ok(compute)
}

/// On cubecl, points it at the cache's kernel folder for this device before
/// any GPU client exists, and (`announce`) says so when the folder is new: the
/// first run on a device spends its first minutes compiling kernels.
pub(super) fn prepare_kernel_cache(common: &Common, compute: Compute, announce: bool) -> Result<(), Failure> {
    use crate::backend::kernel_cache::{self, AutotuneLevel};
    let level: AutotuneLevel =
        common.autotune.parse().map_err(|e: String| usage(anyhow::anyhow!("--autotune: {e}")))?;
    kernel_cache::prepare(&common.cache, compute, level, announce).map_err(|e| runtime(anyhow::anyhow!(e)))
}
