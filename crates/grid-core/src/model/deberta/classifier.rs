//! DeBERTa behind the [`Classifier`] seam and [`Trainable`]: every gradient
//! method, LIME, KernelSHAP, occlusion and the attention views work from it.
//! DeepLift's Rescale rule is not derived for its disentangled attention, so
//! `deeplift_logits` is `None` and the method is refused for the model.

use std::path::Path;

use burn::prelude::*;
use rand_chacha::ChaCha8Rng;

use super::encoder::DebertaClassifier;
use crate::model::bert::load::{LoadError, LoadReport};
use crate::model::checkpoint::CheckpointError;
use crate::model::noise::Noise;
use crate::model::objective::Trainable;
use crate::model::pretrained::{ClassifierStart, PretrainedClassifier};
use crate::model::{AttentionLeaf, AttentionView, Classifier, TokenBatch};
use crate::text::subword::SubwordEncoder;

impl<B: Backend> Classifier<B> for DebertaClassifier<B> {
    fn family(&self) -> &'static str {
        "DeBERTa"
    }

    fn embed(&self, ids: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        DebertaClassifier::embed(self, ids)
    }

    fn logits_from_embeddings(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Tensor<B, 2> {
        self.classify(embeddings, mask)
    }

    fn num_outputs(&self) -> usize {
        self.classifier.weight.dims()[1]
    }

    fn max_length(&self) -> Option<usize> {
        // Relative positions take any length; absolute ones, where a
        // checkpoint adds them, end at their table.
        self.config().position_biased_input.then_some(self.config().max_position_embeddings)
    }

    fn attention_scores(
        &self,
        embeddings: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        view: AttentionView,
    ) -> Option<Tensor<B, 2>> {
        crate::model::first_token_attention(self.encode_with(embeddings, mask, None).1, view)
    }

    /// The last layer's probabilities made a leaf: only `[CLS]`'s row (query
    /// 0) reaches the pooler.
    fn attention_leaf(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Option<AttentionLeaf<B>> {
        let (hidden, mut attentions) = self.forward(embeddings, mask, true, None);
        let logits = self.head_logits(hidden, None);
        Some(AttentionLeaf { probs: attentions.pop()?, logits })
    }
}

impl<B: Backend> PretrainedClassifier<B> for DebertaClassifier<B> {
    const MODEL_TYPE: &'static str = super::MODEL_TYPE;

    fn load_pretrained(
        dir: &Path,
        num_outputs: usize,
        start: ClassifierStart,
        rng: &mut ChaCha8Rng,
        device: &B::Device,
    ) -> Result<(Self, LoadReport), LoadError> {
        super::load::load_pretrained(dir, num_outputs, start, rng, device)
    }

    fn vocab_size(&self) -> usize {
        self.config().vocab_size
    }

    fn with_added_tokens(self, added: usize, rng: &mut ChaCha8Rng) -> Self {
        super::load::add_word_embeddings(self, added, rng)
    }

    fn with_dropout(mut self, p: f64) -> Self {
        self.config_mut().set_dropout(p);
        self
    }

    fn max_positions(&self) -> Option<usize> {
        Classifier::max_length(self)
    }

    fn save(
        &self,
        dir: &Path,
        num_outputs: usize,
        max_length: usize,
        tokenizer: &SubwordEncoder,
    ) -> Result<(), CheckpointError> {
        super::saved::save(dir, self, num_outputs, max_length, tokenizer)
    }
}

impl<B: Backend> Trainable<B> for DebertaClassifier<B> {
    fn logits_train(&self, batch: &TokenBatch<B>, noise: &mut Noise) -> Tensor<B, 2> {
        self.classify_train(self.embed(batch.ids.clone()), batch.mask.clone(), noise)
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::TensorData;

    use super::*;
    use crate::backend::CpuAutodiff;
    use crate::model::deberta::load::load_classifier;

    type B = CpuAutodiff;

    fn model() -> DebertaClassifier<B> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/deberta_transformers");
        load_classifier::<B>(&dir, 3, &Default::default()).unwrap()
    }

    fn batch() -> (Tensor<B, 2, Int>, Tensor<B, 2>) {
        let device = Default::default();
        let ids = Tensor::<B, 2, Int>::from_data(
            TensorData::new(vec![1i64, 40, 41, 42, 43, 44, 45, 2, 1, 50, 51, 2, 0, 0, 0, 0], [2, 8]),
            &device,
        );
        let mask = Tensor::<B, 2>::from_data(
            TensorData::new(vec![1.0f32, 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 1., 0., 0., 0., 0.], [2, 8]),
            &device,
        );
        (ids, mask)
    }

    #[test]
    fn logits_have_a_gradient_at_every_real_embedding() {
        let model = model();
        let (ids, mask) = batch();
        let embeddings = Classifier::embed(&model, ids).detach().require_grad();
        let logits = model.logits_from_embeddings(embeddings.clone(), mask.clone());
        assert_eq!(logits.dims(), [2, 3]);
        let grads = logits.narrow(1, 0, 1).sum().backward();
        let grad = embeddings.grad(&grads).unwrap();
        let per_token: Vec<f32> = grad.abs().sum_dim(2).reshape([16]).into_data().to_vec().unwrap();
        let mask: Vec<f32> = mask.into_data().to_vec().unwrap();
        for (g, m) in per_token.iter().zip(&mask) {
            assert!(g.is_finite());
            // Padding is zeroed after the embeddings' norm and hidden as a key.
            assert_eq!(*m == 0.0, *g == 0.0, "gradient {g} at a token with mask {m}");
        }
    }

    /// The views sum to one over the real tokens; scaled attention has its
    /// leaf (only `[CLS]`'s row reaches the pooler), DeepLift no rules.
    #[test]
    fn attention_views_and_what_is_refused() {
        let model = model();
        let (ids, mask) = batch();
        for view in [AttentionView::LastLayer, AttentionView::AllLayers] {
            let embeddings = Classifier::embed(&model, ids.clone());
            let scores: Vec<f32> =
                model.attention_scores(embeddings, mask.clone(), view).unwrap().into_data().to_vec().unwrap();
            let mask: Vec<f32> = mask.clone().into_data().to_vec().unwrap();
            for row in 0..2 {
                let total: f32 = scores[row * 8..(row + 1) * 8].iter().sum();
                assert!((total - 1.0).abs() < 1e-5, "{view:?}: {total}");
                for t in 0..8 {
                    if mask[row * 8 + t] == 0.0 {
                        assert_eq!(scores[row * 8 + t], 0.0);
                    }
                }
            }
        }
        let embeddings = Classifier::embed(&model, ids.clone());
        let leaf = model.attention_leaf(embeddings.clone(), mask.clone()).unwrap();
        let plain: Vec<f32> =
            model.logits_from_embeddings(embeddings.clone(), mask.clone()).into_data().to_vec().unwrap();
        let through_leaf: Vec<f32> = leaf.logits.into_data().to_vec().unwrap();
        assert_eq!(plain, through_leaf);
        assert!(model.deeplift_logits(embeddings, mask).is_none());
    }

    /// Every parameter trains (the relative table and its norm included);
    /// dropout draws in training.
    #[test]
    fn every_parameter_trains_and_dropout_draws() {
        use rand::SeedableRng;
        let model = model();
        let (ids, mask) = batch();
        let batch = TokenBatch { ids, mask };
        // The masks come from the backend's one RNG, which trainings reseed.
        let _turn = crate::train::ONE_TRAINING_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
        let mut noise_rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
        let mut noise = Noise::new(&mut noise_rng);
        let logits = model.logits_train(&batch, &mut noise);
        let grads = logits.clone().sum().backward();
        assert_eq!(crate::model::params_without_grad(&model, &grads).0, 0);
        let eval: Vec<f32> = model.logits(&batch).into_data().to_vec().unwrap();
        let train: Vec<f32> = logits.into_data().to_vec().unwrap();
        assert_ne!(eval, train);
    }
}
