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
//! - Seeds: cells that differ only by seed are averaged; the 95% interval is the
//!   mean of the per-seed bootstrap bounds (present only if every seed has one), an
//!   approximation that ignores seed-to-seed spread.
//!
//! Findings (✓ holds, ✗ does not, ? cannot tell):
//! - Precision/rank, per (model, dataset, shortcut) with ≥ 2 common methods: the
//!   paper's best method (any of a tie) is our best or its interval overlaps our
//!   best's; with ≥ 3, Spearman ρ of precision ≥ 0.5. Per (model, method family):
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

use std::collections::HashSet;
use std::fmt;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};

use polars::prelude::*;

use super::markdown::{self, Align};
use super::tables::format_fixed;
use super::{CellResult, VerificationRow};
use crate::metrics::agreement::rank_correlation as spearman;
use crate::salience::{AttentionView, Baseline, GradientMethod, Method, Target};
use crate::shortcut::ShortcutKind;
use crate::spec::expand::expand;

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
const CROWD_ACCURACY_HEADER: [&str; 8] = ["dataset", "method", "top5", "top10", "top20", "top30", "top40", "score"];

const ORIGINAL_ACCURACY_METRIC: &str = "original_test_accuracy_pct";
const DROP_METRIC: &str = "mean_drop_with_shortcut_pct";
/// Zhou et al.'s "other words": 1 − attr − attr-noncorr, a metric we derive.
const OTHER_METRIC: &str = "attr-other";

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
        "{}:1: unknown header `{header}`; expected one of `{}`, `{}`, `{}`, `{}`",
        path.display(),
        PRECISION_RANK_HEADER.join(","),
        DIAGNOSTICITY_HEADER.join(","),
        SOURCE_ACCURACY_HEADER.join(","),
        ZHOU_ATTR_HEADER.join(",")
    )]
    UnknownHeader { path: PathBuf, header: String },
    #[error("{}: {what} has no counterpart in grid results; nothing to compare", path.display())]
    NoCounterpart { path: PathBuf, what: &'static str },
    /// Malformed CSV syntax (quotes).
    #[error("{}:{line}:{column}: {message}", path.display())]
    Syntax { path: PathBuf, line: usize, column: usize, message: String },
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
// Published numbers
// ---------------------------------------------------------------------------

/// An architecture as the papers name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PaperArch {
    Lstm,
    Bert,
}

impl PaperArch {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "lstm" => Some(Self::Lstm),
            "bert" => Some(Self::Bert),
            _ => None,
        }
    }

    /// The paper's spelling.
    pub fn name(self) -> &'static str {
        match self {
            Self::Lstm => "lstm",
            Self::Bert => "bert",
        }
    }

    /// Our `architecture` for it.
    pub fn architecture(self) -> &'static str {
        match self {
            Self::Lstm => "bilstm",
            Self::Bert => "bert",
        }
    }

    fn of_architecture(architecture: &str) -> Option<Self> {
        [Self::Lstm, Self::Bert].into_iter().find(|a| a.architecture() == architecture)
    }
}

/// One (arch, method config, dataset, shortcut) of Bastings et al.
#[derive(Debug, Clone, PartialEq)]
pub struct PrecisionRankRow {
    /// Line in the CSV.
    pub line: usize,
    pub arch: PaperArch,
    /// Canonical config name, e.g. `gradl-l1`.
    pub method: String,
    /// The CSV's method cell, e.g. `grad{p,l}-l1` (one number for the whole group).
    pub printed_as: String,
    pub dataset: String,
    pub shortcut: String,
    /// `None` where the paper prints no number (an empty CSV field).
    pub precision: Option<f64>,
    pub rank: Option<f64>,
}

impl PrecisionRankRow {
    /// The published number for our metric `precision` or `rank`.
    fn value(&self, metric: &str) -> Option<f64> {
        match metric {
            "precision" => self.precision,
            "rank" => self.rank,
            _ => None,
        }
    }
}

/// A feature attribution as Zhao & Aletras name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZhaoAttribution {
    Attention,
    ScaledAttention,
    /// InputXGrad (x∇x), printed "Gradients" in their Table 6.
    Gradients,
    IntegratedGradients,
    DeepLift,
}

impl ZhaoAttribution {
    const ALL: [Self; 5] =
        [Self::Attention, Self::ScaledAttention, Self::Gradients, Self::IntegratedGradients, Self::DeepLift];

    /// The paper's spelling.
    pub fn printed(self) -> &'static str {
        match self {
            Self::Attention => "Attention",
            Self::ScaledAttention => "Scaled attention",
            Self::Gradients => "Gradients",
            Self::IntegratedGradients => "IG",
            Self::DeepLift => "Deeplift",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.printed() == s)
    }

    /// How well our `method` stands for this attribution: `None` if it does not,
    /// lower is better (see the module docs for the choices).
    pub fn preference(self, method: &Method) -> Option<(u8, i64)> {
        let by_target = |t: &Target| if *t == Target::Logit { 0 } else { 1 };
        match (self, method) {
            (Self::Attention, Method::Attention(AttentionView::Additive | AttentionView::LastLayer)) => Some((0, 0)),
            (Self::Attention, Method::Attention(AttentionView::AllLayers)) => Some((1, 0)),
            (Self::ScaledAttention, Method::ScaledAttention) => Some((0, 0)),
            (Self::Gradients, Method::Gradient(GradientMethod::GradientTimesInput { target })) => {
                Some((by_target(target), 0))
            }
            (
                Self::IntegratedGradients,
                Method::Gradient(GradientMethod::IntegratedGradients { target, baseline: Baseline::Zero, steps }),
            ) => Some((by_target(target), -i64::from(*steps))),
            (Self::DeepLift, Method::DeepLift { baseline: Baseline::Zero }) => Some((0, 0)),
            _ => None,
        }
    }
}

/// One (dataset, attribution) of Zhao & Aletras: each metric's diagnosticity.
#[derive(Debug, Clone, PartialEq)]
pub struct DiagnosticityRow {
    pub line: usize,
    pub dataset: String,
    pub attribution: ZhaoAttribution,
    pub ns: f64,
    pub soft_ns: f64,
    pub nc: f64,
    pub soft_nc: f64,
}

impl DiagnosticityRow {
    fn value(&self, metric: DiagMetric) -> f64 {
        match metric {
            DiagMetric::Ns => self.ns,
            DiagMetric::SoftNs => self.soft_ns,
            DiagMetric::Nc => self.nc,
            DiagMetric::SoftNc => self.soft_nc,
        }
    }
}

/// One (arch, dataset) of Bastings et al. Table 1, in percent.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceAccuracyRow {
    pub line: usize,
    pub arch: PaperArch,
    pub dataset: String,
    pub original_test_accuracy_pct: f64,
    pub mean_drop_with_shortcut_pct: f64,
}

/// An attribution as Zhou et al. name it (their Table 1 has attention only).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZhouAttribution {
    Attention,
}

impl ZhouAttribution {
    const ALL: [Self; 1] = [Self::Attention];

    /// The CSV's spelling.
    pub fn printed(self) -> &'static str {
        match self {
            Self::Attention => "attention",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.printed() == s)
    }

    /// How well our `method` stands for it (lower is better): attention is `attn`
    /// on the BiLSTM, `attn-last` (else `attn-all`) on BERT, as for Zhao & Aletras.
    pub fn preference(self, method: &Method) -> Option<(u8, i64)> {
        match self {
            Self::Attention => ZhaoAttribution::Attention.preference(method),
        }
    }
}

/// One of Zhou et al.'s article manipulations of BeerAdvocate (their "dataset").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZhouDataset {
    /// §6.1: every article carries the label.
    Article,
    /// §6.2: correlating articles in the first half, non-correlating in the second.
    Cn,
    /// §6.2: the halves swapped.
    Nc,
}

impl ZhouDataset {
    const ALL: [Self; 3] = [Self::Article, Self::Cn, Self::Nc];

    /// The CSV's spelling.
    pub fn printed(self) -> &'static str {
        match self {
            Self::Article => "article",
            Self::Cn => "cn",
            Self::Nc => "nc",
        }
    }

    /// As the paper's Table 1 prints it.
    pub fn label(self) -> &'static str {
        match self {
            Self::Article => "Article",
            Self::Cn => "CN",
            Self::Nc => "NC",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.printed() == s)
    }

    /// Our shortcut kind for it.
    pub fn shortcut(self) -> ShortcutKind {
        match self {
            Self::Article => ShortcutKind::Articles,
            Self::Cn => ShortcutKind::ArticlesCn,
            Self::Nc => ShortcutKind::ArticlesNc,
        }
    }

    fn of_shortcut(shortcut: &str) -> Option<Self> {
        let kind = shortcut.parse::<ShortcutKind>().ok()?;
        Self::ALL.into_iter().find(|d| d.shortcut() == kind)
    }

    /// CN and NC have non-correlating articles; Article has none (the paper's NA).
    fn has_non_correlating(self) -> bool {
        self != Self::Article
    }
}

/// Where Zhou et al. measure Attr%.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ZhouRegion {
    Correlating,
    NonCorrelating,
    /// Every other word.
    Other,
}

impl ZhouRegion {
    const ALL: [Self; 3] = [Self::Correlating, Self::NonCorrelating, Self::Other];

    /// The CSV's spelling.
    pub fn printed(self) -> &'static str {
        match self {
            Self::Correlating => "correlating",
            Self::NonCorrelating => "non_correlating",
            Self::Other => "other",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.printed() == s)
    }

    /// Our metric for it (`attr-other` is derived, see the module docs).
    pub fn metric(self) -> &'static str {
        match self {
            Self::Correlating => "attr",
            Self::NonCorrelating => "attr-noncorr",
            Self::Other => OTHER_METRIC,
        }
    }
}

/// One (arch, attribution, dataset, region) of Zhou et al. Table 1, in percent.
#[derive(Debug, Clone, PartialEq)]
pub struct ZhouAttrRow {
    pub line: usize,
    pub arch: PaperArch,
    pub attribution: ZhouAttribution,
    pub dataset: ZhouDataset,
    pub region: ZhouRegion,
    /// Mean Attr% over the paper's 11 training runs.
    pub attr_pct: f64,
    /// Its standard deviation over the runs.
    pub attr_sd_pct: f64,
    /// The region's share of the words: what spreading attention evenly scores.
    pub frequency_pct: f64,
}

/// A published CSV, parsed.
#[derive(Debug, Clone, PartialEq)]
pub enum Published {
    /// Brace groups expanded: one row per config.
    PrecisionRank(Vec<PrecisionRankRow>),
    Diagnosticity(Vec<DiagnosticityRow>),
    SourceAccuracy(Vec<SourceAccuracyRow>),
    ZhouAttr(Vec<ZhouAttrRow>),
}

/// What a [`Published`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishedKind {
    PrecisionRank,
    Diagnosticity,
    SourceAccuracy,
    ZhouAttr,
}

impl fmt::Display for PublishedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::PrecisionRank => "Bastings et al. (2022): precision and mean rank per method config (Tables 10/11)",
            Self::Diagnosticity => "Zhao & Aletras (2023): diagnosticity of faithfulness metrics (Table 6)",
            Self::SourceAccuracy => "Bastings et al. (2022): accuracy of the source models (Table 1)",
            Self::ZhouAttr => "Zhou et al. (2022): attention Attr% on the article manipulations (Table 1)",
        })
    }
}

impl Published {
    pub fn kind(&self) -> PublishedKind {
        match self {
            Self::PrecisionRank(_) => PublishedKind::PrecisionRank,
            Self::Diagnosticity(_) => PublishedKind::Diagnosticity,
            Self::SourceAccuracy(_) => PublishedKind::SourceAccuracy,
            Self::ZhouAttr(_) => PublishedKind::ZhouAttr,
        }
    }
}

/// Reads a published CSV; its header says which kind it is.
pub fn load(path: &Path) -> Result<Published, CompareError> {
    let text = std::fs::read_to_string(path).map_err(|source| CompareError::Io { path: path.to_path_buf(), source })?;
    parse_published(path, &text)
}

/// [`load`] on text already read; `path` only names the file in errors.
fn parse_published(path: &Path, text: &str) -> Result<Published, CompareError> {
    let records = read_csv(path, text)?;
    let (header, rows) = records.split_first().ok_or_else(|| CompareError::Empty { path: path.to_path_buf() })?;
    let names: Vec<&str> = header.fields.iter().map(|f| f.trim()).collect();
    for row in rows {
        check_field_count(path, row, names.len())?;
    }
    let file = CsvFile { path, rows };
    if names == PRECISION_RANK_HEADER {
        file.precision_rank().map(Published::PrecisionRank)
    } else if names == DIAGNOSTICITY_HEADER {
        file.diagnosticity().map(Published::Diagnosticity)
    } else if names == SOURCE_ACCURACY_HEADER {
        file.source_accuracy().map(Published::SourceAccuracy)
    } else if names == ZHOU_ATTR_HEADER {
        file.zhou_attr().map(Published::ZhouAttr)
    } else if names == CROWD_ACCURACY_HEADER {
        Err(CompareError::NoCounterpart {
            path: path.to_path_buf(),
            what: "crowd workers' accuracy at finding the shortcut (Lu et al. 2024, people, not salience scores)",
        })
    } else {
        Err(CompareError::UnknownHeader { path: path.to_path_buf(), header: header.fields.join(",") })
    }
}

fn check_field_count(path: &Path, record: &Record, expected: usize) -> Result<(), CompareError> {
    if record.fields.len() == expected {
        return Ok(());
    }
    Err(CompareError::FieldCount { path: path.to_path_buf(), line: record.line, expected, found: record.fields.len() })
}

/// The data records of one file, with the path for errors.
struct CsvFile<'a> {
    path: &'a Path,
    rows: &'a [Record],
}

impl CsvFile<'_> {
    fn field_error(&self, record: &Record, column: &'static str, message: String) -> CompareError {
        CompareError::Field { path: self.path.to_path_buf(), line: record.line, column, message }
    }

    /// Field `i` (named `column`), trimmed and not empty.
    fn text<'r>(&self, record: &'r Record, i: usize, column: &'static str) -> Result<&'r str, CompareError> {
        let s = record.fields[i].trim();
        if s.is_empty() {
            return Err(self.field_error(record, column, "empty".into()));
        }
        Ok(s)
    }

    /// Field `i` as a finite number inside `range`.
    fn number(
        &self,
        record: &Record,
        i: usize,
        column: &'static str,
        range: RangeInclusive<f64>,
    ) -> Result<f64, CompareError> {
        let s = self.text(record, i, column)?;
        let v: f64 = s.parse().map_err(|_| self.field_error(record, column, format!("`{s}` is not a number")))?;
        if !v.is_finite() || !range.contains(&v) {
            let message = format!("{s} is outside {}..={}", range.start(), range.end());
            return Err(self.field_error(record, column, message));
        }
        Ok(v)
    }

    /// [`Self::number`], or `None` for an empty field (a number the paper does not print).
    fn optional_number(
        &self,
        record: &Record,
        i: usize,
        column: &'static str,
        range: RangeInclusive<f64>,
    ) -> Result<Option<f64>, CompareError> {
        if record.fields[i].trim().is_empty() {
            return Ok(None);
        }
        self.number(record, i, column, range).map(Some)
    }

    fn arch(&self, record: &Record, i: usize) -> Result<PaperArch, CompareError> {
        let s = self.text(record, i, "arch")?;
        PaperArch::parse(s)
            .ok_or_else(|| self.field_error(record, "arch", format!("`{s}` is neither `lstm` nor `bert`")))
    }

    /// The configs a method cell stands for, canonical, in expansion order.
    fn methods(&self, record: &Record, i: usize) -> Result<Vec<String>, CompareError> {
        let printed = self.text(record, i, "method")?;
        let names = expand(printed).map_err(|e| self.field_error(record, "method", e.to_string()))?;
        names
            .iter()
            .map(|n| {
                n.parse::<Method>()
                    .map(|m| m.to_string())
                    .map_err(|e| self.field_error(record, "method", e.to_string()))
            })
            .collect()
    }

    fn precision_rank(&self) -> Result<Vec<PrecisionRankRow>, CompareError> {
        let mut out = Vec::new();
        let mut seen = Seen::default();
        for record in self.rows {
            let arch = self.arch(record, 0)?;
            let printed_as = self.text(record, 1, "method")?.to_string();
            let dataset = self.text(record, 2, "dataset")?.to_string();
            let shortcut = self.text(record, 3, "shortcut")?.to_string();
            let precision = self.optional_number(record, 4, "precision", 0.0..=1.0)?;
            let rank = self.optional_number(record, 5, "rank", 1.0..=1e6)?;
            for method in self.methods(record, 1)? {
                let what =
                    format!("arch `{}`, method `{method}`, dataset `{dataset}`, shortcut `{shortcut}`", arch.name());
                seen.check(self.path, record.line, what)?;
                let (dataset, shortcut, printed_as) = (dataset.clone(), shortcut.clone(), printed_as.clone());
                let line = record.line;
                out.push(PrecisionRankRow { line, arch, method, printed_as, dataset, shortcut, precision, rank });
            }
        }
        Ok(out)
    }

    fn diagnosticity(&self) -> Result<Vec<DiagnosticityRow>, CompareError> {
        let mut out = Vec::new();
        let mut seen = Seen::default();
        for record in self.rows {
            let dataset = self.text(record, 0, "dataset")?.to_string();
            let printed = self.text(record, 1, "attribution")?;
            let attribution = ZhaoAttribution::parse(printed).ok_or_else(|| {
                let known: Vec<&str> = ZhaoAttribution::ALL.iter().map(|a| a.printed()).collect();
                self.field_error(record, "attribution", format!("unknown `{printed}`; known: {}", known.join(", ")))
            })?;
            seen.check(self.path, record.line, format!("dataset `{dataset}`, attribution `{printed}`"))?;
            out.push(DiagnosticityRow {
                line: record.line,
                dataset,
                attribution,
                ns: self.number(record, 2, "ns", 0.0..=1.0)?,
                soft_ns: self.number(record, 3, "soft_ns", 0.0..=1.0)?,
                nc: self.number(record, 4, "nc", 0.0..=1.0)?,
                soft_nc: self.number(record, 5, "soft_nc", 0.0..=1.0)?,
            });
        }
        Ok(out)
    }

    fn source_accuracy(&self) -> Result<Vec<SourceAccuracyRow>, CompareError> {
        let mut out = Vec::new();
        let mut seen = Seen::default();
        for record in self.rows {
            let arch = self.arch(record, 0)?;
            let dataset = self.text(record, 1, "dataset")?.to_string();
            seen.check(self.path, record.line, format!("arch `{}`, dataset `{dataset}`", arch.name()))?;
            out.push(SourceAccuracyRow {
                line: record.line,
                arch,
                dataset,
                original_test_accuracy_pct: self.number(record, 2, "original_test_accuracy_pct", 0.0..=100.0)?,
                mean_drop_with_shortcut_pct: self.number(record, 3, "mean_drop_with_shortcut_pct", -100.0..=100.0)?,
            });
        }
        Ok(out)
    }

    fn zhou_attr(&self) -> Result<Vec<ZhouAttrRow>, CompareError> {
        let mut out = Vec::new();
        let mut seen = Seen::default();
        for record in self.rows {
            let arch = self.arch(record, 0)?;
            let printed = self.text(record, 1, "attribution")?;
            let attribution = ZhouAttribution::parse(printed).ok_or_else(|| {
                let known: Vec<&str> = ZhouAttribution::ALL.iter().map(|a| a.printed()).collect();
                self.field_error(record, "attribution", format!("unknown `{printed}`; known: {}", known.join(", ")))
            })?;
            let printed = self.text(record, 2, "dataset")?;
            let dataset = ZhouDataset::parse(printed).ok_or_else(|| {
                let known: Vec<&str> = ZhouDataset::ALL.iter().map(|d| d.printed()).collect();
                self.field_error(record, "dataset", format!("unknown `{printed}`; known: {}", known.join(", ")))
            })?;
            let printed = self.text(record, 3, "region")?;
            let region = ZhouRegion::parse(printed).ok_or_else(|| {
                let known: Vec<&str> = ZhouRegion::ALL.iter().map(|r| r.printed()).collect();
                self.field_error(record, "region", format!("unknown `{printed}`; known: {}", known.join(", ")))
            })?;
            if region == ZhouRegion::NonCorrelating && !dataset.has_non_correlating() {
                let message = format!("`{}` has no non-correlating articles (the paper prints NA)", dataset.printed());
                return Err(self.field_error(record, "region", message));
            }
            let what = format!(
                "arch `{}`, attribution `{}`, dataset `{}`, region `{}`",
                arch.name(),
                attribution.printed(),
                dataset.printed(),
                region.printed()
            );
            seen.check(self.path, record.line, what)?;
            out.push(ZhouAttrRow {
                line: record.line,
                arch,
                attribution,
                dataset,
                region,
                attr_pct: self.number(record, 4, "attr_pct", 0.0..=100.0)?,
                attr_sd_pct: self.number(record, 5, "attr_sd_pct", 0.0..=100.0)?,
                frequency_pct: self.number(record, 6, "frequency_pct", 0.0..=100.0)?,
            });
        }
        Ok(out)
    }
}

/// Keys already read, with their lines, to reject a number printed twice.
#[derive(Default)]
struct Seen(std::collections::HashMap<String, usize>);

impl Seen {
    fn check(&mut self, path: &Path, line: usize, what: String) -> Result<(), CompareError> {
        if let Some(&first_line) = self.0.get(&what) {
            return Err(CompareError::Duplicate { path: path.to_path_buf(), line, first_line, what });
        }
        self.0.insert(what, line);
        Ok(())
    }
}

// ---------------------------------------------------------------------------
// CSV syntax
// ---------------------------------------------------------------------------

/// One CSV record and the line it starts on.
#[derive(Debug, Clone, PartialEq)]
struct Record {
    line: usize,
    fields: Vec<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Quoting {
    /// At the start of a field.
    Start,
    Unquoted,
    Quoted,
    /// Just read a `"` inside a quoted field: the end, or the first of `""`.
    AfterQuote,
}

/// RFC 4180 records: `,` separates, `"…"` quotes (with `""` for a quote, commas
/// and line breaks allowed inside), `\n` or `\r\n` ends a record. A leading BOM and
/// blank lines are skipped.
fn read_csv(path: &Path, text: &str) -> Result<Vec<Record>, CompareError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let syntax = |line, column, message: &str| CompareError::Syntax {
        path: path.to_path_buf(),
        line,
        column,
        message: message.to_string(),
    };
    let mut records = Vec::new();
    let (mut fields, mut field) = (Vec::new(), String::new());
    let (mut line, mut column, mut record_line) = (1, 0, 1);
    let mut state = Quoting::Start;
    let mut quote_opened_at = (1, 1);
    for c in text.chars() {
        column += 1;
        match (state, c) {
            (Quoting::Quoted, '"') => state = Quoting::AfterQuote,
            (Quoting::Quoted, c) => field.push(c),
            (Quoting::AfterQuote, '"') => {
                field.push('"');
                state = Quoting::Quoted;
            }
            (_, '\r') => {} // only ever before `\n` in the files we read
            (_, ',') => {
                fields.push(std::mem::take(&mut field));
                state = Quoting::Start;
            }
            (_, '\n') => {
                fields.push(std::mem::take(&mut field));
                push_record(&mut records, record_line, std::mem::take(&mut fields));
                state = Quoting::Start;
            }
            (Quoting::Start, '"') => {
                quote_opened_at = (line, column);
                state = Quoting::Quoted;
            }
            (Quoting::Unquoted, '"') => {
                return Err(syntax(line, column, "a `\"` inside an unquoted field (quote the whole field)"));
            }
            (Quoting::Start | Quoting::Unquoted, c) => {
                field.push(c);
                state = Quoting::Unquoted;
            }
            (Quoting::AfterQuote, c) => {
                return Err(syntax(line, column, &format!("`{c}` after a closing quote; expected `,` or a line end")));
            }
        }
        if c == '\n' {
            line += 1;
            column = 0;
            if state != Quoting::Quoted {
                record_line = line;
            }
        }
    }
    if state == Quoting::Quoted {
        return Err(syntax(quote_opened_at.0, quote_opened_at.1, "this quote is never closed"));
    }
    if !fields.is_empty() || !field.is_empty() {
        fields.push(field);
        push_record(&mut records, record_line, fields);
    }
    Ok(records)
}

/// Adds a record unless it is a blank line.
fn push_record(records: &mut Vec<Record>, line: usize, fields: Vec<String>) {
    let blank = fields.len() == 1 && fields[0].trim().is_empty();
    if !blank {
        records.push(Record { line, fields });
    }
}

// ---------------------------------------------------------------------------
// The comparison
// ---------------------------------------------------------------------------

/// One of our numbers beside the published one.
#[derive(Debug, Clone, PartialEq)]
pub struct ComparedCell {
    pub model: String,
    pub architecture: String,
    /// Our dataset name.
    pub dataset: String,
    /// The paper's dataset it was compared with (differs under an alias).
    pub published_dataset: String,
    /// Source accuracy: the shortcuts averaged, joined with `+`.
    pub shortcut: String,
    /// Our method config (none for source accuracy).
    pub method: Option<String>,
    /// The paper's method cell: a brace group, or a Zhao & Aletras attribution.
    pub published_method: Option<String>,
    pub metric: String,
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

/// A claim of the paper, checked on our numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub statement: String,
    /// `None`: cannot tell (a number is missing on one side).
    pub holds: Option<bool>,
    pub evidence: String,
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
    aliases: &[(String, String)],
) -> Result<Comparison, CompareError> {
    let published = load(path)?;
    let mut comparison = compare(&published, cells, verification, aliases)?;
    comparison.source = path.display().to_string();
    Ok(comparison)
}

/// Matches our cells (or verification rows, for source accuracy) to the published
/// numbers and checks the paper's findings on them.
pub fn compare(
    published: &Published,
    cells: &[CellResult],
    verification: &[VerificationRow],
    aliases: &[(String, String)],
) -> Result<Comparison, CompareError> {
    let aliases = Aliases(aliases);
    let outcome = match published {
        Published::PrecisionRank(rows) => compare_precision_rank(rows, cells, &aliases),
        Published::Diagnosticity(rows) => compare_diagnosticity(rows, cells, &aliases),
        Published::SourceAccuracy(rows) => compare_source_accuracy(rows, verification, &aliases),
        Published::ZhouAttr(rows) => compare_zhou_attr(rows, cells, verification),
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
struct Outcome {
    cells: Vec<ComparedCell>,
    findings: Vec<Finding>,
    summary: Vec<String>,
    unmatched_published: usize,
    unmatched_ours: usize,
}

/// The user's `(ours, published)` dataset aliases.
struct Aliases<'a>(&'a [(String, String)]);

impl Aliases<'_> {
    /// Our dataset `ours` is compared with the paper's `published`.
    fn matches(&self, ours: &str, published: &str) -> bool {
        ours.eq_ignore_ascii_case(published)
            || self.0.iter().any(|(o, p)| o.eq_ignore_ascii_case(ours) && p.eq_ignore_ascii_case(published))
    }
}

/// Our cells with seeds merged, keyed without the seed, in first-appearance order.
#[derive(Debug, Clone, PartialEq)]
struct OurCell {
    model: String,
    architecture: String,
    dataset: String,
    shortcut: String,
    /// Canonical when it parses as a [`Method`].
    method: String,
    metric: String,
    runs: u32,
    value: f64,
    ci_low: Option<f64>,
    ci_high: Option<f64>,
    verified: bool,
    /// Mean `region_share` over the seeds (if every seed has one).
    share: Option<f64>,
}

impl OurCell {
    fn compared(&self, published_dataset: &str, published_method: Option<&str>, published: f64) -> ComparedCell {
        ComparedCell {
            model: self.model.clone(),
            architecture: self.architecture.clone(),
            dataset: self.dataset.clone(),
            published_dataset: published_dataset.to_string(),
            shortcut: self.shortcut.clone(),
            method: Some(self.method.clone()),
            published_method: published_method.map(str::to_string),
            metric: self.metric.clone(),
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

fn canonical_method(name: &str) -> String {
    name.parse::<Method>().map(|m| m.to_string()).unwrap_or_else(|_| name.to_string())
}

/// The cells whose metric `keep` accepts, averaged over seeds.
fn merge_seeds(cells: &[CellResult], keep: impl Fn(&str) -> bool) -> Vec<OurCell> {
    super::tables::seed_groups(cells.iter().filter(|c| keep(&c.metric)))
        .into_iter()
        .map(|seeds| {
            let first = seeds[0];
            let n = seeds.len() as f64;
            let mean_bound = |bound: fn(&CellResult) -> Option<f64>| {
                seeds.iter().map(|c| bound(c)).sum::<Option<f64>>().map(|sum| sum / n)
            };
            OurCell {
                model: first.model.clone(),
                architecture: first.architecture.clone(),
                dataset: first.dataset.clone(),
                shortcut: first.shortcut.clone(),
                method: canonical_method(&first.method),
                metric: first.metric.clone(),
                runs: seeds.len() as u32,
                value: seeds.iter().map(|c| c.value).sum::<f64>() / n,
                ci_low: mean_bound(|c| c.ci_low),
                ci_high: mean_bound(|c| c.ci_high),
                verified: seeds.iter().all(|c| c.verified),
                share: mean_bound(|c| c.region_share),
            }
        })
        .collect()
}

// --- Bastings et al.: precision and rank -------------------------------------

fn compare_precision_rank(rows: &[PrecisionRankRow], cells: &[CellResult], aliases: &Aliases) -> Outcome {
    let ours = merge_seeds(cells, |m| m == "precision" || m == "rank");
    let mut matched = vec![false; rows.len()];
    let mut compared = Vec::new();
    let mut unmatched_ours = 0;
    for cell in &ours {
        let arch = PaperArch::of_architecture(&cell.architecture);
        let hits: Vec<usize> = (0..rows.len())
            .filter(|&i| {
                let r = &rows[i];
                Some(r.arch) == arch
                    && r.shortcut == cell.shortcut
                    && r.method == cell.method
                    && aliases.matches(&cell.dataset, &r.dataset)
                    && r.value(&cell.metric).is_some()
            })
            .collect();
        if hits.is_empty() {
            unmatched_ours += 1;
        }
        for i in hits {
            matched[i] = true;
            let r = &rows[i];
            let published = r.value(&cell.metric).unwrap_or(f64::NAN); // `hits` has a value
            compared.push(cell.compared(&r.dataset, Some(&r.printed_as), published));
        }
    }
    let unmatched_published = matched.iter().filter(|m| !**m).count();
    let precision: Vec<&ComparedCell> = compared.iter().filter(|c| c.metric == "precision").collect();
    let mut findings = Vec::new();
    for site in sites(&precision) {
        findings.extend(best_method_finding(&site));
        findings.extend(spearman_finding(&site));
    }
    findings.extend(beats_random_findings(&precision, &ours, rows));
    let summary = precision_rank_summary(&compared, unmatched_published, unmatched_ours);
    Outcome { cells: compared, findings, summary, unmatched_published, unmatched_ours }
}

/// The compared precision cells of one (model, dataset, published dataset, shortcut).
struct Site<'a> {
    cells: Vec<&'a ComparedCell>,
}

impl Site<'_> {
    fn name(&self) -> String {
        let c = self.cells[0];
        let alias =
            if c.published_dataset == c.dataset { String::new() } else { format!(" (as {})", c.published_dataset) };
        format!("{} on {}:{}{alias}", c.model, c.dataset, c.shortcut)
    }

    fn any_unverified(&self) -> bool {
        self.cells.iter().any(|c| !c.verified)
    }
}

/// Groups cells by (model, dataset, published dataset, shortcut), first appearance first.
fn sites<'a>(cells: &[&'a ComparedCell]) -> Vec<Site<'a>> {
    let mut out: Vec<Site<'a>> = Vec::new();
    for &c in cells {
        let same = |s: &&mut Site<'a>| {
            let f = s.cells[0];
            f.model == c.model
                && f.dataset == c.dataset
                && f.published_dataset == c.published_dataset
                && f.shortcut == c.shortcut
        };
        match out.iter_mut().find(same) {
            Some(site) => site.cells.push(c),
            None => out.push(Site { cells: vec![c] }),
        }
    }
    out
}

fn method_of(c: &ComparedCell) -> &str {
    c.method.as_deref().unwrap_or("")
}

/// `0.97 [0.93, 1.00]`
fn value_with_interval(c: &ComparedCell) -> String {
    let d = decimals(&c.metric);
    match (c.ci_low, c.ci_high) {
        (Some(lo), Some(hi)) => {
            format!("{} [{}, {}]", format_fixed(c.ours, d), format_fixed(lo, d), format_fixed(hi, d))
        }
        _ => format!("{} (no interval)", format_fixed(c.ours, d)),
    }
}

/// Our intervals of `a` and `b` overlap (equal values without intervals count too).
fn statistically_tied(a: &ComparedCell, b: &ComparedCell) -> bool {
    match (a.ci_low, a.ci_high, b.ci_low, b.ci_high) {
        (Some(al), Some(ah), Some(bl), Some(bh)) => al <= bh && bl <= ah,
        _ => a.ours == b.ours,
    }
}

const UNVERIFIED_NOTE: &str = "; ⚠ a model here failed verification";

/// Finding (1): the paper's best method among the common ones is our best too, or
/// tied with it. Needs two methods to be a question at all.
fn best_method_finding(site: &Site) -> Option<Finding> {
    if site.cells.len() < 2 {
        return None;
    }
    let top = site.cells.iter().map(|c| c.published).fold(f64::NEG_INFINITY, f64::max);
    // The paper often prints several 1.00s: any of them may be the one.
    let published_best: Vec<&ComparedCell> = site.cells.iter().copied().filter(|c| c.published == top).collect();
    let our_best = site.cells.iter().copied().fold(site.cells[0], |b, c| if c.ours > b.ours { c } else { b });
    let names: Vec<&str> = published_best.iter().map(|c| method_of(c)).collect();
    let statement = format!(
        "{}: the published best method ({}, {}) is also ours, or statistically tied with ours",
        site.name(),
        names.join(" = "),
        format_fixed(top, 2)
    );
    let (holds, how) = if published_best.iter().any(|c| std::ptr::eq(*c, our_best)) {
        (true, format!("{} is our best: {}", method_of(our_best), value_with_interval(our_best)))
    } else {
        let tied = published_best.iter().find(|c| statistically_tied(c, our_best));
        let shown = tied.unwrap_or(&published_best[0]);
        let verdict = if tied.is_some() { "intervals overlap: tied" } else { "intervals do not overlap" };
        let how = format!(
            "our best is {} {}; {} {} ({verdict})",
            method_of(our_best),
            value_with_interval(our_best),
            method_of(shown),
            value_with_interval(shown)
        );
        (tied.is_some(), how)
    };
    let note = if site.any_unverified() { UNVERIFIED_NOTE } else { "" };
    Some(Finding { statement, holds: Some(holds), evidence: format!("{how}{note}") })
}

/// Finding (2): the common methods rank alike (Spearman ρ ≥ [`SPEARMAN_AGREES`]).
fn spearman_finding(site: &Site) -> Option<Finding> {
    let n = site.cells.len();
    if n < MIN_SPEARMAN_METHODS {
        return None;
    }
    let ours: Vec<f64> = site.cells.iter().map(|c| c.ours).collect();
    let published: Vec<f64> = site.cells.iter().map(|c| c.published).collect();
    let statement = format!(
        "{}: our precision ranks the {n} common methods as the paper does (Spearman ρ ≥ {SPEARMAN_AGREES})",
        site.name()
    );
    let note = if site.any_unverified() { UNVERIFIED_NOTE } else { "" };
    let (holds, evidence) = match spearman(&ours, &published) {
        Some(rho) => (Some(rho >= SPEARMAN_AGREES), format!("ρ = {rho:.2} over {n} methods{note}")),
        None => (None, format!("ρ is undefined: one side gives all {n} methods the same precision{note}")),
    };
    Some(Finding { statement, holds, evidence })
}

/// The method family a config belongs to (`None` for `random`).
fn family(method: &str) -> Option<&'static str> {
    Some(match method.parse::<Method>().ok()? {
        Method::Gradient(GradientMethod::Gradient { .. }) => "grad",
        Method::Gradient(GradientMethod::GradientTimesInput { .. }) => "gxi",
        Method::Gradient(GradientMethod::IntegratedGradients { .. }) => "ig",
        Method::SmoothGrad { .. } => "smoothgrad",
        Method::Lime { .. } => "lime",
        Method::KernelShap { .. } => "kernelshap",
        Method::Occlusion { .. } => "occlusion",
        Method::Attention(_) | Method::ScaledAttention => "attention",
        Method::DeepLift { .. } => "deeplift",
        Method::Random => return None,
    })
}

/// Finding (3), per (model, family): the family beats random on average (mean
/// precision margin over `random` on the same dataset and shortcut), in the paper
/// and in ours alike.
fn beats_random_findings(precision: &[&ComparedCell], ours: &[OurCell], rows: &[PrecisionRankRow]) -> Vec<Finding> {
    let mut groups: Vec<(&str, &str, &str, Vec<&ComparedCell>)> = Vec::new();
    for &c in precision {
        let Some(fam) = c.method.as_deref().and_then(family) else { continue };
        match groups.iter_mut().find(|g| g.0 == c.model && g.2 == fam) {
            Some(g) => g.3.push(c),
            None => groups.push((&c.model, &c.architecture, fam, vec![c])),
        }
    }
    let randoms: Vec<&OurCell> = ours.iter().filter(|c| c.method == "random" && c.metric == "precision").collect();
    groups
        .into_iter()
        .map(|(model, arch, fam, cells)| beats_random_finding(model, arch, fam, &cells, &randoms, rows))
        .collect()
}

fn beats_random_finding(
    model: &str,
    architecture: &str,
    family: &str,
    cells: &[&ComparedCell],
    our_randoms: &[&OurCell],
    rows: &[PrecisionRankRow],
) -> Finding {
    let arch = PaperArch::of_architecture(architecture);
    let mut margins = Vec::new(); // (ours, published)
    let (mut our_random_missing, mut paper_random_missing) = (false, false);
    for c in cells {
        let our_random =
            our_randoms.iter().find(|r| r.model == c.model && r.dataset == c.dataset && r.shortcut == c.shortcut);
        let paper_random = rows
            .iter()
            .find(|r| {
                Some(r.arch) == arch
                    && r.dataset == c.published_dataset
                    && r.shortcut == c.shortcut
                    && r.method == "random"
            })
            .and_then(|r| r.precision);
        our_random_missing |= our_random.is_none();
        paper_random_missing |= paper_random.is_none();
        if let (Some(o), Some(p)) = (our_random, paper_random) {
            margins.push((c.ours - o.value, c.published - p));
        }
    }
    let subject = format!("{model} ({architecture}): {family} methods");
    if margins.is_empty() {
        let missing = match (our_random_missing, paper_random_missing) {
            (true, true) => "neither side has",
            (true, false) => "we have no",
            _ => "the paper prints no",
        };
        return Finding {
            statement: format!("{subject} beat random as often as in the paper"),
            holds: None,
            evidence: format!("{missing} `random` precision beside these {} cell(s)", cells.len()),
        };
    }
    let n = margins.len();
    let ours_mean = margins.iter().map(|m| m.0).sum::<f64>() / n as f64;
    let paper_mean = margins.iter().map(|m| m.1).sum::<f64>() / n as f64;
    let ours_wins = margins.iter().filter(|m| m.0 > 0.0).count();
    let paper_wins = margins.iter().filter(|m| m.1 > 0.0).count();
    let verb = if paper_mean > 0.0 { "beat" } else { "do not beat" };
    Finding {
        statement: format!("{subject} {verb} random on average, as in the paper"),
        holds: Some((ours_mean > 0.0) == (paper_mean > 0.0)),
        evidence: format!(
            "mean precision margin over random: published {}, ours {}, over {n} cell(s) (above random: published {paper_wins}/{n}, ours {ours_wins}/{n})",
            signed(paper_mean, 2),
            signed(ours_mean, 2)
        ),
    }
}

fn precision_rank_summary(compared: &[ComparedCell], unmatched_published: usize, unmatched_ours: usize) -> Vec<String> {
    let mut out = vec![format!(
        "{} of our cells compared; {unmatched_published} published configs have no cell of ours; {unmatched_ours} of our precision/rank cells have no published number.",
        compared.len()
    )];
    out.extend(closeness_line("Precision", compared, "precision", Some(NEAR)));
    out.extend(closeness_line("Mean rank", compared, "rank", None));
    out.push(
        "A number the paper printed for a brace group (e.g. `grad{p,l}-l1`) is compared with each config of the group."
            .into(),
    );
    out.extend(unverified_line(compared));
    out
}

/// `Precision: 2 of 5 cells (40%) within 0.10 of the published number; published
/// inside our 95% interval in 1 of 5.` `None` when no cell has `metric`.
fn closeness_line(label: &str, cells: &[ComparedCell], metric: &str, near: Option<f64>) -> Option<String> {
    let cells: Vec<&ComparedCell> = cells.iter().filter(|c| c.metric == metric).collect();
    if cells.is_empty() {
        return None;
    }
    let n = cells.len();
    let mut parts = Vec::new();
    if let Some(near) = near {
        let close = cells.iter().filter(|c| c.difference().abs() <= near).count();
        let d = decimals(metric);
        parts.push(format!(
            "{close} of {n} cells ({}) within {} of the published number",
            percent(close, n),
            format_fixed(near, d)
        ));
    } else {
        let mean_abs = cells.iter().map(|c| c.difference().abs()).sum::<f64>() / n as f64;
        parts.push(format!("mean absolute difference {} over {n} cells", format_fixed(mean_abs, decimals(metric))));
    }
    let with_interval: Vec<bool> = cells.iter().filter_map(|c| c.within_interval()).collect();
    if !with_interval.is_empty() {
        let inside = with_interval.iter().filter(|b| **b).count();
        parts.push(format!("published inside our 95% interval in {inside} of {}", with_interval.len()));
    }
    Some(format!("{label}: {}.", parts.join("; ")))
}

fn unverified_line(cells: &[ComparedCell]) -> Option<String> {
    let failed = cells.iter().filter(|c| !c.verified).count();
    (failed > 0)
        .then(|| format!("⚠ {failed} compared cells come from models that failed verification (`verified` = no)."))
}

fn percent(k: usize, n: usize) -> String {
    format!("{:.0}%", 100.0 * k as f64 / n as f64)
}

// --- Zhao & Aletras: diagnosticity -------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DiagMetric {
    Ns,
    SoftNs,
    Nc,
    SoftNc,
}

impl DiagMetric {
    const ALL: [Self; 4] = [Self::Ns, Self::SoftNs, Self::Nc, Self::SoftNc];

    /// Our metric name.
    fn ours(self) -> &'static str {
        match self {
            Self::Ns => "diag-ns",
            Self::SoftNs => "diag-soft-ns",
            Self::Nc => "diag-nc",
            Self::SoftNc => "diag-soft-nc",
        }
    }

    fn label(self) -> &'static str {
        match self {
            Self::Ns => "NS",
            Self::SoftNs => "Soft-NS",
            Self::Nc => "NC",
            Self::SoftNc => "Soft-NC",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// One published (dataset, attribution) matched to our cells at one (model,
/// dataset, shortcut): our and the paper's value of each metric we have.
struct DiagMatch {
    model: String,
    dataset: String,
    published_dataset: String,
    attribution: ZhaoAttribution,
    /// (ours, published) per [`DiagMetric::index`].
    values: [Option<(f64, f64)>; 4],
    verified: bool,
}

fn compare_diagnosticity(rows: &[DiagnosticityRow], cells: &[CellResult], aliases: &Aliases) -> Outcome {
    let ours = merge_seeds(cells, |m| DiagMetric::ALL.iter().any(|d| d.ours() == m));
    let mut used = vec![false; ours.len()];
    let mut matched = vec![false; rows.len()];
    let mut compared = Vec::new();
    let mut matches = Vec::new();
    for (model, dataset, shortcut) in diag_sites(&ours) {
        let here: Vec<usize> = (0..ours.len())
            .filter(|&i| ours[i].model == model && ours[i].dataset == dataset && ours[i].shortcut == shortcut)
            .collect();
        for (r, row) in rows.iter().enumerate().filter(|(_, r)| aliases.matches(&dataset, &r.dataset)) {
            let Some(method) = chosen_method(row.attribution, here.iter().map(|&i| ours[i].method.as_str())) else {
                continue;
            };
            let mut m = DiagMatch {
                model: model.clone(),
                dataset: dataset.clone(),
                published_dataset: row.dataset.clone(),
                attribution: row.attribution,
                values: [None; 4],
                verified: true,
            };
            for metric in DiagMetric::ALL {
                let Some(&i) = here.iter().find(|&&i| ours[i].method == method && ours[i].metric == metric.ours())
                else {
                    continue;
                };
                used[i] = true;
                matched[r] = true;
                let cell = &ours[i];
                m.verified &= cell.verified;
                m.values[metric.index()] = Some((cell.value, row.value(metric)));
                compared.push(cell.compared(&row.dataset, Some(row.attribution.printed()), row.value(metric)));
            }
            matches.push(m);
        }
    }
    let unmatched_published = matched.iter().filter(|m| !**m).count();
    let unmatched_ours = used.iter().filter(|u| !**u).count();
    let findings = diagnosticity_findings(&matches);
    let summary = diagnosticity_summary(&compared, unmatched_published, unmatched_ours);
    Outcome { cells: compared, findings, summary, unmatched_published, unmatched_ours }
}

/// Distinct (model, dataset, shortcut) of our diagnosticity cells, in order.
fn diag_sites(ours: &[OurCell]) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    for c in ours {
        if !out.iter().any(|(m, d, s)| *m == c.model && *d == c.dataset && *s == c.shortcut) {
            out.push((c.model.clone(), c.dataset.clone(), c.shortcut.clone()));
        }
    }
    out
}

/// Our method that best stands for `attribution` among `methods` (first on ties).
fn chosen_method<'a>(attribution: ZhaoAttribution, methods: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    best_method(|m| attribution.preference(m), methods)
}

/// The method of `methods` with the lowest `preference` (first on ties); `None`
/// if no method stands for it.
fn best_method<'a>(
    preference: impl Fn(&Method) -> Option<(u8, i64)>,
    methods: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let mut best: Option<((u8, i64), &str)> = None;
    for name in methods {
        let Some(p) = name.parse::<Method>().ok().and_then(|m| preference(&m)) else { continue };
        if best.is_none_or(|(b, _)| p < b) {
            best = Some((p, name));
        }
    }
    best.map(|(_, name)| name)
}

/// Per (model, dataset) and, over two or more datasets, per model: the direction of
/// Soft-NS vs NS and of Soft-NC vs NC, averaged over the matched attributions.
fn diagnosticity_findings(matches: &[DiagMatch]) -> Vec<Finding> {
    let mut scopes: Vec<(&str, &str, &str)> = Vec::new();
    for m in matches {
        let scope = (m.model.as_str(), m.dataset.as_str(), m.published_dataset.as_str());
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    let mut findings = Vec::new();
    for &(model, dataset, published) in &scopes {
        let here: Vec<&DiagMatch> = matches
            .iter()
            .filter(|m| m.model == model && m.dataset == dataset && m.published_dataset == published)
            .collect();
        let alias = if dataset == published { String::new() } else { format!(" (as {published})") };
        let name = format!("{model} on {dataset}{alias}");
        findings.extend(soft_vs_hard_findings(&name, &here));
    }
    let mut models: Vec<&str> = Vec::new();
    for &(model, ..) in &scopes {
        let datasets = scopes.iter().filter(|s| s.0 == model).count();
        if datasets >= 2 && !models.contains(&model) {
            models.push(model);
            let here: Vec<&DiagMatch> = matches.iter().filter(|m| m.model == model).collect();
            findings.extend(soft_vs_hard_findings(&format!("{model}, all compared datasets"), &here));
        }
    }
    findings
}

fn soft_vs_hard_findings(name: &str, matches: &[&DiagMatch]) -> Vec<Finding> {
    [(DiagMetric::SoftNs, DiagMetric::Ns), (DiagMetric::SoftNc, DiagMetric::Nc)]
        .into_iter()
        .filter_map(|(soft, hard)| soft_vs_hard(name, matches, soft, hard))
        .collect()
}

/// Half a unit in the last decimal Zhao & Aletras print (three decimals).
const PRINTED_TIE: f64 = 5e-4;

/// "Soft-X is more diagnostic than X" (or the reverse, as the paper's averages
/// say), checked on our averages over the same matches; no claim where the
/// paper's averages tie.
fn soft_vs_hard(name: &str, matches: &[&DiagMatch], soft: DiagMetric, hard: DiagMetric) -> Option<Finding> {
    // The matches with both metrics, and each one's (ours, published) pairs.
    let both: Vec<(&DiagMatch, [(f64, f64); 2])> =
        matches.iter().filter_map(|m| Some((*m, [m.values[soft.index()]?, m.values[hard.index()]?]))).collect();
    if both.is_empty() {
        return None;
    }
    let mean = |metric: usize, published: bool| {
        both.iter().map(|(_, v)| if published { v[metric].1 } else { v[metric].0 }).sum::<f64>() / both.len() as f64
    };
    let (ours_soft, paper_soft) = (mean(0, false), mean(0, true));
    let (ours_hard, paper_hard) = (mean(1, false), mean(1, true));
    let paper_soft_wins = paper_soft > paper_hard;
    let (winner, loser) = if paper_soft_wins { (soft, hard) } else { (hard, soft) };
    let distinct: HashSet<ZhaoAttribution> = both.iter().map(|(m, _)| m.attribution).collect();
    let note = if both.iter().any(|(m, _)| !m.verified) { UNVERIFIED_NOTE } else { "" };
    let ours_differ = ours_soft != ours_hard;
    // A tie as printed (Zhao SST gradients: NC = Soft-NC = 0.394) claims no direction.
    let paper_ties = (paper_soft - paper_hard).abs() < PRINTED_TIE;
    let (statement, holds) = if paper_ties {
        (
            format!(
                "{name}: {} and {} are equally diagnostic in the paper (mean over attributions); no direction to check",
                soft.label(),
                hard.label()
            ),
            None,
        )
    } else {
        (
            format!(
                "{name}: {} is more diagnostic than {} (mean over attributions), as in the paper",
                winner.label(),
                loser.label()
            ),
            Some(ours_differ && (ours_soft > ours_hard) == paper_soft_wins),
        )
    };
    Some(Finding {
        statement,
        holds,
        evidence: format!(
            "published {} {} vs {} {}; ours {} vs {}; over {} attribution(s), {} match(es){note}",
            soft.label(),
            format_fixed(paper_soft, 3),
            hard.label(),
            format_fixed(paper_hard, 3),
            format_fixed(ours_soft, 3),
            format_fixed(ours_hard, 3),
            distinct.len(),
            both.len()
        ),
    })
}

fn diagnosticity_summary(compared: &[ComparedCell], unmatched_published: usize, unmatched_ours: usize) -> Vec<String> {
    let mut out = vec![format!(
        "{} of our cells compared; {unmatched_published} published (dataset, attribution) rows have no cell of ours; {unmatched_ours} of our diagnosticity cells have no published number.",
        compared.len()
    )];
    let cells: Vec<ComparedCell> = compared.iter().filter(|c| c.metric.starts_with("diag-")).cloned().collect();
    if !cells.is_empty() {
        let close = cells.iter().filter(|c| c.difference().abs() <= NEAR).count();
        out.push(format!(
            "Diagnosticity: {close} of {} cells ({}) within {} of the published number.",
            cells.len(),
            percent(close, cells.len()),
            format_fixed(NEAR, 2)
        ));
    }
    out.push(
        "The paper's models are BERT (SST, AG), SciBERT (Ev.Inf) and RoBERTa (M.RC); attributions map to attn (BiLSTM) or attn-last (BERT), attn-scaled, gxil, igl-zero-<most steps>, deeplift."
            .into(),
    );
    out.extend(unverified_line(compared));
    out
}

// --- Bastings et al.: source-model accuracy ----------------------------------

fn compare_source_accuracy(rows: &[SourceAccuracyRow], verification: &[VerificationRow], aliases: &Aliases) -> Outcome {
    let mut matched = vec![false; rows.len()];
    let mut compared = Vec::new();
    let mut findings = Vec::new();
    let mut unmatched_ours = 0;
    for group in verification_groups(verification) {
        let first = group[0];
        let arch = PaperArch::of_architecture(&first.architecture);
        let hits: Vec<usize> = (0..rows.len())
            .filter(|&i| Some(rows[i].arch) == arch && aliases.matches(&first.dataset, &rows[i].dataset))
            .collect();
        if hits.is_empty() {
            unmatched_ours += 1;
        }
        for i in hits {
            matched[i] = true;
            let (original, drop) = accuracy_cells(&group, &rows[i]);
            findings.push(accuracy_finding(&original));
            findings.push(drop_finding(&drop));
            compared.extend([original, drop]);
        }
    }
    let unmatched_published = matched.iter().filter(|m| !**m).count();
    let mut summary = vec![format!(
        "{} of our numbers compared; {unmatched_published} published (arch, dataset) rows have no verification of ours; {unmatched_ours} of our (model, dataset) verifications have no published row.",
        compared.len()
    )];
    summary.push(
        "Accuracies in percent on the original test set; the drop is the original model's accuracy minus the shortcut model's, averaged over our shortcuts (as the paper averages over its three)."
            .into(),
    );
    summary.extend(unverified_line(&compared));
    Outcome { cells: compared, findings, summary, unmatched_published, unmatched_ours }
}

/// Our verification rows grouped by (model, dataset), first appearance first.
fn verification_groups(rows: &[VerificationRow]) -> Vec<Vec<&VerificationRow>> {
    let mut out: Vec<Vec<&VerificationRow>> = Vec::new();
    for r in rows {
        match out.iter_mut().find(|g| g[0].model == r.model && g[0].dataset == r.dataset) {
            Some(g) => g.push(r),
            None => out.push(vec![r]),
        }
    }
    out
}

fn distinct_shortcuts<'a>(group: &[&'a VerificationRow]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for r in group {
        if !out.contains(&r.shortcut.as_str()) {
            out.push(&r.shortcut);
        }
    }
    out
}

/// Our original-model accuracy and mean shortcut drop (percent) beside the row's:
/// means over every verification of the (model, dataset), seeds and shortcuts.
fn accuracy_cells(group: &[&VerificationRow], row: &SourceAccuracyRow) -> (ComparedCell, ComparedCell) {
    let n = group.len() as f64;
    let original = 100.0 * group.iter().map(|r| r.original_model_on_original).sum::<f64>() / n;
    let drop =
        100.0 * group.iter().map(|r| r.original_model_on_original - r.shortcut_model_on_original).sum::<f64>() / n;
    let first = group[0];
    let cell = |metric: &str, ours: f64, published: f64| ComparedCell {
        model: first.model.clone(),
        architecture: first.architecture.clone(),
        dataset: first.dataset.clone(),
        published_dataset: row.dataset.clone(),
        shortcut: distinct_shortcuts(group).join("+"),
        method: None,
        published_method: None,
        metric: metric.to_string(),
        runs: group.len() as u32,
        ours,
        ci_low: None,
        ci_high: None,
        published,
        verified: group.iter().all(|r| r.passed),
        published_sd: None,
        share: None,
        published_share: None,
    };
    (
        cell(ORIGINAL_ACCURACY_METRIC, original, row.original_test_accuracy_pct),
        cell(DROP_METRIC, drop, row.mean_drop_with_shortcut_pct),
    )
}

fn accuracy_finding(c: &ComparedCell) -> Finding {
    Finding {
        statement: format!(
            "{} on {}: the original model's test accuracy is within {} points of the published {}%",
            c.model,
            c.dataset,
            format_fixed(ACCURACY_TOLERANCE_PP, 1),
            format_fixed(c.published, 1)
        ),
        holds: Some(c.difference().abs() <= ACCURACY_TOLERANCE_PP),
        evidence: format!("ours {}% ({} points)", format_fixed(c.ours, 1), signed(c.difference(), 1)),
    }
}

fn drop_finding(c: &ComparedCell) -> Finding {
    Finding {
        statement: format!(
            "{} on {}: the shortcut costs at most {} point(s) more original-test accuracy than the published mean drop of {}",
            c.model,
            c.dataset,
            format_fixed(DROP_TOLERANCE_PP, 1),
            format_fixed(c.published, 1)
        ),
        holds: Some(c.ours <= c.published + DROP_TOLERANCE_PP),
        evidence: format!(
            "our mean drop {} points over {} shortcut model(s) ({})",
            format_fixed(c.ours, 1),
            c.runs,
            c.shortcut
        ),
    }
}

// --- Zhou et al.: attention Attr% on the article manipulations ---------------

/// Our attention at one (model, dataset, manipulation), beside the paper's rows.
struct ZhouMatch<'a> {
    model: &'a str,
    dataset: &'a str,
    manipulation: ZhouDataset,
    shortcut: &'a str,
    method: &'a str,
    /// Our `attr`, seeds merged.
    correlating: &'a OurCell,
    /// Our `attr-noncorr`, seeds merged (CN / NC, when the grid computed it).
    non_correlating: Option<&'a OurCell>,
    /// The paper's rows of this manipulation and attribution, by [`ZhouRegion`].
    published: [Option<&'a ZhouAttrRow>; 3],
    /// Our shortcut models' mean accuracy on the manipulated test set.
    accuracy: Option<f64>,
}

impl ZhouMatch<'_> {
    fn name(&self) -> String {
        format!(
            "{} on {}, {} ({}), {}",
            self.model,
            self.dataset,
            self.manipulation.label(),
            self.shortcut,
            self.method
        )
    }

    fn row(&self, region: ZhouRegion) -> Option<&ZhouAttrRow> {
        self.published[region as usize]
    }
}

fn compare_zhou_attr(rows: &[ZhouAttrRow], cells: &[CellResult], verification: &[VerificationRow]) -> Outcome {
    let ours: Vec<OurCell> = merge_seeds(cells, |m| m == "attr" || m == "attr-noncorr")
        .into_iter()
        .filter(|c| ZhouDataset::of_shortcut(&c.shortcut).is_some())
        .collect();
    let mut used = vec![false; ours.len()];
    let mut matched = vec![false; rows.len()];
    let mut compared = Vec::new();
    let mut matches = Vec::new();
    for (model, dataset, shortcut) in diag_sites(&ours) {
        let Some(manipulation) = ZhouDataset::of_shortcut(&shortcut) else { continue };
        let here: Vec<usize> = (0..ours.len())
            .filter(|&i| ours[i].model == model && ours[i].dataset == dataset && ours[i].shortcut == shortcut)
            .collect();
        let arch = PaperArch::of_architecture(&ours[here[0]].architecture);
        let rows_here = |a: Option<ZhouAttribution>| {
            rows.iter().enumerate().filter(move |(_, r)| {
                Some(r.arch) == arch && r.dataset == manipulation && a.is_none_or(|a| r.attribution == a)
            })
        };
        let mut attributions: Vec<ZhouAttribution> = Vec::new();
        for (_, r) in rows_here(None) {
            if !attributions.contains(&r.attribution) {
                attributions.push(r.attribution);
            }
        }
        for attribution in attributions {
            let with_attr = here.iter().filter(|&&i| ours[i].metric == "attr").map(|&i| ours[i].method.as_str());
            let Some(method) = best_method(|m| attribution.preference(m), with_attr) else { continue };
            let find =
                |metric: &str| here.iter().copied().find(|&i| ours[i].method == method && ours[i].metric == metric);
            let Some(corr) = find("attr") else { continue };
            let non_corr = find("attr-noncorr");
            let other = other_words(cells, &ours[corr], non_corr.map(|i| &ours[i]), manipulation);
            let mut published = [None; 3];
            for (r, row) in rows_here(Some(attribution)) {
                published[row.region as usize] = Some(row);
                let (our, index) = match row.region {
                    ZhouRegion::Correlating => (Some(&ours[corr]), Some(corr)),
                    ZhouRegion::NonCorrelating => (non_corr.map(|i| &ours[i]), non_corr),
                    ZhouRegion::Other => (other.as_ref(), None),
                };
                let Some(our) = our else { continue };
                matched[r] = true;
                if let Some(i) = index {
                    used[i] = true;
                }
                compared.push(zhou_cell(our, row));
            }
            matches.push(ZhouMatch {
                model: &ours[corr].model,
                dataset: &ours[corr].dataset,
                manipulation,
                shortcut: &ours[corr].shortcut,
                method: &ours[corr].method,
                correlating: &ours[corr],
                non_correlating: non_corr.map(|i| &ours[i]),
                published,
                accuracy: manipulated_accuracy(verification, &model, &dataset, &shortcut),
            });
        }
    }
    let unmatched_published = matched.iter().filter(|m| !**m).count();
    let unmatched_ours = used.iter().filter(|u| !**u).count();
    let findings = zhou_findings(&matches);
    let summary = zhou_summary(&compared, unmatched_published, unmatched_ours);
    Outcome { cells: compared, findings, summary, unmatched_published, unmatched_ours }
}

/// Our "other words" beside `correlating`: 1 − attr − attr-noncorr per seed
/// (1 − attr for Article), from the seeds that have every part, then averaged.
/// `None` for CN / NC without `attr-noncorr`. Only Article keeps an interval
/// (`attr`'s, mirrored); a difference of two bootstrapped means has none here.
fn other_words(
    cells: &[CellResult],
    correlating: &OurCell,
    non_correlating: Option<&OurCell>,
    manipulation: ZhouDataset,
) -> Option<OurCell> {
    let split = manipulation.has_non_correlating();
    if split && non_correlating.is_none() {
        return None;
    }
    let seeds = |metric: &str| -> Vec<&CellResult> {
        cells
            .iter()
            .filter(|c| {
                c.model == correlating.model
                    && c.dataset == correlating.dataset
                    && c.shortcut == correlating.shortcut
                    && c.metric == metric
                    && canonical_method(&c.method) == correlating.method
            })
            .collect()
    };
    let parts = super::zhou::other_words(&seeds("attr"), &seeds("attr-noncorr"), split);
    if parts.is_empty() {
        return None;
    }
    let share = match non_correlating {
        Some(d) if split => correlating.share.zip(d.share).map(|(c, d)| 1.0 - c - d),
        _ => correlating.share.map(|c| 1.0 - c),
    };
    let (ci_low, ci_high) =
        if split { (None, None) } else { (correlating.ci_high.map(|h| 1.0 - h), correlating.ci_low.map(|l| 1.0 - l)) };
    Some(OurCell {
        model: correlating.model.clone(),
        architecture: correlating.architecture.clone(),
        dataset: correlating.dataset.clone(),
        shortcut: correlating.shortcut.clone(),
        method: correlating.method.clone(),
        metric: OTHER_METRIC.into(),
        runs: parts.len() as u32,
        value: parts.iter().map(|p| p.0).sum::<f64>() / parts.len() as f64,
        ci_low,
        ci_high,
        verified: parts.iter().all(|p| p.1),
        share,
    })
}

/// Our cell beside one of the paper's, in percent.
fn zhou_cell(our: &OurCell, row: &ZhouAttrRow) -> ComparedCell {
    let pct = |v: Option<f64>| v.map(|v| 100.0 * v);
    ComparedCell {
        ours: 100.0 * our.value,
        ci_low: pct(our.ci_low),
        ci_high: pct(our.ci_high),
        published_sd: Some(row.attr_sd_pct),
        share: pct(our.share),
        published_share: Some(row.frequency_pct),
        ..our.compared(row.dataset.printed(), Some(row.attribution.printed()), row.attr_pct)
    }
}

/// Mean accuracy of our shortcut models on the manipulated test set.
fn manipulated_accuracy(rows: &[VerificationRow], model: &str, dataset: &str, shortcut: &str) -> Option<f64> {
    let of: Vec<f64> = rows
        .iter()
        .filter(|r| r.model == model && r.dataset == dataset && r.shortcut == shortcut)
        .map(|r| r.shortcut_model_on_synthetic)
        .collect();
    (!of.is_empty()).then(|| of.iter().sum::<f64>() / of.len() as f64)
}

/// A fraction as a percentage with one decimal: `12.3%`.
fn pct(fraction: f64) -> String {
    format!("{}%", format_fixed(100.0 * fraction, 1))
}

/// A published percentage: `12.3%`.
fn pct_printed(percent: f64) -> String {
    format!("{}%", format_fixed(percent, 1))
}

/// Per (model, dataset), first appearance first; within it, Article, CN, NC.
fn zhou_findings(matches: &[ZhouMatch]) -> Vec<Finding> {
    let mut scopes: Vec<(&str, &str)> = Vec::new();
    for m in matches {
        if !scopes.contains(&(m.model, m.dataset)) {
            scopes.push((m.model, m.dataset));
        }
    }
    let mut findings = Vec::new();
    for (model, dataset) in scopes {
        let mut here: Vec<&ZhouMatch> = matches.iter().filter(|m| m.model == model && m.dataset == dataset).collect();
        here.sort_by_key(|m| m.manipulation as usize);
        for m in here {
            findings.extend(beats_frequency_finding(m));
            findings.extend(far_from_faithful_finding(m));
            if m.manipulation == ZhouDataset::Nc {
                findings.extend(noncorr_parity_finding(m));
            }
        }
    }
    findings
}

/// "Better than random, albeit barely": more Attr% on the correlating articles
/// than their share of the tokens (what spreading attention evenly scores).
fn beats_frequency_finding(m: &ZhouMatch) -> Option<Finding> {
    let row = m.row(ZhouRegion::Correlating)?;
    let c = m.correlating;
    let statement = format!(
        "{}: attention puts more than the word frequency on the correlating articles, as in the paper (published {} on {} of the words)",
        m.name(),
        pct_printed(row.attr_pct),
        pct_printed(row.frequency_pct)
    );
    let note = if c.verified { "" } else { UNVERIFIED_NOTE };
    let (holds, evidence) = match c.share {
        Some(share) => (
            Some(c.value > share),
            format!(
                "ours {} on {} of the tokens ({} points) over {} seed(s){note}",
                pct(c.value),
                pct(share),
                signed(100.0 * (c.value - share), 1),
                c.runs
            ),
        ),
        None => (None, format!("ours {}, but our cells carry no region share (`region_share`){note}", pct(c.value))),
    };
    Some(Finding { statement, holds, evidence })
}

/// "Attention weights cannot be readily and reliably interpreted as attributions":
/// Attr% on the correlating articles stays under [`FAITHFUL_ATTR_BAR`] although the
/// paper's models are over 97% accurate.
fn far_from_faithful_finding(m: &ZhouMatch) -> Option<Finding> {
    let row = m.row(ZhouRegion::Correlating)?;
    let c = m.correlating;
    let statement = format!(
        "{}: attention is far from a faithful attribution: under {} on the correlating articles, where a faithful attribution of a model that relies on them puts nearly 100% (published {} ± {}, models over {} accurate)",
        m.name(),
        pct(FAITHFUL_ATTR_BAR),
        pct_printed(row.attr_pct),
        pct_printed(row.attr_sd_pct),
        pct(ZHOU_MODEL_ACCURACY)
    );
    let accuracy = match m.accuracy {
        Some(a) if a < ZHOU_MODEL_ACCURACY => format!(
            "our models' accuracy on the manipulated test set is {}, below the paper's {}: they may not rely on the articles alone, so low Attr% proves less",
            pct(a),
            pct(ZHOU_MODEL_ACCURACY)
        ),
        Some(a) => format!("our models' accuracy on the manipulated test set is {}", pct(a)),
        None => "no verification of ours gives the models' accuracy".into(),
    };
    let note = if c.verified { "" } else { UNVERIFIED_NOTE };
    Some(Finding {
        statement,
        holds: Some(c.value < FAITHFUL_ATTR_BAR),
        evidence: format!("ours {} over {} seed(s); {accuracy}{note}", pct(c.value), c.runs),
    })
}

/// NC: "the model sometimes assigns higher than random weights on non-correlating
/// articles, especially for the NC dataset": attr-noncorr ≥ [`NONCORR_PARITY`] × attr.
fn noncorr_parity_finding(m: &ZhouMatch) -> Option<Finding> {
    let (corr_row, non_row) = (m.row(ZhouRegion::Correlating)?, m.row(ZhouRegion::NonCorrelating)?);
    let c = m.correlating;
    let statement = format!(
        "{}: attention gives the non-correlating articles about as much as the correlating ones (at least {} times as much), as in the paper (published {} vs {})",
        m.name(),
        format_fixed(NONCORR_PARITY, 1),
        pct_printed(non_row.attr_pct),
        pct_printed(corr_row.attr_pct)
    );
    let Some(n) = m.non_correlating else {
        return Some(Finding {
            statement,
            holds: None,
            evidence: format!("we have no `attr-noncorr` for {} here", m.method),
        });
    };
    let note = if c.verified && n.verified { "" } else { UNVERIFIED_NOTE };
    let ratio = if c.value > 0.0 { format!("ratio {}", format_fixed(n.value / c.value, 2)) } else { "no ratio".into() };
    Some(Finding {
        statement,
        holds: Some(n.value >= NONCORR_PARITY * c.value),
        evidence: format!("ours {} vs {} ({ratio}) over {} seed(s){note}", pct(n.value), pct(c.value), c.runs),
    })
}

fn zhou_summary(compared: &[ComparedCell], unmatched_published: usize, unmatched_ours: usize) -> Vec<String> {
    let mut out = vec![format!(
        "{} of our cells compared; {unmatched_published} published (dataset, region) rows have no cell of ours; {unmatched_ours} of our `attr` / `attr-noncorr` cells on the article manipulations (other methods than attention, or an architecture without a published row) have no published number.",
        compared.len()
    )];
    if !compared.is_empty() {
        let n = compared.len();
        let within_sd = compared.iter().filter(|c| c.published_sd.is_some_and(|sd| c.difference().abs() <= sd)).count();
        let mut line = format!(
            "Attr%: {within_sd} of {n} cells ({}) within one published standard deviation of the published mean",
            percent(within_sd, n)
        );
        let with_interval: Vec<bool> = compared.iter().filter_map(|c| c.within_interval()).collect();
        if !with_interval.is_empty() {
            let inside = with_interval.iter().filter(|b| **b).count();
            line.push_str(&format!("; published inside our 95% interval in {inside} of {}", with_interval.len()));
        }
        out.push(format!("{line}."));
    }
    out.push(
        "Zhou et al. manipulate BeerAdvocate reviews, which this grid does not have: each of our datasets is compared with theirs, manipulation by manipulation (article = `articles`, cn = `articles-cn`, nc = `articles-nc`). Attention is `attn` on the BiLSTM (the paper's model is a BiLSTM with attention), `attn-last` (else `attn-all`) on BERT."
            .into(),
    );
    out.push(
        "Attr% in percent, seeds averaged; `attr-other` = 100% − attr − attr-noncorr per seed (the seeds with both), then averaged. `published_sd` is the paper's standard deviation over its 11 runs; `region_share` is our region's share of the tokens, beside the paper's word frequency (`published_frequency`)."
            .into(),
    );
    out.extend(unverified_line(compared));
    out
}

// ---------------------------------------------------------------------------
// Frames and markdown
// ---------------------------------------------------------------------------

/// Decimals a compared metric is shown with.
fn decimals(metric: &str) -> usize {
    match metric {
        "precision" => 2,
        "rank" | ORIGINAL_ACCURACY_METRIC | DROP_METRIC => 1,
        // Zhou et al.'s Attr%, compared in percent.
        "attr" | "attr-noncorr" | OTHER_METRIC => 1,
        m if m.starts_with("diag-") => 2,
        _ => 3,
    }
}

/// `value` with an explicit sign (`+0.05`, `-1.2`, `0.00`).
fn signed(value: f64, decimals: usize) -> String {
    let s = format_fixed(value, decimals);
    if s.starts_with('-') || s.chars().all(|c| c == '0' || c == '.') { s } else { format!("+{s}") }
}

const COLUMNS: [&str; 16] = [
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
const ATTR_COLUMNS: [&str; 3] = ["published_sd", "region_share", "published_frequency"];

/// The table's columns for a kind.
fn columns(kind: PublishedKind) -> Vec<&'static str> {
    let mut out = COLUMNS.to_vec();
    if kind == PublishedKind::ZhouAttr {
        out.extend(ATTR_COLUMNS);
    }
    out
}

/// The numbers of [`ATTR_COLUMNS`], in order.
const ATTR_VALUES: [fn(&ComparedCell) -> Option<f64>; 3] = [|c| c.published_sd, |c| c.share, |c| c.published_share];

/// The identifying columns, the first eight of [`COLUMNS`].
fn key_columns(cells: &[ComparedCell]) -> Vec<Column> {
    let strings = |f: fn(&ComparedCell) -> &str| -> Vec<&str> { cells.iter().map(f).collect() };
    let optional = |f: fn(&ComparedCell) -> Option<&str>| -> Vec<Option<&str>> { cells.iter().map(f).collect() };
    vec![
        Column::new("model".into(), strings(|c| &c.model)),
        Column::new("architecture".into(), strings(|c| &c.architecture)),
        Column::new("dataset".into(), strings(|c| &c.dataset)),
        Column::new("published_dataset".into(), strings(|c| &c.published_dataset)),
        Column::new("shortcut".into(), strings(|c| &c.shortcut)),
        Column::new("method".into(), optional(|c| c.method.as_deref())),
        Column::new("published_method".into(), optional(|c| c.published_method.as_deref())),
        Column::new("metric".into(), strings(|c| &c.metric)),
    ]
}

/// The cells as a typed frame (numbers unrounded), in [`columns`] order.
fn cells_frame(kind: PublishedKind, cells: &[ComparedCell]) -> PolarsResult<DataFrame> {
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

/// The same columns with numbers formatted per metric ([`decimals`]), for markdown.
fn display_frame(kind: PublishedKind, cells: &[ComparedCell]) -> PolarsResult<DataFrame> {
    let fixed = |f: fn(&ComparedCell) -> Option<f64>| -> Vec<Option<String>> {
        cells.iter().map(|c| f(c).map(|v| format_fixed(v, decimals(&c.metric)))).collect()
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
            cells.iter().map(|c| signed(c.difference(), decimals(&c.metric))).collect::<Vec<_>>(),
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

fn mark(holds: Option<bool>) -> &'static str {
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

fn is_number_column(name: &str) -> bool {
    matches!(name, "runs" | "ours" | "ci_low" | "ci_high" | "published" | "difference") || ATTR_COLUMNS.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/reference").join(name)
    }

    fn parse(text: &str) -> Result<Published, CompareError> {
        parse_published(Path::new("pub.csv"), text)
    }

    fn precision_rows(p: &Published) -> &[PrecisionRankRow] {
        match p {
            Published::PrecisionRank(rows) => rows,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn loads_bastings_precision_and_rank_with_brace_groups_expanded() {
        let p = load(&reference("bastings2022_precision_rank.csv")).unwrap();
        assert_eq!(p.kind(), PublishedKind::PrecisionRank);
        let rows = precision_rows(&p);
        // 360 lines; brace groups expand to 486 configs, 243 per architecture.
        assert_eq!(rows.len(), 486);
        assert_eq!(rows.iter().filter(|r| r.arch == PaperArch::Lstm).count(), 243);
        let find = |arch, method: &str, dataset: &str, shortcut: &str| {
            rows.iter()
                .find(|r| r.arch == arch && r.method == method && r.dataset == dataset && r.shortcut == shortcut)
                .unwrap_or_else(|| panic!("{method}"))
        };
        // lstm,"grad{p,l}-l1",sst2,st,0.96,1 is one number for both configs.
        for m in ["gradp-l1", "gradl-l1"] {
            let r = find(PaperArch::Lstm, m, "sst2", "st");
            assert_eq!((r.precision, r.rank, r.printed_as.as_str()), (Some(0.96), Some(1.0), "grad{p,l}-l1"));
        }
        // bert,"igl-zero-{100,1000}",sst2,st,0.29,16
        for m in ["igl-zero-100", "igl-zero-1000"] {
            let r = find(PaperArch::Bert, m, "sst2", "st");
            assert_eq!((r.precision, r.rank), (Some(0.29), Some(16.0)));
        }
        // lstm,"igp-pad-{100,1000}",toxicity,st,,1: the paper prints no precision there.
        let r = find(PaperArch::Lstm, "igp-pad-1000", "toxicity", "st");
        assert_eq!((r.line, r.precision, r.rank), (134, None, Some(1.0)));
        let first = &rows[0];
        assert_eq!(
            (first.line, first.method.as_str(), first.precision, first.rank),
            (2, "random", Some(0.06), Some(11.0))
        );
    }

    #[test]
    fn loads_zhao_diagnosticity_and_source_accuracy() {
        let Published::Diagnosticity(rows) = load(&reference("zhao2023_diagnosticity.csv")).unwrap() else {
            panic!("kind")
        };
        assert_eq!(rows.len(), 20);
        assert_eq!(
            rows[0],
            DiagnosticityRow {
                line: 2,
                dataset: "SST".into(),
                attribution: ZhaoAttribution::Attention,
                ns: 0.406,
                soft_ns: 0.496,
                nc: 0.349,
                soft_nc: 0.407
            }
        );
        assert_eq!(rows[1].attribution, ZhaoAttribution::ScaledAttention);

        let Published::SourceAccuracy(rows) = load(&reference("bastings2022_source_accuracy.csv")).unwrap() else {
            panic!("kind")
        };
        assert_eq!(rows.len(), 6);
        assert_eq!((rows[0].arch, rows[0].dataset.as_str()), (PaperArch::Lstm, "sst2"));
        assert_eq!((rows[0].original_test_accuracy_pct, rows[0].mean_drop_with_shortcut_pct), (87.8, 0.6));
    }

    #[test]
    fn crowd_accuracy_has_no_counterpart() {
        let path = reference("lu2024_crowd_accuracy.csv");
        let err = load(&path).unwrap_err();
        assert!(matches!(err, CompareError::NoCounterpart { .. }), "{err}");
        let msg = err.to_string();
        assert!(msg.starts_with(&path.display().to_string()) && msg.contains("no counterpart"), "{msg}");
    }

    #[test]
    fn malformed_files_name_file_line_and_column() {
        let bad_number =
            "arch,method,dataset,shortcut,precision,rank\nlstm,random,sst2,st,0.1,3\nlstm,gxip,sst2,st,0.x,1\n";
        let err = parse(bad_number).unwrap_err();
        assert_eq!(err.to_string(), "pub.csv:3: column `precision`: `0.x` is not a number");

        let out_of_range = "arch,method,dataset,shortcut,precision,rank\nlstm,gxip,sst2,st,1.5,1\n";
        assert_eq!(parse(out_of_range).unwrap_err().to_string(), "pub.csv:2: column `precision`: 1.5 is outside 0..=1");

        let err = parse("arch,method,dataset\nlstm,gxip,sst2\n").unwrap_err();
        assert!(matches!(err, CompareError::UnknownHeader { .. }));
        assert!(err.to_string().starts_with("pub.csv:1: unknown header `arch,method,dataset`"), "{err}");

        let err = parse("arch,method,dataset,shortcut,precision,rank\nlstm,gxip,sst2,st,1\n").unwrap_err();
        assert_eq!(err.to_string(), "pub.csv:2: 5 fields, but the header has 6");

        let err = parse("arch,method,dataset,shortcut,precision,rank\ncnn,gxip,sst2,st,1,1\n").unwrap_err();
        assert_eq!(err.to_string(), "pub.csv:2: column `arch`: `cnn` is neither `lstm` nor `bert`");

        let err =
            parse("arch,method,dataset,shortcut,precision,rank\nlstm,\"grad{p,x}-l1\",sst2,st,1,1\n").unwrap_err();
        assert!(err.to_string().starts_with("pub.csv:2: column `method`: unknown salience method `gradx-l1`"), "{err}");

        // `gradl-l1` printed alone and inside a group.
        let dup = "arch,method,dataset,shortcut,precision,rank\nlstm,gradl-l1,sst2,st,1,1\nlstm,\"grad{p,l}-l1\",sst2,st,1,1\n";
        assert_eq!(
            parse(dup).unwrap_err().to_string(),
            "pub.csv:3: the same arch `lstm`, method `gradl-l1`, dataset `sst2`, shortcut `st` as line 2"
        );

        let err = parse("dataset,attribution,ns,soft_ns,nc,soft_nc\nSST,LRP,0.1,0.2,0.3,0.4\n").unwrap_err();
        assert!(err.to_string().starts_with("pub.csv:2: column `attribution`: unknown `LRP`"), "{err}");

        assert!(matches!(parse("\n\n").unwrap_err(), CompareError::Empty { .. }));
    }

    #[test]
    fn csv_syntax() {
        let path = Path::new("x.csv");
        let text = "\u{feff}a,b\r\n\"x, y\",\"say \"\"hi\"\"\"\r\n\n\"two\nlines\",z\nlast,\n";
        let got = read_csv(path, text).unwrap();
        let fields = |r: &Record| r.fields.clone();
        assert_eq!(got.iter().map(|r| r.line).collect::<Vec<_>>(), [1, 2, 4, 6]);
        assert_eq!(fields(&got[1]), ["x, y", "say \"hi\""]);
        assert_eq!(fields(&got[2]), ["two\nlines", "z"]);
        assert_eq!(fields(&got[3]), ["last", ""]);
        // No final newline.
        assert_eq!(read_csv(path, "a,b").unwrap()[0].fields, ["a", "b"]);

        let err = read_csv(path, "a,b\n\"open,b\n").unwrap_err();
        assert_eq!(err.to_string(), "x.csv:2:1: this quote is never closed");
        let err = read_csv(path, "a,b\n\"q\"x,b\n").unwrap_err();
        assert_eq!(err.to_string(), "x.csv:2:4: `x` after a closing quote; expected `,` or a line end");
        let err = read_csv(path, "a,b\nab\"c,d\n").unwrap_err();
        assert!(err.to_string().starts_with("x.csv:2:3: a `\"` inside an unquoted field"), "{err}");
    }

    #[test]
    fn spearman_averages_ties() {
        use crate::metrics::agreement::average_ranks;
        assert_eq!(average_ranks(&[0.5, 0.1, 0.5, 0.9]), [2.5, 1.0, 2.5, 4.0]);
        // Ranks [1, 2.5, 2.5, 4] vs [1, 2, 3, 4]: cov 4.5, variances 4.5 and 5 → √0.9.
        let rho = spearman(&[1.0, 2.0, 2.0, 3.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!((rho - 0.9f64.sqrt()).abs() < 1e-12, "{rho}");
        assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), Some(-1.0));
        assert_eq!(spearman(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
    }

    #[test]
    fn aliases_parse() {
        assert_eq!(parse_alias("generated=sst2"), Ok(("generated".into(), "sst2".into())));
        assert_eq!(parse_alias(" sst2 = SST "), Ok(("sst2".into(), "SST".into())));
        assert!(parse_alias("sst2").is_err());
        assert!(parse_alias("=SST").is_err());
    }

    fn cell(
        model: &str,
        dataset: &str,
        shortcut: &str,
        method: &str,
        metric: &str,
        seed: u64,
        v: [f64; 3],
    ) -> CellResult {
        CellResult {
            model: model.into(),
            architecture: if model.starts_with("bert") { "bert" } else { "bilstm" }.into(),
            dataset: dataset.into(),
            shortcut: shortcut.into(),
            method: method.into(),
            metric: metric.into(),
            seed,
            value: v[0],
            ci_low: Some(v[1]),
            ci_high: Some(v[2]),
            n_examples: 100,
            verified: true,
            values: vec![],
            by_ratio: vec![],
            region_share: None,
        }
    }

    const BASTINGS_SMALL: &str = "arch,method,dataset,shortcut,precision,rank\n\
        lstm,\"gxi{p,l}\",sst2,st,1.0,1\n\
        lstm,gradl-l2,sst2,st,0.5,4\n\
        lstm,lime-unk-100,sst2,st,0.3,6\n\
        lstm,random,sst2,st,0.1,20\n\
        lstm,igl-zero-100,sst2,st,0.05,25\n\
        lstm,gxil,sst2,op,0.9,2\n\
        lstm,gradl-l2,sst2,op,0.8,3\n\
        lstm,random,imdb,st,0.0,100\n";

    /// Model `lstm` on our dataset `generated` (compared as sst2).
    fn lstm_cells() -> Vec<CellResult> {
        let g = |sc, m, metric, seed, v| cell("lstm", "generated", sc, m, metric, seed, v);
        vec![
            // Two seeds: mean 0.85 [0.80, 0.90].
            g("st", "gxil", "precision", 1, [0.9, 0.85, 0.95]),
            g("st", "gxil", "precision", 2, [0.8, 0.75, 0.85]),
            g("st", "gxil", "rank", 1, [1.5, 1.0, 2.0]),
            g("st", "gradl-l2", "precision", 1, [0.97, 0.93, 1.0]),
            g("st", "lime-unk-100", "precision", 1, [0.35, 0.3, 0.4]),
            g("st", "random", "precision", 1, [0.05, 0.0, 0.1]),
            g("st", "igl-zero-100", "precision", 1, [0.3, 0.25, 0.35]),
            g("st", "attn", "precision", 1, [0.6, 0.5, 0.7]), // not in the paper's table
            g("st", "gxil", "ns", 1, [0.5, 0.4, 0.6]),        // a metric this file lacks: ignored
            g("op", "gxil", "precision", 1, [0.7, 0.6, 0.8]),
            g("op", "gradl-l2", "precision", 1, [0.75, 0.7, 0.8]),
        ]
    }

    fn aliases(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
    }

    fn finding<'a>(c: &'a Comparison, starts: &str) -> &'a Finding {
        c.findings
            .iter()
            .find(|f| f.statement.starts_with(starts))
            .unwrap_or_else(|| panic!("{starts}: {:#?}", c.findings))
    }

    #[test]
    fn precision_rank_cells_and_findings() {
        let published = parse(BASTINGS_SMALL).unwrap();
        let c = compare(&published, &lstm_cells(), &[], &aliases(&[("generated", "sst2")])).unwrap();

        // 7 precision cells + 1 rank cell matched; `attn` has no published number.
        assert_eq!(c.cells.len(), 8);
        assert_eq!(c.unmatched_ours, 1);
        // gxip (we ran only gxil) and imdb random.
        assert_eq!(c.unmatched_published, 2);

        let gxil = &c.cells[0];
        assert_eq!((gxil.method.as_deref(), gxil.published_method.as_deref()), (Some("gxil"), Some("gxi{p,l}")));
        assert_eq!((gxil.dataset.as_str(), gxil.published_dataset.as_str(), gxil.runs), ("generated", "sst2", 2));
        assert!((gxil.ours - 0.85).abs() < 1e-12 && (gxil.difference() + 0.15).abs() < 1e-12);
        assert!((gxil.ci_low.unwrap() - 0.80).abs() < 1e-12 && (gxil.ci_high.unwrap() - 0.90).abs() < 1e-12);
        assert_eq!(gxil.within_interval(), Some(false));
        let rank = &c.cells[1];
        assert_eq!((rank.metric.as_str(), rank.published, rank.within_interval()), ("rank", 1.0, Some(true)));
        // `lime-unk-100` is canonicalised to the paper's `limeunk-100`; 0.3 is on the interval's edge.
        let lime = c.cells.iter().find(|x| x.method.as_deref() == Some("limeunk-100")).unwrap();
        assert_eq!(lime.within_interval(), Some(true));

        // st: the paper's best (gxil 1.0) is not ours (gradl-l2 0.97 [0.93, 1.00]),
        // and gxil's [0.80, 0.90] does not reach 0.93.
        let best = finding(&c, "lstm on generated:st (as sst2): the published best method (gxil, 1.00)");
        assert_eq!(best.holds, Some(false), "{best:?}");
        assert!(best.evidence.contains("our best is gradl-l2 0.97 [0.93, 1.00]; gxil 0.85 [0.80, 0.90]"), "{best:?}");
        // op: gxil [0.6, 0.8] overlaps gradl-l2 [0.7, 0.8]: tied.
        let tied = finding(&c, "lstm on generated:op (as sst2): the published best method (gxil, 0.90)");
        assert_eq!(tied.holds, Some(true), "{tied:?}");
        assert!(tied.evidence.contains("tied"), "{tied:?}");

        // Ascending ranks, paper: ig 1, random 2, lime 3, gradl 4, gxil 5; ours:
        // random 1, ig 2, lime 3, gxil 4, gradl 5 → Σd² = 4, ρ = 1 − 24/120 = 0.8.
        let rho = finding(&c, "lstm on generated:st (as sst2): our precision ranks the 5 common methods");
        assert_eq!((rho.holds, rho.evidence.as_str()), (Some(true), "ρ = 0.80 over 5 methods"));
        // op has two methods: no ρ.
        assert!(!c.findings.iter().any(|f| f.statement.starts_with("lstm on generated:op (as sst2): our precision")));

        // gxi: +0.90 published, +0.80 ours (the op cell has no random on either side).
        let gxi = finding(&c, "lstm (bilstm): gxi methods beat random on average");
        assert_eq!(gxi.holds, Some(true));
        assert!(
            gxi.evidence.starts_with("mean precision margin over random: published +0.90, ours +0.80, over 1 cell(s)")
        );
        // ig: the paper has it below random (0.05 < 0.1), ours above (0.30 > 0.05).
        let ig = finding(&c, "lstm (bilstm): ig methods do not beat random on average");
        assert_eq!(ig.holds, Some(false));
        assert_eq!(finding(&c, "lstm (bilstm): lime methods beat random").holds, Some(true));

        // |difference| ≤ 0.1: lime +0.05, random -0.05 (st) and gradl-l2 -0.05 (op), of 7.
        assert!(
            c.summary.iter().any(|l| l.starts_with("Precision: 3 of 7 cells (43%) within 0.10")),
            "{:?}",
            c.summary
        );

        assert_eq!(frame(&c).shape(), (8, COLUMNS.len()));
        assert_eq!(frame(&c).get_column_names(), COLUMNS);
    }

    #[test]
    fn without_the_alias_nothing_matches() {
        let published = parse(BASTINGS_SMALL).unwrap();
        let c = compare(&published, &lstm_cells(), &[], &[]).unwrap();
        assert!(c.cells.is_empty() && c.findings.is_empty());
        // Every precision/rank cell (seeds merged) is unmatched: 9; every published config too: 9.
        assert_eq!((c.unmatched_ours, c.unmatched_published), (9, 9));
        assert!(render_markdown(&c).contains("(no cell of ours matches a published number)"));
    }

    #[test]
    fn beats_random_cannot_tell_without_the_papers_random() {
        let published = parse("arch,method,dataset,shortcut,precision,rank\nbert,gxil,sst2,st,0.2,9\n").unwrap();
        let cells = vec![
            cell("bert", "sst2", "st", "gxil", "precision", 1, [0.3, 0.2, 0.4]),
            cell("bert", "sst2", "st", "random", "precision", 1, [0.1, 0.0, 0.2]),
        ];
        let c = compare(&published, &cells, &[], &[]).unwrap();
        let f = finding(&c, "bert (bert): gxi methods beat random as often as in the paper");
        assert_eq!(f.holds, None);
        assert_eq!(f.evidence, "the paper prints no `random` precision beside these 1 cell(s)");
        assert_eq!(c.unmatched_ours, 1); // our random
    }

    #[test]
    fn a_number_the_paper_does_not_print_is_not_compared() {
        let published =
            parse("arch,method,dataset,shortcut,precision,rank\nlstm,\"igp-pad-{100,1000}\",toxicity,st,,1\n").unwrap();
        let cells = vec![
            cell("lstm", "toxicity", "st", "igp-pad-100", "precision", 1, [0.9, 0.8, 1.0]),
            cell("lstm", "toxicity", "st", "igp-pad-100", "rank", 1, [1.2, 1.0, 1.5]),
        ];
        let c = compare(&published, &cells, &[], &[]).unwrap();
        assert_eq!(c.cells.len(), 1);
        assert_eq!((c.cells[0].metric.as_str(), c.cells[0].published), ("rank", 1.0));
        // Our precision has no published number; igp-pad-1000 has no cell of ours.
        assert_eq!((c.unmatched_ours, c.unmatched_published), (1, 1));
    }

    #[test]
    fn diagnosticity_picks_methods_and_checks_directions() {
        let published = parse(
            "dataset,attribution,ns,soft_ns,nc,soft_nc\n\
             SST,Attention,0.406,0.496,0.349,0.407\n\
             SST,IG,0.437,0.489,0.535,0.395\n\
             SST,Deeplift,0.367,0.347,0.413,0.562\n",
        )
        .unwrap();
        let mut cells = Vec::new();
        for (method, values) in [
            ("attn-last", [0.3, 0.5, 0.4, 0.6]), // ns, soft-ns, nc, soft-nc
            ("attn-all", [0.9, 0.9, 0.9, 0.9]),
            ("igl-zero-1000", [0.36, 0.46, 0.5, 0.55]),
            ("igl-zero-100", [0.9, 0.9, 0.9, 0.9]),
        ] {
            for (metric, v) in DiagMetric::ALL.iter().zip(values) {
                cells.push(cell("bert", "sst2", "st", method, metric.ours(), 1, [v, v - 0.05, v + 0.05]));
            }
        }
        let c = compare(&published, &cells, &[], &aliases(&[("sst2", "SST")])).unwrap();
        assert_eq!(c.cells.len(), 8);
        let methods: HashSet<&str> = c.cells.iter().filter_map(|x| x.method.as_deref()).collect();
        assert_eq!(methods, HashSet::from(["attn-last", "igl-zero-1000"]));
        assert_eq!(c.cells[0].published_method.as_deref(), Some("Attention"));
        assert_eq!((c.unmatched_ours, c.unmatched_published), (8, 1));

        // Paper: Soft-NS (0.496 + 0.489)/2 = 0.4925 > NS 0.4215; ours 0.48 > 0.33.
        let ns = finding(&c, "bert on sst2 (as SST): Soft-NS is more diagnostic than NS");
        assert_eq!(ns.holds, Some(true));
        assert!(ns.evidence.starts_with("published Soft-NS 0.49"), "{ns:?}");
        assert!(ns.evidence.contains("; ours 0.480 vs 0.330; over 2 attribution(s), 2 match(es)"), "{ns:?}");
        // Paper: NC 0.442 > Soft-NC 0.401; ours Soft-NC 0.575 > NC 0.45.
        let nc = finding(&c, "bert on sst2 (as SST): NC is more diagnostic than Soft-NC");
        assert_eq!(nc.holds, Some(false));
    }

    #[test]
    fn a_printed_tie_claims_no_direction() {
        // Zhao & Aletras, SST, Gradients: NC = Soft-NC = 0.394.
        let published = parse(
            "dataset,attribution,ns,soft_ns,nc,soft_nc\n\
             SST,Gradients,0.324,0.495,0.394,0.394\n",
        )
        .unwrap();
        let cells: Vec<CellResult> = DiagMetric::ALL
            .iter()
            .zip([0.3, 0.5, 0.4, 0.6])
            .map(|(metric, v)| cell("bert", "sst2", "st", "gxil", metric.ours(), 1, [v, v - 0.05, v + 0.05]))
            .collect();
        let c = compare(&published, &cells, &[], &aliases(&[("sst2", "SST")])).unwrap();
        let tie = finding(&c, "bert on sst2 (as SST): Soft-NC and NC are equally diagnostic in the paper");
        assert_eq!(tie.holds, None, "{tie:?}");
        assert_eq!(finding(&c, "bert on sst2 (as SST): Soft-NS is more diagnostic than NS").holds, Some(true));
    }

    #[test]
    fn zhao_preferences() {
        let pick = |a, names: &[&'static str]| chosen_method(a, names.iter().copied());
        assert_eq!(pick(ZhaoAttribution::Attention, &["attn-all", "attn-last"]), Some("attn-last"));
        assert_eq!(pick(ZhaoAttribution::Attention, &["attn-all", "gxil"]), Some("attn-all"));
        assert_eq!(pick(ZhaoAttribution::Attention, &["attn"]), Some("attn"));
        assert_eq!(pick(ZhaoAttribution::Gradients, &["gxip", "gxil", "gradl-l2"]), Some("gxil"));
        let ig = ["igp-zero-5000", "igl-zero-100", "igl-unk-5000", "igl-zero-1000"];
        assert_eq!(pick(ZhaoAttribution::IntegratedGradients, &ig), Some("igl-zero-1000"));
        assert_eq!(pick(ZhaoAttribution::DeepLift, &["deeplift-unk", "deeplift"]), Some("deeplift"));
        assert_eq!(pick(ZhaoAttribution::ScaledAttention, &["attn"]), None);
    }

    fn verification(model: &str, dataset: &str, shortcut: &str, original: f64, shortcut_acc: f64) -> VerificationRow {
        VerificationRow {
            seed: 1,
            model: model.into(),
            architecture: if model == "bert" { "bert" } else { "bilstm" }.into(),
            dataset: dataset.into(),
            shortcut: shortcut.into(),
            shortcut_model_on_synthetic: 1.0,
            original_model_on_synthetic: 0.5,
            shortcut_model_on_flip: 1.0,
            shortcut_model_on_original: shortcut_acc,
            original_model_on_original: original,
            accuracy_without_shortcut: None,
            min_synthetic_accuracy: None,
            passed: true,
            failures: vec![],
        }
    }

    #[test]
    fn source_accuracy() {
        let published = parse(
            "arch,dataset,original_test_accuracy_pct,mean_drop_with_shortcut_pct\n\
             lstm,sst2,87.8,0.6\nbert,imdb,93.5,0.2\nbert,toxicity,93.2,0.2\n",
        )
        .unwrap();
        let rows = vec![
            verification("lstm", "sst2", "st", 0.88, 0.875),
            verification("lstm", "sst2", "tic", 0.88, 0.86),
            VerificationRow { seed: 2, ..verification("lstm", "sst2", "tic", 0.88, 0.86) },
            verification("bert", "imdb", "st", 0.80, 0.80),
            verification("bert", "yelp", "st", 0.80, 0.80),
        ];
        let c = compare(&published, &[], &rows, &[]).unwrap();
        assert_eq!((c.unmatched_ours, c.unmatched_published), (1, 1));
        assert_eq!(c.cells.len(), 4);
        // lstm sst2: 88.0% vs 87.8; drop (0.5 + 2.0 + 2.0)/3 = 1.5 ≤ 0.6 + 1.0.
        let (acc, drop) = (&c.cells[0], &c.cells[1]);
        assert!((acc.ours - 88.0).abs() < 1e-9 && (drop.ours - 1.5).abs() < 1e-9);
        assert_eq!((drop.shortcut.as_str(), drop.runs, drop.metric.as_str()), ("st+tic", 3, DROP_METRIC));
        assert_eq!(c.findings[0].holds, Some(true));
        assert_eq!(c.findings[0].evidence, "ours 88.0% (+0.2 points)");
        assert_eq!(c.findings[1].holds, Some(true));
        // bert imdb: 80.0% vs 93.5.
        assert_eq!(c.findings[2].holds, Some(false));
        assert_eq!(c.findings[2].evidence, "ours 80.0% (-13.5 points)");
    }

    #[test]
    fn markdown_section() {
        let published = parse(BASTINGS_SMALL).unwrap();
        let c = compare(&published, &lstm_cells(), &[], &aliases(&[("generated", "sst2")])).unwrap();
        let md = render_markdown(&c);
        assert!(md.starts_with("## Compared with Bastings et al. (2022): precision and mean rank"), "{md}");
        assert!(md.contains("\n- ✗ lstm on generated:st (as sst2): the published best method (gxil, 1.00)"), "{md}");
        assert!(md.contains("\n- ✓ lstm on generated:op (as sst2): the published best method"), "{md}");
        assert!(md.contains("### Cells\n\n| model | architecture | dataset   | published_dataset |"), "{md}");
        // Precision with 2 decimals, rank with 1.
        let cells_of = |l: &str| -> Vec<String> {
            let parts: Vec<&str> = l.split('|').collect();
            parts[1..parts.len() - 1].iter().map(|p| p.trim().to_string()).collect()
        };
        let gxil = md.lines().find(|l| l.contains("| gxil ") && l.contains("| precision ")).unwrap();
        assert_eq!(
            cells_of(gxil),
            ["lstm", "bilstm", "generated", "sst2", "st", "gxil", "gxi{p,l}", "precision", "2", "0.85", "0.80", "0.90"]
                .into_iter()
                .chain(["1.00", "-0.15", "no", "yes"])
                .collect::<Vec<_>>()
        );
        let rank = md.lines().find(|l| l.contains("| rank ")).unwrap();
        assert_eq!(
            cells_of(rank),
            ["lstm", "bilstm", "generated", "sst2", "st", "gxil", "gxi{p,l}", "rank", "1", "1.5", "1.0", "2.0"]
                .into_iter()
                .chain(["1.0", "+0.5", "yes", "yes"])
                .collect::<Vec<_>>()
        );

        let path = reference("zhao2023_diagnosticity.csv");
        let c = compare_file(&path, &[], &[], &[]).unwrap();
        assert_eq!(c.unmatched_published, 20);
        assert!(render_markdown(&c).starts_with(&format!("## Compared with {}\n", path.display())));
    }

    // --- Zhou et al. ---------------------------------------------------------

    const ZHOU_HEADER: &str = "arch,attribution,dataset,region,attr_pct,attr_sd_pct,frequency_pct\n";

    /// An Attr% cell: `value` with a ±0.02 interval on `share` of the tokens.
    #[allow(clippy::too_many_arguments)]
    fn attr(
        model: &str,
        dataset: &str,
        shortcut: &str,
        method: &str,
        metric: &str,
        seed: u64,
        value: f64,
        share: Option<f64>,
    ) -> CellResult {
        CellResult {
            region_share: share,
            ..cell(model, dataset, shortcut, method, metric, seed, [value, value - 0.02, value + 0.02])
        }
    }

    fn zhou_rows(p: &Published) -> &[ZhouAttrRow] {
        match p {
            Published::ZhouAttr(rows) => rows,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn loads_zhou_table1() {
        let p = load(&reference("zhou2022_article_attention.csv")).unwrap();
        assert_eq!(p.kind(), PublishedKind::ZhouAttr);
        let rows = zhou_rows(&p);
        assert_eq!(rows.len(), 8, "Article has no non-correlating row");
        assert_eq!(
            rows[0],
            ZhouAttrRow {
                line: 2,
                arch: PaperArch::Lstm,
                attribution: ZhouAttribution::Attention,
                dataset: ZhouDataset::Article,
                region: ZhouRegion::Correlating,
                attr_pct: 10.3,
                attr_sd_pct: 2.4,
                frequency_pct: 7.9,
            }
        );
        let find = |d, r| rows.iter().find(|x| x.dataset == d && x.region == r).unwrap();
        let nc = find(ZhouDataset::Nc, ZhouRegion::NonCorrelating);
        assert_eq!((nc.attr_pct, nc.attr_sd_pct, nc.frequency_pct), (12.6, 9.3, 4.1));
        let cn = find(ZhouDataset::Cn, ZhouRegion::Other);
        assert_eq!((cn.attr_pct, cn.attr_sd_pct, cn.frequency_pct), (78.2, 24.7, 92.1));
        // Each manipulation's regions add up to 100% (the paper rounds to one decimal).
        for d in ZhouDataset::ALL {
            let of = rows.iter().filter(|r| r.dataset == d);
            let (attr, frequency) = of.fold((0.0, 0.0), |(a, f), r| (a + r.attr_pct, f + r.frequency_pct));
            assert!((attr - 100.0f64).abs() < 0.15 && (frequency - 100.0f64).abs() < 0.15, "{d:?}: {attr} {frequency}");
        }
        assert_eq!(ZhouDataset::Nc.shortcut(), ShortcutKind::ArticlesNc);
        assert_eq!(ZhouDataset::of_shortcut("articles-cn"), Some(ZhouDataset::Cn));
        assert_eq!(ZhouDataset::of_shortcut("st"), None);
    }

    #[test]
    fn zhou_malformed_lines_name_file_and_line() {
        let line = |row: &str| parse(&format!("{ZHOU_HEADER}lstm,attention,article,correlating,10.3,2.4,7.9\n{row}\n"));
        let err = |row: &str| line(row).unwrap_err().to_string();
        assert_eq!(
            err("lstm,attention,cn,correlating,ten,2.4,4.1"),
            "pub.csv:3: column `attr_pct`: `ten` is not a number"
        );
        assert_eq!(
            err("lstm,attention,cn,correlating,15.9,2.4,104.1"),
            "pub.csv:3: column `frequency_pct`: 104.1 is outside 0..=100"
        );
        assert_eq!(
            err("lstm,attention,beer,correlating,1,1,1"),
            "pub.csv:3: column `dataset`: unknown `beer`; known: article, cn, nc"
        );
        assert_eq!(
            err("lstm,attention,cn,distractors,1,1,1"),
            "pub.csv:3: column `region`: unknown `distractors`; known: correlating, non_correlating, other"
        );
        assert_eq!(
            err("lstm,gradient,cn,other,1,1,1"),
            "pub.csv:3: column `attribution`: unknown `gradient`; known: attention"
        );
        assert_eq!(
            err("lstm,attention,article,non_correlating,1,1,1"),
            "pub.csv:3: column `region`: `article` has no non-correlating articles (the paper prints NA)"
        );
        assert_eq!(
            err("lstm,attention,article,correlating,1,1,1"),
            "pub.csv:3: the same arch `lstm`, attribution `attention`, dataset `article`, region `correlating` as line 2"
        );
        assert_eq!(err("lstm,attention,cn,other,1,1"), "pub.csv:3: 6 fields, but the header has 7");
        assert!(line("bert,attention,cn,other,1,1,1").is_ok());
    }

    /// lstm on sst2 (the paper's way on every claim but "far from faithful" on CN)
    /// and on imdb (the other way, or missing numbers).
    fn zhou_cells() -> Vec<CellResult> {
        let s = |shortcut, method, metric, seed, value, share| {
            attr("lstm", "sst2", shortcut, method, metric, seed, value, share)
        };
        let i =
            |shortcut, method, metric, value, share| attr("lstm", "imdb", shortcut, method, metric, 1, value, share);
        vec![
            // Article: 0.10 / 0.14 on 8% of the tokens.
            s("articles", "attn", "attr", 1, 0.10, Some(0.08)),
            s("articles", "attn", "attr", 2, 0.14, Some(0.08)),
            s("articles", "gradl-l2", "attr", 1, 0.9, Some(0.08)), // not attention: unmatched
            // CN: attr over three seeds, attr-noncorr over two.
            s("articles-cn", "attn", "attr", 1, 0.6, Some(0.04)),
            s("articles-cn", "attn", "attr-noncorr", 1, 0.1, Some(0.04)),
            s("articles-cn", "attn", "attr", 2, 0.7, Some(0.04)),
            s("articles-cn", "attn", "attr-noncorr", 2, 0.2, Some(0.04)),
            s("articles-cn", "attn", "attr", 3, 0.8, Some(0.04)),
            s("articles-nc", "attn", "attr", 1, 0.2, Some(0.04)),
            s("articles-nc", "attn", "attr-noncorr", 1, 0.15, Some(0.04)),
            s("st", "attn", "attr", 1, 0.9, Some(0.05)), // Bastings' shortcut: not Zhou's
            CellResult { verified: false, ..i("articles", "attn", "attr", 0.05, Some(0.08)) },
            i("articles-cn", "attn", "attr", 0.3, None),
            i("articles-nc", "attn", "attr", 0.2, Some(0.04)),
            i("articles-nc", "attn", "attr-noncorr", 0.02, Some(0.04)),
        ]
    }

    fn zhou_verification() -> Vec<VerificationRow> {
        vec![verification("lstm", "sst2", "articles", 0.9, 0.9), verification("lstm", "imdb", "articles", 0.9, 0.9)]
            .into_iter()
            .zip([0.99, 0.90])
            .map(|(r, on_synthetic)| VerificationRow { shortcut_model_on_synthetic: on_synthetic, ..r })
            .collect()
    }

    fn compared<'a>(c: &'a Comparison, dataset: &str, shortcut: &str, metric: &str) -> &'a ComparedCell {
        c.cells
            .iter()
            .find(|x| x.dataset == dataset && x.shortcut == shortcut && x.metric == metric)
            .unwrap_or_else(|| panic!("{dataset} {shortcut} {metric}: {:#?}", c.cells))
    }

    fn near(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn zhou_matches_regions_and_other_words() {
        let published = load(&reference("zhou2022_article_attention.csv")).unwrap();
        let c = compare(&published, &zhou_cells(), &zhou_verification(), &[]).unwrap();
        // sst2: Article 2 + CN 3 + NC 3; imdb: Article 2 + CN 1 (no attr-noncorr) + NC 3.
        assert_eq!(c.cells.len(), 14, "{:#?}", c.cells);
        assert_eq!((c.unmatched_published, c.unmatched_ours), (0, 1), "gradl-l2 only; st is not Zhou's");

        // Article: attr (0.10 + 0.14)/2 in percent, the interval averaged.
        let a = compared(&c, "sst2", "articles", "attr");
        assert_eq!((a.method.as_deref(), a.published_method.as_deref()), (Some("attn"), Some("attention")));
        assert_eq!((a.published_dataset.as_str(), a.runs, a.published), ("article", 2, 10.3));
        assert!(near(a.ours, 12.0) && near(a.ci_low.unwrap(), 10.0) && near(a.ci_high.unwrap(), 14.0), "{a:?}");
        assert!(near(a.difference(), 1.7) && near(a.share.unwrap(), 8.0), "{a:?}");
        assert_eq!((a.published_sd, a.published_share), (Some(2.4), Some(7.9)));
        // Other words = 1 − attr: 88%, the interval mirrored, on 92% of the tokens.
        let o = compared(&c, "sst2", "articles", "attr-other");
        assert!(near(o.ours, 88.0) && near(o.ci_low.unwrap(), 86.0) && near(o.ci_high.unwrap(), 90.0), "{o:?}");
        assert!(near(o.share.unwrap(), 92.0) && o.published == 89.7, "{o:?}");

        // CN: attr over 3 seeds (70%), attr-noncorr over 2 (15%); other words from
        // the 2 seeds with both: (0.3 + 0.1)/2 = 20%, not 100 − 70 − 15.
        let cn = compared(&c, "sst2", "articles-cn", "attr");
        assert!(near(cn.ours, 70.0) && cn.runs == 3 && cn.published == 15.9);
        let non = compared(&c, "sst2", "articles-cn", "attr-noncorr");
        assert!(near(non.ours, 15.0) && non.runs == 2 && non.published == 5.9 && non.published_share == Some(3.8));
        let other = compared(&c, "sst2", "articles-cn", "attr-other");
        assert!(near(other.ours, 20.0) && other.runs == 2 && other.ci_low.is_none(), "{other:?}");
        assert!(near(other.share.unwrap(), 92.0) && other.published == 78.2);
        // Without attr-noncorr, CN's other words are not guessed.
        assert!(!c.cells.iter().any(|x| x.dataset == "imdb" && x.shortcut == "articles-cn" && x.metric != "attr"));

        // Within one published sd: sst2 Article 2 (12.0 vs 10.3 ± 2.4, 88.0 vs 89.7), NC 3 (20 vs 12.0 ± 8.4,
        // 15 vs 12.6 ± 9.3, 65 vs 75.4 ± 16.7); imdb CN 1 (30 vs 15.9 ± 25.7), NC 2 (20, 78): 8 of 14.
        // Intervals: 11 cells have one (CN / NC other words have none); 10.3 and 89.7 fall inside.
        assert!(
            c.summary.contains(
                &"Attr%: 8 of 14 cells (57%) within one published standard deviation of the published mean; \
                  published inside our 95% interval in 2 of 11."
                    .to_string()
            ),
            "{:?}",
            c.summary
        );
        assert!(c.summary.iter().any(|l| l.contains("BeerAdvocate")), "{:?}", c.summary);
        assert_eq!(frame(&c).get_column_names(), columns(PublishedKind::ZhouAttr));
        assert_eq!(frame(&c).shape(), (14, COLUMNS.len() + 3));
    }

    #[test]
    fn zhou_findings_both_ways() {
        let published = load(&reference("zhou2022_article_attention.csv")).unwrap();
        let c = compare(&published, &zhou_cells(), &zhou_verification(), &[]).unwrap();
        let holds = |starts: &str| finding(&c, starts).holds;

        // Attention beats the word frequency: 12% on 8% ✓; imdb 5% on 8% ✗; no share ?.
        let f = finding(&c, "lstm on sst2, Article (articles), attn: attention puts more than the word frequency");
        assert_eq!(f.holds, Some(true));
        assert!(f.statement.ends_with("(published 10.3% on 7.9% of the words)"), "{f:?}");
        assert_eq!(f.evidence, "ours 12.0% on 8.0% of the tokens (+4.0 points) over 2 seed(s)");
        let f = finding(&c, "lstm on imdb, Article (articles), attn: attention puts more than the word frequency");
        assert_eq!(f.holds, Some(false));
        assert!(f.evidence.ends_with(UNVERIFIED_NOTE), "{f:?}");
        assert_eq!(holds("lstm on imdb, CN (articles-cn), attn: attention puts more than the word frequency"), None);

        // Far from faithful (< 50%): Article 12% ✓; CN 70% ✗.
        let f = finding(&c, "lstm on sst2, Article (articles), attn: attention is far from a faithful attribution");
        assert_eq!(f.holds, Some(true));
        assert_eq!(f.evidence, "ours 12.0% over 2 seed(s); our models' accuracy on the manipulated test set is 99.0%");
        assert_eq!(holds("lstm on sst2, CN (articles-cn), attn: attention is far from a faithful"), Some(false));
        // imdb's Article model is 90% accurate: said beside the verdict.
        let f = finding(&c, "lstm on imdb, Article (articles), attn: attention is far from a faithful attribution");
        assert_eq!(f.holds, Some(true));
        assert!(f.evidence.contains("is 90.0%, below the paper's 97.0%"), "{f:?}");
        let f = finding(&c, "lstm on imdb, CN (articles-cn), attn: attention is far from a faithful attribution");
        assert!(f.evidence.ends_with("no verification of ours gives the models' accuracy"), "{f:?}");

        // NC: non-correlating ≥ 0.5 × correlating: 15% vs 20% ✓; 2% vs 20% ✗. Not asked of CN.
        let f = finding(&c, "lstm on sst2, NC (articles-nc), attn: attention gives the non-correlating articles");
        assert_eq!(f.holds, Some(true));
        assert!(f.statement.ends_with("(published 12.6% vs 12.0%)"), "{f:?}");
        assert_eq!(f.evidence, "ours 15.0% vs 20.0% (ratio 0.75) over 1 seed(s)");
        assert_eq!(
            holds("lstm on imdb, NC (articles-nc), attn: attention gives the non-correlating articles"),
            Some(false)
        );
        assert!(!c.findings.iter().any(|f| f.statement.contains("CN (articles-cn), attn: attention gives")));

        // Per (model, dataset): sst2 first, Article, CN, NC; 3 × 2 + 1 findings each.
        assert_eq!(c.findings.len(), 14);
        assert!(c.findings[0].statement.starts_with("lstm on sst2, Article"), "{:#?}", c.findings);
        assert!(c.findings[6].statement.starts_with("lstm on sst2, NC (articles-nc), attn: attention gives"));
        assert!(c.findings[7].statement.starts_with("lstm on imdb, Article"));

        let md = render_markdown(&c);
        assert!(md.starts_with("## Compared with Zhou et al. (2022): attention Attr%"), "{md}");
        assert!(md.contains("\n- ✗ lstm on sst2, CN (articles-cn), attn: attention is far from a faithful"), "{md}");
        assert!(md.contains("\n- ? lstm on imdb, CN (articles-cn), attn: attention puts more"), "{md}");
        assert!(md.contains("| published_sd | region_share | published_frequency |"), "{md}");
        let row =
            md.lines().find(|l| l.contains("| sst2 ") && l.contains("| articles ") && l.contains("| attr ")).unwrap();
        let fields: Vec<&str> = row.split('|').map(str::trim).filter(|f| !f.is_empty()).collect();
        assert_eq!(fields[8..], ["2", "12.0", "10.0", "14.0", "10.3", "+1.7", "yes", "yes", "2.4", "8.0", "7.9"]);
    }

    #[test]
    fn zhou_bert_rows_take_attn_last() {
        let published = parse(&format!(
            "{ZHOU_HEADER}bert,attention,article,correlating,20,1,7\nlstm,attention,article,correlating,10.3,2.4,7.9\n"
        ))
        .unwrap();
        let cells = vec![
            attr("bert", "sst2", "articles", "attn-all", "attr", 1, 0.3, Some(0.07)),
            attr("bert", "sst2", "articles", "attn-last", "attr", 1, 0.1, Some(0.07)),
        ];
        let c = compare(&published, &cells, &[], &[]).unwrap();
        assert_eq!(c.cells.len(), 1);
        assert_eq!((c.cells[0].method.as_deref(), c.cells[0].architecture.as_str()), (Some("attn-last"), "bert"));
        assert!(near(c.cells[0].ours, 10.0) && c.cells[0].published == 20.0);
        // The lstm row has no cell of ours; attn-all has no row.
        assert_eq!((c.unmatched_published, c.unmatched_ours), (1, 1));
        // Without attn-last, attn-all stands for attention.
        let c = compare(&published, &cells[..1], &[], &[]).unwrap();
        assert_eq!(c.cells[0].method.as_deref(), Some("attn-all"));

        // Nothing of ours on the article manipulations: nothing matches.
        let c = compare(&published, &lstm_cells(), &[], &[]).unwrap();
        assert!(c.cells.is_empty() && c.findings.is_empty());
        assert_eq!((c.unmatched_published, c.unmatched_ours), (2, 0));
        assert!(render_markdown(&c).contains("(no cell of ours matches a published number)"));
    }
}
