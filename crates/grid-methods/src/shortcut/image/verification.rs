//! Verifying an image shortcut model (Zhou et al. 2022, section 3 and
//! 5.2): after reassignment with keep probability `r`, a model that ignores
//! the manipulation can expect an accuracy of at most `p* = max(r, 1 − r)`.
//! A test accuracy `p > p*` that luck explains with probability below
//! `max_luck` (the binomial tail `Σ_{n ≥ pN} Binom(n; N, p*)`) proves the
//! model rests on φ∪; the paper also keeps only models above 95% test
//! accuracy (`min_accuracy`) before reading their saliency maps.

use serde::{Deserialize, Serialize};

use crate::metrics::intervals::{binomial_tail, wilson_interval};

/// The thresholds: the paper's 95% accuracy, and a 1% chance of luck.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageThresholds {
    pub min_accuracy: f64,
    pub max_luck: f64,
}

impl Default for ImageThresholds {
    fn default() -> ImageThresholds {
        ImageThresholds { min_accuracy: 0.95, max_luck: 0.01 }
    }
}

/// A shortcut model's test accuracy, its parts, and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageVerification {
    pub accuracy: f64,
    /// Wilson's 95% interval of `accuracy`.
    pub interval: (f64, f64),
    /// Accuracy on the manipulated (positive) and the untouched test images.
    pub manipulated_accuracy: Option<f64>,
    pub untouched_accuracy: Option<f64>,
    pub examples: usize,
    /// `max(r, 1 − r)`.
    pub accuracy_without_shortcut: f64,
    /// The chance that a model bounded by `accuracy_without_shortcut`
    /// reaches `accuracy` on this test set.
    pub luck: f64,
    pub passed: bool,
    pub failures: Vec<String>,
}

/// Verifies `predictions` against the reassigned `labels` of a test set
/// whose `manipulated[i]` images carry the manipulation.
pub fn verify(
    predictions: &[u32],
    labels: &[u32],
    manipulated: &[bool],
    keep_probability: f64,
    thresholds: ImageThresholds,
) -> ImageVerification {
    let n = labels.len();
    let right = |keep: &dyn Fn(usize) -> bool| -> (usize, usize) {
        (0..n).filter(|&i| keep(i)).fold((0, 0), |(r, t), i| (r + usize::from(predictions[i] == labels[i]), t + 1))
    };
    let share = |(r, t): (usize, usize)| (t > 0).then(|| r as f64 / t as f64);
    let (correct, _) = right(&|_| true);
    let accuracy = share((correct, n)).unwrap_or(0.0);
    let bound = keep_probability.max(1.0 - keep_probability);
    let luck = binomial_tail(n, correct, bound);
    let mut failures = Vec::new();
    if n == 0 {
        failures.push("no test images".to_string());
    }
    if accuracy < thresholds.min_accuracy {
        failures.push(format!("test accuracy {accuracy:.3} < {:.3}", thresholds.min_accuracy));
    }
    if luck >= thresholds.max_luck {
        failures.push(format!(
            "a model ignoring the manipulation (accuracy ≤ {bound:.2}) reaches {accuracy:.3} on {n} images with probability {luck:.3} ≥ {}",
            thresholds.max_luck
        ));
    }
    ImageVerification {
        accuracy,
        interval: wilson_interval(correct, n),
        manipulated_accuracy: share(right(&|i| manipulated[i])),
        untouched_accuracy: share(right(&|i| !manipulated[i])),
        examples: n,
        accuracy_without_shortcut: bound,
        luck,
        passed: failures.is_empty(),
        failures,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_of_the_manipulation_passes_and_chance_does_not() {
        let labels: Vec<u32> = (0..100).map(|i| (i % 2) as u32).collect();
        let manipulated: Vec<bool> = labels.iter().map(|&l| l == 1).collect();
        let perfect = verify(&labels, &labels, &manipulated, 0.5, ImageThresholds::default());
        assert!(perfect.passed, "{perfect:?}");
        assert_eq!((perfect.manipulated_accuracy, perfect.untouched_accuracy), (Some(1.0), Some(1.0)));
        assert!(perfect.luck < 1e-20);
        // Right on every untouched image, wrong on every manipulated one: 50%.
        let blind = vec![0u32; 100];
        let v = verify(&blind, &labels, &manipulated, 0.5, ImageThresholds::default());
        assert!(!v.passed && v.failures.len() == 2, "{v:?}");
        assert_eq!((v.manipulated_accuracy, v.untouched_accuracy), (Some(0.0), Some(1.0)));
        // With r = 0.9, 92% is what the images alone may give.
        let mut mostly = labels.clone();
        for p in mostly.iter_mut().take(8) {
            *p = 1 - *p;
        }
        let r9 = verify(&mostly, &labels, &manipulated, 0.9, ImageThresholds { min_accuracy: 0.9, max_luck: 0.01 });
        assert!(!r9.passed && r9.failures[0].contains("accuracy ≤ 0.90"), "{r9:?}");
        assert!(verify(&[], &[], &[], 0.5, ImageThresholds::default()).failures[0].contains("no test images"));
    }
}
