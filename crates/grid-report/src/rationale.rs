//! Zhou et al. 2022 §7: rationale models against the article manipulations.
//! The paper gives figures (10, 11); this is their numbers as a table, one
//! row per rationale model (a selector at a target `%Sel`) on each dataset
//! and manipulation, seeds averaged:
//!
//! | stem | rows × columns |
//! |---|---|
//! | `zhou_rationale` | (model, dataset, manipulation) × accuracy, realised `%Sel` (dataset-wide and per review), precision, recall, the optimal precision and recall at the realised rate (rate enforced over the test set / per review), non-correlating articles selected |
//!
//! Precision, recall and non-correlating selections are dataset-wide (ratios
//! of sums over the attributed examples), as the optimal lines are.

use polars::prelude::*;

use super::paper::{align, failed_notes, mean, string_frame};
use super::tables::{FAILED_MARK, first_appearance, format_fixed};
use super::{CellResult, DisplayTable, RationaleResult, VerificationRow};
use grid_methods::metrics::{Metric, RationaleMetric};
use grid_methods::shortcut::Regime;

/// One rationale model's row: what Zhou et al. plot of it.
#[derive(Debug, Clone, PartialEq)]
pub struct RationaleRow {
    pub model: String,
    /// `RL` or `CR`.
    pub selector: &'static str,
    pub target_rate: f64,
    pub dataset: String,
    pub shortcut: Regime,
    pub seeds: usize,
    /// The shortcut model's accuracy on the manipulated test set.
    pub accuracy: Option<f64>,
    pub rate: Option<f64>,
    pub per_review_rate: Option<f64>,
    pub precision: Option<f64>,
    pub recall: Option<f64>,
    pub non_correlating: Option<f64>,
    /// `(precision, recall)` at the realised rate, enforced over the test
    /// set and per review.
    pub optimal_dataset: Option<(f64, f64)>,
    pub optimal_per_review: Option<(f64, f64)>,
    /// Every seed's model passed verification.
    pub verified: bool,
}

/// The rows of every model with rationale cells, in first-appearance order.
pub fn rows(cells: &[CellResult], verification: &[VerificationRow]) -> Vec<RationaleRow> {
    let rationale: Vec<(&CellResult, &RationaleResult, RationaleMetric)> = cells
        .iter()
        .filter_map(|c| match (c.metric, &c.rationale) {
            (Metric::Rationale(m), Some(r)) => Some((c, r, m)),
            _ => None,
        })
        .collect();
    let groups = first_appearance(rationale.iter().map(|(c, r, _)| {
        (
            c.key.model.clone(),
            c.key.dataset.clone(),
            c.key.shortcut,
            r.setting.selector,
            r.setting.selection_rate.to_bits(),
        )
    }));
    groups
        .into_iter()
        .map(|(model, dataset, shortcut, selector, target)| {
            let of = |metric: RationaleMetric| -> Vec<(&CellResult, &RationaleResult)> {
                rationale
                    .iter()
                    .filter(|(c, _, m)| {
                        *m == metric && c.key.model == model && c.key.dataset == dataset && c.key.shortcut == shortcut
                    })
                    .map(|(c, r, _)| (*c, *r))
                    .collect()
            };
            let pooled = |metric: RationaleMetric| mean(of(metric).iter().filter_map(|(_, r)| r.pooled));
            let rates = of(RationaleMetric::Rate);
            let optimal = of(RationaleMetric::Precision)
                .into_iter()
                .chain(of(RationaleMetric::Recall))
                .find_map(|(_, r)| r.optimal);
            let seeds: Vec<u64> = {
                let mut s: Vec<u64> = rationale
                    .iter()
                    .filter(|(c, _, _)| c.key.model == model && c.key.dataset == dataset && c.key.shortcut == shortcut)
                    .map(|(c, _, _)| c.key.seed)
                    .collect();
                s.sort_unstable();
                s.dedup();
                s
            };
            let verified_rows: Vec<&VerificationRow> = verification
                .iter()
                .filter(|v| v.key.model == model && v.key.dataset == dataset && v.key.shortcut == shortcut)
                .collect();
            RationaleRow {
                model: model.clone(),
                selector: selector.label(),
                target_rate: f64::from_bits(target),
                dataset: dataset.clone(),
                shortcut,
                seeds: seeds.len(),
                accuracy: mean(verified_rows.iter().map(|v| v.verification.shortcut_model_on_synthetic)),
                rate: pooled(RationaleMetric::Rate),
                per_review_rate: mean(rates.iter().map(|(c, _)| c.value).filter(|v| v.is_finite())),
                precision: pooled(RationaleMetric::Precision),
                recall: pooled(RationaleMetric::Recall),
                non_correlating: pooled(RationaleMetric::NonCorrelating),
                // The optimum of one seed's realised rate; seeds differ in it
                // by their rate only, so the first stands for the row.
                optimal_dataset: optimal.map(|o| o.dataset),
                optimal_per_review: optimal.map(|o| o.per_review),
                verified: rationale
                    .iter()
                    .filter(|(c, _, _)| c.key.model == model && c.key.dataset == dataset && c.key.shortcut == shortcut)
                    .all(|(c, _, _)| c.verified),
            }
        })
        .collect()
}

/// `zhou_rationale`, when the grid has rationale cells.
pub fn table(cells: &[CellResult], verification: &[VerificationRow]) -> PolarsResult<Option<DisplayTable>> {
    let rows = rows(cells, verification);
    if rows.is_empty() {
        return Ok(None);
    }
    let number = |v: Option<f64>| v.map(|v| format_fixed(v, 3));
    let pair = |v: Option<(f64, f64)>, pick: fn((f64, f64)) -> f64| v.map(|p| format_fixed(pick(p), 3));
    let table: Vec<Vec<Option<String>>> = rows
        .iter()
        .map(|r| {
            let mark = |v: Option<String>| v.map(|v| if r.verified { v } else { format!("{v}{FAILED_MARK}") });
            vec![
                Some(r.model.clone()),
                Some(r.selector.to_string()),
                Some(format_fixed(r.target_rate, 2)),
                Some(r.dataset.clone()),
                Some(r.shortcut.to_string()),
                Some(r.seeds.to_string()),
                r.accuracy.map(|a| format_fixed(100.0 * a, 1)),
                number(r.rate),
                number(r.per_review_rate),
                mark(number(r.precision)),
                mark(number(r.recall)),
                match (pair(r.optimal_dataset, |p| p.0), pair(r.optimal_per_review, |p| p.0)) {
                    (Some(d), Some(p)) => Some(format!("{d} / {p}")),
                    _ => None,
                },
                match (pair(r.optimal_dataset, |p| p.1), pair(r.optimal_per_review, |p| p.1)) {
                    (Some(d), Some(p)) => Some(format!("{d} / {p}")),
                    _ => None,
                },
                mark(number(r.non_correlating)),
            ]
        })
        .collect();
    let header: Vec<String> = [
        "model",
        "selector",
        "target %Sel",
        "dataset",
        "manipulation",
        "seeds",
        "accuracy %",
        "realised %Sel",
        "%Sel per review",
        "precision",
        "recall",
        "optimal precision (set / review)",
        "optimal recall (set / review)",
        "non-corr. selected",
    ]
    .map(String::from)
    .to_vec();
    let mut notes = vec![
        "Precision |F ∩ F_C| / |F| and recall |F ∩ F_C| / |F_C| of the selected words F against the correlating \
         articles F_C, and the share of non-correlating articles selected (CN / NC), each over all attributed \
         test examples (ratios of sums), seeds averaged. The optimal values are the best any selection of the \
         realised %Sel reaches, the rate enforced over the whole set or in every review (Zhou et al.'s solid and \
         dashed green lines). Accuracy: the model on its manipulated test set."
            .into(),
    ];
    notes.extend(failed_notes(&table));
    Ok(Some(DisplayTable {
        stem: "zhou_rationale".into(),
        title: "Rationale models: precision and recall of the selected words (Zhou et al. §7, Figures 10–11)".into(),
        notes,
        frame: string_frame(&header, &table)?,
        align: align(5, 9),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use grid_core::model::rationale::{RationaleSetting, SelectorKind};
    use grid_methods::metrics::rationale::Optimal;

    fn cell(metric: &str, seed: u64, mean: f64, pooled: f64) -> CellResult {
        use crate::testing::CellChanges;
        let cell = crate::testing::cell("rl-0.09", "articles-nc", "rationale", metric, mean)
            .seed(seed)
            .architecture(grid_core::model::Architecture::Rationale);
        CellResult {
            rationale: Some(RationaleResult {
                setting: RationaleSetting { selector: SelectorKind::Rl, selection_rate: 0.09 },
                pooled: Some(pooled),
                rate: Some(0.1),
                optimal: Some(Optimal { dataset: (0.8, 1.0), per_review: (0.7, 0.9) }),
                optimal_curve: Vec::new(),
            }),
            ..cell
        }
    }

    #[test]
    fn one_row_per_model_with_pooled_values_averaged_over_seeds() {
        let mut cells = vec![
            cell("sel-precision", 1, 0.5, 0.6),
            cell("sel-precision", 2, 0.5, 0.8),
            cell("sel-recall", 1, 0.9, 0.95),
            cell("sel-rate", 1, 0.12, 0.1),
            cell("sel-noncorr", 1, 0.2, 0.25),
        ];
        // A salience method's cell is not a rationale's.
        let mut other = cell("precision", 1, 0.3, 0.3);
        other.rationale = None;
        cells.push(other);
        let rows = rows(&cells, &[]);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!((r.selector, r.target_rate, r.seeds), ("RL", 0.09, 2));
        assert!((r.precision.unwrap() - 0.7).abs() < 1e-12);
        assert_eq!(
            (r.recall, r.rate, r.per_review_rate, r.non_correlating),
            (Some(0.95), Some(0.1), Some(0.12), Some(0.25))
        );
        assert_eq!((r.optimal_dataset, r.optimal_per_review), (Some((0.8, 1.0)), Some((0.7, 0.9))));
        let table = table(&cells, &[]).unwrap().unwrap();
        let column = |name: &str| table.frame.column(name).unwrap().str().unwrap().get(0).map(String::from);
        assert_eq!(column("precision").as_deref(), Some("0.700"));
        assert_eq!(column("optimal precision (set / review)").as_deref(), Some("0.800 / 0.700"));
        assert!(super::table(&cells[5..], &[]).unwrap().is_none(), "no rationale cells, no table");
    }
}
