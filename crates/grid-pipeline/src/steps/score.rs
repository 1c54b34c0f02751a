//! `score`: one metric over the examples of one cell: from the attributions
//! (precision, rank, Attr%), from the erasure step (NS, NC, Soft-NS, Soft-NC),
//! or from the erasure steps of the method and of `random` (diagnosticity).

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, ensure};
use serde::{Deserialize, Serialize};

use super::attribute::{AttributedExample, FILE};
use super::erasure::{ErasedExample, ErasureSummary, FILE as ERASURE_FILE, SUMMARY as ERASURE_SUMMARY};
use crate::io::{read_json, read_jsonl, write_json};
use grid_methods::metrics::bootstrap::Bootstrap;
use grid_methods::metrics::rationale::{self, Counts, Optimal};
use grid_methods::metrics::{
    ErasureMetric, Metric, RationaleMetric, WordAggregation, attribution_share, ranking, words,
};

pub const SCORE_FILE: &str = "score.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub metric: Metric,
    /// Mean over examples; NaN (written `null`) where no example defines
    /// the metric (a rationale that selects nothing has no precision).
    #[serde(deserialize_with = "grid_report::nan_when_null")]
    pub mean: f64,
    /// Percentile-bootstrap 95% interval of the mean over examples.
    #[serde(default)]
    pub interval: Option<[f64; 2]>,
    pub examples: usize,
    /// Per example, in the attribution's order.
    pub values: Vec<f64>,
    /// NS / NC: `[ratio, mean]` at each rationale ratio the AOPC averages.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_ratio: Vec<[f64; 2]>,
    /// Attr%: the region's mean share of the ranked tokens (words), the value
    /// a method that spreads salience evenly would get (Zhou et al. print it
    /// beside Attr% as the word frequency).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region_share: Option<f64>,
    /// A rationale metric's dataset-wide value and the best any selection
    /// reaches at the rationale's realised rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<RationaleScore>,
}

/// [`Score::rationale`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RationaleScore {
    /// The ratio of sums over the examples (Zhou et al.'s dataset-wide value).
    pub pooled: Option<f64>,
    /// The realised selection rate, pooled.
    pub rate: Option<f64>,
    /// The optimal precision and recall at that rate.
    pub optimal: Option<Optimal>,
    /// The optimal values over rates up to max(0.2, 1.5 × the realised
    /// rate), for the figures' curves.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub optimal_curve: Vec<(f64, Optimal)>,
}

/// A rationale metric over the attributed examples of a `rationale` cell.
pub fn evaluate_rationale(metric: RationaleMetric, examples: &[AttributedExample]) -> Score {
    let counts: Vec<Counts> = examples
        .iter()
        .map(|e| {
            Counts::of(
                &e.scores,
                |i| e.word_of_token.get(i).is_some_and(Option::is_some),
                &e.ground_truth,
                &e.distractors,
            )
        })
        .collect();
    let mut score = summarise(Metric::Rationale(metric), counts.iter().filter_map(|c| metric.value(c)).collect());
    let rate = RationaleMetric::Rate.pooled(&counts);
    score.rationale = Some(RationaleScore {
        pooled: metric.pooled(&counts),
        rate,
        optimal: rate.and_then(|r| rationale::optimal(&counts, r)),
        optimal_curve: rationale::optimal_curve(&counts, rate.map_or(0.2, |r| (1.5 * r).max(0.2)), 60),
    });
    score
}

/// A ranking metric or Attr% over attributed examples.
pub fn evaluate(metric: Metric, examples: &[AttributedExample], aggregation: Option<WordAggregation>) -> Score {
    let mut shares = Vec::new();
    let values: Vec<f64> = examples
        .iter()
        .filter_map(|e| {
            let region = match metric {
                Metric::AttrNonCorrelating => &e.distractors,
                Metric::Precision
                | Metric::Rank
                | Metric::AttrShare
                | Metric::Erasure(_)
                | Metric::Diagnosticity(_)
                | Metric::Rationale(_) => &e.ground_truth,
            };
            // Token level: special tokens are not ranked. Word level: every word is.
            let (scores, region, ranked): (Cow<[f32]>, Cow<[usize]>, Vec<bool>) = match aggregation {
                None => (
                    Cow::Borrowed(&e.scores),
                    Cow::Borrowed(region),
                    e.word_of_token
                        .iter()
                        .map(Option::is_some)
                        .chain(std::iter::repeat(false))
                        .take(e.scores.len())
                        .collect(),
                ),
                Some(how) => {
                    let w = words::aggregate(&e.scores, &e.word_of_token, region, how);
                    let n = w.scores.len();
                    (Cow::Owned(w.scores), Cow::Owned(w.ground_truth), vec![true; n])
                }
            };
            let rankable = |i: usize| ranked[i];
            match metric {
                Metric::AttrShare | Metric::AttrNonCorrelating => {
                    let value = attribution_share(&scores, rankable, &region)?;
                    let tokens = ranked.iter().filter(|&&r| r).count().max(1);
                    shares.push(region.len() as f64 / tokens as f64);
                    Some(value)
                }
                Metric::Precision
                | Metric::Rank
                | Metric::Erasure(_)
                | Metric::Diagnosticity(_)
                | Metric::Rationale(_) => metric.evaluate(&ranking(&scores, rankable), &region),
            }
        })
        .collect();
    let mut score = summarise(metric, values);
    score.region_share = (!shares.is_empty()).then(|| shares.iter().sum::<f64>() / shares.len() as f64);
    score
}

fn summarise(metric: Metric, values: Vec<f64>) -> Score {
    let mean = if values.is_empty() { f64::NAN } else { values.iter().sum::<f64>() / values.len() as f64 };
    let interval = Bootstrap::default().interval(&values);
    Score {
        metric,
        mean,
        interval,
        examples: values.len(),
        values,
        by_ratio: Vec::new(),
        region_share: None,
        rationale: None,
    }
}

/// The example's value of an erasure metric (`None` where undefined).
fn erasure_value(metric: ErasureMetric, e: &ErasedExample) -> Option<f64> {
    match metric {
        ErasureMetric::Ns => e.aopc_ns,
        ErasureMetric::Nc => e.aopc_nc,
        ErasureMetric::SoftNs => e.soft_ns,
        ErasureMetric::SoftNc => e.soft_nc,
    }
}

/// An erasure metric over the examples where it is defined; NS and NC also at
/// each of `ratios` (the erasure settings' order).
pub fn evaluate_erasure(metric: ErasureMetric, examples: &[ErasedExample], ratios: &[f64]) -> Score {
    let mut score =
        summarise(Metric::Erasure(metric), examples.iter().filter_map(|e| erasure_value(metric, e)).collect());
    score.by_ratio = by_ratio(ratios, |r| examples.iter().filter_map(|e| value_at_ratio(metric, e, r)).collect());
    score
}

/// An example's NS or NC at the `r`-th rationale ratio (the soft metrics
/// have no value per ratio).
fn value_at_ratio(metric: ErasureMetric, e: &ErasedExample, r: usize) -> Option<f64> {
    match metric {
        ErasureMetric::Ns => e.ns.get(r).copied().flatten(),
        ErasureMetric::Nc => e.nc.get(r).copied().flatten(),
        ErasureMetric::SoftNs | ErasureMetric::SoftNc => None,
    }
}

/// `[ratio, mean]` at each of `ratios` of the values `values(r)` gives for
/// the `r`-th, where it gives any.
fn by_ratio(ratios: &[f64], values: impl Fn(usize) -> Vec<f64>) -> Vec<[f64; 2]> {
    ratios
        .iter()
        .enumerate()
        .filter_map(|(r, &ratio)| {
            let values = values(r);
            (!values.is_empty()).then(|| [ratio, values.iter().sum::<f64>() / values.len() as f64])
        })
        .collect()
}

/// Diagnosticity (Zhao & Aletras 2023 §4.5) as a mean of per-example
/// indicators `1[F(u) > F(v)]`, u the method's value and v the random
/// attribution's on the same example (joined by index); examples where either
/// is undefined are left out. The mean is `metrics::erasure::diagnosticity`.
/// For NS and NC also at each of `ratios` (their Figure 3), from the values
/// at that rationale length instead of the AOPC.
pub fn evaluate_diagnosticity(
    metric: ErasureMetric,
    method: &[ErasedExample],
    random: &[ErasedExample],
    ratios: &[f64],
) -> Score {
    let random: HashMap<usize, &ErasedExample> = random.iter().map(|e| (e.index, e)).collect();
    let beats = |value: &dyn Fn(&ErasedExample) -> Option<f64>| -> Vec<f64> {
        method
            .iter()
            .filter_map(|u| {
                let v = random.get(&u.index)?;
                let (u, v) = (value(u)?, value(v)?);
                Some(if u > v { 1.0 } else { 0.0 })
            })
            .collect()
    };
    let mut score = summarise(Metric::Diagnosticity(metric), beats(&|e| erasure_value(metric, e)));
    score.by_ratio = by_ratio(ratios, |r| beats(&|e| value_at_ratio(metric, e, r)));
    score
}

pub fn run(metric: Metric, aggregation: Option<WordAggregation>, inputs: &[PathBuf], out: &Path) -> Result<()> {
    let erased = |i: usize| -> Result<Vec<ErasedExample>> {
        let dir = inputs.get(i).context("the score step lacks an erasure input")?;
        read_jsonl(&dir.join(ERASURE_FILE))
    };
    let score = match metric {
        Metric::Precision | Metric::Rank | Metric::AttrShare | Metric::AttrNonCorrelating => {
            let dir = inputs.first().context("the score step lacks its attribution input")?;
            let examples: Vec<AttributedExample> = read_jsonl(&dir.join(FILE))?;
            evaluate(metric, &examples, aggregation)
        }
        Metric::Erasure(m) => {
            let dir = inputs.first().context("the score step lacks its erasure input")?;
            let summary: ErasureSummary = read_json(&dir.join(ERASURE_SUMMARY))?;
            evaluate_erasure(m, &erased(0)?, &summary.ratios)
        }
        Metric::Rationale(m) => {
            let dir = inputs.first().context("the score step lacks its attribution input")?;
            evaluate_rationale(m, &read_jsonl(&dir.join(FILE))?)
        }
        Metric::Diagnosticity(m) => {
            ensure!(inputs.len() == 2, "diagnosticity needs the method's and the random attribution's erasure");
            let dir = inputs.first().context("the score step lacks its erasure input")?;
            let summary: ErasureSummary = read_json(&dir.join(ERASURE_SUMMARY))?;
            evaluate_diagnosticity(m, &erased(0)?, &erased(1)?, &summary.ratios)
        }
    };
    write_json(&out.join(SCORE_FILE), &score)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(scores: Vec<f32>, truth: Vec<usize>, specials: &[usize]) -> AttributedExample {
        AttributedExample {
            index: 0,
            tokens: vec![],
            word_of_token: (0..scores.len()).map(|i| (!specials.contains(&i)).then_some(i)).collect(),
            ground_truth: truth,
            distractors: vec![],
            label: 0,
            predicted: 0,
            scores,
            completeness_gap: None,
        }
    }

    #[test]
    fn means_over_examples_and_skips_specials() {
        let examples = vec![
            example(vec![0.1, 0.9, 0.3], vec![1], &[]),  // precision 1, rank 1
            example(vec![0.9, 0.1, 0.3], vec![1], &[]),  // precision 0, rank 3
            example(vec![5.0, 0.2, 0.1], vec![1], &[0]), // special at 0 skipped: precision 1, rank 1
        ];
        let p = evaluate(Metric::Precision, &examples, None);
        assert_eq!(p.values, vec![1.0, 0.0, 1.0]);
        assert!((p.mean - 2.0 / 3.0).abs() < 1e-12);
        let [lo, hi] = p.interval.unwrap();
        assert!(0.0 <= lo && lo <= p.mean && p.mean <= hi && hi <= 1.0, "{:?}", p.interval);
        let r = evaluate(Metric::Rank, &examples, None);
        assert_eq!(r.values, vec![1.0, 3.0, 1.0]);
        assert!((r.mean - 5.0 / 3.0).abs() < 1e-12);
        // |s| on G over all rankable |s|: 0.9/1.3, 0.1/1.3, 0.2/0.3.
        let a = evaluate(Metric::AttrShare, &examples, None);
        let want = [0.9 / 1.3, 0.1 / 1.3, 0.2 / 0.3];
        assert!(a.values.iter().zip(want).all(|(v, w)| (v - w).abs() < 1e-6), "{:?}", a.values);
    }

    #[test]
    fn attr_on_correlating_and_non_correlating_articles_with_their_shares() {
        let mut a = example(vec![0.1, 0.6, -0.2, 0.1], vec![1], &[]);
        a.distractors = vec![2];
        // [CLS] at 0 is not ranked: 3 tokens, |s| sums to 0.9.
        let mut b = example(vec![5.0, 0.6, 0.2, 0.1], vec![1], &[0]);
        b.distractors = vec![2];
        let examples = [a, b];
        let corr = evaluate(Metric::AttrShare, &examples, None);
        assert!((corr.values[0] - 0.6).abs() < 1e-6 && (corr.values[1] - 0.6 / 0.9).abs() < 1e-6, "{:?}", corr.values);
        assert!((corr.region_share.unwrap() - (1.0 / 4.0 + 1.0 / 3.0) / 2.0).abs() < 1e-12);
        let non = evaluate(Metric::AttrNonCorrelating, &examples, None);
        assert!((non.values[0] - 0.2).abs() < 1e-6 && (non.values[1] - 0.2 / 0.9).abs() < 1e-6, "{:?}", non.values);
        // Ranking metrics keep no share; an example without distractors has no value.
        assert_eq!(evaluate(Metric::Precision, &examples, None).region_share, None);
        let plain = [example(vec![0.1, 0.6], vec![1], &[])];
        assert_eq!(evaluate(Metric::AttrNonCorrelating, &plain, None).examples, 0);
    }

    fn erased(index: usize, aopc_ns: Option<f64>, soft_nc: Option<f64>) -> ErasedExample {
        ErasedExample {
            index,
            predicted: 1,
            p_full: 0.9,
            p_zeroed: 0.5,
            ns: vec![aopc_ns],
            nc: vec![None],
            aopc_ns,
            aopc_nc: None,
            soft_ns: None,
            soft_nc,
        }
    }

    /// A metric no example defines is NaN, written `null`, and reads back.
    #[test]
    fn a_score_without_examples_round_trips() {
        let empty = summarise(Metric::Rationale(RationaleMetric::Precision), Vec::new());
        let text = serde_json::to_string(&empty).unwrap();
        assert!(text.contains("\"mean\":null"), "{text}");
        let back: Score = serde_json::from_str(&text).unwrap();
        assert!(back.mean.is_nan() && back.examples == 0);
    }

    #[test]
    fn erasure_means_skip_undefined_examples() {
        let examples = [erased(0, Some(0.2), Some(1.0)), erased(1, None, Some(0.5)), erased(2, Some(0.6), None)];
        let ns = evaluate_erasure(ErasureMetric::Ns, &examples, &[0.1]);
        assert_eq!(ns.values, vec![0.2, 0.6]);
        assert!((ns.mean - 0.4).abs() < 1e-12);
        // One ratio: NS at 10% is the same mean.
        assert_eq!(ns.by_ratio.len(), 1);
        assert!((ns.by_ratio[0][1] - 0.4).abs() < 1e-12 && ns.by_ratio[0][0] == 0.1);
        let soft = evaluate_erasure(ErasureMetric::SoftNc, &examples, &[0.1]);
        assert_eq!(soft.values, vec![1.0, 0.5]);
        assert!(soft.by_ratio.is_empty());
    }

    #[test]
    fn diagnosticity_counts_strict_wins_joined_by_index() {
        let method =
            [erased(0, Some(0.5), None), erased(1, Some(0.3), None), erased(2, Some(0.4), None), erased(3, None, None)];
        // Random in another order; example 2 ties (not a win), 3 is undefined.
        let random = [
            erased(2, Some(0.4), None),
            erased(1, Some(0.6), None),
            erased(0, Some(0.1), None),
            erased(3, Some(0.0), None),
        ];
        let d = evaluate_diagnosticity(ErasureMetric::Ns, &method, &random, &[0.2]);
        assert_eq!(d.values, vec![1.0, 0.0, 0.0]);
        assert!((d.mean - 1.0 / 3.0).abs() < 1e-12);
        // The one ratio holds the same values as the AOPC here: 1 win in 3.
        assert_eq!(d.by_ratio.len(), 1);
        assert!(d.by_ratio[0][0] == 0.2 && (d.by_ratio[0][1] - 1.0 / 3.0).abs() < 1e-12);
        assert!(evaluate_diagnosticity(ErasureMetric::SoftNc, &method, &random, &[0.2]).by_ratio.is_empty());
        let u: Vec<Option<f64>> = vec![Some(0.5), Some(0.3), Some(0.4), None];
        let v: Vec<Option<f64>> = vec![Some(0.1), Some(0.6), Some(0.4), Some(0.0)];
        assert_eq!(grid_methods::metrics::erasure::diagnosticity(&u, &v), Some(d.mean));
    }
}
