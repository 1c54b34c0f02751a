//! What training minimises: the [`Trainable`] forward pass with training
//! noise each architecture implements beside its model, and the
//! cross-entropy losses. Here, with the models, so that a model never reaches
//! up into the trainer (`train` drives these; it does not define them).

use burn::prelude::*;

use super::noise::Noise;
use super::{Classifier, TokenBatch};

/// A model the trainer can fit: a forward pass with training noise. Each
/// architecture implements it beside its model (`model::<architecture>`).
pub trait Trainable<B: Backend>: Classifier<B> {
    fn logits_train(&self, batch: &TokenBatch<B>, noise: &mut Noise) -> Tensor<B, 2>;

    /// What one training step minimises on `batch`, whose first
    /// `labels.len()` rows are examples (the rest fill its bucket and add
    /// nothing). The cross-entropy of [`Self::logits_train`], unless a model
    /// adds terms of its own (a rationale model's selection-rate penalty and
    /// REINFORCE surrogate); its value is what the log reports as the loss.
    fn objective(&self, batch: &TokenBatch<B>, labels: &[u32], noise: &mut Noise) -> Tensor<B, 1> {
        loss(self.logits_train(batch, noise).narrow(0, 0, labels.len()), labels)
    }
}

/// Binary cross-entropy on one logit, or softmax cross-entropy on C logits,
/// averaged over the batch.
pub fn loss<B: Backend>(logits: Tensor<B, 2>, labels: &[u32]) -> Tensor<B, 1> {
    losses(logits, labels).mean()
}

/// [`loss`] of each example, `[batch]`.
pub fn losses<B: Backend>(logits: Tensor<B, 2>, labels: &[u32]) -> Tensor<B, 1> {
    let [batch, outputs] = logits.dims();
    let device = logits.device();
    if outputs == 1 {
        let y: Vec<f32> = labels.iter().map(|&l| l as f32).collect();
        let y = Tensor::<B, 2>::from_data(TensorData::new(y, [batch, 1]), &device);
        // softplus(x) − y·x, written stably: max(x, 0) + log(1 + e^{−|x|}) − y·x.
        let softplus = logits.clone().clamp_min(0.0) + logits.clone().abs().neg().exp().log1p();
        (softplus - y * logits).reshape([batch])
    } else {
        let index: Vec<i64> = labels.iter().map(|&l| l as i64).collect();
        let index = Tensor::<B, 2, Int>::from_data(TensorData::new(index, [batch, 1]), &device);
        let log_probs = burn::tensor::activation::log_softmax(logits, 1);
        log_probs.gather(1, index).reshape([batch]).neg()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::Flex;

    #[test]
    fn binary_loss_matches_formula() {
        let logits =
            Tensor::<Flex, 2>::from_data(TensorData::new(vec![2.0f32, -1.0, 0.0], [3, 1]), &Default::default());
        let got = loss(logits, &[1, 1, 0]).into_scalar();
        let bce =
            |x: f64, y: f64| -(y * (1.0 / (1.0 + (-x).exp())).ln() + (1.0 - y) * (1.0 - 1.0 / (1.0 + (-x).exp())).ln());
        let want = (bce(2.0, 1.0) + bce(-1.0, 1.0) + bce(0.0, 0.0)) / 3.0;
        assert!((got as f64 - want).abs() < 1e-6, "{got} vs {want}");
    }

    #[test]
    fn multiclass_loss_matches_formula() {
        let logits = Tensor::<Flex, 2>::from_data(TensorData::new(vec![1.0f32, 2.0, 3.0], [1, 3]), &Default::default());
        let got = loss(logits, &[0]).into_scalar() as f64;
        let want = -(1.0f64.exp() / (1.0f64.exp() + 2.0f64.exp() + 3.0f64.exp())).ln();
        assert!((got - want).abs() < 1e-5);
    }
}
