//! `smooth-<method>-<n>-<σ>`: SmoothGrad (Smilkov et al. 2017) over any gradient
//! method: the mean of the method's scores at `n` noisy copies of the input,
//! `e + ε` with `ε ~ N(0, (σ · (max e − min e))²)` per element — σ is a fraction
//! of the example's embedding value range, as in the paper (§3), so one σ suits
//! models whose embeddings differ in scale. Noise is added at ordinary tokens
//! only: special tokens and padding keep their embedding, as under every
//! baseline. Every noisy copy explains the clean input's predicted class.
//!
//! As Captum's `NoiseTunnel` does, the wrapped method sees the noisy input
//! (for `gxi` that is `∂f/∂e(e+ε) · (e+ε)`; for IG the path ends at `e+ε`).
//! The noise of (example, sample) comes from its own seeded stream, so chunking
//! and batching never change it.

use burn::prelude::*;
use burn::tensor::IndexingUpdateOp;
use burn::tensor::backend::AutodiffBackend;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};

use super::gradient::{gradient_times_input, gradients_at, reduce};
use super::integrated_gradients::{baseline_embeddings, integrate};
use super::{Attribution, AttributionError, Examples, GradientMethod, NoiseLevel, Settings, Vocabulary, rows_of};
use grid_core::model::{Classifier, predicted_classes};

#[allow(clippy::too_many_arguments)]
pub fn explain<B: AutodiffBackend, M: Classifier<B>>(
    model: &M,
    inner: GradientMethod,
    samples: u32,
    sigma: NoiseLevel,
    examples: &Examples<'_>,
    vocab: &Vocabulary,
    settings: &Settings,
    device: &B::Device,
) -> Result<Attribution, AttributionError> {
    let batch = examples.batch::<B>(vocab.pad, device);
    let inputs = model.embed(batch.ids.clone()).inner();
    let [n, time, dim] = inputs.dims();
    let predicted =
        predicted_classes(model.logits_from_embeddings(Tensor::from_inner(inputs.clone()), batch.mask.clone()));
    let baselines = match inner {
        GradientMethod::IntegratedGradients { baseline, .. } => {
            Some(baseline_embeddings(model, inputs.clone(), examples, vocab.baseline_token(baseline)?, device))
        }
        GradientMethod::Gradient { .. } | GradientMethod::GradientTimesInput { .. } => None,
    };
    let values: Vec<f32> = inputs.clone().into_data().convert::<f32>().to_vec().unwrap_or_default();
    let scales: Vec<f32> = (0..n).map(|i| sigma.get() * value_range(examples, i, &values, time, dim)).collect();

    let inner_device = inputs.device();
    let samples = samples as usize;
    let total = n * samples;
    // IG evaluates `steps` points per noisy copy: fewer copies per chunk keep the memory knob meaningful.
    let rows_per_pass = settings.rows_per_pass(time);
    let copies_per_chunk = match inner {
        GradientMethod::IntegratedGradients { steps, .. } => (rows_per_pass / steps as usize).max(1),
        GradientMethod::Gradient { .. } | GradientMethod::GradientTimesInput { .. } => rows_per_pass,
    };
    let mut summed = Tensor::<B::InnerBackend, 2>::zeros([n, time], &inner_device);
    let mut start = 0;
    while start < total {
        let rows: Vec<usize> = (start..(start + copies_per_chunk).min(total)).collect();
        start += rows.len();
        let example: Vec<usize> = rows.iter().map(|&r| r / samples).collect();
        let mut noise = vec![0.0f32; rows.len() * time * dim];
        for (k, &r) in rows.iter().enumerate() {
            let i = r / samples;
            let mut rng = noise_rng(settings, examples.stream[i], r % samples);
            for t in examples.ordinary_positions(i) {
                for d in 0..dim {
                    let z: f32 = StandardNormal.sample(&mut rng);
                    noise[(k * time + t) * dim + d] = z * scales[i];
                }
            }
        }
        let index_values: Vec<i64> = example.iter().map(|&i| i as i64).collect();
        let index =
            Tensor::<B::InnerBackend, 1, Int>::from_data(TensorData::new(index_values, [rows.len()]), &inner_device);
        let noise =
            Tensor::<B::InnerBackend, 3>::from_data(TensorData::new(noise, [rows.len(), time, dim]), &inner_device);
        let noisy = inputs.clone().select(0, index.clone()) + noise;
        let mask = batch.mask.clone().select(0, Tensor::from_inner(index.clone()));
        let classes: Vec<u32> = example.iter().map(|&i| predicted[i]).collect();
        let scores = match inner {
            GradientMethod::Gradient { target, reduction } => {
                reduce(gradients_at(model, noisy, mask, Some(&classes), target).gradients, reduction)
            }
            GradientMethod::GradientTimesInput { target } => {
                gradient_times_input(gradients_at(model, noisy.clone(), mask, Some(&classes), target).gradients, noisy)
            }
            GradientMethod::IntegratedGradients { target, steps, .. } => {
                let b = baselines.clone().expect("computed above for IG").select(0, index.clone());
                integrate(model, noisy, b, mask, &classes, target, steps, rows_per_pass).scores
            }
        };
        summed = summed.select_assign(0, index, scores, IndexingUpdateOp::Add);
    }
    Ok(Attribution { scores: rows_of(summed.div_scalar(samples as f64), examples), predicted, completeness_gap: None })
}

/// `max − min` of the example's embedding values at ordinary positions.
fn value_range(examples: &Examples<'_>, i: usize, values: &[f32], time: usize, dim: usize) -> f32 {
    let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
    for t in examples.ordinary_positions(i) {
        for &v in &values[(i * time + t) * dim..(i * time + t + 1) * dim] {
            lo = lo.min(v);
            hi = hi.max(v);
        }
    }
    if hi > lo { hi - lo } else { 0.0 }
}

/// The stream of one (example, sample) pair.
fn noise_rng(settings: &Settings, stream: u64, sample: usize) -> ChaCha8Rng {
    let mut rng =
        ChaCha8Rng::seed_from_u64(settings.seed.wrapping_add((sample as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)));
    rng.set_stream(stream);
    rng
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::salience::test_models::{
        Ad, PresenceModel, VOCAB, bert, bert_examples, bilstm, lstm_examples, settings,
    };
    use crate::salience::{Baseline, Method, Reduction, Target, attribute};

    fn smooth(inner: &str, samples: u32, sigma: f32) -> Method {
        Method::SmoothGrad { inner: inner.parse().unwrap(), samples, sigma: NoiseLevel::new(sigma).unwrap() }
    }

    #[test]
    fn on_a_linear_model_noise_averages_out_of_the_gradient() {
        // The gradient of PresenceModel's class-0 probability is constant: smoothing changes nothing.
        let model = PresenceModel::new();
        let ids = vec![vec![5, 6, 7, 8], vec![9, 10]];
        let examples = lstm_examples(&ids);
        let device = Default::default();
        let plain = attribute(&model, "gradp-mean".parse().unwrap(), &examples, &VOCAB, &settings(), &device).unwrap();
        let smoothed =
            attribute(&model, smooth("gradp-mean", 16, 0.5), &examples, &VOCAB, &settings(), &device).unwrap();
        for (a, b) in plain.scores.iter().flatten().zip(smoothed.scores.iter().flatten()) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
    }

    #[test]
    fn matches_a_hand_rolled_average_and_ignores_chunking() {
        let model = bilstm(6);
        let ids = vec![vec![5, 6, 7], vec![8, 9, 10, 11, 12]];
        let examples = lstm_examples(&ids);
        let device = Default::default();
        let method = smooth("gradl-l2", 5, 0.2);
        let whole = attribute(&model, method, &examples, &VOCAB, &settings(), &device).unwrap();
        let chunked =
            attribute(&model, method, &examples, &VOCAB, &Settings { internal_batch_size: 3, ..settings() }, &device)
                .unwrap();
        assert_eq!(whole.scores.len(), 2);
        for (a, b) in whole.scores.iter().flatten().zip(chunked.scores.iter().flatten()) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
        // By hand for example 1: the same noise, one copy at a time.
        let batch = examples.batch::<Ad>(0, &device);
        let e: Vec<f32> = model.embed(batch.ids.clone()).into_data().to_vec().unwrap();
        let (time, dim) = (5, 6);
        let scale = 0.2 * value_range(&examples, 1, &e, time, dim);
        let alone_ids = vec![ids[1].clone()];
        let alone = lstm_examples(&alone_ids);
        let clean = model.embed(alone.batch::<Ad>(0, &device).ids);
        let mut want = vec![0.0f32; time];
        for s in 0..5 {
            let mut rng = noise_rng(&settings(), 1, s);
            let noise: Vec<f32> = (0..time * dim)
                .map(|_| {
                    let z: f32 = StandardNormal.sample(&mut rng);
                    z * scale
                })
                .collect();
            let noisy = clean.clone().inner() + Tensor::from_data(TensorData::new(noise, [1, time, dim]), &device);
            let mask = alone.batch::<Ad>(0, &device).mask;
            let g = gradients_at(&model, noisy, mask, Some(&whole.predicted[1..2]), Target::Logit).gradients;
            let r: Vec<f32> = reduce(g, Reduction::L2).into_data().to_vec().unwrap();
            for t in 0..time {
                want[t] += r[t] / 5.0;
            }
        }
        for (a, b) in whole.scores[1].iter().zip(&want) {
            assert!((a - b).abs() < 1e-5, "{a} vs {b}");
        }
    }

    #[test]
    fn smoothed_ig_and_gxi_run_on_bert_and_leave_special_tokens_alone() {
        let model = bert(3, 1);
        let ids = vec![vec![2, 5, 6, 3], vec![2, 7, 8, 9, 3]];
        let examples = bert_examples(&ids);
        let device = Default::default();
        for method in [smooth("igl-mask-8", 3, 0.1), smooth("gxip", 4, 0.1)] {
            let a = attribute(&model, method, &examples, &VOCAB, &settings(), &device).unwrap();
            for row in &a.scores {
                assert!(row.iter().all(|v| v.is_finite()));
                if matches!(method, Method::SmoothGrad { inner: GradientMethod::IntegratedGradients { .. }, .. }) {
                    // Special tokens get no noise and keep their embedding in the baseline: e − b = 0.
                    assert_eq!((row[0], row[row.len() - 1]), (0.0, 0.0), "{method}");
                }
            }
        }
        let e = attribute(
            &model,
            Method::SmoothGrad {
                inner: GradientMethod::IntegratedGradients {
                    target: Target::Logit,
                    baseline: Baseline::Mask,
                    steps: 2,
                },
                samples: 2,
                sigma: NoiseLevel::new(0.1).unwrap(),
            },
            &examples,
            &Vocabulary { mask: None, ..VOCAB },
            &settings(),
            &device,
        );
        assert_eq!(e.unwrap_err(), AttributionError::NoMaskToken);
    }
}
