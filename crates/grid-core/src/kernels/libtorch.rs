//! Fused blocks on LibTorch: the block's operations are torch's, recorded
//! under torch's own autograd, and the block is one node of burn's graph
//! whose backward runs torch's recorded backward. burn's autodiff over
//! burn-tch otherwise makes one FFI call and one allocation per operation,
//! forward and backward, and keeps every intermediate alive (BENCHMARKS,
//! "LibTorch on the CPU"); inside a block torch keeps only what its own
//! backward needs, and picks its fused kernels (`scaled_dot_product_attention`,
//! `native_layer_norm`, `addmm`).
//!
//! Only `LibTorch<f32>` and its autodiff wrapper get blocks; every other
//! backend (and `GRID_KERNELS=burn`) gets `None` and runs the model's own
//! operations.

use std::any::TypeId;

use burn::backend::Autodiff;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::prelude::*;
use burn::tensor::TensorPrimitive;
use burn_tch::{LibTorch, TchTensor};

use super::cast;
use super::encoder::{Activation, EncoderLayer};

type Torch = LibTorch<f32>;
type Ad = Autodiff<Torch, NoCheckpointing>;
/// A tracked tensor of `Ad`: its node and its LibTorch tensor.
type Tracked = burn::tensor::ops::FloatTensor<Ad>;

/// The layer's inputs in the order the block takes them: `x`, then the
/// sixteen parameters.
const LAYER_INPUTS: usize = 17;

/// Whether the blocks here run for this tensor: LibTorch (or its autodiff
/// wrapper), f32, kernels not turned off.
pub fn applies<B: Backend, const D: usize>(tensor: &Tensor<B, D>) -> bool {
    let backend = TypeId::of::<B>();
    super::enabled()
        && tensor.dtype() == burn::tensor::DType::F32
        && (backend == TypeId::of::<Torch>() || backend == TypeId::of::<Ad>())
}

/// A tensor of `B` as `Ad`'s (node and LibTorch tensor), when `B` is `Ad`.
fn tracked<B: Backend, const D: usize>(tensor: Tensor<B, D>) -> Option<Tracked> {
    cast::<_, Tensor<Ad, D>>(tensor).ok().map(|t| t.into_primitive().tensor())
}

/// A tensor of `B` as LibTorch's, when `B` is LibTorch.
fn plain<B: Backend, const D: usize>(tensor: Tensor<B, D>) -> Option<TchTensor> {
    cast::<_, Tensor<Torch, D>>(tensor).ok().map(|t| t.into_primitive().tensor())
}

/// A constant input's LibTorch tensor (the padding bias), from either side.
fn constant<B: Backend, const D: usize>(tensor: Tensor<B, D>) -> Option<tch::Tensor> {
    match cast::<_, Tensor<Ad, D>>(tensor) {
        Ok(tensor) => Some(tensor.inner().into_primitive().tensor().tensor),
        Err(tensor) => plain(tensor).map(|t| t.tensor),
    }
}

/// The sixteen parameters of `layer`, each through `$take`, in block order.
macro_rules! parameters {
    ($layer:expr, $take:ident) => {{
        let l = $layer;
        [
            $take(l.query.weight)?,
            $take(l.query.bias)?,
            $take(l.key.weight)?,
            $take(l.key.bias)?,
            $take(l.value.weight)?,
            $take(l.value.bias)?,
            $take(l.attention_output.weight)?,
            $take(l.attention_output.bias)?,
            $take(l.attention_norm.gamma)?,
            $take(l.attention_norm.beta)?,
            $take(l.intermediate.weight)?,
            $take(l.intermediate.bias)?,
            $take(l.output.weight)?,
            $take(l.output.bias)?,
            $take(l.output_norm.gamma)?,
            $take(l.output_norm.beta)?,
        ]
    }};
}

/// What the block needs besides tensors.
#[derive(Debug, Clone, Copy)]
struct LayerShape {
    heads: i64,
    activation: Activation,
    epsilons: [f64; 2],
    /// Attention probabilities, attention output, feed-forward output; all 0
    /// outside training.
    dropout: [f64; 3],
    /// The float type of the products and attention (`--precision`).
    products: tch::Kind,
}

impl LayerShape {
    fn of<B: Backend>(layer: &EncoderLayer<B>, training: bool) -> Self {
        let dropout = [layer.attention_dropout, layer.attention_output_dropout, layer.output_dropout];
        Self {
            heads: layer.heads as i64,
            activation: layer.activation,
            epsilons: [layer.attention_norm.epsilon, layer.output_norm.epsilon],
            dropout: if training { dropout } else { [0.0; 3] },
            products: products_kind(),
        }
    }
}

/// bf16 under [`super::with_bf16_products`], else f32.
fn products_kind() -> tch::Kind {
    if super::bf16_products() { tch::Kind::BFloat16 } else { tch::Kind::Float }
}

/// `t` in `kind` (itself when it is already).
fn in_kind(t: &tch::Tensor, kind: tch::Kind) -> tch::Tensor {
    if t.kind() == kind { t.shallow_clone() } else { t.to_kind(kind) }
}

/// See [`super::encoder_layer`].
pub fn encoder_layer<B: Backend>(
    x: Tensor<B, 3>,
    mask_bias: Tensor<B, 4>,
    layer: EncoderLayer<B>,
    training: bool,
) -> Option<Tensor<B, 3>> {
    if !applies(&x) || layer.heads == 0 || !x.dims()[2].is_multiple_of(layer.heads) {
        return None;
    }
    let shape = LayerShape::of(&layer, training);
    let bias = constant(mask_bias)?;
    match cast::<_, Tensor<Ad, 3>>(x) {
        Ok(x) => {
            let parameters = parameters!(layer, tracked);
            let mut inputs = Vec::with_capacity(LAYER_INPUTS);
            inputs.push(x.into_primitive().tensor());
            inputs.extend(parameters);
            cast(torch_block::<LAYER_INPUTS, 3>(inputs, |inputs, _| layer_forward(inputs, &bias, shape))).ok()
        }
        Err(x) => {
            let mut inputs = vec![plain(x)?];
            inputs.extend(parameters!(layer, plain));
            cast(plain_block::<3>(&inputs, |inputs, _| layer_forward(inputs, &bias, shape))).ok()
        }
    }
}

/// The layer in torch's operations: `inputs` are `x` and the sixteen
/// parameters in [`parameters!`]'s order, weights `[in, out]`.
fn layer_forward(inputs: &[&tch::Tensor], bias: &tch::Tensor, shape: LayerShape) -> tch::Tensor {
    let &[x, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, w2, b2, g2, b2n] = inputs else {
        unreachable!("the block takes {LAYER_INPUTS} inputs")
    };
    let (batch, time, hidden) = x.size3().expect("[batch, time, hidden]");
    let head_size = hidden / shape.heads;
    // burn's weights are `[in, out]`: torch's `linear` takes `[out, in]`, so a
    // transposed view (no copy; the GEMM reads it transposed).
    // Products in `shape.products`; a residual sum with the f32 input
    // promotes back to f32, so layer norms run in f32 (as under autocast).
    let low = |t: &tch::Tensor| in_kind(t, shape.products);
    let dense = |x: &tch::Tensor, w: &tch::Tensor, b: &tch::Tensor| low(x).linear(&low(w).tr(), Some(&low(b)));
    let heads = |t: tch::Tensor| t.view([batch, time, shape.heads, head_size]).transpose(1, 2);
    let dropout = |t: tch::Tensor, p: f64| if p > 0.0 { t.dropout(p, true) } else { t };
    let [p_attention, p_attention_output, p_output] = shape.dropout;
    let (q, k, v) = (heads(dense(x, wq, bq)), heads(dense(x, wk, bk)), heads(dense(x, wv, bv)));
    let context =
        tch::Tensor::scaled_dot_product_attention(&q, &k, &v, Some(low(bias)), p_attention, false, None::<f64>, false);
    let context = context.transpose(1, 2).reshape([batch, time, hidden]);
    let attended = (dropout(dense(&context, wo, bo), p_attention_output) + x).layer_norm(
        [hidden],
        Some(g1),
        Some(b1),
        shape.epsilons[0],
        true,
    );
    let inner = dense(&attended, wi, bi);
    let inner = match shape.activation {
        Activation::Gelu => inner.gelu("none"),
        Activation::GeluTanh => inner.gelu("tanh"),
        Activation::Relu => inner.relu(),
    };
    (dropout(dense(&inner, w2, b2), p_output) + attended).layer_norm(
        [hidden],
        Some(g2),
        Some(b2n),
        shape.epsilons[1],
        true,
    )
}

/// A block of torch operations as one node of burn's graph: `N` inputs
/// (tracked or not), the block's output, and its backward from torch's
/// record of the forward.
#[derive(Debug)]
struct TorchBlock<const N: usize>;

/// torch's record of one forward: the leaves it differentiates against (one
/// per input burn tracks) and the output with its graph. `guards` hold
/// burn's handles on the inputs and the output, so burn never updates their
/// storage in place while torch's graph still reads it.
struct Recorded {
    leaves: Vec<Option<tch::Tensor>>,
    output: tch::Tensor,
    guards: Vec<TchTensor>,
}

impl Clone for Recorded {
    fn clone(&self) -> Self {
        Self {
            leaves: self.leaves.iter().map(|l| l.as_ref().map(tch::Tensor::shallow_clone)).collect(),
            output: self.output.shallow_clone(),
            guards: self.guards.clone(),
        }
    }
}

impl std::fmt::Debug for Recorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorded").field("output", &self.output.size()).finish_non_exhaustive()
    }
}

impl<const N: usize> Backward<Torch, N> for TorchBlock<N> {
    type State = Recorded;

    fn backward(self, ops: Ops<Self::State, N>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let Recorded { leaves, output, guards } = ops.state;
        let grad = grads.consume::<Torch>(&ops.node);
        let mut ids = Vec::new();
        let mut wanted = Vec::new();
        for (parent, leaf) in ops.parents.iter().zip(&leaves) {
            if let (Some(node), Some(leaf)) = (parent, leaf) {
                ids.push(node.id);
                wanted.push(leaf);
            }
        }
        if ids.is_empty() {
            return;
        }
        // torch's engine seeds its roots with ones: the root `output · grad`
        // makes the seed `grad`.
        let root = &output * &grad.tensor;
        let gradients = tch::Tensor::run_backward(&[root], &wanted, false, false);
        drop(guards);
        for (id, gradient) in ids.into_iter().zip(gradients) {
            grads.register::<Torch>(id, TchTensor::new(gradient));
        }
    }
}

/// `block` on `inputs` as one node: recorded under torch's autograd against
/// the inputs burn tracks, or run without a record when it tracks none.
/// `block` gets the inputs in order and whether a backward will follow.
fn torch_block<const N: usize, const D: usize>(
    inputs: Vec<Tracked>,
    block: impl Fn(&[&tch::Tensor], bool) -> tch::Tensor,
) -> Tensor<Ad, D> {
    let nodes: [_; N] =
        inputs.iter().map(|t| t.node.clone()).collect::<Vec<_>>().try_into().expect("the block's inputs");
    let output = match TorchBlock::<N>.prepare::<NoCheckpointing>(nodes).compute_bound().stateful() {
        OpsKind::Tracked(prep) => {
            let leaves: Vec<Option<tch::Tensor>> = inputs
                .iter()
                .map(|t| (!t.node.requirement.is_none()).then(|| t.primitive.tensor.detach().set_requires_grad(true)))
                .collect();
            let operands: Vec<&tch::Tensor> =
                inputs.iter().zip(&leaves).map(|(t, leaf)| leaf.as_ref().unwrap_or(&t.primitive.tensor)).collect();
            let output = block(&operands, true);
            let result = TchTensor::new(output.detach());
            let mut guards: Vec<TchTensor> = inputs.iter().map(|t| t.primitive.clone()).collect();
            guards.push(result.clone());
            prep.finish(Recorded { leaves, output, guards }, result)
        }
        OpsKind::UnTracked(prep) => {
            let operands: Vec<&tch::Tensor> = inputs.iter().map(|t| &t.primitive.tensor).collect();
            let output = tch::no_grad(|| block(&operands, false));
            prep.finish(TchTensor::new(output))
        }
    };
    Tensor::from_primitive(TensorPrimitive::Float(output))
}

/// `block` on plain LibTorch tensors, without a record.
fn plain_block<const D: usize>(
    inputs: &[TchTensor],
    block: impl Fn(&[&tch::Tensor], bool) -> tch::Tensor,
) -> Tensor<Torch, D> {
    let operands: Vec<&tch::Tensor> = inputs.iter().map(|t| &t.tensor).collect();
    let output = tch::no_grad(|| block(&operands, false));
    Tensor::from_primitive(TensorPrimitive::Float(TchTensor::new(output)))
}

/// See [`super::lstm_block`].
pub fn lstm_block<B: Backend>(
    x: Tensor<B, 3>,
    weights: super::LstmWeights<B>,
    reversed_by: Option<Tensor<B, 2>>,
) -> Option<Tensor<B, 3>> {
    if !applies(&x) {
        return None;
    }
    let mask = match reversed_by {
        Some(mask) => Some(constant(mask)?),
        None => None,
    };
    let products = products_kind();
    let block = |inputs: &[&tch::Tensor], recorded: bool| lstm_forward(inputs, mask.as_ref(), recorded, products);
    let super::LstmWeights { weight_ih, weight_hh, bias_ih, bias_hh } = weights;
    match cast::<_, Tensor<Ad, 3>>(x) {
        Ok(x) => {
            let inputs = vec![
                x.into_primitive().tensor(),
                tracked(weight_ih)?,
                tracked(weight_hh)?,
                tracked(bias_ih)?,
                tracked(bias_hh)?,
            ];
            cast(torch_block::<LSTM_INPUTS, 3>(inputs, block)).ok()
        }
        Err(x) => {
            let inputs = [plain(x)?, plain(weight_ih)?, plain(weight_hh)?, plain(bias_ih)?, plain(bias_hh)?];
            cast(plain_block::<3>(&inputs, block)).ok()
        }
    }
}

/// The LSTM's inputs: `x` and the four parameters.
const LSTM_INPUTS: usize = 5;

/// torch's LSTM (cuDNN's on CUDA) over `x` `[batch, time, in]` from zero
/// states, every hidden state `[batch, time, h]`. With `reversed_by` (the
/// `[batch, time]` padding mask), each row's real tokens run from last to
/// first: they are reversed in place (padding stays at the end), run
/// forward, and the states put back at their tokens' positions. `recorded`:
/// a backward follows (cuDNN keeps what it needs only in training mode).
fn lstm_forward(
    inputs: &[&tch::Tensor],
    reversed_by: Option<&tch::Tensor>,
    recorded: bool,
    products: tch::Kind,
) -> tch::Tensor {
    let &[x, weight_ih, weight_hh, bias_ih, bias_hh] = inputs else {
        unreachable!("the LSTM takes {LSTM_INPUTS} inputs")
    };
    let (batch, time, width) = x.size3().expect("[batch, time, in]");
    let hidden = weight_hh.size()[0];
    let index = reversed_by.map(|mask| reversal_index(mask, time));
    let along_time = |t: &tch::Tensor, index: &tch::Tensor, width: i64| {
        t.gather(1, &index.unsqueeze(-1).expand([batch, time, width], false), false)
    };
    let input = match &index {
        Some(index) => along_time(x, index, width),
        None => x.shallow_clone(),
    };
    let input = in_kind(&input, products);
    let zeros = tch::Tensor::zeros([1, batch, hidden], (products, x.device()));
    // burn's `[in, 4h]` weights as torch's `[4h, in]`; cuDNN wants them in one
    // contiguous buffer, so they are made contiguous here.
    let weight_ih = in_kind(weight_ih, products).tr().contiguous();
    let weight_hh = in_kind(weight_hh, products).tr().contiguous();
    let (bias_ih, bias_hh) = (in_kind(bias_ih, products), in_kind(bias_hh, products));
    let params = [&weight_ih, &weight_hh, &bias_ih, &bias_hh];
    let (states, _, _) = input.lstm(&[&zeros, &zeros], &params, true, 1, 0.0, recorded, false, true);
    let states = in_kind(&states, x.kind());
    match &index {
        Some(index) => along_time(&states, index, hidden),
        None => states,
    }
}

/// Per row, the time permutation that reverses the real tokens and leaves
/// the padding in place (its own inverse), `[batch, time]` int64.
fn reversal_index(mask: &tch::Tensor, time: i64) -> tch::Tensor {
    let lengths = mask.sum_dim_intlist([1i64].as_slice(), true, tch::Kind::Float).round().to_kind(tch::Kind::Int64);
    let positions = tch::Tensor::arange(time, (tch::Kind::Int64, mask.device())).unsqueeze(0);
    let reversed = &lengths - &positions - 1;
    reversed.where_self(&positions.lt_tensor(&lengths), &positions.expand_as(&reversed))
}

/// Whether AdamW's update runs here: the plain LibTorch backend (the
/// optimizer sees the inner backend), kernels not turned off.
pub fn adamw_applies<B: Backend>() -> bool {
    super::enabled() && TypeId::of::<B>() == TypeId::of::<Torch>()
}

/// A tensor burn may share with other handles made safe to update in place:
/// itself when no other handle holds its storage, else a copy.
fn owned(tensor: TchTensor) -> TchTensor {
    if tensor.can_mut() { tensor } else { TchTensor::new(tensor.tensor.copy()) }
}

/// See [`super::adamw_step`]. Eight torch calls, two temporaries:
/// `m ← m + (1−β₁)(g − m)`, `v ← v + (1−β₂)(g² − v)`, `θ ← θ(1 − lr·λ)`, then
/// `θ ← θ − lr/(1−β₁ᵗ) · m / (√v/√(1−β₂ᵗ) + ε)` as one `addcdiv_` with the
/// step folded into the denominator.
pub fn adamw_step<B: Backend, const D: usize>(
    adamw: super::AdamW,
    lr: f64,
    parameter: Tensor<B, D>,
    grad: Tensor<B, D>,
    moments: Option<super::Moments<B, D>>,
) -> Option<(Tensor<B, D>, super::Moments<B, D>)> {
    if !adamw_applies::<B>() {
        return None;
    }
    let parameter = owned(plain(parameter)?);
    let grad = plain(grad)?;
    let (first, second, time) = match moments {
        Some(m) => (owned(plain(m.first)?), owned(plain(m.second)?), m.time + 1),
        None => (TchTensor::new(grad.tensor.zeros_like()), TchTensor::new(grad.tensor.zeros_like()), 1),
    };
    tch::no_grad(|| {
        let (mut theta, mut m, mut v) =
            (parameter.tensor.shallow_clone(), first.tensor.shallow_clone(), second.tensor.shallow_clone());
        let _ = m.lerp_(&grad.tensor, 1.0 - adamw.beta_1);
        let _ = v.lerp_(&grad.tensor.square(), 1.0 - adamw.beta_2);
        if lr == 0.0 {
            return; // moments only: a zero step (and no division by the rate)
        }
        if adamw.weight_decay != 0.0 {
            let _ = theta.g_mul_scalar_(1.0 - lr * adamw.weight_decay);
        }
        let correction_1 = 1.0 - adamw.beta_1.powi(time as i32);
        let correction_2 = 1.0 - adamw.beta_2.powi(time as i32);
        // −(1−β₁ᵗ)/lr · (√v/√(1−β₂ᵗ) + ε): θ + m / that is the step.
        let scale = -correction_1 / lr;
        let mut denominator = v.sqrt();
        let _ = denominator.g_mul_scalar_(scale / correction_2.sqrt());
        let _ = denominator.g_add_scalar_(scale * adamw.epsilon);
        let _ = theta.addcdiv_(&m, &denominator);
    });
    let tensor = |t: TchTensor| cast(Tensor::<Torch, D>::from_primitive(TensorPrimitive::Float(t))).ok();
    Some((tensor(parameter)?, super::Moments { first: tensor(first)?, second: tensor(second)?, time }))
}

#[cfg(test)]
mod tests {
    use burn::module::{Module, ModuleVisitor, Param};
    use burn::tensor::backend::AutodiffBackend;

    use crate::backend::CpuAutodiff;
    use crate::backend::libtorch::{LibTorch, LibTorchAutodiff};
    use crate::model::bert::BertClassifier;
    use crate::model::toy::{bert_on, bilstm_on, three_examples};
    use crate::model::{Classifier, TokenBatch};

    use super::*;

    /// Every parameter's gradient, in the model's order.
    struct Gradients<'a, B: AutodiffBackend> {
        grads: &'a B::Gradients,
        found: Vec<Vec<f32>>,
    }

    impl<B: AutodiffBackend> ModuleVisitor<B> for Gradients<'_, B> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            let grad = param.val().grad(self.grads).expect("every parameter has a gradient");
            self.found.push(grad.into_data().to_vec::<f32>().expect("f32"));
        }
    }

    /// Logits and every parameter's gradient of `Σ logits · probe` on a
    /// padded batch of three examples (`ids`).
    fn training_pass<B: AutodiffBackend, M: Classifier<B> + Module<B>>(
        model: &M,
        ids: &[Vec<u32>],
        device: &B::Device,
    ) -> (Vec<f32>, Vec<Vec<f32>>) {
        let sequences: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
        let batch = TokenBatch::<B>::from_sequences(&sequences, 0, device);
        let logits = model.logits(&batch);
        let outputs = logits.dims()[1];
        let probe: Vec<f32> = (0..3 * outputs).map(|i| (i as f32 * 0.9).sin() + 0.3).collect();
        let probe = Tensor::<B, 1>::from_floats(probe.as_slice(), device).reshape([3, outputs]);
        let grads = (logits.clone() * probe).sum().backward();
        let mut visitor = Gradients::<B> { grads: &grads, found: Vec::new() };
        model.visit(&mut visitor);
        (logits.into_data().to_vec::<f32>().unwrap(), visitor.found)
    }

    /// The same logits and the same gradient for every parameter, to float
    /// rounding; returns the largest gradient difference.
    fn assert_same_training(torch: (Vec<f32>, Vec<Vec<f32>>), flex: (Vec<f32>, Vec<Vec<f32>>)) -> f32 {
        let ((torch_logits, torch_grads), (flex_logits, flex_grads)) = (torch, flex);
        for (a, b) in torch_logits.iter().zip(&flex_logits) {
            assert!((a - b).abs() <= 1e-5 * b.abs().max(1.0), "logits: libtorch {a} vs flex {b}");
        }
        assert_eq!(torch_grads.len(), flex_grads.len());
        let mut worst = 0f32;
        for (index, (torch, flex)) in torch_grads.iter().zip(&flex_grads).enumerate() {
            assert_eq!(torch.len(), flex.len(), "parameter {index}");
            // The key bias has no gradient (softmax ignores a shift per query): noise
            // around 0, judged against a floor.
            let scale = flex.iter().fold(1e-2f32, |m, v| m.max(v.abs()));
            for (a, b) in torch.iter().zip(flex) {
                let difference = (a - b).abs() / scale;
                worst = worst.max(difference);
                assert!(difference <= 1e-4, "parameter {index}: libtorch {a} vs flex {b} (scale {scale})");
            }
        }
        worst
    }

    /// The fused layer trains as Flex does: the same logits and the same
    /// gradient for every parameter of the two-layer BERT (embeddings, both
    /// layers' sixteen each, pooler, head) on a padded batch.
    #[test]
    fn the_fused_layer_trains_as_flex_does() {
        let cpu = burn_tch::LibTorchDevice::Cpu;
        let x = Tensor::<LibTorchAutodiff, 3>::zeros([1, 2, 4], &cpu);
        assert!(applies(&x), "the LibTorch block runs in this test");
        let (_, ids) = three_examples();
        let torch = training_pass(&bert_on::<LibTorchAutodiff>(12, 2, &cpu), &ids, &cpu);
        let flex = training_pass(&bert_on::<CpuAutodiff>(12, 2, &Default::default()), &ids, &Default::default());
        let worst = assert_same_training(torch, flex);
        eprintln!("largest gradient difference relative to its parameter's largest: {worst:e}");
    }

    /// torch's LSTM trains as Flex's recurrence does, both directions (the
    /// backward one over each row's real tokens reversed) on a padded batch:
    /// the same logits and every parameter's gradient.
    #[test]
    fn the_lstm_block_trains_as_flex_does() {
        let cpu = burn_tch::LibTorchDevice::Cpu;
        let (ids, _) = three_examples();
        let torch = training_pass(&bilstm_on::<LibTorchAutodiff>(11, &cpu), &ids, &cpu);
        let flex = training_pass(&bilstm_on::<CpuAutodiff>(11, &Default::default()), &ids, &Default::default());
        let worst = assert_same_training(torch, flex);
        eprintln!("largest gradient difference relative to its parameter's largest: {worst:e}");
    }

    /// Under `--precision bf16-mixed` both blocks compute what f32 does to
    /// bf16's rounding (8 bits of mantissa): logits within 3e-2, each
    /// parameter's gradient within 5% (L2, relative), the gradients f32.
    #[test]
    fn bf16_products_round_what_f32_computes() {
        let cpu = burn_tch::LibTorchDevice::Cpu;
        let (lstm_ids, bert_ids) = three_examples();
        let pairs = [
            (
                training_pass(&bert_on::<LibTorchAutodiff>(12, 2, &cpu), &bert_ids, &cpu),
                super::super::with_bf16_products(|| {
                    assert!(super::super::bf16_products());
                    training_pass(&bert_on::<LibTorchAutodiff>(12, 2, &cpu), &bert_ids, &cpu)
                }),
            ),
            (
                training_pass(&bilstm_on::<LibTorchAutodiff>(11, &cpu), &lstm_ids, &cpu),
                super::super::with_bf16_products(|| {
                    training_pass(&bilstm_on::<LibTorchAutodiff>(11, &cpu), &lstm_ids, &cpu)
                }),
            ),
        ];
        assert!(!super::super::bf16_products(), "the setting ends with its scope");
        for ((f32_logits, f32_grads), (mixed_logits, mixed_grads)) in pairs {
            assert_ne!(f32_logits, mixed_logits, "the products ran in bf16");
            for (a, b) in f32_logits.iter().zip(&mixed_logits) {
                assert!((a - b).abs() <= 3e-2 * a.abs().max(1.0), "logits: f32 {a} vs bf16-mixed {b}");
            }
            for (index, (a, b)) in f32_grads.iter().zip(&mixed_grads).enumerate() {
                let norm = a.iter().map(|v| v * v).sum::<f32>().sqrt();
                let error = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f32>().sqrt();
                // Gradients that are float noise in f32 (the key bias) have no direction to keep.
                if norm > 1e-4 {
                    assert!(error <= 5e-2 * norm, "parameter {index}: relative L2 error {}", error / norm);
                }
            }
        }
    }

    /// The block runs for LibTorch with or without autodiff, with the same
    /// values, and not for another backend.
    #[test]
    fn the_block_runs_on_libtorch_only() {
        let cpu = burn_tch::LibTorchDevice::Cpu;
        let model = bert_on::<LibTorch>(5, 2, &cpu);
        let tracked = bert_on::<LibTorchAutodiff>(5, 2, &cpu);
        let (_, ids) = three_examples();
        let sequences: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
        let plain_batch = TokenBatch::<LibTorch>::from_sequences(&sequences, 0, &cpu);
        let tracked_batch = TokenBatch::<LibTorchAutodiff>::from_sequences(&sequences, 0, &cpu);
        let plain = model.forward(model.bert.embeddings.words(plain_batch.ids), plain_batch.mask, None);
        let through_autodiff =
            tracked.forward(tracked.bert.embeddings.words(tracked_batch.ids), tracked_batch.mask, None);
        // Recorded for a backward or not, torch may pick other kernels: the
        // same values to float rounding.
        let plain = plain.into_data().to_vec::<f32>().unwrap();
        let through_autodiff = through_autodiff.inner().into_data().to_vec::<f32>().unwrap();
        for (a, b) in plain.iter().zip(&through_autodiff) {
            assert!((a - b).abs() <= 1e-5 * a.abs().max(1.0), "{plain:?} vs {through_autodiff:?}");
        }
        let flex = Tensor::<CpuAutodiff, 3>::zeros([1, 2, 4], &Default::default());
        assert!(!applies(&flex));
    }

    /// With dropout in training the block draws torch's masks: outputs
    /// change, stay finite, and the gradient reaches the input.
    #[test]
    fn training_dropout_is_drawn_inside_the_block() {
        use crate::model::noise::Noise;
        use rand::SeedableRng;
        let cpu = burn_tch::LibTorchDevice::Cpu;
        let mut config = crate::model::bert::config::BertConfig::small(30, 16, 2, 2, 32, 32);
        config.hidden_dropout_prob = 0.3;
        config.attention_probs_dropout_prob = 0.3;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let model = BertClassifier::<LibTorchAutodiff>::new(&config, 2, &mut rng, &cpu);
        let batch = TokenBatch::<LibTorchAutodiff>::from_sequences(&[&[2, 5, 7, 3], &[2, 9, 3]], 0, &cpu);
        let words = model.bert.embeddings.words(batch.ids.clone()).detach().require_grad();
        let evaluation = model.forward(words.clone(), batch.mask.clone(), None);
        let mut noise_rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        let training = model.forward(words.clone(), batch.mask.clone(), Some(&mut Noise::new(&mut noise_rng)));
        let values = |t: Tensor<LibTorchAutodiff, 2>| t.inner().into_data().to_vec::<f32>().unwrap();
        let (evaluation, training_values) = (values(evaluation), values(training.clone()));
        assert!(training_values.iter().all(|v| v.is_finite()));
        assert_ne!(evaluation, training_values, "dropout changed the training pass");
        let grads = training.sum().backward();
        let grad = words.grad(&grads).expect("the input's gradient").into_data().to_vec::<f32>().unwrap();
        assert!(grad.iter().any(|g| *g != 0.0) && grad.iter().all(|g| g.is_finite()));
    }
}
