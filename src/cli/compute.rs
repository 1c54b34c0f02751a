//! `--device`, `--backend`, `--precision`, `--shape-buckets`, `--autotune`:
//! what computes, and the options a worker of this command plans with.

use std::path::PathBuf;

use super::args::Common;
use super::{Failure, grid_and_plan_of, runtime, usage};
use grid_core::backend::Compute;
use grid_pipeline::dag::executor::StepSettings;
use grid_pipeline::dag::{self, Verbosity};

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
        remote: common.remote.clone(),
        data_root: common.data_root.clone(),
        device: compute.device.to_string(),
        backend: common.backend.clone(),
        fragments: common.with.clone(),
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
            let placed = dag::placement::auto_device(|| {
                let (_, cache, plan) = grid_and_plan_of(common, precision_of(common)?)?;
                Ok(dag::placement::models(&plan, &cache))
            })?;
            (placed.device, Some(placed.why))
        }
        device => (device.parse().map_err(|e: String| usage(anyhow::anyhow!("--device: {e}")))?, None),
    };
    compute_on(common, device).map(|compute| (compute, why))
}

pub(super) fn compute_on(common: &Common, device: grid_core::backend::DeviceChoice) -> Result<Compute, Failure> {
    let precision = precision_of(common)?;
    let backend = match common.backend.as_str() {
        "auto" => grid_core::backend::BackendKind::default_for(device),
        name => name.parse().map_err(|e: String| usage(anyhow::anyhow!("--backend: {e}")))?,
    };
    let mut compute = Compute::with_backend(backend, device, precision);
    // A `GRID_BLAS` that does not load fails here, before any step runs,
    // rather than as a silent fall-back to `gemm` in every step.
    grid_kernels::linear::blas_library().map_err(|e| usage(anyhow::anyhow!(e)))?;
    if common.shape_buckets != "auto" {
        compute.buckets =
            common.shape_buckets.parse().map_err(|e: String| usage(anyhow::anyhow!("--shape-buckets: {e}")))?;
    }
    Ok(compute)
}

/// `--precision`.
pub(super) fn precision_of(common: &Common) -> Result<grid_core::backend::Precision, Failure> {
    common.precision.parse().map_err(|e: String| usage(anyhow::anyhow!("--precision: {e}")))
}

/// On cubecl, points it at the cache's kernel folder for this device before
/// any GPU client exists, and (`announce`) says so when the folder is new: the
/// first run on a device spends its first minutes compiling kernels.
pub(super) fn prepare_kernel_cache(common: &Common, compute: Compute, announce: bool) -> Result<(), Failure> {
    use grid_core::backend::kernel_cache::{self, AutotuneLevel};
    let level: AutotuneLevel =
        common.autotune.parse().map_err(|e: String| usage(anyhow::anyhow!("--autotune: {e}")))?;
    kernel_cache::prepare(&common.cache, compute, level, announce).map_err(|e| runtime(anyhow::anyhow!(e)))
}
