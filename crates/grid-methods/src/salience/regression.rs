//! Weighted least squares for the surrogate fits of LIME and KernelSHAP.
//!
//! One solver serves both: minimise `Σ_i w_i (y_i − b − x_iᵀβ)² + α‖β‖²`, with the
//! intercept `b` unpenalised (scikit-learn's `Ridge(alpha, fit_intercept=True)` with
//! `sample_weight`, which LIT's LIME calls) or absent (KernelSHAP after the
//! efficiency constraint has removed one variable). With an intercept, `X` and `y`
//! are centred by their weighted means, which makes `b` drop out of the penalty:
//! `(X_cᵀ W X_c + αI) β = X_cᵀ W y_c`, `b = ȳ − x̄ᵀβ`. The normal equations are
//! solved by nalgebra's Cholesky factorisation; they are well conditioned for
//! LIME's `α = 1`, and for KernelSHAP a rank-deficient system (fewer distinct
//! coalitions than players) gets a tiny ridge, reported in [`Fit::jitter`].

use nalgebra::{Cholesky, DMatrix, DVector};

/// A pivot of the Cholesky factor below this fraction of the largest diagonal entry
/// means the system is numerically singular: its solution would be dominated by
/// rounding noise in the null space.
const SINGULAR_PIVOT: f64 = 1e-12;

/// The ridge added to a singular system, relative to its mean diagonal entry: small
/// enough to leave well-determined directions alone (≈ the minimum-norm solution),
/// large enough to make the factorisation stable.
const JITTER: f64 = 1e-10;

/// The result of [`weighted_least_squares`].
#[derive(Debug, Clone, PartialEq)]
pub struct Fit {
    /// `β`, one per column of `X`.
    pub coefficients: Vec<f64>,
    /// `b` (0 when fitted without an intercept).
    pub intercept: f64,
    /// The ridge added beyond `α` because the system was singular; 0 normally.
    pub jitter: f64,
}

/// Minimises `Σ_i w_i (y_i − b − x_iᵀβ)² + α‖β‖²` over `β` (and `b` when
/// `intercept`). `x` is `n × p`; `y` and `w` have `n` entries; negative weights
/// count as 0. Non-finite inputs give non-finite coefficients, never a panic.
pub fn weighted_least_squares(x: &DMatrix<f64>, y: &[f64], w: &[f64], alpha: f64, intercept: bool) -> Fit {
    let (n, p) = x.shape();
    assert!(y.len() == n && w.len() == n, "weighted_least_squares: {n} rows, {} targets, {} weights", y.len(), w.len());
    let w: Vec<f64> = w.iter().map(|&v| v.max(0.0)).collect();
    let total: f64 = w.iter().sum();
    // Centring by the weighted means is what keeps the intercept out of the penalty.
    let (x_mean, y_mean) = if intercept && total > 0.0 {
        let x_mean = DVector::from_fn(p, |j, _| (0..n).map(|i| w[i] * x[(i, j)]).sum::<f64>() / total);
        let y_mean = y.iter().zip(&w).map(|(y, w)| w * y).sum::<f64>() / total;
        (x_mean, y_mean)
    } else {
        (DVector::zeros(p), 0.0)
    };
    if p == 0 {
        return Fit { coefficients: Vec::new(), intercept: y_mean, jitter: 0.0 };
    }
    // √W X_c and √W y_c: the Gram matrix is then one matrix product (nalgebra's gemm).
    let scaled = DMatrix::from_fn(n, p, |i, j| w[i].sqrt() * (x[(i, j)] - x_mean[j]));
    let target = DVector::from_fn(n, |i, _| w[i].sqrt() * (y[i] - y_mean));
    let transposed = scaled.transpose();
    let mut gram = &transposed * &scaled;
    for j in 0..p {
        gram[(j, j)] += alpha;
    }
    let rhs = &transposed * &target;
    let (beta, jitter) = solve_spd(gram, &rhs);
    let intercept = if intercept { y_mean - x_mean.dot(&beta) } else { 0.0 };
    Fit { coefficients: beta.iter().copied().collect(), intercept, jitter }
}

/// Solves `A β = r` for a symmetric positive semi-definite `A`, adding a tiny ridge
/// when `A` is singular. Returns `β` and the ridge added.
fn solve_spd(a: DMatrix<f64>, r: &DVector<f64>) -> (DVector<f64>, f64) {
    let p = a.nrows();
    let largest = a.diagonal().iter().fold(0.0f64, |m, &v| m.max(v));
    if let Some(cholesky) = Cholesky::new(a.clone()) {
        let smallest = cholesky.l_dirty().diagonal().iter().fold(f64::INFINITY, |m, &v| m.min(v * v));
        if smallest > SINGULAR_PIVOT * largest {
            return (cholesky.solve(r), 0.0);
        }
    }
    let mean = a.trace() / p as f64;
    let jitter = if mean > 0.0 { JITTER * mean } else { JITTER };
    let mut a = a;
    for j in 0..p {
        a[(j, j)] += jitter;
    }
    match Cholesky::new(a) {
        Some(cholesky) => (cholesky.solve(r), jitter),
        // Only a non-finite matrix gets here.
        None => (DVector::from_element(p, f64::NAN), jitter),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two binary features, all four combinations.
    fn design() -> (DMatrix<f64>, Vec<f64>) {
        let x = DMatrix::from_row_slice(4, 2, &[0.0, 0.0, 1.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
        (x, vec![1.0, 3.0, 2.0, 6.0])
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-12
    }

    #[test]
    fn ridge_matches_a_hand_solved_two_feature_case() {
        let (x, y) = design();
        // Unit weights: x̄ = (½, ½), ȳ = 3, X_cᵀX_c + I = 2I, X_cᵀy_c = (3, 2),
        // so β = (3/2, 1) and b = 3 − ½·3/2 − ½·1 = 7/4.
        let fit = weighted_least_squares(&x, &y, &[1.0; 4], 1.0, true);
        assert!(close(fit.coefficients[0], 1.5) && close(fit.coefficients[1], 1.0), "{fit:?}");
        assert!(close(fit.intercept, 1.75), "{fit:?}");
        assert_eq!(fit.jitter, 0.0);
        // Weights (1, 2, 1, 3), solved the same way in exact fractions.
        let fit = weighted_least_squares(&x, &y, &[1.0, 2.0, 1.0, 3.0], 1.0, true);
        assert!(close(fit.coefficients[0], 85.0 / 46.0) && close(fit.coefficients[1], 73.0 / 46.0), "{fit:?}");
        assert!(close(fit.intercept, 75.0 / 46.0), "{fit:?}");
    }

    #[test]
    fn the_intercept_is_not_penalised() {
        let (x, y) = design();
        let base = weighted_least_squares(&x, &y, &[1.0, 2.0, 1.0, 3.0], 1.0, true);
        let shifted: Vec<f64> = y.iter().map(|v| v + 1000.0).collect();
        let fit = weighted_least_squares(&x, &shifted, &[1.0, 2.0, 1.0, 3.0], 1.0, true);
        // A penalised intercept would shrink towards 0 and move the slopes; here only b moves.
        assert!(close(fit.coefficients[0], base.coefficients[0]) && close(fit.coefficients[1], base.coefficients[1]));
        assert!((fit.intercept - base.intercept - 1000.0).abs() < 1e-9);
    }

    #[test]
    fn sample_weights_matter() {
        let (x, y) = design();
        let uniform = weighted_least_squares(&x, &y, &[1.0; 4], 1.0, true);
        let weighted = weighted_least_squares(&x, &y, &[1.0, 1.0, 1.0, 5.0], 1.0, true);
        assert!((uniform.coefficients[0] - weighted.coefficients[0]).abs() > 0.1);
        // A zero weight removes a row entirely.
        let x3 = DMatrix::from_row_slice(3, 2, &[0.0, 0.0, 1.0, 0.0, 0.0, 1.0]);
        let dropped = weighted_least_squares(&x3, &y[..3], &[1.0, 2.0, 1.0], 1.0, true);
        let zeroed = weighted_least_squares(&x, &y, &[1.0, 2.0, 1.0, 0.0], 1.0, true);
        for j in 0..2 {
            assert!(close(dropped.coefficients[j], zeroed.coefficients[j]));
        }
        assert!(close(dropped.intercept, zeroed.intercept));
        // Scaling every weight by c is the same problem with α / c.
        let scaled = weighted_least_squares(&x, &y, &[2.0, 4.0, 2.0, 6.0], 2.0, true);
        let base = weighted_least_squares(&x, &y, &[1.0, 2.0, 1.0, 3.0], 1.0, true);
        assert!(close(scaled.coefficients[0], base.coefficients[0]) && close(scaled.intercept, base.intercept));
    }

    #[test]
    fn least_squares_without_intercept_is_exact_on_a_consistent_system() {
        let (x, _) = design();
        let y: Vec<f64> = (0..4).map(|i| 0.25 * x[(i, 0)] - 0.5 * x[(i, 1)]).collect();
        let fit = weighted_least_squares(&x, &y, &[1.0, 3.0, 0.5, 2.0], 0.0, false);
        assert!(close(fit.coefficients[0], 0.25) && close(fit.coefficients[1], -0.5), "{fit:?}");
        assert_eq!((fit.intercept, fit.jitter), (0.0, 0.0));
    }

    #[test]
    fn singular_systems_get_a_tiny_ridge() {
        // Two identical columns: any split of the slope fits; the ridge picks the even one.
        let x = DMatrix::from_row_slice(3, 2, &[0.0, 0.0, 1.0, 1.0, 2.0, 2.0]);
        let fit = weighted_least_squares(&x, &[0.0, 1.0, 2.0], &[1.0; 3], 0.0, false);
        assert!(fit.jitter > 0.0);
        assert!((fit.coefficients[0] - 0.5).abs() < 1e-6 && (fit.coefficients[1] - 0.5).abs() < 1e-6, "{fit:?}");
        // No rows at all: zero coefficients, not NaN.
        let empty = weighted_least_squares(&DMatrix::zeros(0, 3), &[], &[], 0.0, false);
        assert_eq!(empty.coefficients, vec![0.0; 3]);
        let none = weighted_least_squares(&DMatrix::zeros(2, 0), &[1.0, 3.0], &[1.0, 1.0], 1.0, true);
        assert!(none.coefficients.is_empty() && close(none.intercept, 2.0));
    }
}
