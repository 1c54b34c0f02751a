//! A ResNet's max pooling on burn's CPU backend through
//! `grid_kernels::max_pool`: the output, and on the autodiff backend one
//! graph node whose backward scatters the gradient to the argmaxes the
//! forward pass kept.

use std::sync::Arc;

use burn::backend::Flex;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::prelude::*;
use burn::tensor::TensorPrimitive;
use burn_flex::FlexTensor;

use grid_kernels::max_pool::{self, Dims, Pooled};

use super::cast;
use super::flex::{Ad, applies, flex_tensor, primitive, values};

/// The max pooling of `x` `[batch, channels, h, w]` over `kernel` windows
/// moved by `stride`, with `padding` on each side (no dilation, floor
/// rounding): `[batch, channels, oh, ow]`. `None` where no kernel applies
/// (another backend or float type, `GRID_KERNELS=burn`, padding over half a
/// window): the caller runs burn's pooling.
pub fn max_pool2d<B: Backend>(
    x: Tensor<B, 4>,
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
) -> Option<Tensor<B, 4>> {
    let [batch, channels, height, width] = x.dims();
    let dims = Dims { batch, channels, size: [height, width], kernel, stride, padding };
    if !applies(&x) || !dims.supported() {
        return None;
    }
    match cast::<_, Tensor<Ad, 4>>(x) {
        Ok(x) => cast(autodiff_max_pool2d(dims, x)).ok(),
        Err(x) => {
            let x = primitive(cast::<_, Tensor<Flex, 4>>(x).ok()?);
            let (y, _) = pooled(dims, &x);
            cast(Tensor::<Flex, 4>::from_primitive(TensorPrimitive::Float(y))).ok()
        }
    }
}

/// The output as a tensor, and the argmaxes.
fn pooled(dims: Dims, x: &FlexTensor) -> (FlexTensor, Vec<u32>) {
    let [oh, ow] = dims.out_size();
    let Pooled { values: y, argmax } = max_pool::forward(dims, &values(x));
    (flex_tensor(y, [dims.batch, dims.channels, oh, ow]), argmax)
}

#[derive(Debug)]
struct MaxPoolBackward;

impl Backward<Flex, 1> for MaxPoolBackward {
    /// The shape and the forward pass's argmaxes (shared, not copied).
    type State = (Dims, Arc<Vec<u32>>);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let (dims, argmax) = ops.state;
        let grad = grads.consume::<Flex>(&ops.node);
        let [node] = ops.parents;
        if let Some(node) = node {
            let gradient = max_pool::backward(dims, &values(&grad), &argmax);
            let [h, w] = dims.size;
            grads.register::<Flex>(node.id, flex_tensor(gradient, [dims.batch, dims.channels, h, w]));
        }
    }
}

fn autodiff_max_pool2d(dims: Dims, x: Tensor<Ad, 4>) -> Tensor<Ad, 4> {
    let x = x.into_primitive().tensor();
    let (y, argmax) = pooled(dims, &x.primitive);
    let output = match MaxPoolBackward.prepare::<NoCheckpointing>([x.node.clone()]).compute_bound().stateful() {
        OpsKind::Tracked(prep) => prep.finish((dims, Arc::new(argmax)), y),
        OpsKind::UnTracked(prep) => prep.finish(y),
    };
    Tensor::from_primitive(TensorPrimitive::Float(output))
}

#[cfg(test)]
mod tests {
    use burn::backend::{Autodiff, Flex};
    use burn::nn::PaddingConfig2d;
    use burn::nn::pool::MaxPool2dConfig;
    use burn::prelude::*;

    type A = Autodiff<Flex>;

    /// The kernel gives burn's `MaxPool2d` and its input gradient bit for bit
    /// on the ResNet stem's pooling (odd and even sides, values with ties),
    /// and the same values without autodiff.
    #[test]
    fn max_pool2d_is_burns_with_its_gradient() {
        let device = Default::default();
        let pool = MaxPool2dConfig::new([3, 3])
            .with_strides([2, 2])
            .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
            .init();
        for (side, ties) in [(9, false), (16, false), (16, true), (57, true)] {
            let (batch, channels) = (2, 3);
            let values: Vec<f32> = (0..batch * channels * side * side)
                .map(|i| if ties { (i % 4) as f32 } else { ((i as f32) * 0.37).sin() })
                .collect();
            let run = |kernel_on: bool| {
                let x = Tensor::<A, 1>::from_floats(values.as_slice(), &device)
                    .reshape([batch, channels, side, side])
                    .require_grad();
                let y = if kernel_on {
                    super::max_pool2d(x.clone(), [3, 3], [2, 2], [1, 1]).expect("a kernel on Flex")
                } else {
                    pool.forward(x.clone())
                };
                let probe = Tensor::<A, 1>::from_floats(
                    (0..y.dims().iter().product::<usize>())
                        .map(|i| ((i as f32) * 0.29).cos())
                        .collect::<Vec<_>>()
                        .as_slice(),
                    &device,
                )
                .reshape(y.dims());
                let grads = (y.clone() * probe).sum().backward();
                let flat = |t: Tensor<Flex, 4>| t.into_data().to_vec::<f32>().unwrap();
                (flat(y.inner()), flat(x.grad(&grads).unwrap()))
            };
            let (ours, burns) = (run(true), run(false));
            assert_eq!(ours.0, burns.0, "side {side}: outputs");
            assert_eq!(ours.1, burns.1, "side {side}: input gradients");
            let plain =
                Tensor::<Flex, 1>::from_floats(values.as_slice(), &device).reshape([batch, channels, side, side]);
            let inference = super::max_pool2d(plain, [3, 3], [2, 2], [1, 1]).unwrap();
            assert_eq!(inference.into_data().to_vec::<f32>().unwrap(), ours.0, "with or without autodiff");
        }
    }
}
