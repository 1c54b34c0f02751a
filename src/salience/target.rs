//! The scalar `f` that salience explains: the predicted class's logit or
//! probability, per example.

use burn::prelude::*;
use burn::tensor::activation::{sigmoid, softmax};

use super::Target;

/// `f` per example, `[batch]`, for the given predicted classes.
///
/// Binary (one logit): the class-1 logit for class 1 and its negation for class 0,
/// so `sigmoid(f)` is the predicted class's probability. C logits: that class's
/// logit, or its softmax probability.
pub fn predicted_class_score<B: Backend>(logits: Tensor<B, 2>, predicted: &[u32], target: Target) -> Tensor<B, 1> {
    let [batch, outputs] = logits.dims();
    let device = logits.device();
    if outputs == 1 {
        let signs: Vec<f32> = predicted.iter().map(|&c| if c == 1 { 1.0 } else { -1.0 }).collect();
        let signs = Tensor::<B, 2>::from_data(TensorData::new(signs, [batch, 1]), &device);
        let signed = (logits * signs).reshape([batch]);
        match target {
            Target::Logit => signed,
            Target::Probability => sigmoid(signed),
        }
    } else {
        let index: Vec<i64> = predicted.iter().map(|&c| c as i64).collect();
        let index = Tensor::<B, 2, Int>::from_data(TensorData::new(index, [batch, 1]), &device);
        let values = match target {
            Target::Logit => logits,
            Target::Probability => softmax(logits, 1),
        };
        values.gather(1, index).reshape([batch])
    }
}
