//! `grid report --compare <published.csv>`: our numbers beside the papers'.
//!
//! [`load`] reads one of the published CSVs in `experiments/reference/`, telling
//! the kind by its header:
//!
//! | header | kind | paper |
//! |---|---|---|
//! | `arch,method,dataset,shortcut,precision,rank` | [`Published::PrecisionRank`] | Bastings et al. 2022, Tables 10/11 |
//! | `dataset,attribution,ns,soft_ns,nc,soft_nc` | [`Published::Diagnosticity`] | Zhao & Aletras 2023, Table 6 |
//! | `arch,dataset,original_test_accuracy_pct,mean_drop_with_shortcut_pct` | [`Published::SourceAccuracy`] | Bastings et al. 2022, Table 1 |
//! | `arch,attribution,dataset,region,attr_pct,attr_sd_pct,frequency_pct` | [`Published::ZhouAttr`] | Zhou et al. 2022, Table 1 |
//! | `finding,section,statement` | [`Published::ZhouRationale`] | Zhou et al. 2022, §7 (findings only: [`zhou_rationale`]) |
//! | `image_finding,section,statement` | [`Published::ZhouImages`] | Zhou et al. 2022, §5 (findings only: [`zhou_images`]) |
//! | `dataset,method,top5,…,score` | none: people's accuracy (Lu et al. 2024), an error | |
//!
//! [`compare`] matches our cells to the published numbers, cell by cell, and
//! checks the papers' claims on our numbers ([`Finding`]); [`render_markdown`]
//! writes a `## Compared with <file>` section.
//!
//! Matching:
//! - Architectures: the paper's `lstm` is our `bilstm`, `bert` is `bert`.
//! - Datasets: by name (ASCII case ignored), or through an alias `(ours, published)`
//!   (`--compare-as generated=sst2`). One of our datasets may match several
//!   published ones and the other way round; every pair is a row.
//! - Methods: canonical names (parsed by [`Method`]; `lime-unk-100` is
//!   `limeunk-100`). A paper row printed for a brace group (`grad{p,l}-l1`) is
//!   one number for every config of the group, so each config is compared with it.
//!   An empty precision or rank field (the paper prints none) is not compared.
//! - Zhao & Aletras' attributions ([`ZhaoAttribution::preference`]): Attention →
//!   `attn` (BiLSTM) or `attn-last` (BERT; `attn-all` when we have no `attn-last`):
//!   the paper takes "the normalized attention score (Jain et al., 2020)", which is
//!   the last layer's `[CLS]` row, and its scaled attention (`attn-scaled`) reads the
//!   same layer. Scaled attention → `attn-scaled`; Gradients, which the paper
//!   defines as InputXGrad x∇x → `gxil` (else `gxip`); IG (zero-embedding baseline)
//!   → `igl-zero-<m>` with the most steps (else `igp-zero-<m>`); Deeplift (zero
//!   reference) → `deeplift`. The paper's models are BERT-family; we compare every
//!   architecture we ran, and the `architecture` column says which.
//! - Zhou et al.'s Table 1 ([`ZhouAttrRow`]): their datasets `article`, `cn`, `nc`
//!   are BeerAdvocate reviews under the Article, CN and NC manipulations; they are
//!   our shortcut kinds `articles`, `articles-cn`, `articles-nc`, on every one of our
//!   datasets (we have no BeerAdvocate, so the corpus is not matched and
//!   `--compare-as` plays no part). `attention` is `attn` on our BiLSTM (theirs is a
//!   BiLSTM with attention) and, should a `bert` row appear, `attn-last` (else
//!   `attn-all`) on BERT, as for Zhao & Aletras. Regions: `correlating` is our
//!   metric `attr`, `non_correlating` is `attr-noncorr`, `other` is `attr-other` =
//!   1 − attr − attr-noncorr (1 − attr for Article), computed per seed from the
//!   seeds that have both parts, then averaged. Compared in percent; beside each,
//!   the paper's standard deviation over its 11 runs (`published_sd`), our
//!   region's share of the tokens (`region_share`) and the paper's word frequency
//!   (`published_frequency`).
//! - Seeds: cells that differ only by seed are merged as the tables merge them
//!   ([`crate::tables::over_seeds`]): the mean over seeds, with the
//!   bootstrap interval of the seed-averaged per-example values, so a cell
//!   shows one interval in every output.
//!
//! Findings (✓ holds, ✗ does not, ? undecided). A finding that rests on a
//! model that failed verification is undecided whatever its numbers say
//! ([`Finding::resting_on`]); [`ledger`] gathers them over several grids.
//! - Precision/rank, per (model, dataset, shortcut) with ≥ 2 common methods: the
//!   paper's best method (any of a tie) is our best (? when its interval
//!   overlaps our best's: the difference is inside the intervals); with ≥ 3,
//!   Spearman ρ of precision ≥ 0.5. Per (model, method family):
//!   the mean precision margin over `random` has the paper's sign (? where either
//!   side lacks `random`, as the paper does for BERT).
//! - Diagnosticity, per (model, dataset) and over all datasets: Soft-NS vs NS and
//!   Soft-NC vs NC, mean over the matched attributions, point the paper's way
//!   (? where the paper's averages tie as printed).
//! - Source accuracy: our original model within 2 points of the paper; our mean
//!   shortcut drop at most 1 point above the paper's.
//! - Zhou et al., per (model, dataset) and manipulation (Article, CN, NC) where we
//!   ran it, on seed means: attention beats the word frequency on the correlating
//!   articles (attr > region share); attention stays far from faithful (attr <
//!   [`FAITHFUL_ATTR_BAR`]), with our model's accuracy on the manipulated test set
//!   beside it (the paper's models: > 97%); and, on NC only, the non-correlating
//!   articles get about as much as the correlating ones (attr-noncorr ≥
//!   [`NONCORR_PARITY`] × attr).
//!
//! Unmatched counts: `unmatched_published` counts published rows (after brace
//! expansion: configs) that none of our cells matched; `unmatched_ours` counts our
//! cells (seeds merged) of a metric the file reports that found no published number
//! (for source accuracy: our (model, dataset) verification groups; for Zhou et al.:
//! our `attr` / `attr-noncorr` cells on the article manipulations only, so other
//! methods than attention, and architectures the file has no row for).

use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::{CellResult, VerificationRow};
pub use crate::finding::Finding;
use crate::images::ImageAttrRow;
use grid_core::model::Architecture;
use grid_methods::metrics::Metric;
use grid_methods::salience::Method;
use grid_methods::shortcut::Regime;

/// "Close to the published number" for precision and diagnosticity (both 0..1).
const NEAR: f64 = 0.1;
/// A Spearman ρ of at least 0.5 is conventionally a moderate-to-strong monotone
/// agreement; below it the two rankings share little.
const SPEARMAN_AGREES: f64 = 0.5;
/// Fewer methods make ρ meaningless (two points always give ±1).
const MIN_SPEARMAN_METHODS: usize = 3;
/// Our original model's test accuracy counts as reproduced within this many points
/// (the paper trains full-size models on the real corpora; ours may be smaller).
const ACCURACY_TOLERANCE_PP: f64 = 2.0;
/// The shortcut may cost this many points more than the paper's mean drop.
const DROP_TOLERANCE_PP: f64 = 1.0;
/// Zhou et al.: at r = 0.5 a model over 97% accurate needs the correlating articles
/// for nearly every decision, so a faithful attribution puts nearly 100% of its mass
/// there (the paper's "Expectation: %Attr ≈ 1", §6.1). Below half, most of the
/// mass lies on words that cannot have decided; the paper's means (10.3–15.9%) are
/// far below it, so "far from faithful" is read as "under half".
pub const FAITHFUL_ATTR_BAR: f64 = 0.5;
/// Zhou et al., NC: "about as much" on the non-correlating articles as on the
/// correlating ones (12.6% vs 12.0%, with run-to-run sds of 8–9 points, so only a
/// rough parity is claimed). At least half as much still means attention does not
/// tell the articles that decide from look-alikes that cannot; a faithful
/// attribution gives the non-correlating ones ≈ 0.
pub const NONCORR_PARITY: f64 = 0.5;
/// Zhou et al.'s models all reach over 97% accuracy on the manipulated data.
const ZHOU_MODEL_ACCURACY: f64 = 0.97;

const PRECISION_RANK_HEADER: [&str; 6] = ["arch", "method", "dataset", "shortcut", "precision", "rank"];
const DIAGNOSTICITY_HEADER: [&str; 6] = ["dataset", "attribution", "ns", "soft_ns", "nc", "soft_nc"];
const SOURCE_ACCURACY_HEADER: [&str; 4] =
    ["arch", "dataset", "original_test_accuracy_pct", "mean_drop_with_shortcut_pct"];
const ZHOU_ATTR_HEADER: [&str; 7] =
    ["arch", "attribution", "dataset", "region", "attr_pct", "attr_sd_pct", "frequency_pct"];
const ZHOU_RATIONALE_HEADER: [&str; 3] = ["finding", "section", "statement"];
const ZHOU_IMAGES_HEADER: [&str; 3] = ["image_finding", "section", "statement"];
const CROWD_ACCURACY_HEADER: [&str; 8] = ["dataset", "method", "top5", "top10", "top20", "top30", "top40", "score"];

const ORIGINAL_ACCURACY_METRIC: &str = "original_test_accuracy_pct";
const DROP_METRIC: &str = "mean_drop_with_shortcut_pct";
/// Zhou et al.'s "other words": 1 − attr − attr-noncorr, a metric we derive.
const OTHER_METRIC: &str = "attr-other";

mod bastings;
pub mod findings_file;
pub mod ledger;
mod published;
mod render;
#[cfg(test)]
mod tests;
mod zhao;
mod zhou_attr;
pub mod zhou_images;
pub mod zhou_rationale;

use self::bastings::{compare_precision_rank, compare_source_accuracy};
pub use self::published::{
    DiagnosticityRow, PaperArch, PrecisionRankRow, Published, PublishedKind, SourceAccuracyRow, ZhaoAttribution,
    ZhouAttrRow, ZhouAttribution, ZhouDataset, ZhouRegion, load,
};
use self::render::cells_frame;
pub use self::render::{mark, render_markdown};
use self::zhao::compare_diagnosticity;
use self::zhou_attr::compare_zhou_attr;

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CompareError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: the file is empty; expected a CSV header", path.display())]
    Empty { path: PathBuf },
    #[error(
        "{}:1: unknown header `{header}`; expected one of `{}`, `{}`, `{}`, `{}`, `{}`, `{}`",
        path.display(),
        PRECISION_RANK_HEADER.join(","),
        DIAGNOSTICITY_HEADER.join(","),
        SOURCE_ACCURACY_HEADER.join(","),
        ZHOU_ATTR_HEADER.join(","),
        ZHOU_RATIONALE_HEADER.join(","),
        ZHOU_IMAGES_HEADER.join(",")
    )]
    UnknownHeader { path: PathBuf, header: String },
    #[error("{}: {what} has no counterpart in grid results; nothing to compare", path.display())]
    NoCounterpart { path: PathBuf, what: &'static str },
    /// Malformed CSV syntax (quotes).
    #[error(transparent)]
    Syntax(#[from] grid_core::data::csv_records::CsvSyntaxError),
    #[error("{}:{line}: {found} fields, but the header has {expected}", path.display())]
    FieldCount { path: PathBuf, line: usize, expected: usize, found: usize },
    /// A field that does not hold what its column needs.
    #[error("{}:{line}: column `{column}`: {message}", path.display())]
    Field { path: PathBuf, line: usize, column: &'static str, message: String },
    #[error("{}:{line}: the same {what} as line {first_line}", path.display())]
    Duplicate { path: PathBuf, line: usize, first_line: usize, what: String },
    /// Building the comparison frame failed.
    #[error("{what}: {source}")]
    Polars {
        what: String,
        #[source]
        source: PolarsError,
    },
}

// ---------------------------------------------------------------------------
// The comparison
// ---------------------------------------------------------------------------

/// The shortcut regime a compared cell rests on, or, for source accuracy,
/// the regimes its verifications averaged (in first-appearance order):
/// never none. Written as the `shortcut` column, the names joined with `+`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Regimes {
    first: Regime,
    rest: Vec<Regime>,
}

impl Regimes {
    pub fn one(regime: Regime) -> Regimes {
        Regimes { first: regime, rest: Vec::new() }
    }

    /// `first` and the others, each once, in order.
    pub fn of(first: Regime, others: impl IntoIterator<Item = Regime>) -> Regimes {
        let mut regimes = Regimes::one(first);
        for regime in others {
            if regime != regimes.first && !regimes.rest.contains(&regime) {
                regimes.rest.push(regime);
            }
        }
        regimes
    }

    /// The regime, where the cell rests on one.
    pub fn single(&self) -> Option<Regime> {
        self.rest.is_empty().then_some(self.first)
    }
}

impl std::fmt::Display for Regimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.first.name())?;
        for regime in &self.rest {
            write!(f, "+{}", regime.name())?;
        }
        Ok(())
    }
}

/// One of our numbers beside the published one.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparedCell {
    pub model: String,
    pub architecture: Architecture,
    /// Our dataset name.
    pub dataset: String,
    /// The paper's dataset it was compared with (differs under an alias).
    pub published_dataset: String,
    /// Source accuracy: the shortcuts averaged.
    pub shortcut: Regimes,
    /// Our method config (none for source accuracy).
    pub method: Option<Method>,
    /// The paper's method cell: a brace group, or a Zhao & Aletras attribution.
    pub published_method: Option<String>,
    pub metric: ComparedMetric,
    /// How many of our numbers were averaged: seeds (for accuracy: verification
    /// rows, one per seed and shortcut).
    pub runs: u32,
    pub ours: f64,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    pub published: f64,
    /// Every model behind `ours` passed verification.
    pub verified: bool,
    /// Zhou et al.: the paper's standard deviation over its runs (percent).
    pub published_sd: Option<f64>,
    /// Zhou et al.: our region's share of the tokens (percent), beside
    /// `published_share`, the paper's word frequency.
    pub share: Option<f64>,
    pub published_share: Option<f64>,
}

impl ComparedCell {
    /// Ours minus published.
    pub fn difference(&self) -> f64 {
        self.ours - self.published
    }

    /// The published number lies inside our 95% interval (bounds included);
    /// `None` without an interval.
    pub fn within_interval(&self) -> Option<bool> {
        Some((self.ci_low?..=self.ci_high?).contains(&self.published))
    }
}

/// Everything [`render_markdown`] shows.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub kind: PublishedKind,
    /// What the heading names: the kind's citation from [`compare`], the file's
    /// path from [`compare_file`].
    pub source: String,
    /// Summary lines (shares close to the paper, matching notes).
    pub summary: Vec<String>,
    /// The compared cells, in the order of our cells.
    pub cells: Vec<ComparedCell>,
    /// `cells` as a frame ([`frame`]), for CSV output.
    pub table: DataFrame,
    pub findings: Vec<Finding>,
    pub unmatched_published: usize,
    pub unmatched_ours: usize,
}

/// The cell-by-cell table, for the caller to write as CSV.
pub fn frame(c: &Comparison) -> &DataFrame {
    &c.table
}

/// `ours=published` (as `--compare-as` takes it) → `(ours, published)`.
pub fn parse_alias(arg: &str) -> Result<(String, String), String> {
    match arg.split_once('=') {
        Some((ours, theirs)) if !ours.trim().is_empty() && !theirs.trim().is_empty() => {
            Ok((ours.trim().to_string(), theirs.trim().to_string()))
        }
        _ => Err(format!("`{arg}`: expected OURS=PUBLISHED, e.g. generated=sst2")),
    }
}

/// [`load`] then [`compare`], with the file's path as the heading.
pub fn compare_file(
    path: &Path,
    cells: &[CellResult],
    verification: &[VerificationRow],
    images: &[ImageAttrRow],
    aliases: &[(String, String)],
) -> Result<Comparison, CompareError> {
    let published = load(path)?;
    let mut comparison = compare(&published, cells, verification, images, aliases)?;
    comparison.source = path.display().to_string();
    Ok(comparison)
}

/// Whether `published` speaks of anything in these results. The findings-only
/// files (Zhou et al. §5 and §7) need image results or rationale models: on
/// other grids every finding would be undecided for want of a counterpart,
/// which says nothing (the ledger leaves them out). The tables are matched
/// cell by cell, so they concern any results.
pub fn concerns(
    published: &Published,
    cells: &[CellResult],
    verification: &[VerificationRow],
    images: &[ImageAttrRow],
) -> bool {
    match published {
        Published::ZhouImages(_) => !images.is_empty(),
        Published::ZhouRationale(_) => !crate::rationale::rows(cells, verification).is_empty(),
        Published::PrecisionRank(_)
        | Published::Diagnosticity(_)
        | Published::SourceAccuracy(_)
        | Published::ZhouAttr(_) => true,
    }
}

/// Matches our cells (or verification rows, for source accuracy) to the published
/// numbers and checks the paper's findings on them.
pub fn compare(
    published: &Published,
    cells: &[CellResult],
    verification: &[VerificationRow],
    images: &[ImageAttrRow],
    aliases: &[(String, String)],
) -> Result<Comparison, CompareError> {
    let aliases = Aliases(aliases);
    let outcome = match published {
        Published::PrecisionRank(rows) => compare_precision_rank(rows, cells, &aliases),
        Published::Diagnosticity(rows) => compare_diagnosticity(rows, cells, &aliases),
        Published::SourceAccuracy(rows) => compare_source_accuracy(rows, verification, &aliases),
        Published::ZhouAttr(rows) => compare_zhou_attr(rows, cells, verification),
        Published::ZhouRationale(rows) => zhou_rationale::compare_zhou_rationale(rows, cells, verification),
        Published::ZhouImages(rows) => zhou_images::compare_zhou_images(rows, images),
    };
    let table = cells_frame(published.kind(), &outcome.cells)
        .map_err(|source| CompareError::Polars { what: "the comparison table".into(), source })?;
    Ok(Comparison {
        kind: published.kind(),
        source: published.kind().to_string(),
        summary: outcome.summary,
        cells: outcome.cells,
        table,
        findings: outcome.findings,
        unmatched_published: outcome.unmatched_published,
        unmatched_ours: outcome.unmatched_ours,
    })
}

/// What one kind's comparison produces before the frame is built.
pub(super) struct Outcome {
    pub(super) cells: Vec<ComparedCell>,
    pub(super) findings: Vec<Finding>,
    pub(super) summary: Vec<String>,
    pub(super) unmatched_published: usize,
    pub(super) unmatched_ours: usize,
}

/// The user's `(ours, published)` dataset aliases.
pub(super) struct Aliases<'a>(&'a [(String, String)]);

impl Aliases<'_> {
    /// Our dataset `ours` is compared with the paper's `published`.
    pub(super) fn matches(&self, ours: &str, published: &str) -> bool {
        ours.eq_ignore_ascii_case(published)
            || self.0.iter().any(|(o, p)| o.eq_ignore_ascii_case(ours) && p.eq_ignore_ascii_case(published))
    }
}

/// What one of our cells measures: a grid metric, or one derived from them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OurMetric {
    Grid(Metric),
    /// Zhou et al.'s "other words": 1 − attr − attr-noncorr.
    AttrOther,
}

impl OurMetric {
    pub fn name(self) -> &'static str {
        match self {
            OurMetric::Grid(metric) => metric.name(),
            OurMetric::AttrOther => OTHER_METRIC,
        }
    }
}

/// What a compared cell measures: one of our metrics, or a number of Bastings
/// et al.'s source-accuracy table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComparedMetric {
    Ours(OurMetric),
    /// The original model's test accuracy, in percent.
    OriginalAccuracy,
    /// The mean drop in original accuracy with the shortcut, in points.
    AccuracyDrop,
}

impl ComparedMetric {
    /// One of our grid's metrics.
    pub fn of(metric: Metric) -> ComparedMetric {
        ComparedMetric::Ours(OurMetric::Grid(metric))
    }

    /// The name the tables and CSV files print.
    pub fn name(self) -> &'static str {
        match self {
            ComparedMetric::Ours(metric) => metric.name(),
            ComparedMetric::OriginalAccuracy => ORIGINAL_ACCURACY_METRIC,
            ComparedMetric::AccuracyDrop => DROP_METRIC,
        }
    }

    /// Decimals the comparison shows: as the papers print them (Zhou et
    /// al.'s Attr% compared in percent, Zhao & Aletras's diagnosticity with
    /// two), which is not always the grid's own tables' choice
    /// (`Metric::decimals`).
    pub(super) fn decimals(self) -> usize {
        match self {
            ComparedMetric::Ours(OurMetric::Grid(metric)) => match metric {
                Metric::Precision | Metric::Diagnosticity(_) => 2,
                Metric::Rank | Metric::AttrShare | Metric::AttrNonCorrelating => 1,
                Metric::Erasure(_) | Metric::Rationale(_) => 3,
            },
            ComparedMetric::Ours(OurMetric::AttrOther)
            | ComparedMetric::OriginalAccuracy
            | ComparedMetric::AccuracyDrop => 1,
        }
    }
}

/// Our cells with seeds merged, keyed without the seed, in first-appearance order.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct OurCell {
    pub(super) model: String,
    pub(super) architecture: Architecture,
    pub(super) dataset: String,
    pub(super) shortcut: Regime,
    pub(super) method: Method,
    pub(super) metric: OurMetric,
    pub(super) runs: u32,
    pub(super) value: f64,
    pub(super) ci_low: Option<f64>,
    pub(super) ci_high: Option<f64>,
    pub(super) verified: bool,
    /// Mean `region_share` over the seeds (if every seed has one).
    pub(super) share: Option<f64>,
}

impl OurCell {
    pub(super) fn compared(
        &self,
        published_dataset: &str,
        published_method: Option<&str>,
        published: f64,
    ) -> ComparedCell {
        ComparedCell {
            model: self.model.clone(),
            architecture: self.architecture,
            dataset: self.dataset.clone(),
            published_dataset: published_dataset.to_string(),
            shortcut: Regimes::one(self.shortcut),
            method: Some(self.method),
            published_method: published_method.map(str::to_string),
            metric: ComparedMetric::Ours(self.metric),
            runs: self.runs,
            ours: self.value,
            ci_low: self.ci_low,
            ci_high: self.ci_high,
            published,
            verified: self.verified,
            published_sd: None,
            share: None,
            published_share: None,
        }
    }
}

/// The cells whose metric `keep` accepts, averaged over seeds.
pub(super) fn merge_seeds(cells: &[CellResult], keep: impl Fn(Metric) -> bool) -> Vec<OurCell> {
    let kept: Vec<CellResult> = cells.iter().filter(|c| keep(c.metric)).cloned().collect();
    crate::tables::over_seeds(&kept)
        .into_iter()
        .map(|summary| {
            let cell = summary.cell;
            OurCell {
                method: cell.method,
                model: cell.key.model,
                architecture: cell.key.architecture,
                dataset: cell.key.dataset,
                shortcut: cell.key.shortcut,
                metric: OurMetric::Grid(cell.metric),
                runs: summary.seeds as u32,
                value: cell.value,
                ci_low: cell.ci_low,
                ci_high: cell.ci_high,
                verified: cell.verified,
                share: cell.region_share,
            }
        })
        .collect()
}
