//! A dense layer applied at every position of a batch of sequences,
//! `y = x W + b` with `x` `[rows, inputs]` (every position of every example,
//! one row each) and `W` `[inputs, outputs]`: its output, its input's
//! gradient and its parameter gradients, each one product over all rows into
//! a buffer that is written, never zero-filled first.
//!
//! burn's CPU backend runs a 3-D layer's weight gradient as one
//! `[inputs, outputs]` product per example, summed afterwards: `batch` small
//! products and `batch` full-size temporaries. Here `∂W = xᵀ ∂y` is one
//! product over all rows, split into fixed blocks of input features that the
//! threads share (never by thread count, so the threads never change a
//! value), and `∂b` sums the rows in order. Where a `GRID_BLAS` library
//! takes the products ([`crate::blas`]), `∂W` is one product on its threads.

use std::mem::MaybeUninit;

use crate::chunks::for_each_chunk;
use crate::matmul::{Threads, blas_in_use, product, product_into};

/// Input features per block of the weight gradient: every block multiplies
/// the whole `∂y` (the `gemm` crate packs it once per block), so a block is
/// tall enough to pay for that and narrow enough that two threads share even
/// the quickstart's 64-wide layers.
const BLOCK: usize = 32;

/// Output columns per block of the bias gradient.
const BIAS_BLOCK: usize = 256;

/// Below this many multiply-adds a gradient is computed on one thread.
const PARALLEL_WORK: usize = 1 << 20;

/// The shape of a dense layer's batch: `rows` positions of `inputs` features
/// in, `outputs` out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    pub rows: usize,
    pub inputs: usize,
    pub outputs: usize,
}

/// `y = x W + b`, `[rows, outputs]` row-major, from `x` `[rows, inputs]`,
/// `weight` `[inputs, outputs]` and `bias` `[outputs]`: each row starts as
/// the bias and the product is added to it (no zero fill, no second pass for
/// the bias).
pub fn forward(dims: Dims, x: &[f32], weight: &[f32], bias: &[f32]) -> Vec<f32> {
    let Dims { rows, inputs, outputs } = dims;
    assert_eq!(x.len(), rows * inputs, "linear: input size");
    assert_eq!(weight.len(), inputs * outputs, "linear: weight size");
    assert_eq!(bias.len(), outputs, "linear: bias size");
    let mut y = Vec::with_capacity(rows * outputs);
    for _ in 0..rows {
        y.extend_from_slice(bias);
    }
    product(Threads::Pool, true, (rows, outputs, inputs), (&mut y, outputs), x, (inputs, 1), weight, (outputs, 1));
    y
}

/// `∂x = ∂y Wᵀ`, `[rows, inputs]` row-major, from `grad` (`∂y`)
/// `[rows, outputs]` and `weight` `[inputs, outputs]`.
pub fn input_gradient(dims: Dims, grad: &[f32], weight: &[f32]) -> Vec<f32> {
    let Dims { rows, inputs, outputs } = dims;
    assert_eq!(grad.len(), rows * outputs, "linear: gradient size");
    assert_eq!(weight.len(), inputs * outputs, "linear: weight size");
    // Wᵀ: element (o, i) = weight[i·outputs + o].
    written(rows * inputs, |dst| {
        product_into(Threads::Pool, (rows, inputs, outputs), dst, grad, (outputs, 1), weight, (1, outputs))
    })
}

/// A `len`-long buffer that `fill` writes all of.
fn written(len: usize, fill: impl FnOnce(&mut [MaybeUninit<f32>])) -> Vec<f32> {
    let mut values = Vec::with_capacity(len);
    fill(&mut values.spare_capacity_mut()[..len]);
    // SAFETY: `fill` is `product_into`, which writes every element.
    unsafe { values.set_len(len) };
    values
}

/// `∂W = xᵀ ∂y`, `[inputs, outputs]` row-major, from `x` `[rows, inputs]` and
/// `grad` (`∂y`) `[rows, outputs]`.
pub fn weight_gradient(dims: Dims, x: &[f32], grad: &[f32]) -> Vec<f32> {
    let Dims { rows, inputs, outputs } = dims;
    assert_eq!(x.len(), rows * inputs, "linear: input size");
    assert_eq!(grad.len(), rows * outputs, "linear: gradient size");
    // xᵀ: element (i, r) = x[r·inputs + i].
    let parallel = rows * inputs * outputs >= PARALLEL_WORK;
    if parallel && blas_in_use().is_some() {
        return written(inputs * outputs, |dst| {
            product_into(Threads::Pool, (inputs, outputs, rows), dst, x, (1, inputs), grad, (outputs, 1))
        });
    }
    let mut weight = vec![0.0f32; inputs * outputs];
    if outputs == 0 {
        return weight;
    }
    for_each_chunk(&mut weight, BLOCK * outputs, parallel, |(block, dst)| {
        let first = block * BLOCK;
        let features = dst.len() / outputs;
        // lhs = xᵀ restricted to these features: element (i, r) = x[r·inputs + first + i].
        product(
            Threads::One,
            false,
            (features, outputs, rows),
            (dst, outputs),
            &x[first..],
            (1, inputs),
            grad,
            (outputs, 1),
        );
    });
    weight
}

/// `∂b`, the sum of `grad`'s `[rows, outputs]` rows, added in row order.
pub fn bias_gradient(dims: Dims, grad: &[f32]) -> Vec<f32> {
    let Dims { rows, outputs, .. } = dims;
    assert_eq!(grad.len(), rows * outputs, "linear: gradient size");
    let mut bias = vec![0.0f32; outputs];
    if outputs == 0 {
        return bias;
    }
    // Columns in blocks; each block's sums run over the rows in order.
    let parallel = rows * outputs >= PARALLEL_WORK;
    for_each_chunk(&mut bias, BIAS_BLOCK, parallel, |(block, sums)| {
        let first = block * BIAS_BLOCK;
        for row in grad.chunks_exact(outputs) {
            for (sum, &g) in sums.iter_mut().zip(&row[first..]) {
                *sum += g;
            }
        }
    });
    bias
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::wave;

    /// Against sums in f64, for shapes around the block size.
    #[test]
    fn gradients_are_the_sums_over_rows() {
        for (rows, inputs, outputs) in [(1, 1, 1), (7, 5, 3), (40, 33, 65), (130, 64, 17), (3, 97, 300), (200, 48, 40)]
        {
            let dims = Dims { rows, inputs, outputs };
            let (x, grad) = (wave(rows * inputs, 0.37, 0.1), wave(rows * outputs, 0.53, 0.7));
            let weight = weight_gradient(dims, &x, &grad);
            let bias = bias_gradient(dims, &grad);
            for i in 0..inputs {
                for o in 0..outputs {
                    let exact: f64 = (0..rows).map(|r| x[r * inputs + i] as f64 * grad[r * outputs + o] as f64).sum();
                    let got = weight[i * outputs + o] as f64;
                    assert!((got - exact).abs() <= 1e-5 * (1.0 + rows as f64), "{dims:?} W[{i},{o}]: {got} vs {exact}");
                }
            }
            for o in 0..outputs {
                let exact: f64 = (0..rows).map(|r| grad[r * outputs + o] as f64).sum();
                assert!((bias[o] as f64 - exact).abs() <= 1e-5 * (1.0 + rows as f64), "{dims:?} b[{o}]");
            }
        }
    }

    /// Against sums in f64: the output (bias included) and the input's gradient.
    #[test]
    fn forward_and_input_gradient_are_the_products() {
        for (rows, inputs, outputs) in [(1, 1, 1), (7, 5, 3), (40, 33, 65), (130, 64, 17), (3, 97, 300)] {
            let dims = Dims { rows, inputs, outputs };
            let (x, weight) = (wave(rows * inputs, 0.37, 0.1), wave(inputs * outputs, 0.61, 0.4));
            let (bias, grad) = (wave(outputs, 0.9, 0.2), wave(rows * outputs, 0.53, 0.7));
            let y = forward(dims, &x, &weight, &bias);
            let x_grad = input_gradient(dims, &grad, &weight);
            for r in 0..rows {
                for o in 0..outputs {
                    let exact: f64 = bias[o] as f64
                        + (0..inputs).map(|i| x[r * inputs + i] as f64 * weight[i * outputs + o] as f64).sum::<f64>();
                    let got = y[r * outputs + o] as f64;
                    assert!(
                        (got - exact).abs() <= 1e-5 * (1.0 + inputs as f64),
                        "{dims:?} y[{r},{o}]: {got} vs {exact}"
                    );
                }
                for i in 0..inputs {
                    let exact: f64 =
                        (0..outputs).map(|o| grad[r * outputs + o] as f64 * weight[i * outputs + o] as f64).sum();
                    let got = x_grad[r * inputs + i] as f64;
                    assert!((got - exact).abs() <= 1e-5 * (1.0 + outputs as f64), "{dims:?} ∂x[{r},{i}]");
                }
            }
        }
    }

    /// The blocks are fixed, not per thread: one thread and many give the
    /// same bits.
    #[test]
    fn threads_never_change_a_value() {
        let dims = Dims { rows: 300, inputs: 96, outputs: 80 };
        let (x, grad) = (wave(300 * 96, 0.41, 0.3), wave(300 * 80, 0.29, 0.2));
        let all = || (weight_gradient(dims, &x, &grad), bias_gradient(dims, &grad));
        let many = all();
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(all);
        assert_eq!(many, one);
    }
}
