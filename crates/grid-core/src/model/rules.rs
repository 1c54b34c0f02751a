//! How a forward pass differentiates: ordinarily, or by DeepLift's Rescale rule
//! (Shrikumar et al. 2017, "Learning Important Features Through Propagating
//! Activation Differences", §3.3–3.5).
//!
//! DeepLift explains `Δf = f(x) − f(x₀)` by multipliers `m` with `Δout = Σ m·Δin`
//! at every operation; chained by backpropagation they give `Δf = Σ_i m_i Δx_i`
//! exactly ("summation-to-delta"). Here the input and its reference run through
//! the network together, stacked along the batch dimension (rows `[0, n)` inputs,
//! `[n, 2n)` their references), so every linear operation applies to both halves
//! unchanged (its multiplier is its weight, which autodiff already uses), and
//! each nonlinear operation pairs a row with its counterpart row. Such an
//! operation returns the ordinary *value* but, through the stop-gradient trick
//! `y = sg(φ(x)) + (x − sg(x))·sg(m)`, the multiplier as its *gradient*:
//!
//! | operation | multiplier |
//! |---|---|
//! | elementwise `φ` (sigmoid, tanh, ReLU, GELU, 1/√x) | Rescale: `(φ(x) − φ(x₀)) / (x − x₀)`; `φ′` at the midpoint where `x ≈ x₀` |
//! | product `a·b` (also matmul) of two input-dependent tensors | `∂/∂a = (b + b₀)/2`, `∂/∂b = (a + a₀)/2`: then `Δ(ab) = Δa·b̄ + ā·Δb` exactly |
//! | softmax | `exp(x − lse(x))`, with `lse` by Rescale through exp → sum → log expanded around the midpoint of `x` and `x₀` (nothing overflows), then exp (Rescale) |
//! | LayerNorm | mean (linear), `(x − μ)²` (product), `1/√(var + ε)` (Rescale), product, affine |
//!
//! The multipliers of a row and its counterpart are the same numbers, so the
//! reference half explains `f(x₀) − f(x)` symmetrically; only the input half's
//! gradient is read. [`Rules::Plain`] calls burn's own operations, so the
//! ordinary forward pass is untouched by any of this.

use burn::nn::LayerNorm;
use burn::prelude::*;
use burn::tensor::activation;
// Where the rule switches from secants to their limits: the fused kernels' thresholds.
use grid_kernels::rescale::{NEAR, SERIES};

pub use crate::kernels::Rules;

/// tanh through the fused kernel where the backend has one (burn's CPU
/// backend calls libm once per element), else burn's.
fn tanh<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    crate::kernels::tanh(x.clone()).unwrap_or_else(|| x.tanh())
}

/// The exact GELU through the fused kernel where the backend has one
/// (burn's CPU backend calls libm's `erff` once per element), else burn's.
fn gelu<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    crate::kernels::gelu(x.clone()).unwrap_or_else(|| activation::gelu(x))
}

impl Rules {
    pub fn sigmoid<B: Backend, const D: usize>(self, x: Tensor<B, D>) -> Tensor<B, D> {
        match self {
            Rules::Plain => activation::sigmoid(x),
            Rules::Rescale => rescale(x, activation::sigmoid, Smooth::Yes, |m| {
                let s = activation::sigmoid(m);
                s.clone() * (s.neg() + 1.0)
            }),
        }
    }

    pub fn tanh<B: Backend, const D: usize>(self, x: Tensor<B, D>) -> Tensor<B, D> {
        match self {
            Rules::Plain => tanh(x),
            Rules::Rescale => crate::kernels::rescaled_tanh(x.clone()).unwrap_or_else(|| rescaled_tanh(x)),
        }
    }

    pub fn relu<B: Backend, const D: usize>(self, x: Tensor<B, D>) -> Tensor<B, D> {
        match self {
            Rules::Plain => activation::relu(x),
            // Differences of ReLU outputs are exact in floating point: no cancellation to avoid.
            Rules::Rescale => rescale(x, activation::relu, Smooth::No, |m| m.greater_elem(0.0).float()),
        }
    }

    /// The exact, erf-based GELU.
    pub fn gelu<B: Backend, const D: usize>(self, x: Tensor<B, D>) -> Tensor<B, D> {
        match self {
            Rules::Plain => gelu(x),
            Rules::Rescale => crate::kernels::rescaled_gelu(x.clone()).unwrap_or_else(|| rescaled_gelu(x)),
        }
    }

    /// The tanh approximation of GELU.
    pub fn gelu_approximate<B: Backend, const D: usize>(self, x: Tensor<B, D>) -> Tensor<B, D> {
        match self {
            Rules::Plain => activation::gelu_approximate(x),
            Rules::Rescale => rescale(x, activation::gelu_approximate, Smooth::Yes, |m| {
                const K: f64 = 0.797_884_560_802_865_4; // √(2/π)
                const C: f64 = 0.044715;
                let t = (m.clone() + m.clone().powi_scalar(3).mul_scalar(C)).mul_scalar(K).tanh();
                let slope = (m.clone().powi_scalar(2).mul_scalar(3.0 * C) + 1.0).mul_scalar(K);
                (t.clone() + 1.0).mul_scalar(0.5) + m.mul_scalar(0.5) * (t.powi_scalar(2).neg() + 1.0) * slope
            }),
        }
    }

    fn rsqrt<B: Backend, const D: usize>(self, x: Tensor<B, D>) -> Tensor<B, D> {
        let rsqrt = |v: Tensor<B, D>| v.sqrt().recip();
        match self {
            Rules::Plain => rsqrt(x),
            Rules::Rescale => rescale(x, rsqrt, Smooth::Yes, |m| rsqrt(m.clone()).div(m).mul_scalar(-0.5)),
        }
    }

    /// `a · b` elementwise (with broadcasting), where both factors depend on the input.
    pub fn mul<B: Backend, const D: usize>(self, a: Tensor<B, D>, b: Tensor<B, D>) -> Tensor<B, D> {
        match self {
            Rules::Plain => a * b,
            Rules::Rescale => {
                let (a_fixed, b_fixed) = (a.clone().detach(), b.clone().detach());
                let (a_mean, b_mean) = (midpoint(a_fixed.clone()), midpoint(b_fixed.clone()));
                a_fixed.clone() * b_fixed.clone() + (a - a_fixed) * b_mean + a_mean * (b - b_fixed)
            }
        }
    }

    /// Attention pooling `Σ_t weights[b, t] · states[b, t]`: `states`
    /// `[batch, time, width]`, `weights` `[batch, time]` (both
    /// input-dependent), the context `[batch, width]`. The fused kernel where
    /// the backend has one; DeepLift's rules take the product rule.
    pub fn weighted_sum<B: Backend>(self, states: Tensor<B, 3>, weights: Tensor<B, 2>) -> Tensor<B, 2> {
        if let Some(context) = crate::kernels::weighted_sum(states.clone(), weights.clone(), self) {
            return context;
        }
        self.weighted_sum_ops(states, weights)
    }

    /// [`Rules::weighted_sum`] in burn's operations: what the kernel fuses.
    fn weighted_sum_ops<B: Backend>(self, states: Tensor<B, 3>, weights: Tensor<B, 2>) -> Tensor<B, 2> {
        let [batch, time, width] = states.dims();
        self.mul(states, weights.reshape([batch, time, 1])).sum_dim(1).reshape([batch, width])
    }

    /// `a · b` as matrices (over the last two dimensions), both input-dependent.
    pub fn matmul<B: Backend, const D: usize>(self, a: Tensor<B, D>, b: Tensor<B, D>) -> Tensor<B, D> {
        match self {
            Rules::Plain => a.matmul(b),
            Rules::Rescale => {
                crate::kernels::rescaled_matmul(a.clone(), b.clone()).unwrap_or_else(|| rescaled_matmul(a, b))
            }
        }
    }

    pub fn softmax<B: Backend, const D: usize>(self, x: Tensor<B, D>, dim: usize) -> Tensor<B, D> {
        match self {
            Rules::Plain => activation::softmax(x, dim),
            Rules::Rescale => fused_rescaled_softmax(x.clone(), dim).unwrap_or_else(|| rescaled_softmax(x, dim)),
        }
    }

    /// Attention's probabilities: softmax over the keys of `scores / divisor +
    /// bias`, `bias` (`[batch, 1, 1, keys]`) the padding mask's constant:
    /// one fused kernel where the backend has it, under either rules.
    pub fn attention_softmax<B: Backend>(self, scores: Tensor<B, 4>, bias: Tensor<B, 4>, divisor: f64) -> Tensor<B, 4> {
        let masked = |scores: Tensor<B, 4>| scores.div_scalar(divisor) + bias.clone();
        match self {
            Rules::Plain => crate::kernels::attention_softmax(scores.clone(), bias.clone(), divisor as f32)
                .unwrap_or_else(|| activation::softmax(masked(scores), 3)),
            Rules::Rescale => crate::kernels::rescaled_attention_softmax(scores.clone(), bias.clone(), divisor as f32)
                .unwrap_or_else(|| rescaled_softmax(masked(scores), 3)),
        }
    }

    /// Self-attention's `softmax(query keyᵀ / divisor + bias) value` over
    /// `heads` heads, from and to the `[batch, time, heads · d]` layout, with
    /// the probabilities as values (not differentiable): one fused kernel
    /// (`kernels::attention`) under the ordinary rules where the backend has
    /// it, else `None` and the caller runs its own operations.
    pub fn fused_attention<B: Backend>(
        self,
        [query, key, value]: [Tensor<B, 3>; 3],
        bias: Tensor<B, 4>,
        heads: usize,
        divisor: f64,
    ) -> Option<(Tensor<B, 3>, Tensor<B, 4>)> {
        match self {
            Rules::Plain => crate::kernels::attention(query, key, value, bias, heads, divisor as f32),
            Rules::Rescale => None,
        }
    }

    /// `norm` over the last dimension with its `epsilon` (burn's `LayerNorm` keeps its own private).
    pub fn layer_norm<B: Backend, const D: usize>(
        self,
        norm: &LayerNorm<B>,
        x: Tensor<B, D>,
        epsilon: f64,
    ) -> Tensor<B, D> {
        match self {
            Rules::Plain => match &norm.beta {
                Some(beta) => crate::kernels::layer_norm(x.clone(), norm.gamma.val(), beta.val(), epsilon, self)
                    .unwrap_or_else(|| norm.forward(x)),
                None => norm.forward(x),
            },
            Rules::Rescale => {
                if let Some(beta) = &norm.beta
                    && let Some(y) = crate::kernels::layer_norm(x.clone(), norm.gamma.val(), beta.val(), epsilon, self)
                {
                    return y;
                }
                self.layer_norm_ops(norm, x, epsilon)
            }
        }
    }

    /// [`Rules::layer_norm`] under DeepLift's rules in burn's operations: the
    /// decomposition the fused kernel's multipliers follow.
    pub(crate) fn layer_norm_ops<B: Backend, const D: usize>(
        self,
        norm: &LayerNorm<B>,
        x: Tensor<B, D>,
        epsilon: f64,
    ) -> Tensor<B, D> {
        let centred = x.clone() - x.mean_dim(D - 1);
        let variance = self.mul(centred.clone(), centred.clone()).mean_dim(D - 1);
        let normalised = self.mul(centred, self.rsqrt(variance + epsilon));
        let affine = normalised * norm.gamma.val().unsqueeze::<D>();
        match &norm.beta {
            Some(beta) => affine + beta.val().unsqueeze::<D>(),
            None => affine,
        }
    }
}

/// The product rule for `a · b` as matrices in burn's operations (what
/// [`crate::kernels::rescaled_matmul`] fuses): values `a b + 0 + 0`.
fn rescaled_matmul<B: Backend, const D: usize>(a: Tensor<B, D>, b: Tensor<B, D>) -> Tensor<B, D> {
    let (a_fixed, b_fixed) = (a.clone().detach(), b.clone().detach());
    let (a_mean, b_mean) = (midpoint(a_fixed.clone()), midpoint(b_fixed.clone()));
    a_fixed.clone().matmul(b_fixed.clone()) + (a - a_fixed).matmul(b_mean) + a_mean.matmul(b - b_fixed)
}

/// tanh's Rescale rule in burn's operations (what [`crate::kernels::rescaled_tanh`] fuses).
fn rescaled_tanh<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    rescale(x, tanh, Smooth::Yes, |m| tanh(m).powi_scalar(2).neg() + 1.0)
}

/// GELU's Rescale rule in burn's operations (what [`crate::kernels::rescaled_gelu`] fuses).
fn rescaled_gelu<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    rescale(x, gelu, Smooth::Yes, |m| {
        // Φ(x) + x φ(x), in SIMD lanes where the backend has the kernel
        // (burn's erf is a libm call per element).
        if let Some(slope) = crate::kernels::gelu_derivative(m.clone()) {
            return slope;
        }
        let cdf = (m.clone().mul_scalar(std::f64::consts::FRAC_1_SQRT_2).erf() + 1.0).mul_scalar(0.5);
        let pdf = m.clone().powi_scalar(2).mul_scalar(-0.5).exp().mul_scalar(0.398_942_280_401_432_7);
        cdf + m * pdf
    })
}

/// Softmax as `p = exp(x − lse(x))`, with `lse(x) = lse(x̄) + log Σ_j q_j exp(x_j − x̄_j)`
/// around the midpoint `x̄ = (x + x₀)/2` (shared by a row and its counterpart,
/// so it needs no multiplier) and `q = softmax(x̄)`. Rescale through exp, the
/// sum and log gives `lse` the multipliers
/// `w_j = √(p_j p₀_j) · sinhc(Δx_j/2) / sinhc(Δlse/2)`, which sum `Σ_j w_j Δx_j`
/// to `Δlse` exactly; the outer exp then gets Rescale's secant between
/// `log p` and `log p₀`. Every intermediate is a probability or bounded by
/// one, so even rows whose logits differ by hundreds stay finite (an
/// exp → sum → reciprocal chain overflows there).
fn rescaled_softmax<B: Backend, const D: usize>(x: Tensor<B, D>, dim: usize) -> Tensor<B, D> {
    let fixed = x.clone().detach();
    let top = fixed.clone().max_dim(dim);
    let lse = top.clone() + (fixed.clone() - top).exp().sum_dim(dim).log();
    let log_p = fixed.clone() - lse.clone();
    let p = log_p.clone().exp();
    let p0 = counterpart(p.clone());
    let geometric = (p.clone() * p0.clone()).sqrt();

    // Multipliers of lse, in a form whose exponentials never exceed 1.
    let dx = fixed.clone() - counterpart(fixed);
    let dlse = lse.clone() - counterpart(lse);
    let a = dlse.clone().abs();
    // |Δlse| / (1 − e^{−|Δlse|}) = e^{|Δlse|/2} / sinhc(Δlse/2)
    let series = a.clone().powi_scalar(2).mul_scalar(1.0 / 12.0) + a.clone().mul_scalar(0.5) + 1.0
        - a.clone().powi_scalar(4).mul_scalar(1.0 / 720.0);
    let g = (a.clone() / (a.clone().neg().exp().neg() + 1.0)).mask_where(a.clone().lower_elem(SERIES), series);
    let half = a.mul_scalar(0.5);
    let rise = p.clone() * (dlse.clone().mul_scalar(0.5) - half.clone()).exp()
        - p0.clone() * (dlse.mul_scalar(-0.5) - half.clone()).exp();
    let small = dx.clone().abs().lower_elem(SERIES);
    let secant = rise * g.clone() / dx.clone().mask_fill(small.clone(), 1.0);
    let series = geometric.clone() * half.neg().exp() * g * sinhc_series(dx.mul_scalar(0.5));
    let w = secant.mask_where(small, series);

    // Rescale of the outer exp, between log p and log p₀.
    let dl = log_p.clone() - counterpart(log_p);
    let small = dl.clone().abs().lower_elem(SERIES);
    let secant = (p.clone() - p0) / dl.clone().mask_fill(small.clone(), 1.0);
    let m = secant.mask_where(small, geometric * sinhc_series(dl.mul_scalar(0.5)));

    let moved = x.clone() - x.detach(); // value 0, gradient 1
    let moved_lse = (moved.clone() * w).sum_dim(dim);
    p + (moved - moved_lse) * m
}

/// [`rescaled_softmax`] as one kernel where the backend has it (along the
/// last dimension only).
fn fused_rescaled_softmax<B: Backend, const D: usize>(x: Tensor<B, D>, dim: usize) -> Option<Tensor<B, D>> {
    if dim + 1 != D {
        return None;
    }
    crate::kernels::rescaled_softmax(x)
}

/// `sinh(y)/y` near 0.
fn sinhc_series<B: Backend, const D: usize>(y: Tensor<B, D>) -> Tensor<B, D> {
    let y2 = y.powi_scalar(2);
    y2.clone().mul_scalar(1.0 / 6.0) + y2.powi_scalar(2).mul_scalar(1.0 / 120.0) + 1.0
}

/// Whether `φ(x) − φ(x₀)` can lose digits to cancellation.
#[derive(Clone, Copy)]
enum Smooth {
    Yes,
    No,
}

/// Each row's counterpart: inputs and references swapped.
fn counterpart<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    let n = x.dims()[0] / 2;
    debug_assert_eq!(x.dims()[0], 2 * n, "DeepLift stacks inputs over references");
    Tensor::cat(vec![x.clone().narrow(0, n, n), x.narrow(0, 0, n)], 0)
}

/// `(x + x₀)/2` in both halves.
fn midpoint<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    (x.clone() + counterpart(x)).mul_scalar(0.5)
}

/// `sg(φ(x)) + (x − sg(x))·sg(m)` with the Rescale multiplier `m`, or `slope` at
/// the midpoint where the difference is too small for a secant.
fn rescale<B: Backend, const D: usize>(
    x: Tensor<B, D>,
    phi: impl Fn(Tensor<B, D>) -> Tensor<B, D>,
    smooth: Smooth,
    slope: impl Fn(Tensor<B, D>) -> Tensor<B, D>,
) -> Tensor<B, D> {
    let fixed = x.clone().detach();
    let y = phi(fixed.clone());
    let reference = counterpart(fixed.clone());
    let dx = fixed.clone() - reference.clone();
    let dy = y.clone() - counterpart(y.clone());
    let near = match smooth {
        Smooth::Yes => dx.clone().abs().lower((fixed.clone().abs() + reference.clone().abs() + 1.0).mul_scalar(NEAR)),
        Smooth::No => dx.clone().equal_elem(0.0),
    };
    let secant = dy / dx.mask_fill(near.clone(), 1.0);
    let multiplier = secant.mask_where(near, slope((fixed.clone() + reference).mul_scalar(0.5)));
    y + (x - fixed) * multiplier
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::{Autodiff, Flex};

    type Ad = Autodiff<Flex>;

    fn tensor(values: &[f32]) -> Tensor<Ad, 1> {
        Tensor::from_data(TensorData::new(values.to_vec(), [values.len()]), &Default::default())
    }

    fn values(t: Tensor<Ad, 1>) -> Vec<f32> {
        t.into_data().to_vec().unwrap()
    }

    /// Every value of `ours` finite and within `relative · (1 + |theirs|)` of
    /// `theirs`: a fused kernel against the operations it replaces.
    fn assert_close(what: &str, ours: &[f32], theirs: &[f32], relative: f32) {
        assert_eq!(ours.len(), theirs.len(), "{what}: lengths");
        for (i, (x, y)) in ours.iter().zip(theirs).enumerate() {
            assert!(x.is_finite() && (x - y).abs() <= relative * (1.0 + y.abs()), "{what}[{i}]: {x} vs {y}");
        }
    }

    /// `(value, gradient)` of `Σ op(x)` at the stacked `[inputs, references]`.
    fn run(op: impl Fn(Tensor<Ad, 1>) -> Tensor<Ad, 1>, x: &[f32]) -> (Vec<f32>, Vec<f32>) {
        let x = tensor(x).require_grad();
        let y = op(x.clone());
        let grads = y.clone().sum().backward();
        (values(y), x.grad(&grads).unwrap().into_data().to_vec().unwrap())
    }

    #[test]
    fn elementwise_rules_keep_values_and_give_secants() {
        let x = [0.5f32, -2.0, 3.0, 1.0, 0.7, 3.0];
        let (y, m) = run(|t| Rules::Rescale.tanh(t), &x);
        assert_eq!(y, run(|t| Rules::Plain.tanh(t), &x).0, "values are the ordinary ones");
        for (i, j) in [(0, 3), (1, 4)] {
            let secant = ((x[i] as f64).tanh() - (x[j] as f64).tanh()) / (x[i] as f64 - x[j] as f64);
            assert!((m[i] as f64 - secant).abs() < 1e-6 && m[i] == m[j], "{i}: {} vs {secant}", m[i]);
        }
        // Equal input and reference: the derivative.
        assert!((m[2] as f64 - (1.0 - 3.0f64.tanh().powi(2))).abs() < 1e-6);
        let (_, m) = run(|t| Rules::Rescale.relu(t), &[2.0, -1.0, 0.0, 1.0]);
        assert_eq!(m, vec![1.0, 0.5, 1.0, 0.5]);
    }

    /// Logits 300 apart: an exp → sum → reciprocal chain with a shift shared by
    /// both rows overflows; each probability must still get its exact Δ.
    #[test]
    fn softmax_of_distant_logits_sums_to_delta() {
        let device = Default::default();
        let x = Tensor::<Ad, 2>::from_data([[300.0f32, 0.0, -50.0, 2.0], [0.0, 250.0, 1.0, 2.0]], &device);
        let plain: Vec<f32> = activation::softmax(x.clone(), 1).into_data().to_vec().unwrap();
        for i in 0..4 {
            let x = x.clone().require_grad();
            let p = Rules::Rescale.softmax(x.clone(), 1);
            let grads = p.narrow(0, 0, 1).narrow(1, i, 1).sum().backward();
            let m: Vec<f32> = x.grad(&grads).unwrap().into_data().to_vec().unwrap();
            let dx: Vec<f32> = (x.clone().narrow(0, 0, 1) - x.narrow(0, 1, 1)).into_data().to_vec().unwrap();
            let attributed: f32 = m.iter().zip(&dx).map(|(m, d)| m * d).sum();
            assert!(m.iter().all(|m| m.is_finite()), "{m:?}");
            assert!((attributed - (plain[i] - plain[4 + i])).abs() < 1e-6, "p_{i}: {attributed} vs {plain:?}");
        }
    }

    #[test]
    fn products_and_softmax_sum_to_delta() {
        // Δ(ab) = Δa·b̄ + ā·Δb exactly.
        let device = Default::default();
        let a = Tensor::<Ad, 2>::from_data([[1.0f32, 2.0], [3.0, -1.0]], &device).require_grad();
        let b = Tensor::<Ad, 2>::from_data([[0.5f32, 4.0], [2.0, 1.0]], &device).require_grad();
        let y = Rules::Rescale.mul(a.clone(), b.clone());
        let grads = y.clone().narrow(0, 0, 1).sum().backward();
        let (ga, gb): (Vec<f32>, Vec<f32>) = (
            a.grad(&grads).unwrap().into_data().to_vec().unwrap(),
            b.grad(&grads).unwrap().into_data().to_vec().unwrap(),
        );
        assert_eq!(ga[..2], [1.25, 2.5]);
        assert_eq!(gb[..2], [2.0, 0.5]);
        let y: Vec<f32> = y.into_data().to_vec().unwrap();
        assert_eq!(y, vec![0.5, 8.0, 6.0, -1.0]);

        let x = Tensor::<Ad, 2>::from_data([[1.0f32, -0.5, 2.0], [0.0, 0.3, -1.0]], &device).require_grad();
        let reference = x.clone().detach().narrow(0, 1, 1);
        let p = Rules::Rescale.softmax(x.clone(), 1);
        let plain: Vec<f32> = activation::softmax(x.clone().detach(), 1).into_data().to_vec().unwrap();
        let got: Vec<f32> = p.clone().into_data().to_vec().unwrap();
        for (g, w) in got.iter().zip(&plain) {
            assert!((g - w).abs() < 1e-6);
        }
        // Output 0 of the input row: Σ_j m_j Δx_j = Δp_0.
        let grads = p.narrow(0, 0, 1).narrow(1, 0, 1).sum().backward();
        let m: Vec<f32> = x.grad(&grads).unwrap().narrow(0, 0, 1).into_data().to_vec().unwrap();
        let dx: Vec<f32> = (x.detach().narrow(0, 0, 1) - reference).into_data().to_vec().unwrap();
        let attributed: f32 = m.iter().zip(&dx).map(|(m, d)| m * d).sum();
        assert!((attributed - (plain[0] - plain[3])).abs() < 1e-6, "{attributed} vs {}", plain[0] - plain[3]);
    }

    /// tanh's and GELU's rule in one pass give the operations' values and
    /// multipliers: pairs far apart, near (the midpoint's slope) and equal.
    #[test]
    fn the_fused_elementwise_rules_are_the_operations() {
        let device = Default::default();
        let n = 40;
        let inputs: Vec<f32> = (0..n).map(|v| (v as f32 * 0.77).sin() * 5.0).collect();
        let references: Vec<f32> = (0..n)
            .map(|v| match v % 4 {
                0 => inputs[v],
                1 => inputs[v] + 1e-4,
                _ => (v as f32 * 0.31).cos() * 3.0,
            })
            .collect();
        let x: Vec<f32> = inputs.iter().chain(&references).copied().collect();
        let probe: Vec<f32> = (0..2 * n).map(|v| (v as f32 * 0.13).cos()).collect();
        type Rule = fn(Tensor<Ad, 2>) -> Tensor<Ad, 2>;
        let fused: [(&str, Rule, Rule); 2] = [
            ("tanh", |t| crate::kernels::rescaled_tanh(t).expect("a kernel on Flex"), rescaled_tanh),
            ("gelu", |t| crate::kernels::rescaled_gelu(t).expect("a kernel on Flex"), rescaled_gelu),
        ];
        for (name, kernel, ops) in fused {
            let run = |rule: Rule| {
                let t = Tensor::<Ad, 1>::from_floats(x.as_slice(), &device).reshape([2, n]).require_grad();
                let y = rule(t.clone());
                let probe = Tensor::<Ad, 1>::from_floats(probe.as_slice(), &device).reshape([2, n]);
                let grads = (y.clone() * probe).sum().backward();
                let flat = |t: Tensor<Flex, 2>| -> Vec<f32> { t.into_data().to_vec().unwrap() };
                (flat(y.inner()), flat(t.grad(&grads).unwrap()))
            };
            let (ours, theirs) = (run(kernel), run(ops));
            assert_eq!(ours.0, theirs.0, "{name}: values");
            assert_close(&format!("{name} multipliers"), &ours.1, &theirs.1, 1e-6);
        }
    }

    /// The product rule of a matrix product in one op gives the operations'
    /// values and multipliers of both factors (a transposed one too, as
    /// attention's `q kᵀ`).
    #[test]
    fn the_fused_matmul_rule_is_the_operations() {
        let device = Default::default();
        let (pairs, heads, rows, inner, cols) = (2, 3, 5, 4, 6);
        let wave = |len: usize, f: f32| (0..len).map(|v| (v as f32 * f).sin() * 2.0).collect::<Vec<f32>>();
        let (a, k) = (wave(2 * pairs * heads * rows * inner, 0.37), wave(2 * pairs * heads * cols * inner, 0.59));
        let probe = wave(2 * pairs * heads * rows * cols, 0.23);
        type Rule = fn(Tensor<Ad, 4>, Tensor<Ad, 4>) -> Tensor<Ad, 4>;
        let run = |rule: Rule| {
            let a = Tensor::<Ad, 1>::from_floats(a.as_slice(), &device)
                .reshape([2 * pairs, heads, rows, inner])
                .require_grad();
            let k = Tensor::<Ad, 1>::from_floats(k.as_slice(), &device)
                .reshape([2 * pairs, heads, cols, inner])
                .require_grad();
            let y = rule(a.clone(), k.clone().transpose());
            let probe = Tensor::<Ad, 1>::from_floats(probe.as_slice(), &device).reshape([2 * pairs, heads, rows, cols]);
            let grads = (y.clone() * probe).sum().backward();
            let flat = |t: Tensor<Flex, 4>| -> Vec<f32> { t.into_data().to_vec().unwrap() };
            (flat(y.inner()), flat(a.grad(&grads).unwrap()), flat(k.grad(&grads).unwrap()))
        };
        let ours = run(|a, b| crate::kernels::rescaled_matmul(a, b).expect("a kernel on Flex"));
        let theirs = run(rescaled_matmul);
        assert_close("values", &ours.0, &theirs.0, 1e-6);
        assert_close("multipliers of a", &ours.1, &theirs.1, 1e-6);
        assert_close("multipliers of b", &ours.2, &theirs.2, 1e-6);
    }

    /// Attention pooling under the product rule in one kernel gives the
    /// operations' context and multipliers of the states and the weights.
    #[test]
    fn the_fused_pooling_rule_is_the_operations() {
        let device = Default::default();
        let (pairs, time, width) = (3, 5, 4);
        let wave = |len: usize, f: f32| (0..len).map(|v| (v as f32 * f).sin() * 2.0).collect::<Vec<f32>>();
        let (h, a, probe) =
            (wave(2 * pairs * time * width, 0.41), wave(2 * pairs * time, 0.67), wave(2 * pairs * width, 0.3));
        let run = |fused: bool| {
            let states =
                Tensor::<Ad, 1>::from_floats(h.as_slice(), &device).reshape([2 * pairs, time, width]).require_grad();
            let weights = Tensor::<Ad, 1>::from_floats(a.as_slice(), &device).reshape([2 * pairs, time]).require_grad();
            let context = if fused {
                crate::kernels::weighted_sum(states.clone(), weights.clone(), Rules::Rescale).expect("a kernel on Flex")
            } else {
                Rules::Rescale.weighted_sum_ops(states.clone(), weights.clone())
            };
            let probe = Tensor::<Ad, 1>::from_floats(probe.as_slice(), &device).reshape([2 * pairs, width]);
            let grads = (context.clone() * probe).sum().backward();
            (
                context.inner().into_data().to_vec::<f32>().unwrap(),
                states.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap(),
                weights.grad(&grads).unwrap().into_data().to_vec::<f32>().unwrap(),
            )
        };
        let (ours, theirs) = (run(true), run(false));
        assert_close("context", &ours.0, &theirs.0, 1e-6);
        assert_close("multipliers of the states", &ours.1, &theirs.1, 1e-6);
        assert_close("multipliers of the weights", &ours.2, &theirs.2, 1e-6);
    }

    /// Attention's softmax rule in one kernel (scaling, padding mask and the
    /// rule together) gives the operations' probabilities and multipliers of
    /// the scores: padded keys, scores far from their reference's, a query
    /// that is its own reference.
    #[test]
    fn the_fused_attention_softmax_rule_is_the_operations() {
        let device = Default::default();
        let (pairs, heads, queries, keys) = (2, 3, 4, 9);
        let shape = [2 * pairs, heads, queries, keys];
        let len: usize = shape.iter().product();
        let half = len / 2;
        let mut scores: Vec<f32> = (0..len).map(|v| (v as f32 * 0.43).sin() * 12.0).collect();
        for (k, score) in scores[..keys].iter_mut().enumerate() {
            *score += 400.0 * (k as f32 - 4.0);
        }
        let own = heads * queries * keys; // pair 1, head 0, query 0
        scores.copy_within(own..own + keys, half + own);
        // Pair 1's last three keys are padding, in the input and its reference.
        let bias: Vec<f32> =
            (0..2 * pairs * keys).map(|i| if (i / keys) % pairs == 1 && i % keys >= 6 { -1e9 } else { 0.0 }).collect();
        let probe: Vec<f32> = (0..len).map(|v| (v as f32 * 0.29).cos()).collect();
        let divisor = 8f64.sqrt();
        let run = |fused: bool| {
            let t = Tensor::<Ad, 1>::from_floats(scores.as_slice(), &device).reshape(shape).require_grad();
            let b = Tensor::<Ad, 1>::from_floats(bias.as_slice(), &device).reshape([2 * pairs, 1, 1, keys]);
            let p = if fused {
                crate::kernels::rescaled_attention_softmax(t.clone(), b, divisor as f32).expect("a kernel on Flex")
            } else {
                rescaled_softmax(t.clone().div_scalar(divisor) + b, 3)
            };
            let probe = Tensor::<Ad, 1>::from_floats(probe.as_slice(), &device).reshape(shape);
            let grads = (p.clone() * probe).sum().backward();
            let flat = |t: Tensor<Flex, 4>| -> Vec<f32> { t.into_data().to_vec().unwrap() };
            (flat(p.inner()), flat(t.grad(&grads).unwrap()))
        };
        let (ours, ops) = (run(true), run(false));
        assert_close("probabilities", &ours.0, &ops.0, 1e-5);
        assert_close("multipliers", &ours.1, &ops.1, 1e-5);
        for (i, &p) in ours.0.iter().enumerate() {
            if (i / (heads * queries * keys)) % pairs == 1 && i % keys >= 6 {
                assert_eq!(p, 0.0, "padded key {i} has weight 0");
            }
        }
    }

    /// The fused softmax rule gives `rescaled_softmax`'s probabilities and
    /// multipliers (burn's operations) to float rounding: rows of ordinary
    /// logits, logits hundreds apart, padded keys (−1e9), a pair within the
    /// series threshold and a pair that is its own reference.
    #[test]
    fn the_fused_softmax_rule_is_the_operations() {
        let device = Default::default();
        let (pairs, rows, keys) = (3, 2, 5);
        let mut x: Vec<f32> = (0..2 * pairs * rows * keys).map(|v| (v as f32 * 0.71).sin() * 4.0).collect();
        let half = pairs * rows * keys;
        // Pair 0, row 1: logits hundreds apart from the counterpart's.
        for k in 0..keys {
            x[rows * keys / 2 + k] += 300.0 * (k as f32 - 2.0);
        }
        // Pair 1: its last two keys padded in both halves; pair 2's reference
        // is within 0.05 of it, and pair 2's second row is its own reference.
        for r in 0..rows {
            for k in 3..keys {
                x[(rows + r) * keys + k] = -1e9;
                x[half + (rows + r) * keys + k] = -1e9;
            }
        }
        for j in 0..rows * keys {
            let at = 2 * rows * keys + j;
            x[half + at] = x[at] + if j < keys { 0.05 } else { 0.0 };
        }
        let probe: Vec<f32> = (0..2 * half).map(|v| (v as f32 * 0.37).cos()).collect();
        let shape = [2 * pairs, rows, keys];
        let run = |fused: bool| {
            let t = Tensor::<Ad, 1>::from_floats(x.as_slice(), &device).reshape(shape).require_grad();
            let p = if fused {
                fused_rescaled_softmax(t.clone(), 2).expect("a kernel on Flex")
            } else {
                rescaled_softmax(t.clone(), 2)
            };
            let probe = Tensor::<Ad, 1>::from_floats(probe.as_slice(), &device).reshape(shape);
            let grads = (p.clone() * probe).sum().backward();
            let flat = |t: Tensor<Flex, 3>| -> Vec<f32> { t.into_data().to_vec().unwrap() };
            (flat(p.inner()), flat(t.grad(&grads).unwrap()))
        };
        let (ours, ops) = (run(true), run(false));
        assert_close("probabilities", &ours.0, &ops.0, 1e-5);
        assert_close("multipliers", &ours.1, &ops.1, 1e-5);
    }
}
