//! A dense layer applied at every position of a batch of sequences,
//! `y = x W + b` with `x` `[rows, inputs]` (every position of every example,
//! one row each) and `W` `[inputs, outputs]`: its output, its input's
//! gradient and its parameter gradients, over all rows at once, into buffers
//! that are written, never zero-filled first.
//!
//! burn's CPU backend runs a 3-D layer as one small product per example (the
//! whole weight packed again for a few dozen rows), and its weight gradient
//! as one `[inputs, outputs]` product per example, summed afterwards. Here
//! the output and the input's gradient are one product over all rows (with
//! a `GRID_BLAS` library, [`crate::blas`]: fixed blocks of [`ROWS`] rows that
//! the threads share); `∂W = xᵀ ∂y` is one product over all rows (with
//! `GRID_BLAS`, or where `gemm` would sum differently, split into fixed blocks
//! of input features); `∂b` sums the rows in order.
//!
//! A row's values depend neither on the threads nor on the other rows of its
//! batch, so a method's scores are the same however it batched its
//! evaluations (`internal_batch_size`, `perturbations_per_eval`: in no cache
//! key). `gemm` computes a row the same way wherever it sits and however many
//! rows there are, except on its paths for few rows (a matrix-vector product
//! for one row, smaller depth blocks for at most 64 rows and columns, another
//! kernel for at most 256 values in all): so a product has at least
//! [`min_rows`] rows, padded with zero rows where the batch has fewer. A
//! library's kernels may round by the shape, so there every block has
//! exactly [`ROWS`] rows (the last one overlaps the one before, or is padded).
//! `tests::a_rows_values_do_not_depend_on_its_batch` holds both to it.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::blas::{self, Blas, auto};
use crate::chunks::{for_each_chunk, written};
use crate::matmul::{Threads, product, product_into};

/// Rows per block of the output and the input's gradient with a `GRID_BLAS`
/// library: every block multiplies the whole weight, so a block is tall
/// enough to pay for reading it, and short enough that a batch of a few
/// hundred rows (MiniLM's 16 examples of 26 pieces) gives both threads
/// several blocks and wastes little on its last one.
pub const ROWS: usize = 64;

/// The fewest rows of a `gemm` product with `cols` columns that keep it off
/// `gemm`'s paths for small products (see the module's docs).
pub fn min_rows(cols: usize) -> usize {
    65.max(256 / cols.max(1) + 1)
}

/// Input features per block of the weight gradient: every block multiplies
/// the whole `∂y` (the `gemm` crate packs it once per block), so a block is
/// tall enough to pay for that and narrow enough that two threads share even
/// the quickstart's 64-wide layers.
const BLOCK: usize = 32;

/// Output columns per block of the bias gradient.
const BIAS_BLOCK: usize = 256;

/// Below this many multiply-adds a gradient is computed on one thread.
const PARALLEL_WORK: usize = 1 << 20;

/// The CBLAS library a layer's blocks run in; `None`: the `gemm` crate.
pub(crate) type Library = Option<&'static Blas>;

/// Whether blocks may go to the `GRID_BLAS` library (on by default;
/// `grid bench --gemm` turns it off to time `gemm` beside it).
static BLAS_ENABLED: AtomicBool = AtomicBool::new(true);

/// Lets (`true`) or keeps (`false`) products from the `GRID_BLAS` library.
pub fn set_blas_enabled(enabled: bool) {
    BLAS_ENABLED.store(enabled, Ordering::Relaxed);
}

/// The library the layers' blocks go to, if any (`GRID_BLAS=auto`
/// measured on [`TIMED_LAYERS`]).
pub fn blas_in_use() -> Option<&'static Blas> {
    if !BLAS_ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    blas_library().ok().flatten()
}

/// The `GRID_BLAS` library, or why the one it names does not load
/// (`GRID_BLAS=auto` measured on [`TIMED_LAYERS`]).
pub fn blas_library() -> Result<Option<&'static Blas>, String> {
    blas::active(&TIMED_LAYERS)
}

/// What `GRID_BLAS=auto` chose in this process, measuring it on
/// [`TIMED_LAYERS`] on first use; `None` without `auto`.
pub fn blas_choice() -> Option<&'static auto::Choice> {
    blas::auto_choice(&TIMED_LAYERS)
}

/// The products `GRID_BLAS=auto` times: the dense layers of a MiniLM-size
/// encoder at a training batch (16 examples of 32 pieces), each layer's
/// output, input gradient and weight gradient. The shapes that matter for
/// speed; the tiny models' layers are fast either way.
#[derive(Debug, Clone, Copy)]
pub struct TimedLayers {
    pub rows: usize,
    /// `(inputs, outputs)` of each layer.
    pub layers: &'static [(usize, usize)],
    /// Passes per contender, interleaved; the fastest pass counts.
    pub rounds: usize,
}

pub const TIMED_LAYERS: TimedLayers =
    TimedLayers { rows: 512, layers: &[(384, 1536), (1536, 384), (384, 384)], rounds: 5 };

/// One timed layer's input, weight, bias and output gradient.
struct Operands {
    x: Vec<f32>,
    weight: Vec<f32>,
    bias: Vec<f32>,
    grad: Vec<f32>,
}

impl auto::Workload for TimedLayers {
    fn flops(&self) -> f64 {
        self.layers.iter().map(|&(i, o)| 3.0 * 2.0 * (self.rows * i * o) as f64).sum()
    }

    fn rounds(&self) -> usize {
        self.rounds
    }

    fn passes(&self) -> Box<dyn FnMut(Library) -> f64 + '_> {
        let wave = |n: usize, step: f32| (0..n).map(|i| (i as f32 * step).sin()).collect::<Vec<f32>>();
        let operands: Vec<Operands> = self
            .layers
            .iter()
            .map(|&(i, o)| Operands {
                x: wave(self.rows * i, 0.37),
                weight: wave(i * o, 0.61),
                bias: wave(o, 0.9),
                grad: wave(self.rows * o, 0.53),
            })
            .collect();
        Box::new(move |library| {
            let start = Instant::now();
            for (&(inputs, outputs), Operands { x, weight, bias, grad }) in self.layers.iter().zip(&operands) {
                let dims = Dims { rows: self.rows, inputs, outputs };
                std::hint::black_box(forward_on(library, dims, x, weight, bias));
                std::hint::black_box(input_gradient_on(library, dims, grad, weight));
                std::hint::black_box(weight_gradient_on(library, dims, x, grad));
            }
            start.elapsed().as_secs_f64()
        })
    }
}

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
    forward_on(blas_in_use(), dims, x, weight, bias)
}

/// [`forward`] with the blocks in `library` (`None`: `gemm`).
pub(crate) fn forward_on(library: Library, dims: Dims, x: &[f32], weight: &[f32], bias: &[f32]) -> Vec<f32> {
    let Dims { rows, inputs, outputs } = dims;
    assert_eq!(x.len(), rows * inputs, "linear: input size");
    assert_eq!(weight.len(), inputs * outputs, "linear: weight size");
    assert_eq!(bias.len(), outputs, "linear: bias size");
    by_row_blocks(library, (rows, inputs, outputs), x, |threads, lhs, dst| {
        for row in dst.chunks_exact_mut(outputs) {
            for (value, &b) in row.iter_mut().zip(bias) {
                value.write(b);
            }
        }
        // SAFETY: every value was just written.
        let dst = unsafe { &mut *(dst as *mut [MaybeUninit<f32>] as *mut [f32]) };
        let block_rows = dst.len() / outputs;
        product(threads, true, (block_rows, outputs, inputs), (dst, outputs), lhs, (inputs, 1), weight, (outputs, 1));
    })
}

/// `∂x = ∂y Wᵀ`, `[rows, inputs]` row-major, from `grad` (`∂y`)
/// `[rows, outputs]` and `weight` `[inputs, outputs]`.
pub fn input_gradient(dims: Dims, grad: &[f32], weight: &[f32]) -> Vec<f32> {
    input_gradient_on(blas_in_use(), dims, grad, weight)
}

/// [`input_gradient`] with the blocks in `library` (`None`: `gemm`).
pub(crate) fn input_gradient_on(library: Library, dims: Dims, grad: &[f32], weight: &[f32]) -> Vec<f32> {
    let Dims { rows, inputs, outputs } = dims;
    assert_eq!(grad.len(), rows * outputs, "linear: gradient size");
    assert_eq!(weight.len(), inputs * outputs, "linear: weight size");
    // Wᵀ: element (o, i) = weight[i·outputs + o].
    by_row_blocks(library, (rows, outputs, inputs), grad, |threads, lhs, dst| {
        let block_rows = dst.len() / inputs.max(1);
        product_into(threads, (block_rows, inputs, outputs), dst, lhs, (outputs, 1), weight, (1, outputs))
    })
}

/// `[rows, cols]` from `lhs` `[rows, depth]` by `product(threads, lhs rows,
/// destination rows)`, which writes every value of its destination. With
/// `gemm`: one product over the pool's threads, of at least [`min_rows`]
/// rows (fewer are padded with zero rows, whose values are dropped). With a
/// `GRID_BLAS` library: one call per block of exactly [`ROWS`] rows, the
/// blocks on rayon's threads when there is enough work; a last partial block
/// is computed as the last [`ROWS`] rows of `lhs` (overlapping the block
/// before), or, for fewer rows in all, padded.
fn by_row_blocks(
    library: Library,
    (rows, depth, cols): (usize, usize, usize),
    lhs: &[f32],
    product: impl Fn(Threads, &[f32], &mut [MaybeUninit<f32>]) + Sync + Send,
) -> Vec<f32> {
    // Every product writes all of its destination (`product`'s contract, and
    // the copies of padded and overlapping blocks).
    written(rows * cols, |dst| {
        if cols > 0 && rows > 0 {
            fill_by_row_blocks(library, (rows, depth, cols), lhs, &product, dst);
        }
    })
}

/// [`by_row_blocks`]'s products into `dst` `[rows, cols]`, neither empty.
fn fill_by_row_blocks(
    library: Library,
    (rows, depth, cols): (usize, usize, usize),
    lhs: &[f32],
    product: &(impl Fn(Threads, &[f32], &mut [MaybeUninit<f32>]) + Sync + Send),
    dst: &mut [MaybeUninit<f32>],
) {
    // `count` rows of `lhs` from `first` as a product of `at_least` rows.
    let padded = |threads: Threads, first: usize, count: usize, at_least: usize, dst: &mut [MaybeUninit<f32>]| {
        let mut lhs_rows = vec![0.0f32; at_least * depth];
        lhs_rows[..count * depth].copy_from_slice(&lhs[first * depth..(first + count) * depth]);
        let mut aside = vec![MaybeUninit::new(0.0f32); at_least * cols];
        product(threads, &lhs_rows, &mut aside);
        dst.copy_from_slice(&aside[..count * cols]);
    };
    if library.is_none() {
        let at_least = min_rows(cols);
        if rows >= at_least {
            product(Threads::Pool, lhs, dst);
        } else {
            padded(Threads::Pool, 0, rows, at_least, dst);
        }
    } else {
        let parallel = rows * depth * cols >= PARALLEL_WORK;
        let blocks = |(index, dst): (usize, &mut [MaybeUninit<f32>])| {
            let (first, count) = (index * ROWS, dst.len() / cols);
            if count == ROWS {
                product(Threads::Block(library), &lhs[first * depth..(first + ROWS) * depth], dst);
            } else if rows >= ROWS {
                // The last block: its rows end a full block computed aside.
                let mut aside = vec![MaybeUninit::new(0.0f32); ROWS * cols];
                product(Threads::Block(library), &lhs[(rows - ROWS) * depth..], &mut aside);
                dst.copy_from_slice(&aside[(ROWS - count) * cols..]);
            } else {
                padded(Threads::Block(library), first, count, ROWS, dst);
            }
        };
        for_each_chunk(dst, ROWS * cols, parallel, blocks);
    }
}

/// `∂W = xᵀ ∂y`, `[inputs, outputs]` row-major, from `x` `[rows, inputs]` and
/// `grad` (`∂y`) `[rows, outputs]`.
pub fn weight_gradient(dims: Dims, x: &[f32], grad: &[f32]) -> Vec<f32> {
    weight_gradient_on(blas_in_use(), dims, x, grad)
}

/// [`weight_gradient`] with the blocks in `library` (`None`: `gemm`).
pub(crate) fn weight_gradient_on(library: Library, dims: Dims, x: &[f32], grad: &[f32]) -> Vec<f32> {
    let Dims { rows, inputs, outputs } = dims;
    assert_eq!(x.len(), rows * inputs, "linear: input size");
    assert_eq!(grad.len(), rows * outputs, "linear: gradient size");
    if outputs == 0 {
        return Vec::new();
    }
    if library.is_none() && one_product_takes_the_blocks_path(dims) {
        // `gemm` packs `∂y` once here, where each block packs all of it again
        // (wide layers: 1.5–3× the blocks' rate on an Intel Xeon).
        return written(inputs * outputs, |dst| {
            product_into(Threads::Pool, (inputs, outputs, rows), dst, x, (1, inputs), grad, (outputs, 1))
        });
    }
    weight_gradient_in_blocks(library, dims, x, grad)
}

/// [`weight_gradient_on`] in fixed blocks of [`BLOCK`] input features, each
/// one product (a CBLAS library runs on one thread; the blocks share them).
fn weight_gradient_in_blocks(library: Library, dims: Dims, x: &[f32], grad: &[f32]) -> Vec<f32> {
    let Dims { rows, inputs, outputs } = dims;
    let parallel = rows * inputs * outputs >= PARALLEL_WORK;
    let blocks = |(block, dst): (usize, &mut [MaybeUninit<f32>])| {
        let first = block * BLOCK;
        let features = dst.len() / outputs;
        // lhs = xᵀ restricted to these features: element (i, r) = x[r·inputs + first + i].
        product_into(
            Threads::Block(library),
            (features, outputs, rows),
            dst,
            &x[first..],
            (1, inputs),
            grad,
            (outputs, 1),
        );
    };
    // Each block's product writes all of its features' rows.
    written(inputs * outputs, |dst| for_each_chunk(dst, BLOCK * outputs, parallel, blocks))
}

/// Whether `∂W` as one `gemm` product gives the fixed blocks' values bit for
/// bit. `gemm` sums each value over the depth (the rows) in order, in chunks
/// whose length depends on the depth alone, except on its paths for small
/// products (at most 64 rows and columns: chunks of 512) and for one row (a
/// matrix-vector product); so a block of [`BLOCK`] features and the whole
/// product agree when both take the general path (`outputs` over 64), both
/// the small one (`inputs` at most 64), or the depth fits one chunk, and no
/// block is a single feature.
fn one_product_takes_the_blocks_path(Dims { rows, inputs, outputs }: Dims) -> bool {
    let same_chunks = outputs > 64 || inputs <= 64 || rows <= 512;
    let no_single_feature = inputs % BLOCK != 1 || inputs == 1;
    same_chunks && no_single_feature
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
        let first = BIAS_BLOCK * block;
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

    /// A dense layer's three products on rayon's threads, and the weight
    /// gradient in its fixed blocks beside it:
    /// `cargo test -p grid-kernels --release dense_layer_rates -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement, not a test"]
    fn dense_layer_rates() {
        use std::time::Instant;
        for (rows, inputs, outputs) in [(416, 384, 384), (416, 384, 1536), (416, 1536, 384), (416, 768, 3072)] {
            let dims = Dims { rows, inputs, outputs };
            let (x, w, b) = (wave(rows * inputs, 0.3, 0.1), wave(inputs * outputs, 0.7, 0.2), wave(outputs, 0.1, 0.0));
            let g = wave(rows * outputs, 0.5, 0.3);
            let flops = 2.0 * (rows * inputs * outputs) as f64;
            let reps = (6e9 / flops).ceil() as usize;
            let rate = |f: &dyn Fn() -> Vec<f32>| {
                std::hint::black_box(f());
                let start = Instant::now();
                for _ in 0..reps {
                    std::hint::black_box(f());
                }
                flops * reps as f64 / start.elapsed().as_secs_f64() / 1e9
            };
            let forward = rate(&|| forward_on(None, dims, &x, &w, &b));
            let input = rate(&|| input_gradient_on(None, dims, &g, &w));
            let weight = rate(&|| weight_gradient_on(None, dims, &x, &g));
            let blocks = rate(&|| weight_gradient_in_blocks(None, dims, &x, &g));
            println!(
                "{rows} × {inputs} → {outputs}: forward {forward:6.1}, input gradient {input:6.1}, weight gradient {weight:6.1} GFLOP/s (in fixed blocks {blocks:6.1})"
            );
        }
    }

    /// `GRID_BLAS=auto` times the dense layers' own products: with no
    /// library to try, `gemm` alone, at a rate, and kept.
    #[test]
    fn grid_blas_auto_times_the_layers() {
        let small = TimedLayers { rows: 130, layers: &[(96, 80)], rounds: 1 };
        let choice = auto::choose(&[], None, &small);
        assert!(choice.library.is_none());
        assert_eq!(choice.rates.len(), 1, "{:?}", choice.rates);
        let (name, rate) = &choice.rates[0];
        assert_eq!(name, "gemm");
        assert!(*rate > 0.0 && rate.is_finite(), "{rate}");
    }

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

    /// A row's output and input gradient are the same bits in any batch:
    /// alone, in a batch under one block, in the last block of a larger
    /// one, and in a middle block, for wide layers and the BiLSTM's narrow
    /// ones (to a single output). So with `gemm` and MKL; OpenBLAS rounds a
    /// row by where it sits in a block, so with a `GRID_BLAS` library the
    /// rows agree to float rounding.
    #[test]
    fn a_rows_values_do_not_depend_on_its_batch() {
        let same = |a: &[f32], b: &[f32], what: &str| {
            if blas_in_use().is_none() {
                assert_eq!(a, b, "{what}");
            } else {
                assert_eq!(a.len(), b.len());
                for (x, y) in a.iter().zip(b) {
                    assert!((x - y).abs() <= 1e-5 * (1.0 + x.abs()), "{what}: {x} vs {y}");
                }
            }
        };
        for (inputs, outputs) in [(48, 40), (10, 4), (4, 1), (40, 3), (300, 7), (600, 7), (384, 96), (600, 70)] {
            let rows = 3 * min_rows(outputs).max(min_rows(inputs)).max(ROWS) + 17;
            let (x, weight) = (wave(rows * inputs, 0.37, 0.1), wave(inputs * outputs, 0.61, 0.4));
            let (bias, grad) = (wave(outputs, 0.9, 0.2), wave(rows * outputs, 0.53, 0.7));
            let all = Dims { rows, inputs, outputs };
            let (y, x_grad) = (forward(all, &x, &weight, &bias), input_gradient(all, &grad, &weight));
            for (first, count) in
                [(0, 1), (5, 9), (rows - ROWS - 3, ROWS + 3), (ROWS + 7, ROWS), (rows - 1, 1), (3, rows - 3)]
            {
                let part = Dims { rows: count, inputs, outputs };
                let what = format!("{inputs} → {outputs}, rows {first}+{count}");
                let y_part = forward(part, &x[first * inputs..(first + count) * inputs], &weight, &bias);
                same(&y_part, &y[first * outputs..(first + count) * outputs], &format!("outputs of {what}"));
                let g_part = input_gradient(part, &grad[first * outputs..(first + count) * outputs], &weight);
                same(&g_part, &x_grad[first * inputs..(first + count) * inputs], &format!("input gradients of {what}"));
            }
        }
    }

    /// Where the weight gradient is one product, its values are the fixed
    /// blocks' bit for bit (a cache's trained models stay what they were).
    #[test]
    fn one_weight_gradient_product_keeps_the_blocks_values() {
        let shapes = [
            (300, 96, 80),
            (416, 384, 1536),
            (416, 1536, 384),
            (832, 64, 256),
            (832, 256, 64),
            (700, 48, 40),
            (500, 100, 30),
            (33, 66, 129),
        ];
        let mut compared = 0;
        for (rows, inputs, outputs) in shapes {
            let dims = Dims { rows, inputs, outputs };
            if !one_product_takes_the_blocks_path(dims) {
                continue;
            }
            let (x, grad) = (wave(rows * inputs, 0.41, 0.3), wave(rows * outputs, 0.29, 0.2));
            let blocks = weight_gradient_in_blocks(None, dims, &x, &grad);
            assert_eq!(weight_gradient_on(None, dims, &x, &grad), blocks, "{rows} × {inputs} → {outputs}");
            compared += 1;
        }
        assert_eq!(compared, 7, "(832, 256, 64) alone sums in other chunks");
    }

    /// The blocks are fixed, not per thread: one thread and many give the
    /// same bits.
    #[test]
    fn threads_never_change_a_value() {
        let dims = Dims { rows: 300, inputs: 96, outputs: 80 };
        let (x, grad) = (wave(300 * 96, 0.41, 0.3), wave(300 * 80, 0.29, 0.2));
        let (weight, bias) = (wave(96 * 80, 0.61, 0.4), wave(80, 0.9, 0.2));
        let all = || {
            let outputs = (forward(dims, &x, &weight, &bias), input_gradient(dims, &grad, &weight));
            (outputs, weight_gradient(dims, &x, &grad), bias_gradient(dims, &grad))
        };
        let many = all();
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(all);
        assert_eq!(many, one);
    }
}
