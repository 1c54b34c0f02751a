//! Verification's statistics: the 95% intervals of a share (Wilson's score
//! interval) and of a paired difference of right answers, and the binomial
//! tail of the label-reassignment check (Zhou et al. §3).

use statrs::distribution::{Binomial, DiscreteCDF};

/// The normal quantile of a two-sided 95% interval.
const Z_95: f64 = 1.959_963_984_540_054;

/// 95% interval for a share of `k` in `n` (Wilson's score interval: sound
/// at the 99% a shortcut model reaches, where the normal one is not).
pub fn wilson_interval(k: usize, n: usize) -> (f64, f64) {
    if n == 0 {
        return (0.0, 1.0);
    }
    let (n, p, z) = (n as f64, k as f64 / n as f64, Z_95);
    let centre = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let half = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// 95% interval of `mean(a) − mean(b)` for two models' right (true) or wrong
/// answers on the same examples: the normal interval of the per-example
/// differences, which share the examples' difficulty.
pub fn paired_difference_interval(a: &[bool], b: &[bool]) -> Option<(f64, f64)> {
    let n = a.len();
    if n < 2 || b.len() != n {
        return None;
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(&x, &y)| f64::from(u8::from(x)) - f64::from(u8::from(y))).collect();
    let mean = d.iter().sum::<f64>() / n as f64;
    let variance = d.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    let half = Z_95 * (variance / n as f64).sqrt();
    Some((mean - half, mean + half))
}

/// `P(X ≥ k)` for `X ~ Binomial(n, p)`: how likely a classifier whose expected
/// accuracy is `p` gets at least `k` of `n` right.
pub fn binomial_tail(n: usize, k: usize, p: f64) -> f64 {
    if k == 0 {
        return 1.0;
    }
    if k > n {
        return 0.0;
    }
    match Binomial::new(p.clamp(0.0, 1.0), n as u64) {
        Ok(b) => b.sf(k as u64 - 1),
        Err(_) => f64::NAN,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_by_hand() {
        // Wilson, 495 of 500: centre (0.99 + 1.96²/1000) / (1 + 1.96²/500).
        let (low, high) = wilson_interval(495, 500);
        assert!((low - 0.9768).abs() < 5e-4 && (high - 0.9958).abs() < 5e-4, "{low} {high}");
        assert_eq!(wilson_interval(0, 0), (0.0, 1.0));
        let (low, high) = wilson_interval(10, 10);
        assert!((high - 1.0).abs() < 1e-12 && low > 0.69 && low < 0.73, "{low} {high}");
        // Paired: a right where b is wrong on 3 of 4, the same on the fourth.
        let (low, high) = paired_difference_interval(&[true, true, true, true], &[false, false, false, true]).unwrap();
        // d = 1, 1, 1, 0: mean 0.75, sd 0.5, half-width 1.96 · 0.5 / 2.
        assert!((low - (0.75 - 0.49)).abs() < 1e-3 && (high - (0.75 + 0.49)).abs() < 1e-3, "{low} {high}");
        assert_eq!(paired_difference_interval(&[true], &[false]), None);
    }

    #[test]
    fn binomial_tail_by_hand() {
        // n = 3, p = 0.5: P(X ≥ 2) = (3 + 1) / 8.
        assert!((binomial_tail(3, 2, 0.5) - 0.5).abs() < 1e-12);
        assert!((binomial_tail(3, 3, 0.5) - 0.125).abs() < 1e-12);
        assert_eq!(binomial_tail(3, 0, 0.5), 1.0);
        assert_eq!(binomial_tail(3, 4, 0.5), 0.0);
        // n = 4, p = 0.9: P(X ≥ 4) = 0.9⁴.
        assert!((binomial_tail(4, 4, 0.9) - 0.6561).abs() < 1e-12);
    }
}
