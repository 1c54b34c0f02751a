//! Erasure faithfulness metrics (Zhao & Aletras 2023; PROTOCOL §3).
//!
//! For the predicted class ŷ and a rationale R (the top ρ% of the ordinary
//! tokens by salience), with `S(x,ŷ,0)` the sufficiency of the all-[PAD] input:
//!
//! * sufficiency `S(x,ŷ,R) = 1 − max(0, p(ŷ|x) − p(ŷ|R))`,
//!   normalised `NS = clip((S − S(x,ŷ,0)) / (1 − S(x,ŷ,0)), 0, 1)`;
//! * comprehensiveness `C(x,ŷ,R) = max(0, p(ŷ|x) − p(ŷ|x∖R))`,
//!   normalised `NC = C / (1 − S(x,ŷ,0))`, not clipped (PROTOCOL clips NS only),
//!   so NC exceeds 1 when removing R hurts more than removing every token;
//! * AOPC: the mean of NS (resp. NC) over the ratios ρ;
//! * Soft-NS / Soft-NC: the same formulas with R replaced by a Bernoulli mask on
//!   the input embeddings whose keep-probability follows the salience.
//!
//! Normalised values are `None` when `1 − S(x,ŷ,0) ≤ 1e-12`: the zeroed input is
//! then as confident as the full one and the ratio is undefined. The functions
//! here are pure; the forward passes that feed them are in [`passes`].

mod passes;

use serde::{Deserialize, Serialize};

pub use passes::{
    ErasedExample, ErasureError, ErasureInput, ErasureSummary, bernoulli_mask, erase, forward_passes, is_undefined,
    summarise,
};

/// Below this, `1 − S(x,ŷ,0)` counts as zero and normalisation is undefined.
pub const UNDEFINED_BELOW: f64 = 1e-12;

/// What an erasure step computes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    /// Rationale sizes ρ as fractions of the ordinary tokens.
    pub ratios: Vec<f64>,
    /// Bernoulli masks per example for Soft-NS and Soft-NC, averaged; 1 is the
    /// paper's protocol, 0 skips soft erasure.
    pub soft_samples: usize,
    /// Seeds the soft masks, with the example index and the sample.
    pub seed: u64,
    /// Whose reading of the definitions: the paper's (PROTOCOL §3) or the
    /// authors' public code's.
    #[serde(default)]
    pub convention: Convention,
}

impl Default for Settings {
    fn default() -> Self {
        Self { ratios: vec![0.01, 0.05, 0.1, 0.2, 0.5], soft_samples: 1, seed: 0, convention: Convention::Paper }
    }
}

/// Whose reading of Zhao & Aletras's definitions the erasure follows; they
/// differ where the paper's text and the authors' evaluation code do
/// (BENCHMARKS, "Why our NS / NC diagnosticity is twice Zhao & Aletras's").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Convention {
    /// PROTOCOL §3: the zeroed input keeps the special tokens, `k = ⌈ρ·d⌉`
    /// of the `d` ordinary tokens, NC not clipped.
    #[default]
    Paper,
    /// The authors' public code: the zeroed input is [PAD] everywhere,
    /// special tokens too; `k = ⌈ρ·n⌉` of the whole length `n` (at most
    /// `d`); `S(x,ŷ,0)` less 1e-4; NC clipped to [0, 1] like NS. (Their
    /// ratios, 1, 2, 5, 10, 20, 50, 100%, are `ratios`' to set.)
    AuthorsCode,
}

impl Convention {
    pub fn name(self) -> &'static str {
        match self {
            Convention::Paper => "paper",
            Convention::AuthorsCode => "authors-code",
        }
    }

    /// The rationale size for `ratio` of an example with `ordinary` of its
    /// `length` tokens rankable.
    pub fn rationale_size(self, ordinary: usize, length: usize, ratio: f64) -> usize {
        match self {
            Convention::Paper => rationale_size(ordinary, ratio),
            Convention::AuthorsCode => rationale_size(length, ratio).min(ordinary),
        }
    }

    /// `S(x,ŷ,0)` as the normalisation uses it.
    fn baseline(self, s_zero: f64) -> f64 {
        match self {
            Convention::Paper => s_zero,
            Convention::AuthorsCode => s_zero - 1e-4,
        }
    }

    /// NS from `S` and `S(x,ŷ,0)`.
    pub fn ns(self, s: f64, s_zero: f64) -> Option<f64> {
        normalised_sufficiency(s, self.baseline(s_zero))
    }

    /// NC from `C` and `S(x,ŷ,0)`.
    pub fn nc(self, c: f64, s_zero: f64) -> Option<f64> {
        let nc = normalised_comprehensiveness(c, self.baseline(s_zero));
        match self {
            Convention::Paper => nc,
            Convention::AuthorsCode => nc.map(|v| v.clamp(0.0, 1.0)),
        }
    }
}

/// Which soft metric a Bernoulli mask serves: it decides whether salient tokens
/// are the ones kept or the ones removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SoftErasure {
    /// Soft-NS: token i keeps each embedding element with probability `a_i`.
    Sufficiency,
    /// Soft-NC: token i keeps each embedding element with probability `1 − a_i`.
    Comprehensiveness,
}

impl SoftErasure {
    pub const BOTH: [SoftErasure; 2] = [SoftErasure::Sufficiency, SoftErasure::Comprehensiveness];

    /// Per-token keep-probability `q_i` from the rescaled salience `a` of
    /// [`soft_keep_probabilities`]; special tokens are kept whole (`q = 1`).
    pub fn keep_probabilities(self, a: &[f64], rankable: impl Fn(usize) -> bool) -> Vec<f64> {
        a.iter()
            .enumerate()
            .map(|(i, &a)| match self {
                _ if !rankable(i) => 1.0,
                SoftErasure::Sufficiency => a,
                SoftErasure::Comprehensiveness => 1.0 - a,
            })
            .collect()
    }

    /// The per-sample soft value from `p(ŷ|x)`, `p(ŷ|x′)` and `S(x,ŷ,0)`.
    pub fn normalised(self, p_full: f64, p_masked: f64, s_zero: f64) -> Option<f64> {
        self.normalised_as(Convention::Paper, p_full, p_masked, s_zero)
    }

    /// [`Self::normalised`] under `convention`.
    pub fn normalised_as(self, convention: Convention, p_full: f64, p_masked: f64, s_zero: f64) -> Option<f64> {
        match self {
            SoftErasure::Sufficiency => convention.ns(sufficiency(p_full, p_masked), s_zero),
            SoftErasure::Comprehensiveness => convention.nc(comprehensiveness(p_full, p_masked), s_zero),
        }
    }
}

/// Rationale size `k = ceil(ρ·d)` clamped to `[1, d]` for `d` ordinary tokens:
/// the ceiling makes 1% of a short SST sentence one token, not zero. 0 when
/// `d = 0` (there is nothing to rank).
pub fn rationale_size(d: usize, ratio: f64) -> usize {
    if d == 0 {
        return 0;
    }
    let k = (ratio * d as f64).ceil();
    if k.is_nan() { 1 } else { (k.max(1.0) as usize).min(d) }
}

/// `S = 1 − max(0, p(ŷ|x) − p(ŷ|part))`.
pub fn sufficiency(p_full: f64, p_part: f64) -> f64 {
    1.0 - (p_full - p_part).max(0.0)
}

/// `C = max(0, p(ŷ|x) − p(ŷ|part))`.
pub fn comprehensiveness(p_full: f64, p_part: f64) -> f64 {
    (p_full - p_part).max(0.0)
}

/// `1 − S(x,ŷ,0)`, or `None` when it is too small to divide by.
fn zeroed_drop(s_zero: f64) -> Option<f64> {
    let drop = 1.0 - s_zero;
    (drop > UNDEFINED_BELOW).then_some(drop)
}

/// `NS = clip((S − S(x,ŷ,0)) / (1 − S(x,ŷ,0)), 0, 1)`.
pub fn normalised_sufficiency(s: f64, s_zero: f64) -> Option<f64> {
    zeroed_drop(s_zero).map(|drop| ((s - s_zero) / drop).clamp(0.0, 1.0))
}

/// `NC = C / (1 − S(x,ŷ,0))`; not clipped, so it can exceed 1.
pub fn normalised_comprehensiveness(c: f64, s_zero: f64) -> Option<f64> {
    zeroed_drop(s_zero).map(|drop| c / drop)
}

/// The rescaled salience `a_i ∈ [0,1]` of Soft-NS/NC: min-max over the example's
/// ordinary tokens, `a_i = (s_i − min) / (max − min)`. When every ordinary token
/// has the same salience there is no order to follow and each gets 0.5 (neither
/// kept nor removed preferentially). NaN counts as the lowest salience, as in
/// [`crate::metrics::ranking`]: it gets 0 and the others rescale among
/// themselves. Special tokens get 1.0.
pub fn soft_keep_probabilities(scores: &[f32], rankable: impl Fn(usize) -> bool) -> Vec<f64> {
    let numbers =
        || scores.iter().enumerate().filter(|&(i, _)| rankable(i)).map(|(_, &s)| s as f64).filter(|s| !s.is_nan());
    let min = numbers().fold(f64::INFINITY, f64::min);
    let range = numbers().fold(f64::NEG_INFINITY, f64::max) - min;
    let rescale = |s: f64| match (s - min) / range {
        _ if range.is_nan() || range <= 0.0 => 0.5,
        a if a.is_nan() => 0.0, // ∞/∞ with infinite scores
        a => a.clamp(0.0, 1.0),
    };
    scores
        .iter()
        .enumerate()
        .map(|(i, &s)| match s as f64 {
            _ if !rankable(i) => 1.0,
            s if s.is_nan() => 0.0,
            s => rescale(s),
        })
        .collect()
}

/// Mean of the per-ratio values; `None` when any is `None` or there are none.
pub fn aopc(values: &[Option<f64>]) -> Option<f64> {
    let defined: Option<Vec<f64>> = values.iter().copied().collect();
    mean(&defined?)
}

/// Mean of the values; `None` when empty.
pub fn mean(values: &[f64]) -> Option<f64> {
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

/// Mean of the defined values; `None` when none is defined.
pub fn mean_defined(values: impl IntoIterator<Item = Option<f64>>) -> Option<f64> {
    mean(&values.into_iter().flatten().collect::<Vec<_>>())
}

/// Diagnosticity `D(F) = |{j : F(u_j) > F(v_j)}| / n` (Zhao & Aletras 2023 §4):
/// the share of examples where the method's value `u_j` beats, strictly, the
/// random attribution's `v_j` on the same example. Pairs with a `None` are left
/// out of both counts; `None` when no pair is left. Pairs by position.
pub fn diagnosticity(u: &[Option<f64>], v: &[Option<f64>]) -> Option<f64> {
    let pairs: Vec<(f64, f64)> = u.iter().zip(v).filter_map(|(&u, &v)| Some((u?, v?))).collect();
    let wins = pairs.iter().filter(|(u, v)| u > v).count();
    (!pairs.is_empty()).then(|| wins as f64 / pairs.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn rationale_size_rounds_up_and_stays_in_range() {
        assert_eq!(rationale_size(20, 0.01), 1); // 0.2 → 1, not 0
        assert_eq!(rationale_size(20, 0.05), 1);
        assert_eq!(rationale_size(20, 0.1), 2);
        assert_eq!(rationale_size(20, 0.2), 4);
        assert_eq!(rationale_size(21, 0.5), 11); // 10.5 → 11
        assert_eq!(rationale_size(7, 1.0), 7);
        assert_eq!(rationale_size(7, 2.0), 7);
        assert_eq!(rationale_size(7, 0.0), 1);
        assert_eq!(rationale_size(0, 0.5), 0);
    }

    #[test]
    fn sufficiency_and_comprehensiveness_by_hand() {
        assert!(close(sufficiency(0.9, 0.6), 0.7));
        assert!(close(sufficiency(0.9, 0.95), 1.0)); // a part more confident than x
        assert!(close(comprehensiveness(0.9, 0.6), 0.3));
        assert!(close(comprehensiveness(0.9, 0.95), 0.0));
    }

    #[test]
    fn normalisation_by_hand() {
        // p(ŷ|x) = 0.9, p(ŷ|0) = 0.5: S0 = 0.6, 1 − S0 = 0.4.
        let s_zero = sufficiency(0.9, 0.5);
        assert!(close(s_zero, 0.6));
        // p(ŷ|R) = 0.8: S = 0.9, NS = 0.3 / 0.4 = 0.75.
        assert!(close(normalised_sufficiency(sufficiency(0.9, 0.8), s_zero).unwrap(), 0.75));
        // p(ŷ|R) = 0.3 is below the zeroed input: NS clipped to 0.
        assert_eq!(normalised_sufficiency(sufficiency(0.9, 0.3), s_zero), Some(0.0));
        // p(ŷ|x∖R) = 0.7: C = 0.2, NC = 0.5.
        assert!(close(normalised_comprehensiveness(comprehensiveness(0.9, 0.7), s_zero).unwrap(), 0.5));
        // p(ŷ|x∖R) = 0.1: C = 0.8, NC = 2 — not clipped.
        assert!(close(normalised_comprehensiveness(comprehensiveness(0.9, 0.1), s_zero).unwrap(), 2.0));
    }

    #[test]
    fn undefined_when_the_zeroed_input_is_as_confident() {
        let s_zero = sufficiency(0.9, 0.9);
        assert_eq!(s_zero, 1.0);
        assert_eq!(normalised_sufficiency(0.8, s_zero), None);
        assert_eq!(normalised_comprehensiveness(0.1, s_zero), None);
        assert_eq!(normalised_sufficiency(0.8, 1.0 - 1e-13), None);
        assert!(normalised_sufficiency(0.8, 1.0 - 1e-9).is_some());
    }

    #[test]
    fn min_max_rescaling_by_hand() {
        // Position 0 special; ordinary 1.0, 3.0, 2.0 → 0, 1, 0.5.
        let a = soft_keep_probabilities(&[9.0, 1.0, 3.0, 2.0], |i| i != 0);
        assert_eq!(a, vec![1.0, 0.0, 1.0, 0.5]);
        // All equal → 0.5 each.
        assert_eq!(soft_keep_probabilities(&[4.0, 4.0, 4.0], |_| true), vec![0.5; 3]);
        // NaN is the lowest: 0; the others rescale among themselves.
        assert_eq!(soft_keep_probabilities(&[f32::NAN, -1.0, 3.0, 0.0], |_| true), vec![0.0, 0.0, 1.0, 0.25]);
        assert_eq!(soft_keep_probabilities(&[f32::NAN, 2.0, 2.0], |_| true), vec![0.0, 0.5, 0.5]);
    }

    #[test]
    fn soft_ns_keeps_and_soft_nc_removes_the_salient_tokens() {
        // Special [CLS] at 0; token 1 most salient (a = 1), token 2 least (a = 0).
        let rankable = |i: usize| i != 0;
        let a = soft_keep_probabilities(&[0.0, 5.0, -5.0, 0.0], rankable);
        assert_eq!(a, vec![1.0, 1.0, 0.0, 0.5]);
        assert_eq!(SoftErasure::Sufficiency.keep_probabilities(&a, rankable), vec![1.0, 1.0, 0.0, 0.5]);
        assert_eq!(SoftErasure::Comprehensiveness.keep_probabilities(&a, rankable), vec![1.0, 0.0, 1.0, 0.5]);
    }

    #[test]
    fn soft_values_follow_the_hard_formulas() {
        // p(ŷ|x) = 0.9, S0 = 0.6; p(ŷ|x′) = 0.8 → Soft-NS 0.75, Soft-NC 0.25.
        assert!(close(SoftErasure::Sufficiency.normalised(0.9, 0.8, 0.6).unwrap(), 0.75));
        assert!(close(SoftErasure::Comprehensiveness.normalised(0.9, 0.8, 0.6).unwrap(), 0.25));
        assert_eq!(SoftErasure::Sufficiency.normalised(0.9, 0.8, 1.0), None);
    }

    #[test]
    fn aopc_is_the_mean_over_ratios() {
        assert!(close(aopc(&[Some(0.2), Some(0.4), Some(0.9)]).unwrap(), 0.5));
        assert_eq!(aopc(&[Some(0.2), None]), None);
        assert_eq!(aopc(&[]), None);
        assert_eq!(mean_defined([Some(1.0), None, Some(2.0)]), Some(1.5));
        assert_eq!(mean_defined([None]), None);
    }

    #[test]
    fn diagnosticity_counts_strict_wins_over_defined_pairs() {
        let u = [Some(0.9), Some(0.5), Some(0.2), None, Some(0.7)];
        let v = [Some(0.1), Some(0.5), Some(0.4), Some(0.0), None];
        // Pairs left: (0.9,0.1) win, (0.5,0.5) tie, (0.2,0.4) loss → 1/3.
        assert!(close(diagnosticity(&u, &v).unwrap(), 1.0 / 3.0));
        assert_eq!(diagnosticity(&[None], &[Some(1.0)]), None);
        assert_eq!(diagnosticity(&[], &[]), None);
    }
}
