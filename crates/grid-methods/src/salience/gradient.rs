//! Gradient salience: `grad{p,l}-{l1,l2,mean}` and `gxi{p,l}` (Bastings et al.
//! 2022 §3.2; Simonyan et al. 2014; Denil et al. 2014 for gradient × input).
//!
//! One forward and one backward pass per batch: the examples of a batch are
//! independent, so the gradient of the summed targets is each example's own.

use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;

use super::target::predicted_class_score;
#[cfg(test)]
use super::target::predicted_class_value;
use super::{Attribution, Examples, GradientMethod, Reduction, Target, Vocabulary, rows_of};
use grid_core::model::{Classifier, TokenBatch, predicted_classes};

/// `grad{p,l}-{l1,l2,mean}` and `gxi{p,l}` for a batch; integrated gradients
/// lives in its own module.
pub fn explain<B: AutodiffBackend, M: Classifier<B>>(
    model: &M,
    method: GradientMethod,
    examples: &Examples<'_>,
    vocab: &Vocabulary,
    device: &B::Device,
) -> Attribution {
    let batch = examples.batch::<B>(vocab.pad, device);
    let (scores, predicted) = match method {
        GradientMethod::Gradient { target, reduction } => {
            let g = input_gradients(model, &batch, target);
            (reduce(g.gradients, reduction), g.predicted)
        }
        GradientMethod::GradientTimesInput { target } => {
            let g = input_gradients(model, &batch, target);
            (gradient_times_input(g.gradients, g.embeddings), g.predicted)
        }
        GradientMethod::IntegratedGradients { .. } => {
            unreachable!("integrated gradients is dispatched to its own module")
        }
    };
    Attribution { scores: rows_of(scores, examples), predicted, completeness_gap: None }
}

/// `∂f/∂e` and `e` for a batch, with the predicted classes.
pub struct InputGradients<B: Backend> {
    /// `[batch, time, dim]`
    pub gradients: Tensor<B, 3>,
    /// `[batch, time, dim]`
    pub embeddings: Tensor<B, 3>,
    pub predicted: Vec<u32>,
}

pub fn input_gradients<B: AutodiffBackend, M: Classifier<B>>(
    model: &M,
    batch: &TokenBatch<B>,
    target: Target,
) -> InputGradients<B::InnerBackend> {
    gradients_at(model, model.embed(batch.ids.clone()).inner(), batch.mask.clone(), None, target)
}

/// `∂f/∂e` at given embeddings. `classes` fixes the explained class per row
/// (SmoothGrad and IG explain the clean input's prediction at other points);
/// `None` explains each row's own prediction.
pub fn gradients_at<B: AutodiffBackend, M: Classifier<B>>(
    model: &M,
    embeddings: Tensor<B::InnerBackend, 3>,
    mask: Tensor<B, 2>,
    classes: Option<&[u32]>,
    target: Target,
) -> InputGradients<B::InnerBackend> {
    // The embeddings become a leaf of the graph so autodiff stops there.
    let leaf = Tensor::<B, 3>::from_inner(embeddings.clone()).require_grad();
    let logits = model.logits_from_embeddings(leaf.clone(), mask);
    let predicted = match classes {
        Some(c) => c.to_vec(),
        None => predicted_classes(logits.clone()),
    };
    let f = predicted_class_score(logits, &predicted, target);
    let grads = f.sum().backward();
    // No gradient means f does not depend on the embeddings at all: zero salience.
    let gradients = leaf.grad(&grads).unwrap_or_else(|| embeddings.zeros_like());
    InputGradients { gradients, embeddings, predicted }
}

/// One score per token, `[batch, time]`.
pub fn reduce<B: Backend>(gradients: Tensor<B, 3>, reduction: Reduction) -> Tensor<B, 2> {
    let [batch, time, _] = gradients.dims();
    let reduced = match reduction {
        Reduction::L1 => gradients.abs().sum_dim(2),
        Reduction::L2 => gradients.powi_scalar(2).sum_dim(2).sqrt(),
        Reduction::Mean => gradients.mean_dim(2),
    };
    reduced.reshape([batch, time])
}

/// `∂f/∂e_i · e_i`, `[batch, time]`.
pub fn gradient_times_input<B: Backend>(gradients: Tensor<B, 3>, embeddings: Tensor<B, 3>) -> Tensor<B, 2> {
    let [batch, time, _] = gradients.dims();
    (gradients * embeddings).sum_dim(2).reshape([batch, time])
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::backend::{Autodiff, Flex};
    use grid_core::model::bilstm::{BiLstmClassifier, BiLstmConfig};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    type Ad = Autodiff<Flex>;

    fn model() -> BiLstmClassifier<Ad> {
        let config = BiLstmConfig {
            vocab_size: 12,
            embedding_dim: 5,
            hidden_size: 4,
            attention_size: 3,
            mlp_size: 6,
            num_outputs: 1,
            dropout: 0.0,
            pad_id: 0,
        };
        BiLstmClassifier::new(&config, &mut ChaCha8Rng::seed_from_u64(11), None, &Default::default())
    }

    fn f_of(
        model: &BiLstmClassifier<Ad>,
        e: &[f32],
        shape: [usize; 3],
        mask: &TokenBatch<Ad>,
        class: u32,
        target: Target,
    ) -> f64 {
        let e = Tensor::<Ad, 3>::from_data(TensorData::new(e.to_vec(), shape), &Default::default());
        let logits = model.logits_from_embeddings(e, mask.mask.clone());
        let v: Vec<f32> = predicted_class_value(logits, &[class], target).into_data().to_vec().unwrap();
        v[0] as f64
    }

    #[test]
    fn gradient_matches_finite_differences() {
        let model = model();
        let device = Default::default();
        let batch = TokenBatch::<Ad>::from_sequences(&[&[3, 7, 2, 9]], 0, &device);
        for target in [Target::Logit, Target::Probability] {
            let g = input_gradients(&model, &batch, target);
            let shape = g.embeddings.dims();
            let e: Vec<f32> = g.embeddings.clone().into_data().to_vec().unwrap();
            let grad: Vec<f32> = g.gradients.clone().into_data().to_vec().unwrap();
            let class = g.predicted[0];
            let h = 1e-2f32;
            for i in 0..e.len() {
                let mut plus = e.clone();
                plus[i] += h;
                let mut minus = e.clone();
                minus[i] -= h;
                let numeric = (f_of(&model, &plus, shape, &batch, class, target)
                    - f_of(&model, &minus, shape, &batch, class, target))
                    / (2.0 * h as f64);
                assert!(
                    (numeric - grad[i] as f64).abs() < 2e-3 + 1e-2 * numeric.abs(),
                    "{target:?} element {i}: numeric {numeric} vs autodiff {}",
                    grad[i]
                );
            }
        }
    }

    #[test]
    fn reductions_by_hand() {
        let device = Default::default();
        let g = Tensor::<Flex, 3>::from_data(TensorData::new(vec![3.0f32, -4.0, 1.0, 1.0], [1, 2, 2]), &device);
        let l1: Vec<f32> = reduce(g.clone(), Reduction::L1).into_data().to_vec().unwrap();
        let l2: Vec<f32> = reduce(g.clone(), Reduction::L2).into_data().to_vec().unwrap();
        let mean: Vec<f32> = reduce(g.clone(), Reduction::Mean).into_data().to_vec().unwrap();
        assert_eq!(l1, vec![7.0, 2.0]);
        assert_eq!(l2, vec![5.0, 2.0f32.sqrt()]);
        assert_eq!(mean, vec![-0.5, 1.0]);
        let e = Tensor::<Flex, 3>::from_data(TensorData::new(vec![1.0f32, 2.0, 0.5, -1.0], [1, 2, 2]), &device);
        let gxi: Vec<f32> = gradient_times_input(g, e).into_data().to_vec().unwrap();
        assert_eq!(gxi, vec![-5.0, -0.5]);
    }

    /// BERT's input gradients (these two tests stood with the model before the
    /// workspace split; they read `input_gradients`, a method of this layer).
    mod bert {
        use super::*;

        use grid_core::model::toy::plain_bert as tiny;

        #[test]
        fn gradients_match_finite_differences() {
            let model = tiny(1, 3);
            let device = Default::default();
            let batch = TokenBatch::<Ad>::from_sequences(&[&[2, 7, 11, 3]], 0, &device);
            let g = input_gradients(&model, &batch, Target::Logit);
            let shape = g.embeddings.dims();
            let e: Vec<f32> = g.embeddings.into_data().to_vec().unwrap();
            let grad: Vec<f32> = g.gradients.into_data().to_vec().unwrap();
            let sign = if g.predicted[0] == 1 { 1.0 } else { -1.0 };
            let f = |values: Vec<f32>| -> f64 {
                let e = Tensor::<Ad, 3>::from_data(TensorData::new(values, shape), &device);
                let l: Vec<f32> = model.logits_from_embeddings(e, batch.mask.clone()).into_data().to_vec().unwrap();
                sign * l[0] as f64
            };
            let h = 1e-2f32;
            for i in 0..e.len() {
                let (mut plus, mut minus) = (e.clone(), e.clone());
                plus[i] += h;
                minus[i] -= h;
                let numeric = (f(plus) - f(minus)) / (2.0 * h as f64);
                assert!(
                    (numeric - grad[i] as f64).abs() < 1e-3 + 1e-2 * numeric.abs(),
                    "element {i}: {numeric} vs {}",
                    grad[i]
                );
            }
        }

        /// BERT normalises `word + position + token type` with LayerNorm, which is
        /// invariant to adding a constant to every dimension, so the gradient with
        /// respect to a word embedding always sums to zero: `grad-mean` on BERT is
        /// rounding noise, whatever the model learned (BENCHMARKS.md, SST-2 MiniLM).
        #[test]
        fn word_embedding_gradients_sum_to_zero() {
            let model = tiny(1, 7);
            let batch = TokenBatch::<Ad>::from_sequences(&[&[2, 7, 11, 5, 3]], 0, &Default::default());
            let g = input_gradients(&model, &batch, Target::Logit);
            let [_, time, dim] = g.gradients.dims();
            let values: Vec<f32> = g.gradients.into_data().to_vec().unwrap();
            for t in 0..time {
                let row = &values[t * dim..(t + 1) * dim];
                let sum: f32 = row.iter().sum();
                let l1: f32 = row.iter().map(|v| v.abs()).sum();
                assert!(l1 > 0.0 && sum.abs() <= 1e-5 * l1, "token {t}: sum {sum}, l1 {l1}");
            }
        }
    }
}
