//! Training-time randomness (dropout masks) drawn from the step's own seeded RNG,
//! for the same reason as [`super::init`]: reproducible under any backend and any
//! number of concurrent steps.

use std::cell::Cell;

use burn::prelude::*;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

thread_local! {
    /// Masks drawn from the backend's RNG so far on this thread (a training
    /// run's forward passes run on its thread): a run snapshots itself
    /// between evaluations only while this has not moved since it seeded
    /// the backend (`crate::train::snapshot::Interrupted`).
    static DEVICE_DRAWS: Cell<u64> = const { Cell::new(0) };
}

/// See [`DEVICE_DRAWS`].
pub fn device_draws() -> u64 {
    DEVICE_DRAWS.get()
}

fn count_device_draw() {
    DEVICE_DRAWS.set(DEVICE_DRAWS.get() + 1);
}

/// Dropout with masks from a host RNG. `None` (inference) is the identity.
pub struct Noise<'a> {
    rng: &'a mut ChaCha8Rng,
}

impl<'a> Noise<'a> {
    pub fn new(rng: &'a mut ChaCha8Rng) -> Self {
        Self { rng }
    }

    /// Inverted dropout: zero each element with probability `p`, scale the rest by `1/(1-p)`.
    pub fn dropout<B: Backend, const D: usize>(&mut self, x: Tensor<B, D>, p: f64) -> Tensor<B, D> {
        if p <= 0.0 {
            return x;
        }
        let shape = x.shape();
        let n = shape.num_elements();
        let keep = 1.0 - p;
        let scale = (1.0 / keep) as f32;
        let mask = Tensor::<B, D>::from_data(TensorData::new(self.mask(n, keep, scale), shape), &x.device());
        x * mask
    }

    /// `n` values, each `scale` with probability `keep`, else 0: element `i`
    /// keeps when the `i`-th uniform draw of the stream (`rng.random::<f64>()`)
    /// is below `keep`. The draws' 64-bit words come in one fill and are made
    /// uniforms here as rand makes them, so the mask and the stream's state
    /// afterwards are those of `n` calls, at a fraction of the cost (the
    /// calls were a tenth of the BiLSTM's training time).
    fn mask(&mut self, n: usize, keep: f64, scale: f32) -> Vec<f32> {
        let mut words = vec![0u64; n];
        self.rng.fill(words.as_mut_slice());
        words.iter().map(|&word| if unit_interval(word) < keep { scale } else { 0.0 }).collect()
    }

    /// Inverted dropout with the mask drawn on the device from the backend's RNG
    /// (seeded once per run with `B::seed`). For large activations (a transformer's
    /// attention probabilities) a host mask would cost a host→device copy per layer.
    pub fn dropout_on_device<B: Backend, const D: usize>(&mut self, x: Tensor<B, D>, p: f64) -> Tensor<B, D> {
        if p <= 0.0 {
            return x;
        }
        let keep = 1.0 - p;
        count_device_draw();
        let mask = x.random_like(burn::tensor::Distribution::Bernoulli(keep));
        x * mask.div_scalar(keep)
    }

    /// [`Self::dropout_on_device`] on the first rows along `dim` of a tensor
    /// `len` long there: the mask is drawn for the whole tensor and cut, so
    /// the backend's random stream advances as for the whole, and `x` gets
    /// the whole's mask on its rows.
    pub fn dropout_on_device_part<B: Backend, const D: usize>(
        &mut self,
        x: Tensor<B, D>,
        len: usize,
        dim: usize,
        p: f64,
    ) -> Tensor<B, D> {
        if p <= 0.0 {
            return x;
        }
        let keep = 1.0 - p;
        let mut whole = x.dims();
        let rows = whole[dim];
        whole[dim] = len;
        count_device_draw();
        let mask = Tensor::<B, D>::random(whole, burn::tensor::Distribution::Bernoulli(keep), &x.device());
        x * mask.narrow(dim, 0, rows).div_scalar(keep)
    }

    /// `n` uniform draws in `(0, 1)`, from the same stream as the masks: a
    /// rationale model's sampled selections. Open at both ends (each draw is
    /// at least half a step of 2⁻⁵³ from either), so logarithms of `u` and
    /// `1 − u` stay finite.
    pub fn uniforms(&mut self, n: usize) -> Vec<f32> {
        let mut words = vec![0u64; n];
        self.rng.fill(words.as_mut_slice());
        words.iter().map(|&word| (unit_interval(word) as f32).clamp(1e-7, 1.0 - 1e-7)).collect()
    }

    /// Word dropout (on ids): replace each real token by `unk_id` with probability `p`.
    pub fn word_dropout(&mut self, ids: &mut [u32], p: f64, unk_id: u32) {
        if p <= 0.0 {
            return;
        }
        for id in ids {
            if self.rng.random::<f64>() < p {
                *id = unk_id;
            }
        }
    }
}

/// rand's `StandardUniform` f64 from one 64-bit word: its top 53 bits, scaled
/// to `[0, 1)`.
fn unit_interval(word: u64) -> f64 {
    (word >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use rand::{Rng, RngCore, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::Noise;

    /// The mask from one fill is the mask of one `random::<f64>()` per
    /// element, and leaves the stream where those calls leave it, whatever
    /// the stream's position in its block (even after a lone 32-bit draw).
    #[test]
    fn the_mask_is_that_of_one_draw_per_element() {
        for (seed, offset_u32s, n) in [(1, 0, 1), (7, 1, 63), (11, 0, 4096), (13, 3, 1000), (17, 15, 17)] {
            let (keep, scale) = (0.7, 1.0 / 0.7f32);
            let mut ours = ChaCha8Rng::seed_from_u64(seed);
            let mut calls = ours.clone();
            for _ in 0..offset_u32s {
                ours.next_u32();
                calls.next_u32();
            }
            let mask = Noise::new(&mut ours).mask(n, keep, scale);
            let expected: Vec<f32> = (0..n).map(|_| if calls.random::<f64>() < keep { scale } else { 0.0 }).collect();
            assert_eq!(mask, expected, "seed {seed}, {n} values");
            assert_eq!(ours.next_u64(), calls.next_u64(), "the stream goes on alike");
            assert!(mask.contains(&0.0) || n < 10, "some are dropped");
        }
    }
}
