//! KernelSHAP (Lundberg & Lee 2017, "A unified approach to interpreting model
//! predictions", Theorem 2), `kernelshap-{unk,mask,erase}-{n}`.
//!
//! The players are the `d` ordinary tokens of an example; the value of a coalition
//! `S` is the probability of the clean input's predicted class with the tokens
//! outside `S` hidden. Shapley values are the weighted least-squares fit of
//! `v(z) ≈ v(∅) + Σ_j φ_j z_j` under the Shapley kernel
//! `π(z) = (d − 1) / (C(d, |z|) · |z| · (d − |z|))`, with the infinite weights of
//! `∅` and the full coalition turned into constraints: `v(∅)` is the intercept and
//! `Σ_j φ_j = v(full) − v(∅)` (efficiency) is enforced exactly by eliminating the
//! last player's `φ`, as the shap library does.
//!
//! Coalitions besides `∅` and the full one: when `n ≥ 2^d − 2`, all of them, with
//! their exact kernel weights, and the fit *is* the Shapley value. Otherwise `n`
//! samples drawn from the kernel itself (a size `s ∈ {1..d−1}` with probability
//! `∝ (d − 1) / (s (d − s))`, then a uniform subset of that size), in complementary
//! pairs to reduce variance, each with equal weight. There is no regularisation; a
//! system that sampling left singular (fewer distinct coalitions than players) gets
//! the tiny ridge of [`super::regression`]. Unlike the shap library there is no
//! automatic L1 feature selection for small budgets.
//!
//! Randomness is per example (`Settings::rng(stream)`), and all examples'
//! coalitions go through the model together, so batching never changes a score.

use burn::tensor::backend::AutodiffBackend;
use nalgebra::DMatrix;
use rand::Rng;
use rand::seq::index;
use rayon::prelude::*;

use super::regression::weighted_least_squares;
use super::{Attribution, AttributionError, Examples, Hiding, Settings, Vocabulary, perturb};
use grid_core::model::Classifier;

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
    let (predicted, full) = perturb::predictions(model, examples, vocab, per_eval, device);
    let positions: Vec<Vec<usize>> = (0..examples.len()).map(|i| examples.ordinary_positions(i)).collect();
    let plans: Vec<Coalitions> = positions
        .iter()
        .zip(&examples.stream)
        .map(|(p, &stream)| coalitions(&mut settings.rng(stream), p.len(), samples as usize))
        .collect();
    // The empty coalition first, then the plan's; nothing at all when d = 0.
    let keeps: Vec<Vec<Vec<bool>>> = plans
        .iter()
        .zip(&positions)
        .map(|(plan, p)| {
            if p.is_empty() {
                return Vec::new();
            }
            std::iter::once(vec![false; p.len()]).chain(plan.keeps.iter().cloned()).collect()
        })
        .collect();
    let values =
        perturb::hidden_probabilities(model, examples, &keeps, &predicted, replacement, vocab.pad, per_eval, device);
    let phis: Vec<Vec<f64>> = plans
        .par_iter()
        .zip(&values)
        .zip(&full)
        .zip(&positions)
        .map(|(((plan, v), &full), p)| match (p.len(), v.split_first()) {
            (d, Some((&empty, v))) => shapley_values(d, &plan.keeps, v, &plan.weights, full, empty),
            (_, None) => Vec::new(),
        })
        .collect();
    let scores = phis
        .iter()
        .zip(&positions)
        .zip(&examples.ids)
        .map(|((phi, positions), ids)| {
            let mut row = vec![0.0f32; ids.len()];
            for (&p, &v) in positions.iter().zip(phi) {
                row[p] = v as f32;
            }
            row
        })
        .collect();
    Ok(Attribution { scores, predicted, completeness_gap: None })
}

/// The coalitions of one example (neither empty nor full) and their regression weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Coalitions {
    /// One membership vector per coalition, over the `d` players.
    pub keeps: Vec<Vec<bool>>,
    pub weights: Vec<f64>,
}

/// Every proper non-empty coalition with its kernel weight when `n ≥ 2^d − 2`,
/// else `n` kernel-distributed samples in complementary pairs (equal weights).
/// None when `d < 2`: the full and empty coalitions alone fix the answer.
pub fn coalitions(rng: &mut impl Rng, d: usize, n: usize) -> Coalitions {
    let mut keeps = Vec::new();
    let mut weights = Vec::new();
    if d < 2 {
        return Coalitions { keeps, weights };
    }
    let enumerable = u32::try_from(d).ok().and_then(|d| 1u64.checked_shl(d)).is_some_and(|all| n as u64 >= all - 2);
    if enumerable {
        for bits in 1..(1u64 << d) - 1 {
            let keep: Vec<bool> = (0..d).map(|j| bits >> j & 1 == 1).collect();
            weights.push(shapley_kernel(d, keep.iter().filter(|&&b| b).count()));
            keeps.push(keep);
        }
        return Coalitions { keeps, weights };
    }
    // The size distribution, ∝ (d − 1) / (s (d − s)); symmetric, so complements follow it too.
    let cumulative: Vec<f64> = (1..d)
        .scan(0.0, |total, s| {
            *total += 1.0 / (s * (d - s)) as f64;
            Some(*total)
        })
        .collect();
    let total = cumulative[cumulative.len() - 1];
    for sample in 0..n {
        let keep = if sample % 2 == 1 {
            keeps[sample - 1].iter().map(|&b: &bool| !b).collect()
        } else {
            let u = rng.random::<f64>() * total;
            let size = 1 + cumulative.partition_point(|&c| c <= u).min(d - 2);
            let mut keep = vec![false; d];
            for j in index::sample(rng, d, size) {
                keep[j] = true;
            }
            keep
        };
        keeps.push(keep);
        weights.push(1.0);
    }
    Coalitions { keeps, weights }
}

/// The Shapley kernel `π(z) = (d − 1) / (C(d, s) · s · (d − s))` for `0 < s < d`.
pub fn shapley_kernel(d: usize, s: usize) -> f64 {
    let binomial = (0..s).fold(1.0, |c, k| c * (d - k) as f64 / (k + 1) as f64);
    (d - 1) as f64 / (binomial * s as f64 * (d - s) as f64)
}

/// φ from the coalitions' values, with `Σφ = full − empty` exactly: with
/// `Δ = full − empty` and the last player's `φ_l = Δ − Σ_{j<l} φ_j` substituted,
/// `v(z) − empty − z_l Δ ≈ Σ_{j<l} φ_j (z_j − z_l)` is an unconstrained fit.
/// Without coalitions to learn from (`d < 2`, or no samples) the players share `Δ` equally.
pub fn shapley_values(
    d: usize,
    keeps: &[Vec<bool>],
    values: &[f64],
    weights: &[f64],
    full: f64,
    empty: f64,
) -> Vec<f64> {
    let delta = full - empty;
    if d == 0 {
        return Vec::new();
    }
    if keeps.is_empty() {
        return vec![delta / d as f64; d];
    }
    let last = d - 1;
    let bit = |b: bool| f64::from(u8::from(b));
    let x = DMatrix::from_fn(keeps.len(), last, |i, j| bit(keeps[i][j]) - bit(keeps[i][last]));
    let y: Vec<f64> = keeps.iter().zip(values).map(|(k, v)| v - empty - bit(k[last]) * delta).collect();
    let mut phi = weighted_least_squares(&x, &y, weights, 0.0, false).coefficients;
    let rest = delta - phi.iter().sum::<f64>();
    phi.push(rest);
    phi
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::salience::Method;
    use crate::salience::test_models::{
        Ad, PresenceModel, Recorder, VOCAB, bert, bert_examples, bilstm, lstm_examples, settings,
    };

    fn shap(
        model: &impl Classifier<Ad>,
        hiding: Hiding,
        samples: u32,
        examples: &Examples<'_>,
        settings: &Settings,
    ) -> Attribution {
        let method = Method::KernelShap { hiding, samples };
        crate::salience::attribute::<Ad, _>(model, method, examples, &VOCAB, settings, &Default::default())
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// `v(S)` for every subset `S` (bit `j` = ordinary position `j` kept) of example `i`.
    fn all_values(model: &impl Classifier<Ad>, examples: &Examples<'_>, i: usize, class: u32) -> Vec<f64> {
        let positions = examples.ordinary_positions(i);
        let d = positions.len();
        let sequences: Vec<Vec<u32>> = (0..1usize << d)
            .map(|bits| {
                let keep: Vec<bool> = (0..d).map(|j| bits >> j & 1 == 1).collect();
                perturb::hide(examples.ids[i], &positions, &keep, Some(VOCAB.unk))
            })
            .collect();
        let classes = vec![class; sequences.len()];
        perturb::class_probabilities(model, &sequences, &classes, VOCAB.pad, 1, &Default::default())
    }

    /// φ_j = Σ_{S ∌ j} |S|! (d − |S| − 1)! / d! · (v(S ∪ j) − v(S)).
    fn brute_force_shapley(v: &[f64], d: usize) -> Vec<f64> {
        let factorial = |k: usize| (1..=k).map(|x| x as f64).product::<f64>();
        (0..d)
            .map(|j| {
                (0..1usize << d)
                    .filter(|s| s >> j & 1 == 0)
                    .map(|s| {
                        let size = s.count_ones() as usize;
                        factorial(size) * factorial(d - size - 1) / factorial(d) * (v[s | 1 << j] - v[s])
                    })
                    .sum()
            })
            .collect()
    }

    #[test]
    fn additive_game_gives_the_weights() {
        let model = PresenceModel::new();
        // d = 8 with 40 samples (sampled, < 254) and d = 5 with 40 (enumerated, ≥ 30).
        let ids = vec![vec![2, 5, 6, 7, 9, 10, 11, 12, 13, 3], vec![2, 14, 15, 16, 17, 18, 3]];
        let examples = bert_examples(&ids);
        for hiding in [Hiding::Unk, Hiding::Mask, Hiding::Erase] {
            let a = shap(&model, hiding, 40, &examples, &settings());
            for (i, seq) in ids.iter().enumerate() {
                let sign = if a.predicted[i] == 0 { 1.0 } else { -1.0 };
                for (t, &id) in seq.iter().enumerate() {
                    let want = if t == 0 || t + 1 == seq.len() { 0.0 } else { sign * model.weights[id as usize] };
                    assert!((a.scores[i][t] - want).abs() < 1e-6, "{hiding:?} {i} {t}: {} vs {want}", a.scores[i][t]);
                }
            }
        }
    }

    #[test]
    fn full_enumeration_is_the_exact_shapley_value() {
        let lstm = bilstm(5);
        let ids = vec![vec![5, 9, 13, 17, 21, 6], vec![7, 8, 19]];
        let examples = lstm_examples(&ids);
        // 2^6 − 2 = 62 coalitions: 62 samples are enough to enumerate.
        let a = shap(&lstm, Hiding::Unk, 62, &examples, &settings());
        let bert_model = bert(4, 2);
        let bert_ids = vec![vec![2, 5, 9, 13, 17, 21, 3]];
        let bert_examples = bert_examples(&bert_ids);
        let b = shap(&bert_model, Hiding::Unk, 30, &bert_examples, &settings());
        let mut largest = 0.0f64;
        for (i, seq) in ids.iter().enumerate() {
            let v = all_values(&lstm, &examples, i, a.predicted[i]);
            let exact = brute_force_shapley(&v, seq.len());
            for (j, (&got, &want)) in a.scores[i].iter().zip(&exact).enumerate() {
                largest = largest.max(want.abs());
                assert!((got as f64 - want).abs() < 1e-6, "{i} {j}: {got} vs {want}");
            }
        }
        let v = all_values(&bert_model, &bert_examples, 0, b.predicted[0]);
        let exact = brute_force_shapley(&v, 5);
        for (j, (&got, &want)) in b.scores[0][1..6].iter().zip(&exact).enumerate() {
            largest = largest.max(want.abs());
            assert!((got as f64 - want).abs() < 1e-6, "{j}: {got} vs {want}");
        }
        assert!(largest > 1e-3, "the tiny models must depend on their input: {largest}");
    }

    #[test]
    fn efficiency_holds_exactly_when_sampling() {
        // In f64, straight from the fit: random values, d = 9, 20 samples (sampled),
        // and d = 30 with 6 samples (singular: the tiny ridge steps in).
        let mut rng = settings().rng(0);
        for (d, n) in [(9, 20), (30, 6)] {
            let plan = coalitions(&mut rng, d, n);
            let values: Vec<f64> = (0..plan.keeps.len()).map(|_| rng.random::<f64>()).collect();
            let phi = shapley_values(d, &plan.keeps, &values, &plan.weights, 0.9, 0.2);
            assert_eq!(phi.len(), d);
            assert!((phi.iter().sum::<f64>() - 0.7).abs() < 1e-12, "d={d}: {}", phi.iter().sum::<f64>());
            assert!(phi.iter().all(|v| v.is_finite()));
        }
        // Through a real model: Σ scores = p(full) − p(empty) up to f32 rounding.
        let model = bilstm(8);
        let ids = vec![vec![5, 6, 7, 8, 9, 10, 11, 12, 13, 14], vec![15, 16, 17, 18, 19, 20, 21, 22]];
        let examples = lstm_examples(&ids);
        let a = shap(&model, Hiding::Unk, 24, &examples, &settings());
        for (i, seq) in ids.iter().enumerate() {
            let sequences = vec![seq.clone(), vec![VOCAB.unk; seq.len()]];
            let classes = [a.predicted[i]; 2];
            let v = perturb::class_probabilities(&model, &sequences, &classes, VOCAB.pad, 1, &Default::default());
            let sum: f64 = a.scores[i].iter().map(|&s| s as f64).sum();
            assert!((sum - (v[0] - v[1])).abs() < 1e-6, "{i}: {sum} vs {}", v[0] - v[1]);
        }
    }

    #[test]
    fn sampled_coalitions_follow_the_kernel_in_complementary_pairs() {
        // d = 16: 20 001 < 2^16 − 2, so these are samples.
        let d = 16;
        let plan = coalitions(&mut settings().rng(3), d, 20_001);
        assert_eq!(plan.keeps.len(), 20_001);
        assert!(plan.weights.iter().all(|&w| w == 1.0));
        let mut sizes = vec![0usize; d + 1];
        for (s, keep) in plan.keeps.iter().enumerate() {
            let size = keep.iter().filter(|&&b| b).count();
            assert!((1..d).contains(&size));
            if s % 2 == 1 {
                assert!(keep.iter().zip(&plan.keeps[s - 1]).all(|(a, b)| a != b), "pair {s}");
            }
            sizes[size] += 1;
        }
        // P(s) ∝ 1 / (s (d − s)): sizes 1 and 15 are 64/15 times as likely as size 8.
        let norm: f64 = (1..d).map(|s| 1.0 / (s * (d - s)) as f64).sum();
        for (s, &count) in sizes.iter().enumerate().take(d).skip(1) {
            let expected = 20_001.0 / norm / (s * (d - s)) as f64;
            assert!((count as f64 - expected).abs() < 0.1 * expected, "size {s}: {count} vs {expected}");
        }
        // Enumeration from 2^d − 2 samples on, with weights that sum over a size to (d−1)/(s(d−s)).
        let all = coalitions(&mut settings().rng(3), 4, 14);
        assert_eq!(all.keeps.len(), 14);
        assert!(coalitions(&mut settings().rng(3), 4, 13).weights.iter().all(|&w| w == 1.0));
        assert!((shapley_kernel(4, 1) - 3.0 / (4.0 * 3.0)).abs() < 1e-15);
        assert!((shapley_kernel(4, 2) - 3.0 / (6.0 * 4.0)).abs() < 1e-15);
        assert!((shapley_kernel(4, 3) - shapley_kernel(4, 1)).abs() < 1e-15);
        assert!(coalitions(&mut settings().rng(3), 1, 14).keeps.is_empty());
        assert_eq!(shapley_values(1, &[], &[], &[], 0.9, 0.2), vec![0.9 - 0.2]);
        assert_eq!(shapley_values(4, &[], &[], &[], 0.75, 0.25), vec![0.125; 4]);
        // A huge d never tries to enumerate.
        assert_eq!(coalitions(&mut settings().rng(3), 200, 8).keeps.len(), 8);
    }

    #[test]
    fn batching_never_changes_a_score() {
        let model = bilstm(2);
        let ids = vec![vec![5, 6, 7, 8, 9, 10, 11, 12], vec![13, 14, 15], vec![16, 17, 18, 19, 20, 21, 22, 23, 5, 6]];
        let examples = lstm_examples(&ids);
        let big = settings();
        let small = Settings { perturbations_per_eval: 5, ..big };
        let together = shap(&model, Hiding::Erase, 40, &examples, &big);
        assert_eq!(together, shap(&model, Hiding::Erase, 40, &examples, &small));
        for (i, seq) in ids.iter().enumerate() {
            let alone = Examples { ids: vec![seq], special: vec![vec![false; seq.len()]], stream: vec![i as u64] };
            assert_eq!(shap(&model, Hiding::Erase, 40, &alone, &small).scores[0], together.scores[i], "{i}");
        }
    }

    #[test]
    fn hiding_kinds_feed_different_inputs() {
        let ids = vec![vec![2, 5, 6, 7, 3]];
        let examples = bert_examples(&ids);
        for (hiding, empty) in
            [(Hiding::Unk, vec![2, 1, 1, 1, 3]), (Hiding::Mask, vec![2, 4, 4, 4, 3]), (Hiding::Erase, vec![2, 3])]
        {
            let model = Recorder::new(PresenceModel::new());
            // 6 = 2^3 − 2: every coalition once, besides the clean prediction and ∅.
            shap(&model, hiding, 6, &examples, &settings());
            let mut seen = model.sequences();
            seen.sort();
            let mut want: Vec<Vec<u32>> = (0..8usize)
                .map(|bits| {
                    let keep: Vec<bool> = (0..3).map(|j| bits >> j & 1 == 1).collect();
                    perturb::hide(&ids[0], &[1, 2, 3], &keep, VOCAB.hiding_token(hiding).unwrap_or(None))
                })
                .collect();
            want.sort();
            assert_eq!(seen, want, "{hiding:?}");
            assert!(seen.contains(&empty), "{hiding:?}");
        }
    }

    #[test]
    fn mask_needs_a_mask_token() {
        let ids = vec![vec![5, 6]];
        let no_mask = Vocabulary { mask: None, ..VOCAB };
        let r = crate::salience::attribute::<Ad, _>(
            &bilstm(1),
            Method::KernelShap { hiding: Hiding::Mask, samples: 10 },
            &lstm_examples(&ids),
            &no_mask,
            &settings(),
            &Default::default(),
        );
        assert_eq!(r, Err(AttributionError::NoMaskToken));
    }

    #[test]
    fn zero_and_one_player() {
        let model = bert(3, 1);
        let ids = vec![vec![2, 3], vec![2, 9, 3]];
        let examples = bert_examples(&ids);
        let a = shap(&model, Hiding::Unk, 10, &examples, &settings());
        assert_eq!(a.scores[0], vec![0.0, 0.0]);
        let v = all_values(&model, &examples, 1, a.predicted[1]);
        assert!((a.scores[1][1] as f64 - (v[1] - v[0])).abs() < 1e-6, "{:?} vs {v:?}", a.scores[1]);
        assert_eq!((a.scores[1][0], a.scores[1][2]), (0.0, 0.0));
    }
}
