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
const INPUTS: usize = 17;

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
}

impl LayerShape {
    fn of<B: Backend>(layer: &EncoderLayer<B>, training: bool) -> Self {
        let dropout = [layer.attention_dropout, layer.attention_output_dropout, layer.output_dropout];
        Self {
            heads: layer.heads as i64,
            activation: layer.activation,
            epsilons: [layer.attention_norm.epsilon, layer.output_norm.epsilon],
            dropout: if training { dropout } else { [0.0; 3] },
        }
    }
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
            let mut inputs = Vec::with_capacity(INPUTS);
            inputs.push(x.into_primitive().tensor());
            inputs.extend(parameters);
            cast(autodiff_layer(inputs, &bias, shape)).ok()
        }
        Err(x) => {
            let x = plain(x)?;
            let parameters = parameters!(layer, plain);
            let mut inputs = vec![&x.tensor];
            inputs.extend(parameters.iter().map(|p| &p.tensor));
            let output = tch::no_grad(|| layer_forward(&inputs, &bias, shape));
            cast(Tensor::<Torch, 3>::from_primitive(TensorPrimitive::Float(TchTensor::new(output)))).ok()
        }
    }
}

/// The layer in torch's operations: `inputs` are `x` and the sixteen
/// parameters in [`parameters!`]'s order, weights `[in, out]`.
fn layer_forward(inputs: &[&tch::Tensor], bias: &tch::Tensor, shape: LayerShape) -> tch::Tensor {
    let &[x, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, w2, b2, g2, b2n] = inputs else {
        unreachable!("the block takes {INPUTS} inputs")
    };
    let (batch, time, hidden) = x.size3().expect("[batch, time, hidden]");
    let head_size = hidden / shape.heads;
    // burn's weights are `[in, out]`: torch's `linear` takes `[out, in]`, so a
    // transposed view (no copy; the GEMM reads it transposed).
    let dense = |x: &tch::Tensor, w: &tch::Tensor, b: &tch::Tensor| x.linear(&w.tr(), Some(b));
    let heads = |t: tch::Tensor| t.view([batch, time, shape.heads, head_size]).transpose(1, 2);
    let dropout = |t: tch::Tensor, p: f64| if p > 0.0 { t.dropout(p, true) } else { t };
    let [p_attention, p_attention_output, p_output] = shape.dropout;
    let (q, k, v) = (heads(dense(x, wq, bq)), heads(dense(x, wk, bk)), heads(dense(x, wv, bv)));
    let context =
        tch::Tensor::scaled_dot_product_attention(&q, &k, &v, Some(bias), p_attention, false, None::<f64>, false);
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

#[derive(Debug)]
struct LayerBackward;

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

impl Backward<Torch, INPUTS> for LayerBackward {
    type State = Recorded;

    fn backward(self, ops: Ops<Self::State, INPUTS>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
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

fn autodiff_layer(inputs: Vec<Tracked>, bias: &tch::Tensor, shape: LayerShape) -> Tensor<Ad, 3> {
    let nodes: [_; INPUTS] =
        inputs.iter().map(|t| t.node.clone()).collect::<Vec<_>>().try_into().expect("the block's inputs");
    let output = match LayerBackward.prepare::<NoCheckpointing>(nodes).compute_bound().stateful() {
        OpsKind::Tracked(prep) => {
            let leaves: Vec<Option<tch::Tensor>> = inputs
                .iter()
                .map(|t| (!t.node.requirement.is_none()).then(|| t.primitive.tensor.detach().set_requires_grad(true)))
                .collect();
            let operands: Vec<&tch::Tensor> =
                inputs.iter().zip(&leaves).map(|(t, leaf)| leaf.as_ref().unwrap_or(&t.primitive.tensor)).collect();
            let output = layer_forward(&operands, bias, shape);
            let result = TchTensor::new(output.detach());
            let mut guards: Vec<TchTensor> = inputs.iter().map(|t| t.primitive.clone()).collect();
            guards.push(result.clone());
            prep.finish(Recorded { leaves, output, guards }, result)
        }
        OpsKind::UnTracked(prep) => {
            let operands: Vec<&tch::Tensor> = inputs.iter().map(|t| &t.primitive.tensor).collect();
            let output = tch::no_grad(|| layer_forward(&operands, bias, shape));
            prep.finish(TchTensor::new(output))
        }
    };
    Tensor::from_primitive(TensorPrimitive::Float(output))
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
    use crate::model::TokenBatch;
    use crate::model::bert::BertClassifier;
    use crate::salience::test_models::{bert_on, three_examples};

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
    /// padded batch (the tiny test BERT, two layers).
    fn training_pass<B: AutodiffBackend>(device: &B::Device) -> (Vec<f32>, Vec<Vec<f32>>) {
        let model: BertClassifier<B> = bert_on::<B>(12, 2, device);
        let (_, ids) = three_examples();
        let sequences: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
        let batch = TokenBatch::<B>::from_sequences(&sequences, 0, device);
        let words = model.bert.embeddings.words(batch.ids.clone());
        let logits = model.forward(words, batch.mask.clone(), None);
        let probe = Tensor::<B, 1>::from_floats([0.7f32, -1.3, 0.4, 2.1, -0.6, 1.0], device).reshape([3, 2]);
        let grads = (logits.clone() * probe).sum().backward();
        let mut visitor = Gradients::<B> { grads: &grads, found: Vec::new() };
        model.visit(&mut visitor);
        (logits.into_data().to_vec::<f32>().unwrap(), visitor.found)
    }

    /// The fused layer trains as Flex does: the same logits and the same
    /// gradient for every parameter of the two-layer BERT (embeddings, both
    /// layers' sixteen each, pooler, head) on a padded batch.
    #[test]
    fn the_fused_layer_trains_as_flex_does() {
        let cpu = burn_tch::LibTorchDevice::Cpu;
        let x = Tensor::<LibTorchAutodiff, 3>::zeros([1, 2, 4], &cpu);
        assert!(applies(&x), "the LibTorch block runs in this test");
        let (torch_logits, torch_grads) = training_pass::<LibTorchAutodiff>(&cpu);
        let (flex_logits, flex_grads) = training_pass::<CpuAutodiff>(&Default::default());
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
        eprintln!("largest gradient difference relative to its parameter's largest: {worst:e}");
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
