//! Tiny models shared by the salience tests: the two real architectures at toy
//! size, and models simple enough that the right attribution is known by hand.

use burn::prelude::*;

pub use grid_core::model::toy::*;

use super::{Examples, Settings, Vocabulary};
use grid_core::model::Classifier;
use grid_core::model::rules::Rules;

/// Vocabulary of the tiny models: 0 pad, 1 unk, 2 cls, 3 sep, 4 mask, then words.
pub const VOCAB: Vocabulary = Vocabulary { pad: 0, unk: 1, mask: Some(4) };

/// One config of every method family, for tests that hold all of them to one
/// standard (buckets, backends).
pub const EVERY_METHOD: [&str; 15] = [
    "gradp-l2",
    "gradl-mean",
    "gxil",
    "igl-zero-20",
    "igl-pad-20",
    "smooth-gxil-8-0.1",
    "limeunk-50",
    "kernelshap-unk-50",
    "occlusion-unk",
    "attn",
    "attn-last",
    "attn-all",
    "attn-scaled",
    "deeplift",
    "random",
];

pub fn settings() -> Settings {
    Settings { seed: 3, internal_batch_size: 16, perturbations_per_eval: 64 }
}

/// Word-only sequences for the BiLSTM (no special tokens).
pub fn lstm_examples(ids: &[Vec<u32>]) -> Examples<'_> {
    Examples {
        ids: ids.iter().map(Vec::as_slice).collect(),
        special: ids.iter().map(|s| vec![false; s.len()]).collect(),
        stream: (0..ids.len() as u64).collect(),
    }
}

/// `[CLS] … [SEP]` sequences for BERT: the first and last token are special.
pub fn bert_examples(ids: &[Vec<u32>]) -> Examples<'_> {
    Examples {
        ids: ids.iter().map(Vec::as_slice).collect(),
        special: ids.iter().map(|s| (0..s.len()).map(|t| t == 0 || t + 1 == s.len()).collect()).collect(),
        stream: (0..ids.len() as u64).collect(),
    }
}

/// A model whose predicted-class probability is linear in token presence:
/// a 1-d embedding `e_t = w[id]` and two logits `ln(½ + s), ln(½ − s)` with
/// `s = Σ_t e_t`, so `p(class 0) = ½ + s` exactly. `w[pad] = w[unk] = w[mask] = 0`,
/// so hiding a token (by `[UNK]`, `[MASK]` or deletion) removes its weight.
#[derive(Debug, Clone)]
pub struct PresenceModel {
    pub weights: Vec<f32>,
}

impl Default for PresenceModel {
    fn default() -> Self {
        Self::new()
    }
}

impl PresenceModel {
    /// Small weights so that `|s| < ½` for short sequences.
    pub fn new() -> Self {
        let weights =
            (0..VOCAB_SIZE).map(|id| if id <= 4 { 0.0 } else { ((id * 7 % 11) as f32 - 5.0) * 0.008 }).collect();
        Self { weights }
    }
}

impl Classifier<Ad> for PresenceModel {
    fn embed(&self, ids: Tensor<Ad, 2, Int>) -> Tensor<Ad, 3> {
        let [batch, time] = ids.dims();
        let device = ids.device();
        let table = Tensor::<Ad, 2>::from_data(TensorData::new(self.weights.clone(), [VOCAB_SIZE, 1]), &device);
        table.select(0, ids.reshape([batch * time])).reshape([batch, time, 1])
    }

    fn logits_from_embeddings(&self, embeddings: Tensor<Ad, 3>, mask: Tensor<Ad, 2>) -> Tensor<Ad, 2> {
        let [batch, time, _] = embeddings.dims();
        let s = (embeddings.reshape([batch, time]) * mask).sum_dim(1); // [batch, 1]
        Tensor::cat(vec![(s.clone() + 0.5).log(), (s.neg() + 0.5).log()], 1)
    }

    fn num_outputs(&self) -> usize {
        2
    }
}

/// A model that remembers every token sequence it was asked to classify (through
/// [`Classifier::logits`], the path perturbation methods take), without padding.
pub struct Recorder<M> {
    pub inner: M,
    seen: std::cell::RefCell<Vec<Vec<u32>>>,
}

impl<M> Recorder<M> {
    pub fn new(inner: M) -> Self {
        Self { inner, seen: Default::default() }
    }

    /// Every sequence classified so far, in evaluation order.
    pub fn sequences(&self) -> Vec<Vec<u32>> {
        self.seen.borrow().clone()
    }
}

impl<M: Classifier<Ad>> Classifier<Ad> for Recorder<M> {
    fn embed(&self, ids: Tensor<Ad, 2, Int>) -> Tensor<Ad, 3> {
        self.inner.embed(ids)
    }

    fn logits_from_embeddings(&self, embeddings: Tensor<Ad, 3>, mask: Tensor<Ad, 2>) -> Tensor<Ad, 2> {
        self.inner.logits_from_embeddings(embeddings, mask)
    }

    fn logits(&self, batch: &grid_core::model::TokenBatch<Ad>) -> Tensor<Ad, 2> {
        let [_, time] = batch.ids.dims();
        let ids: Vec<i64> = batch.ids.clone().into_data().convert::<i64>().to_vec().unwrap_or_default();
        let mask: Vec<f32> = batch.mask.clone().into_data().convert::<f32>().to_vec().unwrap_or_default();
        for (row, keep) in ids.chunks(time).zip(mask.chunks(time)) {
            let seq = row.iter().zip(keep).filter(|(_, m)| **m > 0.5).map(|(&id, _)| id as u32).collect();
            self.seen.borrow_mut().push(seq);
        }
        self.inner.logits(batch)
    }

    fn num_outputs(&self) -> usize {
        self.inner.num_outputs()
    }
}

/// One nonlinearity: `logit = tanh(Σ_t Σ_d e_td)` over the real tokens, with 2-d
/// embeddings, so DeepLift's Rescale value can be written down by hand.
#[derive(Debug, Clone)]
pub struct TanhSumModel {
    /// `[VOCAB_SIZE, 2]`, row-major; the padding row is zero.
    pub table: Vec<f32>,
}

impl Default for TanhSumModel {
    fn default() -> Self {
        Self::new()
    }
}

impl TanhSumModel {
    pub fn new() -> Self {
        let table = (0..VOCAB_SIZE * 2).map(|i| if i < 2 { 0.0 } else { ((i * 5 % 9) as f32 - 4.0) * 0.15 }).collect();
        Self { table }
    }

    /// `Σ_d e_d` of one token.
    pub fn token_sum(&self, id: u32) -> f64 {
        let id = id as usize;
        self.table[2 * id] as f64 + self.table[2 * id + 1] as f64
    }

    fn forward(&self, embeddings: Tensor<Ad, 3>, mask: Tensor<Ad, 2>, rules: Rules) -> Tensor<Ad, 2> {
        let [batch, time, _] = embeddings.dims();
        let s = (embeddings.sum_dim(2).reshape([batch, time]) * mask).sum_dim(1); // [batch, 1]
        rules.tanh(s)
    }
}

impl Classifier<Ad> for TanhSumModel {
    fn embed(&self, ids: Tensor<Ad, 2, Int>) -> Tensor<Ad, 3> {
        let [batch, time] = ids.dims();
        let device = ids.device();
        let table = Tensor::<Ad, 2>::from_data(TensorData::new(self.table.clone(), [VOCAB_SIZE, 2]), &device);
        table.select(0, ids.reshape([batch * time])).reshape([batch, time, 2])
    }

    fn logits_from_embeddings(&self, embeddings: Tensor<Ad, 3>, mask: Tensor<Ad, 2>) -> Tensor<Ad, 2> {
        self.forward(embeddings, mask, Rules::Plain)
    }

    fn num_outputs(&self) -> usize {
        1
    }

    fn deeplift_logits(&self, embeddings: Tensor<Ad, 3>, mask: Tensor<Ad, 2>) -> Option<Tensor<Ad, 2>> {
        Some(self.forward(embeddings, mask, Rules::Rescale))
    }
}
