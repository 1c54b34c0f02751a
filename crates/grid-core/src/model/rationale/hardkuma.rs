//! The HardKuma distribution of Bastings et al. 2019 ("Interpretable Neural
//! Predictions with Differentiable Binary Variables"), the continuous
//! relaxation (CR) selector's gate.
//!
//! A Kumaraswamy variable `k ~ Kuma(a, b)` on `(0, 1)` (density
//! `a b k^{a−1} (1 − k^a)^{b−1}`, CDF `1 − (1 − k^a)^b`) is stretched to
//! `t = l + (r − l) k` over `(l, r) = (−0.1, 1.1)` and rectified,
//! `z = min(1, max(0, t))`. The gate is then exactly 0 with probability
//! `F_k(−l / (r − l))`, exactly 1 with probability `1 − F_k((1 − l) / (r − l))`,
//! and continuous in between; a sample is reparameterised through the
//! inverse CDF, so gradients reach `a` and `b` wherever `0 < t < 1`.
//!
//! Every operation is elementwise over `[batch, time]` gate parameters.

use burn::prelude::*;

/// The stretch interval `(l, r)`, Bastings et al.'s.
pub const LOWER: f64 = -0.1;
pub const UPPER: f64 = 1.1;

/// The bounds of `a` and `b` (as Bastings et al. clamp them, the floor
/// raised for float32: below 0.01 `k^a` rounds to 1).
pub const PARAMETER_RANGE: (f64, f64) = (0.01, 100.0);

/// Points of the midpoint rule for the expected gate.
const QUADRATURE_POINTS: usize = 64;

/// Floor of `1 − k^a` and of `1 − (1 − u)^{1/b}` before a logarithm.
const TINY: f64 = 1e-12;

/// HardKuma gates, one per token: the Kumaraswamy parameters `a`, `b`
/// (`[batch, time]`, both in [`PARAMETER_RANGE`]).
#[derive(Debug, Clone)]
pub struct HardKuma<B: Backend> {
    pub a: Tensor<B, 2>,
    pub b: Tensor<B, 2>,
}

impl<B: Backend> HardKuma<B> {
    /// From the gate layer's two raw outputs per token: `softplus`, clamped.
    pub fn from_raw(raw_a: Tensor<B, 2>, raw_b: Tensor<B, 2>) -> Self {
        let (low, high) = PARAMETER_RANGE;
        Self { a: softplus(raw_a).clamp(low, high), b: softplus(raw_b).clamp(low, high) }
    }

    /// The Kumaraswamy CDF at the constant `x ∈ (0, 1)`: `1 − (1 − x^a)^b`.
    fn kuma_cdf_at(&self, x: f64) -> Tensor<B, 2> {
        self.kuma_survival_at(x).neg().add_scalar(1.0)
    }

    /// `(1 − x^a)^b`, through logarithms: `exp(b · ln(1 − exp(a ln x)))`.
    fn kuma_survival_at(&self, x: f64) -> Tensor<B, 2> {
        let x_to_a = self.a.clone().mul_scalar(x.ln()).exp();
        (self.b.clone() * x_to_a.neg().add_scalar(1.0).clamp_min(TINY).log()).exp()
    }

    /// `P(z = 0)`.
    pub fn prob_zero(&self) -> Tensor<B, 2> {
        self.kuma_cdf_at(stretched(0.0))
    }

    /// `P(z = 1)`.
    pub fn prob_one(&self) -> Tensor<B, 2> {
        self.kuma_survival_at(stretched(1.0))
    }

    /// `P(z ≠ 0)`: the expected share of a token in the rationale, what
    /// the selection-rate penalty drives (differentiable in `a` and `b`).
    pub fn prob_nonzero(&self) -> Tensor<B, 2> {
        self.kuma_survival_at(stretched(0.0))
    }

    /// The CDF of the rectified gate at `z ∈ [0, 1]`: `F_k((z − l)/(r − l))`,
    /// and 1 at `z = 1` (the mass at 1 included).
    pub fn cdf(&self, z: f64) -> Tensor<B, 2> {
        if z >= 1.0 { self.a.ones_like() } else { self.kuma_cdf_at(stretched(z.max(0.0))) }
    }

    /// A reparameterised sample from uniforms `u ∈ (0, 1)` (`[batch, time]`):
    /// `k = (1 − (1 − u)^{1/b})^{1/a}`, stretched and rectified.
    pub fn sample(&self, u: Tensor<B, 2>) -> Tensor<B, 2> {
        let inner = (u.neg().add_scalar(1.0).log() / self.b.clone()).exp().neg().add_scalar(1.0).clamp_min(TINY);
        let k = (inner.log() / self.a.clone()).exp();
        k.mul_scalar(UPPER - LOWER).add_scalar(LOWER).clamp(0.0, 1.0)
    }

    /// `E[z] = ∫₀¹ P(z > t) dt` by the midpoint rule: the expected gate, a
    /// token's continuous salience.
    pub fn mean(&self) -> Tensor<B, 2> {
        let step = 1.0 / QUADRATURE_POINTS as f64;
        (0..QUADRATURE_POINTS)
            .map(|i| self.kuma_survival_at(stretched((i as f64 + 0.5) * step)))
            .reduce(|sum, term| sum + term)
            .expect("at least one quadrature point")
            .mul_scalar(step)
    }

    /// The gate at test time (Bastings et al.): 0 or 1 where that point
    /// mass is the most likely outcome, else the expected gate.
    pub fn deterministic(&self) -> Tensor<B, 2> {
        self.deterministic_with(self.mean())
    }

    /// [`Self::deterministic`] given [`Self::mean`], to compute the
    /// quadrature once where both are wanted.
    pub fn deterministic_with(&self, mean: Tensor<B, 2>) -> Tensor<B, 2> {
        let (zero, one) = (self.prob_zero(), self.prob_one());
        let continuous = (zero.clone() + one.clone()).neg().add_scalar(1.0);
        let zero_or_one = zero.clone().lower_equal(one.clone()).float();
        let continuous_wins = continuous.clone().greater(zero).bool_and(continuous.greater(one));
        zero_or_one.mask_where(continuous_wins, mean)
    }
}

/// Where the gate value `z` falls on the Kumaraswamy's `(0, 1)`.
fn stretched(z: f64) -> f64 {
    (z - LOWER) / (UPPER - LOWER)
}

/// `ln(1 + eˣ) = −ln σ(−x)`: stable, and its gradient is `σ(x)` everywhere
/// (a `max(x, 0) + ln(1 + e^{−|x|})` form gets 1 at exactly 0).
pub(crate) fn softplus<B: Backend, const D: usize>(x: Tensor<B, D>) -> Tensor<B, D> {
    burn::tensor::activation::log_sigmoid(x.neg()).neg()
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Flex;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    type B = Flex;

    /// The Kumaraswamy density on `(0, 1)`, written from its definition.
    fn kuma_density(a: f64, b: f64, k: f64) -> f64 {
        a * b * k.powf(a - 1.0) * (1.0 - k.powf(a)).powf(b - 1.0)
    }

    /// The rectified gate's density on `(0, 1)` (the point masses aside).
    fn density(a: f64, b: f64, z: f64) -> f64 {
        kuma_density(a, b, stretched(z)) / (UPPER - LOWER)
    }

    /// Simpson's rule over `(from, to)` with `n` (even) intervals.
    fn integrate(f: impl Fn(f64) -> f64, from: f64, to: f64, n: usize) -> f64 {
        let h = (to - from) / n as f64;
        let inner: f64 = (1..n).map(|i| f(from + i as f64 * h) * if i % 2 == 1 { 4.0 } else { 2.0 }).sum();
        (f(from) + f(to) + inner) * h / 3.0
    }

    fn gates(pairs: &[(f64, f64)]) -> HardKuma<B> {
        let device = Default::default();
        let column = |pick: fn(&(f64, f64)) -> f64| {
            let values: Vec<f32> = pairs.iter().map(|p| pick(p) as f32).collect();
            Tensor::<B, 1>::from_floats(values.as_slice(), &device).reshape([1, pairs.len()])
        };
        HardKuma { a: column(|p| p.0), b: column(|p| p.1) }
    }

    fn values(t: Tensor<B, 2>) -> Vec<f64> {
        t.into_data().iter::<f32>().map(f64::from).collect()
    }

    const PAIRS: [(f64, f64); 4] = [(0.5, 0.5), (1.0, 1.0), (2.0, 5.0), (0.3, 3.0)];

    /// The point masses and the density's integral over `(0, 1)` add up to 1,
    /// and the CDF at `z` is `P(z = 0)` plus the density's integral up to `z`.
    #[test]
    fn the_density_and_the_point_masses_make_the_cdf() {
        let kuma = gates(&PAIRS);
        let (zero, one) = (values(kuma.prob_zero()), values(kuma.prob_one()));
        for (i, &(a, b)) in PAIRS.iter().enumerate() {
            let inside = integrate(|z| density(a, b, z), 0.0, 1.0, 20_000);
            assert!((zero[i] + inside + one[i] - 1.0).abs() < 1e-4, "({a}, {b}): {} + {inside} + {}", zero[i], one[i]);
            for z in [0.1, 0.4, 0.77] {
                let cdf = values(kuma.cdf(z))[i];
                let by_hand = zero[i] + integrate(|t| density(a, b, t), 0.0, z, 20_000);
                assert!((cdf - by_hand).abs() < 1e-4, "({a}, {b}) at {z}: {cdf} vs {by_hand}");
            }
            assert_eq!(values(kuma.cdf(1.0))[i], 1.0);
            // P(z ≠ 0) is 1 − P(z = 0).
            assert!((values(kuma.prob_nonzero())[i] - (1.0 - zero[i])).abs() < 1e-6);
        }
        // Kuma(1, 1) is uniform: the stretch puts 0.1 / 1.2 below 0 and above 1.
        assert!((zero[1] - 0.1 / 1.2).abs() < 1e-6 && (one[1] - 0.1 / 1.2).abs() < 1e-6);
    }

    /// Samples lie in `[0, 1]`, hit 0 and 1 as often as the point masses
    /// say, follow the CDF in between, and average to the expected gate.
    #[test]
    fn samples_follow_the_stretched_and_rectified_law() {
        let n = 100_000;
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for &(a, b) in &PAIRS {
            let kuma = gates(&vec![(a, b); n]);
            let u: Vec<f32> = (0..n).map(|_| rng.random_range(1e-7f32..1.0 - 1e-7)).collect();
            let u = Tensor::<B, 1>::from_floats(u.as_slice(), &Default::default()).reshape([1, n]);
            let z = values(kuma.sample(u));
            assert!(z.iter().all(|&z| (0.0..=1.0).contains(&z)), "({a}, {b}) leaves [0, 1]");
            let share = |f: &dyn Fn(f64) -> bool| z.iter().filter(|&&z| f(z)).count() as f64 / n as f64;
            let single = |t: Tensor<B, 2>| values(t.narrow(1, 0, 1))[0];
            // Binomial standard errors at n = 100,000 are ≤ 0.0016; 0.006 is ~4σ.
            let margin = 0.006;
            assert!((share(&|z| z == 0.0) - single(kuma.prob_zero())).abs() < margin, "({a}, {b}) P(0)");
            assert!((share(&|z| z == 1.0) - single(kuma.prob_one())).abs() < margin, "({a}, {b}) P(1)");
            for t in [0.2, 0.5, 0.9] {
                assert!((share(&|z| z <= t) - single(kuma.cdf(t))).abs() < margin, "({a}, {b}) CDF at {t}");
            }
            let average = z.iter().sum::<f64>() / n as f64;
            assert!((average - single(kuma.mean())).abs() < margin, "({a}, {b}) mean {average}");
        }
    }

    /// A sample is differentiable in `a` and `b` where it is continuous, and
    /// flat where it is rectified to 0 or 1.
    #[test]
    fn gradients_reach_the_parameters_only_inside_the_interval() {
        type A = burn::backend::Autodiff<B>;
        let device = Default::default();
        let a = Tensor::<A, 1>::from_floats([1.0, 1.0, 1.0], &device).reshape([1, 3]).require_grad();
        let b = Tensor::<A, 1>::from_floats([1.0, 1.0, 1.0], &device).reshape([1, 3]).require_grad();
        // Kuma(1, 1) is uniform: u = 0.02 → k = 0.02 → t < 0; 0.5 → 0.5; 0.99 → t > 1.
        let u = Tensor::<A, 1>::from_floats([0.02, 0.5, 0.99], &device).reshape([1, 3]);
        let z = HardKuma { a: a.clone(), b: b.clone() }.sample(u);
        let got: Vec<f32> = z.clone().inner().into_data().to_vec().unwrap();
        assert!(got[0] == 0.0 && (got[1] - 0.5).abs() < 1e-5 && got[2] == 1.0, "{got:?}");
        let grads = z.sum().backward();
        let grad_a: Vec<f32> = a.grad(&grads).unwrap().into_data().to_vec().unwrap();
        assert!(grad_a[0] == 0.0 && grad_a[1] != 0.0 && grad_a[2] == 0.0, "{grad_a:?}");
    }

    /// At test time a gate is 0 or 1 where that mass dominates, else E[z].
    #[test]
    fn the_test_time_gate_is_the_most_likely_outcome() {
        // Small a: mass near 0 (P(0) largest); (4, 0.2): mass near 1; (2, 2): continuous.
        let kuma = gates(&[(0.05, 5.0), (4.0, 0.2), (2.0, 2.0)]);
        let z = values(kuma.deterministic());
        let mean = values(kuma.mean());
        assert_eq!(z[0], 0.0);
        assert_eq!(z[1], 1.0);
        assert!((z[2] - mean[2]).abs() < 1e-7 && z[2] > 0.0 && z[2] < 1.0, "{z:?}");
    }
}
