//! Few tensor shapes: every batch a model sees padded up to a bucket.
//!
//! A GPU backend compiles (and, for matmuls, autotunes) kernels per tensor shape;
//! a run that sends every batch length, every last batch and every IG chunk of a
//! new size through a model spends its time compiling (NOTES-gpu: no model trained
//! in five minutes on an H100). [`Buckets`] rounds the time axis up to a multiple
//! and the batch axis up to a power of two, so one model sees a handful of shapes.
//!
//! Padding is exact for the models here: padded positions are masked out of every
//! attention and recurrence, and padded rows are dropped from every result. A
//! padded row holds one masked-in pad token (so no softmax runs over an empty set)
//! and zero embeddings; it never meets a real row, since every operation is per row.
//!
//! [`Shaped`] applies the buckets to any [`Classifier`], so every salience method,
//! the erasure passes and evaluation get them without knowing; training pads its
//! batches with [`TokenBatch::bucketed`] and cuts the logits back before the loss.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use burn::prelude::*;

use super::rationale::Selection;
use super::{AttentionLeaf, AttentionView, Classifier, TokenBatch};
use crate::buckets::Buckets;

/// The distinct `[rows, time]` shapes that reached a model: what a GPU backend
/// compiles kernels for. Shared by clones.
#[derive(Debug, Clone, Default)]
pub struct ShapeLog(Arc<Mutex<BTreeSet<[usize; 2]>>>);

impl ShapeLog {
    pub fn record(&self, rows: usize, time: usize) {
        if let Ok(mut shapes) = self.0.lock() {
            shapes.insert([rows, time]);
        }
    }

    pub fn shapes(&self) -> Vec<[usize; 2]> {
        self.0.lock().map(|s| s.iter().copied().collect()).unwrap_or_default()
    }

    pub fn len(&self) -> usize {
        self.0.lock().map(|s| s.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<B: Backend> TokenBatch<B> {
    /// Pads `sequences` on the right with `pad_id` to the shape `buckets` gives;
    /// rows past the last sequence hold one pad token (masked in) each, and are
    /// the caller's to drop. `limit` caps the length (a position table).
    pub fn bucketed(
        sequences: &[&[u32]],
        pad_id: u32,
        buckets: Buckets,
        limit: Option<usize>,
        device: &B::Device,
    ) -> Self {
        let longest = sequences.iter().map(|s| s.len()).max().unwrap_or(0);
        let time = buckets.time(longest, limit);
        let rows = buckets.rows(sequences.len());
        let mut ids = vec![pad_id as i64; rows * time];
        let mut mask = vec![0.0f32; rows * time];
        for (row, seq) in sequences.iter().enumerate() {
            for (t, &id) in seq.iter().enumerate() {
                ids[row * time + t] = id as i64;
                mask[row * time + t] = 1.0;
            }
        }
        for row in sequences.len()..rows {
            mask[row * time] = 1.0;
        }
        Self {
            ids: Tensor::from_data(TensorData::new(ids, [rows, time]), device),
            mask: Tensor::from_data(TensorData::new(mask, [rows, time]), device),
        }
    }
}

/// A classifier whose inputs are padded to [`Buckets`] and whose outputs are cut
/// back to the caller's shapes. Gradients flow through the padding unchanged.
pub struct Shaped<'a, M> {
    inner: &'a M,
    buckets: Buckets,
    /// The model's longest input (a position table), if it has one.
    limit: Option<usize>,
    log: Option<ShapeLog>,
}

impl<'a, M> Shaped<'a, M> {
    pub fn new<B: Backend>(inner: &'a M, buckets: Buckets) -> Self
    where
        M: Classifier<B>,
    {
        Self { inner, buckets, limit: inner.max_length(), log: None }
    }

    /// Records every shape sent to the model in `log`.
    pub fn with_log(mut self, log: ShapeLog) -> Self {
        self.log = Some(log);
        self
    }

    /// `embeddings` `[rows, time, dim]` and `mask` `[rows, time]` padded to the
    /// bucket shape.
    fn pad<B: Backend>(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> (Tensor<B, 3>, Tensor<B, 2>) {
        let [rows, time, dim] = embeddings.dims();
        let (padded_rows, padded_time) = (self.buckets.rows(rows), self.buckets.time(time, self.limit));
        if let Some(log) = &self.log {
            log.record(padded_rows, padded_time);
        }
        let device = embeddings.device();
        let (mut embeddings, mut mask) = (embeddings, mask);
        if padded_time > time {
            let extra = padded_time - time;
            embeddings = Tensor::cat(vec![embeddings, Tensor::zeros([rows, extra, dim], &device)], 1);
            mask = Tensor::cat(vec![mask, Tensor::zeros([rows, extra], &device)], 1);
        }
        if padded_rows > rows {
            let extra = padded_rows - rows;
            embeddings = Tensor::cat(vec![embeddings, Tensor::zeros([extra, padded_time, dim], &device)], 0);
            let mut filler = vec![0.0f32; extra * padded_time];
            filler.iter_mut().step_by(padded_time).for_each(|m| *m = 1.0);
            let filler = Tensor::from_data(TensorData::new(filler, [extra, padded_time]), &device);
            mask = Tensor::cat(vec![mask, filler], 0);
        }
        (embeddings, mask)
    }
}

impl<B: Backend, M: Classifier<B>> Classifier<B> for Shaped<'_, M> {
    fn family(&self) -> &'static str {
        self.inner.family()
    }

    /// Token ids are looked up at their own shape: an embedding lookup is a
    /// gather, not a tuned kernel, and its output is what methods perturb.
    fn embed(&self, ids: Tensor<B, 2, Int>) -> Tensor<B, 3> {
        self.inner.embed(ids)
    }

    fn logits_from_embeddings(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Tensor<B, 2> {
        let rows = embeddings.dims()[0];
        let (embeddings, mask) = self.pad(embeddings, mask);
        self.inner.logits_from_embeddings(embeddings, mask).narrow(0, 0, rows)
    }

    fn num_outputs(&self) -> usize {
        self.inner.num_outputs()
    }

    fn attention_scores(
        &self,
        embeddings: Tensor<B, 3>,
        mask: Tensor<B, 2>,
        view: AttentionView,
    ) -> Option<Tensor<B, 2>> {
        let [rows, time, _] = embeddings.dims();
        let (embeddings, mask) = self.pad(embeddings, mask);
        Some(self.inner.attention_scores(embeddings, mask, view)?.narrow(0, 0, rows).narrow(1, 0, time))
    }

    /// The probabilities stay at the padded shape: they are the autodiff leaf,
    /// and a cut copy would not be. Their extra rows and positions are
    /// the caller's to ignore, as with any padding.
    fn attention_leaf(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Option<AttentionLeaf<B>> {
        let rows = embeddings.dims()[0];
        let (embeddings, mask) = self.pad(embeddings, mask);
        let leaf = self.inner.attention_leaf(embeddings, mask)?;
        Some(AttentionLeaf { probs: leaf.probs, logits: leaf.logits.narrow(0, 0, rows) })
    }

    fn selection(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Option<Selection<B>> {
        let [rows, time, _] = embeddings.dims();
        let (embeddings, mask) = self.pad(embeddings, mask);
        let cut = |t: Tensor<B, 2>| t.narrow(0, 0, rows).narrow(1, 0, time);
        let selection = self.inner.selection(embeddings, mask)?;
        Some(Selection {
            gates: cut(selection.gates),
            probability: cut(selection.probability),
            scores: cut(selection.scores),
        })
    }

    /// The batch stacks n inputs over their n references: each half is padded
    /// on its own, so row i of the one still meets row i of the other.
    fn deeplift_logits(&self, embeddings: Tensor<B, 3>, mask: Tensor<B, 2>) -> Option<Tensor<B, 2>> {
        let n = embeddings.dims()[0] / 2;
        let (inputs, input_mask) = self.pad(embeddings.clone().narrow(0, 0, n), mask.clone().narrow(0, 0, n));
        let (references, reference_mask) = self.pad(embeddings.narrow(0, n, n), mask.narrow(0, n, n));
        let padded = inputs.dims()[0];
        let logits = self.inner.deeplift_logits(
            Tensor::cat(vec![inputs, references], 0),
            Tensor::cat(vec![input_mask, reference_mask], 0),
        )?;
        Some(Tensor::cat(vec![logits.clone().narrow(0, 0, n), logits.narrow(0, padded, n)], 0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucketed_batch_masks_padding_and_fills_extra_rows_with_one_token() {
        type B = burn::backend::Flex;
        let batch = TokenBatch::<B>::bucketed(&[&[5, 6, 7], &[8]], 0, Buckets::GPU, None, &Default::default());
        assert_eq!(batch.ids.dims(), [2, 16]);
        let batch = TokenBatch::<B>::bucketed(&[&[5, 6, 7], &[8], &[9, 9]], 0, Buckets::GPU, None, &Default::default());
        assert_eq!(batch.mask.dims(), [4, 16]);
        let mask: Vec<f32> = batch.mask.into_data().to_vec().unwrap();
        let sums: Vec<f32> = mask.chunks(16).map(|r| r.iter().sum()).collect();
        assert_eq!(sums, vec![3.0, 1.0, 2.0, 1.0]);
        assert_eq!(mask[3 * 16], 1.0, "the filler row's one token is its first");
    }
}
