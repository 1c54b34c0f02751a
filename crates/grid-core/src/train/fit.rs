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

use super::recipe::{BestBy, Keep, Optimizer as OptimizerSpec, TrainingSpec};
use super::snapshot::LoopState;
use super::{Diverged, Evaluation, LogEntry, RATE_TOLERANCE, Snapshots, Stopped, TrainSummary, adamw};
use crate::model::shapes::ShapeLog;

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
    let (batch_size, max_steps, eval_every) = (batch_size.get(), max_steps.get(), eval_every.get());
    let (patience, best_by) = match keep {
        Keep::Best { patience, by } => (Some(patience.get()), by),
        Keep::Last => (None, BestBy::Accuracy),
    };
    #[cfg(test)]
    let _turn = super::ONE_TRAINING_AT_A_TIME.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    B::seed(device, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let started = Instant::now();
    let mut earlier_seconds = 0.0;
    let mut validation_seconds = 0.0;

    let mut best = model.valid();
    let mut best_accuracy = f64::NEG_INFINITY;
    let mut best_step = 0;
    let mut log = Vec::new();
    let mut loss_sum = 0.0;
    let mut loss_count = 0usize;
    let mut last_finite = None;
    let mut step = 0;
    let mut seen = 0usize;
    let mut stopped_early = false;

    let snapshots = control.snapshots;
    // Where the restored epoch is: the RNG position and batches taken, applied
    // once its batches are drawn again.
    let mut resume_in_epoch = None;
    let mut last_snapshot = (Instant::now(), None);
    if let Some(snapshots) = snapshots {
        match snapshots.load::<B, M, O>(device) {
            Ok(None) => {}
            Ok(Some(loaded)) => {
                model = model.load_record(loaded.model);
                optimizer = optimizer.load_record(loaded.optimizer);
                best = best.load_record(loaded.best);
                let state = loaded.state;
                (step, best_step, best_accuracy, log) = (state.step, state.best_step, state.best_accuracy, state.log);
                (last_finite, seen) = (state.last_finite, state.seen);
                (earlier_seconds, validation_seconds) = (state.seconds, state.validation_seconds);
                for [rows, time] in state.shapes {
                    shapes.record(rows, time);
                }
                rng.set_word_pos(loaded.epoch_rng_position);
                resume_in_epoch = Some((loaded.rng_position, state.batches_done));
                B::seed(device, device_seed(seed, step));
                last_snapshot.1 = Some(step);
                (control.log)(format!("resuming from the snapshot at step {step}"));
            }
            Err(e) => (control.log)(format!("snapshot not used ({e:#}); training from step 0")),
        }
    }
    control.progress.set_length(max_steps as u64);
    control.progress.set_position(step as u64);
    'epochs: while step < max_steps && data.examples() > 0 {
        let epoch_rng_position = rng.get_word_pos();
        let batches = data.epoch(batch_size, &mut rng);
        let mut batches_done = 0;
        if let Some((position, done)) = resume_in_epoch.take() {
            rng.set_word_pos(position);
            batches_done = done;
        }
        for batch_indices in batches.into_iter().skip(batches_done) {
            if (control.stop)() {
                return Err(Stopped::Interrupted { step: step + 1, resumes_from: last_snapshot.1 });
            }
            let Objective { loss: batch_loss, shape: [rows, time] } =
                data.objective(&model, &batch_indices, &mut rng, device);
            shapes.record(rows, time);
            let value = batch_loss.clone().into_scalar().elem::<f64>();
            if !value.is_finite() {
                let learning_rate = learning_rate * schedule.factor(step, max_steps);
                return Err(Diverged { step: step + 1, loss: value, last_finite, learning_rate }.into());
            }
            last_finite = Some(value);
            loss_sum += value;
            loss_count += 1;
            seen += batch_indices.len();
            let grads = GradientsParams::from_grads(batch_loss.backward(), &model);
            model = optimizer.step(learning_rate * schedule.factor(step, max_steps), model, grads);
            step += 1;
            batches_done += 1;
            control.progress.inc(1);

            if step % eval_every == 0 || step == max_steps {
                let evaluation_started = Instant::now();
                let candidate = model.valid();
                let evaluation = evaluate(step, &candidate);
                validation_seconds += evaluation_started.elapsed().as_secs_f64();
                let train_loss = loss_sum / loss_count.max(1) as f64;
                let validation_accuracy = evaluation.accuracy;
                log.push(LogEntry {
                    step,
                    train_loss,
                    validation_accuracy,
                    marked_accuracy: evaluation.groups.map(|g| g.0),
                    unmarked_accuracy: evaluation.groups.map(|g| g.1),
                    selection: evaluation.selection,
                });
                let groups = evaluation
                    .groups
                    .map(|(marked, unmarked)| format!(" (marked {marked:.3}, unmarked {unmarked:.3})"))
                    .unwrap_or_default();
                let selection = evaluation
                    .selection
                    .map(|r| format!(", selected {:.3} (expected {:.3})", r.realised, r.expected))
                    .unwrap_or_default();
                let line = format!(
                    "step {step}/{max_steps}: loss {train_loss:.3}, validation accuracy {validation_accuracy:.3}{groups}{selection}"
                );
                (control.log)(line.clone());
                control.progress.set_message(line);
                (loss_sum, loss_count) = (0.0, 0);
                // `last` keeps every evaluation: the final one is what it returns.
                // `best_accuracy` holds the best score by `best_by`.
                let score = evaluation.score(best_by);
                // The bar this evaluation reached, if `stop_at_accuracy` set one.
                let reached = stop_at_accuracy.filter(|bar| evaluation.reaches(bar.get()));
                if score > best_accuracy || patience.is_none() || reached.is_some() {
                    best_accuracy = score;
                    best_step = step;
                    best = candidate;
                } else if patience.is_some_and(|p| step - best_step >= p) {
                    stopped_early = true;
                    break 'epochs;
                }
                if let Some(bar) = reached {
                    let on_rate = evaluation
                        .selection_target
                        .map(|t| format!(", selection rate within {RATE_TOLERANCE} of {t}"))
                        .unwrap_or_default();
                    (control.log)(format!("validation accuracy reached {:.3}{on_rate}: stopped", bar.get()));
                    stopped_early = true;
                    break 'epochs;
                }
                // The backend's RNG (dropout masks drawn on the device) cannot
                // be saved, so it starts again here from a seed of its own: a
                // run resumed at this step draws what an unbroken run draws.
                B::seed(device, device_seed(seed, step));
                if let Some(snapshots) = snapshots
                    && step < max_steps
                    && snapshots.due(last_snapshot.0)
                {
                    let state = LoopState {
                        step,
                        epoch_rng_position: epoch_rng_position.to_string(),
                        rng_position: rng.get_word_pos().to_string(),
                        batches_done,
                        best_step,
                        best_accuracy,
                        log: log.clone(),
                        last_finite,
                        seen,
                        seconds: earlier_seconds + started.elapsed().as_secs_f64(),
                        validation_seconds,
                        shapes: shapes.shapes(),
                    };
                    match snapshots.save::<B, M, O>(&model, &optimizer, &best, &state) {
                        Ok(()) => last_snapshot = (Instant::now(), Some(step)),
                        Err(e) => (control.log)(format!("snapshot at step {step} not written: {e:#}")),
                    }
                }
            }
            if step >= max_steps {
                break 'epochs;
            }
        }
    }
    let seconds = earlier_seconds + started.elapsed().as_secs_f64();
    let summary = TrainSummary {
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
    };
    Ok((best, summary))
}
