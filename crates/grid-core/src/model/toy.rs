//! Tiny seeded models of both architectures, for tests here and in the layers
//! above (the `toy-models` feature): toy-sized, or with weights scaled so that
//! a random model's output visibly depends on its input.

use burn::backend::{Autodiff, Flex};
use burn::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::bert::{BertClassifier, BertConfig};
use super::bilstm::{BiLstmClassifier, BiLstmConfig};
use super::rationale::{RationaleClassifier, RationaleConfig, SelectorKind};

pub type Ad = Autodiff<Flex>;

/// Vocabulary size of the tiny models: 0 pad, 1 unk, 2 cls, 3 sep, 4 mask, then words.
pub const VOCAB_SIZE: usize = 24;
/// Three examples of different lengths, as BiLSTM ids and as BERT ids (the
/// same with `[CLS]` = 2 and `[SEP]` = 3 around them).
pub fn three_examples() -> (Vec<Vec<u32>>, Vec<Vec<u32>>) {
    let lstm: Vec<Vec<u32>> = vec![vec![5, 9, 12], vec![7, 6, 11, 20, 8, 14], vec![13]];
    let bert = lstm.iter().map(|ids| [&[2][..], ids, &[3]].concat()).collect();
    (lstm, bert)
}

pub fn bilstm(seed: u64) -> BiLstmClassifier<Ad> {
    bilstm_on(seed, &Default::default())
}

/// The tiny BiLSTM's sizes.
fn bilstm_config() -> BiLstmConfig {
    BiLstmConfig {
        vocab_size: VOCAB_SIZE,
        embedding_dim: 6,
        hidden_size: 5,
        attention_size: 4,
        mlp_size: 7,
        num_outputs: 1,
        dropout: 0.0,
        pad_id: 0,
    }
}

/// [`bilstm`] on any backend: the weights come from the seed, not the backend.
pub fn bilstm_on<B: Backend>(seed: u64, device: &B::Device) -> BiLstmClassifier<B> {
    BiLstmClassifier::new(&bilstm_config(), &mut ChaCha8Rng::seed_from_u64(seed), None, device)
}

/// A rationale model whose predictor is [`bilstm`] and whose selector is
/// drawn from the same seed.
pub fn rationale(seed: u64, selector: SelectorKind) -> RationaleClassifier<Ad> {
    let predictor = bilstm_on::<Ad>(seed, &Default::default());
    let config = RationaleConfig {
        predictor: bilstm_config(),
        selector,
        selector_hidden_size: 4,
        selection_rate: 0.5,
        lambda: 1.0,
        rate_scope: Default::default(),
        predictor_input: Default::default(),
    };
    let mut model = RationaleClassifier::new(&config, &mut ChaCha8Rng::seed_from_u64(seed), None, &Default::default());
    model.predictor = predictor;
    model
}

/// [`bilstm`] with its LSTM input weights, attention projection and MLP scaled
/// by `gain`: saturating gates, peaked attention and a larger output range, where
/// DeepLift's secants differ most from gradients.
pub fn steep_bilstm(seed: u64, gain: f64) -> BiLstmClassifier<Ad> {
    let mut model = bilstm(seed);
    let scale = |w: Tensor<Ad, 2>| w.mul_scalar(gain);
    model.lstm_forward.weight_ih = model.lstm_forward.weight_ih.clone().map(scale);
    model.lstm_backward.weight_ih = model.lstm_backward.weight_ih.clone().map(scale);
    model.attention.projection.weight = model.attention.projection.weight.clone().map(scale);
    if let Some(hidden) = &mut model.hidden {
        hidden.weight = hidden.weight.clone().map(scale);
    }
    model.output.weight = model.output.weight.clone().map(scale);
    model
}

pub fn bert(seed: u64, num_outputs: usize) -> BertClassifier<Ad> {
    bert_on(seed, num_outputs, &Default::default())
}

/// [`bert`] on any backend.
pub fn bert_on<B: Backend>(seed: u64, num_outputs: usize, device: &B::Device) -> BertClassifier<B> {
    let mut config = BertConfig::small(VOCAB_SIZE, 16, 2, 2, 32, 32);
    config.hidden_dropout_prob = 0.0;
    config.attention_probs_dropout_prob = 0.0;
    // Larger weights than BERT's 0.02, so a random model's output depends on its input visibly.
    config.initializer_range = 0.3;
    BertClassifier::new(&config, num_outputs, &mut ChaCha8Rng::seed_from_u64(seed), device)
}

/// A wider BERT with weights of 0.6: attention logits span hundreds, and an
/// input's differ from its reference's by more than `exp` can represent.
pub fn steep_bert(seed: u64, num_outputs: usize) -> BertClassifier<Ad> {
    let mut config = BertConfig::small(VOCAB_SIZE, 64, 2, 4, 128, 64);
    config.hidden_dropout_prob = 0.0;
    config.attention_probs_dropout_prob = 0.0;
    config.initializer_range = 0.6;
    BertClassifier::new(&config, num_outputs, &mut ChaCha8Rng::seed_from_u64(seed), &Default::default())
}

/// A BERT of vocabulary 20 (hidden 16, 2 layers, 2 heads) without dropout,
/// at `BertConfig`'s initialiser range: the model tests' and the input
/// gradients' tests' BERT.
pub fn plain_bert(num_outputs: usize, seed: u64) -> BertClassifier<Ad> {
    let mut config = BertConfig::small(20, 16, 2, 2, 32, 16);
    config.hidden_dropout_prob = 0.0;
    config.attention_probs_dropout_prob = 0.0;
    BertClassifier::new(&config, num_outputs, &mut ChaCha8Rng::seed_from_u64(seed), &Default::default())
}
