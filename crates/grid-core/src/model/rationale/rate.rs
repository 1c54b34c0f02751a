//! The selection rate of a batch and Zhou et al.'s penalty on it (2022,
//! Eq. 5): `λ · |Σᵢ len(rationaleᵢ) / Σᵢ len(reviewᵢ) − %Sel|`, over a
//! mini-batch, in place of the original length and continuity penalties.
//!
//! Their code does not hold the rate printed in Eq. 5 to the target: its CR
//! model penalises the mean of the reviews' own rates, its RL model each
//! review's own rate (in that example's REINFORCE cost). [`RateScope`] names
//! the three. The difference decides what a selector may learn: a batch's
//! rate is met by selecting one class's articles twice over and nothing in
//! the other class's reviews (the absence then tells the label), a penalty
//! on each review's rate charges every review that selects nothing.

use burn::prelude::*;
use serde::{Deserialize, Serialize};

/// Which selection rate the penalty holds to `%Sel`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RateScope {
    /// The batch's rate, `Σ selected / Σ len` (Eq. 5 as printed).
    #[default]
    Batch,
    /// The mean of the reviews' own rates, one penalty for the batch (Zhou
    /// et al.'s code for CR: `|mean(rᵢ) − %Sel|`).
    ReviewMean,
    /// Each review's own rate, `mean(|rᵢ − %Sel|)` (Zhou et al.'s code for RL,
    /// where it is part of each example's cost).
    EachReview,
}

impl RateScope {
    /// Its `rate_penalty = "…"` in the grid file.
    pub fn name(self) -> &'static str {
        match self {
            RateScope::Batch => "batch",
            RateScope::ReviewMean => "review-mean",
            RateScope::EachReview => "each-review",
        }
    }

    /// The penalty on a batch, `[1]`, differentiable in `gates` (the gates,
    /// or each token's probability of selection), `mask` the padding mask.
    pub fn penalty<B: Backend>(
        self,
        gates: Tensor<B, 2>,
        mask: Tensor<B, 2>,
        target: f64,
        lambda: f64,
    ) -> Tensor<B, 1> {
        match self {
            RateScope::Batch => penalty(selection_rate(gates, mask), target, lambda),
            RateScope::ReviewMean => penalty(review_rates(gates, mask).mean(), target, lambda),
            RateScope::EachReview => review_distances(gates, mask, target).mul_scalar(lambda).mean(),
        }
    }

    /// What the penalty adds to each example's REINFORCE advantage, `[batch]`,
    /// no gradient: its value at the sampled selections less its value at
    /// their probabilities (a baseline of the parameters alone, not of this
    /// draw). A batch-wide penalty depends on every example's draw, so each
    /// takes all of it; a per-review one is the mean of the reviews' own, so
    /// each takes its own share.
    pub fn advantages<B: Backend>(
        self,
        selections: Tensor<B, 2>,
        probability: Tensor<B, 2>,
        mask: Tensor<B, 2>,
        target: f64,
        lambda: f64,
    ) -> Tensor<B, 1> {
        let [batch, _] = selections.dims();
        match self {
            RateScope::Batch | RateScope::ReviewMean => {
                let sampled = self.penalty(selections, mask.clone(), target, lambda);
                (sampled - self.penalty(probability, mask, target, lambda)).expand([batch]).detach()
            }
            RateScope::EachReview => {
                let sampled = review_distances(selections, mask.clone(), target);
                (sampled - review_distances(probability, mask, target)).mul_scalar(lambda / batch as f64).detach()
            }
        }
    }
}

impl std::fmt::Display for RateScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `Σ z · m / Σ m` over the whole batch (`[batch, time]` gates or selection
/// probabilities, and the padding mask): one value, `[1]`.
pub fn selection_rate<B: Backend>(gates: Tensor<B, 2>, mask: Tensor<B, 2>) -> Tensor<B, 1> {
    (gates * mask.clone()).sum() / mask.sum().clamp_min(1.0)
}

/// Each review's own rate, `Σₜ zₜ mₜ / Σₜ mₜ`, `[batch]` (0 for an empty row).
pub fn review_rates<B: Backend>(gates: Tensor<B, 2>, mask: Tensor<B, 2>) -> Tensor<B, 1> {
    let [batch, _] = gates.dims();
    ((gates * mask.clone()).sum_dim(1) / mask.sum_dim(1).clamp_min(1.0)).reshape([batch])
}

/// Each review's distance from the target, `|rᵢ − %Sel|`, `[batch]`.
fn review_distances<B: Backend>(gates: Tensor<B, 2>, mask: Tensor<B, 2>, target: f64) -> Tensor<B, 1> {
    review_rates(gates, mask).sub_scalar(target).abs()
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

    /// The three scopes on one batch: reviews of 4 and 2 words, 2 and 0
    /// selected, against %Sel = 0.2 and λ = 2. The batch's rate is 1/3, the
    /// reviews' mean 1/4, their own rates 1/2 and 0.
    #[test]
    fn the_scopes_by_hand() {
        let device = Default::default();
        let gates = Tensor::<B, 2>::from_floats([[1.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]], &device);
        let mask = Tensor::<B, 2>::from_floats([[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 0.0, 0.0]], &device);
        let of = |scope: RateScope| scope.penalty(gates.clone(), mask.clone(), 0.2, 2.0).into_scalar();
        assert!((of(RateScope::Batch) - 2.0 * (1.0 / 3.0 - 0.2)).abs() < 1e-6);
        assert!((of(RateScope::ReviewMean) - 2.0 * 0.05).abs() < 1e-6);
        assert!((of(RateScope::EachReview) - (0.3 + 0.2)).abs() < 1e-6);
    }

    /// The selection that tells the label by its absence: one class's
    /// reviews select twice the target, the other's nothing. The batch's
    /// rate and the reviews' mean meet the target; each review's own rate
    /// charges both kinds of review.
    #[test]
    fn only_each_reviews_rate_charges_a_review_that_selects_nothing() {
        let device = Default::default();
        let gates = Tensor::<B, 2>::from_floats([[1.0, 1.0, 0.0, 0.0, 0.0], [0.0; 5]], &device);
        let mask = Tensor::<B, 2>::ones([2, 5], &device);
        let of = |scope: RateScope| scope.penalty(gates.clone(), mask.clone(), 0.2, 1.0).into_scalar();
        assert!(of(RateScope::Batch).abs() < 1e-6 && of(RateScope::ReviewMean).abs() < 1e-6);
        assert!((of(RateScope::EachReview) - 0.2).abs() < 1e-6);
    }

    /// REINFORCE's share: a batch-wide penalty gives every example its whole
    /// difference from the expected one; a per-review penalty each example
    /// its own, over the batch size.
    #[test]
    fn the_advantages_by_hand() {
        let device = Default::default();
        let sampled = Tensor::<B, 2>::from_floats([[1.0, 1.0], [0.0, 0.0]], &device);
        let probability = Tensor::<B, 2>::from_floats([[0.5, 0.5], [0.5, 0.5]], &device);
        let mask = Tensor::<B, 2>::ones([2, 2], &device);
        let of = |scope: RateScope| -> Vec<f32> {
            scope.advantages(sampled.clone(), probability.clone(), mask.clone(), 0.5, 2.0).into_data().to_vec().unwrap()
        };
        // Batch: the sampled rate 0.5 costs 0, the expected 0.5 costs 0.
        assert_eq!(of(RateScope::Batch), [0.0, 0.0]);
        // Each review: |1 − 0.5| and |0 − 0.5| against |0.5 − 0.5|, times λ / 2.
        let each = of(RateScope::EachReview);
        assert!((each[0] - 0.5).abs() < 1e-6 && (each[1] - 0.5).abs() < 1e-6, "{each:?}");
    }
}
