//! Attention pooling: `c[b] = Σ_t α[b, t] · h[b, t]`, the weighted sum of a
//! sequence's states `[batch, time, width]` by weights `[batch, time]`,
//! forward and backward. burn's autodiff runs it as a broadcast multiply and
//! a sum over time, and the backward of both through stride-0 views that its
//! CPU backend walks one index at a time.
//!
//! The sums run over time in order, so positions after a sequence's end
//! (weight exactly 0) add exactly 0: a row's values do not depend on how far
//! its batch is padded.

use crate::chunks::{for_each_chunk, for_each_chunk_pair, written};

/// From this many state values, split over threads (in whole examples).
const PARALLEL_VALUES: usize = 1 << 15;

/// The shape of the states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    pub batch: usize,
    pub time: usize,
    pub width: usize,
}

impl Dims {
    fn check(self, states: &[f32], weights: &[f32]) {
        assert_eq!(states.len(), self.batch * self.time * self.width, "pool: states size");
        assert_eq!(weights.len(), self.batch * self.time, "pool: weights size");
    }

    fn parallel(self) -> bool {
        self.batch * self.time * self.width >= PARALLEL_VALUES
    }
}

/// `c` `[batch, width]` from `states` `[batch, time, width]` and `weights`
/// `[batch, time]`.
pub fn forward(dims: Dims, states: &[f32], weights: &[f32]) -> Vec<f32> {
    dims.check(states, weights);
    let Dims { time, width, .. } = dims;
    let mut context = vec![0.0f32; dims.batch * width];
    if width == 0 {
        return context;
    }
    for_each_chunk(&mut context, width, dims.parallel(), |(b, context)| {
        for t in 0..time {
            let alpha = weights[b * time + t];
            let h = &states[(b * time + t) * width..][..width];
            for (c, &h) in context.iter_mut().zip(h) {
                *c += alpha * h;
            }
        }
    });
    context
}

/// The gradients of the states and of the weights.
#[derive(Debug, Clone, PartialEq)]
pub struct Gradients {
    /// `∂h[b, t] = α[b, t] · ∂c[b]`, `[batch, time, width]`.
    pub states: Vec<f32>,
    /// `∂α[b, t] = h[b, t] · ∂c[b]`, `[batch, time]`.
    pub weights: Vec<f32>,
}

/// The backward of [`forward`] for `grad` (`∂c`) `[batch, width]`.
pub fn backward(dims: Dims, states: &[f32], weights: &[f32], grad: &[f32]) -> Gradients {
    dims.check(states, weights);
    let Dims { batch, time, width } = dims;
    assert_eq!(grad.len(), batch * width, "pool: gradient size");
    let mut d_weights = vec![0.0f32; batch * time];
    if width == 0 || time == 0 {
        // No state values (and `chunks_mut(0)` would panic).
        return Gradients { states: Vec::new(), weights: d_weights };
    }
    let parallel = dims.parallel();
    // Every state's gradient is written: not zero-filled first.
    let d_states = written(batch * time * width, |d_states| {
        for_each_chunk_pair(d_states, time * width, &mut d_weights, time, parallel, |(b, (d_states, d_weights))| {
            let g = &grad[b * width..][..width];
            for (t, (d_h, d_alpha)) in d_states.chunks_exact_mut(width).zip(d_weights.iter_mut()).enumerate() {
                let alpha = weights[b * time + t];
                let h = &states[(b * time + t) * width..][..width];
                let mut dot = 0.0f32;
                for ((d_h, &g), &h) in d_h.iter_mut().zip(g).zip(h) {
                    d_h.write(alpha * g);
                    dot += h * g;
                }
                *d_alpha = dot;
            }
        })
    });
    Gradients { states: d_states, weights: d_weights }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::wave;

    /// Against f64 sums, and the gradients against finite differences of
    /// `⟨∂c, c⟩`.
    #[test]
    fn pooling_and_its_gradients() {
        let dims = Dims { batch: 3, time: 5, width: 4 };
        let (states, weights, grad) = (wave(60, 0.37, 0.1), wave(15, 0.53, 0.7), wave(12, 0.29, 0.3));
        let context = forward(dims, &states, &weights);
        for b in 0..3 {
            for w in 0..4 {
                let exact: f64 = (0..5).map(|t| weights[b * 5 + t] as f64 * states[(b * 5 + t) * 4 + w] as f64).sum();
                assert!((context[b * 4 + w] as f64 - exact).abs() < 1e-6);
            }
        }
        let objective = |states: &[f32], weights: &[f32]| -> f64 {
            forward(dims, states, weights).iter().zip(&grad).map(|(&c, &g)| c as f64 * g as f64).sum()
        };
        let gradients = backward(dims, &states, &weights, &grad);
        // The central difference of `f` in `values[i]`.
        let central = |values: &[f32], i: usize, f: &dyn Fn(&[f32]) -> f64| {
            let step = 1e-2f32;
            let (mut up, mut down) = (values.to_vec(), values.to_vec());
            up[i] += step;
            down[i] -= step;
            (f(&up) - f(&down)) / (2.0 * step as f64)
        };
        for i in 0..states.len() {
            let numeric = central(&states, i, &|s| objective(s, &weights));
            assert!((gradients.states[i] as f64 - numeric).abs() < 1e-4, "∂h[{i}]");
        }
        for i in 0..weights.len() {
            let numeric = central(&weights, i, &|w| objective(&states, w));
            assert!((gradients.weights[i] as f64 - numeric).abs() < 1e-4, "∂α[{i}]");
        }
    }

    /// A sequence padded further (weights 0 after its end) pools to the same
    /// bits, and the threads never change a value.
    #[test]
    fn padding_and_threads_never_change_a_value() {
        let (time, width) = (6, 40);
        let states = wave(time * width, 0.41, 0.2);
        let mut weights = wave(time, 0.7, 0.5);
        weights[4..].fill(0.0);
        let short = forward(Dims { batch: 1, time: 4, width }, &states[..4 * width], &weights[..4]);
        assert_eq!(forward(Dims { batch: 1, time, width }, &states, &weights), short);
        let dims = Dims { batch: 200, time, width };
        let (states, weights, grad) =
            (wave(200 * time * width, 0.13, 0.1), wave(200 * time, 0.3, 0.2), wave(200 * width, 0.7, 0.9));
        let run = || (forward(dims, &states, &weights), backward(dims, &states, &weights, &grad));
        let many = run();
        let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap().install(run);
        assert_eq!(many, one);
    }
}
