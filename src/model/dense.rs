//! A dense (`Linear`) layer at every position of a sequence.
//!
//! While the weights train on burn's CPU backend, the weight gradient is one
//! product over all positions (`crate::kernels::dense`) instead of burn's one
//! product per example, summed; everywhere else (inference, attribution,
//! other backends) this is burn's `Linear::forward`. The values are burn's
//! either way.

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

    /// While the weights train: burn's values and input gradient bit for
    /// bit, its weight and bias gradients to float rounding (the sums run in
    /// another order).
    #[test]
    fn is_the_linear_layer_at_every_position() {
        let device = Default::default();
        let layer = layer(40, 70);
        let (batch, time) = (5, 7);
        let values: Vec<f32> = (0..batch * time * 40).map(|i| (i as f32 * 0.37).sin()).collect();
        let probe: Vec<f32> = (0..batch * time * 70).map(|i| (i as f32 * 0.23).cos()).collect();
        let run = |ours: bool| {
            let x = Tensor::<A, 1>::from_floats(values.as_slice(), &device).reshape([batch, time, 40]).require_grad();
            let y = if ours { at_every_position(&layer, x.clone()) } else { layer.forward(x.clone()) };
            let probe = Tensor::<A, 1>::from_floats(probe.as_slice(), &device).reshape([batch, time, 70]);
            let grads = (y.clone() * probe).sum().backward();
            let flat = |t: Tensor<Flex, 2>| t.into_data().to_vec::<f32>().unwrap();
            let bias = layer.bias.as_ref().unwrap().val().grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap();
            (
                y.inner().into_data().to_vec::<f32>().unwrap(),
                x.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap(),
                flat(layer.weight.val().grad(&grads).unwrap()),
                bias,
            )
        };
        let (ours, burns) = (run(true), run(false));
        let worst = |a: &[f32], b: &[f32]| {
            assert_eq!(a.len(), b.len());
            a.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max)
        };
        assert_eq!(ours.0, burns.0, "values");
        assert_eq!(ours.1, burns.1, "input gradients");
        assert!(worst(&ours.2, &burns.2) <= 1e-5, "weight gradients differ by {}", worst(&ours.2, &burns.2));
        assert!(worst(&ours.3, &burns.3) <= 1e-5, "bias gradients differ by {}", worst(&ours.3, &burns.3));
        assert_ne!(ours.2, burns.2, "the kernel ran (burn sums per example, so some bits differ)");
    }

    /// Frozen weights (attribution): burn's layer itself.
    #[test]
    fn frozen_weights_take_burns_layer() {
        let device = Default::default();
        let layer = layer(6, 5).no_grad();
        let x = Tensor::<A, 3>::ones([2, 3, 6], &device).require_grad();
        let ours = at_every_position(&layer, x.clone()).inner().into_data();
        assert_eq!(ours, layer.forward(x).inner().into_data());
    }
}
