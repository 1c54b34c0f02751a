//! A comparison as polars frames and as Markdown.

use super::published::PublishedKind;
use super::{ComparedCell, Comparison};
use crate::markdown;
use crate::markdown::Align;
use crate::tables::format_fixed;
use polars::prelude::{Column, DataFrame, PolarsResult};

// ---------------------------------------------------------------------------
// Frames and markdown
// ---------------------------------------------------------------------------

/// `value` with an explicit sign (`+0.05`, `-1.2`, `0.00`).
pub(super) fn signed(value: f64, decimals: usize) -> String {
    let s = format_fixed(value, decimals);
    if s.starts_with('-') || s.chars().all(|c| c == '0' || c == '.') { s } else { format!("+{s}") }
}

pub(super) const COLUMNS: [&str; 16] = [
    "model",
    "architecture",
    "dataset",
    "published_dataset",
    "shortcut",
    "method",
    "published_method",
    "metric",
    "runs",
    "ours",
    "ci_low",
    "ci_high",
    "published",
    "difference",
    "within_interval",
    "verified",
];

/// Appended to [`COLUMNS`] for Zhou et al. (percent).
pub(super) const ATTR_COLUMNS: [&str; 3] = ["published_sd", "region_share", "published_frequency"];

/// The table's columns for a kind.
pub(super) fn columns(kind: PublishedKind) -> Vec<&'static str> {
    let mut out = COLUMNS.to_vec();
    if kind == PublishedKind::ZhouAttr {
        out.extend(ATTR_COLUMNS);
    }
    out
}

/// The numbers of [`ATTR_COLUMNS`], in order.
pub(super) const ATTR_VALUES: [fn(&ComparedCell) -> Option<f64>; 3] =
    [|c| c.published_sd, |c| c.share, |c| c.published_share];

/// The identifying columns, the first eight of [`COLUMNS`].
pub(super) fn key_columns(cells: &[ComparedCell]) -> Vec<Column> {
    let strings = |f: fn(&ComparedCell) -> &str| -> Vec<&str> { cells.iter().map(f).collect() };
    let optional = |f: fn(&ComparedCell) -> Option<&str>| -> Vec<Option<&str>> { cells.iter().map(f).collect() };
    vec![
        Column::new("model".into(), strings(|c| &c.model)),
        Column::new("architecture".into(), strings(|c| c.architecture.name())),
        Column::new("dataset".into(), strings(|c| &c.dataset)),
        Column::new("published_dataset".into(), strings(|c| &c.published_dataset)),
        Column::new("shortcut".into(), cells.iter().map(|c| c.shortcut.to_string()).collect::<Vec<_>>()),
        Column::new("method".into(), cells.iter().map(|c| c.method.map(|m| m.to_string())).collect::<Vec<_>>()),
        Column::new("published_method".into(), optional(|c| c.published_method.as_deref())),
        Column::new("metric".into(), strings(|c| c.metric.name())),
    ]
}

/// The cells as a typed frame (numbers unrounded), in [`columns`] order.
pub(super) fn cells_frame(kind: PublishedKind, cells: &[ComparedCell]) -> PolarsResult<DataFrame> {
    let numbers = |f: fn(&ComparedCell) -> f64| -> Vec<f64> { cells.iter().map(f).collect() };
    let bounds = |f: fn(&ComparedCell) -> Option<f64>| -> Vec<Option<f64>> { cells.iter().map(f).collect() };
    let mut columns = key_columns(cells);
    columns.extend([
        Column::new("runs".into(), cells.iter().map(|c| c.runs).collect::<Vec<u32>>()),
        Column::new("ours".into(), numbers(|c| c.ours)),
        Column::new("ci_low".into(), bounds(|c| c.ci_low)),
        Column::new("ci_high".into(), bounds(|c| c.ci_high)),
        Column::new("published".into(), numbers(|c| c.published)),
        Column::new("difference".into(), numbers(ComparedCell::difference)),
        Column::new("within_interval".into(), cells.iter().map(ComparedCell::within_interval).collect::<Vec<_>>()),
        Column::new("verified".into(), cells.iter().map(|c| c.verified).collect::<Vec<bool>>()),
    ]);
    if kind == PublishedKind::ZhouAttr {
        columns.extend(
            ATTR_COLUMNS
                .iter()
                .zip(ATTR_VALUES)
                .map(|(name, f)| Column::new((*name).into(), cells.iter().map(f).collect::<Vec<Option<f64>>>())),
        );
    }
    DataFrame::new(cells.len(), columns)
}

/// The same columns with numbers formatted per metric (`ComparedMetric::decimals`), for markdown.
pub(super) fn display_frame(kind: PublishedKind, cells: &[ComparedCell]) -> PolarsResult<DataFrame> {
    let fixed = |f: fn(&ComparedCell) -> Option<f64>| -> Vec<Option<String>> {
        cells.iter().map(|c| f(c).map(|v| format_fixed(v, c.metric.decimals()))).collect()
    };
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    let mut columns = key_columns(cells);
    columns.extend([
        Column::new("runs".into(), cells.iter().map(|c| c.runs.to_string()).collect::<Vec<_>>()),
        Column::new("ours".into(), fixed(|c| Some(c.ours))),
        Column::new("ci_low".into(), fixed(|c| c.ci_low)),
        Column::new("ci_high".into(), fixed(|c| c.ci_high)),
        Column::new("published".into(), fixed(|c| Some(c.published))),
        Column::new(
            "difference".into(),
            cells.iter().map(|c| signed(c.difference(), c.metric.decimals())).collect::<Vec<_>>(),
        ),
        Column::new(
            "within_interval".into(),
            cells.iter().map(|c| c.within_interval().map(yes_no)).collect::<Vec<_>>(),
        ),
        Column::new("verified".into(), cells.iter().map(|c| yes_no(c.verified)).collect::<Vec<_>>()),
    ]);
    if kind == PublishedKind::ZhouAttr {
        columns.extend(ATTR_COLUMNS.iter().zip(ATTR_VALUES).map(|(name, f)| {
            Column::new((*name).into(), cells.iter().map(|c| f(c).map(|v| format_fixed(v, 1))).collect::<Vec<_>>())
        }));
    }
    DataFrame::new(cells.len(), columns)
}

/// A finding's mark: ✓ holds, ✗ does not, ? undecided.
pub fn mark(holds: Option<bool>) -> &'static str {
    match holds {
        Some(true) => "✓",
        Some(false) => "✗",
        None => "?",
    }
}

/// `## Compared with <source>`: what was compared, summary lines, the findings
/// (✓ holds, ✗ does not, ? cannot tell), then the cell table.
pub fn render_markdown(c: &Comparison) -> String {
    let mut out = format!("## Compared with {}\n\n", c.source);
    if c.source != c.kind.to_string() {
        out.push_str(&format!("{}\n\n", c.kind));
    }
    for line in &c.summary {
        out.push_str(&format!("- {line}\n"));
    }
    out.push_str("\n### Findings\n\n");
    if c.findings.is_empty() {
        out.push_str("(no finding could be checked: no cell of ours matches a published number)\n");
    }
    for f in &c.findings {
        out.push_str(&format!("- {} {} — {}\n", mark(f.holds), f.statement, f.evidence));
    }
    out.push_str("\n### Cells\n\n");
    if c.kind == PublishedKind::ZhouRationale {
        out.push_str(
            "(the paper plots its numbers: the findings above are the comparison; ours are in `zhou_rationale`)\n",
        );
        return out;
    }
    if c.kind == PublishedKind::ZhouImages {
        out.push_str(
            "(the paper plots its numbers: the findings above are the comparison; ours are in `zhou_images_attr`)\n",
        );
        return out;
    }
    if c.cells.is_empty() {
        out.push_str("(no cell of ours matches a published number)\n");
        return out;
    }
    // Names left, numbers right; `within_interval` and `verified` left.
    let align: Vec<Align> =
        columns(c.kind).iter().map(|name| if is_number_column(name) { Align::Right } else { Align::Left }).collect();
    match display_frame(c.kind, &c.cells).and_then(|df| markdown::table(&df, &align)) {
        Ok(table) => out.push_str(&table),
        Err(e) => out.push_str(&format!("(the cell table could not be rendered: {e})\n")),
    }
    out
}

pub(super) fn is_number_column(name: &str) -> bool {
    matches!(name, "runs" | "ours" | "ci_low" | "ci_high" | "published" | "difference") || ATTR_COLUMNS.contains(&name)
}
