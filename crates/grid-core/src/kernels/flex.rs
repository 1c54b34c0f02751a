//! The fused kernels on burn's CPU backend: `Flex` for inference and
//! `Autodiff<Flex>` for gradients, the backward pass registered as one node
//! of the autodiff graph. A generic caller reaches them through a type check
//! (`Any`): the model code stays generic over every backend, and a backend
//! without a kernel gets `None` and runs the model's own operations.

use std::borrow::Cow;
use std::sync::Arc;

use burn::backend::Autodiff;
use burn::backend::Flex;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::prelude::*;
use burn::tensor::TensorPrimitive;
use burn::tensor::ops::FloatTensorOps;
use burn_flex::FlexTensor;

use super::Rules;
use super::cast;

use grid_kernels::lstm::{self, Dims, Keep, Order, Tape};
use grid_kernels::norm;
use grid_kernels::softmax::{self, Rows};
use grid_kernels::{activation, attention, layout, linear, pool, rescale};

pub(super) type Ad = Autodiff<Flex, NoCheckpointing>;

/// A Flex tensor's values in row-major order: borrowed where its storage is
/// laid out so (the usual case), else copied once.
pub(super) fn values(tensor: &FlexTensor) -> Cow<'_, [f32]> {
    match tensor.as_slice::<f32>() {
        Some(values) => Cow::Borrowed(values),
        None => Cow::Owned(tensor.clone().into_data().into_vec::<f32>().expect("an f32 tensor")),
    }
}

/// A Flex tensor that takes over `values` (no copy).
pub(super) fn flex_tensor<const D: usize>(values: Vec<f32>, shape: [usize; D]) -> FlexTensor {
    FlexTensor::from_data(TensorData::new(values, shape))
}

pub(super) fn primitive<const D: usize>(tensor: Tensor<Flex, D>) -> FlexTensor {
    tensor.into_primitive().tensor()
}

/// A constant input's Flex tensor (from the autodiff wrapper, its inner
/// one): attention's padding mask. `None` on another backend.
fn constant<B: Backend, const D: usize>(tensor: Tensor<B, D>) -> Option<FlexTensor> {
    match cast::<_, Tensor<Ad, D>>(tensor) {
        Ok(tensor) => Some(primitive(tensor.inner())),
        Err(tensor) => cast::<_, Tensor<Flex, D>>(tensor).ok().map(primitive),
    }
}

/// The LSTM recurrence (see [`lstm`]) over `projected` `[batch, time, 4h]`
/// with `weight_hh` `[h, 4h]`: every hidden state, `[batch, time, h]`. With
/// `reversed_lengths` (one per row), each row runs over its real tokens from
/// last to first ([`Order::Reversed`]). Under [`Rules::Rescale`] (the batch
/// stacks inputs over their references) the backward pass gives DeepLift's
/// multipliers instead of gradients. `None` where no kernel applies
/// (another backend, another float type, or `GRID_KERNELS=burn`): the caller
/// runs its own operations.
pub fn lstm_recurrence<B: Backend>(
    projected: Tensor<B, 3>,
    weight_hh: Tensor<B, 2>,
    reversed_lengths: Option<&[usize]>,
    rules: Rules,
) -> Option<Tensor<B, 3>> {
    if !applies(&projected) || !pairs_up(rules, projected.dims()[0]) {
        return None;
    }
    let (projected, weight_hh) = match cast::<_, Tensor<Ad, 3>>(projected) {
        Ok(projected) => {
            let weight_hh = cast::<_, Tensor<Ad, 2>>(weight_hh).ok()?;
            return cast(autodiff_recurrence(projected, weight_hh, reversed_lengths, rules)).ok();
        }
        Err(projected) => (projected, weight_hh),
    };
    let projected = cast::<_, Tensor<Flex, 3>>(projected).ok()?;
    let weight_hh = cast::<_, Tensor<Flex, 2>>(weight_hh).ok()?;
    let [batch, time, _] = projected.dims();
    let dims = Dims { batch, time, hidden: weight_hh.dims()[0] };
    let (projected, weight_hh) = (primitive(projected), primitive(weight_hh));
    let (states, _) =
        lstm::forward(dims, order(reversed_lengths), &values(&projected), &values(&weight_hh), Keep::Nothing);
    let states = flex_tensor(states, [batch, time, dims.hidden]);
    cast(Tensor::<Flex, 3>::from_primitive(TensorPrimitive::Float(states))).ok()
}

/// Whether the kernels here run for this tensor: burn's CPU backend (or its
/// autodiff wrapper), f32, kernels not turned off. A caller can skip
/// preparing for a kernel otherwise.
pub fn applies<B: Backend, const D: usize>(tensor: &Tensor<B, D>) -> bool {
    tensor.dtype() == burn::tensor::DType::F32 && backend_applies::<B>()
}

/// Whether the kernels here run on backend `B` at all: burn's CPU backend
/// or its autodiff wrapper, kernels not turned off.
pub fn backend_applies<B: Backend>() -> bool {
    use std::any::TypeId;
    let backend = TypeId::of::<B>();
    super::enabled() && (backend == TypeId::of::<Flex>() || backend == TypeId::of::<Ad>())
}

/// Whether a batch of `batch` rows can run under `rules`: DeepLift's stack
/// inputs over their references, so the kernels that pair rows need an even
/// batch.
fn pairs_up(rules: Rules, batch: usize) -> bool {
    rules == Rules::Plain || batch.is_multiple_of(2)
}

fn order(reversed_lengths: Option<&[usize]>) -> Order<'_> {
    reversed_lengths.map_or(Order::Forward, Order::Reversed)
}

#[derive(Debug)]
struct RecurrenceBackward;

/// What the backward pass reads: the weights and the output states (shared
/// with the graph, not copied) and the forward's tape.
#[derive(Debug, Clone)]
struct RecurrenceState {
    dims: Dims,
    reversed_lengths: Option<Arc<[usize]>>,
    weight_hh: FlexTensor,
    states: FlexTensor,
    tape: Arc<Tape>,
}

impl Backward<Flex, 2> for RecurrenceBackward {
    type State = RecurrenceState;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let RecurrenceState { dims, reversed_lengths, weight_hh, states, tape } = ops.state;
        let grad = grads.consume::<Flex>(&ops.node);
        let [projected_node, weight_node] = ops.parents;
        // Attribution tracks the inputs only: no dW_hh then.
        let (grad_projected, grad_weight) = lstm::backward(
            dims,
            order(reversed_lengths.as_deref()),
            &values(&weight_hh),
            &values(&states),
            &tape,
            &values(&grad),
            weight_node.is_some(),
        );
        let Dims { batch, time, hidden } = dims;
        if let Some(node) = projected_node {
            grads.register::<Flex>(node.id, flex_tensor(grad_projected, [batch, time, 4 * hidden]));
        }
        if let (Some(node), Some(grad_weight)) = (weight_node, grad_weight) {
            grads.register::<Flex>(node.id, flex_tensor(grad_weight, [hidden, 4 * hidden]));
        }
    }
}

fn autodiff_recurrence(
    projected: Tensor<Ad, 3>,
    weight_hh: Tensor<Ad, 2>,
    reversed_lengths: Option<&[usize]>,
    rules: Rules,
) -> Tensor<Ad, 3> {
    let keep = match rules {
        Rules::Plain => Keep::Gradients,
        Rules::Rescale => Keep::Multipliers,
    };
    let [batch, time, _] = projected.dims();
    let dims = Dims { batch, time, hidden: weight_hh.dims()[0] };
    let projected = projected.into_primitive().tensor();
    let weight_hh = weight_hh.into_primitive().tensor();
    let shape = [batch, time, dims.hidden];
    let order = order(reversed_lengths);
    let output = match RecurrenceBackward
        .prepare::<NoCheckpointing>([projected.node.clone(), weight_hh.node.clone()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => {
            let (states, tape) =
                lstm::forward(dims, order, &values(&projected.primitive), &values(&weight_hh.primitive), keep);
            let states = flex_tensor(states, shape);
            let state = RecurrenceState {
                dims,
                reversed_lengths: reversed_lengths.map(Arc::from),
                weight_hh: weight_hh.primitive.clone(),
                states: states.clone(),
                tape: Arc::new(tape.expect("recorded")),
            };
            prep.finish(state, states)
        }
        OpsKind::UnTracked(prep) => {
            let (states, _) =
                lstm::forward(dims, order, &values(&projected.primitive), &values(&weight_hh.primitive), Keep::Nothing);
            prep.finish(flex_tensor(states, shape))
        }
    };
    Tensor::from_primitive(TensorPrimitive::Float(output))
}

/// `tanh` of every element in SIMD lanes (see [`activation::tanh`]), with
/// its backward `grad · (1 − y²)`. `None` where no kernel applies.
pub fn tanh<B: Backend, const D: usize>(x: Tensor<B, D>) -> Option<Tensor<B, D>> {
    elementwise(x, &TANH, Rules::Plain)
}

/// The exact GELU in SIMD lanes (see [`activation::gelu`]), with its
/// backward. `None` where no kernel applies.
pub fn gelu<B: Backend, const D: usize>(x: Tensor<B, D>) -> Option<Tensor<B, D>> {
    elementwise(x, &GELU, Rules::Plain)
}

/// DeepLift's Rescale rule of tanh (see [`rescale::elementwise`]) for a
/// batch stacking inputs over their references: tanh's values, the rule's
/// multipliers as their backward. `None` where no kernel applies.
pub fn rescaled_tanh<B: Backend, const D: usize>(x: Tensor<B, D>) -> Option<Tensor<B, D>> {
    elementwise(x, &TANH, Rules::Rescale)
}

/// [`rescaled_tanh`] for the exact GELU.
pub fn rescaled_gelu<B: Backend, const D: usize>(x: Tensor<B, D>) -> Option<Tensor<B, D>> {
    elementwise(x, &GELU, Rules::Rescale)
}

/// An element-wise kernel: its forward, how its backward gets the input's
/// gradient, and its derivative (DeepLift's slope at a midpoint).
#[derive(Debug)]
struct Elementwise {
    forward: fn(&[f32]) -> Vec<f32>,
    gradient: Gradient,
    derivative: fn(&[f32]) -> Vec<f32>,
}

/// A forward that also returns each value's derivative.
type ValuesAndDerivative = fn(&[f32]) -> (Vec<f32>, Vec<f32>);

/// The input's gradient from what a forward pass kept and the output's
/// gradient.
type InputGradient = fn(&[f32], &[f32]) -> Vec<f32>;

/// What a differentiated forward pass keeps, and the backward from it.
#[derive(Debug, Clone, Copy)]
enum Gradient {
    /// Keeps the output; the input's gradient from it and the output's
    /// gradient (tanh: `grad · (1 − y²)`).
    FromOutput(InputGradient),
    /// Computes the derivative beside the values and keeps it; the backward
    /// is one product (GELU, whose erf would otherwise run again).
    KeptDerivative(ValuesAndDerivative),
}

const TANH: Elementwise = Elementwise {
    forward: activation::tanh,
    gradient: Gradient::FromOutput(activation::tanh_backward),
    derivative: activation::tanh_derivative,
};

const GELU: Elementwise = Elementwise {
    forward: activation::gelu,
    gradient: Gradient::KeptDerivative(activation::gelu_with_derivative),
    derivative: activation::gelu_derivative,
};

impl Elementwise {
    fn apply<const D: usize>(&self, x: &FlexTensor, shape: [usize; D]) -> FlexTensor {
        flex_tensor((self.forward)(&values(x)), shape)
    }

    /// The output, and what the backward pass keeps.
    fn apply_tracked<const D: usize>(&self, x: &FlexTensor, shape: [usize; D]) -> (FlexTensor, FlexTensor) {
        match self.gradient {
            Gradient::FromOutput(_) => {
                let output = self.apply(x, shape);
                (output.clone(), output)
            }
            Gradient::KeptDerivative(forward) => {
                let (output, derivative) = forward(&values(x));
                (flex_tensor(output, shape), flex_tensor(derivative, shape))
            }
        }
    }

    /// The input's gradient from what [`Elementwise::apply_tracked`] kept
    /// and the output's gradient.
    fn backward(&self) -> InputGradient {
        match self.gradient {
            Gradient::FromOutput(backward) => backward,
            Gradient::KeptDerivative(_) => activation::times_derivative,
        }
    }
}

/// Runs a one-input kernel on `x`: `on_autodiff` on `Autodiff<Flex>`,
/// `on_flex` (given the values and their shape) on `Flex`; `None` where no
/// kernel applies.
fn unary<B: Backend, const D: usize, const E: usize>(
    x: Tensor<B, D>,
    on_autodiff: impl FnOnce(Tensor<Ad, D>) -> Tensor<Ad, E>,
    on_flex: impl FnOnce(&FlexTensor, [usize; D]) -> FlexTensor,
) -> Option<Tensor<B, E>> {
    if !applies(&x) {
        return None;
    }
    match cast::<_, Tensor<Ad, D>>(x) {
        Ok(x) => cast(on_autodiff(x)).ok(),
        Err(x) => {
            let x = cast::<_, Tensor<Flex, D>>(x).ok()?;
            let shape = x.dims();
            let output = on_flex(&primitive(x), shape);
            cast(Tensor::<Flex, E>::from_primitive(TensorPrimitive::Float(output))).ok()
        }
    }
}

/// Runs `kernel` on `x`: its ordinary backward under [`Rules::Plain`],
/// DeepLift's multipliers (see [`rescale::elementwise`]) under
/// [`Rules::Rescale`], the batch stacking inputs over their references.
fn elementwise<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    kernel: &'static Elementwise,
    rules: Rules,
) -> Option<Tensor<B, D>> {
    if !pairs_up(rules, x.dims()[0]) {
        return None;
    }
    unary(x, |x| autodiff_elementwise(x, kernel, rules), |x, shape| kernel.apply(x, shape))
}

#[derive(Debug)]
struct ElementwiseBackward<const D: usize>;

impl<const D: usize> Backward<Flex, 1> for ElementwiseBackward<D> {
    /// What the forward kept, its shape, and the backward from it.
    type State = (FlexTensor, [usize; D], InputGradient);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let (kept, shape, backward) = ops.state;
        let grad = grads.consume::<Flex>(&ops.node);
        let [parent] = ops.parents;
        if let Some(node) = parent {
            let input_grad = backward(&values(&kept), &values(&grad));
            grads.register::<Flex>(node.id, flex_tensor(input_grad, shape));
        }
    }
}

fn autodiff_elementwise<const D: usize>(x: Tensor<Ad, D>, kernel: &'static Elementwise, rules: Rules) -> Tensor<Ad, D> {
    let shape = x.dims();
    let x = x.into_primitive().tensor();
    let output = match ElementwiseBackward::<D>.prepare::<NoCheckpointing>([x.node.clone()]).compute_bound().stateful()
    {
        OpsKind::Tracked(prep) => match rules {
            Rules::Plain => {
                let (output, kept) = kernel.apply_tracked(&x.primitive, shape);
                prep.finish((kept, shape, kernel.backward()), output)
            }
            Rules::Rescale => {
                let (y, multipliers) = rescale::elementwise(&values(&x.primitive), kernel.forward, kernel.derivative);
                let state = (flex_tensor(multipliers, shape), shape, activation::times_derivative as InputGradient);
                prep.finish(state, flex_tensor(y, shape))
            }
        },
        OpsKind::UnTracked(prep) => prep.finish(kernel.apply(&x.primitive, shape)),
    };
    Tensor::from_primitive(TensorPrimitive::Float(output))
}

/// `[a, b, c, d]` → `[a, c, b, d]` as a contiguous copy (see
/// [`layout::swap_middle`]); burn's `swap_dims(1, 2)` is a strided view that
/// a later operation copies one computed index at a time. `None` where no
/// kernel applies.
pub fn swap_middle<B: Backend>(x: Tensor<B, 4>) -> Option<Tensor<B, 4>> {
    unary(x, autodiff_swap_middle, swapped)
}

/// `x` of shape `[a, b, c, d]` as `[a, c, b, d]`.
fn swapped(x: &FlexTensor, [a, b, c, d]: [usize; 4]) -> FlexTensor {
    flex_tensor(layout::swap_middle(&values(x), [a, b, c, d]), [a, c, b, d])
}

#[derive(Debug)]
struct SwapMiddleBackward;

impl Backward<Flex, 1> for SwapMiddleBackward {
    /// The input's shape.
    type State = [usize; 4];

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let [a, b, c, d] = ops.state;
        let grad = grads.consume::<Flex>(&ops.node);
        let [parent] = ops.parents;
        if let Some(node) = parent {
            // The gradient has the output's shape; swapping back is the inverse.
            grads.register::<Flex>(node.id, swapped(&grad, [a, c, b, d]));
        }
    }
}

fn autodiff_swap_middle(x: Tensor<Ad, 4>) -> Tensor<Ad, 4> {
    let shape = x.dims();
    let x = x.into_primitive().tensor();
    let output = match SwapMiddleBackward.prepare::<NoCheckpointing>([x.node.clone()]).compute_bound().stateful() {
        OpsKind::Tracked(prep) => prep.finish(shape, swapped(&x.primitive, shape)),
        OpsKind::UnTracked(prep) => prep.finish(swapped(&x.primitive, shape)),
    };
    Tensor::from_primitive(TensorPrimitive::Float(output))
}

/// Attention's probabilities, `softmax(scores / divisor + bias)` over the
/// keys (see [`softmax`]), with the backward to the scores. `scores` is
/// `[batch, heads, queries, keys]`; `bias` `[batch, 1, 1, keys]`, a constant
/// (the padding mask: no gradient flows to it). `None` where no kernel
/// applies, or the bias has another shape or is tracked.
pub fn attention_softmax<B: Backend>(scores: Tensor<B, 4>, bias: Tensor<B, 4>, divisor: f32) -> Option<Tensor<B, 4>> {
    let [batch, heads, queries, keys] = scores.dims();
    if !applies(&scores) || bias.dims() != [batch, 1, 1, keys] || bias.is_require_grad() || keys == 0 {
        return None;
    }
    let rows = Rows { len: keys, rows_per_bias: heads * queries };
    let bias = constant(bias)?;
    let bias = values(&bias);
    let shape = [batch, heads, queries, keys];
    unary(
        scores,
        |scores| autodiff_attention_softmax(scores, &bias, rows, divisor),
        |scores, _| flex_tensor(softmax::forward(&values(scores), &bias, rows, divisor), shape),
    )
}

#[derive(Debug)]
struct AttentionSoftmaxBackward;

impl Backward<Flex, 1> for AttentionSoftmaxBackward {
    /// The probabilities, their shape, and the divisor.
    type State = (FlexTensor, [usize; 4], f32);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let (probs, shape, divisor) = ops.state;
        let grad = grads.consume::<Flex>(&ops.node);
        let [parent] = ops.parents;
        if let Some(node) = parent {
            let scores_grad = softmax::backward(&values(&probs), &values(&grad), shape[3], divisor);
            grads.register::<Flex>(node.id, flex_tensor(scores_grad, shape));
        }
    }
}

fn autodiff_attention_softmax(scores: Tensor<Ad, 4>, bias: &[f32], rows: Rows, divisor: f32) -> Tensor<Ad, 4> {
    let shape = scores.dims();
    let scores = scores.into_primitive().tensor();
    let probs = |scores: &FlexTensor| flex_tensor(softmax::forward(&values(scores), bias, rows, divisor), shape);
    let output =
        match AttentionSoftmaxBackward.prepare::<NoCheckpointing>([scores.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let output = probs(&scores.primitive);
                prep.finish((output.clone(), shape, divisor), output)
            }
            OpsKind::UnTracked(prep) => prep.finish(probs(&scores.primitive)),
        };
    Tensor::from_primitive(TensorPrimitive::Float(output))
}

/// Layer normalisation over the last dimension (see [`norm`]), `x` scaled by
/// `gamma` and shifted by `beta`, with its backward to all three (`γ` and `β`
/// only when tracked: training). Under [`Rules::Rescale`] the input's
/// backward gives DeepLift's multipliers (see [`norm::rescaled_backward`]).
/// `None` where no kernel applies.
pub fn layer_norm<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    gamma: Tensor<B, 1>,
    beta: Tensor<B, 1>,
    epsilon: f64,
    rules: Rules,
) -> Option<Tensor<B, D>> {
    let fits = gamma.dims()[0] == x.dims()[D - 1] && gamma.dims() == beta.dims() && gamma.dims()[0] > 0;
    if !applies(&x) || !fits || !pairs_up(rules, x.dims()[0]) {
        return None;
    }
    let epsilon = epsilon as f32;
    match cast::<_, Tensor<Ad, D>>(x) {
        Ok(x) => {
            let gamma = cast::<_, Tensor<Ad, 1>>(gamma).ok()?;
            let beta = cast::<_, Tensor<Ad, 1>>(beta).ok()?;
            cast(autodiff_layer_norm(x, gamma, beta, epsilon, rules)).ok()
        }
        Err(x) => {
            let x = cast::<_, Tensor<Flex, D>>(x).ok()?;
            let gamma = primitive(cast::<_, Tensor<Flex, 1>>(gamma).ok()?);
            let beta = primitive(cast::<_, Tensor<Flex, 1>>(beta).ok()?);
            let shape = x.dims();
            let (y, _) = norm::forward(&values(&primitive(x)), &values(&gamma), &values(&beta), epsilon, false);
            cast(Tensor::<Flex, D>::from_primitive(TensorPrimitive::Float(flex_tensor(y, shape)))).ok()
        }
    }
}

#[derive(Debug)]
struct LayerNormBackward<const D: usize>;

impl<const D: usize> Backward<Flex, 3> for LayerNormBackward<D> {
    /// What the forward saved, γ, the input's shape, and the rules.
    type State = (Arc<norm::Saved>, FlexTensor, [usize; D], Rules);

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let (saved, gamma, shape, rules) = ops.state;
        let grad = grads.consume::<Flex>(&ops.node);
        let [x_node, gamma_node, beta_node] = ops.parents;
        let affine = gamma_node.is_some() || beta_node.is_some();
        let (gamma, grad) = (values(&gamma), values(&grad));
        let (dx, d_affine) = match rules {
            Rules::Plain => norm::backward(&saved, &gamma, &grad, affine),
            Rules::Rescale => {
                // The map is affine in γ and β: their multipliers are their gradients.
                let d_affine = affine.then(|| norm::affine_gradients(&saved, &grad, gamma.len()));
                (norm::rescaled_backward(&saved, &gamma, &grad), d_affine)
            }
        };
        if let Some(node) = x_node {
            grads.register::<Flex>(node.id, flex_tensor(dx, shape));
        }
        if let Some(norm::AffineGradients { gamma, beta }) = d_affine {
            let len = gamma.len();
            if let Some(node) = gamma_node {
                grads.register::<Flex>(node.id, flex_tensor(gamma, [len]));
            }
            if let Some(node) = beta_node {
                grads.register::<Flex>(node.id, flex_tensor(beta, [len]));
            }
        }
    }
}

fn autodiff_layer_norm<const D: usize>(
    x: Tensor<Ad, D>,
    gamma: Tensor<Ad, 1>,
    beta: Tensor<Ad, 1>,
    epsilon: f32,
    rules: Rules,
) -> Tensor<Ad, D> {
    let shape = x.dims();
    let (x, gamma, beta) =
        (x.into_primitive().tensor(), gamma.into_primitive().tensor(), beta.into_primitive().tensor());
    let run = |save: bool| {
        norm::forward(&values(&x.primitive), &values(&gamma.primitive), &values(&beta.primitive), epsilon, save)
    };
    let parents = [x.node.clone(), gamma.node.clone(), beta.node.clone()];
    let output = match LayerNormBackward::<D>.prepare::<NoCheckpointing>(parents).compute_bound().stateful() {
        OpsKind::Tracked(prep) => {
            let (y, saved) = run(true);
            let state = (Arc::new(saved.expect("saved when asked")), gamma.primitive.clone(), shape, rules);
            prep.finish(state, flex_tensor(y, shape))
        }
        OpsKind::UnTracked(prep) => prep.finish(flex_tensor(run(false).0, shape)),
    };
    Tensor::from_primitive(TensorPrimitive::Float(output))
}

/// Self-attention's `softmax(query keyᵀ / divisor + bias) value` over `heads`
/// heads as one kernel (see [`attention`]), with its backward to the three
/// inputs: `query`, `key` and `value` are the projections
/// `[batch, time, heads · d]`, `bias` `[batch, 1, 1, time]` a constant (the
/// padding mask). Returns the context `[batch, time, heads · d]` and the
/// probabilities `[batch, heads, time, time]`, which are values only: no
/// gradient flows back through them (a caller that differentiates through the
/// probabilities runs its own operations). `None` where no kernel applies.
pub fn attention<B: Backend>(
    query: Tensor<B, 3>,
    key: Tensor<B, 3>,
    value: Tensor<B, 3>,
    bias: Tensor<B, 4>,
    heads: usize,
    divisor: f32,
) -> Option<(Tensor<B, 3>, Tensor<B, 4>)> {
    let [batch, time, width] = query.dims();
    let fits =
        heads > 0 && width % heads == 0 && time > 0 && key.dims() == query.dims() && value.dims() == query.dims();
    if !applies(&query) || !fits || bias.dims() != [batch, 1, 1, time] || bias.is_require_grad() {
        return None;
    }
    let dims = attention::Dims { batch, time, heads, head_size: width / heads };
    let bias = constant(bias)?;
    let bias = values(&bias);
    match cast::<_, Tensor<Ad, 3>>(query) {
        Ok(query) => {
            let key = cast::<_, Tensor<Ad, 3>>(key).ok()?;
            let value = cast::<_, Tensor<Ad, 3>>(value).ok()?;
            let (context, probs) = autodiff_attention(dims, [query, key, value], &bias, divisor);
            Some((cast(context).ok()?, cast(probs).ok()?))
        }
        Err(query) => {
            let [query, key, value] = [
                cast::<_, Tensor<Flex, 3>>(query).ok()?,
                cast::<_, Tensor<Flex, 3>>(key).ok()?,
                cast::<_, Tensor<Flex, 3>>(value).ok()?,
            ]
            .map(primitive);
            let (context, probs) =
                attention::forward(dims, &values(&query), &values(&key), &values(&value), &bias, divisor);
            let context =
                Tensor::<Flex, 3>::from_primitive(TensorPrimitive::Float(flex_tensor(context, [batch, time, width])));
            let probs = Tensor::<Flex, 4>::from_primitive(TensorPrimitive::Float(flex_tensor(
                probs,
                [batch, heads, time, time],
            )));
            Some((cast(context).ok()?, cast(probs).ok()?))
        }
    }
}

#[derive(Debug)]
struct AttentionBackward;

/// What the backward pass reads: the three inputs and the probabilities
/// (shared with the graph, not copied).
#[derive(Debug, Clone)]
struct AttentionState {
    dims: attention::Dims,
    divisor: f32,
    inputs: [FlexTensor; 3],
    probs: FlexTensor,
}

impl Backward<Flex, 3> for AttentionBackward {
    type State = AttentionState;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let AttentionState { dims, divisor, inputs: [query, key, value], probs } = ops.state;
        let grad = grads.consume::<Flex>(&ops.node);
        let attention::Gradients { query: dq, key: dk, value: dv } = attention::backward(
            dims,
            &values(&query),
            &values(&key),
            &values(&value),
            &values(&probs),
            &values(&grad),
            divisor,
        );
        let shape = [dims.batch, dims.time, dims.heads * dims.head_size];
        for (parent, gradient) in ops.parents.into_iter().zip([dq, dk, dv]) {
            if let Some(node) = parent {
                grads.register::<Flex>(node.id, flex_tensor(gradient, shape));
            }
        }
    }
}

fn autodiff_attention(
    dims: attention::Dims,
    inputs: [Tensor<Ad, 3>; 3],
    bias: &[f32],
    divisor: f32,
) -> (Tensor<Ad, 3>, Tensor<Ad, 4>) {
    let attention::Dims { batch, time, heads, head_size } = dims;
    let inputs = inputs.map(|input| input.into_primitive().tensor());
    let parents = [inputs[0].node.clone(), inputs[1].node.clone(), inputs[2].node.clone()];
    let [query, key, value] = [0, 1, 2].map(|i| inputs[i].primitive.clone());
    let (context, probs) = attention::forward(dims, &values(&query), &values(&key), &values(&value), bias, divisor);
    let context = flex_tensor(context, [batch, time, heads * head_size]);
    let probs = flex_tensor(probs, [batch, heads, time, time]);
    let output = match AttentionBackward.prepare::<NoCheckpointing>(parents).compute_bound().stateful() {
        OpsKind::Tracked(prep) => {
            let state = AttentionState { dims, divisor, inputs: [query, key, value], probs: probs.clone() };
            prep.finish(state, context)
        }
        OpsKind::UnTracked(prep) => prep.finish(context),
    };
    let probs = Tensor::<Ad, 4>::from_inner(Tensor::from_primitive(TensorPrimitive::Float(probs)));
    (Tensor::from_primitive(TensorPrimitive::Float(output)), probs)
}

/// A dense layer `x W + b` at every position of `x` `[batch, time, inputs]`,
/// each product one over all positions (see [`linear`]): the output, the
/// input's gradient and, while the weights train, the parameter gradients.
/// burn's 3-D `linear` instead runs one product per example (packing the
/// whole weight again for a few dozen rows), and sums one `[inputs, outputs]`
/// weight gradient per example. A row's values do not depend on the other
/// rows of its batch (see [`linear`]), so neither do a method's scores on
/// how it batched its evaluations. `None` on another backend.
pub fn dense<B: Backend>(x: Tensor<B, 3>, weight: Tensor<B, 2>, bias: Option<Tensor<B, 1>>) -> Option<Tensor<B, 3>> {
    if !applies(&x) {
        return None;
    }
    // A layer without a bias (the BiLSTM's attention scorer) adds zeros.
    let bias = bias.unwrap_or_else(|| Tensor::zeros([weight.dims()[1]], &weight.device()));
    match cast::<_, Tensor<Ad, 3>>(x) {
        Ok(x) => {
            let weight = cast::<_, Tensor<Ad, 2>>(weight).ok()?;
            let bias = cast::<_, Tensor<Ad, 1>>(bias).ok()?;
            cast(autodiff_dense(x, weight, bias)).ok()
        }
        Err(x) => {
            let x = primitive(cast::<_, Tensor<Flex, 3>>(x).ok()?);
            let weight = primitive(cast::<_, Tensor<Flex, 2>>(weight).ok()?);
            let bias = primitive(cast::<_, Tensor<Flex, 1>>(bias).ok()?);
            let (shape, outputs) = (x.layout().shape(), weight.layout().shape()[1]);
            let [batch, time, inputs] = [shape[0], shape[1], shape[2]];
            let dims = linear::Dims { rows: batch * time, inputs, outputs };
            let y = linear::forward(dims, &values(&x), &values(&weight), &values(&bias));
            cast(Tensor::<Flex, 3>::from_primitive(TensorPrimitive::Float(flex_tensor(y, [batch, time, dims.outputs]))))
                .ok()
        }
    }
}

#[derive(Debug)]
struct DenseBackward;

/// What the backward pass reads (shared with the graph, not copied): the
/// input for the weight gradient (kept only while the weight trains), the
/// weight for the input gradient.
#[derive(Debug, Clone)]
struct DenseState {
    dims: linear::Dims,
    /// The input's shape, `[batch, time, inputs]`.
    batched_inputs: [usize; 3],
    x: Option<FlexTensor>,
    weight: FlexTensor,
}

impl Backward<Flex, 3> for DenseBackward {
    type State = DenseState;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let DenseState { dims, batched_inputs, x, weight } = ops.state;
        let grad = grads.consume::<Flex>(&ops.node);
        let grad = values(&grad);
        let [x_node, weight_node, bias_node] = ops.parents;
        if let (Some(node), Some(x)) = (weight_node, x) {
            let gradient = linear::weight_gradient(dims, &values(&x), &grad);
            grads.register::<Flex>(node.id, flex_tensor(gradient, [dims.inputs, dims.outputs]));
        }
        if let Some(node) = bias_node {
            grads.register::<Flex>(node.id, flex_tensor(linear::bias_gradient(dims, &grad), [dims.outputs]));
        }
        if let Some(node) = x_node {
            let x_grad = linear::input_gradient(dims, &grad, &values(&weight));
            grads.register::<Flex>(node.id, flex_tensor(x_grad, batched_inputs));
        }
    }
}

fn autodiff_dense(x: Tensor<Ad, 3>, weight: Tensor<Ad, 2>, bias: Tensor<Ad, 1>) -> Tensor<Ad, 3> {
    let [batch, time, inputs] = x.dims();
    let dims = linear::Dims { rows: batch * time, inputs, outputs: weight.dims()[1] };
    let [x, weight, bias] =
        [x.into_primitive().tensor(), weight.into_primitive().tensor(), bias.into_primitive().tensor()];
    let parents = [x.node.clone(), weight.node.clone(), bias.node.clone()];
    // Any weight in the graph (a trained parameter, or one computed from
    // one), not only a leaf marked to train.
    let weight_tracked = !weight.node.requirement.is_none();
    let (x, weight) = (x.primitive, weight.primitive);
    let y = linear::forward(dims, &values(&x), &values(&weight), &values(&bias.primitive));
    let y = flex_tensor(y, [batch, time, dims.outputs]);
    let output = match DenseBackward.prepare::<NoCheckpointing>(parents).compute_bound().stateful() {
        OpsKind::Tracked(prep) => {
            let x = weight_tracked.then_some(x);
            let state = DenseState { dims, batched_inputs: [batch, time, inputs], x, weight };
            prep.finish(state, y)
        }
        OpsKind::UnTracked(prep) => prep.finish(y),
    };
    Tensor::from_primitive(TensorPrimitive::Float(output))
}

/// Attention pooling `Σ_t weights[b, t] · states[b, t]` (see [`pool`]):
/// `states` `[batch, time, width]`, `weights` `[batch, time]`, the context
/// `[batch, width]`, with its backward to both: under [`Rules::Rescale`]
/// (the batch stacking inputs over their references) the product rule's
/// multipliers, from the pair's midpoints. `None` where no kernel applies.
pub fn weighted_sum<B: Backend>(states: Tensor<B, 3>, weights: Tensor<B, 2>, rules: Rules) -> Option<Tensor<B, 2>> {
    let [batch, time, width] = states.dims();
    if !applies(&states) || weights.dims() != [batch, time] || !pairs_up(rules, batch) {
        return None;
    }
    let dims = pool::Dims { batch, time, width };
    match cast::<_, Tensor<Ad, 3>>(states) {
        Ok(states) => {
            let weights = cast::<_, Tensor<Ad, 2>>(weights).ok()?;
            cast(autodiff_weighted_sum(dims, states, weights, rules)).ok()
        }
        Err(states) => {
            let states = primitive(cast::<_, Tensor<Flex, 3>>(states).ok()?);
            let weights = primitive(cast::<_, Tensor<Flex, 2>>(weights).ok()?);
            let context = pool::forward(dims, &values(&states), &values(&weights));
            let context =
                Tensor::<Flex, 2>::from_primitive(TensorPrimitive::Float(flex_tensor(context, [batch, width])));
            cast(context).ok()
        }
    }
}

#[derive(Debug)]
struct PoolBackward;

/// What the backward pass reads: both inputs (shared with the graph), or
/// under DeepLift's rules their midpoints (the product rule's multipliers).
#[derive(Debug, Clone)]
struct PoolState {
    dims: pool::Dims,
    states: FlexTensor,
    weights: FlexTensor,
}

impl Backward<Flex, 2> for PoolBackward {
    type State = PoolState;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let PoolState { dims, states, weights } = ops.state;
        let grad = grads.consume::<Flex>(&ops.node);
        let pool::Gradients { states: d_states, weights: d_weights } =
            pool::backward(dims, &values(&states), &values(&weights), &values(&grad));
        let [states_node, weights_node] = ops.parents;
        if let Some(node) = states_node {
            grads.register::<Flex>(node.id, flex_tensor(d_states, [dims.batch, dims.time, dims.width]));
        }
        if let Some(node) = weights_node {
            grads.register::<Flex>(node.id, flex_tensor(d_weights, [dims.batch, dims.time]));
        }
    }
}

fn autodiff_weighted_sum(
    dims: pool::Dims,
    states: Tensor<Ad, 3>,
    weights: Tensor<Ad, 2>,
    rules: Rules,
) -> Tensor<Ad, 2> {
    let (states, weights) = (states.into_primitive().tensor(), weights.into_primitive().tensor());
    let parents = [states.node.clone(), weights.node.clone()];
    let (states, weights) = (states.primitive, weights.primitive);
    let context = pool::forward(dims, &values(&states), &values(&weights));
    let context = flex_tensor(context, [dims.batch, dims.width]);
    let output = match PoolBackward.prepare::<NoCheckpointing>(parents).compute_bound().stateful() {
        OpsKind::Tracked(prep) => {
            let state = match rules {
                Rules::Plain => PoolState { dims, states, weights },
                Rules::Rescale => PoolState {
                    dims,
                    states: midpoints(&states, [dims.batch, dims.time, dims.width]),
                    weights: midpoints(&weights, [dims.batch, dims.time]),
                },
            };
            prep.finish(state, context)
        }
        OpsKind::UnTracked(prep) => prep.finish(context),
    };
    Tensor::from_primitive(TensorPrimitive::Float(output))
}

/// The exact GELU's derivative `Φ(x) + x φ(x)` of every value in SIMD lanes
/// (see [`activation::gelu_derivative`]), as a constant: DeepLift's
/// slope at a midpoint, which no gradient flows through. `None` where no
/// kernel applies.
pub fn gelu_derivative<B: Backend, const D: usize>(x: Tensor<B, D>) -> Option<Tensor<B, D>> {
    if !applies(&x) {
        return None;
    }
    let shape = x.dims();
    let x = match cast::<_, Tensor<Ad, D>>(x) {
        Ok(x) => x.inner(),
        Err(x) => cast::<_, Tensor<Flex, D>>(x).ok()?,
    };
    let derivative = activation::gelu_derivative(&values(&primitive(x)));
    let derivative = Tensor::<Flex, D>::from_primitive(TensorPrimitive::Float(flex_tensor(derivative, shape)));
    match cast::<_, Tensor<B, D>>(derivative) {
        Ok(derivative) => Some(derivative),
        Err(derivative) => cast(Tensor::<Ad, D>::from_inner(derivative)).ok(),
    }
}

/// `a · b` as matrices (over the last two dimensions, the others equal)
/// under DeepLift's product rule, for a batch stacking inputs over their
/// references: the ordinary product, with the multipliers `∂/∂a = b̄`,
/// `∂/∂b = ā` (each factor's midpoint with its counterpart, see
/// [`rescale::midpoints`]) as its backward, so that `Δ(ab) = Δa·b̄ + ā·Δb`.
/// One product forward and two backward, as an ordinary matmul has; burn's
/// operations need three forward. `None` where no kernel applies.
pub fn rescaled_matmul<B: Backend, const D: usize>(a: Tensor<B, D>, b: Tensor<B, D>) -> Option<Tensor<B, D>> {
    let (a_dims, b_dims) = (a.dims(), b.dims());
    if D < 3
        || a_dims[..D - 2] != b_dims[..D - 2]
        || a_dims[D - 1] != b_dims[D - 2]
        || !pairs_up(Rules::Rescale, a_dims[0])
        || !applies(&a)
    {
        return None;
    }
    let (a, b) = match (cast::<_, Tensor<Ad, D>>(a), cast::<_, Tensor<Ad, D>>(b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(a), Err(b)) => {
            let (a, b) = (cast::<_, Tensor<Flex, D>>(a).ok()?, cast::<_, Tensor<Flex, D>>(b).ok()?);
            return cast(a.matmul(b)).ok();
        }
        _ => return None,
    };
    let (a, b) = (a.into_primitive().tensor(), b.into_primitive().tensor());
    let product = Flex::float_matmul(a.primitive.clone(), b.primitive.clone());
    let output = match RescaledMatmulBackward::<D>
        .prepare::<NoCheckpointing>([a.node.clone(), b.node.clone()])
        .compute_bound()
        .stateful()
    {
        OpsKind::Tracked(prep) => {
            let state = (midpoints(&a.primitive, a_dims), midpoints(&b.primitive, b_dims));
            prep.finish(state, product)
        }
        OpsKind::UnTracked(prep) => prep.finish(product),
    };
    cast(Tensor::<Ad, D>::from_primitive(TensorPrimitive::Float(output))).ok()
}

/// Each value's midpoint with its counterpart (see [`rescale::midpoints`]).
fn midpoints<const D: usize>(tensor: &FlexTensor, shape: [usize; D]) -> FlexTensor {
    flex_tensor(rescale::midpoints(&values(tensor)), shape)
}

#[derive(Debug)]
struct RescaledMatmulBackward<const D: usize>;

impl<const D: usize> Backward<Flex, 2> for RescaledMatmulBackward<D> {
    /// The midpoints `ā` and `b̄`.
    type State = (FlexTensor, FlexTensor);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let (a_mean, b_mean) = ops.state;
        let grad = grads.consume::<Flex>(&ops.node);
        let [a, b] = ops.parents;
        if let Some(node) = a {
            grads.register::<Flex>(node.id, Flex::float_matmul(grad.clone(), Flex::float_transpose(b_mean)));
        }
        if let Some(node) = b {
            grads.register::<Flex>(node.id, Flex::float_matmul(Flex::float_transpose(a_mean), grad));
        }
    }
}

/// DeepLift's softmax rule along the last dimension (see
/// [`softmax::rescaled`]) for a batch stacking inputs over their
/// references: the probabilities, with the rule's multipliers as their
/// backward. `None` where no kernel applies.
pub fn rescaled_softmax<B: Backend, const D: usize>(x: Tensor<B, D>) -> Option<Tensor<B, D>> {
    let shape = x.dims();
    let len = shape[D - 1];
    let count = shape.iter().product::<usize>() / len.max(1);
    if len == 0 || count == 0 {
        return None;
    }
    // No mask: one row of zeros shared by every row.
    rescaled_rows(x, &vec![0.0; len], Rows { len, rows_per_bias: count }, 1.0)
}

/// [`rescaled_softmax`] of attention's `scores / divisor + bias` (shapes as
/// in [`attention_softmax`]) in one pass per row: DeepLift's rule for the
/// probabilities, its multipliers flowing back to the scores. `None` where no
/// kernel applies, or the bias has another shape or is tracked.
pub fn rescaled_attention_softmax<B: Backend>(
    scores: Tensor<B, 4>,
    bias: Tensor<B, 4>,
    divisor: f32,
) -> Option<Tensor<B, 4>> {
    let [batch, heads, queries, keys] = scores.dims();
    if bias.dims() != [batch, 1, 1, keys] || bias.is_require_grad() || keys == 0 || heads * queries == 0 {
        return None;
    }
    let bias = constant(bias)?;
    rescaled_rows(scores, &values(&bias), Rows { len: keys, rows_per_bias: heads * queries }, divisor)
}

/// DeepLift's softmax rule over rows of `x / divisor + bias` (see
/// [`softmax::rescaled`]), on either Flex backend.
fn rescaled_rows<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    bias: &[f32],
    rows: Rows,
    divisor: f32,
) -> Option<Tensor<B, D>> {
    let shape = x.dims();
    if !applies(&x) || !pairs_up(Rules::Rescale, shape[0]) {
        return None;
    }
    let len = rows.len;
    let probabilities =
        |kept: &[f32]| -> Vec<f32> { kept.chunks(3 * len).flat_map(|row| &row[..len]).copied().collect() };
    unary(
        x,
        |x| {
            let x = x.into_primitive().tensor();
            let kept = softmax::rescaled(&values(&x.primitive), bias, rows, divisor);
            let p = flex_tensor(probabilities(&kept), shape);
            let output = match RescaledSoftmaxBackward::<D>
                .prepare::<NoCheckpointing>([x.node.clone()])
                .compute_bound()
                .stateful()
            {
                OpsKind::Tracked(prep) => prep.finish((Arc::new(kept), shape, divisor), p),
                OpsKind::UnTracked(prep) => prep.finish(p),
            };
            Tensor::from_primitive(TensorPrimitive::Float(output))
        },
        |x, _| flex_tensor(probabilities(&softmax::rescaled(&values(x), bias, rows, divisor)), shape),
    )
}

#[derive(Debug)]
struct RescaledSoftmaxBackward<const D: usize>;

impl<const D: usize> Backward<Flex, 1> for RescaledSoftmaxBackward<D> {
    /// The forward's `[p | m | w]` rows, the shape and the divisor.
    type State = (Arc<Vec<f32>>, [usize; D], f32);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let (kept, shape, divisor) = ops.state;
        let grad = grads.consume::<Flex>(&ops.node);
        if let [Some(node)] = ops.parents {
            let dx = softmax::rescaled_backward(&kept, &values(&grad), shape[D - 1], divisor);
            grads.register::<Flex>(node.id, flex_tensor(dx, shape));
        }
    }
}
