//! `ig{p,l}-{zero,mask,unk,pad}-{m}`: integrated gradients (Sundararajan et al.
//! 2017) with the right Riemann sum of PROTOCOL §1:
//!
//! `s_i = (e_i − b_i) · (1/m) Σ_{j=1..m} ∂f/∂e_i (b + (j/m)(e − b))`
//!
//! The interpolation points of all examples of a batch are laid out as one list
//! of `n · m` rows and cut into chunks of `Settings::rows_per_pass` rows (the
//! memory knob, `internal_batch_size`, scaled down for long inputs); each chunk is one forward and one backward pass, whatever example its
//! rows belong to, and its gradients are added into their examples' sums.
//!
//! Relation to `gxi`: with the zero baseline and `m = 1` the only point is the
//! input itself, so `igl-zero-1` is exactly `gxil`; for a model linear in its
//! embeddings IG equals `∂f/∂e · (e − b)` for every `m`.

use burn::prelude::*;
use burn::tensor::IndexingUpdateOp;
use burn::tensor::backend::AutodiffBackend;

use super::gradient::gradients_at;
use super::target::predicted_class_value;
use super::{Attribution, AttributionError, Baseline, Examples, Settings, Target, Vocabulary, rows_of};
use grid_core::model::{Classifier, predicted_classes};

#[allow(clippy::too_many_arguments)]
pub fn explain<B: AutodiffBackend, M: Classifier<B>>(
    model: &M,
    target: Target,
    baseline: Baseline,
    steps: u32,
    examples: &Examples<'_>,
    vocab: &Vocabulary,
    settings: &Settings,
    device: &B::Device,
) -> Result<Attribution, AttributionError> {
    let batch = examples.batch::<B>(vocab.pad, device);
    let inputs = model.embed(batch.ids.clone()).inner();
    let baselines = baseline_embeddings(model, inputs.clone(), examples, vocab.baseline_token(baseline)?, device);
    let predicted =
        predicted_classes(model.logits_from_embeddings(Tensor::from_inner(inputs.clone()), batch.mask.clone()));
    let chunk = settings.rows_per_pass(inputs.dims()[1]);
    let integral = integrate(model, inputs, baselines, batch.mask, &predicted, target, steps, chunk);
    Ok(Attribution {
        scores: rows_of(integral.scores, examples),
        predicted,
        completeness_gap: Some(integral.completeness_gap),
    })
}

/// The reference input: at ordinary positions the embedding of `token` (zero
/// vectors for `None`); special tokens and padding keep their own embedding, so
/// they contribute nothing (`e_i − b_i = 0`).
pub fn baseline_embeddings<B: AutodiffBackend, M: Classifier<B>>(
    model: &M,
    inputs: Tensor<B::InnerBackend, 3>,
    examples: &Examples<'_>,
    token: Option<u32>,
    device: &B::Device,
) -> Tensor<B::InnerBackend, 3> {
    let [n, time, _] = inputs.dims();
    let keep = keep_own_embedding::<B::InnerBackend>(examples, time, device).reshape([n, time, 1]);
    // One `[1, 1, dim]` row, broadcast over every position.
    let replacement = match token {
        None => inputs.clone().narrow(0, 0, 1).narrow(1, 0, 1).zeros_like(),
        Some(t) => {
            let ids = Tensor::<B, 2, Int>::from_data(TensorData::new(vec![t as i64], [1, 1]), device);
            model.embed(ids).inner()
        }
    };
    inputs * keep.clone() + replacement * (keep.neg() + 1.0)
}

/// `[n, time]`: 1 at special tokens and padding, 0 at ordinary tokens.
pub fn keep_own_embedding<B: Backend>(examples: &Examples<'_>, time: usize, device: &B::Device) -> Tensor<B, 2> {
    let mut keep = vec![1.0f32; examples.len() * time];
    for (i, special) in examples.special.iter().enumerate() {
        for (t, &s) in special.iter().enumerate() {
            if !s {
                keep[i * time + t] = 0.0;
            }
        }
    }
    Tensor::from_data(TensorData::new(keep, [examples.len(), time]), device)
}

/// Per-token attributions and the per-example completeness gap.
pub struct Integral<B: Backend> {
    /// `[n, time]`
    pub scores: Tensor<B, 2>,
    /// `Σ_i s_i − (f(e) − f(b))` per example.
    pub completeness_gap: Vec<f32>,
}

/// Integrated gradients from `baselines` to `inputs` (both `[n, time, dim]`),
/// explaining `classes[r]` for row `r`, in chunks of `chunk` interpolation points.
#[allow(clippy::too_many_arguments)]
pub fn integrate<B: AutodiffBackend, M: Classifier<B>>(
    model: &M,
    inputs: Tensor<B::InnerBackend, 3>,
    baselines: Tensor<B::InnerBackend, 3>,
    mask: Tensor<B, 2>,
    classes: &[u32],
    target: Target,
    steps: u32,
    chunk: usize,
) -> Integral<B::InnerBackend> {
    let [n, _, _] = inputs.dims();
    let device = inputs.device();
    let m = steps.max(1) as usize;
    let difference = inputs.clone() - baselines.clone();
    let mut summed = inputs.zeros_like();
    let total = n * m;
    let mut start = 0;
    while start < total {
        let rows: Vec<usize> = (start..(start + chunk.max(1)).min(total)).collect();
        start += rows.len();
        let example: Vec<i64> = rows.iter().map(|&r| (r / m) as i64).collect();
        let alpha: Vec<f32> = rows.iter().map(|&r| ((r % m) + 1) as f32 / m as f32).collect();
        let row_classes: Vec<u32> = rows.iter().map(|&r| classes[r / m]).collect();
        let index = Tensor::<B::InnerBackend, 1, Int>::from_data(TensorData::new(example, [rows.len()]), &device);
        let alpha = Tensor::<B::InnerBackend, 3>::from_data(TensorData::new(alpha, [rows.len(), 1, 1]), &device);
        let points = baselines.clone().select(0, index.clone()) + difference.clone().select(0, index.clone()) * alpha;
        let row_mask = mask.clone().select(0, Tensor::from_inner(index.clone()));
        let g = gradients_at(model, points, row_mask, Some(&row_classes), target);
        // As matrices: burn's CPU backend adds whole rows there, and walks a
        // 3-D tensor one computed index at a time (the same sums, in the same
        // order).
        let [_, time, width] = summed.dims();
        let g = g.gradients.reshape([rows.len(), time * width]);
        summed = summed
            .reshape([n, time * width])
            .select_assign(0, index, g, IndexingUpdateOp::Add)
            .reshape([n, time, width]);
    }
    let scores = (difference * summed).sum_dim(2).div_scalar(m as f64).reshape([n, inputs.dims()[1]]);

    // f(e) and f(b) in one pass.
    let both = Tensor::cat(vec![inputs, baselines], 0);
    let logits = model.logits_from_embeddings(Tensor::from_inner(both), Tensor::cat(vec![mask.clone(), mask], 0));
    let doubled: Vec<u32> = classes.iter().chain(classes).copied().collect();
    let f: Vec<f32> =
        predicted_class_value(logits, &doubled, target).into_data().convert::<f32>().to_vec().unwrap_or_default();
    let totals: Vec<f32> = scores.clone().sum_dim(1).into_data().convert::<f32>().to_vec().unwrap_or_default();
    let completeness_gap = (0..n).map(|i| totals[i] - (f[i] - f[n + i])).collect();
    Integral { scores, completeness_gap }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::salience::gradient::input_gradients;
    use crate::salience::test_models::{
        Ad, PresenceModel, VOCAB, bert, bert_examples, bilstm, lstm_examples, settings,
    };
    use crate::salience::{GradientMethod, Method, Settings, attribute};
    use grid_core::model::bilstm::BiLstmClassifier;

    fn ig(steps: u32, baseline: Baseline, target: Target) -> Method {
        Method::Gradient(GradientMethod::IntegratedGradients { target, baseline, steps })
    }

    fn mean_abs_gap<M: Classifier<Ad>>(model: &M, examples: &Examples<'_>, method: Method) -> f64 {
        let a = attribute(model, method, examples, &VOCAB, &settings(), &Default::default()).unwrap();
        let gaps = a.completeness_gap.unwrap();
        gaps.iter().map(|g| g.abs() as f64).sum::<f64>() / gaps.len() as f64
    }

    #[test]
    fn completeness_gap_shrinks_as_steps_grow() {
        let ids = vec![vec![5, 9, 13, 7], vec![6, 8, 10, 12, 14, 16], vec![20, 21]];
        let lstm = bilstm(4);
        let lstm_examples = lstm_examples(&ids);
        let with_specials: Vec<Vec<u32>> = ids.iter().map(|s| [&[2], s.as_slice(), &[3]].concat()).collect();
        let bert = bert(5, 1);
        let bert_examples = bert_examples(&with_specials);
        let lstm_gap = |m: u32| mean_abs_gap(&lstm, &lstm_examples, ig(m, Baseline::Unk, Target::Logit));
        let bert_gap = |m: u32| mean_abs_gap(&bert, &bert_examples, ig(m, Baseline::Mask, Target::Probability));
        for (name, gaps) in
            [("lstm", [lstm_gap(1), lstm_gap(10), lstm_gap(300)]), ("bert", [bert_gap(1), bert_gap(10), bert_gap(300)])]
        {
            let [g1, g10, g300] = gaps;
            assert!(g10 < g1 && g300 < g10, "{name}: gaps {g1} {g10} {g300} must shrink");
            assert!(g300 < 0.02 * g1.max(1e-3), "{name}: with 300 steps the gap {g300} is near 0 (1 step: {g1})");
        }
    }

    #[test]
    fn on_a_linear_model_ig_is_gradient_times_difference_for_any_steps() {
        // PresenceModel's logits are not linear, its class-0 probability is: p0 = ½ + Σ e.
        let model = PresenceModel::new();
        let ids = vec![vec![5, 6, 7, 8], vec![9, 10]];
        let examples = lstm_examples(&ids);
        let device = Default::default();
        let batch = examples.batch::<Ad>(0, &device);
        let g = input_gradients(&model, &batch, Target::Probability);
        let gxi: Vec<f32> = (g.gradients * g.embeddings).sum_dim(2).into_data().to_vec().unwrap();
        for steps in [1, 3, 50] {
            let a = attribute(
                &model,
                ig(steps, Baseline::Zero, Target::Probability),
                &examples,
                &VOCAB,
                &settings(),
                &device,
            )
            .unwrap();
            for (i, row) in a.scores.iter().enumerate() {
                for (t, &s) in row.iter().enumerate() {
                    assert!(
                        (s - gxi[i * 4 + t]).abs() < 1e-6,
                        "steps {steps}, example {i}, token {t}: {s} vs {}",
                        gxi[i * 4 + t]
                    );
                }
            }
            assert!(a.completeness_gap.unwrap().iter().all(|g| g.abs() < 1e-6));
        }
    }

    #[test]
    fn one_step_from_zero_is_gradient_times_input() {
        let model = bilstm(9);
        let ids = vec![vec![5, 6, 7], vec![8, 9, 10, 11]];
        let examples = lstm_examples(&ids);
        let device = Default::default();
        let ig =
            attribute(&model, ig(1, Baseline::Zero, Target::Logit), &examples, &VOCAB, &settings(), &device).unwrap();
        let gxi = attribute(
            &model,
            Method::Gradient(GradientMethod::GradientTimesInput { target: Target::Logit }),
            &examples,
            &VOCAB,
            &settings(),
            &device,
        )
        .unwrap();
        // The same products summed in another order (IG batches its steps; the
        // GEMM splits work by the threads free): equal to f32 rounding.
        for (a, b) in ig.scores.iter().flatten().zip(gxi.scores.iter().flatten()) {
            assert!((a - b).abs() <= 1e-5 * (1.0 + a.abs().max(b.abs())), "{a} vs {b}");
        }
    }

    #[test]
    fn the_pad_baseline_is_the_zero_baseline_only_for_a_zero_pad_row() {
        let ids = vec![vec![5, 6, 7], vec![8, 9, 10, 11]];
        let examples = lstm_examples(&ids);
        let device = Default::default();
        let run = |model: &BiLstmClassifier<Ad>, baseline| {
            attribute(model, ig(10, baseline, Target::Logit), &examples, &VOCAB, &settings(), &device).unwrap().scores
        };
        let learned = bilstm(4);
        let (pad, zero) = (run(&learned, Baseline::Pad), run(&learned, Baseline::Zero));
        let largest_gap =
            pad.iter().flatten().zip(zero.iter().flatten()).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(largest_gap > 1e-3, "a drawn [PAD] row is a baseline of its own: {largest_gap}");
        let zeroed = bilstm(4).with_zero_pad_row(VOCAB.pad);
        assert_eq!(run(&zeroed, Baseline::Pad), run(&zeroed, Baseline::Zero));
    }

    #[test]
    fn chunking_and_batching_do_not_change_scores() {
        let model = bert(2, 3);
        let ids = vec![vec![2, 5, 6, 3], vec![2, 7, 8, 9, 10, 3], vec![2, 11, 3]];
        let examples = bert_examples(&ids);
        let device = Default::default();
        let method = ig(20, Baseline::Pad, Target::Logit);
        let whole = attribute(&model, method, &examples, &VOCAB, &settings(), &device).unwrap();
        let tiny_chunks = Settings { internal_batch_size: 7, ..settings() };
        let chunked = attribute(&model, method, &examples, &VOCAB, &tiny_chunks, &device).unwrap();
        for (a, b) in whole.scores.iter().flatten().zip(chunked.scores.iter().flatten()) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
        let alone_ids = vec![ids[1].clone()];
        let alone = attribute(&model, method, &bert_examples(&alone_ids), &VOCAB, &settings(), &device).unwrap();
        for (a, b) in alone.scores[0].iter().zip(&whole.scores[1]) {
            assert!((a - b).abs() < 1e-5, "alone {a} vs batched {b}");
        }
        // Special tokens keep their embedding: they get exactly 0.
        for row in &whole.scores {
            assert_eq!((row[0], row[row.len() - 1]), (0.0, 0.0));
        }
    }

    #[test]
    fn a_mask_baseline_needs_a_mask_token() {
        let model = bilstm(1);
        let ids = vec![vec![5, 6]];
        let no_mask = Vocabulary { mask: None, ..VOCAB };
        let e = attribute(
            &model,
            ig(4, Baseline::Mask, Target::Logit),
            &lstm_examples(&ids),
            &no_mask,
            &settings(),
            &Default::default(),
        );
        assert_eq!(e.unwrap_err(), AttributionError::NoMaskToken);
    }
}
