//! The parameter gradients of a dense layer applied at every position of a
//! batch of sequences, `y = x W + b` with `x` `[rows, inputs]` (every
//! position of every example, one row each) and `W` `[inputs, outputs]`.
//!
//! burn's CPU backend runs a 3-D layer's weight gradient as one
//! `[inputs, outputs]` product per example, summed afterwards: `batch` small
//! products and `batch` full-size temporaries. Here `∂W = xᵀ ∂y` is one
//! product over all rows, split into fixed blocks of input features that the
//! threads share (never by thread count, so the threads never change a
//! value), and `∂b` sums the rows in order.

use crate::chunks::for_each_chunk;
use crate::matmul::{Threads, product};

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

/// `∂W = xᵀ ∂y`, `[inputs, outputs]` row-major, from `x` `[rows, inputs]` and
/// `grad` (`∂y`) `[rows, outputs]`.
pub fn weight_gradient(dims: Dims, x: &[f32], grad: &[f32]) -> Vec<f32> {
    let Dims { rows, inputs, outputs } = dims;
    assert_eq!(x.len(), rows * inputs, "linear: input size");
    assert_eq!(grad.len(), rows * outputs, "linear: gradient size");
    let mut weight = vec![0.0f32; inputs * outputs];
    if outputs == 0 {
        return weight;
    }
    let parallel = rows * inputs * outputs >= PARALLEL_WORK;
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
