//! ModernBERT behind the [`Classifier`] seam: every gradient method, LIME,
//! KernelSHAP, occlusion and the attention views work from it. DeepLift's
//! Rescale rule is not derived for its GeGLU gate and rotary positions, so
//! `deeplift_logits` is `None` and the method is refused for the model.

use std::path::Path;

use burn::prelude::*;
use rand_chacha::ChaCha8Rng;

use super::config::Pooling;
use super::encoder::ModernBertClassifier;
use crate::model::bert::load::{LoadError, LoadReport};
use crate::model::checkpoint::CheckpointError;
use crate::model::noise::Noise;
use crate::model::objective::Trainable;
use crate::model::pretrained::{ClassifierStart, PretrainedClassifier};
use crate::model::{AttentionLeaf, AttentionView, Classifier, TokenBatch};
use crate::text::subword::SubwordEncoder;

impl<B: Backend> Classifier<B> for ModernBertClassifier<B> {
    fn family(&self) -> &'static str {
        "ModernBERT"
    }

    fn embed(&self, ids: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        ModernBertClassifier::embed(self, ids)
    }

    fn logits_from_embeddings(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Tensor<B, 2> {
        self.classify(embeddings, mask)
    }

    fn num_outputs(&self) -> usize {
        self.classifier.weight.dims()[1]
    }

    fn max_length(&self) -> Option<usize> {
        Some(self.config().max_position_embeddings)
    }

    fn attention_scores(
        &self,
        embeddings: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        view: AttentionView,
    ) -> Option<Tensor<B, 2>> {
        crate::model::first_token_attention(self.encode_with(embeddings, mask, false).1, view)
    }

    /// Only with `[CLS]` pooling: under mean pooling every query of the last
    /// layer reaches the output, not query 0 alone.
    fn attention_leaf(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Option<AttentionLeaf<B>> {
        if self.config().classifier_pooling != Pooling::Cls {
            return None;
        }
        let (hidden, mut attentions) = self.encode_with(embeddings, mask.clone(), true);
        let logits = self.head_logits(hidden, mask);
        Some(AttentionLeaf { probs: attentions.pop()?, logits })
    }
}

impl<B: Backend> PretrainedClassifier<B> for ModernBertClassifier<B> {
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

    fn with_dropout(self, p: f64) -> Self {
        ModernBertClassifier::with_dropout(self, p)
    }

    fn max_positions(&self) -> Option<usize> {
        Some(self.config().max_position_embeddings)
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

impl<B: Backend> Trainable<B> for ModernBertClassifier<B> {
    fn logits_train(&self, batch: &TokenBatch<B>, noise: &mut Noise) -> Tensor<B, 2> {
        self.classify_train(self.embed(batch.ids.clone()), batch.mask.clone(), noise)
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::TensorData;

    use super::*;
    use crate::backend::CpuAutodiff;
    use crate::model::modernbert::load::load_classifier;

    type B = CpuAutodiff;

    fn model() -> ModernBertClassifier<B> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/modernbert_transformers");
        load_classifier::<B>(&dir, 3, &Default::default()).unwrap().1
    }

    fn batch() -> (Tensor<B, 2, Int>, Tensor<B, 2>) {
        let device = Default::default();
        let ids = Tensor::<B, 2, Int>::from_data(
            TensorData::new(vec![1i64, 40, 41, 42, 43, 44, 45, 2, 1, 50, 51, 2, 3, 3, 3, 3], [2, 8]),
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
            // Mean pooling and masked keys: padding has no effect on the logits.
            assert_eq!(*m == 0.0, *g == 0.0, "gradient {g} at a token with mask {m}");
        }
    }

    #[test]
    fn attention_views_sum_to_one_over_real_tokens() {
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
        assert!(
            model
                .attention_scores(Classifier::embed(&model, ids.clone()), mask.clone(), AttentionView::Additive)
                .is_none()
        );
        // Mean pooling: the scaled-attention leaf would not be the output's only path.
        assert!(model.attention_leaf(Classifier::embed(&model, ids.clone()), mask.clone()).is_none());
        assert!(model.deeplift_logits(Classifier::embed(&model, ids), mask).is_none());
    }

    /// Fine-tuning from a checkpoint with a fresh classification layer and
    /// rows for new tokens trains every parameter; its dropout draws.
    #[test]
    fn every_parameter_trains_and_dropout_draws() {
        use rand::SeedableRng;
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/modernbert_transformers");
        let device = Default::default();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let (model, _) = crate::model::modernbert::load::load_pretrained::<B>(
            &dir,
            1,
            crate::model::modernbert::load::ClassifierStart::Fresh,
            &mut rng,
            &device,
        )
        .unwrap();
        let model = crate::model::modernbert::load::add_word_embeddings(model, 2, &mut rng).with_dropout(0.3);
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
