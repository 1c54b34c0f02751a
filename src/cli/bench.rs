//! `grid bench` and `grid bench --gemm` (`grid_pipeline::bench`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;

use super::args::Common;
use super::compute::{compute_of, prepare_kernel_cache};
use super::{Failure, plan_of, runtime, usage};

pub(super) fn bench(
    common: Common,
    methods: Option<Vec<String>>,
    examples: usize,
    only: Option<String>,
    json: Option<PathBuf>,
    dump: Option<PathBuf>,
    (internal_batch_size, perturbations_per_eval): (Option<usize>, Option<usize>),
) -> Result<ExitCode, Failure> {
    let compute = compute_of(&common)?;
    compute.check().map_err(|e| usage(anyhow::anyhow!(e)))?;
    prepare_kernel_cache(&common, compute, true)?;
    let methods = methods
        .map(|names| {
            names.iter().map(|n| n.trim().parse::<grid_methods::salience::Method>()).collect::<Result<Vec<_>, _>>()
        })
        .transpose()
        .map_err(usage)?;
    let (cache, plan) = plan_of(&common, compute)?;
    let bench_options = grid_pipeline::bench::BenchOptions {
        methods,
        examples: examples.max(1),
        filter: only,
        dump,
        internal_batch_size: internal_batch_size.map(|n| n.max(1)),
        perturbations_per_eval: perturbations_per_eval.map(|n| n.max(1)),
    };
    // As `grid run` computes a step: on the pool's thread (see `on_worker_thread`).
    let rows = grid_core::backend::on_worker_thread(compute.device, || {
        grid_pipeline::bench::run(&plan, &cache, compute, &bench_options)
    })
    .map_err(runtime)?;
    let context = grid_pipeline::bench::context(compute, &common.grid);
    print!("{}", grid_pipeline::bench::markdown(&context, &rows));
    if let Some(path) = json {
        write_json(&path, &serde_json::json!({ "context": context, "rows": rows }))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Examples per attribution batch that `grid bench --gemm` times unless
/// `--internal-batch-size` says otherwise.
pub(super) const GEMM_ATTRIBUTION_BATCH: usize = 32;

/// `grid bench --gemm`: see [`grid_pipeline::bench::gemm`].
pub(super) fn bench_gemm(
    common: Common,
    options: grid_pipeline::bench::gemm::GemmOptions,
    json: Option<PathBuf>,
) -> Result<ExitCode, Failure> {
    use grid_pipeline::bench::gemm;
    let compute = compute_of(&common)?;
    compute.check().map_err(|e| usage(anyhow::anyhow!(e)))?;
    prepare_kernel_cache(&common, compute, true)?;
    let (_cache, plan) = plan_of(&common, compute)?;
    let shapes = gemm::shapes(&plan, &options).map_err(runtime)?;
    if shapes.is_empty() {
        return Err(usage(anyhow::anyhow!("{}: no models to time", common.grid.display())));
    }
    let roofline = grid_core::backend::on_worker_thread(compute.device, || gemm::roofline(shapes, compute, &options))
        .map_err(runtime)?;
    let context = grid_pipeline::bench::context(compute, &common.grid);
    print!("{}", gemm::markdown(&context, &roofline));
    if let Some(path) = json {
        write_json(&path, &serde_json::json!({ "context": context, "roofline": roofline }))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `grid bench --resnet`: see [`grid_pipeline::bench::resnet`].
pub(super) fn bench_resnet(
    common: Common,
    only: Option<String>,
    python: Option<String>,
    sittings: usize,
    json: Option<PathBuf>,
) -> Result<ExitCode, Failure> {
    use grid_pipeline::bench::resnet;
    let compute = compute_of(&common)?;
    compute.check().map_err(|e| usage(anyhow::anyhow!(e)))?;
    prepare_kernel_cache(&common, compute, true)?;
    let grid = super::load_grid(&common)?;
    let shapes =
        resnet::shapes(&grid, only.as_deref()).map_err(|e| usage(anyhow::anyhow!("{}: {e}", common.grid.display())))?;
    if shapes.is_empty() {
        return Err(usage(anyhow::anyhow!("{}: no ResNets to time", common.grid.display())));
    }
    let bench = grid_core::backend::on_worker_thread(compute.device, || {
        resnet::run(shapes, compute, python.as_deref(), sittings)
    })
    .map_err(runtime)?;
    let context = grid_pipeline::bench::context(compute, &common.grid);
    print!("{}", resnet::markdown(&context, &bench));
    if let Some(path) = json {
        write_json(&path, &serde_json::json!({ "context": context, "bench": bench }))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A benchmark's `--json` file.
fn write_json(path: &Path, value: &serde_json::Value) -> Result<(), Failure> {
    let text = serde_json::to_string_pretty(value).map_err(runtime)?;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display())).map_err(runtime)
}
