//! BERT-family sequence classifiers (`BertForSequenceClassification`): a
//! Hugging Face BERT encoder, dropout on the pooled `[CLS]` output, and one linear
//! layer to 1 logit (binary) or C logits.

pub mod config;
pub mod encoder;
pub mod load;

use burn::module::Param;
use burn::nn::Linear;
use burn::prelude::*;
use rand_chacha::ChaCha8Rng;

pub use config::BertConfig;
use encoder::BertModel;

use super::Classifier;
use super::init;
use super::noise::Noise;

#[derive(Module, Debug)]
pub struct BertClassifier<B: Backend> {
    pub bert: BertModel<B>,
    pub classifier: Linear<B>,
    dropout: f64,
}

impl<B: Backend> BertClassifier<B> {
    /// A classifier on `bert` with a fresh head (N(0, initializer_range²), bias 0).
    pub fn with_encoder(
        bert: BertModel<B>,
        config: &BertConfig,
        num_outputs: usize,
        rng: &mut ChaCha8Rng,
        device: &B::Device,
    ) -> Self {
        let classifier = Linear {
            weight: init::normal(rng, [config.hidden_size, num_outputs], config.initializer_range, device),
            bias: Some(Param::from_tensor(Tensor::zeros([num_outputs], device))),
        };
        Self { bert, classifier, dropout: config.classifier_dropout() }
    }

    /// A randomly initialised encoder and head.
    pub fn new(config: &BertConfig, num_outputs: usize, rng: &mut ChaCha8Rng, device: &B::Device) -> Self {
        let bert = BertModel::new(config, rng, device);
        Self::with_encoder(bert, config, num_outputs, rng, device)
    }

    /// Logits from word embeddings; with `noise`, the training forward pass.
    pub fn forward(&self, words: Tensor<B, 3>, mask: Tensor<B, 2>, mut noise: Option<&mut Noise>) -> Tensor<B, 2> {
        let pooled = self.bert.forward_from_words(words, mask, false, noise.as_deref_mut()).pooled;
        let pooled = match noise {
            Some(noise) => noise.dropout_on_device(pooled, self.dropout),
            None => pooled,
        };
        self.classifier.forward(pooled)
    }

    /// Attention probabilities of every layer, `[batch, heads, time, time]` each.
    pub fn attentions(&self, words: Tensor<B, 3>, mask: Tensor<B, 2>) -> Vec<Tensor<B, 4>> {
        self.bert.forward_from_words(words, mask, true, None).attentions
    }
}

impl<B: Backend> Classifier<B> for BertClassifier<B> {
    fn embed(&self, ids: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        self.bert.embeddings.words(ids)
    }

    fn logits_from_embeddings(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Tensor<B, 2> {
        self.forward(embeddings, mask, None)
    }

    fn num_outputs(&self) -> usize {
        self.classifier.weight.dims()[1]
    }
}
