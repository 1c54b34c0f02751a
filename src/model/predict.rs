//! Batched inference: predictions and accuracy for encoded examples.

use burn::prelude::*;

use super::{Classifier, TokenBatch, predicted_classes};

/// Predicted class for every sequence, in input order. Sequences are batched in
/// length order so that padding stays small.
pub fn predict<B: Backend, M: Classifier<B>>(
    model: &M,
    sequences: &[&[u32]],
    batch_size: usize,
    pad_id: u32,
    device: &B::Device,
) -> Vec<u32> {
    let mut order: Vec<usize> = (0..sequences.len()).collect();
    order.sort_by_key(|&i| sequences[i].len());
    let mut predictions = vec![0u32; sequences.len()];
    for chunk in order.chunks(batch_size.max(1)) {
        let batch: Vec<&[u32]> = chunk.iter().map(|&i| sequences[i]).collect();
        let logits = model.logits(&TokenBatch::from_sequences(&batch, pad_id, device));
        for (&i, p) in chunk.iter().zip(predicted_classes(logits)) {
            predictions[i] = p;
        }
    }
    predictions
}

/// Share of `predictions` equal to `labels`; 0 for no examples.
pub fn accuracy(predictions: &[u32], labels: &[u32]) -> f64 {
    if labels.is_empty() {
        return 0.0;
    }
    predictions.iter().zip(labels).filter(|(p, l)| p == l).count() as f64 / labels.len() as f64
}
