//! Layer normalisation over the last dimension, forward and backward. burn's
//! autodiff runs it as nine tensor operations (mean, subtraction, square,
//! mean, `+ ε`, square root, division, `· γ`, `+ β`), each allocating a
//! tensor of the input's size, and their backward passes as many again; a
//! BERT layer normalises twice. Here a row is one pass of each.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use crate::chunks::{for_each_row, for_each_row_with_scalar, rows_per_share, written};
use crate::rescale::NEAR;

/// From this many values, split over threads (in whole rows).
const PARALLEL_ELEMENTS: usize = 1 << 15;
/// About this many values per share. The backward's sums over rows (`dγ`,
/// `dβ`) are taken per share, then added in share order: the split depends
/// on the shape only, so the values never depend on the threads.
const CHUNK_VALUES: usize = 1 << 13;

/// What the backward pass needs from the forward: `x̂ = (x − μ) / σ` per
/// value and `σ = √(var + ε)` per row.
#[derive(Debug, Clone)]
pub struct Saved {
    pub normalized: Vec<f32>,
    pub deviation: Vec<f32>,
}

/// `y = (x − μ) / √(var + ε) · γ + β` over rows of `γ.len()` values, μ and
/// var each row's mean and (biased) variance, as burn's decomposition
/// computes them (sums in index order). With `save`, also what
/// [`backward`] needs.
pub fn forward(x: &[f32], gamma: &[f32], beta: &[f32], epsilon: f32, save: bool) -> (Vec<f32>, Option<Saved>) {
    let len = gamma.len();
    assert!(len > 0 && beta.len() == len, "γ and β of the row's length");
    assert_eq!(x.len() % len, 0, "whole rows");
    let mut deviation = vec![0.0f32; x.len() / len];
    let parallel = x.len() >= PARALLEL_ELEMENTS;
    // Every output is written row by row, never zero-filled first. `x − μ` is
    // computed once for the variance and again for `x̂`: the same value both
    // times, so `x̂` and `y = x̂ · γ + β` are what one stored pass computes.
    let rows = |out: &mut [MaybeUninit<f32>], deviation: &mut [f32], affine: Option<(&[f32], &[f32])>| {
        for_each_row_with_scalar(out, len, deviation, CHUNK_VALUES, parallel, |row, out, sigma| {
            let x = &x[row * len..(row + 1) * len];
            let mean = x.iter().sum::<f32>() / len as f32;
            let variance: f32 = x.iter().map(|&x| (x - mean) * (x - mean)).sum();
            *sigma = (variance / len as f32 + epsilon).sqrt();
            match affine {
                Some((gamma, beta)) => {
                    for (((out, &x), &g), &b) in out.iter_mut().zip(x).zip(gamma).zip(beta) {
                        out.write((x - mean) / *sigma * g + b);
                    }
                }
                None => {
                    for (out, &x) in out.iter_mut().zip(x) {
                        out.write((x - mean) / *sigma);
                    }
                }
            }
        })
    };
    if !save {
        let y = written(x.len(), |out| rows(out, &mut deviation, Some((gamma, beta))));
        return (y, None);
    }
    let normalized = written(x.len(), |out| rows(out, &mut deviation, None));
    let y = written(x.len(), |out| {
        for_each_row(out, len, CHUNK_VALUES, parallel, |row, out| {
            let normalized = &normalized[row * len..(row + 1) * len];
            for (((y, &n), &g), &b) in out.iter_mut().zip(normalized).zip(gamma).zip(beta) {
                y.write(n * g + b);
            }
        })
    });
    (y, Some(Saved { normalized, deviation }))
}

/// The gradients of γ and β.
#[derive(Debug, Clone)]
pub struct AffineGradients {
    pub gamma: Vec<f32>,
    pub beta: Vec<f32>,
}

/// The gradients of `x`, `γ` and `β` from the output's gradient `grad`:
/// with `ĝ = grad · γ`, `dx = (ĝ − mean(ĝ) − x̂ · mean(ĝ x̂)) / σ` per row,
/// `dγ = Σ_rows grad · x̂`, `dβ = Σ_rows grad`. `dγ` and `dβ` only when
/// asked for (attribution tracks the input alone).
pub fn backward(saved: &Saved, gamma: &[f32], grad: &[f32], affine: bool) -> (Vec<f32>, Option<AffineGradients>) {
    let len = gamma.len();
    let Saved { normalized, deviation } = saved;
    assert_eq!(grad.len(), normalized.len(), "one gradient per value");
    let mut dx = vec![0.0f32; grad.len()];
    let parallel = grad.len() >= PARALLEL_ELEMENTS;
    for_each_row(&mut dx, len, CHUNK_VALUES, parallel, |row, dx| {
        let (g, n) = (&grad[row * len..(row + 1) * len], &normalized[row * len..(row + 1) * len]);
        let (mut mean_scaled, mut mean_product) = (0.0f32, 0.0f32);
        for j in 0..len {
            let scaled = g[j] * gamma[j];
            mean_scaled += scaled;
            mean_product += scaled * n[j];
        }
        let (mean_scaled, mean_product) = (mean_scaled / len as f32, mean_product / len as f32);
        let sigma = deviation[row];
        for j in 0..len {
            dx[j] = (g[j] * gamma[j] - mean_scaled - n[j] * mean_product) / sigma;
        }
    });
    (dx, affine.then(|| affine_gradients(saved, grad, len)))
}

/// `dγ = Σ_rows grad · x̂` and `dβ = Σ_rows grad` over rows of `len`
/// values, summed per share of rows, then the shares in order (the split
/// depends on the shape only).
pub fn affine_gradients(saved: &Saved, grad: &[f32], len: usize) -> AffineGradients {
    let normalized = &saved.normalized;
    assert_eq!(grad.len(), normalized.len(), "one gradient per value");
    let parallel = grad.len() >= PARALLEL_ELEMENTS;
    let share = |(g, n): (&[f32], &[f32])| {
        let mut sums = vec![0.0f32; 2 * len];
        for (g, n) in g.chunks(len).zip(n.chunks(len)) {
            for j in 0..len {
                sums[j] += g[j] * n[j];
                sums[len + j] += g[j];
            }
        }
        sums
    };
    let values = rows_per_share(len, CHUNK_VALUES) * len;
    let shares: Vec<Vec<f32>> = if parallel {
        grad.par_chunks(values).zip(normalized.par_chunks(values)).map(share).collect()
    } else {
        grad.chunks(values).zip(normalized.chunks(values)).map(share).collect()
    };
    let mut sums = vec![0.0f32; 2 * len];
    for share in shares {
        sums.iter_mut().zip(share).for_each(|(sum, v)| *sum += v);
    }
    let beta = sums.split_off(len);
    AffineGradients { gamma: sums, beta }
}

/// DeepLift's multipliers of the input (the Rescale rule, rows `[0, n)`
/// paired with `[n, 2n)`), in place of [`backward`]'s gradient, for layer
/// norm written as `rules.rs` writes it: `c = x − mean(x)` (linear),
/// `v = mean(c · c)` and `c · r` (products: each factor's multiplier is the
/// other factor's mean over the pair), `r = 1/√(v + ε)` (the secant between
/// the pair), then the affine map. Per row, with `c̄`, `r̄` the pair's means
/// and `ĝ = grad · γ`: `∂c = ĝ r̄ + (2 c̄ / len) · m · Σ ĝ c̄`, `m` the
/// secant of `1/√u`, and `∂x = ∂c − mean(∂c)`.
pub fn rescaled_backward(saved: &Saved, gamma: &[f32], grad: &[f32]) -> Vec<f32> {
    let len = gamma.len();
    let Saved { normalized, deviation } = saved;
    assert_eq!(grad.len(), normalized.len(), "one gradient per value");
    let rows = deviation.len();
    assert_eq!(rows % 2, 0, "DeepLift stacks inputs over references");
    let mut dx = vec![0.0f32; grad.len()];
    let parallel = grad.len() >= PARALLEL_ELEMENTS;
    for_each_row(&mut dx, len, CHUNK_VALUES, parallel, |row, dx| {
        let other = (row + rows / 2) % rows;
        let (sigma, sigma0) = (deviation[row], deviation[other]);
        let (n, n0) = (&normalized[row * len..(row + 1) * len], &normalized[other * len..(other + 1) * len]);
        let g = &grad[row * len..(row + 1) * len];
        // The pair's mean centred values, kept in `dx` until the end.
        let mut d_r = 0.0f32;
        for j in 0..len {
            let mean_centred = (n[j] * sigma + n0[j] * sigma0) * 0.5;
            dx[j] = mean_centred;
            d_r += g[j] * gamma[j] * mean_centred;
        }
        let (r, r0) = (1.0 / sigma, 1.0 / sigma0);
        let (u, u0) = (sigma * sigma, sigma0 * sigma0);
        let du = u - u0;
        let secant = if du.abs() < (u.abs() + u0.abs() + 1.0) * NEAR {
            let mid = (u + u0) * 0.5;
            -0.5 / mid.sqrt() / mid
        } else {
            (r - r0) / du
        };
        let (mean_r, d_u) = ((r + r0) * 0.5, d_r * secant);
        let mut mean_dc = 0.0f32;
        for j in 0..len {
            let dc = g[j] * gamma[j] * mean_r + 2.0 * dx[j] / len as f32 * d_u;
            dx[j] = dc;
            mean_dc += dc;
        }
        let mean_dc = mean_dc / len as f32;
        dx.iter_mut().for_each(|v| *v -= mean_dc);
    });
    dx
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(n: usize, len: usize) -> Vec<f32> {
        (0..n * len).map(|i| ((i as f32) * 0.377).sin() * 3.0 + (i / len) as f32 * 0.1).collect()
    }

    #[test]
    fn forward_normalises_each_row_and_applies_the_affine_map() {
        let (n, len) = (5, 7);
        let x = rows(n, len);
        let gamma: Vec<f32> = (0..len).map(|j| 0.5 + j as f32 * 0.25).collect();
        let beta: Vec<f32> = (0..len).map(|j| j as f32 * -0.1).collect();
        let (y, saved) = forward(&x, &gamma, &beta, 1e-5, true);
        let saved = saved.expect("saved");
        for r in 0..n {
            let row: Vec<f64> = x[r * len..][..len].iter().map(|&v| v as f64).collect();
            let mean = row.iter().sum::<f64>() / len as f64;
            let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / len as f64;
            let sigma = (var + 1e-5).sqrt();
            assert!((saved.deviation[r] as f64 - sigma).abs() <= 1e-6 * sigma);
            for j in 0..len {
                let exact = (row[j] - mean) / sigma * gamma[j] as f64 + beta[j] as f64;
                assert!((y[r * len + j] as f64 - exact).abs() <= 1e-6, "row {r} value {j}");
            }
        }
    }

    /// Finite differences of `Σ y · probe` in f64 against the backward, and
    /// the same values whether or not the rows are split over threads.
    #[test]
    fn backward_matches_finite_differences() {
        let (n, len) = (3, 6);
        let x = rows(n, len);
        let gamma: Vec<f32> = (0..len).map(|j| 1.0 + j as f32 * 0.3).collect();
        let beta = vec![0.25f32; len];
        let probe: Vec<f32> = (0..n * len).map(|i| ((i as f32) * 0.91).cos()).collect();
        let (_, saved) = forward(&x, &gamma, &beta, 1e-5, true);
        let (dx, affine) = backward(&saved.expect("saved"), &gamma, &probe, true);
        let AffineGradients { gamma: d_gamma, beta: d_beta } = affine.expect("asked for");
        let loss = |x: &[f32], gamma: &[f32], beta: &[f32]| -> f64 {
            let (y, _) = forward(x, gamma, beta, 1e-5, false);
            y.iter().zip(&probe).map(|(&y, &p)| y as f64 * p as f64).sum()
        };
        let h = 1e-2f32;
        let numeric = |bump: &dyn Fn(f32) -> f64| (bump(h) - bump(-h)) / (2.0 * h as f64);
        for i in 0..x.len() {
            let fd = numeric(&|d| {
                let mut x = x.clone();
                x[i] += d;
                loss(&x, &gamma, &beta)
            });
            assert!((dx[i] as f64 - fd).abs() <= 2e-3, "dx[{i}] = {}, finite difference {fd}", dx[i]);
        }
        for j in 0..len {
            let fd = numeric(&|d| {
                let mut gamma = gamma.clone();
                gamma[j] += d;
                loss(&x, &gamma, &beta)
            });
            assert!((d_gamma[j] as f64 - fd).abs() <= 2e-3, "dγ[{j}]");
            let sum: f32 = (0..n).map(|r| probe[r * len + j]).sum();
            assert_eq!(d_beta[j], sum, "dβ is the gradient summed over rows");
        }
        // Long enough for threads: the same as row by row.
        let (n, len) = (PARALLEL_ELEMENTS / 16 + 3, 16);
        let x = rows(n, len);
        let (gamma, beta) = (vec![1.5f32; len], vec![0.0f32; len]);
        let (y, _) = forward(&x, &gamma, &beta, 1e-12, false);
        let (head, _) = forward(&x[..64 * len], &gamma, &beta, 1e-12, false);
        assert_eq!(head, y[..64 * len]);
    }
}
