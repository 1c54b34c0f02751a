//! Perturbation methods (LIME, KernelSHAP, occlusion) hide tokens and read the
//! model's probability for the predicted class. This module builds the hidden
//! inputs and evaluates many of them, from many examples, in full batches.

use burn::prelude::*;

use super::{Examples, Vocabulary};
use grid_core::model::predict::logits;
use grid_core::model::{Classifier, predicted_class};

/// `ids` with the ordinary tokens at `positions[j]` hidden wherever `keep[j]` is
/// false: replaced by `replacement`, or deleted when it is `None`.
pub fn hide(ids: &[u32], positions: &[usize], keep: &[bool], replacement: Option<u32>) -> Vec<u32> {
    debug_assert_eq!(positions.len(), keep.len());
    let mut hidden = vec![false; ids.len()];
    for (&p, &k) in positions.iter().zip(keep) {
        hidden[p] = !k;
    }
    match replacement {
        Some(token) => ids.iter().zip(&hidden).map(|(&id, &h)| if h { token } else { id }).collect(),
        None => ids.iter().zip(&hidden).filter(|(_, h)| !**h).map(|(&id, _)| id).collect(),
    }
}

/// Probability of class `c` from one row of logits, in f64: a shortcut model's
/// logits of 20–40 would round `p` to 1.0 in f32 and hide every difference.
pub fn class_probability(logits: &[f32], class: u32) -> f64 {
    if logits.len() == 1 {
        let l = logits[0] as f64;
        let l = if class == 1 { l } else { -l };
        1.0 / (1.0 + (-l).exp())
    } else {
        let max = logits.iter().fold(f32::NEG_INFINITY, |m, &v| m.max(v)) as f64;
        let z: f64 = logits.iter().map(|&v| (v as f64 - max).exp()).sum();
        (logits[class as usize] as f64 - max).exp() / z
    }
}

/// `p(classes[i] | sequences[i])` for every sequence.
pub fn class_probabilities<B: Backend, M: Classifier<B>>(
    model: &M,
    sequences: &[Vec<u32>],
    classes: &[u32],
    pad: u32,
    per_eval: usize,
    device: &B::Device,
) -> Vec<f64> {
    logits(model, sequences, per_eval, pad, device)
        .iter()
        .zip(classes)
        .map(|(row, &c)| class_probability(row, c))
        .collect()
}

/// For every example `i` and every keep-vector of `keeps[i]` (over
/// `examples.ordinary_positions(i)`): `p(classes[i] | example i with the other
/// ordinary tokens hidden)`. All examples' perturbations are evaluated together,
/// so every forward pass is full however few perturbations one example has.
#[allow(clippy::too_many_arguments)]
pub fn hidden_probabilities<B: Backend, M: Classifier<B>>(
    model: &M,
    examples: &Examples<'_>,
    keeps: &[Vec<Vec<bool>>],
    classes: &[u32],
    replacement: Option<u32>,
    pad: u32,
    per_eval: usize,
    device: &B::Device,
) -> Vec<Vec<f64>> {
    let mut sequences = Vec::with_capacity(keeps.iter().map(Vec::len).sum());
    let mut targets = Vec::with_capacity(sequences.capacity());
    for (i, example_keeps) in keeps.iter().enumerate() {
        let positions = examples.ordinary_positions(i);
        for keep in example_keeps {
            sequences.push(hide(examples.ids[i], &positions, keep, replacement));
            targets.push(classes[i]);
        }
    }
    let mut probabilities = class_probabilities(model, &sequences, &targets, pad, per_eval, device).into_iter();
    keeps.iter().map(|k| probabilities.by_ref().take(k.len()).collect()).collect()
}

/// The predicted class of every example and its probability.
pub fn predictions<B: Backend, M: Classifier<B>>(
    model: &M,
    examples: &Examples<'_>,
    vocab: &Vocabulary,
    per_eval: usize,
    device: &B::Device,
) -> (Vec<u32>, Vec<f64>) {
    let rows = logits(model, &examples.ids, per_eval, vocab.pad, device);
    let classes: Vec<u32> = rows.iter().map(|row| predicted_class(row)).collect();
    let probabilities = rows.iter().zip(&classes).map(|(row, &c)| class_probability(row, c)).collect();
    (classes, probabilities)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::salience::test_models::{Ad, PresenceModel, VOCAB, lstm_examples};

    #[test]
    fn hiding_replaces_or_deletes() {
        let ids = [2, 7, 8, 9, 3];
        let positions = [1, 2, 3];
        assert_eq!(hide(&ids, &positions, &[true, false, true], Some(1)), vec![2, 7, 1, 9, 3]);
        assert_eq!(hide(&ids, &positions, &[false, false, true], None), vec![2, 9, 3]);
        assert_eq!(hide(&ids, &positions, &[true, true, true], None), ids.to_vec());
    }

    #[test]
    fn probabilities_are_exact_in_f64() {
        assert!((class_probability(&[0.0], 1) - 0.5).abs() < 1e-15);
        assert!((class_probability(&[2.0], 0) - 1.0 / (1.0 + 2f64.exp())).abs() < 1e-15);
        // σ(30) is 1.0 in f32; the f64 value keeps 1 − p ≈ 9.4e-14.
        assert!(1.0 - class_probability(&[30.0], 1) > 1e-14);
        let p = class_probability(&[1.0, 2.0, 3.0], 2);
        assert!((p - 3f64.exp() / (1f64.exp() + 2f64.exp() + 3f64.exp())).abs() < 1e-12);
    }

    #[test]
    fn evaluation_order_and_chunking_do_not_matter() {
        let model = PresenceModel::new();
        let sequences = vec![vec![5, 6, 7], vec![8], vec![9, 10, 11, 12, 13], vec![14, 15]];
        let device = Default::default();
        let classes = [0, 1, 0, 1];
        let whole = class_probabilities::<Ad, _>(&model, &sequences, &classes, 0, 64, &device);
        let one_by_one = class_probabilities::<Ad, _>(&model, &sequences, &classes, 0, 1, &device);
        assert_eq!(whole, one_by_one);
        for (i, seq) in sequences.iter().enumerate() {
            let s: f64 = seq.iter().map(|&id| model.weights[id as usize] as f64).sum();
            let p0 = 0.5 + s;
            let want = if classes[i] == 0 { p0 } else { 1.0 - p0 };
            assert!((whole[i] - want).abs() < 1e-6, "{i}: {} vs {want}", whole[i]);
        }
        let ids = sequences.clone();
        let (predicted, p) = predictions::<Ad, _>(&model, &lstm_examples(&ids), &VOCAB, 2, &device);
        for i in 0..4 {
            assert!(p[i] >= 0.5, "the predicted class is the likelier one");
            assert!(
                (p[i] - class_probabilities::<Ad, _>(&model, &ids[i..=i], &predicted[i..=i], 0, 1, &device)[0]).abs()
                    < 1e-12
            );
        }
    }
}
