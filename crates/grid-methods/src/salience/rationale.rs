//! `rationale`: a rationale model's own explanation, the words its selector
//! picks (Zhou et al. 2022 §7). RL's scores are its binary gates (1 selected,
//! 0 not); HardKuma's the expected gate `E[z]` of each selected word (0
//! elsewhere), so that its words can be ranked like any method's. A score
//! above 0 means selected, which the `sel-*` metrics read; every other metric
//! scores it as it scores a salience method. A model that reads every word
//! has no such explanation.

use burn::tensor::backend::AutodiffBackend;

use super::{Attribution, AttributionError, Examples, Method, Vocabulary, rows_of};
use grid_core::model::{Classifier, predicted_classes};

pub fn explain<B: AutodiffBackend, M: Classifier<B>>(
    model: &M,
    examples: &Examples<'_>,
    vocab: &Vocabulary,
    device: &B::Device,
) -> Result<Attribution, AttributionError> {
    let batch = examples.batch::<B>(vocab.pad, device);
    let embeddings = model.embed(batch.ids.clone()).detach();
    let selection =
        model.selection(embeddings.clone(), batch.mask.clone()).ok_or_else(|| AttributionError::Unsupported {
            method: Method::Rationale.to_string(),
            reason: format!(
                "{} selects no rationale of its own; only `architecture = \"rationale\"` does",
                model.family()
            ),
        })?;
    let predicted = predicted_classes(model.logits_from_embeddings(embeddings, batch.mask));
    Ok(Attribution { scores: rows_of(selection.scores, examples), predicted, completeness_gap: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::salience::test_models::{Ad, VOCAB, bilstm, lstm_examples, rationale, three_examples};
    use grid_core::model::rationale::SelectorKind;

    /// The scores are the selector's: RL's 0/1 gates, HardKuma's expected
    /// gates in [0, 1]; one per word, and the prediction is the model's.
    #[test]
    fn the_scores_are_the_models_own_selection() {
        let (ids, _) = three_examples();
        let examples = lstm_examples(&ids);
        for selector in [SelectorKind::Rl, SelectorKind::Hardkuma] {
            let model = rationale(3, selector);
            let attribution = explain::<Ad, _>(&model, &examples, &VOCAB, &Default::default()).unwrap();
            for (scores, ids) in attribution.scores.iter().zip(&ids) {
                assert_eq!(scores.len(), ids.len());
                assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)), "{selector}: {scores:?}");
                if selector == SelectorKind::Rl {
                    assert!(scores.iter().all(|&s| s == 0.0 || s == 1.0), "{scores:?}");
                }
            }
            let batch = examples.batch::<Ad>(VOCAB.pad, &Default::default());
            assert_eq!(attribution.predicted, predicted_classes(model.logits(&batch)));
        }
    }

    #[test]
    fn a_model_without_a_rationale_is_refused_by_name() {
        let (ids, _) = three_examples();
        let error = explain::<Ad, _>(&bilstm(1), &lstm_examples(&ids), &VOCAB, &Default::default()).unwrap_err();
        let message = error.to_string();
        assert!(message.contains("`rationale`") && message.contains("selects no rationale"), "{message}");
    }
}
