//! Parameter initialisation from the crate's own seeded RNG.
//!
//! burn's random initialisers draw from a process-global RNG, which two steps
//! training side by side (`--jobs 2`) would interleave. Drawing on the host from a
//! ChaCha stream owned by the step makes a seed give the same weights on every
//! backend and under any scheduling.

use burn::module::Param;
use burn::prelude::*;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal, Uniform};

/// `U(-bound, bound)` of the given shape.
pub fn uniform<B: Backend, const D: usize>(
    rng: &mut ChaCha8Rng,
    shape: [usize; D],
    bound: f64,
    device: &B::Device,
) -> Param<Tensor<B, D>> {
    let n: usize = shape.iter().product();
    let dist = Uniform::new_inclusive(-bound as f32, bound as f32).expect("finite bound");
    let values: Vec<f32> = (0..n).map(|_| dist.sample(rng)).collect();
    Param::from_tensor(Tensor::from_data(TensorData::new(values, shape), device))
}

/// `N(0, std²)` of the given shape.
pub fn normal<B: Backend, const D: usize>(
    rng: &mut ChaCha8Rng,
    shape: [usize; D],
    std: f64,
    device: &B::Device,
) -> Param<Tensor<B, D>> {
    let n: usize = shape.iter().product();
    let dist = Normal::new(0.0f32, std as f32).expect("finite std");
    let values: Vec<f32> = (0..n).map(|_| dist.sample(rng)).collect();
    Param::from_tensor(Tensor::from_data(TensorData::new(values, shape), device))
}

/// `N(0, std²)` truncated to `[-cutoff·std, cutoff·std]` (PyTorch's
/// `trunc_normal_`: draws outside are drawn again).
pub fn truncated_normal<B: Backend, const D: usize>(
    rng: &mut ChaCha8Rng,
    shape: [usize; D],
    std: f64,
    cutoff: f64,
    device: &B::Device,
) -> Param<Tensor<B, D>> {
    let n: usize = shape.iter().product();
    let dist = Normal::new(0.0f32, std as f32).expect("finite std");
    let bound = (cutoff * std) as f32;
    let values: Vec<f32> = (0..n)
        .map(|_| {
            loop {
                let v = dist.sample(rng);
                if v.abs() <= bound {
                    break v;
                }
            }
        })
        .collect();
    Param::from_tensor(Tensor::from_data(TensorData::new(values, shape), device))
}

/// A `Linear` layer initialised as PyTorch's `nn.Linear` (bounds `1/sqrt(d_input)`).
pub fn linear<B: Backend>(
    rng: &mut ChaCha8Rng,
    d_input: usize,
    d_output: usize,
    bias: bool,
    device: &B::Device,
) -> burn::nn::Linear<B> {
    let bound = 1.0 / (d_input as f64).sqrt();
    burn::nn::Linear {
        weight: uniform(rng, [d_input, d_output], bound, device),
        bias: bias.then(|| uniform(rng, [d_output], bound, device)),
    }
}

/// A fresh seed for a sub-stream, so adding a layer does not shift the others.
pub fn fork(rng: &mut ChaCha8Rng) -> ChaCha8Rng {
    use rand::SeedableRng;
    ChaCha8Rng::seed_from_u64(rng.random())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn truncated_draws_stay_inside_the_cutoff() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let p = truncated_normal::<crate::backend::Cpu, 1>(&mut rng, [10_000], 0.5, 2.0, &Default::default());
        let values: Vec<f32> = p.val().into_data().to_vec().unwrap();
        assert!(values.iter().all(|v| v.abs() <= 1.0));
        let spread = (values.iter().map(|v| v * v).sum::<f32>() / values.len() as f32).sqrt();
        // A normal cut at two deviations keeps 77.4% of its variance.
        assert!((spread - 0.5 * 0.774f32.sqrt()).abs() < 0.01, "{spread}");
    }
}
