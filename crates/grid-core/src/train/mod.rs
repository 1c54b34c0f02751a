//! Training a classifier: length-bucketed batches, SGD with momentum (the paper's
//! LSTM recipe) or AdamW with linear warm-up and decay (BERT fine-tuning),
//! optional gradient clipping, validation accuracy every `eval_every` steps,
//! early stopping after `patience` steps without a gain, and the best model kept.
//!
//! Deterministic under a seed on CPU: batch order, word dropout and host dropout
//! masks come from one ChaCha stream owned by the run (see `model::noise`), and
//! device-side dropout masks from the backend's RNG, seeded by the run.
//!
//! The loop is [`fit`]'s, shared by every kind of input; [`tokens`] makes
//! token sequences its batches, [`images`] images.

mod adamw;
pub mod fit;
pub mod images;
pub mod recipe;
mod snapshot;
mod tokens;

use std::time::Instant;

use burn::module::AutodiffModule;
use burn::tensor::backend::AutodiffBackend;
use serde::{Deserialize, Serialize};

use crate::buckets::Buckets;
use crate::model::Classifier;
use crate::model::objective::Trainable;
use crate::model::rationale::SelectionRates;
use crate::model::shapes::ShapeLog;
use recipe::{BestBy, TrainingSpec};

pub use fit::Control;
pub use snapshot::Snapshots;

/// A training example: token ids and label.
#[derive(Debug, Clone)]
pub struct TrainExample {
    pub ids: Vec<u32>,
    pub label: u32,
    /// A validation example that carries the whole planted pattern (what
    /// `best_by = "balanced"` weighs apart); false on a model's own data.
    pub marked: bool,
}

/// Knobs that are not optimisation hyper-parameters.
pub struct TrainSetup<'a> {
    pub pad_id: u32,
    pub unk_id: u32,
    pub word_dropout: f64,
    pub progress: &'a indicatif::ProgressBar,
    /// Where evaluation lines go when no progress bar is drawn (logs, pipes).
    pub log: &'a (dyn Fn(String) + Sync),
    /// Padding of batch shapes (see [`crate::model::shapes`]).
    pub buckets: Buckets,
    /// Where the run keeps snapshots to resume from (`None`: it keeps none).
    pub snapshots: Option<&'a Snapshots>,
    /// Asked before every step: whether to stop ([`crate::interrupt::requested`]).
    pub stop: &'a (dyn Fn() -> bool + Sync),
}

impl<'a> TrainSetup<'a> {
    /// What the loop reports to and asks.
    pub fn control(&self) -> Control<'a> {
        Control { progress: self.progress, log: self.log, snapshots: self.snapshots, stop: self.stop }
    }
}

#[cfg(test)]
impl<'a> TrainSetup<'a> {
    /// The unit tests' set-up: pad 0, unknown 1, no word dropout, no log
    /// lines, exact shapes, no snapshots, never stopped.
    pub(crate) fn quiet(progress: &'a indicatif::ProgressBar) -> Self {
        TrainSetup {
            pad_id: 0,
            unk_id: 1,
            word_dropout: 0.0,
            progress,
            log: &|_| {},
            buckets: Buckets::EXACT,
            snapshots: None,
            stop: &|| false,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    pub step: usize,
    /// Mean training loss since the previous entry.
    pub train_loss: f64,
    pub validation_accuracy: f64,
    /// Accuracy over the validation examples that carry the planted pattern,
    /// and over the others, on shortcut data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marked_accuracy: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmarked_accuracy: Option<f64>,
    /// A rationale model's selection rates on the validation split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<SelectionRates>,
}

/// One validation pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Evaluation {
    pub accuracy: f64,
    /// Accuracy over the marked and over the unmarked examples, when the
    /// split has both.
    pub groups: Option<(f64, f64)>,
    pub selection: Option<SelectionRates>,
    /// A rationale model's target rate, which `stop_at_accuracy` also waits for.
    pub selection_target: Option<f64>,
}

/// How near its target a rationale model's validation rate must be for
/// `stop_at_accuracy` to stop it (Zhou et al.'s code: 0.01).
pub const RATE_TOLERANCE: f64 = 0.01;

impl Evaluation {
    /// The accuracy of `predictions` against `examples`' (label, marked)
    /// pairs, and apart over the marked and the unmarked examples when the
    /// split has both.
    pub(crate) fn of(predictions: &[u32], examples: &[(u32, bool)], selection: Option<SelectionRates>) -> Evaluation {
        let has_both = examples.iter().any(|e| e.1) && examples.iter().any(|e| !e.1);
        let accuracy_where = |keep: &dyn Fn(bool) -> bool| {
            let (p, l): (Vec<u32>, Vec<u32>) =
                examples.iter().zip(predictions).filter(|(e, _)| keep(e.1)).map(|(e, p)| (*p, e.0)).unzip();
            crate::model::predict::accuracy(&p, &l)
        };
        Evaluation {
            accuracy: accuracy_where(&|_| true),
            groups: has_both.then(|| (accuracy_where(&|marked| marked), accuracy_where(&|marked| !marked))),
            selection,
            selection_target: None,
        }
    }

    /// The evaluation of a model trained towards `target` selection rate.
    pub(crate) fn with_selection_target(self, target: Option<f64>) -> Evaluation {
        Evaluation { selection_target: target, ..self }
    }

    /// Whether it reaches `stop_at_accuracy`'s `bar`: the accuracy, and a
    /// rationale model's realised rate within [`RATE_TOLERANCE`] of its
    /// target (Zhou et al. stop a rationale model on both).
    pub(crate) fn reaches(&self, bar: f64) -> bool {
        let on_target = match (self.selection, self.selection_target) {
            (Some(rates), Some(target)) => (rates.realised - target).abs() <= RATE_TOLERANCE + 1e-9,
            _ => true,
        };
        self.accuracy >= bar && on_target
    }

    /// What `keep = "best"` compares.
    fn score(&self, by: BestBy) -> f64 {
        match (by, self.groups) {
            (BestBy::Balanced, Some((marked, unmarked))) => (marked + unmarked) / 2.0,
            _ => self.accuracy,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainSummary {
    pub steps: usize,
    /// The step of the returned weights, and their validation accuracy (the
    /// best evaluation by `best_by`, or the last one with `keep = "last"`).
    pub best_step: usize,
    pub best_validation_accuracy: f64,
    pub stopped_early: bool,
    /// Wall time of the whole run, validation included.
    pub seconds: f64,
    /// Of which validation passes.
    pub validation_seconds: f64,
    /// Training examples per second of training time (validation excluded).
    pub examples_per_second: f64,
    pub log: Vec<LogEntry>,
    /// The distinct `[rows, time]` batch shapes training and validation sent
    /// through the model: what a GPU compiled kernels for.
    #[serde(default)]
    pub shapes: Vec<[usize; 2]>,
}

/// burn's CPU backend has one RNG per process, and the unit tests train on
/// parallel threads: they take turns, or one test's seeding would move
/// another's dropout masks. (`grid run` gives each training a process of
/// its own when several run at once.) A test that draws masks outside
/// `train` takes its turn too.
#[cfg(test)]
pub(crate) static ONE_TRAINING_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Training stopped because the loss stopped being a number: the weights are
/// no longer a model, and nothing downstream may use them.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error(
    "training diverged: the loss became {loss} at step {step} ({}, learning rate {learning_rate}); \
     lower `learning_rate` or set `max_grad_norm`",
    match last_finite { Some(l) => format!("last finite loss {l:.4}"), None => "no finite loss before".into() }
)]
pub struct Diverged {
    pub step: usize,
    pub loss: f64,
    /// The loss of the step before, when there was one.
    pub last_finite: Option<f64>,
    pub learning_rate: f64,
}

/// Why training returned no model.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Stopped {
    #[error(transparent)]
    Diverged(#[from] Diverged),
    /// The run was asked to stop (Ctrl-C, SIGTERM): a rerun resumes from the
    /// last snapshot, if one was taken.
    #[error("training interrupted before step {step}{}", match resumes_from {
        Some(s) => format!("; a rerun resumes from the snapshot at step {s}"),
        None => String::new(),
    })]
    Interrupted { step: usize, resumes_from: Option<usize> },
}

/// A classifier taken as it is (`fine_tune = false`): no step is run; the
/// summary holds its validation accuracy, measured as training measures it.
pub fn untrained<B, M>(
    model: M,
    setup: &TrainSetup,
    validation: &[TrainExample],
    device: &B::Device,
) -> (M::InnerModule, TrainSummary)
where
    B: AutodiffBackend,
    M: AutodiffModule<B>,
    M::InnerModule: Classifier<B::InnerBackend>,
{
    let started = Instant::now();
    let shapes = ShapeLog::default();
    let model = model.valid();
    let accuracy =
        tokens::validation_evaluation::<B::InnerBackend, M::InnerModule>(validation, setup, &shapes, device)(&model)
            .accuracy;
    let seconds = started.elapsed().as_secs_f64();
    let summary = TrainSummary {
        steps: 0,
        best_step: 0,
        best_validation_accuracy: accuracy,
        stopped_early: false,
        seconds,
        validation_seconds: seconds,
        examples_per_second: 0.0,
        log: Vec::new(),
        shapes: shapes.shapes(),
    };
    (model, summary)
}

/// Trains `model` and returns the kept one (see [`Keep`]) with a summary.
pub fn train<B, M>(
    model: M,
    spec: &TrainingSpec,
    setup: &TrainSetup,
    train_set: &[TrainExample],
    validation: &[TrainExample],
    device: &B::Device,
) -> Result<(M::InnerModule, TrainSummary), Stopped>
where
    B: AutodiffBackend,
    M: Trainable<B> + AutodiffModule<B>,
    M::InnerModule: Classifier<B::InnerBackend>,
{
    let shapes = ShapeLog::default();
    let evaluate = tokens::validation_evaluation::<B::InnerBackend, M::InnerModule>(validation, setup, &shapes, device);
    let data = tokens::TokenBatches { examples: train_set, setup };
    fit::fit_with_spec(model, spec, &setup.control(), &data, &|_, m: &M::InnerModule| evaluate(m), &shapes, device)
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TokenBatch;
    use burn::backend::Flex;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;
    use recipe::{Keep, Optimizer as OptimizerSpec};
    use tokens::bucketed_batches;

    #[test]
    fn divergence_names_the_step_and_the_last_finite_loss() {
        let d = Diverged { step: 41, loss: f64::NAN, last_finite: Some(2.3456789), learning_rate: 0.5 };
        let message = d.to_string();
        assert!(message.contains("at step 41") && message.contains("last finite loss 2.3457"), "{message}");
        let first = Diverged { step: 1, loss: f64::INFINITY, last_finite: None, learning_rate: 0.5 };
        assert!(first.to_string().contains("no finite loss before"), "{first}");
    }

    use crate::model::bilstm::{BiLstmClassifier, BiLstmConfig};
    use crate::model::predict::predict;
    use crate::values::{Positive, Share};
    use burn::backend::Autodiff;

    /// Label 1 iff token 3 occurs: a rule a BiLSTM learns in a few dozen steps.
    fn toy_data(n: usize, seed: u64) -> Vec<TrainExample> {
        use rand::Rng;
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let len = rng.random_range(2..8);
                let mut ids: Vec<u32> = (0..len).map(|_| rng.random_range(4..12)).collect();
                let label = rng.random_bool(0.5) as u32;
                if label == 1 {
                    let at = rng.random_range(0..len);
                    ids[at] = 3;
                }
                TrainExample { ids, label, marked: false }
            })
            .collect()
    }

    fn fit(seed: u64) -> (BiLstmClassifier<Flex>, TrainSummary) {
        fit_with(seed, 0.1, Buckets::EXACT)
    }

    fn fit_with(seed: u64, dropout: f64, buckets: Buckets) -> (BiLstmClassifier<Flex>, TrainSummary) {
        fit_keeping(seed, dropout, buckets, Keep::Best { patience: Positive::new(200), by: BestBy::Accuracy })
    }

    fn fit_keeping(seed: u64, dropout: f64, buckets: Buckets, keep: Keep) -> (BiLstmClassifier<Flex>, TrainSummary) {
        fit_prepared(seed, dropout, buckets, keep, |m| m)
    }

    fn fit_prepared(
        seed: u64,
        dropout: f64,
        buckets: Buckets,
        keep: Keep,
        prepare: impl FnOnce(BiLstmClassifier<Autodiff<Flex>>) -> BiLstmClassifier<Autodiff<Flex>>,
    ) -> (BiLstmClassifier<Flex>, TrainSummary) {
        fit_run(Run { seed, dropout, buckets, ..Run::toy(keep, 50) }, prepare).unwrap()
    }

    /// A toy training run's settings, for the tests that vary them.
    struct Run<'a> {
        seed: u64,
        dropout: f64,
        buckets: Buckets,
        keep: Keep,
        eval_every: usize,
        snapshots: Option<&'a Snapshots>,
        /// Stop (as Ctrl-C does) before this many batches have run.
        stop_after: Option<usize>,
        /// Where the run's log lines go.
        lines: Option<&'a std::sync::Mutex<Vec<String>>>,
        /// `stop_at_accuracy`.
        stop_at: Option<f64>,
    }

    impl Run<'_> {
        /// Seed 5, dropout 0.1, exact buckets, nothing else set.
        fn toy(keep: Keep, eval_every: usize) -> Self {
            Run {
                seed: 5,
                dropout: 0.1,
                buckets: Buckets::EXACT,
                keep,
                eval_every,
                snapshots: None,
                stop_after: None,
                lines: None,
                stop_at: None,
            }
        }
    }

    fn fit_run(
        run: Run,
        prepare: impl FnOnce(BiLstmClassifier<Autodiff<Flex>>) -> BiLstmClassifier<Autodiff<Flex>>,
    ) -> Result<(BiLstmClassifier<Flex>, TrainSummary), Stopped> {
        let Run { seed, dropout, buckets, keep, eval_every, snapshots, stop_after, lines, stop_at } = run;
        let config = BiLstmConfig {
            vocab_size: 12,
            embedding_dim: 8,
            hidden_size: 8,
            attention_size: 8,
            mlp_size: 8,
            num_outputs: 1,
            dropout,
            pad_id: 0,
        };
        let device = Default::default();
        let model = prepare(BiLstmClassifier::<Autodiff<Flex>>::new(
            &config,
            &mut ChaCha8Rng::seed_from_u64(seed),
            None,
            &device,
        ));
        let spec = TrainingSpec {
            batch_size: Positive::new(16),
            optimizer: OptimizerSpec::Sgd { momentum: Share::new(0.9) },
            learning_rate: 0.1,
            weight_decay: 5e-6,
            schedule: crate::train::recipe::Schedule::Constant,
            max_steps: Positive::new(200),
            eval_every: Positive::new(eval_every),
            keep,
            max_grad_norm: None,
            stop_at_accuracy: stop_at.map(Share::new),
            seed,
        };
        let progress = indicatif::ProgressBar::hidden();
        let log = |line: String| {
            if let Some(lines) = lines {
                lines.lock().unwrap().push(line);
            }
        };
        let batches = std::sync::atomic::AtomicUsize::new(0);
        let stop = || {
            let taken = batches.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            stop_after.is_some_and(|n| taken >= n)
        };
        let setup = TrainSetup {
            word_dropout: 0.1,
            log: &log,
            buckets,
            snapshots,
            stop: &stop,
            ..TrainSetup::quiet(&progress)
        };
        // Under `best_by = "balanced"` the examples of label 1 (those with
        // token 3) stand in for the ones that carry a planted pattern.
        let mut validation = toy_data(100, 2);
        if matches!(keep, Keep::Best { by: BestBy::Balanced, .. }) {
            validation.iter_mut().for_each(|e| e.marked = e.label == 1);
        }
        train::<Autodiff<Flex>, _>(model, &spec, &setup, &toy_data(400, 1), &validation, &device)
    }

    /// A run stopped part way and started again goes on from its last snapshot
    /// and ends where a run never stopped ends: same curve, same weights, bit
    /// for bit (dropout and word dropout included). A damaged snapshot is not
    /// used: the run starts over and still ends there.
    #[test]
    fn a_stopped_run_resumes_from_its_snapshot_and_ends_as_an_unbroken_one() {
        let keep = Keep::Best { patience: Positive::new(500), by: BestBy::Accuracy };
        let lines = std::sync::Mutex::new(Vec::new());
        // 25 batches an epoch: evaluations at 30, 60, 90 fall inside epochs.
        let run = |snapshots, stop_after| Run { snapshots, stop_after, lines: Some(&lines), ..Run::toy(keep, 30) };
        let (unbroken, whole) = fit_run(run(None, None), |m| m).unwrap();
        let probe: Vec<Vec<u32>> = toy_data(50, 9).into_iter().map(|e| e.ids).collect();
        let refs: Vec<&[u32]> = probe.iter().map(Vec::as_slice).collect();
        let logits = |m: &BiLstmClassifier<Flex>| -> Vec<f32> {
            m.logits(&TokenBatch::<Flex>::from_sequences(&refs, 0, &Default::default())).into_data().to_vec().unwrap()
        };

        let dir = tempfile::tempdir().unwrap();
        let snapshots = Snapshots { dir: dir.path().join("resume"), every: std::time::Duration::ZERO };
        let stopped = fit_run(run(Some(&snapshots), Some(100)), |m| m).expect_err("stopped");
        // The snapshot is the step it stopped at, between two evaluations
        // (the BiLSTM draws its masks on the host).
        assert_eq!(stopped, Stopped::Interrupted { step: 101, resumes_from: Some(100) });
        assert!(stopped.to_string().contains("resumes from the snapshot at step 100"), "{stopped}");
        assert_eq!(Snapshots::step_in(&snapshots.dir), Some(100));
        let folders = std::fs::read_dir(&snapshots.dir).unwrap().count();
        assert_eq!(folders, 2, "snapshot.json and step-100 only");

        lines.lock().unwrap().clear();
        let (resumed, summary) = fit_run(run(Some(&snapshots), None), |m| m).unwrap();
        assert_eq!(lines.lock().unwrap()[0], "resuming from the snapshot at step 100");
        assert_eq!(summary.log, whole.log);
        assert_eq!((summary.steps, summary.best_step), (whole.steps, whole.best_step));
        assert_eq!(logits(&resumed), logits(&unbroken));

        // Stopped before the first evaluation: resumed there all the same.
        snapshots.clear();
        let stopped = fit_run(run(Some(&snapshots), Some(10)), |m| m).expect_err("stopped");
        assert_eq!(stopped, Stopped::Interrupted { step: 11, resumes_from: Some(10) });
        let (resumed, summary) = fit_run(run(Some(&snapshots), None), |m| m).unwrap();
        assert_eq!(summary.log, whole.log);
        assert_eq!(logits(&resumed), logits(&unbroken));

        // Stopped again, then a byte of the weights flipped.
        snapshots.clear();
        fit_run(run(Some(&snapshots), Some(70)), |m| m).expect_err("stopped");
        let weights = snapshots.dir.join("step-70").join("model.mpk");
        let mut bytes = std::fs::read(&weights).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 1;
        std::fs::write(&weights, bytes).unwrap();
        lines.lock().unwrap().clear();
        let (restarted, again) = fit_run(run(Some(&snapshots), None), |m| m).unwrap();
        let first = lines.lock().unwrap()[0].clone();
        assert!(first.starts_with("snapshot not used (") && first.contains("does not match its checksum"), "{first}");
        assert_eq!(again.log, whole.log);
        assert_eq!(logits(&restarted), logits(&unbroken));
    }

    #[test]
    fn learns_a_token_rule_and_is_deterministic_under_a_seed() {
        let (a, summary) = fit(5);
        assert!(summary.best_validation_accuracy > 0.9, "{summary:?}");
        let (b, again) = fit(5);
        assert_eq!(summary.log, again.log, "same seed, same training curve");
        let probe: Vec<Vec<u32>> = toy_data(50, 9).into_iter().map(|e| e.ids).collect();
        let refs: Vec<&[u32]> = probe.iter().map(Vec::as_slice).collect();
        let device = Default::default();
        let logits = |m: &BiLstmClassifier<Flex>| -> Vec<f32> {
            let batch = TokenBatch::<Flex>::from_sequences(&refs, 0, &device);
            m.logits(&batch).into_data().to_vec().unwrap()
        };
        assert_eq!(logits(&a), logits(&b), "same seed, same weights");
        assert_eq!(
            predict(&a, &refs, 7, 0, &device),
            predict(&a, &refs, 50, 0, &device),
            "batching does not change predictions"
        );
        let (c, _) = fit(6);
        assert_ne!(logits(&a), logits(&c));
    }

    /// `best` returns the evaluation with the highest accuracy and may stop
    /// early; `last` returns the weights of the final step, whatever their score.
    #[test]
    fn keep_best_or_last() {
        let (_, best) =
            fit_keeping(5, 0.1, Buckets::EXACT, Keep::Best { patience: Positive::new(50), by: BestBy::Accuracy });
        let top = best.log.iter().map(|e| e.validation_accuracy).fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(best.best_validation_accuracy, top, "{best:?}");
        let (_, last) = fit_keeping(5, 0.1, Buckets::EXACT, Keep::Last);
        assert!(!last.stopped_early);
        assert_eq!((last.steps, last.best_step), (200, 200));
        assert_eq!(Some(last.best_validation_accuracy), last.log.last().map(|e| e.validation_accuracy));
    }

    /// Frozen embeddings leave training as they started (no step, no weight
    /// decay), while every other layer moves; unfrozen ones move.
    #[test]
    fn frozen_embeddings_stay_as_they_start_while_the_rest_trains() {
        type Data = burn::tensor::TensorData;
        let started = std::cell::RefCell::new(None::<(Data, Data)>);
        let remember = |m: BiLstmClassifier<Autodiff<Flex>>| {
            let rows = m.embeddings.weight.val().inner().into_data();
            *started.borrow_mut() = Some((rows, m.lstm_forward.weight_ih.val().inner().into_data()));
            m
        };
        let (frozen, _) = fit_prepared(5, 0.1, Buckets::EXACT, Keep::Last, |m| remember(m).with_frozen_embeddings());
        let (rows, lstm) = started.borrow_mut().take().unwrap();
        assert_eq!(frozen.embeddings.weight.val().into_data(), rows);
        assert_ne!(frozen.lstm_forward.weight_ih.val().into_data(), lstm, "the rest trains");
        let (trained, _) = fit_prepared(5, 0.1, Buckets::EXACT, Keep::Last, remember);
        assert_ne!(trained.embeddings.weight.val().into_data(), rows);
    }

    /// `stop_at_accuracy` (Zhou et al.'s rule) ends the run at the first
    /// evaluation that reaches the bar and returns that evaluation's weights,
    /// under `keep = "best"` and `"last"` alike.
    #[test]
    fn stop_at_accuracy_ends_at_the_first_evaluation_that_reaches_it() {
        let run = |keep, stop_at| Run { stop_at, ..Run::toy(keep, 10) };
        let (_, unbroken) = fit_run(run(Keep::Last, None), |m| m).unwrap();
        let accuracies: Vec<(usize, f64)> = unbroken.log.iter().map(|e| (e.step, e.validation_accuracy)).collect();
        // A bar some evaluation reaches, but not the first one.
        let bar = accuracies.iter().map(|e| e.1).fold(f64::NEG_INFINITY, f64::max);
        assert!(accuracies[0].1 < bar, "{accuracies:?}");
        let first = accuracies.iter().find(|e| e.1 >= bar).unwrap().0;
        for keep in [Keep::Last, Keep::Best { patience: Positive::new(500), by: BestBy::Accuracy }] {
            let (_, stopped) = fit_run(run(keep, Some(bar)), |m| m).unwrap();
            assert!(stopped.stopped_early, "{keep:?}");
            assert_eq!((stopped.steps, stopped.best_step), (first, first), "{keep:?}");
            assert_eq!(stopped.best_validation_accuracy, bar);
            // Up to the stop, the same run.
            let logged: Vec<(usize, f64)> = stopped.log.iter().map(|e| (e.step, e.validation_accuracy)).collect();
            assert_eq!(logged, accuracies[..logged.len()]);
        }
    }

    /// A rationale model's evaluation reaches the bar only with its rate
    /// within 0.01 of its target (Zhou et al.'s stop); a model without a
    /// target, on accuracy alone.
    #[test]
    fn a_rationale_model_stops_only_near_its_rate() {
        let rates = |realised| Some(SelectionRates { realised, expected: realised, per_review: realised });
        let evaluation = |realised| Evaluation::of(&[1, 0], &[(1, false), (0, false)], rates(realised));
        assert!(evaluation(0.20).reaches(0.97), "no target: accuracy alone");
        assert!(evaluation(0.095).with_selection_target(Some(0.09)).reaches(0.97));
        assert!(evaluation(0.10).with_selection_target(Some(0.09)).reaches(0.97), "0.01 off is within");
        assert!(!evaluation(0.11).with_selection_target(Some(0.09)).reaches(0.97));
        assert!(
            !Evaluation::of(&[1, 1], &[(1, false), (0, false)], rates(0.09))
                .with_selection_target(Some(0.09))
                .reaches(0.97)
        );
    }

    /// `best_by = "balanced"` keeps the evaluation with the best mean of the
    /// marked and unmarked examples' accuracies, logs both, and reports the
    /// kept step's own accuracy; plain accuracy logs no groups.
    #[test]
    fn best_by_balanced_weighs_marked_and_unmarked_examples_alike() {
        let keep = Keep::Best { patience: Positive::new(200), by: BestBy::Balanced };
        let (_, summary) = fit_run(Run::toy(keep, 10), |m| m).unwrap();
        let balanced = |e: &LogEntry| (e.marked_accuracy.unwrap() + e.unmarked_accuracy.unwrap()) / 2.0;
        let top = summary.log.iter().map(balanced).fold(f64::NEG_INFINITY, f64::max);
        let kept = summary.log.iter().find(|e| e.step == summary.best_step).unwrap();
        assert_eq!(balanced(kept), top, "{summary:?}");
        assert_eq!(summary.log.iter().find(|e| balanced(e) == top).map(|e| e.step), Some(summary.best_step));
        assert_eq!(summary.best_validation_accuracy, kept.validation_accuracy);
        // The groups' accuracies make up the whole split's.
        let marked = toy_data(100, 2).iter().filter(|e| e.label == 1).count() as f64 / 100.0;
        for e in &summary.log {
            let whole = marked * e.marked_accuracy.unwrap() + (1.0 - marked) * e.unmarked_accuracy.unwrap();
            assert!((whole - e.validation_accuracy).abs() < 1e-9, "{e:?}");
        }
        let (_, plain) = fit(5);
        assert!(plain.log.iter().all(|e| e.marked_accuracy.is_none() && e.unmarked_accuracy.is_none()));
    }

    /// The `[PAD]` row never reaches the loss (padding is masked), so zeroing
    /// it (`pad_embedding = "zero"`) trains every other weight bit for bit as
    /// a drawn row does: the two settings differ in that row only.
    #[test]
    fn the_pad_row_changes_nothing_else_in_training() {
        let keep = Keep::Best { patience: Positive::new(200), by: BestBy::Accuracy };
        let (learned, a) = fit_prepared(5, 0.1, Buckets::EXACT, keep, |m| m);
        let (zeroed, b) = fit_prepared(5, 0.1, Buckets::EXACT, keep, |m| m.with_zero_pad_row(0));
        assert_eq!(a.log, b.log);
        let rows = |m: &BiLstmClassifier<Flex>| -> Vec<f32> { m.embeddings.weight.val().into_data().to_vec().unwrap() };
        let (learned_rows, zeroed_rows) = (rows(&learned), rows(&zeroed));
        assert_eq!(learned_rows[8..], zeroed_rows[8..], "rows 1.. (dim 8)");
        assert!(learned_rows[..8].iter().all(|&v| v != 0.0) && zeroed_rows[..8].iter().all(|&v| v == 0.0));
        let probe: Vec<Vec<u32>> = toy_data(50, 9).into_iter().map(|e| e.ids).collect();
        let refs: Vec<&[u32]> = probe.iter().map(Vec::as_slice).collect();
        let device = Default::default();
        assert_eq!(predict(&learned, &refs, 16, 0, &device), predict(&zeroed, &refs, 16, 0, &device));
    }

    /// A rate that blows the weights up ends training with an error naming
    /// the step, instead of a model of NaNs that later steps would use.
    #[test]
    fn a_diverging_run_is_an_error_not_a_model() {
        let config = BiLstmConfig {
            vocab_size: 12,
            embedding_dim: 8,
            hidden_size: 8,
            attention_size: 8,
            mlp_size: 8,
            num_outputs: 1,
            dropout: 0.0,
            pad_id: 0,
        };
        let device = Default::default();
        let model = BiLstmClassifier::<Autodiff<Flex>>::new(&config, &mut ChaCha8Rng::seed_from_u64(1), None, &device);
        let spec = TrainingSpec {
            batch_size: Positive::new(16),
            optimizer: OptimizerSpec::Sgd { momentum: Share::new(0.9) },
            learning_rate: 1e38,
            weight_decay: 0.0,
            schedule: crate::train::recipe::Schedule::Constant,
            max_steps: Positive::new(50),
            eval_every: Positive::new(25),
            keep: Keep::Last,
            max_grad_norm: None,
            stop_at_accuracy: None,
            seed: 1,
        };
        let progress = indicatif::ProgressBar::hidden();
        let setup = TrainSetup::quiet(&progress);
        let stopped = train::<Autodiff<Flex>, _>(model, &spec, &setup, &toy_data(400, 1), &toy_data(100, 2), &device)
            .expect_err("diverges");
        let Stopped::Diverged(error) = stopped else { panic!("{stopped:?}") };
        assert!(error.step >= 2 && error.step <= 50 && !error.loss.is_finite(), "{error:?}");
        assert!(error.to_string().contains("lower `learning_rate`"), "{error}");
    }

    /// Padding a batch to its bucket changes no loss and no accuracy: padded
    /// positions are masked, filler rows cut before the loss. (With dropout the
    /// masks are drawn over the padded shape, so the draws differ: not compared.)
    #[test]
    fn bucketed_training_follows_the_exact_curve() {
        let (exact_model, exact) = fit_with(5, 0.0, Buckets::EXACT);
        let (bucketed_model, bucketed) = fit_with(5, 0.0, Buckets::GPU);
        assert_eq!(exact.log.len(), bucketed.log.len());
        for (a, b) in exact.log.iter().zip(&bucketed.log) {
            assert!((a.train_loss - b.train_loss).abs() < 1e-5, "{a:?} vs {b:?}");
            assert_eq!(a.validation_accuracy, b.validation_accuracy);
        }
        let probe: Vec<Vec<u32>> = toy_data(50, 9).into_iter().map(|e| e.ids).collect();
        let refs: Vec<&[u32]> = probe.iter().map(Vec::as_slice).collect();
        let logits = |m: &BiLstmClassifier<Flex>| -> Vec<f32> {
            m.logits(&TokenBatch::<Flex>::from_sequences(&refs, 0, &Default::default())).into_data().to_vec().unwrap()
        };
        for (a, b) in logits(&exact_model).iter().zip(logits(&bucketed_model)) {
            assert!((a - b).abs() < 1e-4, "{a} vs {b}");
        }
        // Lengths 2..8 and batches of 16 (and 256 for validation): one length
        // bucket, at most a few row counts.
        assert!(exact.shapes.len() > bucketed.shapes.len(), "{:?} vs {:?}", exact.shapes, bucketed.shapes);
        assert!(
            bucketed.shapes.iter().all(|&[rows, time]| time == 16 && rows.is_power_of_two()),
            "{:?}",
            bucketed.shapes
        );
    }

    #[test]
    fn buckets_cover_every_example_once() {
        let examples: Vec<TrainExample> =
            (0..103).map(|i| TrainExample { ids: vec![1; i % 17 + 1], label: 0, marked: false }).collect();
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let batches = bucketed_batches(&examples, 8, &mut rng);
        let mut seen: Vec<usize> = batches.concat();
        seen.sort();
        assert_eq!(seen, (0..103).collect::<Vec<_>>());
        assert!(batches.iter().all(|b| b.len() <= 8));
    }
}
