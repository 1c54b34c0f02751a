//! Self-attention's core as one kernel, forward and backward:
//! `softmax(Q Kᵀ / divisor + bias) V` for every head of every example, the
//! heads read from (and the context written to) the projections' own
//! `[batch, time, heads · d]` layout. burn runs this as a head-split copy of
//! each of Q, K and V, two batched matmuls, the softmax and a head-merge copy,
//! and their backward passes as many again: a dozen tensors allocated and
//! walked per layer. Here an example's heads are five small products each (two
//! forward, three more backward: `gemm` on strided views, no copies) and a
//! softmax pass per row (`softmax`'s, the same arithmetic as that kernel).
//!
//! Inputs `query`, `key`, `value`: `[batch, time, heads · head_size]`,
//! row-major; `bias`: `[batch, time]`, added to every score row of its
//! example (the padding mask: `-1e9` at padded keys). Outputs: the context,
//! `[batch, time, heads · head_size]`, and the probabilities,
//! `[batch, heads, time, time]`.

use rayon::prelude::*;

use std::mem::MaybeUninit;

use crate::chunks::{Unwritten, for_each_chunk_pair, written};
use crate::matmul::{Threads, gemm, product_into_rows};
use crate::softmax::{row_backward_in_place, row_in_place};

/// From this many multiply-adds in a pass (over all heads and examples),
/// the examples split over threads.
const PARALLEL_WORK: usize = 1 << 16;

/// Sizes of one attention pass (queries and keys are the same positions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    pub batch: usize,
    pub time: usize,
    pub heads: usize,
    pub head_size: usize,
}

impl Dims {
    /// Values per position: every head side by side.
    fn width(self) -> usize {
        self.heads * self.head_size
    }

    /// Values of one example's queries (keys, values, context).
    fn example(self) -> usize {
        self.time * self.width()
    }

    /// Probabilities of one example, every head.
    fn example_probs(self) -> usize {
        self.heads * self.time * self.time
    }

    fn parallel(self) -> bool {
        self.batch > 1 && self.batch * self.heads * self.time * self.time * self.head_size >= PARALLEL_WORK
    }

    fn check(self, inputs: &[&[f32]]) {
        for input in inputs {
            assert_eq!(input.len(), self.batch * self.example(), "[batch, time, heads · head_size] values");
        }
    }
}

/// The context and the probabilities (see the module's documentation).
pub fn forward(
    dims: Dims,
    query: &[f32],
    key: &[f32],
    value: &[f32],
    bias: &[f32],
    divisor: f32,
) -> (Vec<f32>, Vec<f32>) {
    dims.check(&[query, key, value]);
    assert_eq!(bias.len(), dims.batch * dims.time, "one bias row per example");
    let Dims { time, head_size: d, .. } = dims;
    let (width, n, np) = (dims.width(), dims.example(), dims.example_probs());
    // Each head's products write its probabilities and its band of the
    // context's columns; the heads together write every value, so neither
    // output is zero-filled first.
    let example = |(b, (context, probs)): (usize, (Unwritten, Unwritten))| {
        let (q, k, v) = (&query[b * n..][..n], &key[b * n..][..n], &value[b * n..][..n]);
        let bias = &bias[b * time..][..time];
        for (h, p) in probs.chunks_mut(time * time).enumerate() {
            let head = h * d;
            // Scores Q_h K_hᵀ: K_h read transposed through its strides.
            product_into_rows(
                Threads::of_size((time, time, d)),
                (time, time, d),
                (p, time),
                &q[head..],
                (width, 1),
                &k[head..],
                (1, width),
            );
            // SAFETY: the product wrote every score.
            let p = unsafe { &mut *(p as *mut [MaybeUninit<f32>] as *mut [f32]) };
            for row in p.chunks_mut(time) {
                row_in_place(row, bias, divisor);
            }
            product_into_rows(
                Threads::of_size((time, d, time)),
                (time, d, time),
                (&mut context[head..], width),
                p,
                (time, 1),
                &v[head..],
                (width, 1),
            );
        }
    };
    let mut context = Vec::new();
    let probs = written(dims.batch * np, |probs| {
        context = written(dims.batch * n, |context| {
            for_each_chunk_pair(context, n.max(1), probs, np.max(1), dims.parallel(), example)
        });
    });
    (context, probs)
}

/// The gradients of the three inputs (the bias is a constant).
#[derive(Debug, Clone, PartialEq)]
pub struct Gradients {
    pub query: Vec<f32>,
    pub key: Vec<f32>,
    pub value: Vec<f32>,
}

/// One example's share of the three inputs' gradients: query and key, value.
type InputGradients<'a> = ((Unwritten<'a>, Unwritten<'a>), Unwritten<'a>);

/// The inputs' gradients from the context's, `grad`, and the probabilities
/// [`forward`] returned.
pub fn backward(
    dims: Dims,
    query: &[f32],
    key: &[f32],
    value: &[f32],
    probs: &[f32],
    grad: &[f32],
    divisor: f32,
) -> Gradients {
    dims.check(&[query, key, value, grad]);
    assert_eq!(probs.len(), dims.batch * dims.example_probs(), "[batch, heads, time, time] probabilities");
    let Dims { time, head_size: d, .. } = dims;
    let (width, n, np) = (dims.width(), dims.example(), dims.example_probs());
    // Each head's products write its band of the three gradients' columns;
    // the heads together write every value (none is zero-filled first).
    let example = |(b, ((dq, dk), dv)): (usize, InputGradients)| {
        let (q, k, v, g) = (&query[b * n..][..n], &key[b * n..][..n], &value[b * n..][..n], &grad[b * n..][..n]);
        // The scores' gradient of one head at a time.
        let mut scores = vec![0.0f32; time * time];
        for (h, p) in probs[b * np..][..np].chunks(time * time).enumerate() {
            let head = h * d;
            // dV_h = P_hᵀ dO_h (P_h read transposed).
            product_into_rows(
                Threads::of_size((time, d, time)),
                (time, d, time),
                (&mut dv[head..], width),
                p,
                (1, time),
                &g[head..],
                (width, 1),
            );
            // dP_h = dO_h V_hᵀ, then the softmax's backward row by row: dS_h.
            gemm(false, (time, time, d), (&mut scores, time), &g[head..], (width, 1), &v[head..], (1, width));
            for (p, s) in p.chunks(time).zip(scores.chunks_mut(time)) {
                row_backward_in_place(p, s, divisor);
            }
            // dQ_h = dS_h K_h, dK_h = dS_hᵀ Q_h.
            product_into_rows(
                Threads::of_size((time, d, time)),
                (time, d, time),
                (&mut dq[head..], width),
                &scores,
                (time, 1),
                &k[head..],
                (width, 1),
            );
            product_into_rows(
                Threads::of_size((time, d, time)),
                (time, d, time),
                (&mut dk[head..], width),
                &scores,
                (1, time),
                &q[head..],
                (width, 1),
            );
        }
    };
    let len = dims.batch * n;
    let (mut dq, mut dk) = (Vec::new(), Vec::new());
    let dv = written(len, |dv| {
        dk = written(len, |dk| {
            dq = written(len, |dq| {
                let chunk = n.max(1);
                if dims.parallel() {
                    dq.par_chunks_mut(n)
                        .zip(dk.par_chunks_mut(n))
                        .zip(dv.par_chunks_mut(n))
                        .enumerate()
                        .for_each(example);
                } else {
                    dq.chunks_mut(chunk)
                        .zip(dk.chunks_mut(chunk))
                        .zip(dv.chunks_mut(chunk))
                        .enumerate()
                        .for_each(example);
                }
            })
        })
    });
    Gradients { query: dq, key: dk, value: dv }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::wave;

    /// Inputs with every example's last `padded` positions masked out.
    fn case(dims: Dims, padded: usize) -> (Vec<f32>, Vec<f32>, Vec<f32>, Vec<f32>) {
        let len = dims.batch * dims.example();
        let bias =
            (0..dims.batch * dims.time).map(|i| if i % dims.time >= dims.time - padded { -1e9 } else { 0.0 }).collect();
        (wave(len, 0.37, 0.1), wave(len, 0.53, 0.7), wave(len, 0.71, 1.3), bias)
    }

    /// The context in f64 from its definition, head by head.
    fn reference(dims: Dims, q: &[f64], k: &[f64], v: &[f64], bias: &[f32], divisor: f64) -> Vec<f64> {
        let Dims { batch, time, heads, head_size: d } = dims;
        let w = heads * d;
        let mut context = vec![0.0; batch * time * w];
        for b in 0..batch {
            for h in 0..heads {
                let at = |t: usize, j: usize| (b * time + t) * w + h * d + j;
                for i in 0..time {
                    let scores: Vec<f64> = (0..time)
                        .map(|t| {
                            let dot: f64 = (0..d).map(|j| q[at(i, j)] * k[at(t, j)]).sum();
                            dot / divisor + bias[b * time + t] as f64
                        })
                        .collect();
                    let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
                    let sum: f64 = scores.iter().map(|s| (s - max).exp()).sum();
                    for t in 0..time {
                        let p = (scores[t] - max).exp() / sum;
                        for j in 0..d {
                            context[at(i, j)] += p * v[at(t, j)];
                        }
                    }
                }
            }
        }
        context
    }

    fn widen(x: &[f32]) -> Vec<f64> {
        x.iter().map(|&x| x as f64).collect()
    }

    #[test]
    fn forward_is_softmax_attention_per_head_and_masks_padding() {
        // Past the threshold for threads, and below it.
        for (dims, padded) in [
            (Dims { batch: 2, time: 5, heads: 3, head_size: 4 }, 2),
            (Dims { batch: 6, time: 19, heads: 4, head_size: 16 }, 3),
        ] {
            let (q, k, v, bias) = case(dims, padded);
            let (context, probs) = forward(dims, &q, &k, &v, &bias, 2.0);
            let exact = reference(dims, &widen(&q), &widen(&k), &widen(&v), &bias, 2.0);
            for (i, (&c, &e)) in context.iter().zip(&exact).enumerate() {
                assert!((c as f64 - e).abs() <= 1e-6, "{dims:?} value {i}: {c} vs {e}");
            }
            for (i, &p) in probs.iter().enumerate() {
                if i % dims.time >= dims.time - padded {
                    assert_eq!(p, 0.0, "a padded key has weight 0");
                }
            }
            for row in probs.chunks(dims.time) {
                assert!((row.iter().sum::<f32>() - 1.0).abs() <= 1e-6, "each row sums to 1");
            }
        }
    }

    /// Each input's gradient against central differences of the f64
    /// reference, for a fixed probe of the context.
    #[test]
    fn backward_matches_finite_differences() {
        let dims = Dims { batch: 2, time: 4, heads: 2, head_size: 3 };
        let (q, k, v, bias) = case(dims, 1);
        let divisor = 3f32.sqrt();
        let probe: Vec<f32> = (0..q.len()).map(|i| ((i as f32) * 0.29).cos()).collect();
        let (_, probs) = forward(dims, &q, &k, &v, &bias, divisor);
        let ours = backward(dims, &q, &k, &v, &probs, &probe, divisor);
        let loss = |q: &[f64], k: &[f64], v: &[f64]| -> f64 {
            let context = reference(dims, q, k, v, &bias, divisor as f64);
            context.iter().zip(&probe).map(|(c, &p)| c * p as f64).sum()
        };
        let (q, k, v) = (widen(&q), widen(&k), widen(&v));
        let step = 1e-6;
        for (name, which, gradient) in [("query", 0, &ours.query), ("key", 1, &ours.key), ("value", 2, &ours.value)] {
            for i in 0..q.len() {
                let moved = |delta: f64| {
                    let mut inputs = [q.clone(), k.clone(), v.clone()];
                    inputs[which][i] += delta;
                    loss(&inputs[0], &inputs[1], &inputs[2])
                };
                let exact = (moved(step) - moved(-step)) / (2.0 * step);
                assert!((gradient[i] as f64 - exact).abs() <= 2e-5, "{name} {i}: {} vs {exact}", gradient[i]);
            }
        }
    }

    #[test]
    fn threads_never_change_a_value() {
        let dims = Dims { batch: 8, time: 23, heads: 4, head_size: 16 };
        assert!(dims.parallel());
        let (q, k, v, bias) = case(dims, 4);
        let (context, probs) = forward(dims, &q, &k, &v, &bias, 4.0);
        let grad: Vec<f32> = (0..q.len()).map(|i| ((i as f32) * 0.13).cos()).collect();
        let whole = backward(dims, &q, &k, &v, &probs, &grad, 4.0);
        // The first example alone (no threads) gets the same numbers.
        let one = Dims { batch: 1, ..dims };
        assert!(!one.parallel());
        let (n, np) = (dims.example(), dims.example_probs());
        let (c1, p1) = forward(one, &q[..n], &k[..n], &v[..n], &bias[..dims.time], 4.0);
        assert_eq!((c1.as_slice(), p1.as_slice()), (&context[..n], &probs[..np]));
        let g1 = backward(one, &q[..n], &k[..n], &v[..n], &p1, &grad[..n], 4.0);
        assert_eq!(g1.query, whole.query[..n]);
        assert_eq!(g1.key, whole.key[..n]);
        assert_eq!(g1.value, whole.value[..n]);
    }
}
