//! Attention's softmax over the keys, fused with its scaling and padding
//! mask: `p = softmax(s / divisor + bias)` along each row. burn's autodiff
//! runs this as seven tensor operations (a division, the mask's broadcast
//! add, max, subtraction, exp, sum, division), each allocating its output,
//! with the mask's add walked one computed index at a time and `exp` a libm
//! call per element; their backward passes are as many again. Here a row is
//! computed in one place, `exp` in SIMD lanes.

use wide::f32x8;

use crate::chunks::{for_each_row, for_each_row_with_scalar};
use crate::dispatch::{Loop, widest};
use crate::lanes::{LANES, groups, load_lanes, store_lanes};
use crate::math::exp_shifted_in_place;
use crate::rescale::SERIES;

/// From this many values, split over threads (in whole rows).
const PARALLEL_ELEMENTS: usize = 1 << 15;
/// About this many values per thread's share.
const CHUNK_VALUES: usize = 1 << 12;

/// Rows of `len` values; every `rows_per_bias` consecutive rows share one
/// `len`-long row of `bias` (attention's `[batch, heads, queries, keys]`
/// scores with a `[batch, keys]` mask: `heads · queries` rows per bias row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rows {
    pub len: usize,
    pub rows_per_bias: usize,
}

/// `softmax(scores / divisor + bias)` of every row. The operations and their
/// order are burn's decomposition (`exp(x − max) / Σ exp`), the sum taken in
/// index order.
pub fn forward(scores: &[f32], bias: &[f32], rows: Rows, divisor: f32) -> Vec<f32> {
    let Rows { len, rows_per_bias } = rows;
    assert!(len > 0 && rows_per_bias > 0, "non-empty rows");
    assert_eq!(scores.len() % len, 0, "whole rows");
    assert_eq!(bias.len() * rows_per_bias, scores.len(), "one bias row per {rows_per_bias} rows");
    let mut out = scores.to_vec();
    let parallel = scores.len() >= PARALLEL_ELEMENTS;
    for_each_row(&mut out, len, CHUNK_VALUES, parallel, |row, out| {
        let bias_row = row / rows_per_bias;
        row_in_place(out, &bias[bias_row * len..(bias_row + 1) * len], divisor);
    });
    out
}

/// One row of [`forward`], its scores replaced by their probabilities, in
/// the CPU's widest lanes ([`crate::dispatch`]). Each value is the same
/// operation on its own (a maximum does not round); the sum runs in index
/// order.
pub(crate) fn row_in_place(row: &mut [f32], bias: &[f32], divisor: f32) {
    widest(Row { row, bias, divisor })
}

struct Row<'a> {
    row: &'a mut [f32],
    bias: &'a [f32],
    divisor: f32,
}

impl Loop for Row<'_> {
    #[inline(always)]
    fn run(self) {
        let Row { row, bias, divisor } = self;
        let max = scale_and_mask(row, bias, divisor);
        exp_shifted_in_place(row, max);
        let sum: f32 = row.iter().sum();
        for e in row.iter_mut() {
            *e /= sum;
        }
    }
}

/// `row` replaced by `row / divisor + bias`; returns its maximum (which does
/// not round: the same in any lanes).
#[inline(always)]
fn scale_and_mask(row: &mut [f32], bias: &[f32], divisor: f32) -> f32 {
    let mut max = f32::NEG_INFINITY;
    for (x, &b) in row.iter_mut().zip(bias) {
        *x = *x / divisor + b;
        max = max.max(*x);
    }
    max
}

/// The gradient of the scores from the probabilities `forward` returned and
/// their gradient: `p · (g − Σ g p) / divisor` per row (the mask is a
/// constant: it has none).
pub fn backward(probs: &[f32], grad: &[f32], len: usize, divisor: f32) -> Vec<f32> {
    assert!(len > 0, "non-empty rows");
    assert_eq!(probs.len(), grad.len(), "one gradient per probability");
    assert_eq!(probs.len() % len, 0, "whole rows");
    let mut out = grad.to_vec();
    for_each_row(&mut out, len, CHUNK_VALUES, probs.len() >= PARALLEL_ELEMENTS, |row, out| {
        row_backward_in_place(&probs[row * len..(row + 1) * len], out, divisor);
    });
    out
}

/// One row of [`backward`]: `grad` (the probabilities' gradient) replaced by
/// the scores'.
pub(crate) fn row_backward_in_place(probs: &[f32], grad: &mut [f32], divisor: f32) {
    let dot = f32x8::splat(probs.iter().zip(grad.iter()).map(|(p, g)| p * g).sum());
    let divisor = f32x8::splat(divisor);
    for (j, n) in groups(probs.len()) {
        let (p, g) = (load_lanes(probs, j, n), load_lanes(grad, j, n));
        store_lanes(grad, j, n, p * (g - dot) / divisor);
    }
}

/// `sinh(y)/y` near 0, in lanes.
fn sinhc_series(y: f32x8) -> f32x8 {
    let y2 = y * y;
    y2 * f32x8::splat(1.0 / 6.0) + y2 * y2 * f32x8::splat(1.0 / 120.0) + f32x8::ONE
}

/// DeepLift's softmax rule (`grid::model::rules::rescaled_softmax`) of
/// `x = scores / divisor + bias` (rows and bias as in [`forward`]), rows
/// `[0, n)` paired with `[n, 2n)`: per row, its probabilities `p`, the
/// multipliers `m` of the outer `exp` (the secant between `log p` and its
/// counterpart's) and `w` of `lse` (which sum `Σ_j w_j Δx_j` to `Δlse`), laid
/// out `[p | m | w]`, `3 · len` values a row. The multipliers of the scores
/// are then `(g_k m_k − w_k Σ_i g_i m_i) / divisor` ([`rescaled_backward`]).
/// The formulas are `rules.rs`'s; the exponentials go eight at a time, each
/// row's `lse` computed once for both rows that read it.
pub fn rescaled(scores: &[f32], bias: &[f32], rows: Rows, divisor: f32) -> Vec<f32> {
    let Rows { len, rows_per_bias } = rows;
    assert!(len > 0 && rows_per_bias > 0 && scores.len().is_multiple_of(len), "whole rows");
    assert_eq!(bias.len() * rows_per_bias, scores.len(), "one bias row per {rows_per_bias} rows");
    let count = scores.len() / len;
    assert!(count.is_multiple_of(2), "DeepLift stacks inputs over references");
    let parallel = scores.len() >= PARALLEL_ELEMENTS;

    // The scaled, masked logits and each row's log-sum-exp.
    let mut x = scores.to_vec();
    let mut lse = vec![0.0f32; count];
    for_each_row_with_scalar(&mut x, len, &mut lse, CHUNK_VALUES, parallel, |row, x, lse| {
        *lse = scaled_lse_in_place(x, &bias[row / rows_per_bias * len..][..len], divisor);
    });

    let mut out = vec![0.0f32; 3 * scores.len()];
    for_each_row(&mut out, 3 * len, CHUNK_VALUES, parallel, |row, out| {
        let other = (row + count / 2) % count;
        let (x, x0) = (&x[row * len..][..len], &x[other * len..][..len]);
        let (lse, lse0) = (lse[row], lse[other]);
        let dlse = lse - lse0;
        let a = dlse.abs();
        // |Δlse| / (1 − e^{−|Δlse|}) = e^{|Δlse|/2} / sinhc(Δlse/2)
        let g = if a < SERIES {
            a * a * (1.0 / 12.0) + a * 0.5 + 1.0 - a * a * a * a * (1.0 / 720.0)
        } else {
            a / (1.0 - (-a).exp())
        };
        let half = a * 0.5;
        let (rise, fall, shrink) = ((dlse * 0.5 - half).exp(), (-dlse * 0.5 - half).exp(), (-half).exp());
        let [lse, lse0, g, rise, fall, shrink] = [lse, lse0, g, rise, fall, shrink].map(f32x8::splat);
        let (series, half_lanes) = (f32x8::splat(SERIES), f32x8::splat(0.5));
        let (p_out, rest) = out.split_at_mut(len);
        let (m_out, w_out) = rest.split_at_mut(len);
        for (at, n) in groups(len) {
            let (x, x0) = (load_lanes(x, at, n), load_lanes(x0, at, n));
            let (log_p, log_p0) = (x - lse, x0 - lse0);
            let (p, p0) = (log_p.exp(), log_p0.exp());
            let geometric = (p * p0).sqrt();
            let dx = x - x0;
            let w_series = geometric * shrink * g * sinhc_series(dx * half_lanes);
            let w_secant = (p * rise - p0 * fall) * g / dx;
            store_lanes(w_out, at, n, dx.abs().simd_lt(series).select(w_series, w_secant));
            let dl = log_p - log_p0;
            let m_series = geometric * sinhc_series(dl * half_lanes);
            store_lanes(m_out, at, n, dl.abs().simd_lt(series).select(m_series, (p - p0) / dl));
            store_lanes(p_out, at, n, p);
        }
    });
    out
}

/// `row` replaced by `row / divisor + bias`; returns its log-sum-exp.
fn scaled_lse_in_place(row: &mut [f32], bias: &[f32], divisor: f32) -> f32 {
    let max = scale_and_mask(row, bias, divisor);
    let max_lanes = f32x8::splat(max);
    let mut sum = f32x8::ZERO;
    for (at, n) in groups(row.len()) {
        let e = (load_lanes(row, at, n) - max_lanes).exp();
        // A partial group's empty lanes hold exp(−max): not part of the sum.
        sum += if n == LANES { e } else { keep_first(e, n) };
    }
    max + sum.reduce_add().ln()
}

/// The first `n` lanes of `value`, the rest zero.
fn keep_first(value: f32x8, n: usize) -> f32x8 {
    let mut lanes = value.to_array();
    lanes[n..].fill(0.0);
    f32x8::from(lanes)
}

/// The multipliers of the scores of [`rescaled`] from `grad` (`[rows, len]`)
/// and its `[p | m | w]` rows.
pub fn rescaled_backward(kept: &[f32], grad: &[f32], len: usize, divisor: f32) -> Vec<f32> {
    assert_eq!(kept.len(), 3 * grad.len(), "p, m and w per gradient");
    let mut dx = vec![0.0f32; grad.len()];
    let parallel = grad.len() >= PARALLEL_ELEMENTS;
    for_each_row(&mut dx, len, CHUNK_VALUES, parallel, |row, dx| {
        let kept = &kept[3 * row * len..3 * (row + 1) * len];
        let (m, w) = (&kept[len..2 * len], &kept[2 * len..]);
        let g = &grad[row * len..(row + 1) * len];
        let total: f32 = g.iter().zip(m).map(|(g, m)| g * m).sum();
        for k in 0..len {
            dx[k] = (g[k] * m[k] - w[k] * total) / divisor;
        }
    });
    dx
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Scores across rows and magnitudes, with masked keys.
    fn case(rows: usize, len: usize, rows_per_bias: usize) -> (Vec<f32>, Vec<f32>) {
        let scores = (0..rows * len).map(|i| ((i as f32) * 0.731).sin() * 9.0).collect();
        let bias = (0..rows / rows_per_bias * len).map(|i| if i % 5 == 3 { -1e9 } else { 0.0 }).collect();
        (scores, bias)
    }

    fn reference(scores: &[f32], bias: &[f32], rows: Rows, divisor: f64) -> Vec<f64> {
        let mut out = Vec::new();
        for (r, row) in scores.chunks(rows.len).enumerate() {
            let b = &bias[r / rows.rows_per_bias * rows.len..][..rows.len];
            let x: Vec<f64> = row.iter().zip(b).map(|(&s, &b)| s as f64 / divisor + b as f64).collect();
            let max = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = x.iter().map(|x| (x - max).exp()).sum();
            out.extend(x.iter().map(|x| (x - max).exp() / sum));
        }
        out
    }

    #[test]
    fn forward_is_the_softmax_of_the_scaled_masked_scores() {
        // Past the threshold for threads, rows not a multiple of eight long.
        for (rows, len, per_bias) in [(4, 1, 2), (12, 13, 3), (4 * 8 * 37, 37, 8 * 37)] {
            let (scores, bias) = case(rows, len, per_bias);
            let shape = Rows { len, rows_per_bias: per_bias };
            let ours = forward(&scores, &bias, shape, 2.0);
            let exact = reference(&scores, &bias, shape, 2.0);
            for (i, (&p, &e)) in ours.iter().zip(&exact).enumerate() {
                assert!((p as f64 - e).abs() <= 2e-7, "row {} key {}: {p} vs {e}", i / len, i % len);
                if bias[(i / len) / per_bias * len + i % len] < -1.0 {
                    assert_eq!(p, 0.0, "a masked key has weight 0");
                }
            }
        }
        // Split over threads or not, the same values.
        let (scores, bias) = case(4 * 8 * 37, 37, 8 * 37);
        let shape = Rows { len: 37, rows_per_bias: 8 * 37 };
        let whole = forward(&scores, &bias, shape, 2.0);
        let part = 37 * 8 * 37;
        assert_eq!(forward(&scores[..part], &bias[..37], shape, 2.0), whole[..part]);
    }

    #[test]
    fn backward_is_the_softmax_jacobian_times_the_gradient() {
        let (len, rows) = (11, 6);
        let (scores, bias) = case(rows, len, 2);
        let probs = forward(&scores, &bias, Rows { len, rows_per_bias: 2 }, 4.0);
        let grad: Vec<f32> = (0..rows * len).map(|i| ((i as f32) * 0.37).cos()).collect();
        let ours = backward(&probs, &grad, len, 4.0);
        for r in 0..rows {
            let (p, g) = (&probs[r * len..][..len], &grad[r * len..][..len]);
            for i in 0..len {
                // Σ_j g_j ∂p_j/∂s_i, with ∂p_j/∂x_i = p_j (δ_ij − p_i) and ∂x_i/∂s_i = 1/4.
                let exact: f64 = (0..len)
                    .map(|j| {
                        let delta = if i == j { 1.0 } else { 0.0 };
                        g[j] as f64 * p[j] as f64 * (delta - p[i] as f64) / 4.0
                    })
                    .sum();
                assert!((ours[r * len + i] as f64 - exact).abs() <= 1e-7, "row {r} key {i}");
            }
        }
    }
}
