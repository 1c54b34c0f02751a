//! The scalar `f` that salience explains: the predicted class's logit or
//! probability, per example.
//!
//! For the probability the gradient is taken through a surrogate that is exact
//! but stable. A shortcut model is very confident (logits of 20 and more), and
//! `σ(l)` rounds to 1.0 in f32 there, so autodiff through `sigmoid` (whose
//! backward is `s·(1−s)`) returns exactly zero and every token ties. By the chain
//! rule `∂p/∂e = Σ_j (∂p/∂l_j) ∂l_j/∂e`, so `Σ_j stop_grad(∂p/∂l_j) · l_j` has the
//! same gradient as `p`; its weights are computed with `1 − p` written as the sum
//! of the other classes' probabilities (`σ(−l)` for one logit), which stays
//! representable down to about `1e-38`.

use burn::prelude::*;
use burn::tensor::activation::{sigmoid, softmax};

use super::Target;

/// The predicted class's logit per example, `[batch]`: the class-1 logit for
/// class 1 and its negation for class 0 when there is one output.
fn predicted_logit<B: Backend>(logits: Tensor<B, 2>, predicted: &[u32]) -> Tensor<B, 1> {
    let [batch, outputs] = logits.dims();
    let device = logits.device();
    if outputs == 1 {
        let signs: Vec<f32> = predicted.iter().map(|&c| if c == 1 { 1.0 } else { -1.0 }).collect();
        let signs = Tensor::<B, 2>::from_data(TensorData::new(signs, [batch, 1]), &device);
        (logits * signs).reshape([batch])
    } else {
        logits.gather(1, class_index(predicted, &device)).reshape([batch])
    }
}

fn class_index<B: Backend>(predicted: &[u32], device: &B::Device) -> Tensor<B, 2, Int> {
    let index: Vec<i64> = predicted.iter().map(|&c| c as i64).collect();
    Tensor::from_data(TensorData::new(index, [predicted.len(), 1]), device)
}

/// `f` per example, `[batch]`, as a function whose gradient is the gradient of
/// the target. For [`Target::Logit`] it is the logit itself; for
/// [`Target::Probability`] a surrogate (see the module docs) whose *value* is
/// not the probability — use [`predicted_class_value`] for that.
pub fn predicted_class_score<B: Backend>(logits: Tensor<B, 2>, predicted: &[u32], target: Target) -> Tensor<B, 1> {
    let [batch, outputs] = logits.dims();
    match target {
        Target::Logit => predicted_logit(logits, predicted),
        Target::Probability if outputs == 1 => {
            let s = predicted_logit(logits, predicted);
            let slope = (sigmoid(s.clone()) * sigmoid(s.clone().neg())).detach();
            s * slope
        }
        Target::Probability => {
            // ∂p_c/∂l_j = p_c (δ_cj − p_j), with the c-th entry p_c Σ_{j≠c} p_j.
            let device = logits.device();
            let p = softmax(logits.clone().detach(), 1);
            let index = class_index(predicted, &device);
            let p_c = p.clone().gather(1, index.clone()); // [batch, 1]
            let onehot = Tensor::<B, 2>::zeros([batch, outputs], &device).scatter(
                1,
                index,
                Tensor::ones([batch, 1], &device),
                burn::tensor::IndexingUpdateOp::Add,
            );
            // Σ_{j≠c} p_j summed term by term: `1 − p_c` would round to 0 for a confident model.
            let others = (p.clone() * (onehot.clone().neg() + 1.0)).sum_dim(1);
            let weights = p_c.clone() * (onehot.clone() * others - (onehot.neg() + 1.0) * p);
            (logits * weights.detach()).sum_dim(1).reshape([batch])
        }
    }
}

/// The target's value per example: the logit, or the predicted class's probability.
pub fn predicted_class_value<B: Backend>(logits: Tensor<B, 2>, predicted: &[u32], target: Target) -> Tensor<B, 1> {
    let [batch, outputs] = logits.dims();
    match target {
        Target::Logit => predicted_logit(logits, predicted),
        Target::Probability if outputs == 1 => sigmoid(predicted_logit(logits, predicted)),
        Target::Probability => {
            let device = logits.device();
            softmax(logits, 1).gather(1, class_index(predicted, &device)).reshape([batch])
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::{Autodiff, Flex};

    type Ad = Autodiff<Flex>;

    fn gradient(logits: Vec<f32>, shape: [usize; 2], predicted: &[u32], target: Target) -> Vec<f32> {
        let l = Tensor::<Ad, 2>::from_data(TensorData::new(logits, shape), &Default::default()).require_grad();
        let grads = predicted_class_score(l.clone(), predicted, target).sum().backward();
        l.grad(&grads).unwrap().into_data().to_vec().unwrap()
    }

    #[test]
    fn probability_gradient_is_exact_and_survives_saturation() {
        // One logit: d p/d l = σ(s)σ(−s) · sign.
        let g = gradient(vec![2.0, -3.0, 30.0], [3, 1], &[1, 0, 1], Target::Probability);
        let slope = |s: f64| (1.0 / (1.0 + (-s).exp())) * (1.0 / (1.0 + s.exp()));
        assert!((g[0] as f64 - slope(2.0)).abs() < 1e-6);
        assert!((g[1] as f64 + slope(3.0)).abs() < 1e-6, "class 0: p = σ(−l)");
        assert!(g[2] > 0.0, "σ(30) rounds to 1 in f32, yet the gradient must not vanish: {}", g[2]);
        assert!(((g[2] as f64) / slope(30.0) - 1.0).abs() < 1e-3);
    }

    #[test]
    fn softmax_probability_gradient_matches_the_formula() {
        let logits = [1.0f64, 2.0, 0.5];
        let z: f64 = logits.iter().map(|l| l.exp()).sum();
        let p: Vec<f64> = logits.iter().map(|l| l.exp() / z).collect();
        let g = gradient(logits.iter().map(|&l| l as f32).collect(), [1, 3], &[1], Target::Probability);
        for j in 0..3 {
            let want = p[1] * (if j == 1 { 1.0 } else { 0.0 } - p[j]);
            assert!((g[j] as f64 - want).abs() < 1e-6, "{j}: {} vs {want}", g[j]);
        }
    }

    #[test]
    fn softmax_probability_gradient_survives_saturation() {
        // p_c rounds to 1.0 in f32, yet 1 − p_c = 2e^-30 ≈ 1.9e-13 must drive the gradient.
        let g = gradient(vec![30.0, 0.0, 0.0], [1, 3], &[0], Target::Probability);
        let rest = (-30f64).exp();
        assert!(((g[0] as f64) / (2.0 * rest) - 1.0).abs() < 1e-3, "{g:?}");
        assert!(((g[1] as f64) / (-rest) - 1.0).abs() < 1e-3, "{g:?}");
    }

    #[test]
    fn values() {
        let l = Tensor::<Flex, 2>::from_data(TensorData::new(vec![2.0f32, -1.0], [2, 1]), &Default::default());
        let v: Vec<f32> = predicted_class_value(l.clone(), &[1, 0], Target::Probability).into_data().to_vec().unwrap();
        assert!((v[0] - 0.880797).abs() < 1e-5 && (v[1] - 0.731059).abs() < 1e-5);
        let v: Vec<f32> = predicted_class_value(l, &[1, 0], Target::Logit).into_data().to_vec().unwrap();
        assert_eq!(v, vec![2.0, 1.0]);
    }
}
