//! Attention as attribution: `attn`, `attn-last`, `attn-all` (Zhou et al. 2022
//! §4; Jain & Wallace 2019) and `attn-scaled` (Serrano & Smith 2019, as Zhao &
//! Aletras 2023 use it).
//!
//! - `attn`: the BiLSTM's additive attention weights α over its tokens.
//! - `attn-last`: BERT's last layer, the `[CLS]` row (query 0) of the attention
//!   probabilities, mean over heads. `attn-all`: the same row, mean over heads and layers.
//! - `attn-scaled`: `α_i · ∂f/∂α_i`, with f the predicted class's logit and the
//!   partial derivative taken with everything upstream of α held fixed (the model
//!   makes α a leaf of the autodiff graph). BiLSTM: α its additive weights; BERT:
//!   the last layer's `[CLS]` row per head, and the score is the mean over heads.
//!   A model whose head pools every token (ModernBERT's mean pooling) has no
//!   such row, and `attn-scaled` is refused for it.
//!
//! Attention weights sum to 1 over the real tokens of an example (`[CLS]` and
//! `[SEP]` included) and are exactly 0 at padding.

use burn::tensor::backend::AutodiffBackend;

use super::target::predicted_class_score;
use super::{AttentionView, Attribution, AttributionError, Examples, Method, Target, Vocabulary, rows_of};
use grid_core::model::{Classifier, predicted_classes};

/// `attn`, `attn-last`, `attn-all`.
pub fn explain<B: AutodiffBackend, M: Classifier<B>>(
    model: &M,
    view: AttentionView,
    examples: &Examples<'_>,
    vocab: &Vocabulary,
    device: &B::Device,
) -> Result<Attribution, AttributionError> {
    let batch = examples.batch::<B>(vocab.pad, device);
    let embeddings = model.embed(batch.ids.clone()).detach();
    let weights = model.attention_scores(embeddings.clone(), batch.mask.clone(), view).ok_or_else(|| {
        let family = model.family();
        let reason = match view {
            AttentionView::Additive => format!("{family} has no additive attention over its input"),
            AttentionView::LastLayer | AttentionView::AllLayers => {
                format!("{family} has no transformer self-attention")
            }
        };
        unsupported(Method::Attention(view), reason)
    })?;
    let predicted = predicted_classes(model.logits_from_embeddings(embeddings, batch.mask));
    Ok(Attribution { scores: rows_of(weights, examples), predicted, completeness_gap: None })
}

/// `attn-scaled`: `mean_h α_{h,0,i} · ∂f/∂α_{h,0,i}`.
pub fn explain_scaled<B: AutodiffBackend, M: Classifier<B>>(
    model: &M,
    examples: &Examples<'_>,
    vocab: &Vocabulary,
    device: &B::Device,
) -> Result<Attribution, AttributionError> {
    let batch = examples.batch::<B>(vocab.pad, device);
    // Detached, so the backward pass stops at the attention leaf.
    let embeddings = model.embed(batch.ids).detach();
    let leaf = model
        .attention_leaf(embeddings, batch.mask)
        // ModernBERT's mean-pooling head reads every query of the last layer.
        .ok_or_else(|| {
            let reason = format!("{} has no attention whose first query alone reaches the output", model.family());
            unsupported(Method::ScaledAttention, reason)
        })?;
    let predicted = predicted_classes(leaf.logits.clone());
    let grads = predicted_class_score(leaf.logits, &predicted, Target::Logit).sum().backward();
    let probs = leaf.probs.clone().inner();
    // No gradient means f does not depend on α: zero salience.
    let gradient = leaf.probs.grad(&grads).unwrap_or_else(|| probs.zeros_like());
    let [rows, heads, _, time] = probs.dims();
    let scores = (probs * gradient).narrow(2, 0, 1).sum_dim(1).div_scalar(heads as f64).reshape([rows, time]);
    Ok(Attribution { scores: rows_of(scores, examples), predicted, completeness_gap: None })
}

fn unsupported(method: Method, reason: String) -> AttributionError {
    AttributionError::Unsupported { method: method.to_string(), reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::salience::test_models::{Ad, PresenceModel, VOCAB, bert, bert_examples, bilstm, lstm_examples};
    use burn::prelude::*;

    fn lstm_ids() -> Vec<Vec<u32>> {
        vec![vec![5, 9, 12], vec![7, 6, 11, 20, 8, 14], vec![13]]
    }

    fn bert_ids() -> Vec<Vec<u32>> {
        vec![vec![2, 5, 9, 3], vec![2, 7, 6, 11, 20, 8, 14, 3], vec![2, 13, 17, 3]]
    }

    /// Each row sums to 1 over its real tokens; the padding of the batch is exactly 0.
    fn assert_distribution(model: &impl Classifier<Ad>, view: AttentionView, examples: &Examples<'_>) {
        let device = Default::default();
        let batch = examples.batch::<Ad>(VOCAB.pad, &device);
        let [rows, time] = batch.mask.dims();
        let weights: Vec<f32> =
            model.attention_scores(model.embed(batch.ids), batch.mask, view).unwrap().into_data().to_vec().unwrap();
        for (row, ids) in examples.ids.iter().enumerate().take(rows) {
            let row = &weights[row * time..(row + 1) * time];
            let real: f32 = row[..ids.len()].iter().sum();
            assert!((real - 1.0).abs() < 1e-5, "{view:?}: {real} over {row:?}");
            assert!(row[..ids.len()].iter().all(|&w| w > 0.0), "{view:?}: {row:?}");
            assert!(row[ids.len()..].iter().all(|&w| w == 0.0), "{view:?}: padding {row:?}");
        }
        let attribution = explain(model, view, examples, &VOCAB, &device).unwrap();
        for (scores, ids) in attribution.scores.iter().zip(&examples.ids) {
            assert_eq!(scores.len(), ids.len());
        }
    }

    #[test]
    fn attention_weights_are_distributions_over_real_tokens() {
        let ids = lstm_ids();
        assert_distribution(&bilstm(1), AttentionView::Additive, &lstm_examples(&ids));
        let ids = bert_ids();
        for outputs in [1, 3] {
            let model = bert(2, outputs);
            assert_distribution(&model, AttentionView::LastLayer, &bert_examples(&ids));
            assert_distribution(&model, AttentionView::AllLayers, &bert_examples(&ids));
        }
    }

    #[test]
    fn views_the_architecture_lacks_are_unsupported() {
        let device = Default::default();
        let ids = lstm_ids();
        let lstm = lstm_examples(&ids);
        for view in [AttentionView::LastLayer, AttentionView::AllLayers] {
            let e = explain(&bilstm(1), view, &lstm, &VOCAB, &device).unwrap_err();
            assert!(matches!(e, AttributionError::Unsupported { .. }), "{e}");
        }
        let ids = bert_ids();
        let e = explain(&bert(1, 1), AttentionView::Additive, &bert_examples(&ids), &VOCAB, &device).unwrap_err();
        assert!(e.to_string().contains("`attn`"), "{e}");
        let e = explain_scaled(&PresenceModel::new(), &lstm, &VOCAB, &device).unwrap_err();
        assert!(e.to_string().contains("attn-scaled"), "{e}");
    }

    /// `attn-all` is the mean over layers of each layer's `[CLS]` row (mean over
    /// heads), recomputed here from `attentions()` element by element.
    #[test]
    fn attn_all_is_the_mean_of_the_layers_cls_rows() {
        let model = bert(4, 1);
        let ids = bert_ids();
        let examples = bert_examples(&ids);
        let device = Default::default();
        let batch = examples.batch::<Ad>(VOCAB.pad, &device);
        let layers = model.attentions(model.embed(batch.ids.clone()), batch.mask.clone());
        let [rows, heads, _, time] = layers[0].dims();
        let layers: Vec<Vec<f32>> = layers.into_iter().map(|p| p.into_data().to_vec().unwrap()).collect();
        let cls = |layer: &[f32], row: usize, key: usize| -> f32 {
            (0..heads).map(|h| layer[((row * heads + h) * time) * time + key]).sum::<f32>() / heads as f32
        };
        let all = explain(&model, AttentionView::AllLayers, &examples, &VOCAB, &device).unwrap();
        let last = explain(&model, AttentionView::LastLayer, &examples, &VOCAB, &device).unwrap();
        for (row, ids) in ids.iter().enumerate().take(rows) {
            for key in 0..ids.len() {
                let want = layers.iter().map(|l| cls(l, row, key)).sum::<f32>() / layers.len() as f32;
                assert!((all.scores[row][key] - want).abs() < 1e-6, "row {row} key {key}");
                let want_last = cls(&layers[layers.len() - 1], row, key);
                assert!((last.scores[row][key] - want_last).abs() < 1e-6, "row {row} key {key}");
            }
        }
        assert_ne!(all.scores, last.scores, "two layers must differ");
    }

    fn values<const D: usize>(t: Tensor<Ad, D>) -> Vec<f32> {
        t.into_data().to_vec().unwrap()
    }

    /// The predicted class's logit (sign-corrected for one output), per row.
    fn target(logits: Tensor<Ad, 2>, predicted: &[u32]) -> Vec<f64> {
        values(predicted_class_score(logits, predicted, Target::Logit)).into_iter().map(f64::from).collect()
    }

    #[test]
    fn scaled_attention_matches_finite_differences_on_the_bilstm() {
        let model = bilstm(5);
        let ids = lstm_ids();
        let examples = lstm_examples(&ids);
        let device = Default::default();
        let scaled = explain_scaled(&model, &examples, &VOCAB, &device).unwrap();
        let batch = examples.batch::<Ad>(VOCAB.pad, &device);
        let states = model.encode(model.embed(batch.ids), batch.mask.clone(), None, Default::default());
        let alpha = model.attention.weights(states.clone(), batch.mask, Default::default());
        let [rows, time] = alpha.dims();
        let base = values(alpha.clone());
        let h = 1e-2f32;
        let f = |delta: Vec<f32>| {
            let alpha = alpha.clone() + Tensor::from_data(TensorData::new(delta, [rows, time]), &device);
            target(model.head(states.clone(), alpha, None, Default::default()), &scaled.predicted)
        };
        for row in 0..rows {
            for t in 0..ids[row].len() {
                let mut plus = vec![0.0; rows * time];
                plus[row * time + t] = h;
                let minus: Vec<f32> = plus.iter().map(|v| -v).collect();
                let derivative = (f(plus)[row] - f(minus)[row]) / (2.0 * h as f64);
                let want = base[row * time + t] as f64 * derivative;
                let got = scaled.scores[row][t] as f64;
                assert!((got - want).abs() < 1e-4 + 1e-3 * want.abs(), "row {row} token {t}: {got} vs {want}");
            }
        }
        assert!(scaled.scores.iter().flatten().any(|s| s.abs() > 1e-3), "{:?}", scaled.scores);
    }

    #[test]
    fn scaled_attention_matches_finite_differences_on_bert() {
        for outputs in [1, 3] {
            let model = bert(6, outputs);
            let ids = bert_ids();
            let examples = bert_examples(&ids);
            let device = Default::default();
            let scaled = explain_scaled(&model, &examples, &VOCAB, &device).unwrap();
            let batch = examples.batch::<Ad>(VOCAB.pad, &device);
            let embeddings = model.embed(batch.ids);
            let probs = model.attentions(embeddings.clone(), batch.mask.clone()).pop().unwrap();
            let [rows, heads, _, time] = probs.dims();
            let base = values(probs.clone());
            let h = 1e-2f32;
            // f with the last layer's probabilities moved by `delta`, all else fixed.
            let f = |delta: Vec<f32>| {
                let delta = Tensor::<Ad, 4>::from_data(TensorData::new(delta, [rows, heads, time, time]), &device);
                let shift = |p: Tensor<Ad, 4>| p + delta.clone();
                let (logits, _) =
                    model.forward_under(embeddings.clone(), batch.mask.clone(), Default::default(), Some(&shift));
                target(logits, &scaled.predicted)
            };
            for (row, ids) in ids.iter().enumerate().take(rows) {
                for key in 0..ids.len() {
                    let mut want = 0.0;
                    for head in 0..heads {
                        let at = ((row * heads + head) * time) * time + key;
                        let mut plus = vec![0.0; base.len()];
                        plus[at] = h;
                        let minus: Vec<f32> = plus.iter().map(|v| -v).collect();
                        let derivative = (f(plus)[row] - f(minus)[row]) / (2.0 * h as f64);
                        want += base[at] as f64 * derivative / heads as f64;
                    }
                    let got = scaled.scores[row][key] as f64;
                    assert!(
                        (got - want).abs() < 1e-4 + 1e-3 * want.abs(),
                        "{outputs} outputs, row {row} key {key}: {got} vs {want}"
                    );
                }
            }
            assert!(scaled.scores.iter().flatten().any(|s| s.abs() > 1e-3), "{:?}", scaled.scores);
        }
    }
}
