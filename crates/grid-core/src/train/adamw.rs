//! AdamW for the training loop: burn's, except where the backend updates a
//! parameter in place as one block (`kernels::adamw_step`: burn's CPU
//! backend, LibTorch). Both keep the same state (`AdamWState`), so snapshots
//! are read and written alike whichever ran.

use burn::grad_clipping::GradientClippingConfig;
use burn::module::AutodiffModule;
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::{AdamWConfig, AdamWState, AdaptiveMomentumState, LearningRate, SimpleOptimizer};
use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;

use crate::kernels::{self, Moments};

/// PyTorch's and Hugging Face's AdamW defaults (burn's ε is 1e-5).
const BETAS: (f64, f64) = (0.9, 0.999);
const EPSILON: f64 = 1e-8;

#[derive(Clone)]
pub struct AdamW {
    burn: burn::optim::AdamW,
    fused: kernels::AdamW,
}

impl AdamW {
    pub fn new(weight_decay: f64) -> Self {
        let burn = AdamWConfig::new()
            .with_beta_1(BETAS.0 as f32)
            .with_beta_2(BETAS.1 as f32)
            .with_epsilon(EPSILON as f32)
            .with_weight_decay(weight_decay as f32)
            .build();
        let fused = kernels::AdamW { beta_1: BETAS.0, beta_2: BETAS.1, epsilon: EPSILON, weight_decay };
        Self { burn, fused }
    }

    /// The optimizer over a whole module, its gradients clipped first.
    pub fn init<B: AutodiffBackend, M: AutodiffModule<B>>(
        self,
        clipping: Option<GradientClippingConfig>,
    ) -> OptimizerAdaptor<Self, M, B> {
        let optimizer = OptimizerAdaptor::from(self);
        match clipping {
            Some(clipping) => optimizer.with_grad_clipping(clipping.init()),
            None => optimizer,
        }
    }
}

impl<B: Backend> SimpleOptimizer<B> for AdamW {
    type State<const D: usize> = AdamWState<B, D>;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<B, D>,
        grad: Tensor<B, D>,
        state: Option<Self::State<D>>,
    ) -> (Tensor<B, D>, Option<Self::State<D>>) {
        if !kernels::adamw_applies::<B>() {
            return self.burn.step(lr, tensor, grad, state);
        }
        let moments = state.map(|s| {
            let AdaptiveMomentumState { time, moment_1, moment_2, .. } = s.momentum;
            Moments { first: moment_1, second: moment_2, time }
        });
        let (tensor, moments) =
            kernels::adamw_step(self.fused, lr, tensor, grad, moments).expect("adamw_applies said it runs");
        let momentum = AdaptiveMomentumState {
            time: moments.time,
            moment_1: moments.first,
            moment_2: moments.second,
            max_moment_2: None,
        };
        (tensor, Some(AdamWState { momentum }))
    }

    fn to_device<const D: usize>(state: Self::State<D>, device: &B::Device) -> Self::State<D> {
        <burn::optim::AdamW as SimpleOptimizer<B>>::to_device(state, device)
    }
}

#[cfg(test)]
mod cpu_tests {
    use super::*;
    use burn::backend::Flex;

    fn bits<const D: usize>(t: &Tensor<Flex, D>) -> Vec<u32> {
        t.clone().into_data().to_vec::<f32>().unwrap().iter().map(|v| v.to_bits()).collect()
    }

    /// On burn's CPU backend the one-pass update gives burn's own AdamW's
    /// parameters and moments bit for bit (so a training run is the same
    /// either way) over updates with weight decay, a zero learning rate at
    /// warm-up and a parameter large enough to be split over threads, and
    /// never writes into a tensor another handle holds.
    #[test]
    fn the_fused_update_is_burns_bit_for_bit() {
        let device = Default::default();
        for (n, weight_decay) in [(24, 0.01), (40_000, 0.01), (300, 0.0)] {
            let adamw = AdamW::new(weight_decay);
            let start: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
            let mut ours = Tensor::<Flex, 1>::from_floats(start.as_slice(), &device).reshape([n / 4, 4]);
            let mut burns = ours.clone();
            let kept = ours.clone();
            let (mut our_state, mut burn_state) = (None, None);
            for (step, lr) in [0.0, 1e-3, 5e-2, 2e-2].into_iter().enumerate() {
                let grad: Vec<f32> = (0..n).map(|i| ((i * (step + 2)) as f32 * 0.53).cos() * 0.1).collect();
                let grad = Tensor::<Flex, 1>::from_floats(grad.as_slice(), &device).reshape([n / 4, 4]);
                assert!(kernels::adamw_applies::<Flex>());
                (ours, our_state) = adamw.step(lr, ours, grad.clone(), our_state);
                (burns, burn_state) = adamw.burn.step(lr, burns, grad, burn_state);
                assert_eq!(bits(&ours), bits(&burns), "parameters after step {step} (n {n})");
                let (ours_m, burns_m) = (&our_state.as_ref().unwrap().momentum, &burn_state.as_ref().unwrap().momentum);
                assert_eq!(ours_m.time, burns_m.time);
                assert_eq!(bits(&ours_m.moment_1), bits(&burns_m.moment_1), "first moment at step {step}");
                assert_eq!(bits(&ours_m.moment_2), bits(&burns_m.moment_2), "second moment at step {step}");
            }
            let kept: Vec<f32> = kept.into_data().to_vec().unwrap();
            assert_eq!(kept, start, "a tensor still held elsewhere was not updated in place");
        }
    }
}

#[cfg(all(test, feature = "libtorch"))]
mod tests {
    use super::*;
    use crate::backend::libtorch::LibTorch;

    fn values<const D: usize>(t: &Tensor<LibTorch, D>) -> Vec<f32> {
        t.clone().into_data().to_vec::<f32>().unwrap()
    }

    /// torch's in-place update follows burn's AdamW step for step (with
    /// weight decay, bias correction, a zero learning rate at warm-up), and
    /// never writes into a tensor another handle holds. burn rounds 1 − β₂
    /// to f32 (1.3e-5 relative off PyTorch's 0.001), hence the bound on the
    /// second moment; the parameters agree to 1e-6.
    #[test]
    fn the_fused_update_is_burns() {
        let device = burn_tch::LibTorchDevice::Cpu;
        let adamw = AdamW::new(0.01);
        let start: Vec<f32> = (0..24).map(|i| (i as f32 * 0.37).sin()).collect();
        let mut ours = Tensor::<LibTorch, 1>::from_floats(start.as_slice(), &device).reshape([4, 6]);
        let mut burns = ours.clone();
        let kept = ours.clone();
        let (mut our_state, mut burn_state) = (None, None);
        for (step, lr) in [0.0, 1e-3, 5e-2, 2e-2].into_iter().enumerate() {
            let grad: Vec<f32> = (0..24).map(|i| ((i * (step + 2)) as f32 * 0.53).cos() * 0.1).collect();
            let grad = Tensor::<LibTorch, 1>::from_floats(grad.as_slice(), &device).reshape([4, 6]);
            assert!(kernels::adamw_applies::<LibTorch>());
            (ours, our_state) = adamw.step(lr, ours, grad.clone(), our_state);
            (burns, burn_state) = adamw.burn.step(lr, burns, grad, burn_state);
            let (a, b) = (values(&ours), values(&burns));
            for (x, y) in a.iter().zip(&b) {
                assert!((x - y).abs() <= 1e-6 * y.abs().max(1.0), "step {step}: {x} vs {y}");
            }
            let (ours_m, burns_m) = (&our_state.as_ref().unwrap().momentum, &burn_state.as_ref().unwrap().momentum);
            assert_eq!(ours_m.time, burns_m.time);
            for (x, y) in values(&ours_m.moment_2).iter().zip(&values(&burns_m.moment_2)) {
                assert!((x - y).abs() <= 2e-5 * y.abs().max(1e-6), "second moment at step {step}: {x} vs {y}");
            }
        }
        assert_eq!(values(&kept), start, "a tensor still held elsewhere was not updated in place");
        assert_ne!(values(&ours), start);
    }
}
