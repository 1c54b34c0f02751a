//! `grid bench --gemm`: a roofline of the dense products a grid's models run.
//!
//! For every distinct dense layer of the grid's models (BERT's attention
//! projections and feed-forward pair, the BiLSTM's attention projection) it
//! times two phases through grid's own path (`model::dense::at_every_position`
//! on the grid's backend, as the models call it):
//! - `train`: forward and backward with the weights tracked (three products:
//!   the output, the input's gradient, the weight's gradient), on a training
//!   batch;
//! - `attribute`: forward and the input's gradient with frozen weights (two
//!   products), on an attribution batch (gradients, IG's interpolations).
//!
//! Beside each it times the same products as single 2-D matmuls on the
//! inner backend (on the CPU: one call of the `gemm` crate, the best the
//! crate does on that shape) and, when a Python with torch is at hand,
//! torch's `F.linear` forward and backward on the same shapes and threads
//! (`scripts/torch_gemm.py`). The machine's ceiling is measured, not looked
//! up: [`grid_kernels::peak::fma_flops`].

use std::path::Path;
use std::time::Instant;

use anyhow::Result;
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use serde::{Deserialize, Serialize};

use crate::architectures::DenseLayer;
use crate::dag::Plan;
use crate::steps::Work;
use grid_core::backend::Compute;
use grid_core::model::dense::at_every_position;

/// Timed passes go on until this much time has gone by; the fastest counts.
const MIN_TIMED_SECONDS: f64 = 0.5;
const MAX_PASSES: usize = 200;

/// How long the ceiling's multiply-adds run.
const PEAK_SECONDS: f64 = 1.0;

/// Which products a timed pass runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Forward, the input's and the weight's gradients: three products.
    Train,
    /// Forward and the input's gradient, weights frozen: two products.
    Attribute,
}

impl Phase {
    pub fn name(self) -> &'static str {
        match self {
            Phase::Train => "train",
            Phase::Attribute => "attribute",
        }
    }

    fn products(self) -> usize {
        match self {
            Phase::Train => 3,
            Phase::Attribute => 2,
        }
    }
}

/// One dense layer of a model at one phase: `rows` positions of `inputs`
/// features to `outputs`, run `per_model` times in one forward pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GemmShape {
    pub model: String,
    pub layer: String,
    pub phase: Phase,
    /// Examples × tokens per example.
    pub batch: usize,
    pub tokens: usize,
    pub inputs: usize,
    pub outputs: usize,
    /// Layers of this shape in one pass over the model.
    pub per_model: usize,
}

impl GemmShape {
    pub fn rows(&self) -> usize {
        self.batch * self.tokens
    }

    /// Floating-point operations of one pass (two per multiply-add).
    pub fn flops(&self) -> f64 {
        2.0 * self.phase.products() as f64 * (self.rows() * self.inputs * self.outputs) as f64
    }
}

/// One timed shape: rates in GFLOP/s.
#[derive(Debug, Clone, Serialize)]
pub struct GemmRow {
    #[serde(flatten)]
    pub shape: GemmShape,
    /// grid's path (`at_every_position`), its products in the `gemm` crate.
    pub grid: f64,
    /// grid's path with the `GRID_BLAS` library taking its products, when set.
    pub grid_blas: Option<f64>,
    /// The same products as single 2-D matmuls on the inner backend.
    pub single_matmuls: f64,
    /// torch's `F.linear` forward and backward, when measured.
    pub torch: Option<f64>,
}

/// The whole measurement.
#[derive(Debug, Clone, Serialize)]
pub struct Roofline {
    pub threads: usize,
    /// Measured multiply-add ceiling of `threads` threads, GFLOP/s.
    pub peak: f64,
    pub rows: Vec<GemmRow>,
    /// Why torch's column is empty, when it is.
    pub torch_note: Option<String>,
    /// The `GRID_BLAS` library, when set.
    pub blas: Option<String>,
    /// What `GRID_BLAS=auto` chose and why, when asked.
    pub auto: Option<String>,
}

/// What the bench is asked.
#[derive(Debug, Clone)]
pub struct GemmOptions {
    /// Tokens per example (padded), for every batch.
    pub tokens: usize,
    /// Examples per attribution batch (IG's interpolations, SmoothGrad's copies).
    pub attribution_batch: usize,
    /// Only models whose name contains this.
    pub filter: Option<String>,
    /// The Python to ask for torch's rates; `None`: torch is not measured.
    pub python: Option<String>,
}

/// The dense layers of the plan's models, each at both phases.
pub fn shapes(plan: &Plan, options: &GemmOptions) -> Result<Vec<GemmShape>> {
    let mut seen = std::collections::BTreeSet::new();
    let mut shapes = Vec::new();
    for step in &plan.steps {
        let Work::Train { model, assets, .. } = &step.work else { continue };
        if options.filter.as_deref().is_some_and(|f| !model.name.contains(f)) || !seen.insert(model.name.clone()) {
            continue;
        }
        for layer in model.architecture.dense_layers(&model.name, assets)? {
            let DenseLayer { name: layer, inputs, outputs, per_pass: per_model } = layer;
            for (phase, batch) in
                [(Phase::Train, model.training.batch_size.get()), (Phase::Attribute, options.attribution_batch)]
            {
                shapes.push(GemmShape {
                    model: model.name.clone(),
                    layer: layer.to_string(),
                    phase,
                    batch,
                    tokens: options.tokens,
                    inputs,
                    outputs,
                    per_model,
                });
            }
        }
    }
    Ok(shapes)
}

/// Times `shapes` on `compute` (and in torch, when `options.python` is set)
/// against the machine's peak: what `grid bench --gemm` prints. Runs on the
/// calling thread; call it where a step would run (`on_worker_thread`).
pub fn roofline(shapes: Vec<GemmShape>, compute: Compute, options: &GemmOptions) -> Result<Roofline> {
    let threads = rayon::current_num_threads();
    let rates = grid_core::with_autodiff_backend!(compute, |B, device| Ok::<_, anyhow::Error>(time_shapes::<B>(
        &shapes, &device
    )))?;
    let (torch, torch_note) = match &options.python {
        None => (None, Some("--python none".to_string())),
        Some(python) => {
            let script = tempfile::Builder::new().suffix(".py").tempfile()?;
            std::fs::write(script.path(), include_str!("../../../../scripts/torch_gemm.py"))?;
            match torch_rates(python, script.path(), &shapes, threads) {
                Ok(rates) => (Some(rates), None),
                Err(why) => (None, Some(why)),
            }
        }
    };
    let rows = shapes
        .into_iter()
        .zip(rates)
        .enumerate()
        .map(|(i, (shape, (grid, grid_blas, single_matmuls)))| GemmRow {
            shape,
            grid,
            grid_blas,
            single_matmuls,
            torch: torch.as_ref().map(|rates| rates[i]),
        })
        .collect();
    let blas = grid_kernels::linear::blas_in_use().map(|library| library.path().display().to_string());
    let auto = grid_kernels::linear::blas_choice().map(|choice| choice.describe());
    Ok(Roofline { threads, peak: peak(threads), rows, torch_note, blas, auto })
}

/// Times every shape on backend `B`: `(grid, grid with GRID_BLAS, single
/// matmuls)` in GFLOP/s, the second only when a library is set.
pub fn time_shapes<B: AutodiffBackend>(shapes: &[GemmShape], device: &B::Device) -> Vec<(f64, Option<f64>, f64)> {
    let blas = grid_kernels::linear::blas_in_use().is_some();
    let rate = |shape: &GemmShape, seconds: f64| shape.flops() / seconds.max(f64::MIN_POSITIVE) / 1e9;
    // Each path over all shapes in turn, so no path runs right after another's.
    let each =
        |pass: &dyn Fn(&GemmShape) -> f64| shapes.iter().map(|shape| rate(shape, pass(shape))).collect::<Vec<_>>();
    grid_kernels::linear::set_blas_enabled(false);
    let grid = each(&|shape| fastest(grid_pass::<B>(shape, device)));
    let single = each(&|shape| fastest(single_matmuls::<B::InnerBackend>(shape, device)));
    grid_kernels::linear::set_blas_enabled(true);
    let grid_blas = if blas {
        each(&|shape| fastest(grid_pass::<B>(shape, device))).into_iter().map(Some).collect()
    } else {
        vec![None; shapes.len()]
    };
    grid.into_iter().zip(grid_blas).zip(single).map(|((grid, blas), single)| (grid, blas, single)).collect()
}

/// Operands of one shape: values in [-1, 1] from a fixed wave (no RNG, so
/// nothing else's seed is touched).
fn operand<B: Backend>(len: usize, dims: [usize; 2], phase: f32, device: &B::Device) -> Tensor<B, 2> {
    let values: Vec<f32> = (0..len).map(|i| (i as f32 * 0.618 + phase).sin()).collect();
    Tensor::<B, 1>::from_floats(values.as_slice(), device).reshape(dims)
}

/// One pass of grid's path; returns its seconds.
fn grid_pass<B: AutodiffBackend>(shape: &GemmShape, device: &B::Device) -> impl FnMut() -> f64 {
    let (rows, inputs, outputs) = (shape.rows(), shape.inputs, shape.outputs);
    let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(7);
    let mut layer = grid_core::model::init::linear::<B>(&mut rng, inputs, outputs, true, device);
    if shape.phase == Phase::Attribute {
        layer = layer.no_grad();
    }
    let x = operand::<B>(rows * inputs, [rows, inputs], 0.1, device).reshape([shape.batch, shape.tokens, inputs]);
    let probe =
        operand::<B>(rows * outputs, [rows, outputs], 0.7, device).reshape([shape.batch, shape.tokens, outputs]);
    let device = device.clone();
    move || {
        let start = Instant::now();
        let x = x.clone().require_grad();
        let y = at_every_position(&layer, x.clone());
        let grads = (y * probe.clone()).sum().backward();
        let gradient = x.grad(&grads).expect("the input is tracked");
        let _ = B::sync(&device);
        std::hint::black_box(gradient);
        start.elapsed().as_secs_f64()
    }
}

/// The same products as single 2-D matmuls; returns its seconds.
fn single_matmuls<B: Backend>(shape: &GemmShape, device: &B::Device) -> impl FnMut() -> f64 {
    let (rows, inputs, outputs) = (shape.rows(), shape.inputs, shape.outputs);
    let x = operand::<B>(rows * inputs, [rows, inputs], 0.1, device);
    let weight = operand::<B>(inputs * outputs, [inputs, outputs], 0.3, device);
    let grad = operand::<B>(rows * outputs, [rows, outputs], 0.7, device);
    let phase = shape.phase;
    let device = device.clone();
    move || {
        let start = Instant::now();
        let y = x.clone().matmul(weight.clone());
        let x_grad = grad.clone().matmul(weight.clone().transpose());
        let w_grad = (phase == Phase::Train).then(|| x.clone().transpose().matmul(grad.clone()));
        let _ = B::sync(&device);
        std::hint::black_box((y, x_grad, w_grad));
        start.elapsed().as_secs_f64()
    }
}

/// The fastest of passes until [`MIN_TIMED_SECONDS`] went by, after one
/// untimed pass (allocator and cache warm-up).
fn fastest(mut pass: impl FnMut() -> f64) -> f64 {
    pass();
    let start = Instant::now();
    let mut best = f64::INFINITY;
    for _ in 0..MAX_PASSES {
        best = best.min(pass());
        if start.elapsed().as_secs_f64() >= MIN_TIMED_SECONDS {
            break;
        }
    }
    best
}

/// The measured ceiling of `threads` threads, GFLOP/s.
pub fn peak(threads: usize) -> f64 {
    grid_kernels::peak::fma_flops(threads, PEAK_SECONDS) / 1e9
}

/// torch's rates for `shapes` (GFLOP/s, in order) from `scripts/torch_gemm.py`
/// run by `python` on `threads` threads; `Err` says why there are none.
pub fn torch_rates(python: &str, script: &Path, shapes: &[GemmShape], threads: usize) -> Result<Vec<f64>, String> {
    use std::io::Write;
    let mut child = std::process::Command::new(python)
        .arg(script)
        .args(["--threads", &threads.to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("{python}: {e}"))?;
    let input = serde_json::to_vec(shapes).map_err(|e| e.to_string())?;
    child.stdin.take().expect("piped").write_all(&input).map_err(|e| format!("{python}: {e}"))?;
    let out = child.wait_with_output().map_err(|e| format!("{python}: {e}"))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{python} {}: {}", script.display(), stderr.lines().last().unwrap_or("failed")));
    }
    let rates: Vec<f64> =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("{}: unreadable answer: {e}", script.display()))?;
    if rates.len() != shapes.len() {
        return Err(format!("{}: {} rates for {} shapes", script.display(), rates.len(), shapes.len()));
    }
    Ok(rates)
}

/// The rate of a model's whole pass at one phase: its layers' flops over
/// their times, each layer weighted by how often a pass runs it.
pub fn model_rate(rows: &[&GemmRow], rate: impl Fn(&GemmRow) -> Option<f64>) -> Option<f64> {
    let (mut flops, mut seconds) = (0.0, 0.0);
    for row in rows {
        let work = row.shape.flops() * row.shape.per_model as f64;
        flops += work;
        seconds += work / (rate(row)? * 1e9);
    }
    (seconds > 0.0).then(|| flops / seconds / 1e9)
}

/// A Markdown table: one line per shape, then each model's whole pass.
pub fn markdown(context: &super::BenchContext, roofline: &Roofline) -> String {
    let mut out = format!(
        "{} · commit {} · {} · device {} · grid {}\n\nceiling (measured multiply-adds, {} threads): {:.1} GFLOP/s\n\n",
        context.date, context.commit, context.machine, context.device, context.grid, roofline.threads, roofline.peak
    );
    if let Some(note) = &roofline.torch_note {
        out.push_str(&format!("torch not measured: {note}\n\n"));
    }
    let blas = roofline.blas.is_some();
    if let Some(auto) = &roofline.auto {
        out.push_str(&format!("{auto}\n\n"));
    }
    if let Some(path) = &roofline.blas {
        out.push_str(&format!("GRID_BLAS: {path}\n\n"));
    }
    out.push_str(if blas {
        "| model | layer | phase | rows × in → out | grid (gemm) GFLOP/s | grid (GRID_BLAS) | of ceiling | single matmuls | torch GFLOP/s | grid / torch |\n\
         |---|---|---|---|---:|---:|---:|---:|---:|---:|\n"
    } else {
        "| model | layer | phase | rows × in → out | grid GFLOP/s | of ceiling | single matmuls | torch GFLOP/s | grid / torch |\n\
         |---|---|---|---|---:|---:|---:|---:|---:|\n"
    });
    let cell = |rate: Option<f64>| rate.map_or("–".to_string(), |r| format!("{r:.1}"));
    let ratio = |grid: f64, torch: Option<f64>| torch.map_or("–".to_string(), |t| format!("{:.2}", grid / t));
    // The path a run takes: the library's where one is set.
    let taken = |row: &GemmRow| row.grid_blas.unwrap_or(row.grid);
    let blas_cell = |rate: Option<f64>| if blas { format!(" {} |", cell(rate)) } else { String::new() };
    for row in &roofline.rows {
        let s = &row.shape;
        out.push_str(&format!(
            "| {} | {} | {} | {} × {} → {} | {:.1} |{} {:.0}% | {:.1} | {} | {} |\n",
            s.model,
            s.layer,
            s.phase.name(),
            s.rows(),
            s.inputs,
            s.outputs,
            row.grid,
            blas_cell(row.grid_blas),
            100.0 * taken(row) / roofline.peak,
            row.single_matmuls,
            cell(row.torch),
            ratio(taken(row), row.torch),
        ));
    }
    let mut models: Vec<(&str, Phase)> = Vec::new();
    for row in &roofline.rows {
        let model = (row.shape.model.as_str(), row.shape.phase);
        if !models.contains(&model) {
            models.push(model);
        }
    }
    for (model, phase) in models {
        let rows: Vec<&GemmRow> =
            roofline.rows.iter().filter(|r| r.shape.model == model && r.shape.phase == phase).collect();
        let Some(grid) = model_rate(&rows, |r| Some(r.grid)) else { continue };
        let grid_blas = model_rate(&rows, |r| r.grid_blas);
        let taken_rate = grid_blas.unwrap_or(grid);
        let single = model_rate(&rows, |r| Some(r.single_matmuls)).unwrap_or(f64::NAN);
        let torch = model_rate(&rows, |r| r.torch);
        out.push_str(&format!(
            "| **{model}** | all dense layers | {} | | **{grid:.1}** |{} {:.0}% | {single:.1} | {} | **{}** |\n",
            phase.name(),
            blas_cell(grid_blas),
            100.0 * taken_rate / roofline.peak,
            cell(torch),
            ratio(taken_rate, torch),
        ));
    }
    if let Some(verdict) = blas_verdict(&roofline.rows) {
        out.push_str(&format!("\n{verdict}\n"));
    }
    out
}

/// Whether the `GRID_BLAS` library pays here: its rate over every timed
/// product (each weighted by its work in a model's pass) against `gemm`'s.
pub fn blas_verdict(rows: &[GemmRow]) -> Option<String> {
    let all: Vec<&GemmRow> = rows.iter().collect();
    let gemm = model_rate(&all, |r| Some(r.grid))?;
    let blas = model_rate(&all, |r| r.grid_blas)?;
    let ratio = blas / gemm;
    Some(if ratio >= 1.05 {
        format!("GRID_BLAS runs these products at {ratio:.2}× gemm's rate: keep it set on this machine.")
    } else if ratio <= 0.95 {
        format!("GRID_BLAS runs these products at {ratio:.2}× gemm's rate: unset it on this machine.")
    } else {
        format!(
            "GRID_BLAS runs these products at {ratio:.2}× gemm's rate: within this measurement's noise; either will do."
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(phase: Phase) -> GemmShape {
        GemmShape {
            model: "m".into(),
            layer: "l".into(),
            phase,
            batch: 3,
            tokens: 5,
            inputs: 24,
            outputs: 40,
            per_model: 2,
        }
    }

    #[test]
    fn a_pass_counts_two_flops_per_multiply_add_of_each_product() {
        assert_eq!(shape(Phase::Train).flops(), 2.0 * 3.0 * (15 * 24 * 40) as f64);
        assert_eq!(shape(Phase::Attribute).flops(), 2.0 * 2.0 * (15 * 24 * 40) as f64);
    }

    /// A model's rate is its flops over its time: a layer twice as heavy that
    /// runs at half the rate dominates the time.
    #[test]
    fn a_models_rate_weighs_its_layers_by_their_work() {
        let row = |outputs: usize, rate: f64| GemmRow {
            shape: GemmShape { outputs, ..shape(Phase::Train) },
            grid: rate,
            grid_blas: None,
            single_matmuls: rate,
            torch: None,
        };
        let (light, heavy) = (row(40, 10.0), row(80, 5.0));
        let (f1, f2) = (light.shape.flops() * 2.0, heavy.shape.flops() * 2.0);
        let expected = (f1 + f2) / (f1 / 10e9 + f2 / 5e9) / 1e9;
        let got = model_rate(&[&light, &heavy], |r| Some(r.grid)).unwrap();
        assert!((got - expected).abs() < 1e-9, "{got} vs {expected}");
        assert_eq!(model_rate(&[&light], |r| r.torch), None, "no torch rate, no model rate");
    }

    /// The verdict weighs products by their work and needs the library's
    /// column.
    #[test]
    fn the_verdict_says_whether_the_library_pays() {
        let row = |grid: f64, grid_blas: Option<f64>| GemmRow {
            shape: shape(Phase::Train),
            grid,
            grid_blas,
            single_matmuls: grid,
            torch: None,
        };
        assert_eq!(blas_verdict(&[row(50.0, None)]), None);
        assert!(blas_verdict(&[row(50.0, Some(150.0))]).unwrap().contains("3.00× gemm's rate: keep it set"));
        assert!(blas_verdict(&[row(100.0, Some(80.0))]).unwrap().contains("unset it"));
        assert!(blas_verdict(&[row(100.0, Some(101.0))]).unwrap().contains("either will do"));
    }

    /// The timed pass runs the products it counts: on the CPU backend, a
    /// tiny shape gives a positive, finite rate for both paths.
    #[test]
    fn both_paths_time_a_tiny_shape() {
        let rates = time_shapes::<grid_core::backend::CpuAutodiff>(
            &[shape(Phase::Train), shape(Phase::Attribute)],
            &Default::default(),
        );
        for (grid, _, single) in rates {
            assert!(grid.is_finite() && grid > 0.0 && single.is_finite() && single > 0.0, "{grid} {single}");
        }
    }
}
