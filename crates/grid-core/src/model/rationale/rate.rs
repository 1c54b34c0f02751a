//! The selection rate of a batch and Zhou et al.'s penalty on it (2022,
//! Eq. 5): `λ · |Σᵢ len(rationaleᵢ) / Σᵢ len(reviewᵢ) − %Sel|`, over a
//! mini-batch, in place of the original length and continuity penalties.

use burn::prelude::*;

/// `Σ z · m / Σ m` over the whole batch (`[batch, time]` gates or selection
/// probabilities, and the padding mask): one value, `[1]`.
pub fn selection_rate<B: Backend>(gates: Tensor<B, 2>, mask: Tensor<B, 2>) -> Tensor<B, 1> {
    (gates * mask.clone()).sum() / mask.sum().clamp_min(1.0)
}

/// Eq. 5 on a batch's rate: `λ · |rate − target|`, `[1]`.
pub fn penalty<B: Backend>(rate: Tensor<B, 1>, target: f64, lambda: f64) -> Tensor<B, 1> {
    rate.sub_scalar(target).abs().mul_scalar(lambda)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Flex;

    type B = Flex;
    type A = burn::backend::Autodiff<B>;

    /// Two reviews of 4 and 2 real tokens (one padded): 3 of 6 words selected
    /// is a rate of 0.5 whatever the padding holds; against %Sel = 0.2 and
    /// λ = 2 the penalty is 2 · 0.3 = 0.6, and its gradient pushes every real
    /// token's gate down by λ / Σ len = 1/3, padding untouched.
    #[test]
    fn the_penalty_by_hand() {
        let device = Default::default();
        let gates = Tensor::<A, 2>::from_floats([[1.0, 0.0, 1.0, 0.0], [1.0, 0.0, 1.0, 1.0]], &device).require_grad();
        let mask = Tensor::<A, 2>::from_floats([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]], &device);
        let rate = selection_rate(gates.clone(), mask);
        assert!((rate.clone().into_scalar() - 0.5).abs() < 1e-7);
        let penalty = penalty(rate, 0.2, 2.0);
        assert!((penalty.clone().into_scalar() - 0.6).abs() < 1e-6);
        let grad: Vec<f32> = gates.grad(&penalty.backward()).unwrap().into_data().to_vec().unwrap();
        let third = 1.0 / 3.0;
        let expected = [third, third, third, third, third, third, 0.0, 0.0];
        for (g, e) in grad.iter().zip(expected) {
            assert!((g - e).abs() < 1e-6, "{grad:?}");
        }
        // Below the target the sign turns: rate 0 against 0.2 costs 0.4.
        let none = selection_rate(Tensor::<B, 2>::zeros([1, 3], &device), Tensor::<B, 2>::ones([1, 3], &device));
        assert!((super::penalty(none, 0.2, 2.0).into_scalar() - 0.4).abs() < 1e-6);
    }
}
