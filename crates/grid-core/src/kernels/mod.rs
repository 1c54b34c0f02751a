//! Fused CPU kernels for the operations burn's CPU backend runs as many small
//! ones, or one scalar libm call per element. Each kernel is a host function
//! on slices (the `grid-kernels` crate, `crates/grid-kernels`) plus its glue
//! to burn (`flex.rs`): for burn's CPU backend (`Flex`) and its autodiff
//! wrapper, with the backward pass written out; every other backend (CUDA,
//! LibTorch) keeps the model's own burn operations, which are the reference
//! the kernels are tested against.
//!
//! - [`lstm_recurrence`]: the LSTM over whole sequences, either direction
//!   (`grid_kernels::lstm`);
//! - [`tanh`], [`gelu`]: element-wise activations in SIMD lanes
//!   (`grid_kernels::activation`), reached through `model::rules::Rules`
//!   (and [`gelu_derivative`], DeepLift's midpoint slope); [`rescaled_tanh`]
//!   and [`rescaled_gelu`], their Rescale rule in one pass
//!   (`grid_kernels::rescale`);
//! - [`swap_middle`]: attention's head split and merge as one contiguous copy
//!   (`grid_kernels::layout`);
//! - [`attention_softmax`]: attention's scaling, padding mask and softmax in
//!   one pass per row (`grid_kernels::softmax`), reached through `Rules`;
//! - [`attention`]: self-attention's `softmax(q kᵀ / √d + mask) v` for every
//!   head, straight from the projections' layout (`grid_kernels::attention`),
//!   reached through `Rules`;
//! - [`dense`]: a dense layer at every position, each product (output,
//!   input gradient, weight gradient) one over all positions, into buffers
//!   never zero-filled, on `gemm` or a `GRID_BLAS` library
//!   (`grid_kernels::linear`);
//! - [`weighted_sum`]: attention pooling `Σ_t α_t h_t` (`grid_kernels::pool`),
//!   reached through `Rules` (DeepLift's product rule: the backward from the
//!   pair's midpoints);
//! - [`layer_norm`]: layer normalisation with its affine map, one pass per
//!   row forward and backward (`grid_kernels::norm`), reached through `Rules`;
//! - [`rescaled_matmul`]: DeepLift's product rule for a matrix product of
//!   two input-dependent factors (attention's), reached through `Rules`;
//! - [`rescaled_softmax`], [`rescaled_attention_softmax`]: DeepLift's
//!   softmax rule (`grid_kernels::softmax`), the latter with attention's
//!   scaling and mask, reached through `Rules`;
//! - [`conv2d`]: a ResNet's convolutions, the output and both gradients as
//!   GEMMs over patch matrices (`grid_kernels::conv`, `convolution.rs`);
//! - [`batch_norm`]: a ResNet's batch norms with the skip connection's sum
//!   and the ReLU after them, one pass forward and one backward
//!   (`grid_kernels::batch_norm`, `normalisation.rs`);
//! - [`max_pool2d`]: the ImageNet stem's max pooling, its argmaxes kept for
//!   the backward pass (`grid_kernels::max_pool`, `pooling.rs`);
//! - [`adamw_step`]: AdamW's update of a parameter and its moments in one
//!   pass, in place, bit for bit burn's own (`grid_kernels::adamw`,
//!   `adamw.rs`).
//!
//! Under DeepLift's rules (`Rules::Rescale`, the batch stacking inputs over
//! their references) the LSTM recurrence and layer norm give the rule's
//! multipliers from their backward passes, and [`gelu_derivative`] the
//! midpoint slopes.
//!
//! A new element-wise kernel is a function pair in `activation.rs` and one
//! `Elementwise` entry in `flex.rs`.
//!
//! On LibTorch (`libtorch.rs`, feature `libtorch`) the blocks are torch's own
//! operations recorded under torch's autograd, each block one node of burn's
//! graph whose backward is torch's:
//!
//! - [`encoder_layer`]: a whole post-LayerNorm transformer layer (BERT's):
//!   projections, `scaled_dot_product_attention` (flash / memory-efficient
//!   kernels on CUDA), dropout, residuals, layer norms and the feed-forward
//!   block;
//! - [`lstm_block`]: an LSTM direction (torch's `lstm`: cuDNN's on CUDA), the
//!   backward direction over each row's real tokens reversed;
//! - [`adamw_step`]: AdamW's update of a parameter and its moments, in place.
//!
//! `GRID_KERNELS=burn` turns the kernels off (to compare, or to rule them out).

mod adamw;
mod convolution;
mod encoder;
mod flex;
#[cfg(feature = "libtorch")]
mod libtorch;
mod normalisation;
mod pooling;
mod recurrent;

pub use grid_kernels::lstm;

pub use flex::{
    applies, attention, attention_softmax, backend_applies, dense, gelu, gelu_derivative, layer_norm, lstm_recurrence,
    rescaled_attention_softmax, rescaled_gelu, rescaled_matmul, rescaled_softmax, rescaled_tanh, swap_middle, tanh,
    weighted_sum,
};

pub use adamw::{AdamW, Moments, adamw_applies, adamw_step};
pub use convolution::conv2d;
pub use encoder::{Activation, Dense, EncoderLayer, Norm, encoder_layer, encoder_layer_applies};
pub use normalisation::{BatchNormInputs, Normalised, batch_norm};
pub use pooling::max_pool2d;
pub use recurrent::{LstmWeights, lstm_block, lstm_block_applies};

thread_local! {
    /// `--precision bf16-mixed` on this thread (the step's): see [`with_bf16_products`].
    static BF16_PRODUCTS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with the fused LibTorch blocks computing their matrix products,
/// attention and recurrence in bf16 on this thread (`--precision
/// bf16-mixed`, as PyTorch's autocast): their weights stay f32 (cast per
/// use, so gradients and the optimizer's state are f32), layer norms and
/// residual sums run in f32. A step's model calls all run on its thread.
pub fn with_bf16_products<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            BF16_PRODUCTS.set(self.0);
        }
    }
    let _restore = Restore(BF16_PRODUCTS.replace(true));
    f()
}

/// Whether LibTorch's blocks (`libtorch.rs`) run on tensors like `x`.
fn torch_blocks_apply<B: burn::prelude::Backend, const D: usize>(x: &burn::prelude::Tensor<B, D>) -> bool {
    #[cfg(feature = "libtorch")]
    {
        libtorch::applies(x)
    }
    #[cfg(not(feature = "libtorch"))]
    {
        let _ = x;
        false
    }
}

/// Whether [`with_bf16_products`] is in force on this thread.
#[cfg_attr(not(feature = "libtorch"), allow(dead_code))]
fn bf16_products() -> bool {
    BF16_PRODUCTS.get()
}

/// Whether fused kernels may be used (`GRID_KERNELS` is not `burn`).
pub fn enabled() -> bool {
    static ENABLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var("GRID_KERNELS").map_or(true, |v| v.trim() != "burn"))
}

/// `value` as a `U` when `T` is `U`; else `value` back. How a generic caller
/// reaches the kernels of one backend.
fn cast<T: 'static, U: 'static>(value: T) -> Result<U, T> {
    let mut slot = Some(value);
    match (&mut slot as &mut dyn std::any::Any).downcast_mut::<Option<U>>() {
        Some(cast) => Ok(cast.take().expect("just put there")),
        None => Err(slot.expect("not taken")),
    }
}

/// How the nonlinear operations of a forward pass are differentiated.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Rules {
    /// The ordinary forward pass.
    #[default]
    Plain,
    /// DeepLift's Rescale rule; the batch stacks the inputs over their references
    /// (so its size is even). Values are the ordinary ones.
    Rescale,
}

#[cfg(test)]
mod tests {
    use burn::backend::{Autodiff, Flex};
    use burn::prelude::*;

    use crate::model::rules::Rules;

    type A = Autodiff<Flex>;

    /// The head split's copy is burn's `swap_dims(1, 2)`, values and
    /// gradients, exactly (it moves values, it computes nothing).
    #[test]
    fn swap_middle_is_burns_swap_dims_with_its_gradient() {
        let device = Default::default();
        let shape = [2, 5, 3, 4];
        let values: Vec<f32> = (0..120).map(|v| (v as f32 * 0.37).sin()).collect();
        let probe: Vec<f32> = (0..120).map(|v| (v as f32 * 0.11).cos()).collect();
        let run = |kernel: bool| {
            let x = Tensor::<A, 1>::from_floats(values.as_slice(), &device).reshape(shape).require_grad();
            let y = if kernel {
                super::swap_middle(x.clone()).expect("a kernel on Flex")
            } else {
                x.clone().swap_dims(1, 2)
            };
            let probe = Tensor::<A, 1>::from_floats(probe.as_slice(), &device).reshape([2, 3, 5, 4]);
            let grads = (y.clone() * probe).sum().backward();
            let grad = x.grad(&grads).unwrap();
            (y.inner().into_data().to_vec::<f32>().unwrap(), grad.into_data().to_vec::<f32>().unwrap())
        };
        assert_eq!(run(true), run(false));
        let plain = Tensor::<Flex, 1>::from_floats(values.as_slice(), &device).reshape(shape);
        assert_eq!(
            super::swap_middle(plain.clone()).unwrap().into_data().to_vec::<f32>().unwrap(),
            plain.swap_dims(1, 2).into_data().to_vec::<f32>().unwrap()
        );
    }

    /// The fused attention softmax gives burn's `softmax(scores / d + bias)`
    /// and its gradient, to float rounding (its `exp` is SIMD, burn's libm's),
    /// on the autodiff backend and the plain one; padded keys get weight 0.
    #[test]
    fn attention_softmax_is_burns_with_its_gradient() {
        let device = Default::default();
        let (shape, keys) = ([2, 3, 5, 7], 7);
        let scores: Vec<f32> = (0..210).map(|v| (v as f32 * 0.61).sin() * 6.0).collect();
        let probe: Vec<f32> = (0..210).map(|v| (v as f32 * 0.23).cos()).collect();
        // Row 0 has two padded keys, row 1 none.
        let bias: Vec<f32> = (0..2 * keys).map(|i| if i == 5 || i == 6 { -1e9 } else { 0.0 }).collect();
        let run = |kernel: bool| {
            let x = Tensor::<A, 1>::from_floats(scores.as_slice(), &device).reshape(shape).require_grad();
            let bias = Tensor::<A, 1>::from_floats(bias.as_slice(), &device).reshape([2, 1, 1, keys]);
            let p = if kernel {
                super::attention_softmax(x.clone(), bias, 8f32.sqrt()).expect("a kernel on Flex")
            } else {
                burn::tensor::activation::softmax(x.clone().div_scalar(8f64.sqrt()) + bias, 3)
            };
            let probe = Tensor::<A, 1>::from_floats(probe.as_slice(), &device).reshape(shape);
            let grads = (p.clone() * probe).sum().backward();
            let grad = x.grad(&grads).unwrap();
            (p.inner().into_data().to_vec::<f32>().unwrap(), grad.into_data().to_vec::<f32>().unwrap())
        };
        let ((p, g), (p_burn, g_burn)) = (run(true), run(false));
        let worst = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(worst(&p, &p_burn) <= 2e-7, "probabilities differ by {}", worst(&p, &p_burn));
        assert!(worst(&g, &g_burn) <= 2e-7, "gradients differ by {}", worst(&g, &g_burn));
        for (i, &p) in p.iter().enumerate() {
            if i < 105 && i % keys >= 5 {
                assert_eq!(p, 0.0, "a padded key has weight 0");
            }
        }
        let plain = Tensor::<Flex, 1>::from_floats(scores.as_slice(), &device).reshape(shape);
        let plain_bias = Tensor::<Flex, 1>::from_floats(bias.as_slice(), &device).reshape([2, 1, 1, keys]);
        let inference = super::attention_softmax(plain, plain_bias, 8f32.sqrt()).unwrap();
        assert_eq!(inference.into_data().to_vec::<f32>().unwrap(), p, "the same kernel with or without autodiff");
    }

    /// The fused layer norm gives burn's `LayerNorm` and the gradients of the
    /// input, γ and β, to float rounding; the same values without autodiff.
    #[test]
    fn layer_norm_is_burns_with_its_gradients() {
        use burn::nn::LayerNormConfig;
        let device = Default::default();
        let shape = [3, 4, 6];
        let values: Vec<f32> = (0..72).map(|v| (v as f32 * 0.53).sin() * 4.0 + (v / 6) as f32).collect();
        let probe: Vec<f32> = (0..72).map(|v| (v as f32 * 0.29).cos()).collect();
        let mut norm = LayerNormConfig::new(6).with_epsilon(1e-12).init::<A>(&device);
        let gamma = Tensor::<A, 1>::from_floats([0.5f32, 1.0, 1.5, 2.0, -1.0, 0.25], &device);
        let beta = Tensor::<A, 1>::from_floats([0.1f32, -0.2, 0.3, 0.0, 0.5, -0.5], &device);
        norm.gamma = burn::module::Param::from_tensor(gamma);
        norm.beta = Some(burn::module::Param::from_tensor(beta));
        let run = |kernel: bool| {
            let x = Tensor::<A, 1>::from_floats(values.as_slice(), &device).reshape(shape).require_grad();
            let (gamma, beta) = (norm.gamma.val(), norm.beta.as_ref().unwrap().val());
            let y = if kernel {
                super::layer_norm(x.clone(), gamma.clone(), beta.clone(), 1e-12, Rules::Plain)
                    .expect("a kernel on Flex")
            } else {
                norm.forward(x.clone())
            };
            let probe = Tensor::<A, 1>::from_floats(probe.as_slice(), &device).reshape(shape);
            let grads = (y.clone() * probe).sum().backward();
            let flat = |t: Tensor<Flex, 1>| t.into_data().to_vec::<f32>().unwrap();
            let dx = x.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap();
            let (dg, db) = (flat(gamma.grad(&grads).unwrap()), flat(beta.grad(&grads).unwrap()));
            (y.inner().into_data().to_vec::<f32>().unwrap(), dx, dg, db)
        };
        let (ours, burns) = (run(true), run(false));
        let worst = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(worst(&ours.0, &burns.0) <= 2e-6, "outputs differ by {}", worst(&ours.0, &burns.0));
        assert!(worst(&ours.1, &burns.1) <= 2e-6, "input gradients differ by {}", worst(&ours.1, &burns.1));
        assert!(worst(&ours.2, &burns.2) <= 2e-6, "γ gradients differ by {}", worst(&ours.2, &burns.2));
        assert!(worst(&ours.3, &burns.3) <= 2e-6, "β gradients differ by {}", worst(&ours.3, &burns.3));
        let plain = Tensor::<Flex, 1>::from_floats(values.as_slice(), &device).reshape(shape);
        let (gamma, beta) = (norm.gamma.val().inner(), norm.beta.as_ref().unwrap().val().inner());
        let inference = super::layer_norm(plain, gamma, beta, 1e-12, Rules::Plain).unwrap();
        assert_eq!(inference.into_data().to_vec::<f32>().unwrap(), ours.0, "the same kernel with or without autodiff");
    }

    /// The fused attention gives burn's head split, `softmax(q kᵀ / √d + bias)`,
    /// product with `v` and head merge, and the gradients of all three
    /// inputs, to float rounding; padded keys get weight 0; the same values
    /// without autodiff.
    #[test]
    fn attention_is_burns_with_its_gradients() {
        let device = Default::default();
        let (batch, time, heads, d) = (3, 6, 2, 4);
        let width = heads * d;
        let len = batch * time * width;
        let wave =
            |scale: f32, phase: f32| (0..len).map(|i| ((i as f32) * scale + phase).sin() * 2.0).collect::<Vec<_>>();
        let inputs = [wave(0.37, 0.1), wave(0.53, 0.7), wave(0.71, 1.3)];
        let probe = wave(0.19, 0.4);
        // Example 1 has its last two positions padded.
        let bias: Vec<f32> =
            (0..batch * time).map(|i| if i / time == 1 && i % time >= 4 { -1e9 } else { 0.0 }).collect();
        let divisor = (d as f32).sqrt();
        let run = |kernel: bool| {
            let [q, k, v] = inputs.clone().map(|x| {
                Tensor::<A, 1>::from_floats(x.as_slice(), &device).reshape([batch, time, width]).require_grad()
            });
            let bias = Tensor::<A, 1>::from_floats(bias.as_slice(), &device).reshape([batch, 1, 1, time]);
            let (context, probs) = if kernel {
                super::attention(q.clone(), k.clone(), v.clone(), bias, heads, divisor).expect("a kernel on Flex")
            } else {
                let split = |t: Tensor<A, 3>| t.reshape([batch, time, heads, d]).swap_dims(1, 2);
                let scores = split(q.clone()).matmul(split(k.clone()).transpose());
                let probs = burn::tensor::activation::softmax(scores.div_scalar(divisor as f64) + bias, 3);
                let context = probs.clone().matmul(split(v.clone())).swap_dims(1, 2).reshape([batch, time, width]);
                (context, probs)
            };
            let probe = Tensor::<A, 1>::from_floats(probe.as_slice(), &device).reshape([batch, time, width]);
            let grads = (context.clone() * probe).sum().backward();
            let flat = |t: Tensor<Flex, 3>| t.into_data().to_vec::<f32>().unwrap();
            let gradients = [&q, &k, &v].map(|x| flat(x.grad(&grads).unwrap()));
            let values = |t: Tensor<Flex, 4>| t.into_data().to_vec::<f32>().unwrap();
            (flat(context.inner()), values(probs.inner()), gradients)
        };
        let (ours, burns) = (run(true), run(false));
        let worst = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(worst(&ours.0, &burns.0) <= 1e-6, "contexts differ by {}", worst(&ours.0, &burns.0));
        assert!(worst(&ours.1, &burns.1) <= 1e-6, "probabilities differ by {}", worst(&ours.1, &burns.1));
        for (name, (a, b)) in ["query", "key", "value"].iter().zip(ours.2.iter().zip(&burns.2)) {
            assert!(worst(a, b) <= 1e-5, "{name} gradients differ by {}", worst(a, b));
        }
        for (i, &p) in ours.1.iter().enumerate() {
            if i / (heads * time * time) == 1 && i % time >= 4 {
                assert_eq!(p, 0.0, "a padded key has weight 0");
            }
        }
        let [q, k, v] =
            inputs.map(|x| Tensor::<Flex, 1>::from_floats(x.as_slice(), &device).reshape([batch, time, width]));
        let bias = Tensor::<Flex, 1>::from_floats(bias.as_slice(), &device).reshape([batch, 1, 1, time]);
        let (context, probs) = super::attention(q, k, v, bias, heads, divisor).unwrap();
        assert_eq!(context.into_data().to_vec::<f32>().unwrap(), ours.0, "the same kernel with or without autodiff");
        assert_eq!(probs.into_data().to_vec::<f32>().unwrap(), ours.1);
    }

    /// The fused attention pooling gives burn's broadcast multiply and sum
    /// over time, and the gradients of the states and the weights, to float
    /// rounding; the same values without autodiff.
    #[test]
    fn weighted_sum_is_burns_with_its_gradients() {
        let device = Default::default();
        let (batch, time, width) = (3, 5, 6);
        let states: Vec<f32> = (0..batch * time * width).map(|v| (v as f32 * 0.37).sin()).collect();
        let weights: Vec<f32> = (0..batch * time).map(|v| (v as f32 * 0.53).cos()).collect();
        let probe: Vec<f32> = (0..batch * width).map(|v| (v as f32 * 0.29).sin()).collect();
        let run = |kernel: bool| {
            let h =
                Tensor::<A, 1>::from_floats(states.as_slice(), &device).reshape([batch, time, width]).require_grad();
            let a = Tensor::<A, 1>::from_floats(weights.as_slice(), &device).reshape([batch, time]).require_grad();
            let c = if kernel {
                super::weighted_sum(h.clone(), a.clone(), Rules::Plain).expect("a kernel on Flex")
            } else {
                (h.clone() * a.clone().reshape([batch, time, 1])).sum_dim(1).reshape([batch, width])
            };
            let probe = Tensor::<A, 1>::from_floats(probe.as_slice(), &device).reshape([batch, width]);
            let grads = (c.clone() * probe).sum().backward();
            let dh = h.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap();
            let da = a.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap();
            (c.inner().into_data().to_vec::<f32>().unwrap(), dh, da)
        };
        let (ours, burns) = (run(true), run(false));
        let worst = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(worst(&ours.0, &burns.0) <= 1e-6, "contexts differ by {}", worst(&ours.0, &burns.0));
        assert!(worst(&ours.1, &burns.1) <= 1e-6, "state gradients differ by {}", worst(&ours.1, &burns.1));
        assert!(worst(&ours.2, &burns.2) <= 1e-6, "weight gradients differ by {}", worst(&ours.2, &burns.2));
        let h = Tensor::<Flex, 1>::from_floats(states.as_slice(), &device).reshape([batch, time, width]);
        let a = Tensor::<Flex, 1>::from_floats(weights.as_slice(), &device).reshape([batch, time]);
        let inference = super::weighted_sum(h, a, Rules::Plain).unwrap();
        assert_eq!(inference.into_data().to_vec::<f32>().unwrap(), ours.0, "the same kernel with or without autodiff");
    }

    /// GELU's derivative as a constant: burn's `Φ(x) + x φ(x)` to float
    /// rounding, untracked on the autodiff backend, the same values on both.
    #[test]
    fn gelu_derivative_is_burns_formula() {
        let device = Default::default();
        let xs: Vec<f32> = (0..300).map(|v| (v as f32 - 150.0) * 0.05).collect();
        let x = Tensor::<A, 1>::from_floats(xs.as_slice(), &device);
        let ours = super::gelu_derivative(x.clone()).expect("a kernel on Flex");
        assert!(!ours.is_require_grad());
        let cdf = (x.clone().mul_scalar(std::f64::consts::FRAC_1_SQRT_2).erf() + 1.0).mul_scalar(0.5);
        let pdf = x.clone().powi_scalar(2).mul_scalar(-0.5).exp().mul_scalar(0.398_942_280_401_432_7);
        let burns: Vec<f32> = (cdf + x * pdf).into_data().to_vec().unwrap();
        let ours: Vec<f32> = ours.into_data().to_vec().unwrap();
        for ((a, b), x) in ours.iter().zip(&burns).zip(&xs) {
            assert!((a - b).abs() <= 1e-6 * x.abs().max(1.0), "at {x}: {a} vs {b}");
        }
        let plain = super::gelu_derivative(Tensor::<Flex, 1>::from_floats(xs.as_slice(), &device)).unwrap();
        assert_eq!(plain.into_data().to_vec::<f32>().unwrap(), ours);
    }

    /// Under DeepLift's rules the fused layer norm gives the values and the
    /// multipliers of `Rules::layer_norm_ops` (burn's operations), to float
    /// rounding; the last pair of rows is its own reference (the midpoint
    /// slope).
    #[test]
    fn layer_norm_gives_deeplifts_multipliers() {
        use burn::nn::LayerNormConfig;
        let device = Default::default();
        let (pairs, time, len) = (3, 4, 6);
        let shape = [2 * pairs, time, len];
        let mut values: Vec<f32> =
            (0..2 * pairs * time * len).map(|v| (v as f32 * 0.53).sin() * 3.0 + (v / len) as f32 * 0.2).collect();
        let half = pairs * time * len;
        let last: Vec<f32> = values[half - time * len..half].to_vec();
        values[2 * half - time * len..].copy_from_slice(&last);
        let probe: Vec<f32> = (0..2 * half).map(|v| (v as f32 * 0.29).cos()).collect();
        let mut norm = LayerNormConfig::new(len).with_epsilon(1e-12).init::<A>(&device);
        norm.gamma =
            burn::module::Param::from_tensor(Tensor::from_floats([0.5f32, 1.0, 1.5, 2.0, -1.0, 0.25], &device));
        norm.beta =
            Some(burn::module::Param::from_tensor(Tensor::from_floats([0.1f32, -0.2, 0.3, 0.0, 0.5, -0.5], &device)));
        let norm = norm.no_grad();
        let run = |kernel: bool| {
            let x = Tensor::<A, 1>::from_floats(values.as_slice(), &device).reshape(shape).require_grad();
            let y = if kernel {
                Rules::Rescale.layer_norm(&norm, x.clone(), 1e-12)
            } else {
                Rules::Rescale.layer_norm_ops(&norm, x.clone(), 1e-12)
            };
            let probe = Tensor::<A, 1>::from_floats(probe.as_slice(), &device).reshape(shape);
            let grads = (y.clone() * probe).sum().backward();
            let dx = x.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap();
            (y.inner().into_data().to_vec::<f32>().unwrap(), dx)
        };
        let (ours, ops) = (run(true), run(false));
        let worst = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
        assert!(worst(&ours.0, &ops.0) <= 2e-6, "outputs differ by {}", worst(&ours.0, &ops.0));
        assert!(worst(&ours.1, &ops.1) <= 1e-5, "multipliers differ by {}", worst(&ours.1, &ops.1));
        let plain = {
            let x = Tensor::<A, 1>::from_floats(values.as_slice(), &device).reshape(shape).require_grad();
            let probe = Tensor::<A, 1>::from_floats(probe.as_slice(), &device).reshape(shape);
            let grads = (Rules::Plain.layer_norm(&norm, x.clone(), 1e-12) * probe).sum().backward();
            x.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap()
        };
        assert!(worst(&ours.1, &plain) > 1e-3, "multipliers, not gradients");
        // The self-referenced pair: the midpoint slopes are the gradients.
        let from = 2 * half - time * len;
        assert!(worst(&ours.1[from..], &plain[from..]) <= 1e-5);
    }
}
