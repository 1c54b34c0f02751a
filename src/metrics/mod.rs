//! Faithfulness metrics that compare the top of a salience ranking with the
//! ground truth G (Bastings et al. 2022 §3.3; PROTOCOL §1).
//!
//! Ranking convention: tokens are sorted by descending salience; ties go to the
//! earlier position; NaN counts as the lowest salience. Only rankable tokens
//! (not special tokens, not padding) take part.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub mod bootstrap;
pub mod words;

pub use words::WordAggregation;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Metric {
    /// precision@k with k = |G|: `|top_k(s) ∩ G| / k`.
    Precision,
    /// The smallest r with `top_r(s) ⊇ G`, i.e. the rank of the worst-ranked
    /// ground-truth token (1 is perfect).
    Rank,
}

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Precision => "precision",
            Metric::Rank => "rank",
        }
    }

    /// The per-example value.
    pub fn evaluate(self, ranking: &[usize], truth: &[usize]) -> Option<f64> {
        match self {
            Metric::Precision => precision_at_k(ranking, truth),
            Metric::Rank => rank_of_ground_truth(ranking, truth).map(|r| r as f64),
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Metric {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "precision" => Ok(Metric::Precision),
            "rank" => Ok(Metric::Rank),
            _ => Err(format!("unknown metric `{s}`; known: precision, rank")),
        }
    }
}

/// Positions of the rankable tokens, most salient first.
pub fn ranking(scores: &[f32], rankable: impl Fn(usize) -> bool) -> Vec<usize> {
    let key = |v: f32| if v.is_nan() { f32::NEG_INFINITY } else { v };
    let mut order: Vec<usize> = (0..scores.len()).filter(|&i| rankable(i)).collect();
    order.sort_by(|&a, &b| key(scores[b]).total_cmp(&key(scores[a])).then(a.cmp(&b)));
    order
}

/// `|top_k ∩ G| / k` with `k = |G|`; `None` when G is empty.
pub fn precision_at_k(ranking: &[usize], truth: &[usize]) -> Option<f64> {
    let k = truth.len();
    if k == 0 {
        return None;
    }
    let hits = ranking.iter().take(k).filter(|p| truth.contains(p)).count();
    Some(hits as f64 / k as f64)
}

/// 1-based rank of the worst-ranked ground-truth token; `None` when G is empty or
/// a ground-truth token is not in the ranking.
pub fn rank_of_ground_truth(ranking: &[usize], truth: &[usize]) -> Option<usize> {
    if truth.is_empty() {
        return None;
    }
    truth
        .iter()
        .map(|g| ranking.iter().position(|p| p == g).map(|i| i + 1))
        .try_fold(0, |worst, r| r.map(|r| worst.max(r)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranking_breaks_ties_by_position_and_sinks_nan() {
        let scores = [0.5, 0.9, 0.5, f32::NAN, 0.9];
        assert_eq!(ranking(&scores, |_| true), vec![1, 4, 0, 2, 3]);
        assert_eq!(ranking(&scores, |i| i != 1), vec![4, 0, 2, 3]);
    }

    #[test]
    fn precision_by_hand() {
        // Ranking 2, 0, 1, 3.
        let r = [2, 0, 1, 3];
        assert_eq!(precision_at_k(&r, &[2]), Some(1.0));
        assert_eq!(precision_at_k(&r, &[0]), Some(0.0));
        assert_eq!(precision_at_k(&r, &[0, 2]), Some(1.0));
        assert_eq!(precision_at_k(&r, &[0, 3]), Some(0.5));
        assert_eq!(precision_at_k(&r, &[1, 3]), Some(0.0));
        assert_eq!(precision_at_k(&r, &[]), None);
    }

    #[test]
    fn rank_by_hand() {
        let r = [2, 0, 1, 3];
        assert_eq!(rank_of_ground_truth(&r, &[2]), Some(1));
        assert_eq!(rank_of_ground_truth(&r, &[3]), Some(4));
        assert_eq!(rank_of_ground_truth(&r, &[0, 2]), Some(2));
        assert_eq!(rank_of_ground_truth(&r, &[1, 2]), Some(3));
        assert_eq!(rank_of_ground_truth(&r, &[9]), None);
        assert_eq!(Metric::Rank.evaluate(&r, &[3, 0]), Some(4.0));
        assert_eq!(Metric::Precision.evaluate(&r, &[3, 0]), Some(0.5));
    }
}
