//! `deeplift[-{zero,mask,unk,pad}]`: DeepLift with the Rescale rule (Shrikumar
//! et al. 2017), as Captum's `DeepLift` on logits with target = the predicted class.
//!
//! The reference input x₀ is the baseline embedding (zero vectors, or the
//! embedding of `[MASK]`/`[UNK]`/`[PAD]`) at every non-special real position;
//! special tokens and padding keep their own embedding. The model runs the
//! inputs and their references through one forward pass, stacked along the batch
//! ([`grid_core::model::Classifier::deeplift_logits`]), whose nonlinearities carry
//! DeepLift's multipliers as their gradients ([`grid_core::model::rules`]); one
//! backward pass from the predicted class's logit then gives the multipliers
//! `m` of the input embeddings, and token i scores `Σ_d (e_id − x₀_id) · m_id`.
//!
//! Summation-to-delta, `Σ_i s_i = f(x) − f(x₀)`, holds exactly up to float
//! rounding; its residual is reported per example as the completeness gap.

use burn::prelude::*;
use burn::tensor::backend::AutodiffBackend;

use super::integrated_gradients::baseline_embeddings;
use super::target::{predicted_class_score, predicted_class_value};
use super::{Attribution, AttributionError, Baseline, Examples, Method, Settings, Target, Vocabulary, rows_of};
use grid_core::model::{Classifier, predicted_classes};

pub fn explain<B: AutodiffBackend, M: Classifier<B>>(
    model: &M,
    baseline: Baseline,
    examples: &Examples<'_>,
    vocab: &Vocabulary,
    settings: &Settings,
    device: &B::Device,
) -> Result<Attribution, AttributionError> {
    let token = vocab.baseline_token(baseline)?;
    // Each example takes two rows of a pass: itself and its reference.
    let longest = examples.ids.iter().map(|ids| ids.len()).max().unwrap_or(0);
    let per_pass = (settings.rows_per_pass(longest) / 2).max(1);
    let mut result = Attribution { scores: Vec::new(), predicted: Vec::new(), completeness_gap: Some(Vec::new()) };
    for start in (0..examples.len()).step_by(per_pass) {
        let end = (start + per_pass).min(examples.len());
        let chunk = Examples {
            ids: examples.ids[start..end].to_vec(),
            special: examples.special[start..end].to_vec(),
            stream: examples.stream[start..end].to_vec(),
        };
        let part = explain_chunk(model, baseline, token, &chunk, vocab, device)?;
        result.scores.extend(part.scores);
        result.predicted.extend(part.predicted);
        if let (Some(gaps), Some(part)) = (result.completeness_gap.as_mut(), part.completeness_gap) {
            gaps.extend(part);
        }
    }
    Ok(result)
}

fn explain_chunk<B: AutodiffBackend, M: Classifier<B>>(
    model: &M,
    baseline: Baseline,
    token: Option<u32>,
    examples: &Examples<'_>,
    vocab: &Vocabulary,
    device: &B::Device,
) -> Result<Attribution, AttributionError> {
    let batch = examples.batch::<B>(vocab.pad, device);
    let [rows, time] = batch.mask.dims();
    let inputs = model.embed(batch.ids.clone()).detach();
    let references = Tensor::from_inner(baseline_embeddings(model, inputs.clone().inner(), examples, token, device));
    let predicted = predicted_classes(model.logits_from_embeddings(inputs.clone(), batch.mask.clone()));

    let leaf = inputs.clone().require_grad();
    let stacked = Tensor::cat(vec![leaf.clone(), references.clone()], 0);
    let mask = Tensor::cat(vec![batch.mask.clone(), batch.mask], 0);
    let logits = model.deeplift_logits(stacked, mask).ok_or_else(|| AttributionError::Unsupported {
        method: Method::DeepLift { baseline }.to_string(),
        reason: format!("{} does not implement DeepLift's rules", model.family()),
    })?;
    let f = predicted_class_score(logits.clone().narrow(0, 0, rows), &predicted, Target::Logit);
    let f_reference = predicted_class_value(logits.narrow(0, rows, rows), &predicted, Target::Logit);
    let delta = (f.clone() - f_reference).inner();
    let grads = f.sum().backward();
    let difference = (inputs - references).inner();
    // No gradient means f does not depend on the embeddings at all: zero salience.
    let multipliers = leaf.grad(&grads).unwrap_or_else(|| difference.zeros_like());
    let scores = (difference * multipliers).sum_dim(2).reshape([rows, time]);
    let gap = scores.clone().sum_dim(1).reshape([rows]) - delta;
    let completeness_gap = gap.into_data().convert::<f32>().to_vec().unwrap_or_default();
    Ok(Attribution { scores: rows_of(scores, examples), predicted, completeness_gap: Some(completeness_gap) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::salience::gradient::input_gradients;
    use crate::salience::test_models::{
        Ad, PresenceModel, TanhSumModel, VOCAB, VOCAB_SIZE, bert, bert_examples, bilstm, lstm_examples, settings,
        steep_bert, steep_bilstm,
    };
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn lstm_ids() -> Vec<Vec<u32>> {
        vec![vec![5, 9, 12, 7], vec![7, 6, 11, 20, 8, 14, 10], vec![13, 1]]
    }

    fn bert_ids() -> Vec<Vec<u32>> {
        vec![vec![2, 5, 9, 3], vec![2, 7, 6, 11, 20, 8, 14, 21, 3], vec![2, 13, 17, 10, 3]]
    }

    /// `f(x) − f(x₀)` from ordinary forward passes, per example.
    fn output_differences(
        model: &impl Classifier<Ad>,
        baseline: Baseline,
        examples: &Examples<'_>,
        predicted: &[u32],
    ) -> Vec<f64> {
        let device = Default::default();
        let batch = examples.batch::<Ad>(VOCAB.pad, &device);
        let inputs = model.embed(batch.ids.clone());
        let token = VOCAB.baseline_token(baseline).unwrap();
        let references =
            Tensor::from_inner(baseline_embeddings(model, inputs.clone().inner(), examples, token, &device));
        let f = |e| -> Vec<f32> {
            let logits = model.logits_from_embeddings(e, batch.mask.clone());
            predicted_class_value(logits, predicted, Target::Logit).into_data().to_vec().unwrap()
        };
        f(inputs).iter().zip(f(references)).map(|(a, b)| (*a - b) as f64).collect()
    }

    /// Summation-to-delta: `Σ_i s_i = f(x) − f(x₀)` to 1e-4 relative, both as the
    /// reported gap and against ordinary forward passes; returns the largest gap
    /// and the largest `|Δf|`.
    fn assert_summation_to_delta(
        model: &impl Classifier<Ad>,
        baseline: Baseline,
        examples: &Examples<'_>,
    ) -> (f32, f64) {
        let device = Default::default();
        let a = explain(model, baseline, examples, &VOCAB, &settings(), &device).unwrap();
        let gaps = a.completeness_gap.clone().unwrap();
        let deltas = output_differences(model, baseline, examples, &a.predicted);
        let mut largest = 0.0f32;
        for (i, scores) in a.scores.iter().enumerate() {
            let total: f64 = scores.iter().map(|&s| s as f64).sum();
            let scale = 1.0 + deltas[i].abs() + scores.iter().map(|s| s.abs() as f64).sum::<f64>();
            assert!(
                (total - deltas[i]).abs() < 1e-4 * scale,
                "{baseline:?} example {i}: Σ {total} vs Δf {}",
                deltas[i]
            );
            assert!((gaps[i] as f64).abs() < 1e-4 * scale, "{baseline:?} example {i}: gap {}", gaps[i]);
            for (t, &special) in examples.special[i].iter().enumerate() {
                if special {
                    assert_eq!(scores[t], 0.0, "special tokens keep their embedding");
                }
            }
            largest = largest.max(gaps[i].abs());
        }
        let spread = deltas.iter().fold(0.0f64, |m, d| m.max(d.abs()));
        assert!(spread > 1e-2, "{baseline:?}: trivial cases prove nothing, Δf = {deltas:?}");
        (largest, spread)
    }

    #[test]
    fn summation_to_delta_on_the_bilstm() {
        let ids = lstm_ids();
        let examples = lstm_examples(&ids);
        for (seed, gain) in [(1, 1.0), (2, 1.0), (1, 3.0), (2, 3.0)] {
            for baseline in [Baseline::Zero, Baseline::Unk, Baseline::Pad] {
                let (gap, delta) = assert_summation_to_delta(&steep_bilstm(seed, gain), baseline, &examples);
                eprintln!(
                    "bilstm seed {seed} gain {gain} {baseline:?}: largest |gap| {gap:e}, largest |Δf| {delta:.3}"
                );
            }
        }
    }

    #[test]
    fn summation_to_delta_on_bert() {
        let ids = bert_ids();
        let examples = bert_examples(&ids);
        for outputs in [1, 3] {
            for baseline in [Baseline::Zero, Baseline::Mask, Baseline::Unk, Baseline::Pad] {
                let (gap, delta) = assert_summation_to_delta(&bert(3, outputs), baseline, &examples);
                eprintln!("bert {outputs} outputs {baseline:?}: largest |gap| {gap:e}, largest |Δf| {delta:.3}");
            }
        }
    }

    /// Weights of 0.6 give attention logits that differ by far more than 88
    /// between an input and its reference, where `exp` of a logit shifted by a
    /// shared constant overflows f32: the softmax rule must stay finite and exact.
    /// The bound is the forward pass's own rounding there (plain and rescaled
    /// logits differ by up to 2e-4).
    #[test]
    fn summation_to_delta_with_extreme_attention_logits() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let ids: Vec<Vec<u32>> = (0..4)
            .map(|_| {
                let words = (0..rng.random_range(5..40)).map(|_| rng.random_range(5..VOCAB_SIZE as u32));
                std::iter::once(2).chain(words).chain([3]).collect()
            })
            .collect();
        let examples = bert_examples(&ids);
        let model = steep_bert(9, 2);
        for baseline in [Baseline::Zero, Baseline::Mask] {
            let a = explain(&model, baseline, &examples, &VOCAB, &settings(), &Default::default()).unwrap();
            for (scores, gap) in a.scores.iter().zip(a.completeness_gap.unwrap()) {
                let scale = 1.0 + scores.iter().map(|s| s.abs()).sum::<f32>();
                assert!(gap.is_finite() && gap.abs() < 1e-3 * scale, "{baseline:?}: gap {gap}, scores {scores:?}");
            }
        }
    }

    /// One nonlinearity, `f = tanh(Σ_t Σ_d e_td)`: Rescale gives token i exactly
    /// `(Σ_d Δe_id) · (tanh(s) − tanh(s₀)) / (s − s₀)`.
    #[test]
    fn one_nonlinearity_equals_the_rescale_rule() {
        let model = TanhSumModel::new();
        let ids = vec![vec![5u32, 9, 12], vec![7, 6]];
        let examples = lstm_examples(&ids);
        let device = Default::default();
        for baseline in [Baseline::Zero, Baseline::Unk] {
            let a = explain(&model, baseline, &examples, &VOCAB, &settings(), &device).unwrap();
            let base = match baseline {
                Baseline::Zero => 0.0,
                Baseline::Unk => model.token_sum(VOCAB.unk),
                Baseline::Mask | Baseline::Pad => unreachable!("only zero and [UNK] are run here"),
            };
            for (row, ids) in ids.iter().enumerate() {
                let s: f64 = ids.iter().map(|&id| model.token_sum(id)).sum();
                let s0 = base * ids.len() as f64;
                let sign = if a.predicted[row] == 1 { 1.0 } else { -1.0 };
                let multiplier = sign * (s.tanh() - s0.tanh()) / (s - s0);
                for (t, &id) in ids.iter().enumerate() {
                    let want = (model.token_sum(id) - base) * multiplier;
                    let got = a.scores[row][t] as f64;
                    assert!((got - want).abs() < 1e-6, "{baseline:?} row {row} token {t}: {got} vs {want}");
                }
            }
        }
    }

    /// A renamed gradient × (input − baseline) must fail: on nonlinear models
    /// DeepLift's multipliers are secants, not gradients at the input.
    #[test]
    fn differs_from_gradient_times_delta() {
        let lstm_ids = lstm_ids();
        let bert_ids = bert_ids();
        let cases = [
            ("tanh", run_both(&TanhSumModel::new(), &lstm_examples(&lstm_ids))),
            ("bilstm", run_both(&bilstm(1), &lstm_examples(&lstm_ids))),
            ("steep bilstm", run_both(&steep_bilstm(1, 3.0), &lstm_examples(&lstm_ids))),
            ("bert", run_both(&bert(3, 1), &bert_examples(&bert_ids))),
        ];
        for (name, (deeplift, gxd)) in cases {
            let mut largest = 0.0f32;
            let mut scale = 0.0f32;
            for (d, g) in deeplift.scores.iter().zip(&gxd) {
                for (d, g) in d.iter().zip(g) {
                    largest = largest.max((d - g).abs());
                    scale = scale.max(d.abs());
                }
            }
            assert!(largest > 0.05 * scale, "{name}: DeepLift {:?} vs gradient × Δ {gxd:?}", deeplift.scores);
        }
    }

    /// DeepLift (zero baseline) and `∂f/∂e · (e − 0)` for the same examples.
    fn run_both(model: &impl Classifier<Ad>, examples: &Examples<'_>) -> (Attribution, Vec<Vec<f32>>) {
        let device = Default::default();
        let deeplift = explain(model, Baseline::Zero, examples, &VOCAB, &settings(), &device).unwrap();
        let batch = examples.batch::<Ad>(VOCAB.pad, &device);
        let g = input_gradients(model, &batch, Target::Logit);
        let [rows, time, _] = g.gradients.dims();
        // Special tokens keep their embedding in the reference: their Δ is 0.
        let keep: Vec<f32> =
            (0..rows).flat_map(|r| (0..time).map(move |t| (r, t))).map(|(r, t)| ordinary(examples, r, t)).collect();
        let keep = Tensor::from_data(TensorData::new(keep, [rows, time, 1]), &device);
        let gxd = (g.gradients * g.embeddings * keep).sum_dim(2).reshape([rows, time]);
        (deeplift, rows_of(gxd, examples))
    }

    fn ordinary(examples: &Examples<'_>, row: usize, t: usize) -> f32 {
        match examples.special[row].get(t) {
            Some(false) => 1.0,
            _ => 0.0,
        }
    }

    /// One example alone and in a padded batch with others get the same scores.
    #[test]
    fn independent_of_batch_composition() {
        let device = Default::default();
        let lstm_ids = lstm_ids();
        let bert_ids = bert_ids();
        let check = |together: Attribution, alone: &dyn Fn(usize) -> Attribution, name: &str| {
            for (row, scores) in together.scores.iter().enumerate() {
                let single = alone(row);
                assert_eq!(single.predicted[0], together.predicted[row]);
                for (a, b) in scores.iter().zip(&single.scores[0]) {
                    assert!(
                        (a - b).abs() < 1e-5 * (1.0 + a.abs()),
                        "{name} row {row}: {scores:?} vs {:?}",
                        single.scores
                    );
                }
            }
        };
        let model = steep_bilstm(2, 3.0);
        let examples = lstm_examples(&lstm_ids);
        let together = explain(&model, Baseline::Unk, &examples, &VOCAB, &settings(), &device).unwrap();
        let alone = |row: usize| {
            let one = lstm_examples(&lstm_ids[row..row + 1]);
            explain(&model, Baseline::Unk, &one, &VOCAB, &settings(), &device).unwrap()
        };
        check(together, &alone, "bilstm");
        let model = bert(5, 3);
        let examples = bert_examples(&bert_ids);
        let together = explain(&model, Baseline::Mask, &examples, &VOCAB, &settings(), &device).unwrap();
        let alone = |row: usize| {
            let one = bert_examples(&bert_ids[row..row + 1]);
            explain(&model, Baseline::Mask, &one, &VOCAB, &settings(), &device).unwrap()
        };
        check(together, &alone, "bert");
        // A pass of two rows (one example each) gives the same as one of six.
        let small = crate::salience::Settings { internal_batch_size: 2, ..settings() };
        let chunked = explain(&model, Baseline::Mask, &examples, &VOCAB, &small, &device).unwrap();
        check(chunked, &alone, "bert, one example per pass");
    }

    /// The rules change gradients only: the stacked forward's values are the
    /// ordinary logits of the inputs and of the references.
    #[test]
    fn rescale_forward_keeps_the_logits() {
        let device = Default::default();
        let ids = bert_ids();
        let examples = bert_examples(&ids);
        let model = bert(7, 3);
        let batch = examples.batch::<Ad>(VOCAB.pad, &device);
        let e = model.embed(batch.ids.clone());
        let stacked = Tensor::cat(vec![e.clone(), e.mul_scalar(-0.7)], 0);
        let mask = Tensor::cat(vec![batch.mask.clone(), batch.mask], 0);
        let plain: Vec<f32> = model.logits_from_embeddings(stacked.clone(), mask.clone()).into_data().to_vec().unwrap();
        let rescaled: Vec<f32> = model.deeplift_logits(stacked, mask).unwrap().into_data().to_vec().unwrap();
        for (a, b) in plain.iter().zip(&rescaled) {
            assert!((a - b).abs() < 1e-4 * (1.0 + a.abs()), "{plain:?} vs {rescaled:?}");
        }
    }

    #[test]
    fn models_without_the_rules_are_unsupported() {
        let ids = vec![vec![5u32, 6]];
        let e = explain(
            &PresenceModel::new(),
            Baseline::Zero,
            &lstm_examples(&ids),
            &VOCAB,
            &settings(),
            &Default::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("deeplift"), "{e}");
        let e = explain(&bilstm(1), Baseline::Mask, &lstm_examples(&ids), &VOCAB, &settings(), &Default::default());
        assert!(e.is_ok(), "VOCAB has [MASK]");
        let no_mask = Vocabulary { mask: None, ..VOCAB };
        let e = explain(&bilstm(1), Baseline::Mask, &lstm_examples(&ids), &no_mask, &settings(), &Default::default());
        assert_eq!(e.unwrap_err(), AttributionError::NoMaskToken);
    }
}
