//! `grid bench --resnet`: images per second of the ResNets a grid's
//! `[images]` section trains, at its image side, beside PyTorch on the same
//! shapes (`scripts/torch_resnet_bench.py`, the peer a user would pick):
//!
//! - training: SGD steps (momentum 0.9, weight decay 1e-4) on batches of the
//!   model's `training.batch_size`: forward with the batch's statistics,
//!   cross-entropy, backward, update;
//! - forward: the evaluated model over batches of [`EVAL_BATCH`] (what LIME
//!   and KernelSHAP run);
//! - gradient: the input gradient of one logit per image over a batch of
//!   [`EVAL_BATCH`] (Gradient, SmoothGrad, GradientSHAP), as grid's maps
//!   compute it: the evaluated model, its parameters not tracked.
//!
//! - maps: each gradient method of the grid's `[images.attribution]`
//!   (Gradient, SmoothGrad, GradCAM, GradientSHAP) with its settings, over
//!   [`MAP_IMAGES`] images as an attribute step runs it, beside Captum's
//!   (`Saliency`, `NoiseTunnel`, `LayerGradCam`, `GradientShap`) batching
//!   the same images as Captum batches them.
//!
//! Images are a fixed wave (no RNG). Each rate is the best of passes until
//! [`SECONDS`] went by, after one untimed pass.
//!
//! A shared machine's speed drifts by more than the kernels differ (on a
//! 2-core cloud VM, one shape's training ratio read 0.87–1.07 in five
//! sittings): `sittings` > 1 times grid, then torch, that many times in
//! turn, and reports each rate's median and each ratio's median over the
//! sittings, the ratios taken within a sitting, with every sitting's
//! ratios beside them.
//!
//! Each rate is also given as a share of the machine's measured ceiling
//! ([`super::gemm::peak`]): the model's multiply-adds per image
//! ([`ResNetConfig::macs_per_image`]) times the forward passes' worth a
//! phase or map makes ([`Work`]). Where both sides run near the ceiling, no
//! kernel can give a larger ratio than the headroom left to it.

use std::path::Path;
use std::time::Instant;

use anyhow::{Result, bail};
use burn::module::AutodiffModule;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{GradientsParams, Optimizer, SgdConfig, decay::WeightDecayConfig};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use serde::{Deserialize, Serialize};

use crate::spec::Grid;
use grid_core::backend::Compute;
use grid_core::image::Image;
use grid_core::model::resnet::{Depth, ResNet, ResNetConfig, Stem};
use grid_methods::salience::image::{PixelMethod, PixelSettings, explain};

/// Images per forward and gradient pass, as the torch script times them.
pub const EVAL_BATCH: usize = 64;

/// Images explained per timed pass of a map method.
pub const MAP_IMAGES: usize = 8;

/// Timed passes go on until this many seconds went by (at most [`MAX_PASSES`]).
const SECONDS: f64 = 3.0;
const MAX_PASSES: usize = 100;

/// One model of the grid at its image side.
#[derive(Debug, Clone, Serialize)]
pub struct ResNetShape {
    pub model: String,
    pub config: ResNetConfig,
    pub side: usize,
    /// Images per training step.
    pub batch: usize,
    /// The grid's gradient map methods, timed with its settings.
    pub maps: Vec<PixelMethod>,
    #[serde(skip)]
    pub settings: PixelSettings,
}

impl ResNetShape {
    fn depth(&self) -> usize {
        match self.config.depth {
            Depth::R18 => 18,
            Depth::R34 => 34,
        }
    }

    fn stem(&self) -> &'static str {
        match self.config.stem {
            Stem::ImageNet => "imagenet",
            Stem::Small => "small",
        }
    }
}

/// Images per second of one shape, each phase.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Rates {
    pub train: f64,
    pub forward: f64,
    pub gradient: f64,
}

/// Maps per second of one method.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MapRate {
    pub method: PixelMethod,
    pub grid: f64,
    /// Captum's, when measured.
    pub captum: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ResNetRow {
    pub shape: ResNetShape,
    pub grid: Rates,
    /// PyTorch's, when measured.
    pub torch: Option<Rates>,
    pub maps: Vec<MapRate>,
}

/// The whole measurement.
#[derive(Debug, Clone, Serialize)]
pub struct ResNetBench {
    pub threads: usize,
    /// The measured multiply-add ceiling of `threads` threads, GFLOP/s.
    pub peak: f64,
    /// One row per shape: with several sittings, each rate's median over
    /// them.
    pub rows: Vec<ResNetRow>,
    /// Why torch's columns are empty, when they are.
    pub torch_note: Option<String>,
    /// Each sitting's rows, when there were several (else `rows` is the one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sittings: Vec<Vec<ResNetRow>>,
}

impl ResNetBench {
    /// The ratio of grid's to torch's rate that `pick` reads from shape
    /// `row`'s rates: over several sittings, the median of each sitting's.
    fn ratio(&self, row: usize, pick: impl Fn(&ResNetRow) -> (f64, Option<f64>)) -> Option<f64> {
        let of = |r: &ResNetRow| match pick(r) {
            (grid, Some(torch)) => Some(grid / torch),
            _ => None,
        };
        if self.sittings.is_empty() {
            return of(&self.rows[row]);
        }
        median(self.sittings.iter().map(|rows| of(&rows[row])).collect::<Option<Vec<f64>>>()?)
    }
}

/// The median of `values` (the mean of the middle two for an even count).
fn median(mut values: Vec<f64>) -> Option<f64> {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(values[n / 2]),
        _ => Some((values[n / 2 - 1] + values[n / 2]) / 2.0),
    }
}

/// Shape by shape, each rate's median over `sittings` (each a row per shape).
fn median_rows(sittings: &[Vec<ResNetRow>]) -> Vec<ResNetRow> {
    let first = &sittings[0];
    (0..first.len())
        .map(|i| {
            let of = |pick: &dyn Fn(&ResNetRow) -> Option<f64>| {
                median(sittings.iter().map(|rows| pick(&rows[i])).collect::<Option<Vec<f64>>>()?)
            };
            let rates = |side: &dyn Fn(&ResNetRow) -> Option<Rates>| -> Option<Rates> {
                Some(Rates {
                    train: of(&|r| side(r).map(|x| x.train))?,
                    forward: of(&|r| side(r).map(|x| x.forward))?,
                    gradient: of(&|r| side(r).map(|x| x.gradient))?,
                })
            };
            let maps = first[i]
                .maps
                .iter()
                .enumerate()
                .map(|(m, map)| MapRate {
                    method: map.method,
                    grid: of(&|r| Some(r.maps[m].grid)).unwrap_or(map.grid),
                    captum: of(&|r| r.maps[m].captum),
                })
                .collect();
            ResNetRow {
                shape: first[i].shape.clone(),
                grid: rates(&|r| Some(r.grid)).unwrap_or(first[i].grid),
                torch: rates(&|r| r.torch),
                maps,
            }
        })
        .collect()
}

/// The image models of `grid` (those whose name contains `filter`, if any)
/// at its side.
pub fn shapes(grid: &Grid, filter: Option<&str>) -> Result<Vec<ResNetShape>> {
    let Some(images) = &grid.images else {
        bail!("`grid bench --resnet` times the ResNets of an `[images]` section, and this grid has none");
    };
    Ok(images
        .models
        .iter()
        .filter(|m| filter.is_none_or(|f| m.name.contains(f)))
        .map(|m| ResNetShape {
            model: m.name.clone(),
            config: m.config.clone(),
            side: images.side,
            batch: m.training.batch_size.get(),
            maps: images.attribution.methods.iter().copied().filter(|&m| is_gradient_map(m)).collect(),
            settings: images.attribution.settings,
        })
        .collect())
}

/// A pass's multiply-adds in forward passes' worth: a backward pass makes
/// each layer's input gradient (as many multiply-adds as its forward) and,
/// when training, its weight gradient (as many again). Batch norm, ReLU and
/// pooling are left out (a few per cent of a ResNet's arithmetic).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Work {
    Train,
    Forward,
    Gradient,
    Map(PixelMethod),
}

impl Work {
    /// Forward passes' worth of multiply-adds per image.
    fn passes(self, settings: &PixelSettings) -> f64 {
        match self {
            Work::Train => 3.0,
            Work::Forward => 1.0,
            // An input gradient is a gradient map's work.
            Work::Gradient => PixelMethod::Gradient.forward_passes(settings),
            Work::Map(method) => method.forward_passes(settings),
        }
    }

    /// GFLOP/s of `rate` images (or maps) per second of `shape`.
    pub fn gflops(self, shape: &ResNetShape, rate: f64) -> f64 {
        2.0 * shape.config.macs_per_image(shape.side) * self.passes(&shape.settings) * rate / 1e9
    }
}

/// The maps that differentiate the model (what Captum's gradient methods
/// compute); LIME and KernelSHAP run forward passes, timed as such.
fn is_gradient_map(method: PixelMethod) -> bool {
    match method {
        PixelMethod::Gradient | PixelMethod::SmoothGrad | PixelMethod::GradCam | PixelMethod::GradientShap => true,
        PixelMethod::Lime | PixelMethod::KernelShap => false,
    }
}

/// Times `shapes` on `compute`, and in torch when `python` is set, in
/// `sittings` turns (at least one). Runs on the calling thread; call it
/// where a step would run (`on_worker_thread`).
pub fn run(shapes: Vec<ResNetShape>, compute: Compute, python: Option<&str>, sittings: usize) -> Result<ResNetBench> {
    let threads = rayon::current_num_threads();
    let script = tempfile::Builder::new().suffix(".py").tempfile()?;
    std::fs::write(script.path(), include_str!("../../../../scripts/torch_resnet_bench.py"))?;
    let mut torch_note = python.is_none().then(|| "--python none".to_string());
    let mut each = Vec::with_capacity(sittings.max(1));
    for _ in 0..sittings.max(1) {
        let mut grid = Vec::with_capacity(shapes.len());
        for shape in &shapes {
            grid.push(grid_core::with_autodiff_backend!(compute, |B, device| Ok::<_, anyhow::Error>(time::<B>(
                shape, &device
            )))?);
        }
        // torch once it answered, or not at all: a sitting without it
        // would leave the medians of different sittings' rates.
        let torch = match python {
            Some(python) if torch_note.is_none() => match torch_rates(python, script.path(), &shapes, threads) {
                Ok(rates) => Some(rates),
                Err(why) => {
                    torch_note = Some(why);
                    None
                }
            },
            _ => None,
        };
        each.push(rows(&shapes, grid, torch.as_deref()));
    }
    if torch_note.is_some() {
        for rows in &mut each {
            rows.iter_mut().for_each(|row| {
                row.torch = None;
                row.maps.iter_mut().for_each(|map| map.captum = None);
            });
        }
    }
    let peak = super::gemm::peak(threads);
    let (rows, sittings) = if each.len() == 1 { (each.remove(0), Vec::new()) } else { (median_rows(&each), each) };
    Ok(ResNetBench { threads, peak, rows, torch_note, sittings })
}

/// One sitting's rows: grid's rates and maps of each shape beside torch's.
fn rows(shapes: &[ResNetShape], grid: Vec<(Rates, Vec<f64>)>, torch: Option<&[TorchRates]>) -> Vec<ResNetRow> {
    shapes
        .iter()
        .zip(grid)
        .enumerate()
        .map(|(i, (shape, (grid, maps)))| {
            let measured = torch.map(|t| &t[i]);
            let maps = shape
                .maps
                .iter()
                .zip(maps)
                .map(|(&method, rate)| MapRate {
                    method,
                    grid: rate,
                    captum: measured.and_then(|(_, captum)| captum.get(method.name()).copied()),
                })
                .collect();
            ResNetRow { shape: shape.clone(), grid, torch: measured.map(|(rates, _)| *rates), maps }
        })
        .collect()
}

/// A fixed wave of `[n, 3, side, side]` values in [−2, 2], about what
/// ImageNet-normalised pixels span.
fn images<B: Backend>(n: usize, side: usize, device: &B::Device) -> Tensor<B, 4> {
    let values: Vec<f32> = (0..n * 3 * side * side).map(|i| 2.0 * (i as f32 * 0.618).sin()).collect();
    Tensor::<B, 1>::from_floats(values.as_slice(), device).reshape([n, 3, side, side])
}

/// grid's rates for one shape on backend `B`: the three phases, and maps
/// per second of each of `shape.maps`.
pub fn time<B: AutodiffBackend>(shape: &ResNetShape, device: &B::Device) -> (Rates, Vec<f64>) {
    let mut model = shape.config.init::<B>(0, device);
    let mut optimizer = SgdConfig::new()
        .with_momentum(Some(MomentumConfig { momentum: 0.9, dampening: 0.0, nesterov: false }))
        .with_weight_decay(Some(WeightDecayConfig::new(1e-4)))
        .init::<B, ResNet<B>>();
    let batch = images::<B>(shape.batch, shape.side, device);
    let labels: Vec<u32> = (0..shape.batch as u32).map(|i| i % 2).collect();
    let train = best_rate(shape.batch, || {
        let loss = grid_core::model::objective::loss(model.forward(batch.clone()), &labels);
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        model = optimizer.step(0.05, model.clone(), grads);
        let _ = B::sync(device);
    });
    let inner = model.valid();
    let many = images::<B::InnerBackend>(EVAL_BATCH, shape.side, device);
    let forward = best_rate(EVAL_BATCH, || {
        std::hint::black_box(inner.forward(many.clone()).into_data());
    });
    let evaluated = model.no_grad();
    let many = images::<B>(EVAL_BATCH, shape.side, device);
    let gradient = best_rate(EVAL_BATCH, || {
        let x = many.clone().require_grad();
        let logit = evaluated.evaluate(x.clone()).narrow(1, 1, 1).sum();
        let grads = logit.backward();
        std::hint::black_box(x.grad(&grads).expect("the input is tracked").into_data());
    });
    let images: Vec<Image> = (0..MAP_IMAGES)
        .map(|n| {
            let len = 3 * shape.side * shape.side;
            let pixels = (0..len).map(|i| 0.5 + 0.5 * ((n * len + i) as f32 * 0.618).sin()).collect();
            Image::new(shape.side, shape.side, pixels).expect("3 values a pixel")
        })
        .collect();
    let refs: Vec<&Image> = images.iter().collect();
    let targets: Vec<usize> = (0..MAP_IMAGES).map(|n| n % 2).collect();
    let streams: Vec<u64> = (0..MAP_IMAGES as u64).collect();
    let maps = shape
        .maps
        .iter()
        .map(|&method| {
            best_rate(MAP_IMAGES, || {
                let maps = explain(method, &shape.settings, &evaluated, &refs, &targets, &streams, &refs, device);
                std::hint::black_box(maps);
            })
        })
        .collect();
    (Rates { train, forward, gradient }, maps)
}

/// Images per second of the fastest pass of `pass` (each `images` images),
/// passes until [`SECONDS`] went by, after one untimed.
fn best_rate(images: usize, mut pass: impl FnMut()) -> f64 {
    pass();
    let start = Instant::now();
    let mut best = f64::INFINITY;
    for _ in 0..MAX_PASSES {
        let one = Instant::now();
        pass();
        best = best.min(one.elapsed().as_secs_f64());
        if start.elapsed().as_secs_f64() >= SECONDS {
            break;
        }
    }
    images as f64 / best.max(f64::MIN_POSITIVE)
}

/// What the torch script prints per shape.
#[derive(Debug, Deserialize)]
struct TorchLine {
    train_images_per_s: f64,
    forward_images_per_s: f64,
    gradient_images_per_s: f64,
    /// Captum's maps per second, by grid's method name.
    #[serde(default)]
    maps_per_s: std::collections::BTreeMap<String, f64>,
}

/// torch's rates for one shape, and Captum's maps per second by method.
type TorchRates = (Rates, std::collections::BTreeMap<String, f64>);

/// torch's rates for `shapes` from `scripts/torch_resnet_bench.py` run by
/// `python` on `threads` threads (one run per shape: the batch differs);
/// `Err` says why there are none.
pub fn torch_rates(
    python: &str,
    script: &Path,
    shapes: &[ResNetShape],
    threads: usize,
) -> Result<Vec<TorchRates>, String> {
    let mut rates = Vec::with_capacity(shapes.len());
    for shape in shapes {
        let out = std::process::Command::new(python)
            .arg(script)
            .args(["--threads", &threads.to_string()])
            .args(["--depth", &shape.depth().to_string()])
            .args(["--batch", &shape.batch.to_string()])
            .args(["--seconds", &SECONDS.to_string()])
            .args(["--shape", &format!("{}:{}:{}", shape.config.width, shape.side, shape.stem())])
            .args(["--maps", &shape.maps.iter().map(|m| m.name()).collect::<Vec<_>>().join(",")])
            .args(["--map-images", &MAP_IMAGES.to_string()])
            .args(["--smoothgrad-samples", &shape.settings.smoothgrad_samples.to_string()])
            .args(["--smoothgrad-spread", &shape.settings.smoothgrad_spread.to_string()])
            .args(["--gradient-shap-samples", &shape.settings.gradient_shap_samples.to_string()])
            .output()
            .map_err(|e| format!("{python}: {e}"))?;
        if !out.status.success() {
            let stderr = String::from_utf8_lossy(&out.stderr);
            return Err(format!("{python} {}: {}", script.display(), stderr.lines().last().unwrap_or("failed")));
        }
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout.lines().rfind(|l| l.trim_start().starts_with('{')).unwrap_or("");
        let line: TorchLine =
            serde_json::from_str(line).map_err(|e| format!("{}: unreadable answer: {e}", script.display()))?;
        let phases = Rates {
            train: line.train_images_per_s,
            forward: line.forward_images_per_s,
            gradient: line.gradient_images_per_s,
        };
        rates.push((phases, line.maps_per_s));
    }
    Ok(rates)
}

/// A Markdown table: one line per model, grid's and torch's images per
/// second and their ratio for each phase.
pub fn markdown(context: &super::BenchContext, bench: &ResNetBench) -> String {
    let mut out = format!(
        "{} · commit {} · {} · device {} · grid {} · {} threads\n\n",
        context.date, context.commit, context.machine, context.device, context.grid, bench.threads
    );
    if let Some(note) = &bench.torch_note {
        out.push_str(&format!("torch not measured: {note}\n\n"));
    }
    out.push_str(
        "| model | ResNet | side | batch | train: grid | torch | ratio | forward: grid | torch | ratio | gradient: grid | torch | ratio |\n\
         |---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    let cell = |rate: Option<f64>| rate.map_or("–".to_string(), |r| format!("{r:.1}"));
    let bold = |ratio: Option<f64>| ratio.map_or("–".to_string(), |r| format!("**{r:.2}**"));
    let phase = |pick: fn(&Rates) -> f64| move |r: &ResNetRow| (pick(&r.grid), r.torch.as_ref().map(pick));
    let (train, forward, gradient) = (phase(|r| r.train), phase(|r| r.forward), phase(|r| r.gradient));
    for (i, row) in bench.rows.iter().enumerate() {
        let s = &row.shape;
        let torch = |pick: fn(&Rates) -> f64| row.torch.as_ref().map(pick);
        out.push_str(&format!(
            "| {} | ResNet-{} width {} {} stem | {} | {} | {:.1} | {} | {} | {:.1} | {} | {} | {:.1} | {} | {} |\n",
            s.model,
            s.depth(),
            s.config.width,
            s.stem(),
            s.side,
            s.batch,
            row.grid.train,
            cell(torch(|r| r.train)),
            bold(bench.ratio(i, train)),
            row.grid.forward,
            cell(torch(|r| r.forward)),
            bold(bench.ratio(i, forward)),
            row.grid.gradient,
            cell(torch(|r| r.gradient)),
            bold(bench.ratio(i, gradient)),
        ));
    }
    if !bench.sittings.is_empty() && bench.torch_note.is_none() {
        out.push_str(&format!(
            "\nRates: medians over {} sittings (grid, then torch, in turn); ratios: the median of each \
             sitting's. Each sitting's ratios, training / forward / gradient:\n\n\
             | model | {} |\n|---|{}\n",
            bench.sittings.len(),
            (1..=bench.sittings.len()).map(|n| format!("sitting {n}")).collect::<Vec<_>>().join(" | "),
            "---|".repeat(bench.sittings.len()),
        ));
        for (i, row) in bench.rows.iter().enumerate() {
            let each = bench.sittings.iter().map(|rows| {
                let r = &rows[i];
                let of = |pick: fn(&Rates) -> f64| r.torch.as_ref().map_or(f64::NAN, |t| pick(&r.grid) / pick(t));
                format!("{:.2} / {:.2} / {:.2}", of(|r| r.train), of(|r| r.forward), of(|r| r.gradient))
            });
            out.push_str(&format!("| {} | {} |\n", row.shape.model, each.collect::<Vec<_>>().join(" | ")));
        }
    }
    out.push_str(&format!(
        "\nShare of the machine's ceiling (measured multiply-adds, {} threads: {:.1} GFLOP/s), each phase's \
         multiply-adds counted as forward passes' worth (training 3, forward 1, gradient 2):\n\n\
         | model | side | GMAC per image | train: grid | torch | forward: grid | torch | gradient: grid | torch |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        bench.threads, bench.peak
    ));
    let share = |work: Work, shape: &ResNetShape, rate: Option<f64>| {
        rate.map_or("–".to_string(), |r| format!("{:.0}%", 100.0 * work.gflops(shape, r) / bench.peak))
    };
    for row in &bench.rows {
        let s = &row.shape;
        let torch = |pick: fn(&Rates) -> f64| row.torch.as_ref().map(pick);
        out.push_str(&format!(
            "| {} | {} | {:.3} | {} | {} | {} | {} | {} | {} |\n",
            s.model,
            s.side,
            s.config.macs_per_image(s.side) / 1e9,
            share(Work::Train, s, Some(row.grid.train)),
            share(Work::Train, s, torch(|r| r.train)),
            share(Work::Forward, s, Some(row.grid.forward)),
            share(Work::Forward, s, torch(|r| r.forward)),
            share(Work::Gradient, s, Some(row.grid.gradient)),
            share(Work::Gradient, s, torch(|r| r.gradient)),
        ));
    }
    if bench.rows.iter().any(|r| !r.maps.is_empty()) {
        out.push_str(&format!(
            "\nMaps per second, {MAP_IMAGES} images a pass (each its own target), the grid's settings; \
             each side's share of the ceiling:\n\n\
             | model | side | method | grid | Captum | grid ÷ Captum | grid of ceiling | Captum of ceiling |\n\
             |---|---:|---|---:|---:|---:|---:|---:|\n"
        ));
        for (i, row) in bench.rows.iter().enumerate() {
            for (m, map) in row.maps.iter().enumerate() {
                let work = Work::Map(map.method);
                let captum = |r: &ResNetRow| (r.maps[m].grid, r.maps[m].captum);
                out.push_str(&format!(
                    "| {} | {} | {} | {:.2} | {} | {} | {} | {} |\n",
                    row.shape.model,
                    row.shape.side,
                    map.method.name(),
                    map.grid,
                    map.captum.map_or("–".to_string(), |c| format!("{c:.2}")),
                    bold(bench.ratio(i, captum)),
                    share(work, &row.shape, Some(map.grid)),
                    share(work, &row.shape, map.captum),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape() -> ResNetShape {
        ResNetShape {
            model: "r".into(),
            config: ResNetConfig { depth: Depth::R18, width: 2, stem: Stem::Small, classes: 2 },
            side: 8,
            batch: 4,
            maps: vec![PixelMethod::Gradient, PixelMethod::GradCam],
            settings: PixelSettings { smoothgrad_samples: 2, gradient_shap_samples: 2, ..PixelSettings::default() },
        }
    }

    fn context() -> super::super::BenchContext {
        super::super::BenchContext {
            date: "d".into(),
            commit: "c".into(),
            machine: "m".into(),
            device: "cpu".into(),
            grid: "g".into(),
        }
    }

    /// Every phase runs and gives a positive, finite rate on the CPU
    /// backend.
    #[test]
    fn every_phase_times_a_tiny_resnet() {
        let (rates, maps) = time::<grid_core::backend::CpuAutodiff>(&shape(), &Default::default());
        assert_eq!(maps.len(), 2, "one rate per map method");
        for rate in [rates.train, rates.forward, rates.gradient].into_iter().chain(maps) {
            assert!(rate.is_finite() && rate > 0.0, "{rates:?}");
        }
    }

    /// A map's work is its passes: SmoothGrad's and GradientSHAP's samples
    /// each a gradient, GradCAM one forward pass.
    #[test]
    fn a_maps_work_counts_its_passes() {
        let settings = PixelSettings { smoothgrad_samples: 5, gradient_shap_samples: 7, ..PixelSettings::default() };
        let passes = |method| Work::Map(method).passes(&settings);
        assert_eq!(passes(PixelMethod::Gradient), Work::Gradient.passes(&settings));
        assert_eq!(passes(PixelMethod::SmoothGrad), 10.0);
        assert_eq!(passes(PixelMethod::GradientShap), 14.0);
        assert_eq!(passes(PixelMethod::GradCam), Work::Forward.passes(&settings));
        assert_eq!(Work::Train.passes(&settings), 3.0);
    }

    /// The table gives each phase's ratio to torch, and says why torch's
    /// columns are empty when they are.
    #[test]
    fn the_table_gives_the_ratios() {
        let context = context();
        let grid = Rates { train: 10.0, forward: 30.0, gradient: 20.0 };
        let torch = Rates { train: 20.0, forward: 30.0, gradient: 10.0 };
        let maps = vec![MapRate { method: PixelMethod::Gradient, grid: 30.0, captum: Some(10.0) }];
        let row = ResNetRow { shape: shape(), grid, torch: Some(torch), maps };
        // A ceiling at which grid's 30 forward passes a second are 100%.
        let peak = 2.0 * shape().config.macs_per_image(8) * 30.0 / 1e9;
        let bench = ResNetBench { threads: 2, peak, rows: vec![row], torch_note: None, sittings: Vec::new() };
        let table = markdown(&context, &bench);
        assert!(table.contains("| r | ResNet-18 width 2 small stem | 8 | 4 | 10.0 | 20.0 | **0.50** | 30.0 | 30.0 | **1.00** | 20.0 | 10.0 | **2.00** |"), "{table}");
        assert!(table.contains("| r | 8 | gradient | 30.00 | 10.00 | **3.00** | 200% | 67% |"), "{table}");
        // Training makes three forward passes' worth, a gradient two.
        let gmacs = shape().config.macs_per_image(8) / 1e9;
        let shares = format!("| r | 8 | {gmacs:.3} | 100% | 200% | 100% | 100% | 133% | 67% |");
        assert!(table.contains(&shares), "{shares} in {table}");
        let bench = ResNetBench {
            threads: 2,
            peak: 1.0,
            rows: vec![ResNetRow { shape: shape(), grid, torch: None, maps: Vec::new() }],
            torch_note: Some("--python none".into()),
            sittings: Vec::new(),
        };
        let table = markdown(&context, &bench);
        assert!(table.contains("torch not measured: --python none") && table.contains("| 10.0 | – | – |"), "{table}");
        assert!(table.contains("% | – | ") && !table.contains("Maps per second"), "{table}");
    }

    /// Over several sittings each rate is its median, each ratio the median
    /// of the sittings' own ratios (not the ratio of the medians), and each
    /// sitting's ratios are listed.
    #[test]
    fn sittings_give_medians_of_their_own_ratios() {
        let context = context();
        // The machine ran fast, slow, then middling: both sides moved with it.
        let sitting = |grid: f64, torch: f64, captum: f64| {
            let maps = vec![MapRate { method: PixelMethod::Gradient, grid, captum: Some(captum) }];
            let rates = |r: f64| Rates { train: r, forward: 2.0 * r, gradient: r };
            vec![ResNetRow { shape: shape(), grid: rates(grid), torch: Some(rates(torch)), maps }]
        };
        let each = vec![sitting(40.0, 32.0, 20.0), sitting(20.0, 25.0, 10.0), sitting(30.0, 30.0, 30.0)];
        let rows = median_rows(&each);
        assert_eq!(rows[0].grid, Rates { train: 30.0, forward: 60.0, gradient: 30.0 });
        assert_eq!(rows[0].torch, Some(Rates { train: 30.0, forward: 60.0, gradient: 30.0 }));
        assert_eq!((rows[0].maps[0].grid, rows[0].maps[0].captum), (30.0, Some(20.0)));
        let bench = ResNetBench { threads: 2, peak: 1.0, rows, torch_note: None, sittings: each };
        // Ratios 1.25, 0.80, 1.00: median 1.00 (the medians' ratio is 1.00 too,
        // but for the maps 2.00, 2.00, 1.00 give 2.00 where 30 ÷ 20 is 1.50).
        let table = markdown(&context, &bench);
        assert!(
            table.contains("| 30.0 | 30.0 | **1.00** | 60.0 | 60.0 | **1.00** | 30.0 | 30.0 | **1.00** |"),
            "{table}"
        );
        assert!(table.contains("| r | 8 | gradient | 30.00 | 20.00 | **2.00** |"), "{table}");
        assert!(table.contains("medians over 3 sittings"), "{table}");
        assert!(table.contains("| r | 1.25 / 1.25 / 1.25 | 0.80 / 0.80 / 0.80 | 1.00 / 1.00 / 1.00 |"), "{table}");
        assert_eq!(median(vec![3.0, 1.0, 2.0, 10.0]), Some(2.5));
        assert_eq!(median(Vec::new()), None);
    }
}
