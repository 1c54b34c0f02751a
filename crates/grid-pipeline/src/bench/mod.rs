//! `grid bench`: attributions per second for method configs on the trained
//! shortcut models of a grid, so that speed claims are measured, dated and
//! reproducible rather than asserted in a timed test.
//!
//! Models and test examples come from the cache (run the grid first); nothing is
//! written to the cache. Each (model, method) first explains one batch untimed
//! (CUDA autotuning, allocator warm-up), then the timed examples: pass after
//! pass until a second has gone by (at most 50), the fastest pass reported, so
//! that a method explaining its examples in milliseconds is not timed once in
//! a scheduler's noise.

pub mod gemm;
pub mod resnet;

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use burn::tensor::backend::AutodiffBackend;
use serde::Serialize;

use crate::dag::Plan;
use crate::step_kind::StepKind;
use crate::steps::Work;
use crate::steps::attribute::{self, Options, Prepared};
use grid_cache::Cache;
use grid_core::backend::Compute;
use grid_core::buckets::Buckets;
use grid_core::model::checkpoint;
use grid_core::model::shapes::ShapeLog;
use grid_methods::salience::{Method, ModelTraits};

/// One measured (model, method) pair.
#[derive(Debug, Clone, Serialize)]
pub struct BenchRow {
    /// The attribute step's cell, `dataset/shortcut/model`.
    pub cell: String,
    pub architecture: String,
    pub method: String,
    /// Examples of one pass.
    pub examples: usize,
    pub mean_tokens: f64,
    /// Passes timed; `seconds` is the fastest one's.
    pub passes: usize,
    pub seconds: f64,
    pub examples_per_second: f64,
}

/// Timed passes go on until this much time has gone by (or [`MAX_PASSES`]).
const MIN_TIMED_SECONDS: f64 = 1.0;
const MAX_PASSES: usize = 50;

/// Where and when the numbers were taken.
#[derive(Debug, Clone, Serialize)]
pub struct BenchContext {
    pub date: String,
    pub commit: String,
    pub machine: String,
    pub device: String,
    pub grid: String,
}

#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Methods to time; `None` times the grid's own.
    pub methods: Option<Vec<Method>>,
    /// Timed examples per (model, method).
    pub examples: usize,
    /// Only cells whose label contains this (e.g. `/st/`).
    pub filter: Option<String>,
    /// Overrides of the grid's `internal_batch_size` / `perturbations_per_eval`.
    pub internal_batch_size: Option<usize>,
    pub perturbations_per_eval: Option<usize>,
    /// Writes every timed example (ids, special flags, prediction, scores) here as
    /// JSON lines, so that another tool can explain the same inputs and compare.
    pub dump: Option<std::path::PathBuf>,
}

/// One explained example as `--dump` writes it.
#[derive(Debug, Clone, Serialize)]
pub struct DumpedExample<'a> {
    pub cell: &'a str,
    pub method: String,
    pub index: usize,
    pub ids: &'a [u32],
    pub special: Vec<bool>,
    pub predicted: u32,
    pub scores: &'a [f32],
    pub completeness_gap: Option<f32>,
}

pub fn run(plan: &Plan, cache: &Cache, compute: Compute, options: &BenchOptions) -> Result<Vec<BenchRow>> {
    let mut rows = Vec::new();
    let mut seen = Vec::new();
    let mut dump = match &options.dump {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
        )),
        None => None,
    };
    for step in plan.steps.iter().filter(|s| s.kind == StepKind::Attribute) {
        let Work::Attribute(template) = &step.work else { continue };
        let (trained, synth) = (&plan.steps[step.inputs[0]], &plan.steps[step.inputs[1]]);
        if seen.contains(&trained.key) {
            continue;
        }
        let cell = trained.label.trim_start_matches("train/").to_string();
        if options.filter.as_deref().is_some_and(|f| !trained.label.contains(f)) {
            continue;
        }
        seen.push(trained.key.clone());
        if cache.lookup(trained.kind, &trained.key)?.is_none() || cache.lookup(synth.kind, &synth.key)?.is_none() {
            eprintln!("bench: {cell}: model or test set not in the cache (run the grid first); skipped");
            continue;
        }
        let model_dir = cache.step_dir(trained.kind, &trained.key);
        let synth_dir = cache.step_dir(synth.kind, &synth.key);
        let methods: Vec<Method> = match &options.methods {
            Some(m) => m.clone(),
            None => plan
                .steps
                .iter()
                .filter(|s| s.inputs.first() == Some(&step.inputs[0]))
                .filter_map(|s| match &s.work {
                    Work::Attribute(o) => Some(o.method),
                    _ => None,
                })
                .collect(),
        };
        let template = Options {
            sample: options.examples,
            internal_batch_size: options.internal_batch_size.unwrap_or(template.internal_batch_size),
            perturbations_per_eval: options.perturbations_per_eval.unwrap_or(template.perturbations_per_eval),
            ..template.clone()
        };
        grid_core::with_autodiff_backend!(compute, |B, device| {
            let model = Bench { cell: &cell, model_dir: &model_dir, synth_dir: &synth_dir, buckets: compute.buckets };
            bench_model::<B>(&model, &template, &methods, &device, &mut rows, dump.as_mut())
        })?;
    }
    if rows.is_empty() {
        bail!("nothing was measured: no cached shortcut model matched");
    }
    Ok(rows)
}

/// One cached model to measure, and how its batches are shaped.
struct Bench<'a> {
    cell: &'a str,
    model_dir: &'a Path,
    synth_dir: &'a Path,
    buckets: Buckets,
}

fn bench_model<B: AutodiffBackend>(
    model: &Bench<'_>,
    template: &Options,
    methods: &[Method],
    device: &B::Device,
    rows: &mut Vec<BenchRow>,
    mut dump: Option<&mut std::io::BufWriter<std::fs::File>>,
) -> Result<()> {
    let Bench { cell, model_dir, synth_dir, buckets } = *model;
    let mut checkpoint = checkpoint::load::<B>(model_dir, device)?;
    checkpoint.model = checkpoint.model.frozen();
    let test = crate::steps::synth::load_test(synth_dir, template.test_set)?;
    let (prepared, _) = attribute::prepare(&checkpoint, &test, template, buckets, device);
    let architecture = checkpoint.config.architecture();
    let traits: ModelTraits = architecture.traits();
    let mean_tokens = prepared.iter().map(|p| p.encoded.ids.len()).sum::<usize>() as f64 / prepared.len().max(1) as f64;
    for &method in methods {
        if method.unsupported_reason(traits).is_some() {
            continue;
        }
        let options = Options { method, ..template.clone() };
        let mut warm: Vec<Prepared> = prepared.iter().take(options.batch_size).cloned().collect();
        attribute::explain_all(&checkpoint, &options, (buckets, &ShapeLog::default()), &mut warm, device, |_| {})
            .with_context(|| format!("{cell}: {method}"))?;
        let (mut timed, mut seconds, mut passes, mut total) = (Vec::new(), f64::INFINITY, 0, 0.0);
        while passes == 0 || (total < MIN_TIMED_SECONDS && passes < MAX_PASSES) {
            let mut pass: Vec<Prepared> = prepared.clone();
            let started = Instant::now();
            attribute::explain_all(&checkpoint, &options, (buckets, &ShapeLog::default()), &mut pass, device, |_| {})
                .with_context(|| format!("{cell}: {method}"))?;
            let elapsed = started.elapsed().as_secs_f64();
            (seconds, total, passes) = (seconds.min(elapsed), total + elapsed, passes + 1);
            timed = pass;
        }
        let row = BenchRow {
            cell: cell.to_string(),
            architecture: architecture.name().to_string(),
            method: method.to_string(),
            examples: timed.len(),
            mean_tokens,
            passes,
            seconds,
            examples_per_second: timed.len() as f64 / seconds.max(1e-9),
        };
        eprintln!("bench: {} {} {:.2} examples/s", row.cell, row.method, row.examples_per_second);
        if let Some(out) = dump.as_mut() {
            use std::io::Write;
            for p in &timed {
                let line = DumpedExample {
                    cell,
                    method: method.to_string(),
                    index: p.record.index,
                    ids: &p.encoded.ids,
                    special: p.encoded.word_of_token.iter().map(Option::is_none).collect(),
                    predicted: p.record.predicted,
                    scores: &p.record.scores,
                    completeness_gap: p.record.completeness_gap,
                };
                serde_json::to_writer(&mut **out, &line)?;
                writeln!(out)?;
            }
            out.flush()?;
        }
        rows.push(row);
    }
    Ok(())
}

/// Date (UTC), commit (`GRID_COMMIT` or `git rev-parse`), CPU model and threads.
pub fn context(compute: Compute, grid: &Path) -> BenchContext {
    let commit = std::env::var("GRID_COMMIT").ok().or_else(|| {
        let out = std::process::Command::new("git").args(["rev-parse", "--short", "HEAD"]).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    });
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    BenchContext {
        date: chrono::Utc::now().format("%Y-%m-%d %H:%M UTC").to_string(),
        commit: commit.unwrap_or_else(|| "unknown".into()),
        machine: format!("{cpu}, {threads} threads"),
        device: format!("{compute}"),
        grid: grid.display().to_string(),
    }
}

/// A Markdown table of the rows, headed by the context.
pub fn markdown(context: &BenchContext, rows: &[BenchRow]) -> String {
    let mut out = format!(
        "{} · commit {} · {} · device {} · grid {}\n\n| cell | architecture | method | examples | mean tokens | passes | seconds (fastest) | examples/s |\n|---|---|---|---:|---:|---:|---:|---:|\n",
        context.date, context.commit, context.machine, context.device, context.grid
    );
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {:.1} | {} | {:.3} | {:.2} |\n",
            r.cell, r.architecture, r.method, r.examples, r.mean_tokens, r.passes, r.seconds, r.examples_per_second
        ));
    }
    out
}
