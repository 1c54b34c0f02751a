//! Percentile-bootstrap confidence intervals of a cell's mean over examples
//! (Efron & Tibshirani 1993, ch. 13): resample the examples with replacement,
//! take the mean of each resample, and read the interval off the quantiles of
//! those means. Seeded, so a cell's interval is a pure function of its values.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// How intervals are computed; part of the score steps' key.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Bootstrap {
    pub resamples: usize,
    /// Coverage, e.g. 0.95.
    pub level: f64,
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Self { resamples: 1000, level: 0.95, seed: 0 }
    }
}

impl Bootstrap {
    /// `[low, high]` for the mean of `values`; `None` for no values.
    pub fn interval(&self, values: &[f64]) -> Option<[f64; 2]> {
        if values.is_empty() || self.resamples == 0 {
            return None;
        }
        let n = values.len();
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        let mut means: Vec<f64> = (0..self.resamples)
            .map(|_| (0..n).map(|_| values[rng.random_range(0..n)]).sum::<f64>() / n as f64)
            .collect();
        means.sort_by(f64::total_cmp);
        let tail = (1.0 - self.level) / 2.0;
        Some([quantile(&means, tail), quantile(&means, 1.0 - tail)])
    }
}

impl Bootstrap {
    /// `[low, high]` for the mean of `a_i − b_i` over paired examples (two
    /// methods on the same inputs); `None` when the lengths differ or are 0.
    pub fn paired_difference(&self, a: &[f64], b: &[f64]) -> Option<[f64; 2]> {
        if a.len() != b.len() {
            return None;
        }
        let differences: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
        self.interval(&differences)
    }
}

/// Linear interpolation between order statistics (Hyndman & Fan type 7, NumPy's default).
fn quantile(sorted: &[f64], q: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * q.clamp(0.0, 1.0);
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_difference_detects_a_consistent_gap() {
        let a: Vec<f64> = (0..200).map(|i| (i % 7) as f64 / 7.0 + 0.1).collect();
        let b: Vec<f64> = (0..200).map(|i| (i % 7) as f64 / 7.0).collect();
        let [lo, hi] = Bootstrap::default().paired_difference(&a, &b).unwrap();
        assert!((lo - 0.1).abs() < 1e-9 && (hi - 0.1).abs() < 1e-9, "{lo} {hi}");
        assert_eq!(Bootstrap::default().paired_difference(&a, &b[1..]), None);
    }

    #[test]
    fn quantiles_by_hand() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert!((quantile(&v, 0.5) - 2.5).abs() < 1e-12);
        assert!((quantile(&v, 0.25) - 1.75).abs() < 1e-12);
    }

    #[test]
    fn constant_values_give_a_point_and_no_values_nothing() {
        let b = Bootstrap::default();
        assert_eq!(b.interval(&[1.0; 30]), Some([1.0, 1.0]));
        assert_eq!(b.interval(&[]), None);
    }

    #[test]
    fn covers_the_mean_with_the_normal_width() {
        // 400 Bernoulli(0.3) outcomes: the interval is the mean ± 1.96 · sqrt(p(1−p)/n) ≈ ± 0.045.
        let values: Vec<f64> = (0..400).map(|i| if i % 10 < 3 { 1.0 } else { 0.0 }).collect();
        let b = Bootstrap { resamples: 4000, ..Bootstrap::default() };
        let [lo, hi] = b.interval(&values).unwrap();
        assert!(lo < 0.3 && 0.3 < hi, "[{lo}, {hi}]");
        let half = 1.96 * (0.3f64 * 0.7 / 400.0).sqrt();
        assert!(((hi - lo) / 2.0 - half).abs() < 0.006, "half-width {} vs {half}", (hi - lo) / 2.0);
        assert_eq!(b.interval(&values), b.interval(&values), "seeded");
    }
}
