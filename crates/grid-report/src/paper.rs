//! The papers' table layouts, built from seed-averaged cells
//! ([`SeedSummary`]) and verification rows: pure functions returning
//! [`DisplayTable`]s that [`super::write_reports`] renders as CSV, Markdown,
//! LaTeX and HTML.
//!
//! | stem | paper | rows × columns |
//! |---|---|---|
//! | `bastings_table1` | Bastings et al. Table 1 (+ synthetic accuracies) | (model, dataset) × accuracies |
//! | `bastings_table{2,3,4,5}_<family>` | Tables 2–5 (GxI, GRAD, IG, LIME) | (model, method) × P and R per `dataset:shortcut` |
//! | `family_<family>` | the same for the families the paper has no table for | |
//! | `bastings_full_<model>` | Tables 10–11 (full LSTM / BERT matrices) | method × P and R per `dataset:shortcut` |
//! | `zhao_table2_<model>` | Zhao & Aletras Table 2 | method × diagnosticity of NS, Soft-NS, NC, Soft-NC (mean over datasets) |
//! | `zhao_table3_<model>` | Table 3 | `dataset:shortcut` × the same (mean over methods) |
//! | `zhao_table6_<model>` | Table 6 | (`dataset:shortcut`, method) × the same |
//! | `zhao_erasure_<model>` | §3, Figure 3's data | (`dataset:shortcut`, method) × NS and NC per rationale ratio, and AOPC |
//! | `recommendation` | — | per (model, dataset, shortcut): the best config and those tied with it |
//!
//! Bastings et al.'s layouts cover their inserted shortcuts (st, tic, op) only;
//! Zhou et al.'s article manipulations have their own tables in [`super::zhou`].

use polars::prelude::*;

use super::markdown::Align;
use super::tables::{FAILED_FOOTNOTE, FAILED_MARK, SeedSummary, column_key, first_appearance, format_fixed};
use super::{DisplayTable, VerificationRow};
use grid_core::model::Architecture;
use grid_methods::metrics::bootstrap::Bootstrap;
use grid_methods::metrics::{ErasureMetric, Metric};
use grid_methods::salience::Method;
use grid_methods::salience::method::GradientMethod;
use grid_methods::shortcut::Regime;

/// A method family, as the papers group their tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    GradientTimesInput,
    Gradient,
    IntegratedGradients,
    Lime,
    KernelShap,
    Occlusion,
    SmoothGrad,
    Attention,
    DeepLift,
    /// A rationale model's own selection.
    Rationale,
    Random,
}

impl Family {
    const ALL: [Family; 11] = [
        Family::GradientTimesInput,
        Family::Gradient,
        Family::IntegratedGradients,
        Family::Lime,
        Family::KernelShap,
        Family::Occlusion,
        Family::SmoothGrad,
        Family::Attention,
        Family::DeepLift,
        Family::Rationale,
        Family::Random,
    ];

    pub fn of(method: Method) -> Family {
        match method {
            Method::Gradient(GradientMethod::GradientTimesInput { .. }) => Family::GradientTimesInput,
            Method::Gradient(GradientMethod::Gradient { .. }) => Family::Gradient,
            Method::Gradient(GradientMethod::IntegratedGradients { .. }) => Family::IntegratedGradients,
            Method::Lime { .. } => Family::Lime,
            Method::KernelShap { .. } => Family::KernelShap,
            Method::Occlusion { .. } => Family::Occlusion,
            Method::SmoothGrad { .. } => Family::SmoothGrad,
            Method::Attention(_) | Method::ScaledAttention => Family::Attention,
            Method::DeepLift { .. } => Family::DeepLift,
            Method::Rationale => Family::Rationale,
            Method::Random => Family::Random,
        }
    }

    pub fn title(self) -> &'static str {
        match self {
            Family::GradientTimesInput => "GxI",
            Family::Gradient => "GRAD",
            Family::IntegratedGradients => "IG",
            Family::Lime => "LIME",
            Family::KernelShap => "KernelSHAP",
            Family::Occlusion => "Occlusion",
            Family::SmoothGrad => "SmoothGrad",
            Family::Attention => "Attention",
            Family::DeepLift => "DeepLift",
            Family::Rationale => "Rationale",
            Family::Random => "Random",
        }
    }

    /// The table of Bastings et al. that shows this family.
    pub fn bastings_table(self) -> Option<u8> {
        match self {
            Family::GradientTimesInput => Some(2),
            Family::Gradient => Some(3),
            Family::IntegratedGradients => Some(4),
            Family::Lime => Some(5),
            Family::KernelShap
            | Family::Occlusion
            | Family::SmoothGrad
            | Family::Attention
            | Family::DeepLift
            | Family::Rationale
            | Family::Random => None,
        }
    }

    fn stem(self) -> String {
        let name = self.title().to_lowercase();
        match self.bastings_table() {
            Some(n) => format!("bastings_table{n}_{name}"),
            None => format!("family_{name}"),
        }
    }
}

/// A frame of optional string columns; `None` prints as an empty cell.
pub(super) fn string_frame(header: &[String], rows: &[Vec<Option<String>>]) -> PolarsResult<DataFrame> {
    let columns = header
        .iter()
        .enumerate()
        .map(|(j, name)| Column::new(name.as_str().into(), rows.iter().map(|r| r[j].clone()).collect::<Vec<_>>()))
        .collect();
    DataFrame::new(rows.len(), columns)
}

pub(super) fn align(keys: usize, numbers: usize) -> Vec<Align> {
    let mut a = vec![Align::Left; keys];
    a.extend(std::iter::repeat_n(Align::Right, numbers));
    a
}

/// The cell's display string, with the failed-verification mark.
fn shown(s: &SeedSummary) -> String {
    let mut text = s.display(s.cell.metric.decimals());
    if !s.cell.verified {
        text.push_str(FAILED_MARK);
    }
    text
}

fn find<'a>(
    cells: &'a [SeedSummary],
    model: &str,
    method: Method,
    metric: Metric,
    key: &str,
) -> Option<&'a SeedSummary> {
    cells.iter().find(|s| {
        let c = &s.cell;
        c.key.model == model
            && c.method == method
            && c.metric == metric
            && column_key(&c.key.dataset, c.key.shortcut) == key
    })
}

pub(super) fn failed_notes(rows: &[Vec<Option<String>>]) -> Vec<String> {
    let any = rows.iter().flatten().flatten().any(|cell| cell.ends_with(FAILED_MARK));
    if any { vec![FAILED_FOOTNOTE.to_string()] } else { Vec::new() }
}

/// The precision and rank cells of Bastings et al.'s tables, with their
/// `dataset:shortcut` columns and their (model, architecture) pairs.
struct RankedCells<'a> {
    keys: Vec<String>,
    ranked: Vec<&'a SeedSummary>,
    models: Vec<(String, Architecture)>,
}

/// Whether a cell's shortcut is one of Bastings et al.'s inserted rules.
pub(super) fn is_inserted(shortcut: Regime) -> bool {
    matches!(shortcut, Regime::Shortcut(kind) if kind.article_layout().is_none())
}

/// `None` when the grid scores neither precision nor rank on an inserted rule.
fn ranked_cells(cells: &[SeedSummary]) -> Option<RankedCells<'_>> {
    let ranked: Vec<&SeedSummary> = cells
        .iter()
        .filter(|s| matches!(s.cell.metric, Metric::Precision | Metric::Rank) && is_inserted(s.cell.key.shortcut))
        .collect();
    if ranked.is_empty() {
        return None;
    }
    let keys = first_appearance(ranked.iter().map(|s| column_key(&s.cell.key.dataset, s.cell.key.shortcut)));
    let models = first_appearance(ranked.iter().map(|s| (s.cell.key.model.clone(), s.cell.key.architecture)));
    Some(RankedCells { keys, ranked, models })
}

fn precision_rank_row(cells: &[SeedSummary], model: &str, method: Method, keys: &[String]) -> Vec<Option<String>> {
    [Metric::Precision, Metric::Rank]
        .iter()
        .flat_map(|&metric| keys.iter().map(move |k| find(cells, model, method, metric, k).map(shown)))
        .collect()
}

fn precision_rank_header(keys: &[String]) -> Vec<String> {
    ["P", "R"].iter().flat_map(|m| keys.iter().map(move |k| format!("{m} {k}"))).collect()
}

/// Bastings et al. Tables 2–5 (one per method family, every model's rows in
/// one table) and a table of the same shape for each other family in the grid.
pub fn family_tables(cells: &[SeedSummary]) -> PolarsResult<Vec<DisplayTable>> {
    let Some(RankedCells { keys, ranked, models }) = ranked_cells(cells) else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for family in Family::ALL {
        if family == Family::Random {
            continue;
        }
        let methods = first_appearance(ranked.iter().map(|s| s.cell.method).filter(|&m| Family::of(m) == family));
        if methods.is_empty() {
            continue;
        }
        let mut rows = Vec::new();
        for (model, architecture) in &models {
            for method in &methods {
                let numbers = precision_rank_row(cells, model, *method, &keys);
                if numbers.iter().all(Option::is_none) {
                    continue;
                }
                let mut row = vec![Some(format!("{model} ({})", architecture.label())), Some(method.to_string())];
                row.extend(numbers);
                rows.push(row);
            }
        }
        let mut header = vec!["model".to_string(), "method".to_string()];
        header.extend(precision_rank_header(&keys));
        let title = match family.bastings_table() {
            Some(n) => format!("{} precision (P) and mean rank (R), as Bastings et al. Table {n}", family.title()),
            None => format!("{} precision (P) and mean rank (R)", family.title()),
        };
        out.push(DisplayTable {
            stem: family.stem(),
            title,
            notes: failed_notes(&rows),
            frame: string_frame(&header, &rows)?,
            align: align(2, header.len() - 2),
        });
    }
    Ok(out)
}

/// Bastings et al. Tables 10–11: every method config of one model, precision
/// and rank side by side.
pub fn full_matrices(cells: &[SeedSummary]) -> PolarsResult<Vec<DisplayTable>> {
    let Some(RankedCells { keys, ranked, models }) = ranked_cells(cells) else { return Ok(Vec::new()) };
    let mut out = Vec::new();
    for (model, architecture) in models {
        let methods = first_appearance(ranked.iter().filter(|s| s.cell.key.model == model).map(|s| s.cell.method));
        let rows: Vec<Vec<Option<String>>> = methods
            .iter()
            .map(|method| {
                let mut row = vec![Some(method.to_string())];
                row.extend(precision_rank_row(cells, &model, *method, &keys));
                row
            })
            .collect();
        let mut header = vec!["method".to_string()];
        header.extend(precision_rank_header(&keys));
        out.push(DisplayTable {
            stem: format!("bastings_full_{}", super::file_safe(&model)),
            title: format!(
                "Precision (P) and mean rank (R) of every method config for {model} ({}), as Bastings et al. Tables 10–11",
                architecture.label()
            ),
            notes: failed_notes(&rows),
            frame: string_frame(&header, &rows)?,
            align: align(1, header.len() - 1),
        });
    }
    Ok(out)
}

pub(super) fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values.fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// Bastings et al. Table 1 with the synthetic accuracies the text reports:
/// per (model, dataset), averaged over shortcuts and seeds.
pub fn source_accuracy_table(rows: &[VerificationRow]) -> PolarsResult<Option<DisplayTable>> {
    // A label reassignment removes the original task on purpose: its drop
    // would swamp the shortcut's.
    let rows: Vec<&VerificationRow> = rows.iter().filter(|r| is_inserted(r.key.shortcut)).collect();
    if rows.is_empty() {
        return Ok(None);
    }
    let groups =
        first_appearance(rows.iter().map(|r| (r.key.model.clone(), r.key.architecture, r.key.dataset.clone())));
    let pct = |v: Option<f64>| v.map(|v| format_fixed(v * 100.0, 1));
    let table: Vec<Vec<Option<String>>> = groups
        .iter()
        .map(|(model, architecture, dataset)| {
            let of: Vec<&VerificationRow> =
                rows.iter().copied().filter(|r| &r.key.model == model && &r.key.dataset == dataset).collect();
            let drop = mean(
                of.iter()
                    .map(|r| r.verification.original_model_on_original - r.verification.shortcut_model_on_original),
            );
            let min_synthetic =
                of.iter().map(|r| r.verification.shortcut_model_on_synthetic).fold(f64::INFINITY, f64::min);
            vec![
                Some(model.clone()),
                Some(architecture.label().to_string()),
                Some(dataset.clone()),
                pct(mean(of.iter().map(|r| r.verification.original_model_on_original))),
                pct(drop),
                pct(Some(min_synthetic)),
                pct(mean(of.iter().map(|r| r.verification.shortcut_model_on_synthetic))),
                pct(mean(of.iter().map(|r| r.verification.original_model_on_synthetic))),
            ]
        })
        .collect();
    let header: Vec<String> = [
        "model",
        "architecture",
        "dataset",
        "original test accuracy %",
        "mean drop with shortcut (points)",
        "min synthetic accuracy %",
        "mean synthetic accuracy %",
        "original model on synthetic %",
    ]
    .map(String::from)
    .to_vec();
    Ok(Some(DisplayTable {
        stem: "bastings_table1".into(),
        title: "Source accuracy, drop with the shortcut and synthetic accuracies (Bastings et al. Table 1 and §3)"
            .into(),
        notes: vec!["Averaged over the shortcut types and seeds of each model and dataset.".into()],
        frame: string_frame(&header, &table)?,
        align: align(3, 5),
    }))
}

/// Zhao & Aletras Table 1: each natural model's accuracy and macro-F1 on its
/// dataset's test set, as mean ± sd over seeds.
pub fn natural_model_table(rows: &[super::EvaluationRow]) -> PolarsResult<Option<DisplayTable>> {
    if rows.is_empty() {
        return Ok(None);
    }
    let groups = first_appearance(rows.iter().map(|r| (r.model.clone(), r.architecture, r.dataset.clone())));
    let pct = |values: Vec<f64>| {
        crate::tables::mean_and_sd(&values).map(|(m, sd)| match sd {
            Some(sd) => format!("{} ± {}", format_fixed(m * 100.0, 1), format_fixed(sd * 100.0, 1)),
            None => format_fixed(m * 100.0, 1),
        })
    };
    let table: Vec<Vec<Option<String>>> = groups
        .iter()
        .map(|(model, architecture, dataset)| {
            let of: Vec<&super::EvaluationRow> =
                rows.iter().filter(|r| &r.model == model && &r.dataset == dataset).collect();
            vec![
                Some(model.clone()),
                Some(architecture.label().to_string()),
                Some(dataset.clone()),
                Some(of.len().to_string()),
                Some(of[0].examples.to_string()),
                pct(of.iter().map(|r| r.accuracy).collect()),
                pct(of.iter().map(|r| r.macro_f1).collect()),
            ]
        })
        .collect();
    let header: Vec<String> =
        ["model", "architecture", "dataset", "seeds", "test examples", "accuracy %", "macro-F1 %"]
            .map(String::from)
            .to_vec();
    Ok(Some(DisplayTable {
        stem: "zhao_table1".into(),
        title: "The natural models on their test sets (Zhao & Aletras Table 1)".into(),
        notes: vec![
            "Mean ± standard deviation over seeds; macro-F1 averages the classes' F1 as scikit-learn does.".into(),
        ],
        frame: string_frame(&header, &table)?,
        align: align(3, 4),
    }))
}

/// Zhao & Aletras Tables 2, 3 and 6: diagnosticity of each erasure metric, by
/// method, by `dataset:shortcut`, and both, one set per model.
pub fn diagnosticity_tables(cells: &[SeedSummary]) -> PolarsResult<Vec<DisplayTable>> {
    let diag: Vec<&SeedSummary> = cells.iter().filter(|s| matches!(s.cell.metric, Metric::Diagnosticity(_))).collect();
    let metrics: Vec<ErasureMetric> = ErasureMetric::ALL
        .into_iter()
        .filter(|m| diag.iter().any(|s| s.cell.metric == Metric::Diagnosticity(*m)))
        .collect();
    if metrics.is_empty() {
        return Ok(Vec::new());
    }
    let models = first_appearance(diag.iter().map(|s| (s.cell.key.model.clone(), s.cell.key.architecture)));
    let header_tail: Vec<String> = metrics.iter().map(|m| m.title().to_string()).collect();
    let value = |of: &dyn Fn(&SeedSummary) -> bool, m: ErasureMetric| {
        mean(diag.iter().filter(|s| s.cell.metric == Metric::Diagnosticity(m) && of(s)).map(|s| s.cell.value))
            .map(|v| format_fixed(v, 3))
    };
    let mut out = Vec::new();
    for (model, architecture) in models {
        let of_model: Vec<&&SeedSummary> = diag.iter().filter(|s| s.cell.key.model == model).collect();
        let methods = first_appearance(of_model.iter().map(|s| s.cell.method));
        let keys = first_appearance(of_model.iter().map(|s| column_key(&s.cell.key.dataset, s.cell.key.shortcut)));
        let arch = architecture.label();
        let safe = super::file_safe(&model);

        let by_method: Vec<Vec<Option<String>>> = methods
            .iter()
            .map(|method| {
                let mut row = vec![Some(method.to_string())];
                row.extend(
                    metrics.iter().map(|&m| value(&|s| s.cell.key.model == model && &s.cell.method == method, m)),
                );
                row
            })
            .collect();
        let by_key: Vec<Vec<Option<String>>> = keys
            .iter()
            .map(|key| {
                let mut row = vec![Some(key.clone())];
                row.extend(metrics.iter().map(|&m| {
                    value(
                        &|s| s.cell.key.model == model && &column_key(&s.cell.key.dataset, s.cell.key.shortcut) == key,
                        m,
                    )
                }));
                row
            })
            .collect();
        let detailed: Vec<Vec<Option<String>>> = keys
            .iter()
            .flat_map(|key| methods.iter().map(move |method| (key, method)))
            .map(|(key, method)| {
                let mut row = vec![Some(key.clone()), Some(method.to_string())];
                row.extend(metrics.iter().map(|&m| {
                    value(
                        &|s| {
                            s.cell.key.model == model
                                && &s.cell.method == method
                                && &column_key(&s.cell.key.dataset, s.cell.key.shortcut) == key
                        },
                        m,
                    )
                }));
                row
            })
            .filter(|row| row[2..].iter().any(Option::is_some))
            .collect();

        let note = "Diagnosticity: the share of examples where the method's score beats a random attribution's on the same input (0.5 = no better than random).".to_string();
        let mut header = vec!["method".to_string()];
        header.extend(header_tail.iter().cloned());
        let mut table2_notes = vec![note.clone()];
        table2_notes.extend(soft_vs_hard_notes(&of_model));
        out.push(DisplayTable {
            stem: format!("zhao_table2_{safe}"),
            title: format!("Diagnosticity by attribution method for {model} ({arch}), as Zhao & Aletras Table 2"),
            notes: table2_notes,
            frame: string_frame(&header, &by_method)?,
            align: align(1, metrics.len()),
        });
        header[0] = "dataset:shortcut".into();
        out.push(DisplayTable {
            stem: format!("zhao_table3_{safe}"),
            title: format!(
                "Diagnosticity by dataset for {model} ({arch}), mean over methods, as Zhao & Aletras Table 3"
            ),
            notes: vec![note.clone()],
            frame: string_frame(&header, &by_key)?,
            align: align(1, metrics.len()),
        });
        let mut header = vec!["dataset:shortcut".to_string(), "method".to_string()];
        header.extend(header_tail.iter().cloned());
        out.push(DisplayTable {
            stem: format!("zhao_table6_{safe}"),
            title: format!("Diagnosticity per dataset and method for {model} ({arch}), as Zhao & Aletras Table 6"),
            notes: vec![note],
            frame: string_frame(&header, &detailed)?,
            align: align(2, metrics.len()),
        });
    }
    Ok(out)
}

/// Zhao & Aletras §5: is soft erasure more diagnostic than hard erasure?
/// For Soft-NS against NS and Soft-NC against NC, over the (method,
/// `dataset:shortcut`) cells that have both: the means and a Wilcoxon
/// signed-rank test on the pairs (the paper reports soft higher, p < .01).
fn soft_vs_hard_notes(diag: &[&&SeedSummary]) -> Vec<String> {
    use grid_methods::metrics::wilcoxon::signed_rank;
    let value = |method: Method, key: &str, m: ErasureMetric| {
        diag.iter()
            .find(|s| {
                s.cell.method == method
                    && column_key(&s.cell.key.dataset, s.cell.key.shortcut) == key
                    && s.cell.metric == Metric::Diagnosticity(m)
            })
            .map(|s| s.cell.value)
    };
    let sites =
        first_appearance(diag.iter().map(|s| (s.cell.method, column_key(&s.cell.key.dataset, s.cell.key.shortcut))));
    let mut notes = Vec::new();
    for (soft, hard) in [(ErasureMetric::SoftNs, ErasureMetric::Ns), (ErasureMetric::SoftNc, ErasureMetric::Nc)] {
        let pairs: Vec<(f64, f64)> = sites
            .iter()
            .filter_map(|(method, key)| Some((value(*method, key, soft)?, value(*method, key, hard)?)))
            .collect();
        if pairs.is_empty() {
            continue;
        }
        let n = pairs.len() as f64;
        let (mean_soft, mean_hard) =
            (pairs.iter().map(|p| p.0).sum::<f64>() / n, pairs.iter().map(|p| p.1).sum::<f64>() / n);
        let test = match signed_rank(&pairs) {
            Some(t) => format!(
                "Wilcoxon signed-rank W = {}, p = {} ({} non-zero differences)",
                format_fixed(t.statistic(), 1),
                if t.p_value < 1e-3 { format!("{:.1e}", t.p_value) } else { format_fixed(t.p_value, 3) },
                t.n
            ),
            None => "no cell differs, so no test".into(),
        };
        notes.push(format!(
            "{} vs {} over {} (method, dataset:shortcut) cells: mean {} vs {}; {test}.",
            soft.title(),
            hard.title(),
            pairs.len(),
            format_fixed(mean_soft, 3),
            format_fixed(mean_hard, 3)
        ));
    }
    notes
}

/// `0.05` → `5%`.
fn percent(ratio: f64) -> String {
    format!("{}%", (ratio * 1e5).round() / 1e3)
}

/// Zhao & Aletras's hard erasure at every rationale ratio and its AOPC: per
/// model, rows = (`dataset:shortcut`, method), columns = NS at each ratio, NS
/// AOPC, then the same for NC; and the same layout for the diagnosticity of
/// NS and NC (their Figure 3).
pub fn erasure_by_ratio_tables(cells: &[SeedSummary]) -> PolarsResult<Vec<DisplayTable>> {
    let mut out = by_ratio_tables(
        cells,
        [Metric::Erasure(ErasureMetric::Ns), Metric::Erasure(ErasureMetric::Nc)],
        "zhao_erasure",
        "Normalised sufficiency (NS) and comprehensiveness (NC) at each rationale length, and their AOPC",
        "Rationale = the top ⌈ρ·d⌉ tokens by salience; the rest (NS) or the rationale (NC) replaced by [PAD] in place. Higher is better; NC is not clipped.",
    )?;
    out.extend(by_ratio_tables(
        cells,
        [Metric::Diagnosticity(ErasureMetric::Ns), Metric::Diagnosticity(ErasureMetric::Nc)],
        "zhao_diag_by_ratio",
        "Diagnosticity of NS and NC at each rationale length (Zhao & Aletras Figure 3), and over their AOPC",
        "The share of examples where the method's NS (NC) at that rationale length beats a random attribution's on the same input (0.5 = no better than random).",
    )?);
    Ok(out)
}

/// Per model: rows = (`dataset:shortcut`, method), columns = the first
/// metric's value at each rationale ratio and over all of them, then the
/// second's.
fn by_ratio_tables(
    cells: &[SeedSummary],
    metrics: [Metric; 2],
    stem: &str,
    title: &str,
    note: &str,
) -> PolarsResult<Vec<DisplayTable>> {
    let hard: Vec<&SeedSummary> =
        cells.iter().filter(|s| metrics.contains(&s.cell.metric) && !s.cell.by_ratio.is_empty()).collect();
    let models = first_appearance(hard.iter().map(|s| (s.cell.key.model.clone(), s.cell.key.architecture)));
    let mut out = Vec::new();
    for (model, architecture) in models {
        let of_model: Vec<&&SeedSummary> = hard.iter().filter(|s| s.cell.key.model == model).collect();
        let ratios = first_appearance(of_model.iter().flat_map(|s| s.cell.by_ratio.iter().map(|[r, _]| percent(*r))));
        let rows_keys = first_appearance(
            of_model.iter().map(|s| (column_key(&s.cell.key.dataset, s.cell.key.shortcut), s.cell.method)),
        );
        let mut header = vec!["dataset:shortcut".to_string(), "method".to_string()];
        for metric in ["NS", "NC"] {
            header.extend(ratios.iter().map(|r| format!("{metric} {r}")));
            header.push(format!("{metric} AOPC"));
        }
        let rows: Vec<Vec<Option<String>>> = rows_keys
            .iter()
            .map(|(key, method)| {
                let mut row = vec![Some(key.clone()), Some(method.to_string())];
                for metric in metrics {
                    let cell = of_model.iter().find(|s| {
                        s.cell.metric == metric
                            && &s.cell.method == method
                            && &column_key(&s.cell.key.dataset, s.cell.key.shortcut) == key
                    });
                    row.extend(ratios.iter().map(|r| {
                        cell.and_then(|c| c.cell.by_ratio.iter().find(|[x, _]| &percent(*x) == r))
                            .map(|[_, v]| format_fixed(*v, 3))
                    }));
                    row.push(cell.map(|c| shown(c)));
                }
                row
            })
            .collect();
        out.push(DisplayTable {
            stem: format!("{stem}_{}", super::file_safe(&model)),
            title: format!("{title}, for {model} ({})", architecture.label()),
            notes: vec![note.into()],
            frame: string_frame(&header, &rows)?,
            align: align(2, header.len() - 2),
        });
    }
    Ok(out)
}

/// One recommendation: the best config for a (model, dataset, shortcut) and
/// the configs whose difference from it is not significant.
#[derive(Debug, Clone, PartialEq)]
pub struct Recommendation {
    pub model: String,
    pub architecture: Architecture,
    pub dataset: String,
    pub shortcut: Regime,
    pub best: String,
    pub precision: f64,
    pub interval: Option<[f64; 2]>,
    pub tied: Vec<String>,
    pub verified: bool,
}

/// Per (model, dataset, shortcut): the config with the highest precision
/// (ties broken by the lower mean rank, then grid order), and every config
/// statistically tied with it: the paired-bootstrap 95% interval of the
/// per-example difference contains 0 (the configs explained the same
/// examples), or, without per-example values, the two intervals overlap.
/// `random` is never recommended.
pub fn recommendations(cells: &[SeedSummary]) -> Vec<Recommendation> {
    let precision: Vec<&SeedSummary> =
        cells.iter().filter(|s| s.cell.metric == Metric::Precision && s.cell.method != Method::Random).collect();
    let groups =
        first_appearance(precision.iter().map(|s| {
            (s.cell.key.model.clone(), s.cell.key.architecture, s.cell.key.dataset.clone(), s.cell.key.shortcut)
        }));
    let rank_of = |s: &SeedSummary| {
        let c = &s.cell;
        find(cells, &c.key.model, c.method, Metric::Rank, &column_key(&c.key.dataset, c.key.shortcut))
            .map(|r| r.cell.value)
            .unwrap_or(f64::INFINITY)
    };
    let bootstrap = Bootstrap::default();
    groups
        .into_iter()
        .filter_map(|(model, architecture, dataset, shortcut)| {
            let candidates: Vec<&&SeedSummary> = precision
                .iter()
                .filter(|s| {
                    s.cell.key.model == model && s.cell.key.dataset == dataset && s.cell.key.shortcut == shortcut
                })
                .filter(|s| s.cell.value.is_finite())
                .collect();
            let best = candidates.iter().copied().fold(None::<&&SeedSummary>, |best, s| match best {
                Some(b) if (b.cell.value, -rank_of(b)) >= (s.cell.value, -rank_of(s)) => Some(b),
                _ => Some(s),
            })?;
            let tied = candidates
                .iter()
                .filter(|s| s.cell.method != best.cell.method)
                .filter(|s| match bootstrap.paired_difference(&best.cell.values, &s.cell.values) {
                    Some([lo, hi]) if !best.cell.values.is_empty() => lo <= 0.0 && 0.0 <= hi,
                    _ => match (best.cell.ci_low, s.cell.ci_high) {
                        (Some(lo), Some(hi)) => hi >= lo,
                        _ => false,
                    },
                })
                .map(|s| s.cell.method.to_string())
                .collect();
            Some(Recommendation {
                model,
                architecture,
                dataset,
                shortcut,
                best: best.cell.method.to_string(),
                precision: best.cell.value,
                interval: best.cell.ci_low.zip(best.cell.ci_high).map(|(l, h)| [l, h]),
                tied,
                verified: best.cell.verified,
            })
        })
        .collect()
}

/// The recommendations as a table.
pub fn recommendation_table(recommendations: &[Recommendation]) -> PolarsResult<Option<DisplayTable>> {
    if recommendations.is_empty() {
        return Ok(None);
    }
    let rows: Vec<Vec<Option<String>>> = recommendations
        .iter()
        .map(|r| {
            let mut precision = format_fixed(r.precision, 2);
            if !r.verified {
                precision.push_str(FAILED_MARK);
            }
            vec![
                Some(r.model.clone()),
                Some(r.architecture.label().to_string()),
                Some(r.dataset.clone()),
                Some(r.shortcut.to_string()),
                Some(r.best.clone()),
                Some(precision),
                r.interval.map(|[l, h]| format!("[{}, {}]", format_fixed(l, 2), format_fixed(h, 2))),
                Some(if r.tied.is_empty() { "—".to_string() } else { r.tied.join(", ") }),
            ]
        })
        .collect();
    let header: Vec<String> = [
        "model",
        "architecture",
        "dataset",
        "shortcut",
        "best config",
        "precision",
        "95% interval",
        "statistically tied",
    ]
    .map(String::from)
    .to_vec();
    let mut notes = vec![
        "Best = highest precision@k (ties: lower mean rank). Tied = the paired-bootstrap 95% interval of the per-example difference from the best contains 0.".to_string(),
    ];
    notes.extend(failed_notes(&rows));
    Ok(Some(DisplayTable {
        stem: "recommendation".into(),
        title: "Which method config reveals the shortcut: the best per model, dataset and shortcut".into(),
        notes,
        frame: string_frame(&header, &rows)?,
        align: vec![
            Align::Left,
            Align::Left,
            Align::Left,
            Align::Left,
            Align::Left,
            Align::Right,
            Align::Right,
            Align::Left,
        ],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CellResult;
    use crate::tables::over_seeds;

    fn cell(model: &str, shortcut: &str, method: &str, metric: &str, values: &[f64]) -> CellResult {
        use crate::testing::CellChanges;
        let value = values.iter().sum::<f64>() / values.len() as f64;
        let [lo, hi] = Bootstrap::default().interval(values).unwrap();
        let cell = crate::testing::cell(model, shortcut, method, metric, value).interval(lo, hi).examples(values.len());
        CellResult { values: values.to_vec(), ..cell }
    }

    fn strings(df: &DataFrame, name: &str) -> Vec<Option<String>> {
        df.column(name).unwrap().str().unwrap().iter().map(|v| v.map(String::from)).collect()
    }

    #[test]
    fn families_follow_the_papers_tables() {
        let of = |name: &str| Family::of(name.parse().expect("a method"));
        assert_eq!(of("gxil"), Family::GradientTimesInput);
        assert_eq!(of("gradp-l2"), Family::Gradient);
        assert_eq!(of("igl-mask-100"), Family::IntegratedGradients);
        assert_eq!(of("limeunk-1000"), Family::Lime);
        assert_eq!(of("attn-scaled"), Family::Attention);
        assert_eq!(Family::Lime.stem(), "bastings_table5_lime");
        assert_eq!(Family::Occlusion.stem(), "family_occlusion");
    }

    #[test]
    fn family_table_puts_precision_and_rank_side_by_side() {
        let cells = vec![
            cell("lstm", "st", "gxil", "precision", &[1.0, 1.0]),
            cell("lstm", "st", "gxil", "rank", &[1.0, 1.0]),
            cell("lstm", "tic", "gxil", "precision", &[0.5, 1.0]),
            cell("lstm", "tic", "gxil", "rank", &[3.0, 2.0]),
            cell("lstm", "st", "gradl-l2", "precision", &[0.0, 1.0]),
        ];
        let tables = family_tables(&over_seeds(&cells)).unwrap();
        let stems: Vec<&str> = tables.iter().map(|t| t.stem.as_str()).collect();
        assert_eq!(stems, ["bastings_table2_gxi", "bastings_table3_grad"]);
        let gxi = &tables[0].frame;
        let names: Vec<String> = gxi.get_column_names().iter().map(|s| s.to_string()).collect();
        assert_eq!(names, ["model", "method", "P sst2:st", "P sst2:tic", "R sst2:st", "R sst2:tic"]);
        assert_eq!(strings(gxi, "P sst2:tic"), [Some("0.75".to_string())]);
        assert_eq!(strings(gxi, "R sst2:tic"), [Some("2.5".to_string())]);
        assert_eq!(strings(gxi, "model"), [Some("lstm (LSTM)".to_string())]);
        // gradl-l2 has no rank cell: an empty cell, not a zero.
        assert_eq!(strings(&tables[1].frame, "R sst2:st"), [None]);
    }

    #[test]
    fn full_matrix_per_model() {
        let cells =
            vec![cell("lstm", "st", "gxil", "precision", &[1.0]), cell("bert", "st", "gradl-l2", "precision", &[0.5])];
        let tables = full_matrices(&over_seeds(&cells)).unwrap();
        assert_eq!(tables.len(), 2);
        assert_eq!(tables[1].stem, "bastings_full_bert");
        assert_eq!(strings(&tables[1].frame, "P sst2:st"), [Some("0.50".to_string())]);
    }

    #[test]
    fn recommendation_and_paired_ties() {
        let a: Vec<f64> = (0..100).map(|i| if i % 10 == 0 { 0.0 } else { 1.0 }).collect(); // 0.90
        let b: Vec<f64> = (0..100).map(|i| if i % 10 == 0 || i % 10 == 1 { 0.0 } else { 1.0 }).collect(); // 0.80
        let mut c = a.clone(); // 0.89: one example differs
        c[5] = 0.0;
        let cells = vec![
            cell("lstm", "st", "gxil", "precision", &b),
            cell("lstm", "st", "gradl-l2", "precision", &a),
            cell("lstm", "st", "occlusion-unk", "precision", &c),
            cell("lstm", "st", "random", "precision", &[1.0; 100]),
        ];
        let recs = recommendations(&over_seeds(&cells));
        assert_eq!(recs.len(), 1);
        let r = &recs[0];
        assert_eq!(r.best, "gradl-l2", "random is never recommended");
        assert!((r.precision - 0.9).abs() < 1e-12);
        // gxil loses on 10 examples and never wins: significant. occlusion differs on one.
        assert_eq!(r.tied, ["occlusion-unk"]);
        let table = recommendation_table(&recs).unwrap().unwrap();
        assert_eq!(strings(&table.frame, "statistically tied"), [Some("occlusion-unk".to_string())]);
    }

    #[test]
    fn equal_precision_prefers_lower_rank() {
        let cells = vec![
            cell("lstm", "op", "gxil", "precision", &[1.0, 0.5]),
            cell("lstm", "op", "gxil", "rank", &[2.0, 4.0]),
            cell("lstm", "op", "igl-zero-100", "precision", &[1.0, 0.5]),
            cell("lstm", "op", "igl-zero-100", "rank", &[2.0, 3.0]),
        ];
        assert_eq!(recommendations(&over_seeds(&cells))[0].best, "igl-zero-100");
    }

    #[test]
    fn diagnosticity_tables_average_by_method_and_by_dataset() {
        let cells = vec![
            cell("lstm", "st", "gxil", "diag-ns", &[1.0, 0.0]),  // 0.5
            cell("lstm", "tic", "gxil", "diag-ns", &[1.0, 1.0]), // 1.0
            cell("lstm", "st", "attn", "diag-ns", &[0.0, 0.0]),  // 0.0
            cell("lstm", "st", "gxil", "diag-soft-ns", &[1.0, 1.0]),
        ];
        let tables = diagnosticity_tables(&over_seeds(&cells)).unwrap();
        let stems: Vec<&str> = tables.iter().map(|t| t.stem.as_str()).collect();
        assert_eq!(stems, ["zhao_table2_lstm", "zhao_table3_lstm", "zhao_table6_lstm"]);
        assert_eq!(strings(&tables[0].frame, "NS"), [Some("0.750".to_string()), Some("0.000".to_string())]);
        assert_eq!(strings(&tables[0].frame, "Soft-NS"), [Some("1.000".to_string()), None]);
        assert_eq!(strings(&tables[1].frame, "NS"), [Some("0.250".to_string()), Some("1.000".to_string())]);
        assert_eq!(tables[2].frame.height(), 3, "attn has no tic cell");
        // One (method, dataset:shortcut) cell has both Soft-NS and NS: 1.0 vs 0.5.
        let test = &tables[0].notes[1];
        assert!(
            test.starts_with(
                "Soft-NS vs NS over 1 (method, dataset:shortcut) cells: mean 1.000 vs 0.500; \
             Wilcoxon signed-rank W = 0.0, p = 1.000 (1 non-zero differences)"
            ),
            "{test}"
        );
        assert_eq!(tables[0].notes.len(), 2, "no Soft-NC cell, so no Soft-NC test");
    }

    #[test]
    fn erasure_by_ratio_table() {
        let mut ns = cell("lstm", "st", "gxil", "ns", &[0.5, 0.7]);
        ns.by_ratio = vec![[0.01, 0.4], [0.5, 0.8]];
        let mut nc = cell("lstm", "st", "gxil", "nc", &[0.2, 0.2]);
        nc.by_ratio = vec![[0.01, 0.1], [0.5, 0.3]];
        let tables = erasure_by_ratio_tables(&over_seeds(&[ns, nc])).unwrap();
        assert_eq!(tables.len(), 1);
        let names: Vec<String> = tables[0].frame.get_column_names().iter().map(|s| s.to_string()).collect();
        assert_eq!(names, ["dataset:shortcut", "method", "NS 1%", "NS 50%", "NS AOPC", "NC 1%", "NC 50%", "NC AOPC"]);
        assert_eq!(strings(&tables[0].frame, "NS 50%"), [Some("0.800".to_string())]);
        assert_eq!(strings(&tables[0].frame, "NC AOPC"), [Some("0.200".to_string())]);
        let mut diag = cell("lstm", "st", "gxil", "diag-ns", &[0.6, 0.8]);
        diag.by_ratio = vec![[0.01, 0.55], [0.5, 0.9]];
        let tables = erasure_by_ratio_tables(&over_seeds(&[diag])).unwrap();
        assert_eq!(tables.len(), 1);
        assert_eq!(tables[0].stem, "zhao_diag_by_ratio_lstm");
        assert_eq!(strings(&tables[0].frame, "NS 1%"), [Some("0.550".to_string())]);
        assert_eq!(strings(&tables[0].frame, "NC 50%"), [None], "no diag-nc cell");
        assert_eq!(percent(0.1), "10%");
        assert_eq!(percent(0.125), "12.5%");
    }

    #[test]
    fn table1_from_verification() {
        let row = |shortcut: &str, shortcut_on_original: f64| VerificationRow {
            key: crate::CellKey {
                model: "lstm".into(),
                architecture: grid_core::model::Architecture::Bilstm,
                dataset: "sst2".into(),
                shortcut: shortcut.parse().unwrap(),
                seed: 1,
            },
            verification: grid_methods::shortcut::verification::Verification {
                shortcut_model_on_synthetic: if shortcut == "st" { 1.0 } else { 0.98 },
                original_model_on_synthetic: 0.5,
                shortcut_model_on_flip: 1.0,
                shortcut_model_on_original: shortcut_on_original,
                original_model_on_original: 0.88,
                shortcut_model_macro_f1: None,
                original_model_macro_f1: None,
                accuracy_without_shortcut: None,
                passed: true,
                close_calls: Vec::new(),
                failures: vec![],
                synthetic_examples: 0,
                synthetic_truncated: 0,
                original_examples: 0,
                shortcut_model_on_synthetic_interval: None,
                original_drop_interval: None,
            },
            min_synthetic_accuracy: None,
            max_original_drop: None,
        };
        let t = source_accuracy_table(&[row("st", 0.87), row("tic", 0.86)]).unwrap().unwrap();
        assert_eq!(strings(&t.frame, "original test accuracy %"), [Some("88.0".to_string())]);
        assert_eq!(strings(&t.frame, "mean drop with shortcut (points)"), [Some("1.5".to_string())]);
        assert_eq!(strings(&t.frame, "min synthetic accuracy %"), [Some("98.0".to_string())]);
        assert_eq!(strings(&t.frame, "mean synthetic accuracy %"), [Some("99.0".to_string())]);
    }
}
