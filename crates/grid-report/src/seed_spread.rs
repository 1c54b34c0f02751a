//! `verification_seeds`: how far each shortcut model's verification stands
//! from its bars over training seeds.
//!
//! One seed's verification says pass or fail; whether that outcome survives
//! another seed, or another CPU (SIMD width changes the rounding, and so the
//! training run), is what a user needs before trusting a column. Per (model,
//! dataset, shortcut) with two or more seeds this table gives how many passed,
//! the spread of the synthetic accuracy and of the loss on the original test
//! set, and the *worst margin*: the smallest distance, over seeds and bars, by
//! which a model cleared a bar (negative: by which it missed one).

use polars::prelude::*;

use super::paper::{align, string_frame};
use super::tables::{first_appearance, format_fixed, mean_and_sd};
use super::{DisplayTable, VerificationRow};

/// The table, or `None` when no model was trained with more than one seed.
pub fn verification_over_seeds(rows: &[VerificationRow]) -> PolarsResult<Option<DisplayTable>> {
    let groups = first_appearance(rows.iter().map(|r| (&r.key.model, &r.key.dataset, &r.key.shortcut)));
    let groups: Vec<Vec<&VerificationRow>> = groups
        .into_iter()
        .map(|(model, dataset, shortcut)| {
            rows.iter()
                .filter(|r| &r.key.model == model && &r.key.dataset == dataset && &r.key.shortcut == shortcut)
                .collect()
        })
        .filter(|of: &Vec<&VerificationRow>| of.len() > 1)
        .collect();
    if groups.is_empty() {
        return Ok(None);
    }
    let points = |v: f64| format_fixed(v * 100.0, 1);
    let table: Vec<Vec<Option<String>>> = groups
        .iter()
        .map(|of| {
            let first = &of[0].key;
            let synthetic: Vec<f64> = of.iter().map(|r| r.verification.shortcut_model_on_synthetic).collect();
            let (low, high) = min_max(&synthetic);
            let losses: Vec<f64> = of
                .iter()
                .map(|r| r.verification.original_model_on_original - r.verification.shortcut_model_on_original)
                .collect();
            // A label reassignment is not judged by its loss (its rows record no allowance).
            let judged_by_loss = of.iter().any(|r| r.max_original_drop.is_some());
            let loss = judged_by_loss.then(|| mean_and_sd(&losses)).flatten().map(|(mean, sd)| match sd {
                Some(sd) => format!("{} ± {}", points(mean), points(sd)),
                None => points(mean),
            });
            let largest_loss = judged_by_loss.then(|| points(min_max(&losses).1));
            vec![
                Some(first.model.clone()),
                Some(first.dataset.clone()),
                Some(first.shortcut.to_string()),
                Some(of.len().to_string()),
                Some(format!("{} of {}", of.iter().filter(|r| r.verification.passed).count(), of.len())),
                Some(format!("{}–{}", points(low), points(high))),
                loss,
                largest_loss,
                worst_margin(of).map(points),
                Some(of.iter().filter(|r| !r.verification.close_calls.is_empty()).count().to_string()),
            ]
        })
        .collect();
    let header: Vec<String> = [
        "model",
        "dataset",
        "shortcut",
        "seeds",
        "passed",
        "shortcut model on synthetic %",
        "loss on the original test set, points (mean ± sd)",
        "largest loss, points",
        "worst margin, points",
        "seeds with a close call",
    ]
    .map(String::from)
    .to_vec();
    Ok(Some(DisplayTable {
        stem: "verification_seeds".into(),
        title: "Verification over training seeds: how far each model stands from its bars".into(),
        notes: vec![
            "Worst margin: over seeds, the smallest of (synthetic accuracy − its bar) and (allowed loss − loss on the \
             original test set), in points; negative when a seed missed a bar. A seed, like a change of CPU, \
             changes the training run: a margin of a few tenths can turn."
                .into(),
        ],
        frame: string_frame(&header, &table)?,
        align: align(3, 7),
    }))
}

/// The smallest distance by which any seed cleared (or, negative, missed) a
/// bar it was judged by; `None` when no row records its bars.
fn worst_margin(rows: &[&VerificationRow]) -> Option<f64> {
    let margins = rows.iter().flat_map(|r| {
        let synthetic = r.min_synthetic_accuracy.map(|bar| r.verification.shortcut_model_on_synthetic - bar);
        let loss = r.max_original_drop.map(|allowed| {
            allowed - (r.verification.original_model_on_original - r.verification.shortcut_model_on_original)
        });
        synthetic.into_iter().chain(loss)
    });
    margins.fold(None, |worst: Option<f64>, m| Some(worst.map_or(m, |w| w.min(m))))
}

fn min_max(values: &[f64]) -> (f64, f64) {
    values.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| (lo.min(v), hi.max(v)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CellKey;
    use grid_core::model::Architecture;

    fn row(shortcut: &str, seed: u64, synthetic: f64, shortcut_on_original: f64) -> VerificationRow {
        VerificationRow {
            key: CellKey {
                model: "lstm".into(),
                architecture: Architecture::Bilstm,
                dataset: "sst2".into(),
                shortcut: shortcut.parse().unwrap(),
                seed,
            },
            verification: grid_methods::shortcut::verification::Verification {
                shortcut_model_on_synthetic: synthetic,
                original_model_on_synthetic: 0.5,
                shortcut_model_on_flip: synthetic,
                shortcut_model_on_original: shortcut_on_original,
                original_model_on_original: 0.865,
                shortcut_model_macro_f1: None,
                original_model_macro_f1: None,
                accuracy_without_shortcut: None,
                passed: synthetic >= 0.99 && 0.865 - shortcut_on_original <= 0.02,
                failures: Vec::new(),
                close_calls: Vec::new(),
                synthetic_examples: 0,
                synthetic_truncated: 0,
                original_examples: 0,
                shortcut_model_on_synthetic_interval: None,
                original_drop_interval: None,
            },
            min_synthetic_accuracy: Some(0.99),
            max_original_drop: Some(0.02),
        }
    }

    fn column(table: &DisplayTable, name: &str) -> Vec<String> {
        let c = table.frame.column(name).unwrap().str().unwrap();
        c.iter().map(|v| v.unwrap_or_default().to_string()).collect()
    }

    #[test]
    fn one_seed_per_model_gives_no_table() {
        let rows = [row("st", 1, 1.0, 0.857), row("tic", 1, 1.0, 0.85)];
        assert!(verification_over_seeds(&rows).unwrap().is_none());
    }

    #[test]
    fn spread_and_worst_margin_over_seeds() {
        let rows = [
            row("tic", 1, 1.0, 0.850),   // loss 1.5: 0.5 under the bar
            row("tic", 2, 0.996, 0.856), // synthetic 0.6 over its bar, loss 0.9
            row("op", 1, 1.0, 0.853),
            row("op", 2, 0.985, 0.86), // misses the synthetic bar by 0.5
            row("st", 1, 1.0, 0.857),  // one seed only: no row
        ];
        let table = verification_over_seeds(&rows).unwrap().unwrap();
        assert_eq!(column(&table, "shortcut"), ["tic", "op"]);
        assert_eq!(column(&table, "passed"), ["2 of 2", "1 of 2"]);
        assert_eq!(column(&table, "shortcut model on synthetic %"), ["99.6–100.0", "98.5–100.0"]);
        assert_eq!(column(&table, "loss on the original test set, points (mean ± sd)")[0], "1.2 ± 0.4");
        assert_eq!(column(&table, "largest loss, points"), ["1.5", "1.2"]);
        assert_eq!(column(&table, "worst margin, points"), ["0.5", "-0.5"]);
    }

    #[test]
    fn a_reassignment_is_not_judged_by_its_loss() {
        let mut rows = [row("articles", 1, 1.0, 0.6), row("articles", 2, 0.995, 0.62)];
        for r in &mut rows {
            r.max_original_drop = None;
        }
        let table = verification_over_seeds(&rows).unwrap().unwrap();
        assert_eq!(column(&table, "loss on the original test set, points (mean ± sd)"), [""]);
        assert_eq!(column(&table, "worst margin, points"), ["0.5"]);
    }
}
