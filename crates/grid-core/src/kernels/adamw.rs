//! AdamW's update of one parameter as one block of the backend's, where
//! burn's generic AdamW runs a dozen element-wise operations per parameter
//! and step, each a pass over memory: on burn's CPU backend one pass over
//! the values, the gradient and both moments (`grid_kernels::adamw`, in
//! place where the storage is not shared; bit for bit burn's values); on
//! LibTorch, torch's in-place operations (`libtorch.rs`). The training loop
//! reaches it through `train::adamw`.

use burn::backend::Flex;
use burn::prelude::*;
use burn::tensor::TensorPrimitive;
use burn_flex::FlexTensor;

use grid_kernels::adamw as kernel;

use super::cast;
use super::flex::{flex_tensor, primitive, values};

/// AdamW's hyper-parameters (Loshchilov & Hutter's decoupled weight decay,
/// PyTorch's `torch.optim.AdamW`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamW {
    pub beta_1: f64,
    pub beta_2: f64,
    pub epsilon: f64,
    pub weight_decay: f64,
}

/// A parameter's moments after `time` updates.
#[derive(Debug, Clone)]
pub struct Moments<B: Backend, const D: usize> {
    pub first: Tensor<B, D>,
    pub second: Tensor<B, D>,
    pub time: usize,
}

/// Whether [`adamw_step`] runs for backend `B`.
pub fn adamw_applies<B: Backend>() -> bool {
    #[cfg(feature = "libtorch")]
    if super::libtorch::adamw_applies::<B>() {
        return true;
    }
    flex_applies::<B>()
}

/// burn's CPU backend (the optimizer sees the inner backend), kernels not
/// turned off.
fn flex_applies<B: Backend>() -> bool {
    super::enabled() && std::any::TypeId::of::<B>() == std::any::TypeId::of::<Flex>()
}

/// One AdamW update of `parameter` by `grad` at learning rate `lr`, with
/// the moments of the updates before (`None`: the first); the parameter and
/// moments after. `None` where [`adamw_applies`] is false: check first, the
/// inputs are consumed.
pub fn adamw_step<B: Backend, const D: usize>(
    adamw: AdamW,
    lr: f64,
    parameter: Tensor<B, D>,
    grad: Tensor<B, D>,
    moments: Option<Moments<B, D>>,
) -> Option<(Tensor<B, D>, Moments<B, D>)> {
    if flex_applies::<B>() {
        return flex_step(adamw, lr, parameter, grad, moments);
    }
    #[cfg(feature = "libtorch")]
    {
        super::libtorch::adamw_step(adamw, lr, parameter, grad, moments)
    }
    #[cfg(not(feature = "libtorch"))]
    {
        let _ = (adamw, lr, parameter, grad, moments);
        None
    }
}

/// [`adamw_step`] on burn's CPU backend. burn's AdamW keeps its settings in
/// f32, so they are rounded as it rounds them: the values equal its own.
fn flex_step<B: Backend, const D: usize>(
    adamw: AdamW,
    lr: f64,
    parameter: Tensor<B, D>,
    grad: Tensor<B, D>,
    moments: Option<Moments<B, D>>,
) -> Option<(Tensor<B, D>, Moments<B, D>)> {
    let shape = parameter.dims();
    let flex = |t: Tensor<B, D>| cast::<_, Tensor<Flex, D>>(t).ok().map(primitive);
    let mut parameter = writable(flex(parameter)?, shape);
    let grad = flex(grad)?;
    let (mut first, mut second, time, fresh) = match moments {
        Some(m) => {
            (writable(flex(m.first)?, shape), writable(flex(m.second)?, shape), m.time + 1, kernel::Moments::Continued)
        }
        None => {
            let zeros = || flex_tensor(vec![0.0f32; shape.iter().product()], shape);
            (zeros(), zeros(), 1, kernel::Moments::Fresh)
        }
    };
    let update = kernel::Update::new(
        adamw.beta_1 as f32,
        adamw.beta_2 as f32,
        adamw.epsilon as f32,
        adamw.weight_decay as f32,
        lr,
        i32::try_from(time).ok()?,
    );
    kernel::step(
        update,
        fresh,
        parameter.storage_mut::<f32>(),
        &values(&grad),
        first.storage_mut::<f32>(),
        second.storage_mut::<f32>(),
    );
    let tensor = |t: FlexTensor| cast(Tensor::<Flex, D>::from_primitive(TensorPrimitive::Float(t))).ok();
    Some((tensor(parameter)?, Moments { first: tensor(first)?, second: tensor(second)?, time }))
}

/// A tensor whose whole storage is its values in order and held by no other
/// handle, so that it can be written in place: itself where it is, else a
/// contiguous copy.
fn writable<const D: usize>(tensor: FlexTensor, shape: [usize; D]) -> FlexTensor {
    let n = tensor.layout().num_elements();
    let whole = tensor.is_unique()
        && tensor.layout().contiguous_offsets() == Some((0, n))
        && tensor.bytes().len() == n * size_of::<f32>();
    if whole { tensor } else { flex_tensor(values(&tensor).into_owned(), shape) }
}
