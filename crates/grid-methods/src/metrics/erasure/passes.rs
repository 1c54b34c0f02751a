//! The forward passes of erasure: every example's hard rationales (kept and
//! removed, per ratio) and soft Bernoulli masks run through the model, and
//! the per-example record and summary the `erasure` step writes. The
//! formulas they apply are in [`super`].

use burn::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use super::{
    Convention, Settings, SoftErasure, aopc, comprehensiveness, mean, mean_defined, normalised_sufficiency,
    soft_keep_probabilities, sufficiency,
};
use crate::metrics::ranking;
use crate::salience::perturb::{class_probability, hide};
use grid_core::model::predict::logits;
use grid_core::model::{Classifier, TokenBatch, predicted_class};

/// Why an erasure pass refused its examples.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ErasureError {
    #[error("example {index}: {tokens} tokens but {scores} scores and {special} special flags")]
    Lengths { index: usize, tokens: usize, scores: usize, special: usize },
    #[error(
        "example {index}: the attribution's predicted class is {attributed} but the model predicts {model} on the \
         full input"
    )]
    PredictedClass { index: usize, attributed: u32, model: u32 },
}

/// The erasure metrics of one example.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErasedExample {
    /// Index into the synthetic test set.
    pub index: usize,
    /// ŷ, the attribution's (and the model's) predicted class.
    pub predicted: u32,
    /// `p(ŷ|x)`.
    pub p_full: f64,
    /// `p(ŷ|0)`: every ordinary token replaced by [PAD].
    pub p_zeroed: f64,
    /// NS and NC per ratio, in the settings' order; `None` when undefined.
    pub ns: Vec<Option<f64>>,
    pub nc: Vec<Option<f64>>,
    pub aopc_ns: Option<f64>,
    pub aopc_nc: Option<f64>,
    /// Mean over the soft samples; `None` when undefined or with no samples.
    pub soft_ns: Option<f64>,
    pub soft_nc: Option<f64>,
}

impl ErasedExample {
    /// Whether every number it holds is finite (`None` is "undefined", not
    /// a failure).
    pub fn is_finite(&self) -> bool {
        let defined = |v: &Option<f64>| v.is_none_or(f64::is_finite);
        self.p_full.is_finite()
            && self.p_zeroed.is_finite()
            && self.ns.iter().chain(&self.nc).all(defined)
            && [self.aopc_ns, self.aopc_nc, self.soft_ns, self.soft_nc].iter().all(defined)
    }
}

/// `summary.json`: means over the examples whose values are defined.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErasureSummary {
    pub examples: usize,
    /// Examples whose zeroed input is as confident as the full one, so that every
    /// normalised value is undefined and left out of the means.
    pub undefined: usize,
    pub ratios: Vec<f64>,
    pub mean_ns: Vec<Option<f64>>,
    pub mean_nc: Vec<Option<f64>>,
    pub mean_aopc_ns: Option<f64>,
    pub mean_aopc_nc: Option<f64>,
    pub mean_soft_ns: Option<f64>,
    pub mean_soft_nc: Option<f64>,
    pub seconds: f64,
    /// Sequences run through the model (hard and soft).
    pub forward_passes: usize,
}

/// One example to erase: its token ids, which are special, its salience and ŷ.
#[derive(Debug, Clone, PartialEq)]
pub struct ErasureInput<'a> {
    pub index: usize,
    pub ids: &'a [u32],
    /// Special tokens ([CLS], [SEP]) are never erased.
    pub special: Vec<bool>,
    pub scores: &'a [f32],
    pub predicted: u32,
}

impl ErasureInput<'_> {
    fn ranking(&self) -> Vec<usize> {
        ranking(self.scores, |i| !self.special[i])
    }
}

/// Hard and soft erasure of `examples`; every forward pass holds `batch_size`
/// sequences, from any examples. Fails when the model's prediction on a full
/// input is not the example's ŷ.
pub fn erase<B: Backend, M: Classifier<B>>(
    model: &M,
    examples: &[ErasureInput],
    pad: u32,
    settings: &Settings,
    batch_size: usize,
    device: &B::Device,
) -> Result<Vec<ErasedExample>, ErasureError> {
    for e in examples {
        if e.scores.len() != e.ids.len() || e.special.len() != e.ids.len() {
            return Err(ErasureError::Lengths {
                index: e.index,
                tokens: e.ids.len(),
                scores: e.scores.len(),
                special: e.special.len(),
            });
        }
    }
    let hard = hard_probabilities(model, examples, pad, settings, batch_size, device)?;
    let soft = soft_probabilities(model, examples, settings, pad, batch_size, device);
    let convention = settings.convention;
    Ok(examples
        .iter()
        .zip(&hard)
        .zip(&soft)
        .map(|((example, hard), soft)| record(example, hard, soft, convention))
        .collect())
}

/// Per example, `p(ŷ|·)` of the [`hard_sequences`].
fn hard_probabilities<B: Backend, M: Classifier<B>>(
    model: &M,
    examples: &[ErasureInput],
    pad: u32,
    settings: &Settings,
    batch_size: usize,
    device: &B::Device,
) -> Result<Vec<Vec<f64>>, ErasureError> {
    let sequences: Vec<Vec<u32>> = examples.iter().flat_map(|e| hard_sequences(e, pad, settings)).collect();
    let rows = logits(model, &sequences, batch_size, pad, device);
    examples
        .iter()
        .zip(rows.chunks(hard_sequences_per_example(settings)))
        .map(|(example, rows)| {
            let model_class = predicted_class(&rows[0]);
            if model_class != example.predicted {
                return Err(ErasureError::PredictedClass {
                    index: example.index,
                    attributed: example.predicted,
                    model: model_class,
                });
            }
            Ok(rows.iter().map(|row| class_probability(row, example.predicted)).collect())
        })
        .collect()
}

/// Full, zeroed, then per ratio R-kept and R-removed.
fn hard_sequences_per_example(settings: &Settings) -> usize {
    2 + 2 * settings.ratios.len()
}

/// Sequences run through the model for `n` examples.
pub fn forward_passes(n: usize, settings: &Settings) -> usize {
    n * (hard_sequences_per_example(settings) + SoftErasure::BOTH.len() * settings.soft_samples)
}

/// `[x, 0, R_1, x∖R_1, R_2, x∖R_2, …]`: erased tokens become [PAD] in place
/// (positions and attention mask stay); special tokens stay, but for the
/// zeroed input under the authors' code's convention.
fn hard_sequences(example: &ErasureInput, pad: u32, settings: &Settings) -> Vec<Vec<u32>> {
    let order = example.ranking();
    let hidden = |keep: &dyn Fn(usize) -> bool| {
        let keep: Vec<bool> = (0..order.len()).map(keep).collect();
        hide(example.ids, &order, &keep, Some(pad))
    };
    let zeroed = match settings.convention {
        Convention::Paper => hidden(&|_| false),
        Convention::AuthorsCode => vec![pad; example.ids.len()],
    };
    let mut sequences = vec![example.ids.to_vec(), zeroed];
    for &ratio in &settings.ratios {
        let k = settings.convention.rationale_size(order.len(), example.ids.len(), ratio);
        sequences.push(hidden(&|rank| rank < k));
        sequences.push(hidden(&|rank| rank >= k));
    }
    sequences
}

/// The record from the probabilities of [`hard_sequences`] and, per soft
/// metric, `p(ŷ|x′)` of every sample.
fn record(example: &ErasureInput, hard: &[f64], soft: &[Vec<f64>; 2], convention: Convention) -> ErasedExample {
    let (p_full, p_zeroed) = (hard[0], hard[1]);
    let s_zero = sufficiency(p_full, p_zeroed);
    let pairs = hard[2..].chunks(2);
    let ns: Vec<Option<f64>> = pairs.clone().map(|pair| convention.ns(sufficiency(p_full, pair[0]), s_zero)).collect();
    let nc: Vec<Option<f64>> = pairs.map(|pair| convention.nc(comprehensiveness(p_full, pair[1]), s_zero)).collect();
    let [soft_ns, soft_nc] = [0, 1].map(|k| {
        let values: Option<Vec<f64>> =
            soft[k].iter().map(|&p| SoftErasure::BOTH[k].normalised_as(convention, p_full, p, s_zero)).collect();
        values.and_then(|v| mean(&v))
    });
    ErasedExample {
        index: example.index,
        predicted: example.predicted,
        p_full,
        p_zeroed,
        aopc_ns: aopc(&ns),
        aopc_nc: aopc(&nc),
        ns,
        nc,
        soft_ns,
        soft_nc,
    }
}

/// Whether the normalised values of a record are undefined: `1 − S(x,ŷ,0) ≈ 0`.
pub fn is_undefined(example: &ErasedExample) -> bool {
    normalised_sufficiency(1.0, sufficiency(example.p_full, example.p_zeroed)).is_none()
}

/// One soft-erased forward pass: an example, which metric, which sample.
struct SoftPass<'a> {
    example: usize,
    kind: SoftErasure,
    ids: &'a [u32],
    /// Keep-probability per token.
    keep: Vec<f64>,
    rng: ChaCha8Rng,
}

/// Per example, `[Soft-NS, Soft-NC]` masks' `p(ŷ|x′)`, one per sample.
fn soft_probabilities<B: Backend, M: Classifier<B>>(
    model: &M,
    examples: &[ErasureInput],
    settings: &Settings,
    pad: u32,
    batch_size: usize,
    device: &B::Device,
) -> Vec<[Vec<f64>; 2]> {
    let mut passes = Vec::new();
    for (e, example) in examples.iter().enumerate() {
        let a = soft_keep_probabilities(example.scores, |i| !example.special[i]);
        for kind in SoftErasure::BOTH {
            let keep = kind.keep_probabilities(&a, |i| !example.special[i]);
            for sample in 0..settings.soft_samples {
                let rng = mask_rng(settings.seed, example.index, sample, kind);
                passes.push(SoftPass { example: e, kind, ids: example.ids, keep: keep.clone(), rng });
            }
        }
    }
    let rows = masked_logits(model, &mut passes, pad, batch_size, device);
    let mut probabilities = vec![[Vec::new(), Vec::new()]; examples.len()];
    for (pass, row) in passes.iter().zip(&rows) {
        let slot = usize::from(pass.kind == SoftErasure::Comprehensiveness);
        probabilities[pass.example][slot].push(class_probability(row, examples[pass.example].predicted));
    }
    probabilities
}

/// The mask generator of one (seed, example, sample, metric): independent of
/// batching and of the other examples.
fn mask_rng(seed: u64, index: usize, sample: usize, kind: SoftErasure) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    let kind = match kind {
        SoftErasure::Sufficiency => 0u64,
        SoftErasure::Comprehensiveness => 1,
    };
    for (slot, word) in key.chunks_mut(8).zip([seed, index as u64, sample as u64, kind]) {
        slot.copy_from_slice(&word.to_le_bytes());
    }
    ChaCha8Rng::from_seed(key)
}

/// Bernoulli mask `e_i ~ Ber(q_i)` for every embedding element of every token,
/// `[tokens, dim]` row-major: 1.0 keeps an element, 0.0 zeroes it. No `1/q`
/// rescaling (Zhao & Aletras 2023, Eq. 3).
pub fn bernoulli_mask(keep: &[f64], dim: usize, rng: &mut impl Rng) -> Vec<f32> {
    let mut mask = Vec::with_capacity(keep.len() * dim);
    for &q in keep {
        // u ∈ [0,1): q = 1 always keeps, q = 0 never does.
        mask.extend((0..dim).map(|_| f32::from(u8::from(rng.random::<f64>() < q))));
    }
    mask
}

/// Logits of every soft pass, in order: `embed`, multiply by the pass's mask,
/// `logits_from_embeddings`, `batch_size` passes per batch in length order.
fn masked_logits<B: Backend, M: Classifier<B>>(
    model: &M,
    passes: &mut [SoftPass],
    pad: u32,
    batch_size: usize,
    device: &B::Device,
) -> Vec<Vec<f32>> {
    let mut order: Vec<usize> = (0..passes.len()).collect();
    order.sort_by_key(|&i| passes[i].ids.len());
    let mut rows = vec![Vec::new(); passes.len()];
    for chunk in order.chunks(batch_size.max(1)) {
        let sequences: Vec<&[u32]> = chunk.iter().map(|&i| passes[i].ids).collect();
        let batch = TokenBatch::<B>::from_sequences(&sequences, pad, device);
        let embeddings = model.embed(batch.ids.clone());
        let [size, time, dim] = embeddings.dims();
        let mut mask = vec![1.0f32; size * time * dim];
        for (row, &i) in chunk.iter().enumerate() {
            let pass = &mut passes[i];
            let values = bernoulli_mask(&pass.keep, dim, &mut pass.rng);
            mask[row * time * dim..][..values.len()].copy_from_slice(&values);
        }
        let mask = Tensor::<B, 3>::from_data(TensorData::new(mask, [size, time, dim]), device);
        let logits = model.logits_from_embeddings(embeddings * mask, batch.mask);
        let [_, outputs] = logits.dims();
        let values: Vec<f32> = logits.into_data().convert::<f32>().to_vec().unwrap_or_default();
        for (&i, row) in chunk.iter().zip(values.chunks(outputs.max(1))) {
            rows[i] = row.to_vec();
        }
    }
    rows
}

/// Means over the defined examples, and how many were undefined.
pub fn summarise(settings: &Settings, erased: &[ErasedExample], seconds: f64) -> ErasureSummary {
    let per_ratio = |values: fn(&ErasedExample) -> &Vec<Option<f64>>| {
        (0..settings.ratios.len()).map(|r| mean_defined(erased.iter().map(|e| values(e)[r]))).collect()
    };
    ErasureSummary {
        examples: erased.len(),
        undefined: erased.iter().filter(|e| is_undefined(e)).count(),
        ratios: settings.ratios.clone(),
        mean_ns: per_ratio(|e| &e.ns),
        mean_nc: per_ratio(|e| &e.nc),
        mean_aopc_ns: mean_defined(erased.iter().map(|e| e.aopc_ns)),
        mean_aopc_nc: mean_defined(erased.iter().map(|e| e.aopc_nc)),
        mean_soft_ns: mean_defined(erased.iter().map(|e| e.soft_ns)),
        mean_soft_nc: mean_defined(erased.iter().map(|e| e.soft_nc)),
        seconds,
        forward_passes: forward_passes(erased.len(), settings),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_non_finite_number_is_caught_and_undefined_is_not() {
        let good = ErasedExample {
            index: 3,
            predicted: 1,
            p_full: 0.9,
            p_zeroed: 0.5,
            ns: vec![Some(0.2), None],
            nc: vec![Some(0.4), Some(0.1)],
            aopc_ns: Some(0.2),
            aopc_nc: None,
            soft_ns: Some(0.3),
            soft_nc: None,
        };
        assert!(good.is_finite());
        assert!(!ErasedExample { p_zeroed: f64::NAN, ..good.clone() }.is_finite());
        assert!(!ErasedExample { nc: vec![Some(f64::INFINITY)], ..good.clone() }.is_finite());
        assert!(!ErasedExample { soft_nc: Some(f64::NAN), ..good }.is_finite());
    }
    use crate::salience::test_models::{Ad, PresenceModel, VOCAB_SIZE, bert, bilstm};

    /// `p(class 0) = ½ + Σ_t w[id_t]`: only the listed tokens carry weight.
    fn presence(weights: &[(u32, f32)]) -> PresenceModel {
        let mut model = PresenceModel { weights: vec![0.0; VOCAB_SIZE] };
        for &(id, w) in weights {
            model.weights[id as usize] = w;
        }
        model
    }

    fn input<'a>(index: usize, ids: &'a [u32], scores: &'a [f32], predicted: u32) -> ErasureInput<'a> {
        ErasureInput { index, ids, special: vec![false; ids.len()], scores, predicted }
    }

    fn erase_on<M: Classifier<Ad>>(
        model: &M,
        examples: &[ErasureInput],
        settings: &Settings,
        batch_size: usize,
    ) -> Vec<ErasedExample> {
        erase::<Ad, _>(model, examples, 0, settings, batch_size, &Default::default()).unwrap()
    }

    fn assert_close(got: Option<f64>, want: f64) {
        let got = got.unwrap_or(f64::NAN);
        assert!((got - want).abs() < 1e-5, "got {got}, want {want}");
    }

    #[test]
    fn hard_sequences_pad_in_place_and_keep_specials() {
        // [CLS]=2 a=5 b=6 c=7 [SEP]=3; salience ranks c, a, b.
        let ids = [2, 5, 6, 7, 3];
        let scores = [9.0, 0.5, 0.1, 0.9, 9.0];
        let mut example = input(0, &ids, &scores, 0);
        example.special = vec![true, false, false, false, true];
        // d = 3: ρ = 0.2 → k = 1 (c), ρ = 0.5 → k = 2 (c, a).
        let settings = Settings { ratios: vec![0.2, 0.5], ..Settings::default() };
        let sequences = hard_sequences(&example, 0, &settings);
        assert_eq!(
            sequences,
            vec![
                vec![2, 5, 6, 7, 3],
                vec![2, 0, 0, 0, 3],
                vec![2, 0, 0, 7, 3],
                vec![2, 5, 6, 0, 3],
                vec![2, 5, 0, 7, 3],
                vec![2, 0, 6, 0, 3],
            ]
        );
    }

    #[test]
    fn the_decisive_token_ranked_first_or_last() {
        // Only token 7 matters: p(0|x) = 0.9 with it, 0.5 without.
        // S0 = 1 − (0.9 − 0.5) = 0.6, so 1 − S0 = 0.4.
        let model = presence(&[(7, 0.4)]);
        let ids = [5, 6, 7, 8, 9, 10, 11, 12, 13, 14];
        let first = [0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let last = [0.9, 0.8, -1.0, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1];
        let settings = Settings { soft_samples: 0, ..Settings::default() };
        let erased = erase_on(&model, &[input(0, &ids, &first, 0), input(1, &ids, &last, 0)], &settings, 4);
        let [top, bottom] = [&erased[0], &erased[1]];
        assert!((top.p_full - 0.9).abs() < 1e-6 && (top.p_zeroed - 0.5).abs() < 1e-6);
        // Ranked first, token 7 is in every R (k = 1, 1, 1, 2, 5 of d = 10):
        // p(ŷ|R) = 0.9 → S = 1 → NS = 0.4/0.4 = 1; p(ŷ|x∖R) = 0.5 → C = 0.4 → NC = 1.
        for r in 0..5 {
            assert_close(top.ns[r], 1.0);
            assert_close(top.nc[r], 1.0);
        }
        assert_close(top.aopc_ns, 1.0);
        assert_close(top.aopc_nc, 1.0);
        // Ranked last, it is in no R: p(ŷ|R) = 0.5 → S = S0 → NS = 0; C = 0 → NC = 0.
        for r in 0..5 {
            assert_close(bottom.ns[r], 0.0);
            assert_close(bottom.nc[r], 0.0);
        }
        assert_close(bottom.aopc_ns, 0.0);
        assert_eq!((top.soft_ns, top.soft_nc), (None, None), "no soft samples asked for");
    }

    /// Zhao & Aletras's metrics walked through by hand on one example (issue
    /// 45, item 7): a method's attribution `u` and a random one `v`, NS, NC,
    /// their AOPC, Soft-NS, Soft-NC and the diagnosticity pair, each from the
    /// paper's definitions, against what `erase` computes.
    ///
    /// Where the authors' public evaluation code (the soft-faithfulness
    /// release built on Chrysostomou & Aletras's) differs from the paper's
    /// text, PROTOCOL §3 and this code, the line says so; those choices are
    /// what `--compare` against their Table 6 does not share:
    /// - their `S(x,ŷ,0)` feeds an input of id 0 everywhere, `[CLS]` and
    ///   `[SEP]` included; ours keeps the special tokens (no difference for
    ///   this model, which gives them no weight);
    /// - their NC is clipped to [0, 1] like NS; ours is not (PROTOCOL clips NS
    ///   only), and here it reaches 7/6;
    /// - their AOPC averages seven ratios, {1, 2, 5, 10, 20, 50, 100}% of
    ///   the tokenized length (`⌈ρ·length⌉`); ours five, of the ordinary
    ///   tokens (the 100% ratio adds the same constant to `u` and `v`);
    /// - they subtract 1e-4 from `S(x,ŷ,0)` before dividing.
    #[test]
    fn zhao_metrics_walked_through_by_hand() {
        // p(class 0) = ½ + 0.25 [a] + 0.1 [b] − 0.05 [c]; [CLS]=2 and [SEP]=3 weigh nothing.
        let (a, b, c) = (5u32, 6u32, 7u32);
        let model = presence(&[(a, 0.25), (b, 0.1), (c, -0.05)]);
        let ids = [2, a, 8, b, 9, c, 10, 3];
        let special = vec![true, false, false, false, false, false, false, true];
        // u ranks a, b, 8, 10, 9, c; the random v ranks c, 9, 8, a, b, 10.
        let u_scores = [0.0, 0.9, 0.1, 0.5, 0.0, -0.4, 0.05, 0.0];
        let v_scores = [0.0, 0.2, 0.3, 0.1, 0.8, 0.9, 0.0, 0.0];
        let example = |index, scores| ErasureInput { index, ids: &ids, special: special.clone(), scores, predicted: 0 };
        let settings = Settings { soft_samples: 20_000, ..Settings::default() };
        let erased = erase_on(&model, &[example(0, &u_scores[..]), example(1, &v_scores[..])], &settings, 8);
        let (u, v) = (&erased[0], &erased[1]);

        // p(ŷ|x) = 0.8; all six ordinary tokens → [PAD]: p = 0.5, so
        // S(x,ŷ,0) = 1 − (0.8 − 0.5) = 0.7 and every value divides by 0.3.
        assert!((u.p_full - 0.8).abs() < 1e-6 && (u.p_zeroed - 0.5).abs() < 1e-6);
        // d = 6 ordinary tokens; ρ = 1, 5, 10, 20, 50% → k = ⌈ρ·6⌉ = 1, 1, 1, 2, 3.
        // u, k = 1, R = {a}: p(ŷ|R) = 0.75 → S = 0.95 → NS = 0.25/0.3 = 5/6;
        //   p(ŷ|x∖R) = 0.55 → C = 0.25 → NC = 5/6.
        // u, k = 2 and 3, R ⊇ {a, b}: p(ŷ|R) = 0.85 → S = 1 → NS = 1;
        //   p(ŷ|x∖R) = 0.45 → C = 0.35 → NC = 7/6 (the authors' code: 1).
        let (ns, nc) =
            ([5.0 / 6.0, 5.0 / 6.0, 5.0 / 6.0, 1.0, 1.0], [5.0 / 6.0, 5.0 / 6.0, 5.0 / 6.0, 7.0 / 6.0, 7.0 / 6.0]);
        for r in 0..5 {
            assert_close(u.ns[r], ns[r]);
            assert_close(u.nc[r], nc[r]);
        }
        assert_close(u.aopc_ns, 0.9);
        assert_close(u.aopc_nc, (2.5 + 7.0 / 3.0) / 5.0);
        // v: R ⊆ {c, 9, 8} never holds a or b: p(ŷ|R) = 0.45 → S = 0.65 < S0 →
        // NS clipped to 0; p(ŷ|x∖R) = 0.85 ≥ 0.8 → C = 0 → NC = 0.
        assert_close(v.aopc_ns, 0.0);
        assert_close(v.aopc_nc, 0.0);

        // Soft: u's salience min-max rescaled over the ordinary tokens,
        // q_a = 1, q_b = 0.9/1.3, q_c = 0. Soft-NS keeps token i's embedding
        // with probability q_i: a always, c never, b with 9/13, so
        // p(ŷ|x′) = 0.85 (NS 1) or 0.75 (NS 5/6): E = 9/13 + 4/13 · 5/6.
        // Soft-NC keeps with 1 − q_i: a never, c always, b with 4/13, so
        // p(ŷ|x′) = 0.55 (NC 5/6) or 0.45 (NC 7/6): E = 4/13 · 5/6 + 9/13 · 7/6.
        // One mask per example is the paper's protocol; 20,000 here average
        // to the expectation (standard error < 0.001).
        let soft_ns = 9.0 / 13.0 + 4.0 / 13.0 * 5.0 / 6.0;
        let soft_nc = 4.0 / 13.0 * 5.0 / 6.0 + 9.0 / 13.0 * 7.0 / 6.0;
        assert!((u.soft_ns.unwrap() - soft_ns).abs() < 0.005, "{:?} vs {soft_ns}", u.soft_ns);
        assert!((u.soft_nc.unwrap() - soft_nc).abs() < 0.005, "{:?} vs {soft_nc}", u.soft_nc);

        // Diagnosticity over this one pair: u beats v under every metric.
        for (f_u, f_v) in
            [(u.aopc_ns, v.aopc_ns), (u.aopc_nc, v.aopc_nc), (u.soft_ns, v.soft_ns), (u.soft_nc, v.soft_nc)]
        {
            assert_eq!(crate::metrics::erasure::diagnosticity(&[f_u], &[f_v]), Some(1.0));
        }
        // A tie is not a win: with NC clipped as in the authors' code, two
        // rationales that both hurt more than removing everything tie at 1.
        assert_eq!(crate::metrics::erasure::diagnosticity(&[Some(1.0)], &[Some(1.0)]), Some(0.0));

        // The same example under the authors' code's convention: n = 8
        // tokens, so k = ⌈ρ·8⌉ = 1, 1, 1, 2, 4; the all-[PAD] input (its
        // specials weigh nothing here) gives p = 0.5 again, less 1e-4:
        // S(x,ŷ,0) = 0.6999 and every value divides by 0.3001; NC ≤ 1.
        let authors = Settings { convention: Convention::AuthorsCode, soft_samples: 0, ..Settings::default() };
        let u = &erase_on(&model, &[example(0, &u_scores[..])], &authors, 8)[0];
        let (s0, drop) = (0.6999, 0.3001);
        let ns = [(0.95 - s0) / drop, (0.95 - s0) / drop, (0.95 - s0) / drop, 1.0, 1.0];
        let nc = [0.25 / drop, 0.25 / drop, 0.25 / drop, 1.0, 1.0];
        for r in 0..5 {
            assert_close(u.ns[r], ns[r]);
            assert_close(u.nc[r], nc[r]);
        }
        let zeroed = hard_sequences(&example(0, &u_scores[..]), 0, &authors)[1].clone();
        assert_eq!(zeroed, vec![0; 8]);
    }

    #[test]
    fn soft_ns_keeps_and_soft_nc_removes_the_salient_embedding() {
        // p(0|x) = ½ + 0.4 (token 7) + 0.05 (token 5) − 0.03 (token 6) = 0.92;
        // zeroed 0.5: S0 = 1 − 0.42 = 0.58.
        let model = presence(&[(7, 0.4), (5, 0.05), (6, -0.03)]);
        let ids = [5, 7, 6];
        // a = 0, 1, 0: Soft-NS keeps only token 7, Soft-NC keeps only 5 and 6.
        let scores = [-2.0, 3.0, -2.0];
        let settings = Settings { soft_samples: 3, ..Settings::default() };
        let e = &erase_on(&model, &[input(0, &ids, &scores, 0)], &settings, 8)[0];
        // Soft-NS: p(ŷ|x′) = 0.9 → S = 0.98 → (0.98 − 0.58) / 0.42.
        assert_close(e.soft_ns, 0.40 / 0.42);
        // Soft-NC: p(ŷ|x′) = 0.52 → C = 0.40 → 0.40 / 0.42.
        assert_close(e.soft_nc, 0.40 / 0.42);
        // The other way round would give 0.02 / 0.42 for both.
    }

    #[test]
    fn bernoulli_masks_follow_the_keep_probability() {
        let mut rng = mask_rng(1, 2, 0, SoftErasure::Sufficiency);
        let mask = bernoulli_mask(&[1.0, 0.0, 0.25], 4000, &mut rng);
        assert!(mask[..4000].iter().all(|&m| m == 1.0));
        assert!(mask[4000..8000].iter().all(|&m| m == 0.0));
        let kept = mask[8000..].iter().filter(|&&m| m == 1.0).count() as f64 / 4000.0;
        assert!((kept - 0.25).abs() < 0.03, "kept {kept}");
        // Seeded: the same (seed, example, sample, metric) gives the same mask.
        let again = bernoulli_mask(&[1.0, 0.0, 0.25], 4000, &mut mask_rng(1, 2, 0, SoftErasure::Sufficiency));
        assert_eq!(mask, again);
        let other = bernoulli_mask(&[1.0, 0.0, 0.25], 4000, &mut mask_rng(1, 2, 1, SoftErasure::Sufficiency));
        assert_ne!(mask, other);
    }

    #[test]
    fn undefined_normalisation_is_none() {
        // The special token 7 carries everything and survives zeroing: p(ŷ|0) = p(ŷ|x).
        let model = presence(&[(7, 0.4)]);
        let ids = [7, 5, 6];
        let scores = [0.0, 1.0, 2.0];
        let mut example = input(3, &ids, &scores, 0);
        example.special = vec![true, false, false];
        let erased = erase_on(&model, &[example], &Settings::default(), 4);
        let e = &erased[0];
        assert!(is_undefined(e));
        assert!(e.ns.iter().chain(&e.nc).all(Option::is_none));
        assert_eq!((e.aopc_ns, e.aopc_nc, e.soft_ns, e.soft_nc), (None, None, None, None));
        let summary = summarise(&Settings::default(), &erased, 0.0);
        assert_eq!((summary.examples, summary.undefined, summary.mean_aopc_ns), (1, 1, None));
        assert_eq!(summary.forward_passes, 12 + 2);
    }

    #[test]
    fn scores_of_another_length_are_an_error_naming_the_example() {
        let scores = [0.1];
        let model = presence(&[]);
        let err =
            erase::<Ad, _>(&model, &[input(9, &[5, 6], &scores, 0)], 0, &Settings::default(), 4, &Default::default())
                .unwrap_err();
        assert!(err.to_string().contains("example 9: 2 tokens but 1 scores"), "{err}");
    }

    #[test]
    fn a_wrong_predicted_class_is_an_error_naming_the_example() {
        let model = presence(&[(7, 0.4)]);
        let ids = [5, 7];
        let scores = [0.0, 1.0];
        let err =
            erase::<Ad, _>(&model, &[input(42, &ids, &scores, 1)], 0, &Settings::default(), 4, &Default::default())
                .unwrap_err();
        assert!(err.to_string().contains("example 42"), "{err}");
    }

    /// Examples of several lengths with uneven salience, on a tiny BiLSTM and BERT.
    fn varied() -> (Vec<Vec<u32>>, Vec<Vec<f32>>) {
        let ids: Vec<Vec<u32>> =
            (0..9).map(|i| (0..3 + i % 5).map(|t| 5 + ((i * 3 + t * 7) % 19) as u32).collect()).collect();
        let scores = ids.iter().map(|s| s.iter().map(|&id| ((id * 13 % 7) as f32 - 3.0) * 0.3).collect()).collect();
        (ids, scores)
    }

    /// The [`varied`] examples with the model's own predictions as ŷ.
    fn predicted_inputs<'a, M: Classifier<Ad>>(
        model: &M,
        ids: &'a [Vec<u32>],
        scores: &'a [Vec<f32>],
        special: impl Fn(usize, usize) -> bool,
    ) -> Vec<ErasureInput<'a>> {
        let sequences: Vec<&[u32]> = ids.iter().map(Vec::as_slice).collect();
        let predicted = grid_core::model::predict::predict::<Ad, _>(model, &sequences, 4, 0, &Default::default());
        (0..ids.len())
            .map(|i| ErasureInput {
                index: 100 + i,
                ids: &ids[i],
                special: (0..ids[i].len()).map(|t| special(t, ids[i].len())).collect(),
                scores: &scores[i],
                predicted: predicted[i],
            })
            .collect()
    }

    fn check_batching_invariance<M: Classifier<Ad>>(model: &M, special: impl Fn(usize, usize) -> bool) {
        let (ids, scores) = varied();
        let examples = predicted_inputs(model, &ids, &scores, special);
        let settings = Settings { soft_samples: 2, seed: 5, ..Settings::default() };
        let one = erase_on(model, &examples, &settings, 1);
        let seven = erase_on(model, &examples, &settings, 7);
        // Example by example, alone: nothing depends on the other examples either.
        let alone: Vec<ErasedExample> =
            examples.iter().flat_map(|e| erase_on(model, std::slice::from_ref(e), &settings, 3)).collect();
        for ((a, b), c) in one.iter().zip(&seven).zip(&alone) {
            for other in [b, c] {
                assert_eq!((a.index, a.predicted), (other.index, other.predicted));
                let values = |e: &ErasedExample| {
                    let mut v = vec![Some(e.p_full), Some(e.p_zeroed), e.soft_ns, e.soft_nc];
                    v.extend(e.ns.iter().chain(&e.nc));
                    v
                };
                for (x, y) in values(a).into_iter().zip(values(other)) {
                    let (x, y) = (x.unwrap_or(-1.0), y.unwrap_or(-1.0));
                    assert!((x - y).abs() < 1e-5, "example {}: {x} vs {y}", a.index);
                }
            }
            assert!(a.ns.iter().flatten().chain(a.soft_ns.iter()).all(|v| (0.0..=1.0).contains(v)));
        }
    }

    #[test]
    fn batching_does_not_change_results() {
        check_batching_invariance(&PresenceModel::new(), |_, _| false);
        check_batching_invariance(&bilstm(3), |_, _| false);
        check_batching_invariance(&bert(4, 1), |t, len| t == 0 || t + 1 == len);
    }

    #[test]
    fn exact_batching_invariance_on_the_presence_model() {
        let model = PresenceModel::new();
        let (ids, scores) = varied();
        let examples = predicted_inputs(&model, &ids, &scores, |_, _| false);
        let settings = Settings { soft_samples: 3, ..Settings::default() };
        assert_eq!(erase_on(&model, &examples, &settings, 1), erase_on(&model, &examples, &settings, 7));
    }
}
