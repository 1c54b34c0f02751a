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

/// Macro-averaged F1 (Zhao & Aletras's Table 1 reports it beside accuracy):
/// per class `2·TP / (2·TP + FP + FN)`, averaged over the classes that occur
/// among the labels or the predictions, as scikit-learn's `f1_score(average=
/// "macro")` does; 0 for no examples.
pub fn macro_f1(predictions: &[u32], labels: &[u32]) -> f64 {
    use std::collections::BTreeMap;
    let mut counts: BTreeMap<u32, [usize; 3]> = BTreeMap::new(); // [tp, fp, fn]
    for (&p, &l) in predictions.iter().zip(labels) {
        if p == l {
            counts.entry(l).or_default()[0] += 1;
        } else {
            counts.entry(p).or_default()[1] += 1;
            counts.entry(l).or_default()[2] += 1;
        }
    }
    if counts.is_empty() {
        return 0.0;
    }
    let f1 = |[tp, fp, fn_]: [usize; 3]| 2.0 * tp as f64 / (2 * tp + fp + fn_) as f64;
    counts.values().map(|&c| f1(c)).sum::<f64>() / counts.len() as f64
}

/// Share of `predictions` equal to `labels`; 0 for no examples.
pub fn accuracy(predictions: &[u32], labels: &[u32]) -> f64 {
    if labels.is_empty() {
        return 0.0;
    }
    predictions.iter().zip(labels).filter(|(p, l)| p == l).count() as f64 / labels.len() as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn macro_f1_by_hand() {
        // Class 0: tp 2, fp 1, fn 1 → 4/6; class 1: tp 1, fp 2, fn 1 → 2/5;
        // class 2: only a false negative → 0.
        let labels = [0, 0, 0, 1, 1, 2];
        let predicted = [0, 0, 1, 1, 0, 1];
        let expected = (4.0 / 6.0 + 2.0 / 5.0 + 0.0) / 3.0;
        assert!((macro_f1(&predicted, &labels) - expected).abs() < 1e-12, "{}", macro_f1(&predicted, &labels));
        assert_eq!(macro_f1(&[1, 0], &[1, 0]), 1.0);
        assert_eq!(macro_f1(&[], &[]), 0.0);
    }
}
