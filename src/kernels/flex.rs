//! The fused kernels on burn's CPU backend: `Flex` for inference and
//! `Autodiff<Flex>` for gradients, the backward pass registered as one node
//! of the autodiff graph. A generic caller reaches them through a type check
//! (`Any`): the model code stays generic over every backend, and a backend
//! without a kernel gets `None` and runs the model's own operations.

use std::any::Any;
use std::sync::Arc;

use burn::backend::Autodiff;
use burn::backend::Flex;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::prelude::*;
use burn::tensor::TensorPrimitive;

use grid_kernels::lstm::{self, Dims, Tape};

type Ad = Autodiff<Flex, NoCheckpointing>;

/// `value` as a `U` when `T` is `U`; else `value` back.
fn cast<T: 'static, U: 'static>(value: T) -> Result<U, T> {
    let mut slot = Some(value);
    match (&mut slot as &mut dyn Any).downcast_mut::<Option<U>>() {
        Some(cast) => Ok(cast.take().expect("just put there")),
        None => Err(slot.expect("not taken")),
    }
}

fn host<const D: usize>(tensor: Tensor<Flex, D>) -> Vec<f32> {
    tensor.into_data().into_vec::<f32>().expect("an f32 tensor")
}

fn device_tensor<const D: usize>(values: Vec<f32>, shape: [usize; D]) -> Tensor<Flex, D> {
    Tensor::from_data(TensorData::new(values, shape), &Default::default())
}

/// The LSTM recurrence (see [`lstm`]) over `projected` `[batch, time, 4h]`
/// with `weight_hh` `[h, 4h]`: every hidden state, `[batch, time, h]`. `None`
/// where no kernel applies (another backend, another float type, or
/// `GRID_KERNELS=burn`): the caller runs its own operations.
pub fn lstm_recurrence<B: Backend>(projected: Tensor<B, 3>, weight_hh: Tensor<B, 2>) -> Option<Tensor<B, 3>> {
    if !super::enabled() || projected.dtype() != burn::tensor::DType::F32 {
        return None;
    }
    let (projected, weight_hh) = match cast::<_, Tensor<Ad, 3>>(projected) {
        Ok(projected) => {
            let weight_hh = cast::<_, Tensor<Ad, 2>>(weight_hh).ok()?;
            return cast(autodiff_recurrence(projected, weight_hh)).ok();
        }
        Err(projected) => (projected, weight_hh),
    };
    let projected = cast::<_, Tensor<Flex, 3>>(projected).ok()?;
    let weight_hh = cast::<_, Tensor<Flex, 2>>(weight_hh).ok()?;
    let [batch, time, _] = projected.dims();
    let dims = Dims { batch, time, hidden: weight_hh.dims()[0] };
    let (states, _) = lstm::forward(dims, &host(projected), &host(weight_hh), false);
    cast(device_tensor(states, [batch, time, dims.hidden])).ok()
}

#[derive(Debug)]
struct RecurrenceBackward;

#[derive(Debug, Clone)]
struct RecurrenceState {
    dims: Dims,
    weight_hh: Arc<Vec<f32>>,
    states: Arc<Vec<f32>>,
    tape: Arc<Tape>,
}

impl Backward<Flex, 2> for RecurrenceBackward {
    type State = RecurrenceState;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let RecurrenceState { dims, weight_hh, states, tape } = ops.state;
        let grad = grads.consume::<Flex>(&ops.node);
        let grad = host(Tensor::<Flex, 3>::from_primitive(TensorPrimitive::Float(grad)));
        let (grad_projected, grad_weight) = lstm::backward(dims, &weight_hh, &states, &tape, &grad);
        let [projected_node, weight_node] = ops.parents;
        let Dims { batch, time, hidden } = dims;
        if let Some(node) = projected_node {
            let grad = device_tensor(grad_projected, [batch, time, 4 * hidden]);
            grads.register::<Flex>(node.id, grad.into_primitive().tensor());
        }
        if let Some(node) = weight_node {
            let grad = device_tensor(grad_weight, [hidden, 4 * hidden]);
            grads.register::<Flex>(node.id, grad.into_primitive().tensor());
        }
    }
}

fn autodiff_recurrence(projected: Tensor<Ad, 3>, weight_hh: Tensor<Ad, 2>) -> Tensor<Ad, 3> {
    let [batch, time, _] = projected.dims();
    let dims = Dims { batch, time, hidden: weight_hh.dims()[0] };
    let projected = projected.into_primitive().tensor();
    let weight_hh = weight_hh.into_primitive().tensor();
    let inputs = host(Tensor::<Flex, 3>::from_primitive(TensorPrimitive::Float(projected.primitive.clone())));
    let weights = host(Tensor::<Flex, 2>::from_primitive(TensorPrimitive::Float(weight_hh.primitive.clone())));
    let shape = [batch, time, dims.hidden];
    let output = match RecurrenceBackward
        .prepare::<NoCheckpointing>([projected.node.clone(), weight_hh.node.clone()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => {
            let (states, tape) = lstm::forward(dims, &inputs, &weights, true);
            let output = device_tensor(states.clone(), shape).into_primitive().tensor();
            let state = RecurrenceState {
                dims,
                weight_hh: Arc::new(weights),
                states: Arc::new(states),
                tape: Arc::new(tape.expect("recorded")),
            };
            prep.finish(state, output)
        }
        OpsKind::UnTracked(prep) => {
            let (states, _) = lstm::forward(dims, &inputs, &weights, false);
            prep.finish(device_tensor(states, shape).into_primitive().tensor())
        }
    };
    Tensor::from_primitive(TensorPrimitive::Float(output))
}
