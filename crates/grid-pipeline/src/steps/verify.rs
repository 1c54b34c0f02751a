//! `verify`: does the shortcut model use the shortcut, and only because of the
//! shortcut data? (Bastings et al. §2.4; PROTOCOL §1, "Verification"; for the
//! article manipulations Zhou et al. §3 and PROTOCOL §2.)

use std::path::Path;

use anyhow::Result;

use crate::context::StepContext;
use crate::io::write_json;
use crate::spec::TestSet;
use crate::spec::VerificationSpec;
use burn::prelude::Backend;
use burn::tensor::backend::AutodiffBackend;
use grid_core::buckets::Buckets;
use grid_core::data::Example;
use grid_core::model::checkpoint::{self, Checkpoint};
use grid_core::model::predict::{accuracy, macro_f1, predict};
use grid_core::model::shapes::Shaped;
use grid_methods::shortcut::{ShortcutOptions, SyntheticExample};

pub const FILE: &str = "verification.json";

/// What the step writes to [`FILE`]; the report reads the same type.
pub use grid_methods::shortcut::verification::Verification;

/// Largest probability that a model bounded by the reassignment's accuracy
/// reaches the measured one by luck (Zhou et al. §3's binomial bound).
const MAX_LUCK: f64 = 0.01;

// Verification's statistics live with the other statistics of the methods
// layer; they keep their path here.
pub use grid_methods::metrics::intervals::{binomial_tail, paired_difference_interval, wilson_interval};

/// What the synthetic test labels allow a model that ignores the shortcut.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Chance {
    /// Inserted rules: labels balanced over the C classes, so the largest
    /// class share is 1/C (50% for binary grids, up to one example). The
    /// original model must land there, and the shortcut model must keep the
    /// original task.
    Balanced { classes: usize },
    /// Label reassignment: at most `bound = max(r, 1 − r)` in expectation.
    /// The original task is unlearnable at r = 0.5, so there is no drop check.
    Reassigned { bound: f64 },
}

impl Chance {
    pub fn of(options: &ShortcutOptions) -> Chance {
        match options.kind.article_layout() {
            None => Chance::Balanced { classes: options.tokens.classes() },
            Some(_) => Chance::Reassigned { bound: options.keep_probability.max(1.0 - options.keep_probability) },
        }
    }
}

/// The accuracies one verification measures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measured {
    pub shortcut_on_synthetic: f64,
    pub original_on_synthetic: f64,
    pub shortcut_on_original: f64,
    pub original_on_original: f64,
    /// Size of the synthetic test set.
    pub synthetic_examples: usize,
    /// 95% interval of the original model's accuracy minus the shortcut
    /// model's on the original test set, paired by example; `None` when the
    /// per-example outcomes are not at hand.
    pub drop_interval: Option<(f64, f64)>,
}

impl Measured {
    /// How many synthetic examples the shortcut model got right.
    fn synthetic_right(&self) -> usize {
        (self.shortcut_on_synthetic * self.synthetic_examples as f64).round() as usize
    }

    /// 95% interval of the shortcut model's synthetic accuracy.
    pub fn synthetic_interval(&self) -> (f64, f64) {
        wilson_interval(self.synthetic_right(), self.synthetic_examples)
    }
}

/// The thresholds whose outcome the test sets' size leaves open: the bar lies
/// inside the measurement's 95% interval, so another seed or CPU (another
/// rounding) could turn a pass into a failure or back. Not failures: a
/// sentence each, saying which way the point estimate went.
pub fn close_calls(thresholds: &VerificationSpec, chance: Chance, m: &Measured) -> Vec<String> {
    let mut calls = Vec::new();
    let min = thresholds.min_synthetic_accuracy.get();
    let (low, high) = m.synthetic_interval();
    if low < min && min <= high {
        calls.push(format!(
            "shortcut model's {:.1}% on {} synthetic examples: its 95% interval, {:.1}–{:.1}%, holds the {:.1}% bar",
            100.0 * m.shortcut_on_synthetic,
            m.synthetic_examples,
            100.0 * low,
            100.0 * high,
            100.0 * min
        ));
    }
    if let (Chance::Balanced { .. }, Some((low, high))) = (chance, m.drop_interval) {
        let allowed = thresholds.max_original_drop.get();
        if low <= allowed && allowed <= high {
            calls.push(format!(
                "shortcut model loses {:.1} points on the original test set: the paired 95% interval, {:.1} to {:.1}, \
                 holds the {:.1} allowed",
                100.0 * (m.original_on_original - m.shortcut_on_original),
                100.0 * low,
                100.0 * high,
                100.0 * allowed
            ));
        }
    }
    calls
}

/// Applies the thresholds to measured accuracies.
pub fn judge(thresholds: &VerificationSpec, chance: Chance, m: &Measured) -> Vec<String> {
    let mut failures = Vec::new();
    let min = thresholds.min_synthetic_accuracy.get();
    if m.shortcut_on_synthetic < min {
        failures.push(format!(
            "shortcut model reaches {:.1}% on the synthetic test set (needs ≥ {:.1}%)",
            100.0 * m.shortcut_on_synthetic,
            100.0 * min
        ));
    }
    let tolerance = thresholds.chance_tolerance.get();
    match chance {
        Chance::Balanced { classes } => {
            let level = 1.0 / classes as f64;
            if (m.original_on_synthetic - level).abs() > tolerance {
                failures.push(format!(
                    "original model reaches {:.1}% on the synthetic test set (chance is {}% ± {:.1})",
                    100.0 * m.original_on_synthetic,
                    // 50%, 25%, 33.3%: whole percentages print whole.
                    format!("{:.1}", 100.0 * level).trim_end_matches(".0"),
                    100.0 * tolerance
                ));
            }
            let drop = m.original_on_original - m.shortcut_on_original;
            if drop > thresholds.max_original_drop.get() {
                failures.push(format!(
                    "shortcut model loses {:.1} points on the original test set (at most {:.1} allowed)",
                    100.0 * drop,
                    100.0 * thresholds.max_original_drop.get()
                ));
            }
        }
        Chance::Reassigned { bound } => {
            let n = m.synthetic_examples;
            let luck = binomial_tail(n, m.synthetic_right(), bound);
            if luck.is_nan() || luck >= MAX_LUCK {
                failures.push(format!(
                    "shortcut model's {:.1}% on {n} reassigned test examples is within reach of a model that \
                     ignores the manipulation (bound {:.1}%, P = {luck:.3})",
                    100.0 * m.shortcut_on_synthetic,
                    100.0 * bound
                ));
            }
            if m.original_on_synthetic > bound + tolerance {
                failures.push(format!(
                    "original model reaches {:.1}% on the manipulated test set, above the {:.1}% (+ {:.1}) \
                     the reassigned labels allow without the manipulation",
                    100.0 * m.original_on_synthetic,
                    100.0 * bound,
                    100.0 * tolerance
                ));
            }
        }
    }
    failures
}

fn accuracy_of<B: Backend>(model: &Checkpoint<B>, examples: &[Example], buckets: Buckets, device: &B::Device) -> f64 {
    let (predictions, labels) = predictions_of(model, examples, buckets, device);
    accuracy(&predictions, &labels)
}

/// Accuracy and macro-F1 from one pass.
pub(crate) fn scores_of<B: Backend>(
    model: &Checkpoint<B>,
    examples: &[Example],
    buckets: Buckets,
    device: &B::Device,
) -> (f64, f64) {
    let (accuracy, f1, _) = scored_answers(model, examples, buckets, device);
    (accuracy, f1)
}

/// Accuracy, macro-F1 and whether each example was answered right.
fn scored_answers<B: Backend>(
    model: &Checkpoint<B>,
    examples: &[Example],
    buckets: Buckets,
    device: &B::Device,
) -> (f64, f64, Vec<bool>) {
    let (predictions, labels) = predictions_of(model, examples, buckets, device);
    let right = predictions.iter().zip(&labels).map(|(p, l)| p == l).collect();
    (accuracy(&predictions, &labels), macro_f1(&predictions, &labels), right)
}

fn predictions_of<B: Backend>(
    model: &Checkpoint<B>,
    examples: &[Example],
    buckets: Buckets,
    device: &B::Device,
) -> (Vec<u32>, Vec<u32>) {
    let max_length = model.config.max_length();
    let encoded: Vec<Vec<u32>> = examples.iter().map(|e| model.encoder.encode(&e.text, max_length).ids).collect();
    let refs: Vec<&[u32]> = encoded.iter().map(Vec::as_slice).collect();
    let predictions = predict(&Shaped::new(&model.model, buckets), &refs, 256, model.encoder.pad_id(), device);
    (predictions, examples.iter().map(|e| e.label).collect())
}

/// Inputs: shortcut model, original model, synth, corpus.
pub fn run(thresholds: &VerificationSpec, chance: Chance, ctx: &StepContext, out: &Path) -> Result<()> {
    grid_core::with_autodiff_backend!(ctx.compute, |B, device| {
        run_on::<<B as AutodiffBackend>::InnerBackend>(thresholds, chance, ctx, out, &device)
    })
}

fn run_on<B: Backend>(
    thresholds: &VerificationSpec,
    chance: Chance,
    ctx: &StepContext,
    out: &Path,
    device: &B::Device,
) -> Result<()> {
    let shortcut = checkpoint::load::<B>(&ctx.inputs[0], device)?;
    let original = checkpoint::load::<B>(&ctx.inputs[1], device)?;
    // Only examples whose shortcut survives the shortcut model's truncation.
    let max_length = shortcut.config.max_length();
    let visible = |v: Vec<SyntheticExample>| -> (Vec<Example>, usize) {
        let total = v.len();
        let kept: Vec<Example> = v
            .into_iter()
            .filter(|s| super::attribute::visible_regions(&shortcut.encoder.encode(&s.text, max_length), s).is_some())
            .map(|s| Example { text: s.text, label: s.label })
            .collect();
        let cut = total - kept.len();
        (kept, cut)
    };
    let (synthetic, synthetic_truncated) = visible(super::synth::load_test(&ctx.inputs[2], TestSet::Synthetic)?);
    let (flip, _) = visible(super::synth::load_test(&ctx.inputs[2], TestSet::Flip)?);
    anyhow::ensure!(
        !synthetic.is_empty(),
        "truncation to {max_length} tokens cut the shortcut from every one of the {synthetic_truncated} synthetic \
         test examples; raise the dataset's `max_length`"
    );
    let original_test = super::corpus::load(&ctx.inputs[3])?.test;

    let (shortcut_on_original, shortcut_f1, shortcut_right) =
        scored_answers(&shortcut, &original_test, ctx.compute.buckets, device);
    let (original_on_original, original_f1, original_right) =
        scored_answers(&original, &original_test, ctx.compute.buckets, device);
    let m = Measured {
        shortcut_on_synthetic: accuracy_of(&shortcut, &synthetic, ctx.compute.buckets, device),
        original_on_synthetic: accuracy_of(&original, &synthetic, ctx.compute.buckets, device),
        shortcut_on_original,
        original_on_original,
        synthetic_examples: synthetic.len(),
        drop_interval: paired_difference_interval(&original_right, &shortcut_right),
    };
    let shortcut_on_flip = accuracy_of(&shortcut, &flip, ctx.compute.buckets, device);
    let failures = judge(thresholds, chance, &m);
    let close_calls = close_calls(thresholds, chance, &m);
    write_json(
        &out.join(FILE),
        &Verification {
            shortcut_model_on_synthetic: m.shortcut_on_synthetic,
            original_model_on_synthetic: m.original_on_synthetic,
            shortcut_model_on_flip: shortcut_on_flip,
            shortcut_model_on_original: m.shortcut_on_original,
            original_model_on_original: m.original_on_original,
            shortcut_model_macro_f1: Some(shortcut_f1),
            original_model_macro_f1: Some(original_f1),
            accuracy_without_shortcut: match chance {
                // Binary files keep their old form; the plots read 50% then.
                Chance::Balanced { classes: 2 } => None,
                Chance::Balanced { classes } => Some(1.0 / classes as f64),
                Chance::Reassigned { bound } => Some(bound),
            },
            synthetic_examples: synthetic.len(),
            synthetic_truncated,
            original_examples: original_test.len(),
            shortcut_model_on_synthetic_interval: Some(m.synthetic_interval()),
            original_drop_interval: m.drop_interval,
            passed: failures.is_empty(),
            failures,
            close_calls,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(synthetic: f64, original_on_synthetic: f64, shortcut_on_original: f64) -> Measured {
        Measured {
            shortcut_on_synthetic: synthetic,
            original_on_synthetic,
            shortcut_on_original,
            original_on_original: 0.88,
            synthetic_examples: 1000,
            drop_interval: None,
        }
    }

    #[test]
    fn close_calls_are_bars_inside_the_interval() {
        let t = VerificationSpec::default(); // 0.99, ±0.1, 0.02
        let balanced = Chance::Balanced { classes: 2 };
        // 99.4% of 500 passes the 99% bar, but its interval reaches below it.
        let m =
            Measured { synthetic_examples: 500, drop_interval: Some((0.009, 0.039)), ..measured(0.994, 0.5, 0.856) };
        assert_eq!(judge(&t, balanced, &m).len(), 1, "the drop of 2.4 points fails");
        let calls = close_calls(&t, balanced, &m);
        assert_eq!(calls.len(), 2, "{calls:?}");
        assert!(calls[0].contains("99.4% on 500") && calls[0].contains("99.0% bar"), "{calls:?}");
        assert!(calls[1].contains("loses 2.4 points") && calls[1].contains("0.9 to 3.9"), "{calls:?}");
        // 1,000 of 1,000 and a drop interval wholly under the bar: nothing open.
        let m = Measured { drop_interval: Some((-0.01, 0.015)), ..measured(1.0, 0.5, 0.87) };
        assert!(close_calls(&t, balanced, &m).is_empty());
        // A reassignment has no drop condition.
        let m = Measured { drop_interval: Some((0.0, 0.5)), ..measured(1.0, 0.5, 0.5) };
        assert!(close_calls(&t, Chance::Reassigned { bound: 0.5 }, &m).is_empty());
    }

    #[test]
    fn thresholds_by_hand() {
        let t = VerificationSpec::default(); // 0.99, ±0.1, 0.02
        assert!(judge(&t, Chance::Balanced { classes: 2 }, &measured(0.995, 0.52, 0.87)).is_empty());
        let f = judge(&t, Chance::Balanced { classes: 2 }, &measured(0.98, 0.65, 0.84));
        assert_eq!(f.len(), 3, "{f:?}");
        assert!(f[0].contains("98.0%"));
        assert!(f[1].contains("65.0%"));
        assert!(f[2].contains("4.0 points"));
    }

    #[test]
    fn chance_is_one_over_the_classes() {
        let t = VerificationSpec::default();
        let f = judge(&t, Chance::Balanced { classes: 2 }, &measured(0.995, 0.36, 0.87));
        assert!(f[0].contains("(chance is 50% ± 10.0)"), "{f:?}");
        // A quarter is chance for four classes; 36% is not.
        assert!(judge(&t, Chance::Balanced { classes: 4 }, &measured(0.995, 0.27, 0.87)).is_empty());
        let f = judge(&t, Chance::Balanced { classes: 4 }, &measured(0.995, 0.36, 0.87));
        assert!(f[0].contains("(chance is 25% ± 10.0)"), "{f:?}");
        let f = judge(&t, Chance::Balanced { classes: 3 }, &measured(0.995, 0.50, 0.87));
        assert!(f[0].contains("(chance is 33.3% ± 10.0)"), "{f:?}");
    }

    #[test]
    fn reassignment_bounds_the_original_model_and_skips_the_drop() {
        let t = VerificationSpec::default();
        let half = Chance::Reassigned { bound: 0.5 };
        // The original task is gone at r = 0.5: a 38-point drop is expected.
        assert!(judge(&t, half, &measured(0.995, 0.49, 0.5)).is_empty());
        // Below 50% is not suspicious after a reassignment, above the bound is.
        assert!(judge(&t, half, &measured(0.995, 0.35, 0.5)).is_empty());
        let f = judge(&t, half, &measured(0.995, 0.61, 0.5));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("61.0%") && f[0].contains("50.0%"), "{f:?}");
    }

    #[test]
    fn reassignment_needs_more_than_luck() {
        // r = 0.9: 0.91 of 1000 is within luck of a model bounded by 0.9,
        // even when the threshold is lowered to let it through.
        let t = VerificationSpec { min_synthetic_accuracy: crate::spec::Share::new(0.9), ..Default::default() };
        let f = judge(&t, Chance::Reassigned { bound: 0.9 }, &measured(0.91, 0.7, 0.5));
        assert_eq!(f.len(), 1, "{f:?}");
        assert!(f[0].contains("bound 90.0%"), "{f:?}");
        assert!(judge(&t, Chance::Reassigned { bound: 0.9 }, &measured(0.96, 0.7, 0.5)).is_empty());
    }

    #[test]
    fn chance_follows_the_options() {
        use grid_methods::shortcut::{ShortcutKind, ShortcutOptions};
        assert_eq!(Chance::of(&ShortcutOptions::new(ShortcutKind::Tic)), Chance::Balanced { classes: 2 });
        let articles = ShortcutOptions { keep_probability: 0.2, ..ShortcutOptions::new(ShortcutKind::ArticlesCn) };
        assert_eq!(Chance::of(&articles), Chance::Reassigned { bound: 0.8 });
    }
}
