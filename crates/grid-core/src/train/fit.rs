//! The training loop every kind of input shares: batches in a seeded order,
//! one optimiser step per batch, validation every `eval_every` steps, the
//! best (or last) model kept, early stopping, divergence caught, snapshots
//! taken and resumed from, and Ctrl-C honoured. What a batch is, and what
//! it costs, is the input kind's ([`Batches`]): token sequences
//! ([`super::tokens`]) or images ([`super::images`]).

use std::time::Instant;

use burn::grad_clipping::GradientClippingConfig;
use burn::module::AutodiffModule;
use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{GradientsParams, Optimizer, SgdConfig};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::recipe::{BestBy, Keep, Optimizer as OptimizerSpec, Schedule, TrainingSpec};
use super::snapshot::{DeviceSeed, Interrupted, Loaded, LoopState};
use super::{Diverged, Evaluation, LogEntry, RATE_TOLERANCE, Snapshots, Stopped, TrainSummary, adamw};
use crate::model::noise::{cpu_stream_position, device_draws, restore_cpu_stream, seed_device};
use crate::model::shapes::ShapeLog;
use crate::values::Share;

/// What the loop reports to and asks: where progress and log lines go,
/// where snapshots are kept, and whether to stop.
pub struct Control<'a> {
    pub progress: &'a indicatif::ProgressBar,
    /// Where evaluation lines go when no progress bar is drawn (logs, pipes).
    pub log: &'a (dyn Fn(String) + Sync),
    /// Where the run keeps snapshots to resume from (`None`: it keeps none).
    pub snapshots: Option<&'a Snapshots>,
    /// Asked before every step: whether to stop ([`crate::interrupt::requested`]).
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

/// A training set as the loop sees it: examples it orders into batches,
/// and the objective of one batch.
pub trait Batches<B: AutodiffBackend, M> {
    /// How many examples.
    fn examples(&self) -> usize;

    /// One epoch's batches of example indices, in the order they are taken,
    /// drawn from `rng`.
    fn epoch(&self, batch_size: usize, rng: &mut ChaCha8Rng) -> Vec<Vec<usize>>;

    /// What one optimiser step minimises on the examples `indices`, with
    /// any training noise drawn from `rng` (its value is the logged loss).
    fn objective(&self, model: &M, indices: &[usize], rng: &mut ChaCha8Rng, device: &B::Device) -> Objective<B>;
}

/// A batch's objective and the `[rows, length]` shape it sent through the
/// model (what a GPU compiles kernels for; an image's length is its side).
pub struct Objective<B: Backend> {
    pub loss: Tensor<B, 1>,
    pub shape: [usize; 2],
}

/// [`fit`] with the optimiser `spec` names.
pub(crate) fn fit_with_spec<B, M, D>(
    model: M,
    spec: &TrainingSpec,
    control: &Control,
    data: &D,
    evaluate: &dyn Fn(usize, &M::InnerModule) -> Evaluation,
    shapes: &ShapeLog,
    device: &B::Device,
) -> Result<(M::InnerModule, TrainSummary), Stopped>
where
    B: AutodiffBackend,
    M: AutodiffModule<B>,
    D: Batches<B, M>,
{
    let clipping = spec.max_grad_norm.map(|n| GradientClippingConfig::Norm(n as f32));
    match spec.optimizer {
        OptimizerSpec::Sgd { momentum } => {
            let optimizer = SgdConfig::new()
                .with_momentum(Some(MomentumConfig { momentum: momentum.get(), dampening: 0.0, nesterov: false }))
                .with_weight_decay((spec.weight_decay > 0.0).then(|| WeightDecayConfig::new(spec.weight_decay as f32)))
                .with_gradient_clipping(clipping)
                .init::<B, M>();
            fit(model, optimizer, spec, control, data, evaluate, shapes, device)
        }
        OptimizerSpec::Adamw => {
            let optimizer = adamw::AdamW::new(spec.weight_decay).init::<B, M>(clipping);
            fit(model, optimizer, spec, control, data, evaluate, shapes, device)
        }
    }
}

/// The value a [`DeviceSeed`] stands for.
fn seed_value(seed: u64, seeded: DeviceSeed) -> u64 {
    match seeded {
        DeviceSeed::Start => seed,
        DeviceSeed::Step(step) => device_seed(seed, step),
    }
}

/// What the backend's RNG was last seeded with, and its draws then: a
/// snapshot between evaluations puts it back by seeding it again, and on
/// the CPU by moving its mask stream to where it stood (see `Interrupted`).
#[derive(Debug, Clone, Copy)]
struct DeviceRng {
    seeded: DeviceSeed,
    draws: u64,
}

impl DeviceRng {
    fn seed<B: Backend>(device: &B::Device, run_seed: u64, seeded: DeviceSeed) -> Self {
        seed_device::<B>(device, seed_value(run_seed, seeded));
        Self { seeded, draws: device_draws() }
    }

    /// What a snapshot taken now needs to resume where the run is, with the
    /// losses since the last evaluation; `None` where it cannot: masks were
    /// drawn since the seeding, and not all from the CPU stream.
    fn interrupted(&self, loss_sum: f64, losses: usize) -> Option<Interrupted> {
        let drew = device_draws() != self.draws;
        let device_position = if drew { Some(cpu_stream_position()?.to_string()) } else { None };
        Some(Interrupted { loss_sum, losses, device_seed: self.seeded, device_position })
    }
}

/// The backend RNG's seed from evaluation step `step` on (splitmix64 of the
/// run's seed and the step).
fn device_seed(seed: u64, step: usize) -> u64 {
    let mut z = seed ^ (step as u64).rotate_left(32) ^ 0x9E37_79B9_7F4A_7C15;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[allow(clippy::too_many_arguments)] // the loop's inputs, each of its own kind
pub(crate) fn fit<B, M, O, D>(
    mut model: M,
    mut optimizer: O,
    spec: &TrainingSpec,
    control: &Control,
    data: &D,
    evaluate: &dyn Fn(usize, &M::InnerModule) -> Evaluation,
    shapes: &ShapeLog,
    device: &B::Device,
) -> Result<(M::InnerModule, TrainSummary), Stopped>
where
    B: AutodiffBackend,
    M: AutodiffModule<B>,
    O: Optimizer<M, B>,
    D: Batches<B, M>,
{
    let settings = Settings::of(spec);
    let Settings { batch_size, learning_rate, schedule, max_steps, eval_every, .. } = settings;
    let Settings { patience, best_by, stop_at_accuracy, seed, .. } = settings;
    #[cfg(test)]
    let _turn = super::ONE_TRAINING_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut device_rng = DeviceRng::seed::<B>(device, seed, DeviceSeed::Start);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let started = Instant::now();
    let mut best = model.valid();
    let mut tally = Tally::default();
    let (mut loss_sum, mut loss_count) = (0.0, 0usize);
    let mut stopped_early = false;

    let snapshots = control.snapshots;
    // Where the restored epoch is: the RNG position and batches taken, applied
    // once its batches are drawn again.
    let mut resume_in_epoch = None;
    let mut last_snapshot = (Instant::now(), None);
    if let Some(loaded) = snapshots.and_then(|s| load_snapshot::<B, M, O>(s, device, control)) {
        model = model.load_record(loaded.model);
        optimizer = optimizer.load_record(loaded.optimizer);
        best = best.load_record(loaded.best);
        let (batches_done, interrupted) = (loaded.state.batches_done, loaded.state.interrupted.clone());
        tally = Tally::restored(loaded.state, shapes);
        rng.set_word_pos(loaded.epoch_rng_position);
        resume_in_epoch = Some((loaded.rng_position, batches_done));
        // Taken between evaluations: the losses since the last one, and the
        // seed the backend's RNG had, and where its CPU stream stood if masks
        // were drawn since.
        let reseed = interrupted.as_ref().map_or(DeviceSeed::Step(tally.step), |i| i.device_seed);
        (loss_sum, loss_count) = interrupted.as_ref().map_or((0.0, 0), |i| (i.loss_sum, i.losses));
        device_rng = DeviceRng::seed::<B>(device, seed, reseed);
        if let Some(position) = loaded.device_position {
            let restored = restore_cpu_stream::<B>(position);
            debug_assert!(restored, "load_snapshot checked the backend");
        }
        last_snapshot.1 = Some(tally.step);
        (control.log)(format!("resuming from the snapshot at step {}", tally.step));
    }
    control.progress.set_length(max_steps as u64);
    control.progress.set_position(tally.step as u64);
    // A worker's watchdog leaves a signal to this loop, which asks before every step.
    let _polling = crate::interrupt::Polling::start();
    'epochs: while tally.step < max_steps && data.examples() > 0 {
        let epoch_rng_position = rng.get_word_pos();
        let batches = data.epoch(batch_size, &mut rng);
        let mut batches_done = 0;
        if let Some((position, done)) = resume_in_epoch.take() {
            rng.set_word_pos(position);
            batches_done = done;
        }
        for batch_indices in batches.into_iter().skip(batches_done) {
            let step = tally.step;
            if (control.stop)() {
                // A snapshot of this step, unless one exists or a resumed run
                // could not put the backend's RNG back where it is.
                let interrupted = device_rng.interrupted(loss_sum, loss_count);
                let exact = step > 0 && last_snapshot.1 != Some(step) && interrupted.is_some();
                let seconds = started.elapsed().as_secs_f64();
                let mut state =
                    tally.loop_state([epoch_rng_position, rng.get_word_pos()], batches_done, seconds, shapes);
                state.interrupted = interrupted;
                let saved = exact && snapshots.is_some_and(|s| save(s, (&model, &optimizer, &best), &state, control));
                let resumes_from = if saved { Some(step) } else { last_snapshot.1 };
                return Err(Stopped::Interrupted { step: step + 1, resumes_from });
            }
            let Objective { loss: batch_loss, shape: [rows, time] } =
                data.objective(&model, &batch_indices, &mut rng, device);
            shapes.record(rows, time);
            let value = batch_loss.clone().into_scalar().elem::<f64>();
            if !value.is_finite() {
                let learning_rate = learning_rate * schedule.factor(step, max_steps);
                return Err(
                    Diverged { step: step + 1, loss: value, last_finite: tally.last_finite, learning_rate }.into()
                );
            }
            tally.last_finite = Some(value);
            loss_sum += value;
            loss_count += 1;
            tally.seen += batch_indices.len();
            let grads = GradientsParams::from_grads(batch_loss.backward(), &model);
            model = optimizer.step(learning_rate * schedule.factor(step, max_steps), model, grads);
            tally.step += 1;
            let step = tally.step;
            batches_done += 1;
            control.progress.inc(1);

            if step % eval_every == 0 || step == max_steps {
                let candidate = model.valid();
                let evaluation =
                    tally.evaluated(step, max_steps, &|| evaluate(step, &candidate), loss_sum, loss_count, control);
                (loss_sum, loss_count) = (0.0, 0);
                // `last` keeps every evaluation: the final one is what it returns.
                // `best_accuracy` holds the best score by `best_by`.
                let score = evaluation.score(best_by);
                // The bar this evaluation reached, if `stop_at_accuracy` set one.
                let reached = stop_at_accuracy.filter(|bar| evaluation.reaches(bar.get()));
                if score > tally.best_accuracy || patience.is_none() || reached.is_some() {
                    tally.best_accuracy = score;
                    tally.best_step = step;
                    best = candidate;
                } else if patience.is_some_and(|p| step - tally.best_step >= p) {
                    stopped_early = true;
                    break 'epochs;
                }
                if let Some(bar) = reached {
                    (control.log)(reached_line(bar, &evaluation));
                    stopped_early = true;
                    break 'epochs;
                }
                // The backend's RNG (dropout masks drawn on the device) cannot
                // be saved on a GPU, so it starts again here from a seed of its
                // own: a run resumed at this step draws what an unbroken run
                // draws.
                device_rng = DeviceRng::seed::<B>(device, seed, DeviceSeed::Step(step));
                if let Some(snapshots) = snapshots
                    && step < max_steps
                    && snapshots.due(last_snapshot.0)
                {
                    let position = [epoch_rng_position, rng.get_word_pos()];
                    let state = tally.loop_state(position, batches_done, started.elapsed().as_secs_f64(), shapes);
                    if save(snapshots, (&model, &optimizer, &best), &state, control) {
                        last_snapshot = (Instant::now(), Some(step));
                    }
                }
            }
            if step >= max_steps {
                break 'epochs;
            }
        }
    }
    let summary = tally.summary(stopped_early, started.elapsed().as_secs_f64(), shapes);
    Ok((best, summary))
}

/// What the loop reads of the recipe (the optimiser and its settings are
/// the caller's).
struct Settings {
    batch_size: usize,
    learning_rate: f64,
    schedule: Schedule,
    max_steps: usize,
    eval_every: usize,
    /// Evaluations without a better score before stopping (`None`: keep the last).
    patience: Option<usize>,
    best_by: BestBy,
    stop_at_accuracy: Option<Share>,
    seed: u64,
}

impl Settings {
    fn of(spec: &TrainingSpec) -> Settings {
        let TrainingSpec {
            batch_size,
            optimizer: _, // built by the caller
            learning_rate,
            weight_decay: _,
            schedule,
            max_steps,
            eval_every,
            keep,
            max_grad_norm: _,
            stop_at_accuracy,
            seed,
        } = spec.clone();
        let (patience, best_by) = match keep {
            Keep::Best { patience, by } => (Some(patience.get()), by),
            Keep::Last => (None, BestBy::Accuracy),
        };
        Settings {
            batch_size: batch_size.get(),
            learning_rate,
            schedule,
            max_steps: max_steps.get(),
            eval_every: eval_every.get(),
            patience,
            best_by,
            stop_at_accuracy,
            seed,
        }
    }
}

/// What the loop counts across steps, and what a snapshot keeps of it.
struct Tally {
    step: usize,
    best_step: usize,
    /// The best score by `best_by` so far.
    best_accuracy: f64,
    log: Vec<LogEntry>,
    last_finite: Option<f64>,
    /// Examples seen, and seconds spent by attempts before this one.
    seen: usize,
    earlier_seconds: f64,
    validation_seconds: f64,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            step: 0,
            best_step: 0,
            best_accuracy: f64::NEG_INFINITY,
            log: Vec::new(),
            last_finite: None,
            seen: 0,
            earlier_seconds: 0.0,
            validation_seconds: 0.0,
        }
    }
}

impl Tally {
    /// The counts a snapshot kept; its batch shapes go back into `shapes`.
    fn restored(state: LoopState, shapes: &ShapeLog) -> Tally {
        for [rows, time] in state.shapes {
            shapes.record(rows, time);
        }
        Tally {
            step: state.step,
            best_step: state.best_step,
            best_accuracy: state.best_accuracy,
            log: state.log,
            last_finite: state.last_finite,
            seen: state.seen,
            earlier_seconds: state.seconds,
            validation_seconds: state.validation_seconds,
        }
    }

    /// The evaluation at `step` (what `evaluate` says), logged with the
    /// training loss since the last one (`loss_sum` over `losses` batches),
    /// its seconds counted.
    fn evaluated(
        &mut self,
        step: usize,
        max_steps: usize,
        evaluate: &dyn Fn() -> Evaluation,
        loss_sum: f64,
        losses: usize,
        control: &Control,
    ) -> Evaluation {
        let evaluation_started = Instant::now();
        let evaluation = evaluate();
        self.validation_seconds += evaluation_started.elapsed().as_secs_f64();
        let train_loss = loss_sum / losses.max(1) as f64;
        self.log.push(log_entry(step, train_loss, &evaluation));
        let line = progress_line(step, max_steps, train_loss, &evaluation);
        (control.log)(line.clone());
        control.progress.set_message(line);
        evaluation
    }

    /// The run's summary, `seconds` spent by this attempt.
    fn summary(self, stopped_early: bool, seconds: f64, shapes: &ShapeLog) -> TrainSummary {
        let seconds = self.earlier_seconds + seconds;
        let Tally { step, best_step, best_accuracy, log, seen, validation_seconds, .. } = self;
        TrainSummary {
            steps: step,
            best_step,
            best_validation_accuracy: log
                .iter()
                .rfind(|e| e.step == best_step)
                .map_or(best_accuracy.max(0.0), |e| e.validation_accuracy),
            stopped_early,
            seconds,
            validation_seconds,
            examples_per_second: seen as f64 / (seconds - validation_seconds).max(1e-9),
            log,
            shapes: shapes.shapes(),
        }
    }

    /// The snapshot's state: with the host RNG's positions (`[at the
    /// epoch's draw, now]`), the epoch's batches taken, and this attempt's
    /// seconds so far.
    fn loop_state(&self, [epoch, now]: [u128; 2], batches_done: usize, seconds: f64, shapes: &ShapeLog) -> LoopState {
        LoopState {
            step: self.step,
            epoch_rng_position: epoch.to_string(),
            rng_position: now.to_string(),
            batches_done,
            best_step: self.best_step,
            best_accuracy: self.best_accuracy,
            log: self.log.clone(),
            last_finite: self.last_finite,
            seen: self.seen,
            seconds: self.earlier_seconds + seconds,
            validation_seconds: self.validation_seconds,
            shapes: shapes.shapes(),
            interrupted: None,
        }
    }
}

/// Writes a snapshot of `state`; whether it was (a failure is logged: the
/// run goes on, resumable from the snapshot before).
fn save<B, M, O>(
    snapshots: &Snapshots,
    (model, optimizer, best): (&M, &O, &M::InnerModule),
    state: &LoopState,
    control: &Control,
) -> bool
where
    B: AutodiffBackend,
    M: AutodiffModule<B>,
    O: Optimizer<M, B>,
{
    let written = snapshots.save::<B, M, O>(model, optimizer, best, state);
    if let Err(e) = &written {
        (control.log)(format!("snapshot at step {} not written: {e:#}", state.step));
    }
    written.is_ok()
}

/// The run's snapshot, if there is one this run can use: one whose dropout
/// masks came from the CPU backend's stream resumes only on that backend
/// (the stream's position means nothing to another's RNG).
fn load_snapshot<B, M, O>(snapshots: &Snapshots, device: &B::Device, control: &Control) -> Option<Loaded<B, M, O>>
where
    B: AutodiffBackend,
    M: AutodiffModule<B>,
    O: Optimizer<M, B>,
{
    let loaded = usable(snapshots.load::<B, M, O>(device), control)?;
    if loaded.device_position.is_some() && !crate::kernels::backend_applies::<B>() {
        (control.log)(
            "snapshot not used (its dropout masks came from the CPU backend's stream); training from step 0".into(),
        );
        return None;
    }
    Some(loaded)
}

/// A snapshot that loaded; one that did not is logged and ignored (the
/// run trains from step 0).
fn usable<T>(loaded: anyhow::Result<Option<T>>, control: &Control) -> Option<T> {
    loaded.unwrap_or_else(|e| {
        (control.log)(format!("snapshot not used ({e:#}); training from step 0"));
        None
    })
}

/// The line that says the run stopped at its accuracy bar.
fn reached_line(bar: Share, evaluation: &Evaluation) -> String {
    let on_rate = evaluation
        .selection_target
        .map(|t| format!(", selection rate within {RATE_TOLERANCE} of {t}"))
        .unwrap_or_default();
    format!("validation accuracy reached {:.3}{on_rate}: stopped", bar.get())
}

/// The log's entry for an evaluation at `step`.
fn log_entry(step: usize, train_loss: f64, evaluation: &Evaluation) -> LogEntry {
    LogEntry {
        step,
        train_loss,
        validation_accuracy: evaluation.accuracy,
        marked_accuracy: evaluation.groups.map(|g| g.0),
        unmarked_accuracy: evaluation.groups.map(|g| g.1),
        selection: evaluation.selection,
    }
}

/// The line an evaluation prints: `step 50/400: loss 0.308, validation accuracy 0.915 (marked …)`.
fn progress_line(step: usize, max_steps: usize, train_loss: f64, evaluation: &Evaluation) -> String {
    let groups = evaluation
        .groups
        .map(|(marked, unmarked)| format!(" (marked {marked:.3}, unmarked {unmarked:.3})"))
        .unwrap_or_default();
    let selection = evaluation
        .selection
        .map(|r| format!(", selected {:.3} (expected {:.3})", r.realised, r.expected))
        .unwrap_or_default();
    let validation_accuracy = evaluation.accuracy;
    format!(
        "step {step}/{max_steps}: loss {train_loss:.3}, validation accuracy {validation_accuracy:.3}{groups}{selection}"
    )
}
