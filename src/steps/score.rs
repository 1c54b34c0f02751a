//! `score`: one metric over the attributed examples of one cell.

use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::attribute::{AttributedExample, FILE};
use super::io::{read_jsonl, write_json};
use crate::metrics::bootstrap::Bootstrap;
use crate::metrics::{Metric, WordAggregation, ranking, words};

pub const SCORE_FILE: &str = "score.json";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Score {
    pub metric: Metric,
    /// Mean over examples.
    pub mean: f64,
    /// Percentile-bootstrap 95% interval of the mean over examples.
    #[serde(default)]
    pub interval: Option<[f64; 2]>,
    pub examples: usize,
    /// Per example, in the attribution's order.
    pub values: Vec<f64>,
}

pub fn evaluate(metric: Metric, examples: &[AttributedExample], aggregation: Option<WordAggregation>) -> Score {
    let values: Vec<f64> = examples
        .iter()
        .filter_map(|e| match aggregation {
            None => {
                let order = ranking(&e.scores, |i| e.word_of_token.get(i).is_some_and(Option::is_some));
                metric.evaluate(&order, &e.ground_truth)
            }
            Some(how) => {
                let w = words::aggregate(&e.scores, &e.word_of_token, &e.ground_truth, how);
                metric.evaluate(&ranking(&w.scores, |_| true), &w.ground_truth)
            }
        })
        .collect();
    let mean = if values.is_empty() { f64::NAN } else { values.iter().sum::<f64>() / values.len() as f64 };
    let interval = Bootstrap::default().interval(&values);
    Score { metric, mean, interval, examples: values.len(), values }
}

pub fn run(metric: Metric, aggregation: Option<WordAggregation>, attribution_dir: &Path, out: &Path) -> Result<()> {
    let examples: Vec<AttributedExample> = read_jsonl(&attribution_dir.join(FILE))?;
    write_json(&out.join(SCORE_FILE), &evaluate(metric, &examples, aggregation))
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
    }
}
