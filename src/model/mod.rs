//! Classifiers behind one seam.
//!
//! Every salience method works from the same three operations: embed token ids,
//! run the classifier from (possibly perturbed) input embeddings, and let burn's
//! autodiff differentiate the logits with respect to those embeddings. A new
//! architecture that implements [`Classifier`] gets every gradient method for free;
//! `salience` never matches on the architecture.

pub mod bert;
pub mod bilstm;
pub mod checkpoint;
pub mod dtype;
pub mod glove;
pub mod hub;
pub mod init;
pub mod noise;
pub mod predict;

use burn::prelude::*;

/// A right-padded batch of token ids with its padding mask.
#[derive(Debug, Clone)]
pub struct TokenBatch<B: Backend> {
    /// `[batch, time]` token ids; padding positions hold the model's pad id.
    pub ids: Tensor<B, 2, Int>,
    /// `[batch, time]`: 1.0 at real tokens, 0.0 at padding.
    pub mask: Tensor<B, 2>,
}

impl<B: Backend> TokenBatch<B> {
    /// Pads `sequences` on the right with `pad_id` to the longest one.
    pub fn from_sequences(sequences: &[&[u32]], pad_id: u32, device: &B::Device) -> Self {
        let batch = sequences.len();
        let time = sequences.iter().map(|s| s.len()).max().unwrap_or(0).max(1);
        let mut ids = vec![pad_id as i64; batch * time];
        let mut mask = vec![0.0f32; batch * time];
        for (row, seq) in sequences.iter().enumerate() {
            for (t, &id) in seq.iter().enumerate() {
                ids[row * time + t] = id as i64;
                mask[row * time + t] = 1.0;
            }
        }
        Self {
            ids: Tensor::from_data(TensorData::new(ids, [batch, time]), device),
            mask: Tensor::from_data(TensorData::new(mask, [batch, time]), device),
        }
    }
}

/// What a classifier exposes to training, verification and salience.
///
/// Outputs are `[batch, num_outputs]` logits; a binary model has one output and
/// `p(y=1|x) = sigmoid(logit)` (PROTOCOL §1).
pub trait Classifier<B: Backend> {
    /// Input embeddings `e_i` (word embeddings before anything position-dependent
    /// is added): the point salience differentiates against.
    fn embed(&self, ids: Tensor<B, 2, Int>) -> Tensor<B, 3>;

    /// Logits from input embeddings, in inference mode (no dropout).
    fn logits_from_embeddings(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Tensor<B, 2>;

    /// Logits for a token batch, in inference mode.
    fn logits(&self, batch: &TokenBatch<B>) -> Tensor<B, 2> {
        self.logits_from_embeddings(self.embed(batch.ids.clone()), batch.mask.clone())
    }

    /// Number of logits per example: 1 for a binary model, C otherwise.
    fn num_outputs(&self) -> usize;
}

/// Predicted class per example from `[batch, num_outputs]` logits.
pub fn predicted_classes<B: Backend>(logits: Tensor<B, 2>) -> Vec<u32> {
    let [batch, outputs] = logits.dims();
    let values: Vec<f32> = logits.into_data().convert::<f32>().to_vec().unwrap_or_default();
    (0..batch)
        .map(|row| {
            let row = &values[row * outputs..(row + 1) * outputs];
            if outputs == 1 {
                u32::from(row[0] > 0.0)
            } else {
                // Lowest index wins ties, so predictions are deterministic.
                let mut best = 0;
                for (class, &v) in row.iter().enumerate() {
                    if v > row[best] {
                        best = class;
                    }
                }
                best as u32
            }
        })
        .collect()
}
