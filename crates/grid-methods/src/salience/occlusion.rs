//! `occlusion-{unk,mask,erase}`: leave-one-out (Li et al. 2016; Captum's
//! `Occlusion` with a one-token window). The salience of token i is how much the
//! predicted class's probability drops when i alone is hidden:
//! `s_i = p(ŷ | x) − p(ŷ | x with token i hidden)`. Special tokens are never
//! hidden and get 0. All hidden copies of all examples are evaluated together,
//! `perturbations_per_eval` per forward pass.

use burn::tensor::backend::AutodiffBackend;

use super::perturb::{class_probabilities, hide, predictions};
use super::{Attribution, AttributionError, Examples, Hiding, Settings, Vocabulary};
use grid_core::model::Classifier;

pub fn explain<B: AutodiffBackend, M: Classifier<B>>(
    model: &M,
    hiding: Hiding,
    examples: &Examples<'_>,
    vocab: &Vocabulary,
    settings: &Settings,
    device: &B::Device,
) -> Result<Attribution, AttributionError> {
    let replacement = vocab.hiding_token(hiding)?;
    let (predicted, clean) = predictions(model, examples, vocab, settings.perturbations_per_eval, device);
    let mut sequences = Vec::new();
    let mut classes = Vec::new();
    let mut owner = Vec::new();
    for (i, &class) in predicted.iter().enumerate() {
        let positions = examples.ordinary_positions(i);
        for (k, &position) in positions.iter().enumerate() {
            let keep: Vec<bool> = (0..positions.len()).map(|j| j != k).collect();
            sequences.push(hide(examples.ids[i], &positions, &keep, replacement));
            classes.push(class);
            owner.push((i, position));
        }
    }
    let hidden = class_probabilities(model, &sequences, &classes, vocab.pad, settings.perturbations_per_eval, device);
    let mut scores: Vec<Vec<f32>> = examples.ids.iter().map(|ids| vec![0.0; ids.len()]).collect();
    for (&(i, t), p) in owner.iter().zip(hidden) {
        scores[i][t] = (clean[i] - p) as f32;
    }
    Ok(Attribution { scores, predicted, completeness_gap: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::salience::test_models::{PresenceModel, VOCAB, bert, bert_examples, lstm_examples, settings};
    use crate::salience::{Method, attribute};

    #[test]
    fn on_a_presence_model_occlusion_is_each_tokens_weight() {
        let model = PresenceModel::new();
        let ids = vec![vec![5, 6, 7, 8], vec![9, 10, 9]];
        let examples = lstm_examples(&ids);
        for hiding in [Hiding::Unk, Hiding::Mask, Hiding::Erase] {
            let a =
                attribute(&model, Method::Occlusion { hiding }, &examples, &VOCAB, &settings(), &Default::default())
                    .unwrap();
            for (i, row) in a.scores.iter().enumerate() {
                // p(class 0) = ½ + Σ w: hiding token t removes w[t]; for class 1 the sign flips.
                let sign = if a.predicted[i] == 0 { 1.0 } else { -1.0 };
                for (t, &s) in row.iter().enumerate() {
                    let want = sign * model.weights[ids[i][t] as usize];
                    assert!((s - want).abs() < 1e-6, "{hiding:?} example {i} token {t}: {s} vs {want}");
                }
            }
        }
    }

    #[test]
    fn special_tokens_are_never_hidden_and_batching_does_not_matter() {
        let model = bert(8, 1);
        let ids = vec![vec![2, 5, 6, 7, 3], vec![2, 8, 3]];
        let examples = bert_examples(&ids);
        let device = Default::default();
        let method = Method::Occlusion { hiding: Hiding::Mask };
        let a = attribute(&model, method, &examples, &VOCAB, &settings(), &device).unwrap();
        assert_eq!((a.scores[0][0], a.scores[0][4], a.scores[1][0], a.scores[1][2]), (0.0, 0.0, 0.0, 0.0));
        assert!(a.scores[0][1..4].iter().any(|&s| s != 0.0));
        let one = Settings { perturbations_per_eval: 1, ..settings() };
        let b = attribute(&model, method, &examples, &VOCAB, &one, &device).unwrap();
        for (x, y) in a.scores.iter().flatten().zip(b.scores.iter().flatten()) {
            assert!((x - y).abs() < 1e-6, "{x} vs {y}");
        }
    }
}
