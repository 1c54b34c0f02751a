//! Zhou et al.'s metrics for rationales (2022, §3 and §7): a rationale model
//! classifies from a set of words F it selects, so its explanation is judged
//! as a set against the words that decide the label, the correlating
//! articles `F_C`: precision `|F ∩ F_C| / |F|` and recall `|F ∩ F_C| / |F_C|`.
//! On CN / NC data also how many non-correlating articles `F_N` it selects
//! (`|F ∩ F_N| / |F_N|`: misleading, since the predictor ignores them), and
//! the selection rate `|F| / len` the model was trained towards.
//!
//! A token is selected where the `rationale` method's score is above 0.
//! Each metric has a value per example (what the cell's mean and interval
//! are over) and a dataset-wide value, the ratio of sums over the examples
//! (what Zhou et al. plot, beside the best any selection reaches at the
//! same rate: [`optimal`]).

use serde::{Deserialize, Serialize};

/// A rationale metric (`sel-precision`, `sel-recall`, `sel-noncorr`, `sel-rate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RationaleMetric {
    /// `|F ∩ F_C| / |F|`.
    Precision,
    /// `|F ∩ F_C| / |F_C|`.
    Recall,
    /// `|F ∩ F_N| / |F_N|`: the non-correlating articles selected.
    NonCorrelating,
    /// `|F| / len`: the realised selection rate `%Sel`.
    Rate,
}

impl RationaleMetric {
    pub const ALL: [RationaleMetric; 4] =
        [RationaleMetric::Precision, RationaleMetric::Recall, RationaleMetric::NonCorrelating, RationaleMetric::Rate];

    pub fn name(self) -> &'static str {
        match self {
            RationaleMetric::Precision => "sel-precision",
            RationaleMetric::Recall => "sel-recall",
            RationaleMetric::NonCorrelating => "sel-noncorr",
            RationaleMetric::Rate => "sel-rate",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            RationaleMetric::Precision => {
                "rationale precision |F ∩ F_C| / |F|, the selected words that are correlating articles"
            }
            RationaleMetric::Recall => "rationale recall |F ∩ F_C| / |F_C|, the correlating articles selected",
            RationaleMetric::NonCorrelating => {
                "non-correlating articles selected |F ∩ F_N| / |F_N| (lower is better: the predictor ignores them)"
            }
            RationaleMetric::Rate => "realised selection rate |F| / len (%Sel)",
        }
    }

    /// `(numerator, denominator)` of one example's value.
    fn parts(self, c: &Counts) -> (f64, f64) {
        let f = |n: usize| n as f64;
        match self {
            RationaleMetric::Precision => (f(c.correct), f(c.selected)),
            RationaleMetric::Recall => (f(c.correct), f(c.correlating)),
            RationaleMetric::NonCorrelating => (f(c.misleading), f(c.non_correlating)),
            RationaleMetric::Rate => (f(c.selected), f(c.length)),
        }
    }

    /// One example's value; `None` where its denominator is 0 (nothing
    /// selected, no article of that kind).
    pub fn value(self, c: &Counts) -> Option<f64> {
        let (top, bottom) = self.parts(c);
        (bottom > 0.0).then(|| top / bottom)
    }

    /// The dataset-wide value: the ratio of the sums.
    pub fn pooled(self, examples: &[Counts]) -> Option<f64> {
        let (top, bottom) =
            examples.iter().map(|c| self.parts(c)).fold((0.0, 0.0), |(t, b), (top, bottom)| (t + top, b + bottom));
        (bottom > 0.0).then(|| top / bottom)
    }
}

/// One example's rationale, counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Words it has (what the rate divides by).
    pub length: usize,
    pub selected: usize,
    /// Correlating articles, and how many of them are selected.
    pub correlating: usize,
    pub correct: usize,
    /// Non-correlating articles, and how many of them are selected.
    pub non_correlating: usize,
    pub misleading: usize,
}

impl Counts {
    /// From a rationale's scores (selected where above 0) over the tokens
    /// `rankable` admits, and the article positions.
    pub fn of(
        scores: &[f32],
        rankable: impl Fn(usize) -> bool,
        correlating: &[usize],
        non_correlating: &[usize],
    ) -> Self {
        let mut c = Counts::default();
        for (i, &s) in scores.iter().enumerate().filter(|&(i, _)| rankable(i)) {
            let chosen = s > 0.0;
            c.length += 1;
            c.selected += chosen as usize;
            if correlating.contains(&i) {
                c.correlating += 1;
                c.correct += chosen as usize;
            }
            if non_correlating.contains(&i) {
                c.non_correlating += 1;
                c.misleading += chosen as usize;
            }
        }
        c
    }
}

/// The best precision and recall any selection of a given rate reaches
/// (Zhou et al.'s green lines), for the rate enforced over the whole test
/// set and for it enforced in every review.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Optimal {
    /// `(precision, recall)` when `rate · Σ len` words are selected anywhere:
    /// the articles first, so `min(Σ|F_C|, rate · Σ len)` of them are hits.
    pub dataset: (f64, f64),
    /// `(precision, recall)` when each review selects `rate · len` of its
    /// own words, its articles first (pooled as above).
    pub per_review: (f64, f64),
}

/// [`Optimal`] at selection rate `rate` over `examples`; `None` when they
/// have no words or no correlating article.
pub fn optimal(examples: &[Counts], rate: f64) -> Option<Optimal> {
    let words: f64 = examples.iter().map(|c| c.length as f64).sum();
    let articles: f64 = examples.iter().map(|c| c.correlating as f64).sum();
    if words == 0.0 || articles == 0.0 || rate <= 0.0 {
        return None;
    }
    let selected = rate * words;
    let dataset_hits = articles.min(selected);
    let per_review_hits: f64 = examples.iter().map(|c| (c.correlating as f64).min(rate * c.length as f64)).sum();
    Some(Optimal {
        dataset: (dataset_hits / selected, dataset_hits / articles),
        per_review: (per_review_hits / selected, per_review_hits / articles),
    })
}

/// [`optimal`] at `points` rates evenly spaced over `(0, max_rate]`: the
/// green lines of Zhou et al.'s figures, drawn as curves.
pub fn optimal_curve(examples: &[Counts], max_rate: f64, points: usize) -> Vec<(f64, Optimal)> {
    (1..=points)
        .filter_map(|i| {
            let rate = max_rate * i as f64 / points as f64;
            optimal(examples, rate).map(|o| (rate, o))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two reviews by hand. Review 1: 10 words, articles at 2 and 7 (both
    /// correlating), selected {2, 5}. Review 2: 5 words, correlating article
    /// 0, non-correlating 3, selected {0, 3, 4}.
    fn two() -> [Counts; 2] {
        let first = Counts::of(&[0., 0., 1., 0., 0., 1., 0., 0., 0., 0.], |_| true, &[2, 7], &[]);
        let second = Counts::of(&[0.7, 0., 0., 0.2, 0.1], |_| true, &[0], &[3]);
        [first, second]
    }

    #[test]
    fn counts_and_values_by_hand() {
        let [first, second] = two();
        assert_eq!(
            first,
            Counts { length: 10, selected: 2, correlating: 2, correct: 1, non_correlating: 0, misleading: 0 }
        );
        assert_eq!(
            second,
            Counts { length: 5, selected: 3, correlating: 1, correct: 1, non_correlating: 1, misleading: 1 }
        );
        let value = |m: RationaleMetric, c: &Counts| m.value(c);
        assert_eq!(value(RationaleMetric::Precision, &first), Some(0.5));
        assert_eq!(value(RationaleMetric::Recall, &first), Some(0.5));
        assert_eq!(value(RationaleMetric::Rate, &first), Some(0.2));
        assert_eq!(value(RationaleMetric::NonCorrelating, &first), None, "no non-correlating article");
        assert_eq!(value(RationaleMetric::Precision, &second), Some(1.0 / 3.0));
        assert_eq!(value(RationaleMetric::NonCorrelating, &second), Some(1.0));
        // Pooled: precision (1 + 1) / (2 + 3), recall 2 / 3, rate 5 / 15.
        let both = two();
        assert_eq!(RationaleMetric::Precision.pooled(&both), Some(0.4));
        assert_eq!(RationaleMetric::Recall.pooled(&both), Some(2.0 / 3.0));
        assert_eq!(RationaleMetric::Rate.pooled(&both), Some(1.0 / 3.0));
        assert_eq!(RationaleMetric::NonCorrelating.pooled(&both), Some(1.0));
        // Special tokens are not words.
        let special = Counts::of(&[1.0, 0.0, 1.0], |i| i != 0, &[2], &[]);
        assert_eq!((special.length, special.selected, special.correct), (2, 1, 1));
    }

    /// At rate 0.1 the 15 words allow 1.5 selections: the dataset optimum
    /// spends them on the 3 articles (precision 1, recall 0.5); per review,
    /// review 1 may select 1 word (1 article), review 2 0.5 (0.5 article).
    /// At rate 0.4 (6 words) all 3 articles fit: precision 0.5, recall 1;
    /// per review 2 of review 1's 4 and 1 of review 2's 2 selections.
    #[test]
    fn the_optimal_lines_by_hand() {
        let both = two();
        let low = optimal(&both, 0.1).unwrap();
        let close = |a: (f64, f64), b: (f64, f64)| (a.0 - b.0).abs() < 1e-12 && (a.1 - b.1).abs() < 1e-12;
        assert!(close(low.dataset, (1.0, 0.5)), "{low:?}");
        assert!(close(low.per_review, (1.0, 0.5)), "{low:?}");
        let high = optimal(&both, 0.4).unwrap();
        assert!(close(high.dataset, (0.5, 1.0)), "{high:?}");
        assert!(close(high.per_review, (0.5, 1.0)), "{high:?}");
        // Where reviews differ the per-review optimum is lower: at 0.2 the
        // dataset may select 3 words, all articles; per review, review 1
        // selects 2 (both articles), review 2 one (its article): the same 3.
        // At 0.15: 2.25 words; review 1 takes 1.5 articles, review 2 0.75.
        let mid = optimal(&both, 0.15).unwrap();
        assert!(close(mid.dataset, (1.0, 0.75)), "{mid:?}");
        assert!(close(mid.per_review, (1.0, 0.75)), "{mid:?}");
        let skewed = [
            Counts { length: 10, correlating: 0, ..Counts::default() },
            Counts { length: 10, correlating: 4, ..Counts::default() },
        ];
        let at = optimal(&skewed, 0.2).unwrap();
        // Dataset: 4 selections, 4 articles. Per review: 2 from the second review's articles.
        assert!(close(at.dataset, (1.0, 1.0)) && close(at.per_review, (0.5, 0.5)), "{at:?}");
        assert_eq!(optimal(&[Counts::default()], 0.1), None);
        let curve = optimal_curve(&both, 0.4, 4);
        let rates: Vec<f64> = curve.iter().map(|(r, _)| *r).collect();
        assert_eq!(rates, [0.1, 0.2, 0.30000000000000004, 0.4]);
        assert_eq!(curve[0].1, low);
        assert_eq!(curve[3].1, high);
    }
}
