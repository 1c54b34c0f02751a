//! Agreement between two methods' salience on the same input (Lu et al. 2024,
//! Table 1): how many of their top-k tokens they share, and how well their whole
//! rankings correlate.
//!
//! `a` and `b` are the two methods' scores over the same tokens; only the
//! rankable positions (not special tokens, not padding) take part, and `d` is
//! their number. As in [`ranking`], NaN counts as the lowest salience.

use super::ranking;

/// Top-k overlap, `|top_k(a) ∩ top_k(b)| / k_eff` with `k_eff = min(k, d)`;
/// top_k by [`ranking`] (ties go to the earlier position).
///
/// Dividing by `k_eff` rather than `k` keeps identical rankings at 1 on examples
/// shorter than k. `None` when `k_eff = 0` or the lengths differ.
pub fn top_k_overlap(a: &[f32], b: &[f32], rankable: impl Fn(usize) -> bool, k: usize) -> Option<f64> {
    if a.len() != b.len() {
        return None;
    }
    let top_a = ranking(a, &rankable);
    let k = k.min(top_a.len());
    if k == 0 {
        return None;
    }
    let mut in_top_b = vec![false; b.len()];
    for &p in ranking(b, &rankable).iter().take(k) {
        in_top_b[p] = true;
    }
    let shared = top_a[..k].iter().filter(|&&p| in_top_b[p]).count();
    Some(shared as f64 / k as f64)
}

/// Spearman's rank correlation: the Pearson correlation of the average ranks
/// `r = average_ranks(a)`, `q = average_ranks(b)` over the rankable tokens,
///
/// `ρ = Σ (r_i − r̄)(q_i − q̄) / √(Σ (r_i − r̄)² · Σ (q_i − q̄)²)`.
///
/// With ties this is the correct ρ (the shortcut `1 − 6Σδ²/(d(d²−1))` is not).
/// `None` when `d < 2`, when either method scores all tokens alike (constant
/// ranks make ρ = 0/0), or when the lengths differ.
pub fn spearman(a: &[f32], b: &[f32], rankable: impl Fn(usize) -> bool) -> Option<f64> {
    let (a, b) = rankable_values(a, b, rankable)?;
    rank_correlation(&a, &b)
}

/// Spearman's ρ of two paired samples: Pearson on average ranks, so ties are
/// handled exactly; `None` for fewer than two pairs or a constant side.
pub fn rank_correlation(a: &[f64], b: &[f64]) -> Option<f64> {
    pearson(&average_ranks(a), &average_ranks(b))
}

/// Kendall's τ_b over the rankable tokens,
///
/// `τ_b = Σ_{i<j} sgn(a_i − a_j)·sgn(b_i − b_j) / √(n_a · n_b)`,
///
/// with `n_a`, `n_b` the pairs not tied in a, in b. O(d²), which is cheap for a
/// sentence. `None` when either has no untied pair (this covers `d < 2`) or the
/// lengths differ.
pub fn kendall_tau_b(a: &[f32], b: &[f32], rankable: impl Fn(usize) -> bool) -> Option<f64> {
    let (a, b) = rankable_values(a, b, rankable)?;
    let (mut agreement, mut untied_a, mut untied_b) = (0i64, 0u64, 0u64);
    for i in 0..a.len() {
        for j in i + 1..a.len() {
            let (sa, sb) = (sign(a[i] - a[j]), sign(b[i] - b[j]));
            agreement += sa * sb;
            untied_a += sa.unsigned_abs();
            untied_b += sb.unsigned_abs();
        }
    }
    if untied_a == 0 || untied_b == 0 {
        return None;
    }
    Some(agreement as f64 / (untied_a as f64 * untied_b as f64).sqrt())
}

/// 1-based ascending ranks; tied values share the mean of the ranks they span
/// (values 5, 7, 7 → ranks 1, 2.5, 2.5). NaN ranks lowest, and −0 ties with +0.
pub fn average_ranks(values: &[f64]) -> Vec<f64> {
    let keys: Vec<f64> = values.iter().map(|&v| comparable(v)).collect();
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&i, &j| keys[i].total_cmp(&keys[j]));
    let mut ranks = vec![0.0; keys.len()];
    let mut start = 0;
    while start < order.len() {
        let end = start + order[start..].iter().take_while(|&&i| keys[i] == keys[order[start]]).count();
        // Positions start..end hold ranks start+1..=end; their mean:
        let shared = (start + 1 + end) as f64 / 2.0;
        for &i in &order[start..end] {
            ranks[i] = shared;
        }
        start = end;
    }
    ranks
}

/// The rankable positions' scores of both methods, as f64; `None` when the
/// lengths differ (the two cannot be scores of the same tokens).
fn rankable_values(a: &[f32], b: &[f32], rankable: impl Fn(usize) -> bool) -> Option<(Vec<f64>, Vec<f64>)> {
    if a.len() != b.len() {
        return None;
    }
    let kept = (0..a.len()).filter(|&i| rankable(i));
    Some(kept.map(|i| (comparable(a[i] as f64), comparable(b[i] as f64))).unzip())
}

/// NaN becomes −∞ (lowest, as in [`ranking`]) and −0 becomes +0, so that
/// `total_cmp` and `==` agree on ties.
fn comparable(v: f64) -> f64 {
    if v.is_nan() {
        f64::NEG_INFINITY
    } else if v == 0.0 {
        0.0
    } else {
        v
    }
}

fn sign(v: f64) -> i64 {
    if v > 0.0 {
        1
    } else if v < 0.0 {
        -1
    } else {
        0
    }
}

/// Pearson correlation; `None` for fewer than two values or a constant side.
fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    let n = x.len();
    if n < 2 || y.len() != n {
        return None;
    }
    let (mx, my) = (mean(x), mean(y));
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (&xi, &yi) in x.iter().zip(y) {
        let (dx, dy) = (xi - mx, yi - my);
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    if sxx == 0.0 || syy == 0.0 {
        return None;
    }
    // Ranks are small integers or halves, so √(Σx²·Σy²) is exact when ρ = ±1;
    // rounding elsewhere can still push |ρ| a hair past 1.
    Some((sxy / (sxx * syy).sqrt()).clamp(-1.0, 1.0))
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(actual: Option<f64>, expected: f64) {
        let v = actual.unwrap_or_else(|| panic!("expected {expected}, got None"));
        assert!((v - expected).abs() < 1e-9, "expected {expected}, got {v}");
    }

    #[test]
    fn average_ranks_by_hand() {
        // Ascending: NaN (1), −1 (2), 0.5 and 0.5 (3 and 4 → 3.5), 2 (5).
        assert_eq!(average_ranks(&[0.5, f64::NAN, 0.5, 2.0, -1.0]), vec![3.5, 1.0, 3.5, 5.0, 2.0]);
        // −0 ties with +0; a triple tie spans ranks 2..=4.
        assert_eq!(average_ranks(&[-0.0, 0.0, -3.0]), vec![2.5, 2.5, 1.0]);
        assert_eq!(average_ranks(&[1.0, 0.0, 1.0, 1.0]), vec![3.0, 1.0, 3.0, 3.0]);
        assert_eq!(average_ranks(&[]), Vec::<f64>::new());
    }

    #[test]
    fn identical_scores_agree_fully() {
        let a = [0.3, -0.1, 0.7, 0.2];
        close(top_k_overlap(&a, &a, |_| true, 2), 1.0);
        close(spearman(&a, &a, |_| true), 1.0);
        close(kendall_tau_b(&a, &a, |_| true), 1.0);
    }

    #[test]
    fn reversed_scores_disagree_fully() {
        let (a, b) = ([1.0, 2.0, 3.0, 4.0], [4.0, 3.0, 2.0, 1.0]);
        // top_2(a) = {3, 2}, top_2(b) = {0, 1}.
        close(top_k_overlap(&a, &b, |_| true, 2), 0.0);
        close(spearman(&a, &b, |_| true), -1.0);
        close(kendall_tau_b(&a, &b, |_| true), -1.0);
    }

    #[test]
    fn tie_and_special_tokens_by_hand() {
        // [CLS] w w w w [SEP]: the specials' huge scores must not count.
        let a = [9.0, 0.4, 0.1, 0.2, 0.2, -9.0];
        let b = [-9.0, 0.4, 0.1, 0.3, 0.2, 9.0];
        let words = |i: usize| (1..=4).contains(&i);
        // Ranks a: 4, 1, 2.5, 2.5; b: 4, 1, 3, 2; both means 2.5.
        // Deviations a: 1.5, −1.5, 0, 0; b: 1.5, −1.5, 0.5, −0.5.
        // Σ = 4.5, Σa² = 4.5, Σb² = 5 → ρ = 4.5 / √22.5 = √0.9.
        close(spearman(&a, &b, words), 0.9f64.sqrt());
        // Pairs: 5 concordant, 1 tied in a only → τ_b = 5 / √(5·6).
        close(kendall_tau_b(&a, &b, words), 5.0 / 30f64.sqrt());
        // top_2 by ranking: a → 1, 3 (0.2 tie to the earlier), b → 1, 3.
        close(top_k_overlap(&a, &b, words, 2), 1.0);
    }

    #[test]
    fn overlap_of_one_half_and_two_thirds() {
        let a = [0.9, 0.8, 0.1, 0.0];
        let b = [0.9, 0.0, 0.8, 0.1];
        // top_2: {0, 1} vs {0, 2}; top_3: {0, 1, 2} vs {0, 2, 3}.
        close(top_k_overlap(&a, &b, |_| true, 2), 0.5);
        close(top_k_overlap(&a, &b, |_| true, 3), 2.0 / 3.0);
    }

    #[test]
    fn k_beyond_the_rankable_tokens_is_capped() {
        // Three rankable tokens and k = 40: k_eff = 3, so any two rankings share all.
        let a = [5.0, 0.3, 0.1, 0.2];
        let b = [-5.0, 0.1, 0.2, 0.3];
        close(top_k_overlap(&a, &b, |i| i > 0, 40), 1.0);
        // With k = 1 they differ: token 1 vs token 3.
        close(top_k_overlap(&a, &b, |i| i > 0, 1), 0.0);
        assert_eq!(top_k_overlap(&a, &b, |_| false, 40), None);
        assert_eq!(top_k_overlap(&a, &b, |_| true, 0), None);
    }

    #[test]
    fn undefined_correlations_are_none() {
        let constant = [0.5, 0.5, 0.5];
        let varied = [0.1, 0.2, 0.3];
        assert_eq!(spearman(&constant, &varied, |_| true), None);
        assert_eq!(kendall_tau_b(&varied, &constant, |_| true), None);
        // One rankable token: d < 2.
        assert_eq!(spearman(&varied, &varied, |i| i == 0), None);
        assert_eq!(kendall_tau_b(&varied, &varied, |i| i == 0), None);
        // Scores of different lengths cannot be of the same tokens.
        assert_eq!(spearman(&varied, &varied[..2], |_| true), None);
        assert_eq!(top_k_overlap(&varied, &varied[..2], |_| true, 1), None);
    }

    #[test]
    fn nan_ranks_lowest() {
        // NaN at position 0 is the lowest of a, as 0.0 is of b: same order.
        close(spearman(&[f32::NAN, 1.0, 2.0], &[0.0, 1.0, 2.0], |_| true), 1.0);
        close(top_k_overlap(&[f32::NAN, 1.0, 2.0], &[0.0, 1.0, 2.0], |_| true, 2), 1.0);
    }
}
