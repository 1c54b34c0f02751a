//! A ResNet's convolutions on burn's CPU backend through
//! `grid_kernels::conv`: the output, and on the autodiff backend one graph
//! node whose backward computes the input's gradient and the weight's as
//! the GEMMs PyTorch uses, instead of burn's convolution of swapped tensors
//! between strided copies.

use burn::backend::Flex;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::prelude::*;
use burn::tensor::TensorPrimitive;
use burn_flex::FlexTensor;

use grid_kernels::conv::{self, Dims};

use super::cast;
use super::flex::{Ad, applies, flex_tensor, primitive, values};

/// A convolution of `x` `[batch, inputs, h, w]` with `weight` `[outputs,
/// inputs, kh, kw]`, `stride` and `padding` zeros on each side (no bias, no
/// dilation, one group): `[batch, outputs, oh, ow]`. `None` where no kernel
/// applies (another backend or float type, `GRID_KERNELS=burn`): the caller
/// runs burn's convolution.
pub fn conv2d<B: Backend>(
    x: Tensor<B, 4>,
    weight: Tensor<B, 4>,
    stride: [usize; 2],
    padding: [usize; 2],
) -> Option<Tensor<B, 4>> {
    let [batch, inputs, height, width] = x.dims();
    let [outputs, weight_inputs, kh, kw] = weight.dims();
    if !applies(&x) || weight_inputs != inputs || stride.contains(&0) {
        return None;
    }
    if height + 2 * padding[0] < kh || width + 2 * padding[1] < kw {
        return None;
    }
    let dims = Dims { batch, inputs, outputs, size: [height, width], kernel: [kh, kw], stride, padding };
    match cast::<_, Tensor<Ad, 4>>(x) {
        Ok(x) => {
            let weight = cast::<_, Tensor<Ad, 4>>(weight).ok()?;
            cast(autodiff_conv2d(dims, x, weight)).ok()
        }
        Err(x) => {
            let x = primitive(cast::<_, Tensor<Flex, 4>>(x).ok()?);
            let weight = primitive(cast::<_, Tensor<Flex, 4>>(weight).ok()?);
            let y = output(dims, &x, &weight);
            cast(Tensor::<Flex, 4>::from_primitive(TensorPrimitive::Float(y))).ok()
        }
    }
}

fn output(dims: Dims, x: &FlexTensor, weight: &FlexTensor) -> FlexTensor {
    let [oh, ow] = dims.out_size();
    flex_tensor(conv::forward(dims, &values(x), &values(weight)), [dims.batch, dims.outputs, oh, ow])
}

#[derive(Debug)]
struct ConvBackward;

/// What the backward pass reads (shared with the graph, not copied): the
/// input for the weight gradient (kept only while the weight is tracked),
/// the weight for the input's gradient.
#[derive(Debug, Clone)]
struct ConvState {
    dims: Dims,
    x: Option<FlexTensor>,
    weight: FlexTensor,
}

impl Backward<Flex, 2> for ConvBackward {
    type State = ConvState;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let ConvState { dims, x, weight } = ops.state;
        let grad = grads.consume::<Flex>(&ops.node);
        let grad = values(&grad);
        let [x_node, weight_node] = ops.parents;
        if let (Some(node), Some(x)) = (weight_node, x) {
            let gradient = conv::weight_gradient(dims, &values(&x), &grad);
            let [kh, kw] = dims.kernel;
            grads.register::<Flex>(node.id, flex_tensor(gradient, [dims.outputs, dims.inputs, kh, kw]));
        }
        if let Some(node) = x_node {
            let gradient = conv::input_gradient(dims, &grad, &values(&weight));
            let [h, w] = dims.size;
            grads.register::<Flex>(node.id, flex_tensor(gradient, [dims.batch, dims.inputs, h, w]));
        }
    }
}

fn autodiff_conv2d(dims: Dims, x: Tensor<Ad, 4>, weight: Tensor<Ad, 4>) -> Tensor<Ad, 4> {
    let [x, weight] = [x.into_primitive().tensor(), weight.into_primitive().tensor()];
    let parents = [x.node.clone(), weight.node.clone()];
    let weight_tracked = !weight.node.requirement.is_none();
    let (x, weight) = (x.primitive, weight.primitive);
    let y = output(dims, &x, &weight);
    let output = match ConvBackward.prepare::<NoCheckpointing>(parents).compute_bound().stateful() {
        OpsKind::Tracked(prep) => prep.finish(ConvState { dims, x: weight_tracked.then_some(x), weight }, y),
        OpsKind::UnTracked(prep) => prep.finish(y),
    };
    Tensor::from_primitive(TensorPrimitive::Float(output))
}

#[cfg(test)]
mod tests {
    use burn::backend::{Autodiff, Flex};
    use burn::module::Param;
    use burn::nn::PaddingConfig2d;
    use burn::nn::conv::Conv2dConfig;
    use burn::prelude::*;

    type A = Autodiff<Flex>;

    /// The kernel gives burn's `Conv2d` and the gradients of its input and
    /// weight, to float rounding, for a ResNet's shapes (3 × 3 of stride 1
    /// and 2, 1 × 1 of stride 2, the 7 × 7 stem); the same values without
    /// autodiff.
    #[test]
    fn conv2d_is_burns_with_its_gradients() {
        let device = Default::default();
        let wave = |len: usize, scale: f32, phase: f32| -> Vec<f32> {
            (0..len).map(|i| ((i as f32) * scale + phase).sin()).collect()
        };
        for (inputs, outputs, side, kernel, stride, padding) in
            [(3, 4, 9, 3, 1, 1), (4, 6, 9, 3, 2, 1), (4, 6, 9, 1, 2, 0), (3, 5, 16, 7, 2, 3)]
        {
            let batch = 3;
            let mut conv = Conv2dConfig::new([inputs, outputs], [kernel, kernel])
                .with_stride([stride, stride])
                .with_padding(PaddingConfig2d::Explicit(padding, padding, padding, padding))
                .with_bias(false)
                .init::<A>(&device);
            let weight = wave(outputs * inputs * kernel * kernel, 0.53, 0.7);
            conv.weight = Param::from_tensor(
                Tensor::<A, 1>::from_floats(weight.as_slice(), &device).reshape([outputs, inputs, kernel, kernel]),
            );
            let x_values = wave(batch * inputs * side * side, 0.37, 0.1);
            let run = |kernel_on: bool| {
                let x = Tensor::<A, 1>::from_floats(x_values.as_slice(), &device)
                    .reshape([batch, inputs, side, side])
                    .require_grad();
                let y = if kernel_on {
                    super::conv2d(x.clone(), conv.weight.val(), [stride; 2], [padding; 2]).expect("a kernel on Flex")
                } else {
                    conv.forward(x.clone())
                };
                let probe = Tensor::<A, 1>::from_floats(wave(y.dims().iter().product(), 0.29, 0.4).as_slice(), &device)
                    .reshape(y.dims());
                let grads = (y.clone() * probe).sum().backward();
                let flat = |t: Tensor<Flex, 4>| t.into_data().to_vec::<f32>().unwrap();
                let (dx, dw) = (flat(x.grad(&grads).unwrap()), flat(conv.weight.grad(&grads).unwrap()));
                (flat(y.inner()), dx, dw)
            };
            let (ours, burns) = (run(true), run(false));
            let worst = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
            let label = format!("{kernel}×{kernel} stride {stride}");
            assert_eq!(ours.0.len(), burns.0.len(), "{label}: output size");
            assert!(worst(&ours.0, &burns.0) <= 1e-5, "{label}: outputs differ by {}", worst(&ours.0, &burns.0));
            assert!(worst(&ours.1, &burns.1) <= 1e-5, "{label}: ∂x differ by {}", worst(&ours.1, &burns.1));
            assert!(worst(&ours.2, &burns.2) <= 1e-4, "{label}: ∂w differ by {}", worst(&ours.2, &burns.2));
            let plain =
                Tensor::<Flex, 1>::from_floats(x_values.as_slice(), &device).reshape([batch, inputs, side, side]);
            let inference = super::conv2d(plain, conv.weight.val().inner(), [stride; 2], [padding; 2]).unwrap();
            assert_eq!(
                inference.into_data().to_vec::<f32>().unwrap(),
                ours.0,
                "the same kernel with or without autodiff"
            );
        }
    }
}
