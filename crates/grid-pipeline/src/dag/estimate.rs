//! `grid plan --estimate`: how long the steps a cache lacks will take, on this
//! CPU and on a GPU, and the disk they will add, before anything runs.
//!
//! The cost model. Every step's work is counted in multiply-adds of the
//! model's forward pass (a backward pass counts as two forwards):
//! - `train`: `max_steps × batch_size` examples, forward and backward, plus a
//!   forward over the validation split every `eval_every` steps;
//! - `attribute`: the sampled test examples × the method's passes per example
//!   ([`Method::forward_passes`]: 3 for a gradient, `3m + 1` for IG with `m`
//!   steps, `n + 1` for LIME or KernelSHAP with `n` samples, one per token
//!   for occlusion);
//! - `erasure`: the sampled examples × its sequences per example
//!   ([`erasure::forward_passes`]); `verify` and `evaluate`: a forward over the
//!   test examples (five times for verify: two models, three test sets);
//! - an example is `min(max_length, tokens)` tokens, the tokens counted from
//!   the dataset's mean words per test example
//!   ([`ArchitectureSpec::tokens_for_words`]).
//!
//! Work becomes seconds through a device's rate and a fixed cost per pass (a
//! small model is bound by the per-operation cost, not arithmetic). The prior
//! rates ([`Prior`]) were measured: the CPU's on a 2-core AMD EPYC (Flex,
//! BERT of MiniLM's shape and the quickstart; a ResNet's on a 2-core Intel
//! Xeon, [`CPU_CONVOLUTIONS`]), the GPU's on an H200 (BERT-base through
//! LibTorch, BENCHMARKS "GPU (issue 20)").
//!
//! What the cache measured overrides the prior: each finished step of the plan
//! has its seconds and device in its manifest. For a missing step the ratio
//! measured ÷ predicted of the finished steps of its group (the same kind,
//! model and method) scales the prior; failing that, the ratio of its kind;
//! and a training run's rate recorded for its model shape (`placement`) gives
//! its seconds directly. A missing step is "measured" when its own group was.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::{Deserialize, Serialize};

mod images;

use super::Plan;
use super::executor::attempts::Earlier;
use crate::spec::DatasetSpec;
use crate::step_kind::StepKind;
use crate::steps::Work;
use crate::steps::corpus::{self, ResolvedFiles};
use grid_cache::Cache;
use grid_core::backend::placement::Measurements;
use grid_methods::metrics::erasure;

/// A model whose size cannot be known before its step runs (a checkpoint not
/// yet downloaded) is assumed BERT-base's size: 85 M multiply-adds per token.
const ASSUMED_MACS_PER_TOKEN: f64 = 85.0e6;

/// The device an estimate speaks of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Target {
    /// This machine's CPU, with the threads the run would use.
    Cpu,
    /// A CUDA GPU of the H100 / H200 class.
    Gpu,
}

impl Target {
    pub const BOTH: [Target; 2] = [Target::Cpu, Target::Gpu];

    /// The device a manifest's `device` names.
    fn of_manifest(device: &str) -> Target {
        if device.starts_with("cuda") || device.starts_with("gpu") { Target::Gpu } else { Target::Cpu }
    }
}

/// The prior: a device's rate for each phase and its cost per pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Prior {
    /// Multiply-adds per second while training (forward and backward).
    pub train_macs_per_second: f64,
    /// Multiply-adds per second in inference passes and attribution.
    pub infer_macs_per_second: f64,
    /// Fixed seconds per optimiser step.
    pub seconds_per_optimizer_step: f64,
    /// Fixed seconds per example and forward pass.
    pub seconds_per_example_pass: f64,
    /// How fast a convolutional network's multiply-adds go.
    pub convolutions: ConvolutionRate,
    /// The threads the rates above were scaled to.
    pub threads: usize,
}

/// A ResNet's multiply-adds per second and thread through grid's kernels
/// (`grid_kernels::conv`, `batch_norm`, `max_pool`), training and in
/// inference passes (maps, evaluations), by the channels of its first
/// stage, fitted on 2 cores of an Intel Xeon (AVX-512) so that a run's
/// wall time is its estimate: `images_quick.toml` (width 8, 32 pixels, `-j
/// 2`, 40.3 s) and a cut of `images_scaled.toml` (width 32 at 64 pixels, `-j
/// 1`: 40 training steps 22.1 s, 30 maps 22.7 s). They are 21–57% of that
/// CPU's multiply-add ceiling, as `grid bench --resnet`'s shares at 32
/// pixels are (BENCHMARKS, "The convolution prior fitted to wall time").
/// An AMD EPYC (Zen 4) ran the same steps about 1.4 times slower a thread.
const CPU_CONVOLUTIONS: &[WidthRate] = &[
    WidthRate { width: 8.0, train: 24.4e9, infer: 28.8e9 },
    WidthRate { width: 16.0, train: 39.6e9, infer: 43.4e9 },
    WidthRate { width: 32.0, train: 50.8e9, infer: 58.8e9 },
    WidthRate { width: 64.0, train: 58.8e9, infer: 66.4e9 },
];

/// Multiply-adds per second and thread of a ResNet whose first stage has
/// `width` channels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WidthRate {
    pub width: f64,
    pub train: f64,
    pub infer: f64,
}

/// Which of a prior's rates prices some work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Train,
    Infer,
}

/// A convolution's multiply-adds do not run at a GEMM's rate on a CPU: a
/// narrow layer (8 to 64 channels) gives its products small operands, and
/// the rate climbs with the channels. So the rate of a ResNet is looked up
/// by the channels of its first stage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ConvolutionRate {
    /// At the GEMM rates above (a GPU's: unchecked, no ResNet has run on one).
    AsGemm,
    /// Per thread, in rising widths: interpolated on a log scale of the
    /// channels, and the nearest point's rate outside the measured ones.
    ByWidth(&'static [WidthRate]),
}

impl ConvolutionRate {
    /// Multiply-adds per second in `phase` for a ResNet whose first stage
    /// has `width` channels, with `threads` threads; `gemm` the rate of the
    /// phase.
    fn macs_per_second(&self, width: f64, threads: usize, phase: Phase, gemm: f64) -> f64 {
        let ConvolutionRate::ByWidth(points) = self else { return gemm };
        let rate = |p: &WidthRate| match phase {
            Phase::Train => p.train,
            Phase::Infer => p.infer,
        };
        let per_thread = match points.iter().position(|p| p.width >= width) {
            None => points.last().map_or(gemm, rate),
            Some(0) => rate(&points[0]),
            Some(i) => {
                let (p0, p1) = (&points[i - 1], &points[i]);
                let t = (width.ln() - p0.width.ln()) / (p1.width.ln() - p0.width.ln());
                (rate(p0).ln() + t * (rate(p1).ln() - rate(p0).ln())).exp()
            }
        };
        per_thread * threads.max(1) as f64
    }
}

impl Prior {
    /// Flex on `threads` cores: 50 G multiply-adds per second and core,
    /// 0.57 ms per optimiser step, 0.06 µs per example pass. Fitted (least
    /// squares, each step's share of the wall time) to a release quickstart
    /// (tiny BERT, BiLSTM; 109.5 s) and a MiniLM subset (121.7 s) on 2 cores
    /// of an Intel Xeon with AVX-512, as [`CPU_CONVOLUTIONS`] was: 59 G,
    /// lowered toward the IMDB BiLSTM at the paper's recipe (41 G on
    /// 500-word reviews) so that a long recurrent run is not priced short
    /// (BENCHMARKS, "The text prior fitted again"). The first fit, on an
    /// AVX2-only AMD EPYC and an older build (22 G, 1.5 ms, 2 µs), read
    /// 2.6–2.7× these runs' wall time; on a slower CPU this one reads short
    /// until the cache's own measurements price the steps.
    ///
    /// A ResNet's convolutions run at [`CPU_CONVOLUTIONS`].
    pub fn cpu(threads: usize) -> Prior {
        let rate = 5.0e10 * threads.max(1) as f64;
        Prior {
            train_macs_per_second: rate,
            infer_macs_per_second: rate,
            seconds_per_optimizer_step: 5.7e-4,
            seconds_per_example_pass: 6.0e-8,
            convolutions: ConvolutionRate::ByWidth(CPU_CONVOLUTIONS),
            threads,
        }
    }

    /// An H200 through LibTorch: BERT-base trained at 156 examples/s (1.2 T
    /// multiply-adds/s) and ran IG-100 at 18 examples/s (13 T/s); a tiny
    /// model's training step still took 15–24 ms (launch-bound).
    pub fn gpu() -> Prior {
        Prior {
            train_macs_per_second: 1.2e12,
            infer_macs_per_second: 1.0e13,
            seconds_per_optimizer_step: 20.0e-3,
            seconds_per_example_pass: 20.0e-6,
            convolutions: ConvolutionRate::AsGemm,
            threads: 1,
        }
    }

    fn of(target: Target, threads: usize) -> Prior {
        match target {
            Target::Cpu => Prior::cpu(threads),
            Target::Gpu => Prior::gpu(),
        }
    }
}

/// A step's work, in the units the prior prices.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
struct StepWork {
    train_macs: f64,
    optimizer_steps: f64,
    infer_macs: f64,
    example_passes: f64,
    /// Seconds that do not depend on the device (reading, writing, sampling).
    fixed_seconds: f64,
    bytes: f64,
    /// A convolutional network's multiply-adds, priced at the prior's
    /// [`ConvolutionRate`] for `conv_width` (absent from manifests written
    /// before ResNets were priced apart: zero).
    #[serde(default)]
    conv_train_macs: f64,
    #[serde(default)]
    conv_infer_macs: f64,
    /// The network's first-stage channels.
    #[serde(default)]
    conv_width: f64,
}

impl StepWork {
    fn seconds(&self, prior: &Prior) -> f64 {
        let conv = |macs: f64, phase: Phase, gemm: f64| {
            if macs == 0.0 {
                return 0.0;
            }
            macs / prior.convolutions.macs_per_second(self.conv_width, prior.threads, phase, gemm)
        };
        self.train_macs / prior.train_macs_per_second
            + self.optimizer_steps * prior.seconds_per_optimizer_step
            + self.infer_macs / prior.infer_macs_per_second
            + self.example_passes * prior.seconds_per_example_pass
            + self.fixed_seconds
            + conv(self.conv_train_macs, Phase::Train, prior.train_macs_per_second)
            + conv(self.conv_infer_macs, Phase::Infer, prior.infer_macs_per_second)
    }
}

/// What the estimate knows of a dataset: split sizes and words per example.
#[derive(Debug, Clone, Copy, PartialEq)]
struct DataStats {
    train: f64,
    validation: f64,
    test: f64,
    mean_words: f64,
    mean_chars: f64,
}

impl DataStats {
    /// A dataset that could not be read before its step runs (a Hub file not
    /// yet downloaded): SST-2's sizes.
    const ASSUMED: DataStats =
        DataStats { train: 60_000.0, validation: 872.0, test: 1_821.0, mean_words: 20.0, mean_chars: 105.0 };

    fn of(corpus: &grid_core::data::Corpus) -> DataStats {
        let split = &corpus.test;
        let n = split.len().max(1) as f64;
        let words: usize = split.iter().map(|e| grid_core::data::words(&e.text).len()).sum();
        let chars: usize = split.iter().map(|e| e.text.len()).sum();
        DataStats {
            train: corpus.train.len() as f64,
            validation: corpus.validation.len() as f64,
            test: corpus.test.len() as f64,
            mean_words: words as f64 / n,
            mean_chars: chars as f64 / n,
        }
    }

    fn examples(&self) -> f64 {
        self.train + self.validation + self.test
    }
}

/// One step kind's share of the estimate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KindLine {
    pub kind: StepKind,
    /// Steps of this kind the cache lacks.
    pub missing: usize,
    /// Of those, how many are priced by measurements of their own group.
    pub measured: usize,
    pub cpu_seconds: f64,
    pub gpu_seconds: f64,
    pub bytes: u64,
}

/// Per device: the sum of the missing steps' seconds (one after another, as a
/// local run's compute-bound steps share the machine) and the longest chain of
/// them (the least wall time with a Slurm node per step).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DeviceLine {
    pub target: Target,
    pub seconds: f64,
    pub critical_path_seconds: f64,
}

/// `grid plan --estimate`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    pub grid: String,
    pub steps: usize,
    pub missing: usize,
    /// Missing steps priced by measurements of their own group.
    pub measured: usize,
    /// The CPU threads the CPU line assumes.
    pub cpu_threads: usize,
    pub devices: Vec<DeviceLine>,
    pub kinds: Vec<KindLine>,
    /// The disk the missing steps will add to the cache.
    pub bytes: u64,
    /// Assumptions the estimate had to make, one sentence each.
    pub notes: Vec<String>,
}

impl Estimate {
    pub fn device(&self, target: Target) -> &DeviceLine {
        self.devices.iter().find(|d| d.target == target).expect("an estimate covers both devices")
    }
}

/// One missing step, priced.
#[derive(Debug, Clone, PartialEq)]
struct Priced {
    index: usize,
    seconds: HashMap<Target, f64>,
    bytes: f64,
    measured: bool,
}

/// What a finished step recorded ([`work_record`]): the group whose
/// missing steps it prices, its work, and the CPU it had.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct WorkRecord {
    group: String,
    work: StepWork,
    /// Absent in manifests written before it existed.
    #[serde(default, flatten)]
    run: Option<RunRecord>,
}

/// The CPU a step had while it ran.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// rayon's threads in its process (`RAYON_NUM_THREADS`, or every core).
    pub threads: usize,
    /// Seconds its threads waited for a CPU that other processes held
    /// ([`crate::dag::executor::cpu_wait`]); `None` where the system does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waited_seconds: Option<f64>,
    /// Seconds its process was stopped (`SIGSTOP`, Ctrl-Z;
    /// [`crate::dag::executor::pauses`]); `None` where the system does not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_seconds: Option<f64>,
    /// Interrupted attempts before the one that finished it (a training
    /// resumed from its snapshots), whose time is part of its work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier: Option<Earlier>,
}

impl RunRecord {
    /// The seconds a step measured at `seconds` (its share of the wall, in
    /// the attempt that finished it) would have taken with its threads to
    /// itself, over all its attempts: less the time its process was stopped
    /// (measured exactly), then less what its threads waited (an average over
    /// them), never below a tenth of what it ran.
    fn unhindered(&self, seconds: f64) -> f64 {
        let earlier = self.earlier.unwrap_or_default();
        let seconds = seconds + earlier.seconds;
        let paused = self.paused_seconds.unwrap_or(0.0) + earlier.paused_seconds;
        let ran = (seconds - paused.max(0.0)).max(0.01 * seconds);
        let waited = self.waited_seconds.unwrap_or(0.0) + earlier.waited_seconds;
        ran - waited.clamp(0.0, 0.9 * ran)
    }
}

/// What step `index` of `plan` computes, in the units the cost model prices,
/// for its manifest: later estimates, of this grid or another, learn from it.
/// Its inputs are in `cache` (the step has run).
pub fn work_record(plan: &Plan, index: usize, cache: &Cache, run: RunRecord) -> Option<serde_json::Value> {
    // A corpus step's own statistics are not in the cache yet, and reading
    // its data again to record a second's work is not worth it.
    if plan.steps[index].kind == StepKind::Corpus {
        return None;
    }
    if let Work::Image(work) = &plan.steps[index].work {
        let work = images::step_work(plan, index, work, images::counts(plan, index));
        let record = WorkRecord { group: group(plan, index), work, run: Some(run) };
        return serde_json::to_value(record).ok();
    }
    let mut notes = Vec::new();
    // Scores, agreements and reports cost the same whatever their data: no
    // need to read it after each of them (a grid has a thousand scores).
    let inputs = if reads_data(plan.steps[index].kind) {
        let corpus = ancestor(plan, index, StepKind::Corpus)?;
        Inputs {
            data: HashMap::from([(corpus, corpus_stats(plan, corpus, cache).ok()?)]),
            macs: ancestor(plan, index, StepKind::Train)
                .map(|train| (train, macs_per_token(plan, train, &mut notes)))
                .into_iter()
                .collect(),
            images: HashMap::new(),
        }
    } else {
        Inputs { data: HashMap::new(), macs: HashMap::new(), images: HashMap::new() }
    };
    let record = WorkRecord { group: group(plan, index), work: step_work(plan, index, &inputs), run: Some(run) };
    serde_json::to_value(record).ok()
}

/// Whether a step kind's work depends on its dataset and model ([`step_work`]).
fn reads_data(kind: StepKind) -> bool {
    match kind {
        StepKind::Corpus
        | StepKind::Synth
        | StepKind::Train
        | StepKind::Verify
        | StepKind::Evaluate
        | StepKind::Attribute
        | StepKind::Erasure => true,
        StepKind::Agreement | StepKind::Score | StepKind::Report | StepKind::Crowd => false,
    }
}

/// One finished step as the estimate learns from it.
struct Finished {
    target: Target,
    group: String,
    kind: StepKind,
    /// Its share of the wall time ([`wall_shares`]), plus its interrupted
    /// attempts' time, less what its threads waited for a CPU held by other
    /// processes ([`RunRecord::unhindered`]).
    seconds: f64,
    /// The threads it ran on, where recorded: its measured time is compared
    /// with the prior's for them, not for the run being estimated.
    threads: Option<usize>,
    work: StepWork,
    bytes: f64,
}

/// Every finished step in `cache` whose work is known: recorded in its
/// manifest, or (a manifest from before records) counted from `plan`.
fn history(plan: &Plan, cache: &Cache, inputs: &Inputs) -> Vec<Finished> {
    let in_plan: HashMap<&str, usize> = plan.steps.iter().enumerate().map(|(i, s)| (s.key.as_str(), i)).collect();
    let manifests: Vec<grid_cache::Manifest<StepKind>> =
        StepKind::ALL.iter().flat_map(|&kind| cache.manifests(kind).unwrap_or_default()).collect();
    let shares = wall_shares(&manifests);
    manifests
        .iter()
        .zip(shares)
        .filter(|(m, _)| m.reused_from.is_none())
        .filter_map(|(m, seconds)| {
            let record = match m.work.as_ref().and_then(|w| serde_json::from_value::<WorkRecord>(w.clone()).ok()) {
                Some(record) => record,
                None => {
                    let &i = in_plan.get(m.key.as_str())?;
                    WorkRecord { group: group(plan, i), work: step_work(plan, i, inputs), run: None }
                }
            };
            Some(Finished {
                target: Target::of_manifest(&m.device),
                group: record.group,
                kind: m.kind,
                seconds: record.run.map_or(seconds, |run| run.unhindered(seconds)),
                threads: record.run.map(|run| run.threads),
                work: record.work,
                bytes: m.files.iter().map(|f| f.bytes).sum::<u64>() as f64,
            })
        })
        .collect()
}

/// Estimates the steps of `plan` that `cache` lacks, with the CPU on `threads`.
pub fn estimate(plan: &Plan, cache: &Cache, threads: usize) -> Estimate {
    let mut notes = Vec::new();
    let inputs = Inputs::of(plan, cache, &mut notes);
    // A step the remote cache holds is pulled, not computed.
    cache.prefetch_remote(plan.steps.iter().map(|s| (s.kind, &s.key)));
    let finished: Vec<bool> = plan.steps.iter().map(|s| cache.available(s.kind, &s.key)).collect();

    // Measured ÷ predicted, per (device, group) and per (device, kind).
    let mut by_group: HashMap<(Target, String), (f64, f64)> = HashMap::new();
    let mut bytes_by_group: HashMap<String, (f64, usize)> = HashMap::new();
    let mut by_kind: HashMap<(Target, StepKind), (f64, f64)> = HashMap::new();
    for f in history(plan, cache, &inputs) {
        let on = match f.target {
            Target::Cpu => f.threads.unwrap_or(threads),
            Target::Gpu => threads,
        };
        let predicted = f.work.seconds(&Prior::of(f.target, on));
        let group = by_group.entry((f.target, f.group.clone())).or_default();
        *group = (group.0 + f.seconds, group.1 + predicted);
        let bytes = bytes_by_group.entry(f.group).or_default();
        *bytes = (bytes.0 + f.bytes, bytes.1 + 1);
        let kind = by_kind.entry((f.target, f.kind)).or_default();
        *kind = (kind.0 + f.seconds, kind.1 + predicted);
    }
    let ratio = |(measured, predicted): (f64, f64)| (predicted > 0.0).then(|| measured / predicted);

    let mut priced = Vec::new();
    for (i, step) in plan.steps.iter().enumerate() {
        if finished[i] {
            continue;
        }
        let work = step_work(plan, i, &inputs);
        let group = group(plan, i);
        let mut seconds = HashMap::new();
        let mut measured = false;
        for target in Target::BOTH {
            let prior = work.seconds(&Prior::of(target, threads));
            let own = by_group.get(&(target, group.clone())).and_then(|g| ratio(*g));
            let kind = by_kind.get(&(target, step.kind)).and_then(|k| ratio(*k));
            seconds.insert(target, prior * own.or(kind).unwrap_or(1.0));
            measured |= own.is_some();
        }
        let bytes = bytes_by_group.get(&group).map_or(work.bytes, |(bytes, n)| bytes / *n as f64);
        priced.push(Priced { index: i, seconds, bytes, measured });
    }

    let mut kinds: BTreeMap<StepKind, KindLine> = BTreeMap::new();
    for p in &priced {
        let line = kinds.entry(plan.steps[p.index].kind).or_insert_with(|| KindLine {
            kind: plan.steps[p.index].kind,
            missing: 0,
            measured: 0,
            cpu_seconds: 0.0,
            gpu_seconds: 0.0,
            bytes: 0,
        });
        line.missing += 1;
        line.measured += usize::from(p.measured);
        line.cpu_seconds += p.seconds[&Target::Cpu];
        line.gpu_seconds += p.seconds[&Target::Gpu];
        line.bytes += p.bytes.round() as u64;
    }
    let devices = Target::BOTH
        .iter()
        .map(|&target| DeviceLine {
            target,
            seconds: priced.iter().map(|p| p.seconds[&target]).sum(),
            critical_path_seconds: critical_path(plan, &priced, target),
        })
        .collect();
    notes.sort();
    notes.dedup();
    Estimate {
        grid: plan.grid_name.clone(),
        steps: plan.steps.len(),
        missing: priced.len(),
        measured: priced.iter().filter(|p| p.measured).count(),
        cpu_threads: threads,
        devices,
        bytes: kinds.values().map(|k| k.bytes).sum(),
        kinds: kinds.into_values().collect(),
        notes,
    }
}

/// Each finished step's share of the wall time: its seconds, each divided
/// among the steps that ran at the same time (`grid run -j 2` runs two steps
/// at once, each slower than alone, and the run takes about the sum of the
/// shares). From the manifests' finish times and durations.
fn wall_shares(finished: &[grid_cache::Manifest<StepKind>]) -> Vec<f64> {
    let mut shares = vec![0.0; finished.len()];
    // (time, starts, step): ends sort before starts at the same instant.
    let mut events: Vec<(f64, bool, usize)> = Vec::new();
    for (i, m) in finished.iter().enumerate() {
        let end = m.finished_at as f64;
        events.push((end - m.seconds.max(0.0), true, i));
        events.push((end, false, i));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut running: Vec<usize> = Vec::new();
    let mut last = f64::NEG_INFINITY;
    for (time, starts, i) in events {
        if !running.is_empty() && time > last {
            let each = (time - last) / running.len() as f64;
            for &r in &running {
                shares[r] += each;
            }
        }
        last = time;
        if starts {
            running.push(i);
        } else {
            running.retain(|&r| r != i);
        }
    }
    shares
}

/// The longest chain of missing steps, in seconds on `target`.
fn critical_path(plan: &Plan, priced: &[Priced], target: Target) -> f64 {
    let cost: HashMap<usize, f64> = priced.iter().map(|p| (p.index, p.seconds[&target])).collect();
    // Steps are in topological order: a step's inputs come before it.
    let mut finish = vec![0.0_f64; plan.steps.len()];
    for (i, step) in plan.steps.iter().enumerate() {
        let ready = step.inputs.iter().map(|&j| finish[j]).fold(0.0, f64::max);
        finish[i] = ready + cost.get(&i).copied().unwrap_or(0.0);
    }
    finish.into_iter().fold(0.0, f64::max)
}

/// The group whose measurements price a step: its kind, the shape of the
/// model it runs (architecture parameters, length limit, batch size: what
/// `placement` records rates by), and its method.
fn group(plan: &Plan, index: usize) -> String {
    let step = &plan.steps[index];
    if let Work::Image(_) = &step.work {
        return images::group(plan, index);
    }
    let model = ancestor(plan, index, StepKind::Train).and_then(|t| {
        let train = &plan.steps[t];
        let Work::Train { model, max_length, .. } = &train.work else { return None };
        Some(Measurements::shape(&train.params["architecture"], *max_length, model.training.batch_size.get()))
    });
    let method = step.work.method_name().unwrap_or_default();
    format!("{}/{}/{method}", step.kind.name(), model.unwrap_or_default())
}

/// What pricing a step reads beyond the plan, gathered once per estimate:
/// each corpus step's statistics and each train step's work per token.
struct Inputs {
    /// By corpus step.
    data: HashMap<usize, DataStats>,
    /// Multiply-adds per token, by train step.
    macs: HashMap<usize, f64>,
    /// Images per split, by image corpus step (a folder listed once).
    images: HashMap<usize, images::Counts>,
}

impl Inputs {
    /// Every corpus step's statistics (read from the cache when it has the
    /// step, else built from the data as the step would) and every train
    /// step's size; what had to be assumed goes to `notes`.
    fn of(plan: &Plan, cache: &Cache, notes: &mut Vec<String>) -> Inputs {
        let mut inputs = Inputs { data: HashMap::new(), macs: HashMap::new(), images: HashMap::new() };
        for (i, step) in plan.steps.iter().enumerate() {
            match &step.work {
                Work::Image(crate::steps::images::ImageWork::Corpus { .. }) => {
                    inputs.images.insert(i, images::counts(plan, i));
                }
                Work::Corpus { dataset, .. } => {
                    let value = corpus_stats(plan, i, cache).unwrap_or_else(|e| {
                        notes.push(format!(
                            "dataset `{}` could not be read before its step runs ({}); assumed SST-2's sizes",
                            dataset.name,
                            grid_core::errors::one_line(&e)
                        ));
                        DataStats::ASSUMED
                    });
                    inputs.data.insert(i, value);
                }
                Work::Train { .. } => {
                    inputs.macs.insert(i, macs_per_token(plan, i, notes));
                }
                _ => {}
            }
        }
        inputs
    }

    /// The images per split of the image dataset step `index` reads.
    fn images_for(&self, plan: &Plan, index: usize) -> images::Counts {
        images::corpus(plan, index)
            .and_then(|c| self.images.get(&c).copied())
            .unwrap_or_else(|| images::counts(plan, index))
    }

    /// The statistics of the dataset step `index` reads.
    fn data_for(&self, plan: &Plan, index: usize) -> DataStats {
        ancestor(plan, index, StepKind::Corpus).and_then(|c| self.data.get(&c).copied()).unwrap_or(DataStats::ASSUMED)
    }

    /// The model step `index` runs, on examples of `data`.
    fn model_shape(&self, plan: &Plan, index: usize, data: &DataStats) -> Option<ModelShape> {
        let train = ancestor(plan, index, StepKind::Train)?;
        let Work::Train { model, max_length, .. } = &plan.steps[train].work else { return None };
        let macs_per_token = *self.macs.get(&train)?;
        let tokens = model.architecture.tokens_for_words(data.mean_words).min(*max_length as f64).max(1.0);
        Some(ModelShape { macs_per_token, tokens })
    }
}

/// Train step `train`'s multiply-adds per token: from the grid file or the
/// checkpoint's config.json; BERT-base's when the checkpoint is not here yet.
fn macs_per_token(plan: &Plan, train: usize, notes: &mut Vec<String>) -> f64 {
    let Work::Train { model, assets, .. } = &plan.steps[train].work else { return ASSUMED_MACS_PER_TOKEN };
    model.architecture.macs_per_token_with(&model.name, assets).unwrap_or_else(|| {
        notes.push(format!(
            "model `{}`: its checkpoint is not on this machine yet; assumed BERT-base's size",
            model.name
        ));
        ASSUMED_MACS_PER_TOKEN
    })
}

/// Test examples whose words are counted: enough for a mean.
const COUNTED_EXAMPLES: usize = 2_000;

/// The statistics of corpus step `index`: from its payload when cached (the
/// sizes from `stats.json`, the words from the first test examples), else
/// from the data, read as the step reads it.
fn corpus_stats(plan: &Plan, index: usize, cache: &Cache) -> anyhow::Result<DataStats> {
    use std::io::BufRead;
    let step = &plan.steps[index];
    let Work::Corpus { dataset, files } = &step.work else { anyhow::bail!("{} is not a corpus step", step.label) };
    if !matches!(cache.lookup(step.kind, &step.key), Ok(Some(_))) {
        return build(dataset, files.as_ref()).map(|corpus| DataStats::of(&corpus));
    }
    let dir = cache.step_dir(step.kind, &step.key);
    let sizes: corpus::CorpusStats = serde_json::from_slice(&std::fs::read(dir.join("stats.json"))?)?;
    let test = std::io::BufReader::new(std::fs::File::open(dir.join("test.jsonl"))?);
    let mut examples = Vec::new();
    for line in test.lines().take(COUNTED_EXAMPLES) {
        examples.push(serde_json::from_str::<grid_core::data::Example>(&line?)?);
    }
    let counted = DataStats::of(&grid_core::data::Corpus { train: Vec::new(), validation: Vec::new(), test: examples });
    Ok(DataStats { train: sizes.train as f64, validation: sizes.validation as f64, test: sizes.test as f64, ..counted })
}

fn build(dataset: &DatasetSpec, files: Option<&ResolvedFiles>) -> anyhow::Result<grid_core::data::Corpus> {
    if let Some(files) = files {
        for path in [Some(&files.train), files.validation.as_ref(), Some(&files.test)].into_iter().flatten() {
            if !Path::new(path).is_file() {
                anyhow::bail!("{} is not on this machine yet", path.display());
            }
        }
    }
    corpus::build(dataset, files).map(|(corpus, _)| corpus)
}

/// The first step of `kind` reached from step `index` through its inputs.
fn ancestor(plan: &Plan, index: usize, kind: StepKind) -> Option<usize> {
    let mut stack = vec![index];
    let mut seen = std::collections::HashSet::new();
    while let Some(i) = stack.pop() {
        if plan.steps[i].kind == kind {
            return Some(i);
        }
        if seen.insert(i) {
            stack.extend(plan.steps[i].inputs.iter().rev());
        }
    }
    None
}

/// The model a step runs: its multiply-adds per token, and the tokens of an example.
struct ModelShape {
    macs_per_token: f64,
    tokens: f64,
}

/// The weights a checkpoint's folder holds, when it is on this machine: a
/// fine-tuned copy saves as many.
fn checkpoint_bytes(work: &Work) -> Option<f64> {
    let Work::Train { assets: grid_core::model::ModelAssets::Checkpoint { source, cache_root }, .. } = work else {
        return None;
    };
    let entries = std::fs::read_dir(source.dir(cache_root)).ok()?;
    let bytes: u64 = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "safetensors"))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    (bytes > 0).then_some(bytes as f64)
}

/// The work of step `index`.
fn step_work(plan: &Plan, index: usize, inputs: &Inputs) -> StepWork {
    let step = &plan.steps[index];
    let stats = inputs.data_for(plan, index);
    let sample = |n: usize| if n == 0 { stats.test } else { (n as f64).min(stats.test) };
    let forward = |shape: &ModelShape, examples: f64, passes: f64| StepWork {
        infer_macs: examples * passes * shape.tokens * shape.macs_per_token,
        example_passes: examples * passes,
        ..StepWork::default()
    };
    match &step.work {
        Work::Corpus { .. } => StepWork {
            fixed_seconds: 0.05 + stats.examples() * 5.0e-6,
            bytes: stats.examples() * (stats.mean_chars + 30.0),
            ..StepWork::default()
        },
        Work::Synth { .. } => StepWork {
            fixed_seconds: 0.05 + stats.examples() * 8.0e-6,
            bytes: 1.6 * stats.examples() * (stats.mean_chars + 40.0),
            ..StepWork::default()
        },
        Work::Train { model, .. } => {
            let Some(shape) = inputs.model_shape(plan, index, &stats) else { return StepWork::default() };
            let weights = checkpoint_bytes(&step.work).unwrap_or(4.5 * shape.macs_per_token + 1.0e6);
            if !model.architecture.trains() {
                return StepWork { fixed_seconds: 1.0, bytes: weights, ..StepWork::default() };
            }
            let t = &model.training;
            let examples = t.max_steps.get() as f64 * t.batch_size.get() as f64;
            let evaluations = (t.max_steps.get() / t.eval_every.get()) as f64;
            let validation = forward(&shape, evaluations * stats.validation, 1.0);
            StepWork {
                train_macs: 3.0 * examples * shape.tokens * shape.macs_per_token,
                optimizer_steps: t.max_steps.get() as f64,
                bytes: weights,
                ..validation
            }
        }
        // Five accuracies: the shortcut model on the synthetic, flipped and
        // original test sets, the original model on the synthetic and original.
        Work::Verify { .. } => inputs
            .model_shape(plan, index, &stats)
            .map(|shape| StepWork { bytes: 1.0e3, ..forward(&shape, 5.0 * stats.test, 1.0) })
            .unwrap_or_default(),
        Work::Evaluate => inputs
            .model_shape(plan, index, &stats)
            .map(|shape| StepWork { bytes: 1.0e3, ..forward(&shape, stats.test, 1.0) })
            .unwrap_or_default(),
        Work::Attribute(options) => {
            let Some(shape) = inputs.model_shape(plan, index, &stats) else { return StepWork::default() };
            let examples = sample(options.sample);
            let passes = options.method.forward_passes(shape.tokens);
            StepWork {
                fixed_seconds: 0.02,
                bytes: examples * (shape.tokens * 45.0 + 200.0),
                ..forward(&shape, examples, passes)
            }
        }
        Work::Erasure(options) => {
            let Some(shape) = inputs.model_shape(plan, index, &stats) else { return StepWork::default() };
            let examples = sample(options.attribution.sample);
            let passes = erasure::forward_passes(1, &options.settings) as f64;
            StepWork { fixed_seconds: 0.02, bytes: examples * 360.0, ..forward(&shape, examples, passes) }
        }
        Work::Agreement(_) => StepWork { fixed_seconds: 0.15, bytes: 14.0e3, ..StepWork::default() },
        // 1.5 ms a score step on the quickstart (its 1,032 took 1.5 s).
        Work::Score { .. } => StepWork { fixed_seconds: 0.002, bytes: 3.0e3, ..StepWork::default() },
        Work::Image(work) => images::step_work(plan, index, work, inputs.images_for(plan, index)),
        Work::Report(report) => StepWork {
            fixed_seconds: 0.5 + 0.002 * report.cells.len() as f64,
            bytes: 50.0e3 + 2.0e3 * report.cells.len() as f64,
            ..StepWork::default()
        },
    }
}

/// Seconds as a person reads them: `42 s`, `7.5 min`, `3.2 h`, `12 days`.
pub fn human_seconds(seconds: f64) -> String {
    match seconds {
        s if s < 90.0 => format!("{s:.0} s"),
        s if s < 5_400.0 => format!("{:.1} min", s / 60.0),
        s if s < 172_800.0 => format!("{:.1} h", s / 3_600.0),
        s => format!("{:.0} days ({:.0} h)", s / 86_400.0, s / 3_600.0),
    }
}

/// Bytes as a person reads them.
pub fn human_bytes(bytes: u64) -> String {
    let b = bytes as f64;
    match b {
        b if b < 1.0e6 => format!("{:.0} kB", b / 1.0e3),
        b if b < 1.0e9 => format!("{:.0} MB", b / 1.0e6),
        b => format!("{:.1} GB", b / 1.0e9),
    }
}

/// The one line `grid run` prints before it starts.
pub fn summary_line(estimate: &Estimate) -> String {
    let cpu = estimate.device(Target::Cpu);
    let gpu = estimate.device(Target::Gpu);
    format!(
        "estimate: {} of {} steps to run: ≈ {} on this CPU ({} threads), ≈ {} on an H100-class GPU; cache +{}",
        estimate.missing,
        estimate.steps,
        human_seconds(cpu.seconds),
        estimate.cpu_threads,
        human_seconds(gpu.seconds),
        human_bytes(estimate.bytes)
    )
}

/// What GPU a run could use: one this build computes on, one the machine
/// shows to a build without a GPU backend, or none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuHere {
    Usable,
    /// Visible (by model name) but not to this build.
    NeedsGpuBuild(String),
    None,
}

/// A run predicted to take longer than this on its device asks before it
/// starts, on a terminal.
pub const CONFIRM_OVER_SECONDS: f64 = 24.0 * 3_600.0;

/// The seconds the run will take as launched: the whole work here, or with
/// Slurm the longest chain of steps.
pub fn predicted_seconds(estimate: &Estimate, target: Target, on_slurm: bool) -> f64 {
    let here = estimate.device(target);
    if on_slurm { here.critical_path_seconds } else { here.seconds }
}

/// Whether a run so long it should be confirmed before it starts.
pub fn needs_confirmation(estimate: &Estimate, target: Target, on_slurm: bool) -> bool {
    estimate.missing > 0 && predicted_seconds(estimate, target, on_slurm) > CONFIRM_OVER_SECONDS
}

/// When a run on `target` is predicted over an hour: what would be faster.
/// `gpu`: what GPU this build and machine offer; `on_slurm`: whether the run
/// already goes through Slurm.
pub fn long_run_advice(estimate: &Estimate, target: Target, gpu_here: &GpuHere, on_slurm: bool) -> Option<String> {
    const HOUR: f64 = 3_600.0;
    let here = estimate.device(target);
    if here.seconds <= HOUR {
        return None;
    }
    let mut options = Vec::new();
    let gpu = estimate.device(Target::Gpu);
    if target == Target::Cpu && gpu.seconds < here.seconds / 2.0 {
        options.push(match gpu_here {
            GpuHere::Usable => format!("a GPU (`--device cuda`, ≈ {})", human_seconds(gpu.seconds)),
            GpuHere::NeedsGpuBuild(name) => format!(
                "the {name} this machine shows, which this build cannot use: build with `cargo build --release \
                 --features cuda` (docs/gpu.md; ≈ {})",
                human_seconds(gpu.seconds)
            ),
            GpuHere::None => format!(
                "a machine with a GPU and a GPU build (`--features cuda`, docs/gpu.md; ≈ {})",
                human_seconds(gpu.seconds)
            ),
        });
    }
    if !on_slurm && here.critical_path_seconds < here.seconds / 2.0 {
        options.push(format!(
            "Slurm (`--executor slurm`: ≥ {}, the longest chain of steps, with a node per step)",
            human_seconds(here.critical_path_seconds)
        ));
    }
    options.push("a subset with `--set` (fewer seeds, models or methods, a smaller `sample`)".into());
    Some(format!(
        "this run is predicted to take {} on {}; faster: {}",
        human_seconds(here.seconds),
        match target {
            Target::Cpu => "this CPU",
            Target::Gpu => "the GPU",
        },
        options.join("; ")
    ))
}

/// `grid plan --estimate`: the per-kind table and the totals.
pub fn render(estimate: &Estimate) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}: {} of {} steps missing ({} priced by this cache's measurements of their kind, model and method)\n",
        estimate.grid, estimate.missing, estimate.steps, estimate.measured
    );
    let _ = writeln!(
        out,
        "| step kind | missing | measured | this CPU ({} threads) | H100-class GPU | cache |",
        estimate.cpu_threads
    );
    let _ = writeln!(out, "|---|---:|---:|---:|---:|---:|");
    for k in &estimate.kinds {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            k.kind.name(),
            k.missing,
            k.measured,
            human_seconds(k.cpu_seconds),
            human_seconds(k.gpu_seconds),
            human_bytes(k.bytes)
        );
    }
    let cpu = estimate.device(Target::Cpu);
    let gpu = estimate.device(Target::Gpu);
    let _ = writeln!(
        out,
        "| **all** | {} | {} | {} | {} | {} |\n",
        estimate.missing,
        estimate.measured,
        human_seconds(cpu.seconds),
        human_seconds(gpu.seconds),
        human_bytes(estimate.bytes)
    );
    let _ = writeln!(
        out,
        "Local executor: the sum above (steps share the machine). Slurm, a node per step: at least the longest chain, ≈ {} (CPU nodes like this one) or ≈ {} (GPU nodes).",
        human_seconds(cpu.critical_path_seconds),
        human_seconds(gpu.critical_path_seconds)
    );
    for note in &estimate.notes {
        let _ = writeln!(out, "note: {note}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_and_bytes_read_as_people_write_them() {
        assert_eq!(human_seconds(42.0), "42 s");
        assert_eq!(human_seconds(450.0), "7.5 min");
        assert_eq!(human_seconds(3.2 * 3600.0), "3.2 h");
        assert_eq!(human_seconds(900.0 * 3600.0), "38 days (900 h)");
        assert_eq!(human_bytes(58_000_000), "58 MB");
        assert_eq!(human_bytes(38_000_000_000), "38.0 GB");
    }

    #[test]
    fn a_gpu_prices_arithmetic_lower_and_each_step_higher_than_a_cpu() {
        let big = StepWork { train_macs: 1.0e15, optimizer_steps: 1_000.0, ..StepWork::default() };
        let small = StepWork { train_macs: 1.0e9, optimizer_steps: 1_000.0, ..StepWork::default() };
        let (cpu, gpu) = (Prior::cpu(2), Prior::gpu());
        assert!(big.seconds(&gpu) * 10.0 < big.seconds(&cpu), "BERT-sized work is far faster on a GPU");
        assert!(small.seconds(&gpu) > small.seconds(&cpu), "a tiny model's steps are launch-bound on a GPU");
        // Threads scale the CPU's arithmetic.
        assert!((big.seconds(&Prior::cpu(4)) * 2.0 - big.seconds(&cpu)).abs() / big.seconds(&cpu) < 0.01);
    }

    #[test]
    fn convolutions_are_priced_by_the_width_of_the_network() {
        let rates = ConvolutionRate::ByWidth(&[
            WidthRate { width: 8.0, train: 1.0e9, infer: 3.0e9 },
            WidthRate { width: 32.0, train: 4.0e9, infer: 12.0e9 },
        ]);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b;
        let train = |width: f64, threads: usize| rates.macs_per_second(width, threads, Phase::Train, 9.9e10);
        assert!(close(train(8.0, 1), 1.0e9));
        assert!(close(rates.macs_per_second(8.0, 1, Phase::Infer, 9.9e10), 3.0e9));
        // Halfway between 8 and 32 on a log scale: the rates' geometric mean.
        assert!(close(train(16.0, 1), 2.0e9));
        assert!(close(rates.macs_per_second(16.0, 1, Phase::Infer, 9.9e10), 6.0e9));
        // Outside the measured widths, the nearest measured rate; threads scale it.
        assert!(close(train(4.0, 2), 2.0e9));
        assert!(close(train(512.0, 1), 4.0e9));
        assert_eq!(ConvolutionRate::AsGemm.macs_per_second(8.0, 4, Phase::Train, 3.0e12), 3.0e12);

        // On the CPU a ResNet's multiply-adds have their own rates; on the
        // GPU a transformer's.
        let conv = StepWork { conv_train_macs: 1.0e12, conv_width: 8.0, ..StepWork::default() };
        let gemm = StepWork { train_macs: 1.0e12, ..StepWork::default() };
        let (cpu, gpu) = (Prior::cpu(2), Prior::gpu());
        assert_ne!(conv.seconds(&cpu), gemm.seconds(&cpu));
        assert_eq!(conv.seconds(&gpu), gemm.seconds(&gpu));
        // A wider network goes faster per multiply-add.
        let wide = StepWork { conv_width: 64.0, ..conv };
        assert!(wide.seconds(&cpu) < conv.seconds(&cpu));
    }

    #[test]
    fn work_recorded_before_convolutions_were_priced_apart_still_reads() {
        let old = serde_json::json!({
            "train_macs": 1.0, "optimizer_steps": 2.0, "infer_macs": 3.0,
            "example_passes": 4.0, "fixed_seconds": 5.0, "bytes": 6.0,
        });
        let work: StepWork = serde_json::from_value(old).unwrap();
        assert_eq!((work.train_macs, work.bytes, work.conv_train_macs, work.conv_width), (1.0, 6.0, 0.0, 0.0));
    }

    #[test]
    fn a_step_starved_by_other_processes_is_measured_without_the_wait() {
        let run = |threads, waited_seconds, paused_seconds, earlier| RunRecord {
            threads,
            waited_seconds,
            paused_seconds,
            earlier,
        };
        assert_eq!(run(1, Some(60.0), None, None).unhindered(100.0), 40.0);
        // Never below a tenth of the measurement; nothing known, nothing taken.
        assert!((run(1, Some(500.0), None, None).unhindered(100.0) - 10.0).abs() < 1e-9);
        assert_eq!(run(2, None, None, None).unhindered(100.0), 100.0);
        // A step resumed after two interrupted attempts counts their time too.
        let earlier = Some(Earlier { seconds: 300.0, waited_seconds: 20.0, paused_seconds: 0.0 });
        assert_eq!(run(2, Some(5.0), None, earlier).unhindered(100.0), 375.0);
    }

    #[test]
    fn a_step_whose_process_was_stopped_is_measured_without_the_pause() {
        // An image model trained over chunks, stopped for hours while other
        // work was timed: the pauses are taken whole, not capped as waits are.
        let earlier = Some(Earlier { seconds: 14_000.0, waited_seconds: 1_000.0, paused_seconds: 11_000.0 });
        let run = RunRecord { threads: 1, waited_seconds: Some(100.0), paused_seconds: Some(0.0), earlier };
        assert_eq!(run.unhindered(900.0), 2_800.0);
        // The waits are then capped at nine tenths of what ran.
        let earlier = Some(Earlier { seconds: 1_000.0, waited_seconds: 900.0, paused_seconds: 900.0 });
        let run = RunRecord { threads: 1, waited_seconds: None, paused_seconds: None, earlier };
        assert!((run.unhindered(0.0) - 10.0).abs() < 1e-9);
    }

    #[test]
    fn a_work_record_reads_with_its_run_and_without() {
        let work = serde_json::json!({
            "train_macs": 1.0, "optimizer_steps": 2.0, "infer_macs": 3.0,
            "example_passes": 4.0, "fixed_seconds": 5.0, "bytes": 6.0,
        });
        let before = serde_json::json!({ "group": "g", "work": work });
        assert_eq!(serde_json::from_value::<WorkRecord>(before).unwrap().run, None);
        let now = serde_json::json!({ "group": "g", "work": work, "threads": 1, "waited_seconds": 2.5 });
        let record: WorkRecord = serde_json::from_value(now.clone()).unwrap();
        let run = RunRecord { threads: 1, waited_seconds: Some(2.5), paused_seconds: None, earlier: None };
        assert_eq!(record.run, Some(run));
        assert_eq!(serde_json::to_value(&record).unwrap()["threads"], 1, "written beside the work: {now}");
    }

    #[test]
    fn steps_that_ran_together_share_the_wall_time() {
        let manifest = |finished_at: u64, seconds: f64| {
            let text = serde_json::json!({
                "kind": "train", "key": "00", "version": 1, "label": "x", "params": {}, "inputs": [],
                "files": [], "finished_at": finished_at, "seconds": seconds, "grid_version": "0", "device": "cpu",
            });
            serde_json::from_value::<grid_cache::Manifest<StepKind>>(text).unwrap()
        };
        // 0–10 alone, 10–20 with the second (which ran 10–30), 30–35 a third alone.
        let shares = wall_shares(&[manifest(20, 20.0), manifest(30, 20.0), manifest(35, 5.0)]);
        assert_eq!(shares, vec![15.0, 15.0, 5.0]);
        assert_eq!(shares.iter().sum::<f64>(), 35.0, "the shares add up to the wall time");
    }

    #[test]
    fn an_hour_or_more_names_the_faster_options() {
        let line = |target, seconds, critical_path_seconds| DeviceLine { target, seconds, critical_path_seconds };
        let mut estimate = Estimate {
            grid: "g".into(),
            steps: 10,
            missing: 10,
            measured: 0,
            cpu_threads: 2,
            devices: vec![line(Target::Cpu, 900.0 * 3600.0, 40.0 * 3600.0), line(Target::Gpu, 7.0 * 3600.0, 1.0)],
            kinds: Vec::new(),
            bytes: 0,
            notes: Vec::new(),
        };
        let advice = long_run_advice(&estimate, Target::Cpu, &GpuHere::Usable, false).unwrap();
        assert!(advice.contains("a GPU (`--device cuda`, ≈ 7.0 h)"), "{advice}");
        assert!(advice.contains("--executor slurm"), "{advice}");
        assert!(advice.contains("--set"), "{advice}");
        // No GPU here, already on Slurm: a GPU build elsewhere, and no Slurm again.
        let advice = long_run_advice(&estimate, Target::Cpu, &GpuHere::None, true).unwrap();
        assert!(advice.contains("a machine with a GPU and a GPU build (`--features cuda`"), "{advice}");
        assert!(!advice.contains("--executor slurm"), "{advice}");
        // A GPU the machine shows to a CPU-only build: named, with the build that uses it.
        let advice =
            long_run_advice(&estimate, Target::Cpu, &GpuHere::NeedsGpuBuild("NVIDIA H200".into()), false).unwrap();
        assert!(
            advice.contains("the NVIDIA H200 this machine shows") && advice.contains("--features cuda"),
            "{advice}"
        );
        // 900 h here: asked before it starts; through Slurm, 40 h of chain: asked too.
        assert!(needs_confirmation(&estimate, Target::Cpu, false) && needs_confirmation(&estimate, Target::Cpu, true));
        estimate.devices[0].critical_path_seconds = 20.0 * 3600.0;
        assert!(!needs_confirmation(&estimate, Target::Cpu, true), "20 h of chain on Slurm is not asked");
        assert!(!needs_confirmation(&estimate, Target::Gpu, false), "7 h on the GPU is not asked");
        estimate.devices[0].seconds = 1_800.0;
        assert_eq!(
            long_run_advice(&estimate, Target::Cpu, &GpuHere::Usable, false),
            None,
            "half an hour needs no advice"
        );
    }
}
