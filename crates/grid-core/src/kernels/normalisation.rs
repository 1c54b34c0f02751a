//! A ResNet's batch norms on burn's CPU backend through
//! `grid_kernels::batch_norm`, with the skip connection's sum and the ReLU
//! that follow them: one kernel forward, and on the autodiff backend one
//! graph node whose backward gives the input's, γ's, β's and the skip's
//! gradients, instead of burn's dozen broadcast operations and their copies.

use burn::backend::Flex;
use burn::backend::autodiff::NodeId;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::NoCheckpointing;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::prelude::*;
use burn::tensor::TensorPrimitive;
use burn_flex::FlexTensor;

use grid_kernels::batch_norm::{self, Dims, Epilogue, Statistics};

use super::cast;
use super::flex::{Ad, applies, flex_tensor, primitive, values};

/// A batch norm's parameters and where its statistics come from.
#[derive(Debug, Clone)]
pub struct BatchNormInputs<B: Backend> {
    pub gamma: Tensor<B, 1>,
    pub beta: Tensor<B, 1>,
    pub epsilon: f32,
    /// The running μ and σ² (an evaluated model); `None`: the batch's.
    pub running: Option<(Tensor<B, 1>, Tensor<B, 1>)>,
}

/// What [`batch_norm`] returns: the output, and the batch's μ and σ² per
/// channel when it used them (the caller moves the running ones).
pub struct Normalised<B: Backend> {
    pub y: Tensor<B, 4>,
    pub batch_statistics: Option<(Vec<f32>, Vec<f32>)>,
}

/// `relu?(γ (x − μ) / √(σ² + ε) + β + skip?)` over `x` `[batch, channels,
/// h, w]`, per channel. `None` where no kernel applies (another backend or
/// float type, `GRID_KERNELS=burn`): the caller runs burn's operations.
pub fn batch_norm<B: Backend>(
    x: Tensor<B, 4>,
    norm: BatchNormInputs<B>,
    skip: Option<Tensor<B, 4>>,
    relu: bool,
) -> Option<Normalised<B>> {
    let [batch, channels, h, w] = x.dims();
    if !applies(&x) || skip.as_ref().is_some_and(|s| s.dims() != x.dims()) || norm.gamma.dims() != [channels] {
        return None;
    }
    let dims = Dims { batch, channels, positions: h * w };
    let epilogue = Epilogue { residual: skip.is_some(), relu };
    match cast::<_, Tensor<Ad, 4>>(x) {
        Ok(x) => {
            let gamma = cast::<_, Tensor<Ad, 1>>(norm.gamma).ok()?;
            let beta = cast::<_, Tensor<Ad, 1>>(norm.beta).ok()?;
            let running = match norm.running {
                Some((mean, var)) => Some((host(mean)?, host(var)?)),
                None => None,
            };
            let skip = match skip {
                Some(skip) => Some(cast::<_, Tensor<Ad, 4>>(skip).ok()?),
                None => None,
            };
            let (y, batch_statistics) =
                autodiff_batch_norm(dims, x, (gamma, beta), norm.epsilon, running, skip, epilogue);
            Some(Normalised { y: cast(y).ok()?, batch_statistics })
        }
        Err(x) => {
            let x = primitive(cast::<_, Tensor<Flex, 4>>(x).ok()?);
            let gamma = host(norm.gamma)?;
            let beta = host(norm.beta)?;
            let running = match norm.running {
                Some((mean, var)) => Some((host(mean)?, host(var)?)),
                None => None,
            };
            let skip = match skip {
                Some(skip) => Some(primitive(cast::<_, Tensor<Flex, 4>>(skip).ok()?)),
                None => None,
            };
            let statistics = match &running {
                Some((mean, var)) => Statistics::Given { mean, var },
                None => Statistics::Batch,
            };
            let residual = skip.as_ref().map(values);
            let out = batch_norm::forward(
                dims,
                &values(&x),
                (&gamma, &beta),
                norm.epsilon,
                statistics,
                epilogue,
                residual.as_deref(),
            );
            let y =
                Tensor::<Flex, 4>::from_primitive(TensorPrimitive::Float(flex_tensor(out.y, [batch, channels, h, w])));
            let batch_statistics = running.is_none().then_some((out.mean, out.var));
            Some(Normalised { y: cast(y).ok()?, batch_statistics })
        }
    }
}

/// A per-channel vector's values on the host (for the autodiff backend,
/// the inner tensor's: statistics and parameters enter as values).
fn host<B: Backend>(tensor: Tensor<B, 1>) -> Option<Vec<f32>> {
    match cast::<_, Tensor<Ad, 1>>(tensor) {
        Ok(tensor) => Some(values(&primitive(tensor.inner())).into_owned()),
        Err(tensor) => Some(values(&primitive(cast::<_, Tensor<Flex, 1>>(tensor).ok()?)).into_owned()),
    }
}

#[derive(Debug)]
struct NormBackward;

/// What the backward pass reads: the input and output (the ReLU's mask),
/// γ, and the statistics used.
#[derive(Debug, Clone)]
struct NormState {
    dims: Dims,
    /// `[batch, channels, h, w]`.
    shape: [usize; 4],
    x: FlexTensor,
    y: FlexTensor,
    gamma: Vec<f32>,
    mean: Vec<f32>,
    var: Vec<f32>,
    epsilon: f32,
    /// The statistics were the batch's (they depend on `x`).
    batch: bool,
    epilogue: Epilogue,
}

impl NormState {
    /// The gradients, of γ and β only when `affine`.
    fn gradients(&self, grad: &[f32], affine: bool) -> batch_norm::Backward {
        batch_norm::backward(
            self.dims,
            &values(&self.x),
            &values(&self.y),
            grad,
            &self.gamma,
            (&self.mean, &self.var),
            self.epsilon,
            self.batch,
            affine,
            self.epilogue,
        )
    }
}

/// Registers the gradients of `[x, γ, β, skip?]` for the parents that are
/// tracked (their node ids).
fn register(parents: &[Option<NodeId>], state: &NormState, grads: &mut Gradients, grad: &[f32]) {
    // A model in evaluation explained by its gradient tracks neither γ nor β.
    let out = state.gradients(grad, parents[1].is_some() || parents[2].is_some());
    let channels = [state.dims.channels];
    if let Some(id) = parents[0] {
        grads.register::<Flex>(id, flex_tensor(out.x, state.shape));
    }
    if let Some(affine) = out.affine {
        if let Some(id) = parents[1] {
            grads.register::<Flex>(id, flex_tensor(affine.gamma, channels));
        }
        if let Some(id) = parents[2] {
            grads.register::<Flex>(id, flex_tensor(affine.beta, channels));
        }
    }
    if let (Some(Some(id)), Some(residual)) = (parents.get(3), out.residual) {
        grads.register::<Flex>(*id, flex_tensor(residual, state.shape));
    }
}

/// One node type for both shapes: `[x, γ, β]` and, with a skip, `[x, γ, β, skip]`.
impl<const N: usize> Backward<Flex, N> for NormBackward {
    type State = NormState;

    fn backward(self, ops: Ops<Self::State, N>, grads: &mut Gradients, _checkpointer: &mut Checkpointer) {
        let grad = grads.consume::<Flex>(&ops.node);
        let parents: Vec<Option<NodeId>> = ops.parents.iter().map(|p| p.as_ref().map(|n| n.id)).collect();
        register(&parents, &ops.state, grads, &values(&grad));
    }
}

type Statistic = Option<(Vec<f32>, Vec<f32>)>;

fn autodiff_batch_norm(
    dims: Dims,
    x: Tensor<Ad, 4>,
    (gamma, beta): (Tensor<Ad, 1>, Tensor<Ad, 1>),
    epsilon: f32,
    running: Statistic,
    skip: Option<Tensor<Ad, 4>>,
    epilogue: Epilogue,
) -> (Tensor<Ad, 4>, Statistic) {
    let shape = x.dims();
    let [x, gamma, beta] =
        [x.into_primitive().tensor(), gamma.into_primitive().tensor(), beta.into_primitive().tensor()];
    let skip = skip.map(|s| s.into_primitive().tensor());
    let gamma_values = values(&gamma.primitive).into_owned();
    let beta_values = values(&beta.primitive).into_owned();
    let statistics = match &running {
        Some((mean, var)) => Statistics::Given { mean, var },
        None => Statistics::Batch,
    };
    let residual = skip.as_ref().map(|s| values(&s.primitive));
    let out = batch_norm::forward(
        dims,
        &values(&x.primitive),
        (&gamma_values, &beta_values),
        epsilon,
        statistics,
        epilogue,
        residual.as_deref(),
    );
    drop(residual);
    let y = flex_tensor(out.y, shape);
    let batch = running.is_none();
    let state = |x: FlexTensor, y: &FlexTensor| NormState {
        dims,
        shape,
        x,
        y: y.clone(),
        gamma: gamma_values.clone(),
        mean: out.mean.clone(),
        var: out.var.clone(),
        epsilon,
        batch,
        epilogue,
    };
    let output = match skip {
        None => {
            let parents = [x.node.clone(), gamma.node.clone(), beta.node.clone()];
            match NormBackward.prepare::<NoCheckpointing>(parents).compute_bound().stateful() {
                OpsKind::Tracked(prep) => {
                    let state = state(x.primitive, &y);
                    prep.finish(state, y)
                }
                OpsKind::UnTracked(prep) => prep.finish(y),
            }
        }
        Some(skip) => {
            let parents = [x.node.clone(), gamma.node.clone(), beta.node.clone(), skip.node.clone()];
            match NormBackward.prepare::<NoCheckpointing>(parents).compute_bound().stateful() {
                OpsKind::Tracked(prep) => {
                    let state = state(x.primitive, &y);
                    prep.finish(state, y)
                }
                OpsKind::UnTracked(prep) => prep.finish(y),
            }
        }
    };
    let batch_statistics = batch.then_some((out.mean, out.var));
    (Tensor::from_primitive(TensorPrimitive::Float(output)), batch_statistics)
}

#[cfg(test)]
mod tests {
    use burn::backend::{Autodiff, Flex};
    use burn::module::Param;
    use burn::nn::BatchNormConfig;
    use burn::prelude::*;
    use burn::tensor::activation::relu;

    use super::BatchNormInputs;

    type A = Autodiff<Flex>;

    fn wave(len: usize, scale: f32, phase: f32) -> Vec<f32> {
        (0..len).map(|i| ((i as f32) * scale + phase).sin() * 2.0 + 0.3).collect()
    }

    /// The kernel gives burn's `BatchNorm` (the batch's statistics on the
    /// autodiff backend, the running ones on the plain one), with the skip's
    /// sum and the ReLU after it, and the gradients of the input, γ, β and
    /// the skip, to float rounding.
    #[test]
    fn batch_norm_is_burns_with_its_gradients() {
        let device = Default::default();
        let shape = [3, 4, 5, 6];
        let len: usize = shape.iter().product();
        let (x_values, skip_values, probe) = (wave(len, 0.37, 0.1), wave(len, 0.71, 0.3), wave(len, 0.29, 0.4));
        let mut bn = BatchNormConfig::new(4).init::<A>(&device);
        bn.gamma = Param::from_tensor(Tensor::from_floats([0.5f32, 1.5, -1.0, 2.0], &device));
        bn.beta = Param::from_tensor(Tensor::from_floats([0.1f32, -0.2, 0.3, 0.05], &device));
        for (with_skip, with_relu) in [(false, false), (false, true), (true, true)] {
            let run = |kernel: bool| {
                let x = Tensor::<A, 1>::from_floats(x_values.as_slice(), &device).reshape(shape).require_grad();
                let skip = Tensor::<A, 1>::from_floats(skip_values.as_slice(), &device).reshape(shape).require_grad();
                let y = if kernel {
                    let inputs = BatchNormInputs {
                        gamma: bn.gamma.val(),
                        beta: bn.beta.val(),
                        epsilon: bn.epsilon as f32,
                        running: None,
                    };
                    let out = super::batch_norm(x.clone(), inputs, with_skip.then(|| skip.clone()), with_relu)
                        .expect("a kernel on Flex");
                    let (mean, var) = out.batch_statistics.expect("the batch's statistics");
                    assert_eq!((mean.len(), var.len()), (4, 4));
                    out.y
                } else {
                    let y = bn.forward(x.clone());
                    let y = if with_skip { y + skip.clone() } else { y };
                    if with_relu { relu(y) } else { y }
                };
                let probe = Tensor::<A, 1>::from_floats(probe.as_slice(), &device).reshape(shape);
                let grads = (y.clone() * probe).sum().backward();
                let flat = |t: Tensor<Flex, 4>| t.into_data().to_vec::<f32>().unwrap();
                let flat1 = |t: Tensor<Flex, 1>| t.into_data().to_vec::<f32>().unwrap();
                let dskip = if with_skip { flat(skip.grad(&grads).unwrap()) } else { Vec::new() };
                (
                    flat(y.inner()),
                    flat(x.grad(&grads).unwrap()),
                    flat1(bn.gamma.grad(&grads).unwrap()),
                    flat1(bn.beta.grad(&grads).unwrap()),
                    dskip,
                )
            };
            let (ours, burns) = (run(true), run(false));
            let worst = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(a, b)| (a - b).abs()).fold(0.0f32, f32::max);
            let label = format!("skip {with_skip}, relu {with_relu}");
            assert!(worst(&ours.0, &burns.0) <= 1e-5, "{label}: outputs differ by {}", worst(&ours.0, &burns.0));
            assert!(worst(&ours.1, &burns.1) <= 1e-5, "{label}: ∂x differ by {}", worst(&ours.1, &burns.1));
            assert!(worst(&ours.2, &burns.2) <= 1e-4, "{label}: ∂γ differ by {}", worst(&ours.2, &burns.2));
            assert!(worst(&ours.3, &burns.3) <= 1e-4, "{label}: ∂β differ by {}", worst(&ours.3, &burns.3));
            assert!(worst(&ours.4, &burns.4) <= 1e-5, "{label}: ∂skip differ by {}", worst(&ours.4, &burns.4));
        }
        // The plain backend: the running statistics, as burn's inference.
        let inner = burn::module::AutodiffModule::valid(&bn);
        let x = Tensor::<Flex, 1>::from_floats(x_values.as_slice(), &device).reshape(shape);
        let inputs = BatchNormInputs {
            gamma: inner.gamma.val(),
            beta: inner.beta.val(),
            epsilon: inner.epsilon as f32,
            running: Some((inner.running_mean.value(), inner.running_var.value())),
        };
        let ours = super::batch_norm(x.clone(), inputs, None, false).unwrap();
        assert!(ours.batch_statistics.is_none());
        let theirs = inner.forward(x);
        ours.y.into_data().assert_approx_eq::<f32>(&theirs.into_data(), burn::tensor::Tolerance::absolute(1e-5));
    }
}
