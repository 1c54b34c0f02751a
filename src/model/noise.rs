//! Training-time randomness (dropout masks) drawn from the step's own seeded RNG,
//! for the same reason as [`super::init`]: reproducible under any backend and any
//! number of concurrent steps.

use burn::prelude::*;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

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
        let mask: Vec<f32> = (0..n).map(|_| if self.rng.random::<f64>() < keep { scale } else { 0.0 }).collect();
        let mask = Tensor::<B, D>::from_data(TensorData::new(mask, shape), &x.device());
        x * mask
    }

    /// Inverted dropout with the mask drawn on the device from the backend's RNG
    /// (seeded once per run with `B::seed`). For large activations (a transformer's
    /// attention probabilities) a host mask would cost a host→device copy per layer.
    pub fn dropout_on_device<B: Backend, const D: usize>(&mut self, x: Tensor<B, D>, p: f64) -> Tensor<B, D> {
        if p <= 0.0 {
            return x;
        }
        let keep = 1.0 - p;
        let mask = x.random_like(burn::tensor::Distribution::Bernoulli(keep));
        x * mask.div_scalar(keep)
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
