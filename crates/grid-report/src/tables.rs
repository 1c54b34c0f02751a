//! The report's frames, built from [`CellResult`]s and [`VerificationRow`]s: pure
//! functions, no I/O. [`super::write_reports`] writes and renders them.
//!
//! Ordering is always "first appearance in the input": models, metrics, methods and
//! `dataset:shortcut` columns come out in the order the caller listed them, so the
//! grid's declaration order is the table order and the output is deterministic.

use std::collections::HashSet;

use polars::prelude::*;

use grid_core::model::Architecture;
use grid_methods::metrics::Metric;
use grid_methods::salience::Method;
use grid_methods::shortcut::Regime;

use super::{CellResult, ReportError, VerificationRow};

/// Marks a number whose model failed verification.
pub const FAILED_MARK: &str = " †";
/// Printed under a layout table that has at least one [`FAILED_MARK`].
pub const FAILED_FOOTNOTE: &str =
    "† the shortcut model failed verification for this column; do not trust these numbers.";

/// The index column of a layout table.
pub const METHOD_COLUMN: &str = "method";

/// One paper-style table (Bastings et al. Tables 6/7): one model, one metric,
/// rows = methods, columns = `dataset:shortcut`, string cells.
#[derive(Debug, Clone)]
pub struct Layout {
    pub model: String,
    pub architecture: Architecture,
    pub metric: Metric,
    /// `method` then one string column per `dataset:shortcut`; null where the grid
    /// has no cell.
    pub frame: DataFrame,
    /// Whether any cell carries [`FAILED_MARK`].
    pub any_failed: bool,
}

/// `value` with `decimals` digits, rounded from the exact binary value (ties to
/// even, as Rust's formatter does). A result that rounds to zero never keeps a
/// minus sign.
pub fn format_fixed(value: f64, decimals: usize) -> String {
    let s = format!("{value:.decimals$}");
    match s.strip_prefix('-') {
        Some(rest) if rest.chars().all(|c| c == '0' || c == '.') => rest.to_string(),
        _ => s,
    }
}

/// The column key of a layout: `dataset:shortcut`.
pub fn column_key(dataset: &str, shortcut: Regime) -> String {
    format!("{dataset}:{shortcut}")
}

/// Rejects two cells with the same (model, dataset, shortcut, method, metric): the
/// tables could show only one of them. The first repeat in input order is named.
pub fn check_unique_cells(cells: &[CellResult]) -> Result<(), ReportError> {
    let mut seen = HashSet::with_capacity(cells.len());
    for c in cells {
        let key = (c.key.model.as_str(), c.key.dataset.as_str(), c.key.shortcut, c.method, c.metric, c.key.seed);
        if !seen.insert(key) {
            return Err(ReportError::DuplicateCell {
                model: c.key.model.clone(),
                dataset: c.key.dataset.clone(),
                shortcut: c.key.shortcut,
                method: c.method.to_string(),
                metric: c.metric.name().to_string(),
            });
        }
    }
    Ok(())
}

/// Rejects two verification rows for the same (model, dataset, shortcut, seed).
pub fn check_unique_verification(rows: &[VerificationRow]) -> Result<(), ReportError> {
    let mut seen = HashSet::with_capacity(rows.len());
    for r in rows {
        if !seen.insert((r.key.model.as_str(), r.key.dataset.as_str(), r.key.shortcut, r.key.seed)) {
            return Err(ReportError::DuplicateVerification {
                model: r.key.model.clone(),
                dataset: r.key.dataset.clone(),
                shortcut: r.key.shortcut,
            });
        }
    }
    Ok(())
}

/// Every cell, every field, in input order (`results_long`).
pub fn long_frame(cells: &[CellResult]) -> PolarsResult<DataFrame> {
    let strings = |f: fn(&CellResult) -> &str| -> Vec<&str> { cells.iter().map(f).collect() };
    DataFrame::new(
        cells.len(),
        vec![
            Column::new("model".into(), strings(|c| &c.key.model)),
            Column::new("architecture".into(), strings(|c| c.key.architecture.name())),
            Column::new("dataset".into(), strings(|c| &c.key.dataset)),
            Column::new("shortcut".into(), strings(|c| c.key.shortcut.name())),
            Column::new("method".into(), cells.iter().map(|c| c.method.to_string()).collect::<Vec<String>>()),
            Column::new("metric".into(), strings(|c| c.metric.name())),
            Column::new("seed".into(), cells.iter().map(|c| c.key.seed).collect::<Vec<u64>>()),
            Column::new("value".into(), cells.iter().map(|c| c.value).collect::<Vec<f64>>()),
            Column::new("ci_low".into(), cells.iter().map(|c| c.ci_low).collect::<Vec<Option<f64>>>()),
            Column::new("ci_high".into(), cells.iter().map(|c| c.ci_high).collect::<Vec<Option<f64>>>()),
            Column::new("n_examples".into(), cells.iter().map(|c| c.n_examples as u64).collect::<Vec<u64>>()),
            Column::new("verified".into(), cells.iter().map(|c| c.verified).collect::<Vec<bool>>()),
        ],
    )
}

/// The accuracy fields of a [`VerificationRow`], with their column names and the
/// headers the markdown table uses.
/// Column name, markdown header, field.
type Accuracy = (&'static str, &'static str, fn(&VerificationRow) -> f64);

const ACCURACIES: [Accuracy; 5] = [
    ("shortcut_model_on_synthetic", "shortcut model, synthetic %", |r| r.verification.shortcut_model_on_synthetic),
    ("original_model_on_synthetic", "original model, synthetic %", |r| r.verification.original_model_on_synthetic),
    ("shortcut_model_on_flip", "shortcut model, flip %", |r| r.verification.shortcut_model_on_flip),
    ("shortcut_model_on_original", "shortcut model, original %", |r| r.verification.shortcut_model_on_original),
    ("original_model_on_original", "original model, original %", |r| r.verification.original_model_on_original),
];

/// Macro-F1 on the original test set: column name, markdown header, field.
type MacroF1 = (&'static str, &'static str, fn(&VerificationRow) -> Option<f64>);

const MACRO_F1: [MacroF1; 2] = [
    ("shortcut_model_macro_f1", "shortcut model, original macro-F1 %", |r| r.verification.shortcut_model_macro_f1),
    ("original_model_macro_f1", "original model, original macro-F1 %", |r| r.verification.original_model_macro_f1),
];

/// Column name, field.
type Key = (&'static str, fn(&VerificationRow) -> &str);

const VERIFICATION_KEYS: [Key; 4] = [
    ("model", |r| &r.key.model),
    ("architecture", |r| r.key.architecture.name()),
    ("dataset", |r| &r.key.dataset),
    ("shortcut", |r| r.key.shortcut.name()),
];

/// One row per verification, accuracies as fractions (0..1), `failures` joined
/// with `"; "` (`verification.csv` / `.parquet`).
pub fn verification_frame(rows: &[VerificationRow]) -> PolarsResult<DataFrame> {
    let mut columns = Vec::with_capacity(11);
    for (name, get) in VERIFICATION_KEYS {
        columns.push(Column::new(name.into(), rows.iter().map(get).collect::<Vec<&str>>()));
    }
    columns.push(Column::new("seed".into(), rows.iter().map(|r| r.key.seed).collect::<Vec<u64>>()));
    for (name, _, get) in ACCURACIES {
        columns.push(Column::new(name.into(), rows.iter().map(get).collect::<Vec<f64>>()));
    }
    for (name, _, get) in MACRO_F1 {
        columns.push(Column::new(name.into(), rows.iter().map(get).collect::<Vec<Option<f64>>>()));
    }
    columns.push(Column::new("passed".into(), rows.iter().map(|r| r.verification.passed).collect::<Vec<bool>>()));
    columns.push(Column::new(
        "failures".into(),
        rows.iter().map(|r| r.verification.failures.join("; ")).collect::<Vec<String>>(),
    ));
    columns.push(Column::new(
        "close_calls".into(),
        rows.iter().map(|r| r.verification.close_calls.join("; ")).collect::<Vec<String>>(),
    ));
    DataFrame::new(rows.len(), columns)
}

/// The same rows for people: accuracies as percentages with one decimal,
/// `passed` as yes/no. Returns the frame and which columns are numeric (for
/// right alignment).
pub fn verification_display_frame(rows: &[VerificationRow]) -> PolarsResult<(DataFrame, Vec<bool>)> {
    let mut columns = Vec::with_capacity(11);
    let mut numeric = Vec::with_capacity(11);
    for (name, get) in VERIFICATION_KEYS {
        columns.push(Column::new(name.into(), rows.iter().map(get).collect::<Vec<&str>>()));
        numeric.push(false);
    }
    columns.push(Column::new("seed".into(), rows.iter().map(|r| r.key.seed.to_string()).collect::<Vec<String>>()));
    numeric.push(true);
    for (_, header, get) in ACCURACIES {
        columns.push(Column::new(
            header.into(),
            rows.iter().map(|r| format_fixed(get(r) * 100.0, 1)).collect::<Vec<String>>(),
        ));
        numeric.push(true);
    }
    // Shown only when measured (older caches lack it).
    for (_, header, get) in MACRO_F1.into_iter().filter(|(_, _, get)| rows.iter().any(|r| get(r).is_some())) {
        let shown = rows.iter().map(|r| get(r).map(|v| format_fixed(v * 100.0, 1)).unwrap_or_default());
        columns.push(Column::new(header.into(), shown.collect::<Vec<String>>()));
        numeric.push(true);
    }
    columns.push(Column::new(
        "passed".into(),
        rows.iter().map(|r| if r.verification.passed { "yes" } else { "no" }).collect::<Vec<&str>>(),
    ));
    numeric.push(false);
    columns.push(Column::new(
        "failures".into(),
        rows.iter().map(|r| r.verification.failures.join("; ")).collect::<Vec<String>>(),
    ));
    numeric.push(false);
    // Shown only when a threshold lies inside a measurement's 95% interval.
    if rows.iter().any(|r| !r.verification.close_calls.is_empty()) {
        let calls = rows.iter().map(|r| r.verification.close_calls.join("; "));
        columns.push(Column::new("close calls".into(), calls.collect::<Vec<String>>()));
        numeric.push(false);
    }
    Ok((DataFrame::new(rows.len(), columns)?, numeric))
}

/// Cells that differ only by seed, grouped: one group per (model, dataset,
/// shortcut, method, metric), groups and members in first-appearance order.
pub fn seed_groups<'a>(cells: impl IntoIterator<Item = &'a CellResult>) -> Vec<Vec<&'a CellResult>> {
    let mut groups: Vec<Vec<&CellResult>> = Vec::new();
    let mut index: std::collections::HashMap<(&str, &str, Regime, Method, Metric), usize> = Default::default();
    for c in cells {
        let key = (c.key.model.as_str(), c.key.dataset.as_str(), c.key.shortcut, c.method, c.metric);
        let at = *index.entry(key).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[at].push(c);
    }
    groups
}

/// A cell's mean over its seeds.
#[derive(Debug, Clone)]
pub struct SeedSummary {
    /// The first seed's cell with `value` = the mean over seeds, `verified` only
    /// if every seed's model passed, `values` the per-example mean (when every
    /// seed explained the same examples) and the interval of that mean.
    pub cell: CellResult,
    /// Sample standard deviation over seeds; `None` for one seed.
    pub sd: Option<f64>,
    pub seeds: usize,
}

impl SeedSummary {
    /// `mean` or, over several seeds, `mean ± sd`.
    pub fn display(&self, decimals: usize) -> String {
        match self.sd {
            Some(sd) => format!("{} ± {}", format_fixed(self.cell.value, decimals), format_fixed(sd, decimals)),
            None => format_fixed(self.cell.value, decimals),
        }
    }
}

/// The mean of `values` and, for two or more, their sample standard
/// deviation; `None` for no values.
pub fn mean_and_sd(values: &[f64]) -> Option<(f64, Option<f64>)> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    let sd = (n > 1).then(|| (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt());
    Some((mean, sd))
}

/// Cells that differ only by seed, merged: one [`SeedSummary`] per (model,
/// dataset, shortcut, method, metric), in first-appearance order.
/// The one interval rule for a cell over seeds, for every table, chart and
/// comparison: one seed keeps its own bootstrap interval; several take the
/// bootstrap interval of their seed-averaged per-example values (none when the
/// seeds attributed different numbers of examples).
pub fn interval_over_seeds(group: &[&CellResult]) -> Option<[f64; 2]> {
    match group {
        [] => None,
        [one] => one.ci_low.zip(one.ci_high).map(|(l, h)| [l, h]),
        [first, ..] => {
            let len = first.values.len();
            if len == 0 || group.iter().any(|c| c.values.len() != len) {
                return None;
            }
            let n = group.len() as f64;
            let averaged: Vec<f64> = (0..len).map(|i| group.iter().map(|c| c.values[i]).sum::<f64>() / n).collect();
            grid_methods::metrics::bootstrap::Bootstrap::default().interval(&averaged)
        }
    }
}

pub fn over_seeds(cells: &[CellResult]) -> Vec<SeedSummary> {
    seed_groups(cells)
        .into_iter()
        .map(|group| {
            let n = group.len();
            let mut cell = group[0].clone();
            let values: Vec<f64> = group.iter().map(|c| c.value).collect();
            let (mean, sd) = mean_and_sd(&values).expect("a seed group is never empty");
            cell.value = mean;
            cell.verified = group.iter().all(|c| c.verified);
            if n > 1 {
                let len = group[0].values.len();
                cell.values = if group.iter().all(|c| c.values.len() == len) {
                    (0..len).map(|i| group.iter().map(|c| c.values[i]).sum::<f64>() / n as f64).collect()
                } else {
                    Vec::new()
                };
                let ratios = group[0].by_ratio.len();
                if group.iter().all(|c| c.by_ratio.len() == ratios) {
                    cell.by_ratio = (0..ratios)
                        .map(|r| {
                            let mean = group.iter().map(|c| c.by_ratio[r][1]).sum::<f64>() / n as f64;
                            [group[0].by_ratio[r][0], mean]
                        })
                        .collect();
                }
                let shares: Option<Vec<f64>> = group.iter().map(|c| c.region_share).collect();
                cell.region_share = shares.map(|s| s.iter().sum::<f64>() / n as f64);
                let interval = interval_over_seeds(&group);
                cell.ci_low = interval.map(|i| i[0]);
                cell.ci_high = interval.map(|i| i[1]);
            }
            SeedSummary { cell, sd, seeds: n }
        })
        .collect()
}

/// Every column of `df` as text passed through `escape`, nulls as empty cells:
/// the body of a rendered table.
pub fn text_columns(df: &DataFrame, escape: impl Fn(&str) -> String) -> PolarsResult<Vec<Vec<String>>> {
    df.columns()
        .iter()
        .map(|c| Ok(c.cast(&DataType::String)?.str()?.iter().map(|v| v.map(&escape).unwrap_or_default()).collect()))
        .collect()
}

/// The distinct items in order of first appearance.
pub fn first_appearance<T: std::hash::Hash + Eq + Clone>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    let mut seen = HashSet::new();
    items.into_iter().filter(|k| seen.insert(k.clone())).collect()
}

/// The paper layouts: for each model (first-appearance order) and each metric
/// (first-appearance order) that model has cells for, one [`Layout`].
///
/// Rows and columns follow the global first appearance of methods and of
/// `dataset:shortcut` pairs, restricted to what the table has, so every model's
/// tables list them in the same order. Built as a long frame
/// (method, column, display string) and pivoted lazily on the known column keys.
/// The caller should have run [`check_unique_cells`]; a repeat would otherwise
/// show its first value.
pub fn layouts(cells: &[CellResult]) -> PolarsResult<Vec<Layout>> {
    let summaries = over_seeds(cells);
    let cells: Vec<CellResult> = summaries.iter().map(|s| s.cell.clone()).collect();
    let cells = cells.as_slice();
    let models = first_appearance(cells.iter().map(|c| c.key.model.as_str()));
    let metrics = first_appearance(cells.iter().map(|c| c.metric));
    let methods = first_appearance(cells.iter().map(|c| c.method));
    let keys: Vec<String> = cells.iter().map(|c| column_key(&c.key.dataset, c.key.shortcut)).collect();
    let columns = first_appearance(keys.iter().map(String::as_str));
    let method_rank = |method: Method| methods.iter().position(|&m| m == method);
    let column_rank = |key: &str| columns.iter().position(|&c| c == key);

    let mut out = Vec::new();
    for model in &models {
        for metric in &metrics {
            let mut subset: Vec<(usize, &CellResult)> =
                cells.iter().enumerate().filter(|(_, c)| c.key.model == *model && c.metric == *metric).collect();
            if subset.is_empty() {
                continue;
            }
            // Rows in method order, so the pivot's first-appearance grouping gives
            // the wanted row order.
            subset.sort_by_key(|(i, c)| (method_rank(c.method), column_rank(&keys[*i])));
            let architecture = subset[0].1.key.architecture;
            let places = metric.decimals();
            let mut any_failed = false;
            let mut method_col = Vec::with_capacity(subset.len());
            let mut key_col = Vec::with_capacity(subset.len());
            let mut display_col = Vec::with_capacity(subset.len());
            for (i, c) in &subset {
                let mut shown = summaries[*i].display(places);
                if !c.verified {
                    shown.push_str(FAILED_MARK);
                    any_failed = true;
                }
                method_col.push(c.method.to_string());
                key_col.push(keys[*i].as_str());
                display_col.push(shown);
            }
            let method_col: Vec<&str> = method_col.iter().map(String::as_str).collect();
            let frame = wide(&method_col, &key_col, display_col, &columns)?;
            out.push(Layout { model: model.to_string(), architecture, metric: *metric, frame, any_failed });
        }
    }
    Ok(out)
}

/// The long rows (method, column key, shown value) as a wide frame: one row
/// per method in first-appearance order, one column per key in `columns`'
/// order that has a value, `null` where a method has none. (A pivot, built by
/// hand: polars' lazy pivot pulls in its whole query engine for this.)
fn wide(methods: &[&str], keys: &[&str], shown: Vec<String>, columns: &[&str]) -> PolarsResult<DataFrame> {
    let mut rows: Vec<&str> = Vec::new();
    for m in methods {
        if !rows.contains(m) {
            rows.push(m);
        }
    }
    let present: Vec<&str> = columns.iter().copied().filter(|k| keys.contains(k)).collect();
    let mut cells: Vec<Vec<Option<String>>> = vec![vec![None; rows.len()]; present.len()];
    for ((method, key), value) in methods.iter().zip(keys).zip(shown) {
        let (Some(r), Some(c)) = (rows.iter().position(|m| m == method), present.iter().position(|k| k == key)) else {
            continue;
        };
        // The first value of a (method, key) pair, as the pivot's `first()` kept.
        if cells[c][r].is_none() {
            cells[c][r] = Some(value);
        }
    }
    let mut frame_columns = vec![Column::new(METHOD_COLUMN.into(), rows.clone())];
    for (key, values) in present.iter().zip(cells) {
        frame_columns.push(Column::new((*key).into(), values));
    }
    DataFrame::new(rows.len(), frame_columns)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(model: &str, key: (&str, &str), method: &str, metric: &str, value: f64) -> CellResult {
        use crate::testing::CellChanges;
        crate::testing::cell(model, key.1, method, metric, value).on(key.0).architecture(Architecture::Bilstm)
    }

    fn strings(df: &DataFrame, name: &str) -> Vec<Option<String>> {
        df.column(name).unwrap().str().unwrap().iter().map(|v| v.map(str::to_string)).collect()
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn rounding() {
        assert_eq!(format_fixed(0.666, 2), "0.67");
        assert_eq!(format_fixed(1.0, 2), "1.00");
        assert_eq!(format_fixed(3.04, 1), "3.0");
        assert_eq!(format_fixed(3.06, 1), "3.1");
        // Exact binary ties go to even.
        assert_eq!(format_fixed(0.125, 2), "0.12");
        assert_eq!(format_fixed(0.375, 2), "0.38");
        // No negative zero.
        assert_eq!(format_fixed(-0.001, 2), "0.00");
        assert_eq!(format_fixed(-0.04, 1), "0.0");
        assert_eq!(format_fixed(-0.5, 1), "-0.5");
        assert_eq!(format_fixed(f64::NAN, 2), "NaN");
    }

    #[test]
    fn layout_shape_and_ordering() {
        // Input order deliberately interleaved: methods appear g, r, i; columns
        // sst2:st, sst2:tic, imdb:st (imdb first seen only after sst2:tic).
        let cells = vec![
            cell("lstm", ("sst2", "st"), "gradl-l1", "precision", 1.0),
            cell("lstm", ("sst2", "tic"), "random", "precision", 0.05),
            cell("lstm", ("sst2", "tic"), "gradl-l1", "precision", 0.9),
            cell("lstm", ("imdb", "st"), "igl-zero-100", "precision", 0.333),
            cell("lstm", ("sst2", "st"), "random", "precision", 0.04),
            cell("lstm", ("imdb", "st"), "gradl-l1", "precision", 0.995),
            cell("lstm", ("sst2", "st"), "gradl-l1", "rank", 1.04),
        ];
        let out = layouts(&cells).unwrap();
        assert_eq!(out.len(), 2);
        let p = &out[0];
        assert_eq!((p.model.as_str(), p.metric.name()), ("lstm", "precision"));
        assert!(!p.any_failed);
        assert_eq!(p.frame.get_column_names(), ["method", "sst2:st", "sst2:tic", "imdb:st"]);
        assert_eq!(strings(&p.frame, "method"), [s("gradl-l1"), s("random"), s("igl-zero-100")]);
        assert_eq!(strings(&p.frame, "sst2:st"), [s("1.00"), s("0.04"), None]);
        assert_eq!(strings(&p.frame, "sst2:tic"), [s("0.90"), s("0.05"), None]);
        assert_eq!(strings(&p.frame, "imdb:st"), [s("0.99"), None, s("0.33")]);

        let r = &out[1];
        assert_eq!(r.metric, Metric::Rank);
        assert_eq!(r.frame.get_column_names(), ["method", "sst2:st"]);
        assert_eq!(strings(&r.frame, "sst2:st"), [s("1.0")]);
    }

    #[test]
    fn layouts_per_model_share_global_order() {
        let cells = vec![
            cell("lstm", ("sst2", "st"), "gxil", "precision", 0.1),
            cell("lstm", ("sst2", "op"), "gxip", "precision", 0.2),
            // bert lists op before st and gxip before gxil; its table still follows
            // the global order.
            cell("bert", ("sst2", "op"), "gxip", "precision", 0.3),
            cell("bert", ("sst2", "st"), "gxil", "precision", 0.4),
        ];
        let out = layouts(&cells).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].model, "bert");
        assert_eq!(out[1].frame.get_column_names(), ["method", "sst2:st", "sst2:op"]);
        assert_eq!(strings(&out[1].frame, "method"), [s("gxil"), s("gxip")]);
        assert_eq!(strings(&out[1].frame, "sst2:op"), [None, s("0.30")]);
    }

    #[test]
    fn failed_cells_are_marked() {
        let mut bad = cell("lstm", ("sst2", "op"), "random", "rank", 17.25);
        bad.verified = false;
        let cells = vec![cell("lstm", ("sst2", "st"), "random", "rank", 9.0), bad];
        let out = layouts(&cells).unwrap();
        assert!(out[0].any_failed);
        assert_eq!(strings(&out[0].frame, "sst2:st"), [s("9.0")]);
        assert_eq!(strings(&out[0].frame, "sst2:op"), [s("17.2 †")]);
    }

    #[test]
    fn empty_cells_give_no_layouts() {
        assert!(layouts(&[]).unwrap().is_empty());
        assert_eq!(long_frame(&[]).unwrap().shape(), (0, 12));
        assert_eq!(verification_frame(&[]).unwrap().shape(), (0, 15));
    }

    #[test]
    fn macro_f1_is_shown_only_when_measured() {
        let mut row = VerificationRow {
            key: crate::CellKey {
                model: "lstm".into(),
                architecture: grid_core::model::Architecture::Bilstm,
                dataset: "sst2".into(),
                shortcut: "st".parse().unwrap(),
                seed: 1,
            },
            verification: grid_methods::shortcut::verification::Verification {
                shortcut_model_on_synthetic: 1.0,
                original_model_on_synthetic: 0.5,
                shortcut_model_on_flip: 1.0,
                shortcut_model_on_original: 0.8,
                original_model_on_original: 0.82,
                shortcut_model_macro_f1: None,
                original_model_macro_f1: None,
                accuracy_without_shortcut: None,
                passed: true,
                close_calls: Vec::new(),
                failures: Vec::new(),
                synthetic_examples: 0,
                synthetic_truncated: 0,
                original_examples: 0,
                shortcut_model_on_synthetic_interval: None,
                original_drop_interval: None,
            },
            min_synthetic_accuracy: None,
            max_original_drop: None,
        };
        let header = "original model, original macro-F1 %";
        let (shown, _) = verification_display_frame(std::slice::from_ref(&row)).unwrap();
        assert!(shown.column(header).is_err());
        (row.verification.shortcut_model_macro_f1, row.verification.original_model_macro_f1) =
            (Some(0.7949), Some(0.8181));
        let (shown, numeric) = verification_display_frame(std::slice::from_ref(&row)).unwrap();
        assert_eq!(strings(&shown, header), [s("81.8")]);
        assert_eq!(numeric.len(), shown.width());
        let long = verification_frame(&[row]).unwrap();
        assert_eq!(long.column("shortcut_model_macro_f1").unwrap().f64().unwrap().get(0), Some(0.7949));
    }

    #[test]
    fn duplicate_cells_rejected() {
        let c = cell("lstm", ("sst2", "st"), "random", "rank", 1.0);
        let mut other_metric = c.clone();
        other_metric.metric = Metric::Precision;
        assert!(check_unique_cells(&[c.clone(), other_metric]).is_ok());
        let err = check_unique_cells(&[c.clone(), c]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "two result cells for model `lstm`, dataset `sst2`, shortcut `st`, method `random`, metric `rank`"
        );
    }
}
