//! A dense (`Linear`) layer at every position of a sequence.
//!
//! On burn's CPU backend, `crate::kernels::dense` runs the layer: every
//! product over all positions at once, in fixed blocks of rows, where burn's
//! `Linear::forward` on a 3-D input multiplies one example at a time (a
//! `gemm` call per example that packs the whole weight again for a few dozen
//! rows); while the weights train, the weight gradient is one product
//! instead of burn's one per example, summed. Elsewhere (other backends, or
//! `GRID_KERNELS=burn`) this is burn's `Linear::forward`. The values are
//! burn's to float rounding.

use burn::nn::Linear;
use burn::prelude::*;

/// `layer` at every position of `x` (`[batch, time, in]` → `[batch, time, out]`).
pub fn at_every_position<B: Backend>(layer: &Linear<B>, x: Tensor<B, 3>) -> Tensor<B, 3> {
    let bias = layer.bias.as_ref().map(|bias| bias.val());
    crate::kernels::dense(x.clone(), layer.weight.val(), bias).unwrap_or_else(|| layer.forward(x))
}

#[cfg(test)]
mod tests {
    use burn::backend::{Autodiff, Flex};
    use burn::module::AutodiffModule;
    use burn::prelude::*;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::at_every_position;

    type A = Autodiff<Flex>;

    /// Weights from a seeded stream of the test's own: burn's initialisers
    /// draw from the backend's global RNG, which a training test running
    /// beside this one has seeded for its dropout masks.
    fn layer(inputs: usize, outputs: usize) -> burn::nn::Linear<A> {
        crate::model::init::linear(&mut ChaCha8Rng::seed_from_u64(7), inputs, outputs, true, &Default::default())
    }

    /// While the weights train and while they are frozen (attribution):
    /// burn's values and gradients to float rounding (the products run over
    /// all positions at once, the bias added first).
    #[test]
    fn is_the_linear_layer_at_every_position() {
        let device = Default::default();
        let (batch, time) = (5, 7);
        let values: Vec<f32> = (0..batch * time * 40).map(|i| (i as f32 * 0.37).sin()).collect();
        let probe: Vec<f32> = (0..batch * time * 70).map(|i| (i as f32 * 0.23).cos()).collect();
        for frozen in [false, true] {
            let layer = if frozen { layer(40, 70).no_grad() } else { layer(40, 70) };
            let run = |ours: bool| {
                let x =
                    Tensor::<A, 1>::from_floats(values.as_slice(), &device).reshape([batch, time, 40]).require_grad();
                let y = if ours { at_every_position(&layer, x.clone()) } else { layer.forward(x.clone()) };
                let probe = Tensor::<A, 1>::from_floats(probe.as_slice(), &device).reshape([batch, time, 70]);
                let grads = (y.clone() * probe).sum().backward();
                let flat = |t: Option<Tensor<Flex, 2>>| t.map(|t| t.into_data().to_vec::<f32>().unwrap());
                let bias =
                    layer.bias.as_ref().unwrap().val().grad(&grads).map(|b| b.into_data().to_vec::<f32>().unwrap());
                (
                    y.inner().into_data().to_vec::<f32>().unwrap(),
                    x.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap(),
                    flat(layer.weight.val().grad(&grads)),
                    bias,
                )
            };
            let (ours, burns) = (run(true), run(false));
            let worst = |a: &[f32], b: &[f32]| {
                assert_eq!(a.len(), b.len());
                a.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max)
            };
            assert!(
                worst(&ours.0, &burns.0) <= 1e-5,
                "values differ by {} (frozen: {frozen})",
                worst(&ours.0, &burns.0)
            );
            assert!(worst(&ours.1, &burns.1) <= 1e-5, "input gradients (frozen: {frozen})");
            assert_eq!(ours.2.is_some(), !frozen, "a weight gradient only while the weights train");
            assert_eq!(ours.3.is_some(), !frozen, "a bias gradient only while the weights train");
            if let (Some(a), Some(b), Some(c), Some(d)) = (&ours.2, &burns.2, &ours.3, &burns.3) {
                assert!(worst(a, b) <= 1e-5, "weight gradients differ by {}", worst(a, b));
                assert!(worst(c, d) <= 1e-5, "bias gradients differ by {}", worst(c, d));
                assert_ne!(a, b, "the kernel ran (burn sums per example, so some bits differ)");
            }
        }
    }

    /// Without autodiff (inference on the plain CPU backend): burn's layer to
    /// float rounding.
    #[test]
    fn plain_backend_is_burns_layer() {
        let device = Default::default();
        let layer = layer(6, 5).valid();
        let values: Vec<f32> = (0..2 * 3 * 6).map(|i| (i as f32 * 0.41).cos()).collect();
        let x = Tensor::<Flex, 1>::from_floats(values.as_slice(), &device).reshape([2, 3, 6]);
        let ours = at_every_position(&layer, x.clone()).into_data().to_vec::<f32>().unwrap();
        let burns = layer.forward(x).into_data().to_vec::<f32>().unwrap();
        for (a, b) in ours.iter().zip(&burns) {
            assert!((a - b).abs() <= 1e-6, "{a} vs {b}");
        }
    }

    /// A layer without a bias (the BiLSTM's attention scorer, to one
    /// output): burn's layer to float rounding, and a row's value the same
    /// bits alone as in its batch.
    #[test]
    fn a_layer_without_a_bias_is_burns_and_batch_free() {
        let device = Default::default();
        let layer = crate::model::init::linear::<A>(&mut ChaCha8Rng::seed_from_u64(3), 10, 1, false, &device).no_grad();
        let values: Vec<f32> = (0..6 * 7 * 10).map(|i| (i as f32 * 0.37).sin()).collect();
        let x = Tensor::<A, 1>::from_floats(values.as_slice(), &device).reshape([6, 7, 10]);
        let all = at_every_position(&layer, x.clone()).into_data().to_vec::<f32>().unwrap();
        let burns = layer.forward(x.clone()).into_data().to_vec::<f32>().unwrap();
        for (a, b) in all.iter().zip(&burns) {
            assert!((a - b).abs() <= 1e-6, "{a} vs {b}");
        }
        for example in 0..6 {
            let one = at_every_position(&layer, x.clone().narrow(0, example, 1)).into_data().to_vec::<f32>().unwrap();
            assert_eq!(one, all[example * 7..(example + 1) * 7], "example {example}");
        }
    }
}
