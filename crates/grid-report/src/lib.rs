//! Result tables: the last step of the pipeline, and the only module that renders.
//!
//! Input: one [`CellResult`] per (model, dataset, shortcut, method, metric) and one
//! [`VerificationRow`] per (model, dataset, shortcut). [`write_reports`] builds
//! polars frames from them ([`tables`]) and writes, into one directory:
//!
//! | file | formats | content |
//! |---|---|---|
//! | `results_long.{csv,parquet}` | csv, parquet | every cell, every field, input order |
//! | `verification.{csv,parquet}` | csv, parquet | one row per verification; accuracies as fractions 0..1, `failures` and `close_calls` joined with `"; "` |
//! | `verification.md` | markdown | the same, accuracies as percentages with one decimal |
//! | `verification_seeds.{csv,md,tex}` | csv, markdown, latex | with several seeds: per shortcut model, how many passed and the worst margin to a bar ([`seed_spread`]) |
//! | `<model>_<metric>.{csv,md}` | csv, markdown | Bastings et al. Tables 6/7: rows = methods, columns = `dataset:shortcut`; precision 2 decimals, rank 1 (others 3) |
//! | `zhou_rationale.{csv,md}` | csv, markdown | Zhou et al. §7: one row per rationale model ([`rationale`]) |
//! | `zhou_images_attr.{csv,md,tex}` | csv, markdown, latex | Zhou et al. Figure 3 as numbers: method × image manipulation ([`images`]) |
//!
//! In the layouts a number whose model failed verification carries a trailing
//! `" †"` (so the layout CSV has string cells), and the markdown gets the footnote
//! [`tables::FAILED_FOOTNOTE`]. Layouts are presentation, so they have no Parquet
//! form; `results_long.parquet` holds the same numbers unrounded.
//!
//! Order is first appearance in the input everywhere, and nothing depends on hash
//! order or the clock: the same input gives byte-identical files. Each file is
//! written to a temporary file in `dir` and renamed into place, so a reader never
//! sees half a table. Model and metric names are made file-safe (anything but
//! ASCII letters, digits, `.`, `-`, `_` becomes `_`); two tables that would land on
//! one file name are an error rather than a silent overwrite.

pub mod compare;
pub mod finding;
pub mod html;
pub mod images;
pub mod latex;
pub mod map_sheets;
pub mod markdown;
pub mod paper;
pub mod plots;
pub mod rationale;
pub mod seed_spread;
pub mod tables;
pub mod zhou;

#[cfg(test)]
mod testing;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use polars::prelude::*;
use serde::{Deserialize, Serialize};

// The layers below are named by their crates (`grid_core::model`,
// `grid_methods::metrics`), never through an alias.

use grid_core::model::Architecture;
use grid_methods::metrics::Metric;
use grid_methods::salience::Method;
use grid_methods::shortcut::Regime;
use grid_methods::shortcut::verification::Verification;
use markdown::Align;
use tables::Layout;

/// The trained model a result belongs to — one grid model on one dataset and
/// regime, at one training seed: the coordinates every result row shares.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct CellKey {
    /// The grid's model name, e.g. "lstm".
    pub model: String,
    pub architecture: Architecture,
    /// e.g. "sst2".
    pub dataset: String,
    /// The regime, written by its name: `st`, `tic`, `op`, `articles`,
    /// `articles-cn`, `articles-nc` or `natural`.
    pub shortcut: Regime,
    /// The training seed (`seeds = [..]` trains one model per seed).
    pub seed: u64,
}

/// One (model, dataset, shortcut, method, metric) cell: an aggregate over the
/// attributed examples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    /// The trained model the cell measures.
    #[serde(flatten)]
    pub key: CellKey,
    /// The salience method config (written by its canonical name, e.g. `gradl-l1`).
    pub method: Method,
    /// The metric (written by its name: `precision`, `diag-soft-ns`, …).
    pub metric: Metric,
    /// Mean over examples; NaN where no example defines the metric.
    #[serde(deserialize_with = "nan_when_null")]
    pub value: f64,
    /// Percentile-bootstrap 95% interval of the mean, when the score has one.
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub n_examples: usize,
    /// The cell's model passed verification.
    pub verified: bool,
    /// Per-example values in the attribution's order, for paired comparisons
    /// between cells on the same examples and for the interval of a mean over
    /// seeds; not written to the tables, kept in `report_data.json` so that
    /// `grid report --compare` merges seeds as the tables do.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<f64>,
    /// NS / NC: `[ratio, mean]` per rationale ratio; empty for other metrics.
    #[serde(default)]
    pub by_ratio: Vec<[f64; 2]>,
    /// Attr%: the region's mean share of the ranked tokens, what spreading
    /// salience evenly would score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub region_share: Option<f64>,
    /// A rationale metric's cell (`sel-*`): the model's selector and target
    /// rate, the dataset-wide value and the optimal lines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<RationaleResult>,
}

/// Reads a number that may be `null`, as NaN: JSON has no NaN, and
/// serde_json writes one as `null`.
pub fn nan_when_null<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NAN))
}

/// [`CellResult::rationale`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RationaleResult {
    pub setting: grid_core::model::rationale::RationaleSetting,
    /// The ratio of sums over the examples (Zhou et al.'s dataset-wide value).
    pub pooled: Option<f64>,
    /// The realised selection rate, pooled.
    pub rate: Option<f64>,
    /// The best precision and recall any selection reaches at that rate.
    pub optimal: Option<grid_methods::metrics::rationale::Optimal>,
    /// The same over a range of rates (the figures' green curves).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub optimal_curve: Vec<(f64, grid_methods::metrics::rationale::Optimal)>,
}

/// A table ready for any renderer (Markdown, LaTeX, HTML): string columns, the
/// numbers already formatted.
#[derive(Debug, Clone)]
pub struct DisplayTable {
    /// File stem, e.g. `bastings_table2_gxi`; also the HTML anchor.
    pub stem: String,
    pub title: String,
    pub frame: DataFrame,
    /// Per column; columns past the end are left-aligned.
    pub align: Vec<Align>,
    /// Footnotes, rendered under the table.
    pub notes: Vec<String>,
}

/// A chart, written as `<stem>.svg` and `<stem>.png`; the SVG text is kept for
/// inlining into the HTML report.
#[derive(Debug, Clone)]
pub struct Plot {
    pub stem: String,
    pub title: String,
    pub svg: String,
}

/// A natural model on its dataset's own test set (Zhao & Aletras Table 1):
/// fractions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvaluationRow {
    pub model: String,
    pub architecture: Architecture,
    pub dataset: String,
    pub seed: u64,
    pub examples: usize,
    pub accuracy: f64,
    pub macro_f1: f64,
}

/// The verification of one shortcut model (PROTOCOL §1) in a report: which
/// model it is, what the verify step wrote, and the thresholds it was judged
/// against. Accuracies are fractions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VerificationRow {
    /// The shortcut model (and its original model, same seed).
    #[serde(flatten)]
    pub key: CellKey,
    #[serde(flatten)]
    pub verification: Verification,
    /// The synthetic-accuracy threshold the row was judged against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_synthetic_accuracy: Option<f64>,
    /// The largest loss on the original test set the row was allowed
    /// (inserted rules; a label reassignment is not judged by it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_original_drop: Option<f64>,
}

/// Which files [`write_reports`] writes (see the module table).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReportFormat {
    Csv,
    Markdown,
    Parquet,
    /// Every display table as a booktabs `.tex` file.
    Latex,
    /// Charts as SVG and PNG.
    Plots,
    /// `report.html`: one self-contained page with tables, charts and examples.
    Html,
}

impl ReportFormat {
    pub const ALL: [ReportFormat; 6] = [
        ReportFormat::Csv,
        ReportFormat::Markdown,
        ReportFormat::Parquet,
        ReportFormat::Latex,
        ReportFormat::Plots,
        ReportFormat::Html,
    ];
}

/// Pairwise agreement of the methods of one model cell.
#[derive(Debug, Clone, PartialEq)]
pub struct AgreementResult {
    /// The model whose methods are compared.
    pub key: CellKey,
    pub methods: Vec<Method>,
    pub top_k: usize,
    pub examples: usize,
    /// Square, in `methods` order; NaN where undefined.
    pub overlap: Vec<Vec<f64>>,
    pub spearman: Vec<Vec<f64>>,
}

/// Everything a report shows.
#[derive(Debug, Clone, Copy)]
pub struct ReportInput<'a> {
    /// The grid's name, the HTML page's title.
    pub title: &'a str,
    pub cells: &'a [CellResult],
    pub verification: &'a [VerificationRow],
    /// A natural grid's models on their test sets.
    pub evaluations: &'a [EvaluationRow],
    pub agreements: &'a [AgreementResult],
    pub examples: &'a [html::ExampleView],
    /// Zhou et al.'s image protocol: Attr% per model, method and class.
    pub images: &'a [images::ImageAttrRow],
    /// And a few test images per trained model with every method's map.
    pub image_maps: &'a [map_sheets::MapSheet],
}

/// What [`write_reports`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenReport {
    /// Every file written, in writing order.
    pub files: Vec<PathBuf>,
    /// The verification table and every layout as markdown, for stdout. Produced
    /// whatever `formats` says.
    pub console: String,
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Building or writing a frame failed; `what` names the table or file.
    #[error("{what}: {source}")]
    Polars {
        what: String,
        #[source]
        source: PolarsError,
    },
    #[error(
        "two result cells for model `{model}`, dataset `{dataset}`, shortcut `{shortcut}`, method `{method}`, metric `{metric}`"
    )]
    DuplicateCell { model: String, dataset: String, shortcut: Regime, method: String, metric: String },
    #[error("two verification rows for model `{model}`, dataset `{dataset}`, shortcut `{shortcut}`")]
    DuplicateVerification { model: String, dataset: String, shortcut: Regime },
    #[error("{}: the tables for {first} and {second} would share this file name", path.display())]
    NameCollision { path: PathBuf, first: String, second: String },
}

fn polars_err(what: impl Into<String>) -> impl FnOnce(PolarsError) -> ReportError {
    let what = what.into();
    move |source| ReportError::Polars { what, source }
}

/// [`write_report`] with cells and verification rows only.
pub fn write_reports(
    dir: &Path,
    cells: &[CellResult],
    verification: &[VerificationRow],
    formats: &[ReportFormat],
) -> Result<WrittenReport, ReportError> {
    let input = ReportInput {
        title: "grid",
        cells,
        verification,
        evaluations: &[],
        agreements: &[],
        examples: &[],
        images: &[],
        image_maps: &[],
    };
    write_report(dir, &input, formats)
}

/// Builds every table, writes the files `formats` asks for into `dir` (created if
/// missing), and returns them with the console rendering.
///
/// Empty inputs are fine: the long and verification tables are written with their
/// header and no rows, no layout is written, and the console says so. A natural
/// grid (models evaluated on their own task, nothing planted) has nothing to
/// verify: it gets no verification table, and its console opens with the
/// models' accuracy and macro-F1 (Zhao & Aletras Table 1) instead.
pub fn write_report(dir: &Path, input: &ReportInput, formats: &[ReportFormat]) -> Result<WrittenReport, ReportError> {
    let (cells, verification) = (input.cells, input.verification);
    // An image grid alone has no text model to verify or tabulate.
    let images_only =
        cells.is_empty() && verification.is_empty() && input.evaluations.is_empty() && !input.images.is_empty();
    let plants_shortcuts = !images_only && (!verification.is_empty() || input.evaluations.is_empty());
    tables::check_unique_cells(cells)?;
    tables::check_unique_verification(verification)?;
    let wants = |f: ReportFormat| formats.contains(&f);

    let mut long = tables::long_frame(cells).map_err(polars_err("results_long"))?;
    let mut ver = tables::verification_frame(verification).map_err(polars_err("verification"))?;
    let ver_md = verification_markdown(verification)?;
    let summaries = tables::over_seeds(cells);
    let layouts = tables::layouts(cells).map_err(polars_err("layout tables"))?;
    let layout_tables: Vec<DisplayTable> = layouts.iter().map(layout_table).collect();
    let recommendations = paper::recommendations(&summaries);
    let recommendation = paper::recommendation_table(&recommendations).map_err(polars_err("recommendation"))?;
    let mut paper_tables = paper_tables(cells, &summaries, verification, input.agreements)?;
    paper_tables.extend(paper::natural_model_table(input.evaluations).map_err(polars_err("zhao_table1"))?);
    paper_tables.extend(images::attr_table(input.images).map_err(polars_err("zhou_images_attr"))?);

    // Names first, so a collision is reported before anything is written.
    let mut names = FileNames::default();
    names.claim(dir, "results_long", "the long results table")?;
    if plants_shortcuts {
        names.claim(dir, "verification", "the verification table")?;
    }
    names.claim(dir, "report", "the HTML report")?;
    let display: Vec<&DisplayTable> = recommendation.iter().chain(&paper_tables).chain(&layout_tables).collect();
    for t in &display {
        names.claim(dir, &t.stem, &format!("table `{}`", t.title))?;
    }

    let mut files = Vec::new();
    if !formats.is_empty() {
        std::fs::create_dir_all(dir).map_err(|source| ReportError::Io { path: dir.to_path_buf(), source })?;
    }
    if wants(ReportFormat::Csv) {
        files.push(write_csv(dir, "results_long.csv", &mut long)?);
    }
    if wants(ReportFormat::Parquet) {
        files.push(write_parquet(dir, "results_long.parquet", &mut long)?);
    }
    if plants_shortcuts && wants(ReportFormat::Csv) {
        files.push(write_csv(dir, "verification.csv", &mut ver)?);
    }
    if plants_shortcuts && wants(ReportFormat::Markdown) {
        files.push(write_text(dir, "verification.md", &ver_md)?);
    }
    if plants_shortcuts && wants(ReportFormat::Parquet) {
        files.push(write_parquet(dir, "verification.parquet", &mut ver)?);
    }
    let mut rendered_md = Vec::with_capacity(display.len());
    for t in &display {
        let md = display_markdown(t)?;
        if wants(ReportFormat::Csv) {
            let mut frame = t.frame.clone();
            files.push(write_csv(dir, &format!("{}.csv", t.stem), &mut frame)?);
        }
        if wants(ReportFormat::Markdown) {
            files.push(write_text(dir, &format!("{}.md", t.stem), &md)?);
        }
        if wants(ReportFormat::Latex) {
            let tex = latex::table(t).map_err(polars_err(format!("{}.tex", t.stem)))?;
            files.push(write_text(dir, &format!("{}.tex", t.stem), &tex)?);
        }
        rendered_md.push(md);
    }
    let plots = if wants(ReportFormat::Plots) || wants(ReportFormat::Html) {
        let mut plots = plots::write_plots(dir, cells, verification, input.images)?;
        plots.extend(map_sheets::write_map_sheets(dir, input.image_maps)?);
        for p in &plots {
            files.push(dir.join(format!("{}.svg", p.stem)));
            files.push(dir.join(format!("{}.png", p.stem)));
        }
        plots
    } else {
        Vec::new()
    };
    if wants(ReportFormat::Html) {
        let tables = ReportTables { recommendation: &recommendation, paper: &paper_tables, layouts: &layout_tables };
        let page = html_page(input, plants_shortcuts, &recommendations, tables, &plots)?;
        files.push(write_text(dir, "report.html", &page)?);
    }
    let console =
        console_text(input, (plants_shortcuts, images_only), ver_md, &layout_tables, (&display, &rendered_md));
    Ok(WrittenReport { files, console })
}

/// The report's display tables, by kind.
#[derive(Clone, Copy)]
struct ReportTables<'a> {
    recommendation: &'a Option<DisplayTable>,
    paper: &'a [DisplayTable],
    layouts: &'a [DisplayTable],
}

/// `report.html`: the recommendation, the verification table (where the grid
/// plants shortcuts), the papers' tables and the layouts, the plots and the
/// example views.
fn html_page(
    input: &ReportInput,
    plants_shortcuts: bool,
    recommendations: &[paper::Recommendation],
    tables: ReportTables,
    plots: &[Plot],
) -> Result<String, ReportError> {
    let (cells, verification) = (input.cells, input.verification);
    let (ver_frame, numeric) = tables::verification_display_frame(verification).map_err(polars_err("verification"))?;
    let verification_table = DisplayTable {
        stem: "verification".into(),
        title: "Verification of the shortcut models (PROTOCOL §1)".into(),
        frame: ver_frame,
        align: numeric.iter().map(|&n| if n { Align::Right } else { Align::Left }).collect(),
        notes: Vec::new(),
    };
    let page_tables: Vec<DisplayTable> = tables
        .recommendation
        .iter()
        .cloned()
        .chain(plants_shortcuts.then_some(verification_table))
        .chain(tables.paper.iter().cloned())
        .chain(tables.layouts.iter().cloned())
        .collect();
    let summary = summary_lines(recommendations, verification);
    let subtitle = if plants_shortcuts {
        format!(
            "{} result cells, {} shortcut models, {} example views",
            cells.len(),
            verification.len(),
            input.examples.len()
        )
    } else {
        format!(
            "{} result cells, {} natural models, {} example views",
            cells.len(),
            input.evaluations.len(),
            input.examples.len()
        )
    };
    Ok(html::render(&html::Page {
        title: &format!("grid report: {}", input.title),
        subtitle: &subtitle,
        summary: &summary,
        tables: &page_tables,
        plots,
        examples: input.examples,
    }))
}

/// What the console shows: the verification (or, for a natural grid, the
/// models' accuracy), the per-metric layouts, then the recommendation last,
/// where a reader's eye lands (the paper tables repeat the numbers in other
/// shapes and stay in files), and the image protocol's models and Figure 3
/// numbers. `display` pairs every display table with its rendered Markdown.
fn console_text(
    input: &ReportInput,
    (plants_shortcuts, images_only): (bool, bool),
    verification_md: String,
    layout_tables: &[DisplayTable],
    (display, rendered_md): (&[&DisplayTable], &[String]),
) -> String {
    let mut console = if images_only {
        String::new()
    } else if plants_shortcuts {
        verification_md
    } else {
        let evaluated = |t: &&&DisplayTable| t.stem == "zhao_table1";
        display.iter().zip(rendered_md).find(|(t, _)| evaluated(t)).map(|(_, md)| md.clone()).unwrap_or_default()
    };
    if layout_tables.is_empty() && !images_only {
        console.push_str("\n(no result cells)\n");
    }
    let shown = |t: &&DisplayTable| layout_tables.iter().any(|l| l.stem == t.stem);
    let recommended = |t: &&DisplayTable| t.stem == "recommendation";
    for predicate in [&shown as &dyn Fn(&&DisplayTable) -> bool, &recommended] {
        for (_, md) in display.iter().zip(rendered_md).filter(|(t, _)| predicate(t)) {
            console.push('\n');
            console.push_str(md);
        }
    }
    if !input.images.is_empty() {
        if !console.is_empty() {
            console.push('\n');
        }
        console.push_str(&images::verification_markdown(input.images));
        for (_, md) in display.iter().zip(rendered_md).filter(|(t, _)| t.stem == "zhou_images_attr") {
            console.push('\n');
            console.push_str(md);
        }
    }
    console
}

/// The papers' layouts and the agreement matrices.
fn paper_tables(
    cells: &[CellResult],
    summaries: &[tables::SeedSummary],
    verification: &[VerificationRow],
    agreements: &[AgreementResult],
) -> Result<Vec<DisplayTable>, ReportError> {
    let mut out = Vec::new();
    out.extend(paper::source_accuracy_table(verification).map_err(polars_err("bastings_table1"))?);
    out.extend(seed_spread::verification_over_seeds(verification).map_err(polars_err("verification_seeds"))?);
    out.extend(paper::family_tables(summaries).map_err(polars_err("method family tables"))?);
    out.extend(paper::full_matrices(summaries).map_err(polars_err("full matrices"))?);
    out.extend(paper::diagnosticity_tables(summaries).map_err(polars_err("diagnosticity tables"))?);
    out.extend(paper::erasure_by_ratio_tables(summaries).map_err(polars_err("erasure tables"))?);
    out.extend(zhou::accuracy_table(verification).map_err(polars_err("zhou_accuracy"))?);
    out.extend(zhou::attribution_tables(cells).map_err(polars_err("Zhou Table 1"))?);
    out.extend(rationale::table(cells, verification).map_err(polars_err("zhou_rationale"))?);
    for a in agreements {
        out.push(agreement_table(a).map_err(polars_err("agreement tables"))?);
    }
    Ok(out)
}

/// Lines for the top of the HTML page: one recommendation per model cell and
/// a warning per failed verification.
fn summary_lines(recommendations: &[paper::Recommendation], verification: &[VerificationRow]) -> Vec<String> {
    let mut lines: Vec<String> = recommendations
        .iter()
        .map(|r| {
            let tied = if r.tied.is_empty() { String::new() } else { format!(" (tied: {})", r.tied.join(", ")) };
            format!(
                "{} ({}) on {}:{}: use {}, precision {}{}",
                r.model,
                r.architecture.label(),
                r.dataset,
                r.shortcut,
                r.best,
                tables::format_fixed(r.precision, 2),
                tied
            )
        })
        .collect();
    for v in verification.iter().filter(|v| !v.verification.passed) {
        lines.push(format!(
            "warning: {} on {}:{} (seed {}) failed verification: {}",
            v.key.model,
            v.key.dataset,
            v.key.shortcut,
            v.key.seed,
            v.verification.failures.join("; ")
        ));
    }
    for v in verification.iter().filter(|v| !v.verification.close_calls.is_empty()) {
        lines.push(format!(
            "note: {} on {}:{} (seed {}) is a close call: {}",
            v.key.model,
            v.key.dataset,
            v.key.shortcut,
            v.key.seed,
            v.verification.close_calls.join("; ")
        ));
    }
    lines
}

/// One model cell's agreement: top-k overlap above the diagonal, Spearman ρ
/// below (Lu et al. 2024 Table 1 shows the overlap).
fn agreement_table(a: &AgreementResult) -> PolarsResult<DisplayTable> {
    let n = a.methods.len();
    let names: Vec<String> = a.methods.iter().map(Method::to_string).collect();
    let mut columns = vec![Column::new("method".into(), names.clone())];
    for (j, name) in names.iter().enumerate() {
        let cells: Vec<String> = (0..n)
            .map(|i| match i.cmp(&j) {
                std::cmp::Ordering::Equal => "—".to_string(),
                std::cmp::Ordering::Less => finite(a.overlap[i][j]),
                std::cmp::Ordering::Greater => finite(a.spearman[i][j]),
            })
            .collect();
        columns.push(Column::new(name.as_str().into(), cells));
    }
    let mut align = vec![Align::Left];
    align.extend(std::iter::repeat_n(Align::Right, n));
    Ok(DisplayTable {
        stem: format!(
            "agreement_{}_{}_{}_seed{}",
            file_safe(&a.key.model),
            file_safe(&a.key.dataset),
            file_safe(a.key.shortcut.name()),
            a.key.seed
        ),
        title: format!(
            "Method agreement for {} ({}) on {}:{}, seed {}: top-{} overlap above the diagonal, Spearman ρ below",
            a.key.model,
            a.key.architecture.label(),
            a.key.dataset,
            a.key.shortcut,
            a.key.seed,
            a.top_k
        ),
        frame: DataFrame::new(n, columns)?,
        align,
        notes: vec![format!(
            "Means over the {} examples every method explained; overlap = |top-k(a) ∩ top-k(b)| / min(k, length).",
            a.examples
        )],
    })
}

fn finite(v: f64) -> String {
    if v.is_finite() { tables::format_fixed(v, 2) } else { String::new() }
}

/// A per-model, per-metric layout as a display table.
fn layout_table(layout: &Layout) -> DisplayTable {
    let mut align = vec![Align::Right; layout.frame.width()];
    if let Some(first) = align.first_mut() {
        *first = Align::Left;
    }
    DisplayTable {
        stem: format!("{}_{}", file_safe(&layout.model), file_safe(layout.metric.name())),
        title: format!("{} ({}): {}", layout.model, layout.architecture, layout.metric.description()),
        frame: layout.frame.clone(),
        align,
        notes: if layout.any_failed { vec![tables::FAILED_FOOTNOTE.to_string()] } else { Vec::new() },
    }
}

/// `## title`, the table and its notes.
fn display_markdown(t: &DisplayTable) -> Result<String, ReportError> {
    let mut out = format!("## {}\n\n", markdown::escape(&t.title));
    out.push_str(&markdown::table(&t.frame, &t.align).map_err(polars_err(format!("{}.md", t.stem)))?);
    for note in &t.notes {
        out.push('\n');
        out.push_str(note);
        out.push('\n');
    }
    Ok(out)
}

/// `## Verification` and its table (or a line saying there is none).
fn verification_markdown(rows: &[VerificationRow]) -> Result<String, ReportError> {
    let mut out = String::from("## Verification\n\n");
    if rows.is_empty() {
        out.push_str("(no verification rows)\n");
        return Ok(out);
    }
    let (frame, numeric) = tables::verification_display_frame(rows).map_err(polars_err("verification"))?;
    let align: Vec<Align> = numeric.iter().map(|&n| if n { Align::Right } else { Align::Left }).collect();
    out.push_str(&markdown::table(&frame, &align).map_err(polars_err("verification.md"))?);
    Ok(out)
}

/// File stems handed out so far, to catch two tables on one name.
#[derive(Default)]
struct FileNames {
    owners: HashMap<String, String>,
}

impl FileNames {
    fn claim(&mut self, dir: &Path, stem: &str, what: &str) -> Result<(), ReportError> {
        if let Some(first) = self.owners.get(stem) {
            return Err(ReportError::NameCollision {
                path: dir.join(stem),
                first: first.clone(),
                second: what.to_string(),
            });
        }
        self.owners.insert(stem.to_string(), what.to_string());
        Ok(())
    }
}

/// `name` with anything but ASCII letters, digits, `.`, `-`, `_` replaced by `_`
/// (and an empty name as `_`), so a model name cannot leave `dir`.
fn file_safe(name: &str) -> String {
    let s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') { c } else { '_' }).collect();
    if s.is_empty() || s.chars().all(|c| c == '.') { s.replace('.', "_") + "_" } else { s }
}

/// Writes through a temporary file in `dir`, then renames it to `dir/name`.
fn write_atomic(
    dir: &Path,
    name: &str,
    write: impl FnOnce(&mut std::fs::File) -> Result<(), ReportError>,
) -> Result<PathBuf, ReportError> {
    let path = dir.join(name);
    let io_err = |source| ReportError::Io { path: path.clone(), source };
    let mut tmp =
        tempfile::Builder::new().prefix(&format!(".{name}.")).suffix(".tmp").tempfile_in(dir).map_err(io_err)?;
    write(tmp.as_file_mut())?;
    tmp.as_file_mut().flush().map_err(io_err)?;
    tmp.persist(&path).map_err(|e| io_err(e.error))?;
    Ok(path)
}

/// Writes `text` to `dir/name` through a temporary file.
pub fn write_text(dir: &Path, name: &str, text: &str) -> Result<PathBuf, ReportError> {
    let path = dir.join(name);
    write_atomic(dir, name, |f| f.write_all(text.as_bytes()).map_err(|source| ReportError::Io { path, source }))
}

/// Writes `df` as CSV (with header) to `dir/name` through a temporary file.
pub fn write_csv(dir: &Path, name: &str, df: &mut DataFrame) -> Result<PathBuf, ReportError> {
    let what = dir.join(name).display().to_string();
    write_atomic(dir, name, |f| CsvWriter::new(f).include_header(true).finish(df).map_err(polars_err(what)))
}

fn write_parquet(dir: &Path, name: &str, df: &mut DataFrame) -> Result<PathBuf, ReportError> {
    let what = dir.join(name).display().to_string();
    write_atomic(dir, name, |f| ParquetWriter::new(f).finish(df).map(|_| ()).map_err(polars_err(what)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(model: &str, dataset: &str, shortcut: &str, method: &str, metric: &str, value: f64) -> CellResult {
        use crate::testing::CellChanges;
        crate::testing::cell(model, shortcut, method, metric, value)
            .on(dataset)
            .interval(value - 0.01, value + 0.01)
            .examples(1000)
    }

    /// A cell no example defines (a rationale that selects nothing has no
    /// precision) is NaN, written `null`, and reads back as NaN.
    #[test]
    fn an_undefined_cell_round_trips_through_report_data() {
        let undefined = cell("rl", "gen", "articles", "rationale", "sel-precision", f64::NAN);
        let text = serde_json::to_string(&undefined).unwrap();
        assert!(text.contains("\"value\":null"), "{text}");
        let back: CellResult = serde_json::from_str(&text).unwrap();
        assert!(back.value.is_nan());
    }

    #[test]
    fn verification_rows_written_before_the_record_was_whole_still_read() {
        // A row of report_data.json as reports wrote it when it mirrored a
        // part of the verify step's record: no example counts, no intervals.
        let old = r#"{"model": "lstm", "architecture": "bilstm", "dataset": "sst2", "shortcut": "op", "seed": 1,
            "shortcut_model_on_synthetic": 0.998, "original_model_on_synthetic": 0.5,
            "shortcut_model_on_flip": 0.997, "shortcut_model_on_original": 0.86,
            "original_model_on_original": 0.87, "min_synthetic_accuracy": 0.99, "max_original_drop": 0.1,
            "passed": true, "failures": []}"#;
        let row: VerificationRow = serde_json::from_str(old).unwrap();
        assert_eq!(row.key.shortcut, "op".parse().unwrap());
        assert_eq!(row.verification.shortcut_model_on_synthetic, 0.998);
        assert_eq!(row.verification.synthetic_examples, 0);
        assert_eq!(row.verification.shortcut_model_on_synthetic_interval, None);
        assert_eq!(row.min_synthetic_accuracy, Some(0.99));
        assert!(row.verification.passed);
        // What is written now reads back whole.
        let mut now = ver("lstm", "sst2", "op", true);
        now.verification.synthetic_examples = 1000;
        now.verification.shortcut_model_on_synthetic_interval = Some((0.99, 1.0));
        let json = serde_json::to_string(&now).unwrap();
        assert_eq!(serde_json::from_str::<VerificationRow>(&json).unwrap(), now);
    }

    fn ver(model: &str, dataset: &str, shortcut: &str, passed: bool) -> VerificationRow {
        VerificationRow {
            key: crate::CellKey {
                model: model.into(),
                architecture: grid_core::model::Architecture::Bilstm,
                dataset: dataset.into(),
                shortcut: shortcut.parse().unwrap(),
                seed: 1,
            },
            verification: grid_methods::shortcut::verification::Verification {
                shortcut_model_on_synthetic: if passed { 0.9974 } else { 0.81 },
                original_model_on_synthetic: 0.5,
                shortcut_model_on_flip: 0.996,
                shortcut_model_on_original: 0.8612,
                original_model_on_original: 0.8655,
                shortcut_model_macro_f1: None,
                original_model_macro_f1: None,
                accuracy_without_shortcut: None,
                passed,
                close_calls: Vec::new(),
                failures: if passed {
                    vec![]
                } else {
                    vec!["synthetic accuracy 81.0% < 99%".into(), "flip | too low".into()]
                },
                synthetic_examples: 0,
                synthetic_truncated: 0,
                original_examples: 0,
                shortcut_model_on_synthetic_interval: None,
                original_drop_interval: None,
            },
            min_synthetic_accuracy: None,
            max_original_drop: None,
        }
    }

    fn sample() -> (Vec<CellResult>, Vec<VerificationRow>) {
        let mut cells = Vec::new();
        for (ds, sc, ok) in [("sst2", "st", true), ("sst2", "op", false)] {
            for (m, p, r) in [("gradl-l1", 1.0, 1.0), ("random", 0.031, 17.25)] {
                let mut c = cell("lstm", ds, sc, m, "precision", p);
                c.verified = ok;
                cells.push(c);
                let mut c = cell("lstm", ds, sc, m, "rank", r);
                c.verified = ok;
                cells.push(c);
            }
        }
        cells.push(cell("bert", "sst2", "st", "gradl-l1", "precision", 0.5));
        let verification = vec![ver("lstm", "sst2", "st", true), ver("lstm", "sst2", "op", false)];
        (cells, verification)
    }

    const ALL: [ReportFormat; 3] = [ReportFormat::Csv, ReportFormat::Markdown, ReportFormat::Parquet];

    fn names(report: &WrittenReport, dir: &Path) -> Vec<String> {
        report.files.iter().map(|p| p.strip_prefix(dir).unwrap().display().to_string()).collect()
    }

    #[test]
    fn writes_every_file_in_order() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("new/reports");
        let (cells, v) = sample();
        let report = write_reports(&dir, &cells, &v, &ALL).unwrap();
        assert_eq!(
            names(&report, &dir),
            [
                "results_long.csv",
                "results_long.parquet",
                "verification.csv",
                "verification.md",
                "verification.parquet",
                "recommendation.csv",
                "recommendation.md",
                "bastings_table1.csv",
                "bastings_table1.md",
                "bastings_table3_grad.csv",
                "bastings_table3_grad.md",
                "bastings_full_lstm.csv",
                "bastings_full_lstm.md",
                "bastings_full_bert.csv",
                "bastings_full_bert.md",
                "lstm_precision.csv",
                "lstm_precision.md",
                "lstm_rank.csv",
                "lstm_rank.md",
                "bert_precision.csv",
                "bert_precision.md",
            ]
        );
        for f in &report.files {
            assert!(f.is_file(), "{}", f.display());
        }
        // No temporary files left behind.
        let mut entries: Vec<String> =
            std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        entries.sort();
        assert_eq!(entries.len(), report.files.len(), "{entries:?}");
    }

    #[test]
    fn formats_select_files() {
        let tmp = tempfile::tempdir().unwrap();
        let (cells, v) = sample();
        let report = write_reports(tmp.path(), &cells, &v, &[ReportFormat::Markdown]).unwrap();
        assert_eq!(
            names(&report, tmp.path()),
            [
                "verification.md",
                "recommendation.md",
                "bastings_table1.md",
                "bastings_table3_grad.md",
                "bastings_full_lstm.md",
                "bastings_full_bert.md",
                "lstm_precision.md",
                "lstm_rank.md",
                "bert_precision.md"
            ]
        );
        // No formats: nothing written, no directory created, console still there.
        let dir = tmp.path().join("never");
        let report = write_reports(&dir, &cells, &v, &[]).unwrap();
        assert!(report.files.is_empty());
        assert!(!dir.exists());
        assert!(report.console.contains("## lstm (bilstm): precision@k"));
    }

    #[test]
    fn layout_csv_and_markdown_mark_failed_columns() {
        let tmp = tempfile::tempdir().unwrap();
        let (cells, v) = sample();
        write_reports(tmp.path(), &cells, &v, &ALL).unwrap();
        let csv = std::fs::read_to_string(tmp.path().join("lstm_precision.csv")).unwrap();
        assert_eq!(csv, "method,sst2:st,sst2:op\ngradl-l1,1.00,1.00 †\nrandom,0.03,0.03 †\n");
        let rank = std::fs::read_to_string(tmp.path().join("lstm_rank.csv")).unwrap();
        assert_eq!(rank, "method,sst2:st,sst2:op\ngradl-l1,1.0,1.0 †\nrandom,17.2,17.2 †\n");
        let md = std::fs::read_to_string(tmp.path().join("lstm_precision.md")).unwrap();
        assert_eq!(
            md,
            "## lstm (bilstm): precision@k (higher is better)\n\
             \n\
             | method   | sst2:st | sst2:op |\n\
             | -------- | ------: | ------: |\n\
             | gradl-l1 |    1.00 |  1.00 † |\n\
             | random   |    0.03 |  0.03 † |\n\
             \n\
             † the shortcut model failed verification for this column; do not trust these numbers.\n"
        );
        let bert = std::fs::read_to_string(tmp.path().join("bert_precision.md")).unwrap();
        assert!(!bert.contains('†'), "{bert}");
    }

    #[test]
    fn verification_tables() {
        let tmp = tempfile::tempdir().unwrap();
        let (cells, v) = sample();
        let report = write_reports(tmp.path(), &cells, &v, &ALL).unwrap();
        let md = std::fs::read_to_string(tmp.path().join("verification.md")).unwrap();
        let lines: Vec<&str> = md.lines().collect();
        assert_eq!(lines[0], "## Verification");
        assert!(
            lines[2].starts_with("| model | architecture | dataset | shortcut | seed | shortcut model, synthetic % |")
        );
        assert!(lines[4].contains("|                        99.7 |"), "{md}");
        assert!(lines[4].contains("| yes    |"), "{md}");
        // Failures joined with "; ", `|` escaped.
        assert!(lines[5].contains("| no     | synthetic accuracy 81.0% < 99%; flip \\| too low |"), "{md}");
        assert!(report.console.starts_with(&md));

        let df = CsvReadOptions::default()
            .try_into_reader_with_file_path(Some(tmp.path().join("verification.csv")))
            .unwrap()
            .finish()
            .unwrap();
        assert_eq!(df.shape(), (2, 15), "keys, seed, 5 accuracies, 2 macro-F1, passed, failures, close calls");
        let passed: Vec<Option<bool>> = df.column("passed").unwrap().bool().unwrap().iter().collect();
        assert_eq!(passed, [Some(true), Some(false)]);
        let acc = df.column("shortcut_model_on_synthetic").unwrap().f64().unwrap();
        assert_eq!(acc.get(0), Some(0.9974));
    }

    #[test]
    fn long_table_round_trips_through_csv_and_parquet() {
        let tmp = tempfile::tempdir().unwrap();
        let (mut cells, v) = sample();
        cells[0].value = 0.1 + 0.2; // not exactly representable in short decimal
        cells[1].key.dataset = "odd, \"name\"".into(); // a quoted CSV field
        write_reports(tmp.path(), &cells, &v, &ALL).unwrap();
        let expected = tables::long_frame(&cells).unwrap();

        let from_csv = CsvReadOptions::default()
            .with_schema_overwrite(Some(Arc::new(expected.schema().as_ref().clone())))
            .try_into_reader_with_file_path(Some(tmp.path().join("results_long.csv")))
            .unwrap()
            .finish()
            .unwrap();
        assert!(from_csv.equals(&expected), "{from_csv}\n{expected}");

        let file = std::fs::File::open(tmp.path().join("results_long.parquet")).unwrap();
        let from_parquet = ParquetReader::new(file).finish().unwrap();
        assert!(from_parquet.equals(&expected), "{from_parquet}");
        assert_eq!(
            from_parquet.get_column_names(),
            [
                "model",
                "architecture",
                "dataset",
                "shortcut",
                "method",
                "metric",
                "seed",
                "value",
                "ci_low",
                "ci_high",
                "n_examples",
                "verified"
            ]
        );
    }

    #[test]
    fn output_is_byte_identical() {
        let (cells, v) = sample();
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let ra = write_reports(a.path(), &cells, &v, &ALL).unwrap();
        let rb = write_reports(b.path(), &cells, &v, &ALL).unwrap();
        assert_eq!(ra.console, rb.console);
        assert_eq!(names(&ra, a.path()), names(&rb, b.path()));
        for (fa, fb) in ra.files.iter().zip(&rb.files) {
            assert_eq!(std::fs::read(fa).unwrap(), std::fs::read(fb).unwrap(), "{}", fa.display());
        }
        // Rewriting over existing files replaces them.
        let again = write_reports(a.path(), &cells, &v, &ALL).unwrap();
        assert_eq!(again.console, ra.console);
    }

    #[test]
    fn empty_inputs() {
        let tmp = tempfile::tempdir().unwrap();
        let report = write_reports(tmp.path(), &[], &[], &ALL).unwrap();
        assert_eq!(
            names(&report, tmp.path()),
            ["results_long.csv", "results_long.parquet", "verification.csv", "verification.md", "verification.parquet",]
        );
        assert_eq!(report.console, "## Verification\n\n(no verification rows)\n\n(no result cells)\n");
        let csv = std::fs::read_to_string(tmp.path().join("results_long.csv")).unwrap();
        assert_eq!(
            csv,
            "model,architecture,dataset,shortcut,method,metric,seed,value,ci_low,ci_high,n_examples,verified\n"
        );
    }

    #[test]
    fn markdown_escapes_pipes_in_names() {
        let tmp = tempfile::tempdir().unwrap();
        // Dataset and shortcut names are the grid's; a method is a typed config
        // whose name has no pipe.
        let cells = vec![cell("lstm", "a|b", "st", "gxil", "precision", 0.5)];
        let report = write_reports(tmp.path(), &cells, &[], &ALL).unwrap();
        let md = std::fs::read_to_string(tmp.path().join("lstm_precision.md")).unwrap();
        assert!(md.contains("| method | a\\|b:st |"), "{md}");
        assert!(report.console.contains("a\\|b:st"));
    }

    #[test]
    fn duplicates_and_collisions_are_errors() {
        let tmp = tempfile::tempdir().unwrap();
        let c = cell("lstm", "sst2", "st", "random", "rank", 3.0);
        let err = write_reports(tmp.path(), &[c.clone(), c.clone()], &[], &ALL).unwrap_err();
        assert!(matches!(err, ReportError::DuplicateCell { .. }), "{err}");

        let v = ver("lstm", "sst2", "st", true);
        let err = write_reports(tmp.path(), &[], &[v.clone(), v], &ALL).unwrap_err();
        assert!(matches!(err, ReportError::DuplicateVerification { .. }), "{err}");

        // "a/b" and "a_b" both become the file `a_b_rank` (and `bastings_full_a_b`).
        let cells =
            vec![cell("a/b", "sst2", "st", "random", "rank", 3.0), cell("a_b", "sst2", "st", "random", "rank", 3.0)];
        let err = write_reports(tmp.path(), &cells, &[], &ALL).unwrap_err();
        assert!(matches!(err, ReportError::NameCollision { .. }), "{err}");
        assert!(err.to_string().contains("a_b"), "{err}");
        // Nothing was written before the error.
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[test]
    fn file_names_stay_in_dir() {
        assert_eq!(file_safe("bert-base.v2"), "bert-base.v2");
        assert_eq!(file_safe("../x"), ".._x");
        assert_eq!(file_safe(".."), "___");
        assert_eq!(file_safe(""), "_");
        assert_eq!(file_safe("a b/ü"), "a_b__");
    }

    #[test]
    fn report_format_serde_names() {
        let got: Vec<ReportFormat> = serde_json::from_str(r#"["csv","markdown","parquet"]"#).unwrap();
        assert_eq!(got, ALL);
        assert_eq!(serde_json::to_string(&ReportFormat::Markdown).unwrap(), "\"markdown\"");
    }
}
