//! LIME (Ribeiro et al. 2016, "Why should I trust you?") as LIT runs it for
//! Bastings et al. 2022 (PROTOCOL §1, `lime{unk,mask,erase}-{n}`).
//!
//! The features are the `d` ordinary tokens of an example. Of the `n` samples the
//! first is the unperturbed input; every other one draws `k ~ U{1..d}` and hides `k`
//! distinct random tokens. The target is the probability of the clean input's
//! predicted class. Each sample is weighted by an exponential kernel of the scaled
//! cosine distance between its keep-vector and all-ones, and the salience of a token
//! is its coefficient in a weighted ridge fit (`α = 1`, unpenalised intercept).
//!
//! Every example draws from its own stream (`Settings::rng(stream)`), and all
//! examples' perturbations go through the model together, so a score does not
//! depend on the batch an example was explained in.

use burn::tensor::backend::AutodiffBackend;
use nalgebra::DMatrix;
use rand::Rng;
use rand::seq::index;
use rayon::prelude::*;

use super::regression::weighted_least_squares;
use super::{Attribution, AttributionError, Examples, Hiding, Settings, Vocabulary, perturb};
use grid_core::model::Classifier;

/// LIT's `kernel_width`.
pub const KERNEL_WIDTH: f64 = 25.0;
/// LIT's `distance_scale`: cosine distances are multiplied by it before the kernel.
pub const DISTANCE_SCALE: f64 = 100.0;
/// The ridge penalty (scikit-learn's `Ridge(alpha=1)`).
pub const ALPHA: f64 = 1.0;

pub fn explain<B: AutodiffBackend, M: Classifier<B>>(
    model: &M,
    hiding: Hiding,
    samples: u32,
    examples: &Examples<'_>,
    vocab: &Vocabulary,
    settings: &Settings,
    device: &B::Device,
) -> Result<Attribution, AttributionError> {
    let replacement = vocab.hiding_token(hiding)?;
    let per_eval = settings.perturbations_per_eval;
    let (predicted, _) = perturb::predictions(model, examples, vocab, per_eval, device);
    let positions: Vec<Vec<usize>> = (0..examples.len()).map(|i| examples.ordinary_positions(i)).collect();
    let keeps: Vec<Vec<Vec<bool>>> = positions
        .iter()
        .zip(&examples.stream)
        .map(|(p, &stream)| keep_vectors(&mut settings.rng(stream), p.len(), samples as usize))
        .collect();
    let targets =
        perturb::hidden_probabilities(model, examples, &keeps, &predicted, replacement, vocab.pad, per_eval, device);
    let coefficients: Vec<Vec<f64>> = keeps.par_iter().zip(&targets).map(|(k, y)| fit(k, y)).collect();
    let scores = coefficients
        .iter()
        .zip(&positions)
        .zip(&examples.ids)
        .map(|((beta, positions), ids)| {
            let mut row = vec![0.0f32; ids.len()];
            for (&p, &b) in positions.iter().zip(beta) {
                row[p] = b as f32;
            }
            row
        })
        .collect();
    Ok(Attribution { scores, predicted, completeness_gap: None })
}

/// `n` keep-vectors over `d` features: the first keeps everything, every other
/// one hides `k ~ U{1..d}` distinct features. Nothing to draw when `d = 0`.
pub fn keep_vectors(rng: &mut impl Rng, d: usize, n: usize) -> Vec<Vec<bool>> {
    if d == 0 {
        return Vec::new();
    }
    (0..n)
        .map(|s| {
            let mut keep = vec![true; d];
            if s > 0 {
                let k = rng.random_range(1..=d);
                for j in index::sample(rng, d, k) {
                    keep[j] = false;
                }
            }
            keep
        })
        .collect()
}

/// `DISTANCE_SCALE ×` the cosine distance between a keep-vector with `kept` of `d`
/// entries set and all-ones: `1 − kept / (√kept √d) = 1 − √(kept/d)`. An all-hidden
/// vector is at distance 1, as scikit-learn's `cosine_distances` treats zero vectors.
pub fn distance(kept: usize, d: usize) -> f64 {
    DISTANCE_SCALE * (1.0 - (kept as f64 / d as f64).sqrt())
}

/// LIT's kernel, `√exp(−D² / width²)`.
pub fn kernel_weight(distance: f64) -> f64 {
    (-(distance * distance) / (KERNEL_WIDTH * KERNEL_WIDTH)).exp().sqrt()
}

/// The ridge coefficients for one example's samples (none when `d = 0`).
fn fit(keeps: &[Vec<bool>], targets: &[f64]) -> Vec<f64> {
    let d = keeps.first().map_or(0, Vec::len);
    if d == 0 {
        return Vec::new();
    }
    let x = DMatrix::from_fn(keeps.len(), d, |i, j| f64::from(u8::from(keeps[i][j])));
    let weights: Vec<f64> =
        keeps.iter().map(|k| kernel_weight(distance(k.iter().filter(|&&b| b).count(), d))).collect();
    weighted_least_squares(&x, targets, &weights, ALPHA, true).coefficients
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::salience::Method;
    use crate::salience::test_models::{
        Ad, PresenceModel, Recorder, VOCAB, bert, bert_examples, bilstm, lstm_examples, settings,
    };

    fn lime(
        model: &impl Classifier<Ad>,
        hiding: Hiding,
        samples: u32,
        examples: &Examples<'_>,
        settings: &Settings,
    ) -> Attribution {
        let method = Method::Lime { hiding, samples };
        crate::salience::attribute::<Ad, _>(model, method, examples, &VOCAB, settings, &Default::default())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn kernel_weight_and_distance_by_hand() {
        // keep = (1, 0, 1, 1): cos = 3 / (√3 · 2) = √3/2, D = 100 (1 − 0.8660254) = 13.39746,
        // weight = exp(−D²/625)^½ = exp(−179.4919 / 1250) = 0.8662398.
        let keep = [true, false, true, true];
        let kept = keep.iter().filter(|&&b| b).count();
        let cosine = kept as f64 / ((kept as f64).sqrt() * (keep.len() as f64).sqrt());
        assert!((distance(kept, 4) - 100.0 * (1.0 - cosine)).abs() < 1e-12);
        assert!((distance(kept, 4) - 13.397459621556).abs() < 1e-9);
        assert!((kernel_weight(distance(kept, 4)) - 0.8662398).abs() < 1e-7);
        assert_eq!(distance(4, 4), 0.0);
        assert_eq!(kernel_weight(0.0), 1.0);
        // Nothing kept: distance 100, weight exp(−8).
        assert_eq!(distance(0, 4), 100.0);
        assert!((kernel_weight(100.0) - (-8.0f64).exp()).abs() < 1e-15);
    }

    #[test]
    fn the_first_sample_is_unperturbed_and_the_others_hide_one_to_d() {
        let keeps = keep_vectors(&mut settings().rng(7), 6, 500);
        assert_eq!(keeps.len(), 500);
        assert_eq!(keeps[0], vec![true; 6]);
        let mut hidden_counts = [0usize; 7];
        for keep in &keeps[1..] {
            hidden_counts[keep.iter().filter(|&&b| !b).count()] += 1;
        }
        assert_eq!(hidden_counts[0], 0, "every later sample hides something");
        assert!(hidden_counts[1..].iter().all(|&c| c > 40), "k ~ U{{1..6}}: {hidden_counts:?}");
        assert!(keep_vectors(&mut settings().rng(7), 0, 10).is_empty());
        // Through the model: with `[UNK]` hiding, the clean input is evaluated twice
        // (the prediction and sample 0), and every other input hides only ordinary tokens.
        let model = Recorder::new(PresenceModel::new());
        let ids = vec![vec![2, 5, 6, 7, 8, 3]];
        lime(&model, Hiding::Unk, 50, &bert_examples(&ids), &settings());
        let seen = model.sequences();
        assert_eq!(seen.len(), 1 + 50);
        assert_eq!(seen.iter().filter(|s| **s == ids[0]).count(), 2);
        for s in &seen {
            assert_eq!((s.len(), s[0], s[5]), (6, 2, 3), "{s:?}");
            assert!(s[1..5].iter().zip(&ids[0][1..5]).all(|(&a, &b)| a == b || a == VOCAB.unk), "{s:?}");
        }
    }

    #[test]
    fn recovers_presence_weights_as_the_exact_ridge_solution() {
        // p(predicted) is exactly linear in token presence, so LIME's target is the
        // linear function itself and its coefficients are the ridge solution on the
        // same design: recomputing that design from the same stream must match to
        // float precision. With 3000 samples the α = 1 shrinkage is small enough that
        // the coefficients also sit near the true weights.
        let model = PresenceModel::new();
        let ids = vec![vec![2, 5, 6, 9, 11, 13, 15, 3], vec![2, 7, 8, 10, 3]];
        let examples = bert_examples(&ids);
        let settings = settings();
        for samples in [100u32, 3000] {
            let a = lime(&model, Hiding::Erase, samples, &examples, &settings);
            for (i, seq) in ids.iter().enumerate() {
                let positions = examples.ordinary_positions(i);
                let sign = if a.predicted[i] == 0 { 1.0 } else { -1.0 };
                let truth: Vec<f64> = positions.iter().map(|&p| sign * model.weights[seq[p] as usize] as f64).collect();
                let keeps = keep_vectors(&mut settings.rng(examples.stream[i]), positions.len(), samples as usize);
                let y: Vec<f64> = keeps
                    .iter()
                    .map(|k| 0.5 + k.iter().zip(&truth).filter(|(kept, _)| **kept).map(|(_, w)| w).sum::<f64>())
                    .collect();
                let exact = fit(&keeps, &y);
                assert_eq!(a.scores[i][0], 0.0, "[CLS] is never scored");
                assert_eq!(a.scores[i][seq.len() - 1], 0.0, "[SEP] is never scored");
                for (j, &p) in positions.iter().enumerate() {
                    let s = a.scores[i][p] as f64;
                    assert!(
                        (s - exact[j]).abs() < 1e-6,
                        "n={samples} example {i} token {p}: {s} vs ridge {}",
                        exact[j]
                    );
                    // Measured: at most 2.7e-4 off, where weights reach 0.04.
                    if samples == 3000 {
                        assert!((s - truth[j]).abs() < 5e-4, "{s} vs true weight {}", truth[j]);
                    }
                }
            }
        }
    }

    #[test]
    fn batching_never_changes_a_score() {
        let model = bilstm(11);
        let ids = vec![vec![5, 6, 7, 8, 9], vec![10, 11], vec![12, 13, 14, 15, 16, 17, 18], vec![19]];
        let examples = lstm_examples(&ids);
        let big = settings();
        let small = Settings { perturbations_per_eval: 3, ..big };
        let together = lime(&model, Hiding::Unk, 60, &examples, &big);
        assert_eq!(together, lime(&model, Hiding::Unk, 60, &examples, &small));
        for (i, seq) in ids.iter().enumerate() {
            // Alone, under its own stream id.
            let alone = Examples { ids: vec![seq], special: vec![vec![false; seq.len()]], stream: vec![i as u64] };
            let a = lime(&model, Hiding::Unk, 60, &alone, &small);
            assert_eq!(a.scores[0], together.scores[i], "example {i}");
            assert_eq!(a.predicted[0], together.predicted[i]);
        }
        // Another stream gives another draw.
        let other = Examples { ids: vec![&ids[0]], special: vec![vec![false; 5]], stream: vec![99] };
        assert_ne!(lime(&model, Hiding::Unk, 60, &other, &big).scores[0], together.scores[0]);
    }

    #[test]
    fn hiding_kinds_feed_different_inputs() {
        let ids = vec![vec![2, 5, 6, 7, 3]];
        let examples = bert_examples(&ids);
        for (hiding, check) in [
            (Hiding::Unk, (|s: &[u32]| s.len() == 5 && s[1..4].iter().all(|&t| t != 4)) as fn(&[u32]) -> bool),
            (Hiding::Mask, |s: &[u32]| s.len() == 5 && s[1..4].iter().all(|&t| t != 1)),
            (Hiding::Erase, |s: &[u32]| s.len() >= 2 && s.iter().all(|&t| t != 1 && t != 4)),
        ] {
            let model = Recorder::new(PresenceModel::new());
            lime(&model, hiding, 30, &examples, &settings());
            let seen = model.sequences();
            assert!(seen.iter().all(|s| check(s) && s[0] == 2 && s[s.len() - 1] == 3), "{hiding:?}: {seen:?}");
            let hidden = |s: &Vec<u32>| match hiding {
                Hiding::Unk => s.contains(&1),
                Hiding::Mask => s.contains(&4),
                Hiding::Erase => s.len() < 5,
            };
            assert_eq!(seen.iter().filter(|s| hidden(s)).count(), 29, "{hiding:?}");
        }
    }

    #[test]
    fn mask_needs_a_mask_token() {
        let ids = vec![vec![5, 6]];
        let no_mask = Vocabulary { mask: None, ..VOCAB };
        let r = crate::salience::attribute::<Ad, _>(
            &bilstm(1),
            Method::Lime { hiding: Hiding::Mask, samples: 10 },
            &lstm_examples(&ids),
            &no_mask,
            &settings(),
            &Default::default(),
        );
        assert_eq!(r, Err(AttributionError::NoMaskToken));
    }

    #[test]
    fn edge_cases_zero_and_one_feature() {
        let model = bert(2, 1);
        // Only special tokens: nothing to explain.
        let ids = vec![vec![2, 3], vec![2, 9, 3]];
        let a = lime(&model, Hiding::Mask, 20, &bert_examples(&ids), &settings());
        assert_eq!(a.scores[0], vec![0.0, 0.0]);
        // One feature: samples are the clean input and the input without it.
        let keeps = keep_vectors(&mut settings().rng(1), 1, 20);
        assert!(keeps[1..].iter().all(|k| k == &[false]));
        assert!(a.scores[1][1].is_finite() && a.scores[1][1] != 0.0, "{:?}", a.scores[1]);
        assert_eq!((a.scores[1][0], a.scores[1][2]), (0.0, 0.0));
    }
}
