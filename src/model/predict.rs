//! Batched inference: predictions and accuracy for encoded examples.

use burn::prelude::*;

use super::{Classifier, TokenBatch, predicted_class};

/// Predicted class for every sequence, in input order.
pub fn predict<B: Backend, M: Classifier<B>>(
    model: &M,
    sequences: &[&[u32]],
    batch_size: usize,
    pad_id: u32,
    device: &B::Device,
) -> Vec<u32> {
    logits(model, sequences, batch_size, pad_id, device).iter().map(|row| predicted_class(row)).collect()
}

/// Logits of every sequence, one row per sequence in input order. Sequences are
/// batched in length order so that padding stays small.
pub fn logits<B: Backend, M: Classifier<B>, S: AsRef<[u32]>>(
    model: &M,
    sequences: &[S],
    batch_size: usize,
    pad_id: u32,
    device: &B::Device,
) -> Vec<Vec<f32>> {
    let mut order: Vec<usize> = (0..sequences.len()).collect();
    order.sort_by_key(|&i| sequences[i].as_ref().len());
    let mut rows = vec![Vec::new(); sequences.len()];
    for chunk in order.chunks(batch_size.max(1)) {
        let batch: Vec<&[u32]> = chunk.iter().map(|&i| sequences[i].as_ref()).collect();
        let logits = model.logits(&TokenBatch::from_sequences(&batch, pad_id, device));
        let [_, outputs] = logits.dims();
        let values: Vec<f32> = logits.into_data().convert::<f32>().to_vec().unwrap_or_default();
        for (&i, row) in chunk.iter().zip(values.chunks(outputs.max(1))) {
            rows[i] = row.to_vec();
        }
    }
    rows
}

/// Share of `predictions` equal to `labels`; 0 for no examples.
pub fn accuracy(predictions: &[u32], labels: &[u32]) -> f64 {
    if labels.is_empty() {
        return 0.0;
    }
    predictions.iter().zip(labels).filter(|(p, l)| p == l).count() as f64 / labels.len() as f64
}
