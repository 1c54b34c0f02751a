//! The published numbers: one row type per paper's table, read from the
//! CSVs in `experiments/reference/` and told apart by their header.

use super::zhao::DiagMetric;
use super::{
    CROWD_ACCURACY_HEADER, CompareError, DIAGNOSTICITY_HEADER, OTHER_METRIC, OurMetric, PRECISION_RANK_HEADER,
    SOURCE_ACCURACY_HEADER, ZHOU_ATTR_HEADER, ZHOU_IMAGES_HEADER, ZHOU_RATIONALE_HEADER,
};
use grid_core::data::csv_records::{Record, read_records};
use grid_core::model::Architecture;
use grid_methods::metrics::Metric;
use grid_methods::salience::expand::expand;
use grid_methods::salience::{AttentionView, Baseline, GradientMethod, Method, Target};
use grid_methods::shortcut::{Regime, ShortcutKind};
use std::fmt;
use std::ops::RangeInclusive;
use std::path::Path;

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
    pub(super) fn parse(s: &str) -> Option<Self> {
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
    pub fn architecture(self) -> Architecture {
        match self {
            Self::Lstm => Architecture::Bilstm,
            Self::Bert => Architecture::Bert,
        }
    }

    pub(super) fn of_architecture(architecture: Architecture) -> Option<Self> {
        match architecture {
            Architecture::Bilstm => Some(Self::Lstm),
            Architecture::Bert => Some(Self::Bert),
            Architecture::Rationale => None,
        }
    }
}

/// One (arch, method config, dataset, shortcut) of Bastings et al.
#[derive(Debug, Clone, PartialEq)]
pub struct PrecisionRankRow {
    /// Line in the CSV.
    pub line: usize,
    pub arch: PaperArch,
    /// The config, e.g. `gradl-l1`.
    pub method: Method,
    /// The CSV's method cell, e.g. `grad{p,l}-l1` (one number for the whole group).
    pub printed_as: String,
    pub dataset: String,
    pub shortcut: Regime,
    /// `None` where the paper prints no number (an empty CSV field).
    pub precision: Option<f64>,
    pub rank: Option<f64>,
}

impl PrecisionRankRow {
    /// The published number for our metric `precision` or `rank`; Bastings
    /// et al. publish no other.
    pub(super) fn value(&self, metric: OurMetric) -> Option<f64> {
        match metric {
            OurMetric::Grid(Metric::Precision) => self.precision,
            OurMetric::Grid(Metric::Rank) => self.rank,
            OurMetric::Grid(
                Metric::AttrShare
                | Metric::AttrNonCorrelating
                | Metric::Erasure(_)
                | Metric::Diagnosticity(_)
                | Metric::Rationale(_),
            )
            | OurMetric::AttrOther => None,
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
    pub(super) const ALL: [Self; 5] =
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

    pub(super) fn parse(s: &str) -> Option<Self> {
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
    pub(super) fn value(&self, metric: DiagMetric) -> f64 {
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
    pub(super) const ALL: [Self; 1] = [Self::Attention];

    /// The CSV's spelling.
    pub fn printed(self) -> &'static str {
        match self {
            Self::Attention => "attention",
        }
    }

    pub(super) fn parse(s: &str) -> Option<Self> {
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
    pub(super) const ALL: [Self; 3] = [Self::Article, Self::Cn, Self::Nc];

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

    pub(super) fn parse(s: &str) -> Option<Self> {
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

    pub(super) fn of_shortcut(shortcut: Regime) -> Option<Self> {
        let Regime::Shortcut(kind) = shortcut else { return None };
        Self::ALL.into_iter().find(|d| d.shortcut() == kind)
    }

    /// CN and NC have non-correlating articles; Article has none (the paper's NA).
    pub(super) fn has_non_correlating(self) -> bool {
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
    pub(super) const ALL: [Self; 3] = [Self::Correlating, Self::NonCorrelating, Self::Other];

    /// The CSV's spelling.
    pub fn printed(self) -> &'static str {
        match self {
            Self::Correlating => "correlating",
            Self::NonCorrelating => "non_correlating",
            Self::Other => "other",
        }
    }

    pub(super) fn parse(s: &str) -> Option<Self> {
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
    ZhouRationale(Vec<super::zhou_rationale::ZhouRationaleRow>),
    ZhouImages(Vec<super::zhou_images::ZhouImagesRow>),
}

/// What a [`Published`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PublishedKind {
    PrecisionRank,
    Diagnosticity,
    SourceAccuracy,
    ZhouAttr,
    ZhouRationale,
    ZhouImages,
}

impl fmt::Display for PublishedKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::PrecisionRank => "Bastings et al. (2022): precision and mean rank per method config (Tables 10/11)",
            Self::Diagnosticity => "Zhao & Aletras (2023): diagnosticity of faithfulness metrics (Table 6)",
            Self::SourceAccuracy => "Bastings et al. (2022): accuracy of the source models (Table 1)",
            Self::ZhouAttr => "Zhou et al. (2022): attention Attr% on the article manipulations (Table 1)",
            Self::ZhouRationale => "Zhou et al. (2022): rationale models on the article manipulations (§7, findings)",
            Self::ZhouImages => "Zhou et al. (2022): saliency maps on the image manipulations (§5, findings)",
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
            Self::ZhouRationale(_) => PublishedKind::ZhouRationale,
            Self::ZhouImages(_) => PublishedKind::ZhouImages,
        }
    }
}

/// Reads a published CSV; its header says which kind it is.
pub fn load(path: &Path) -> Result<Published, CompareError> {
    let text = std::fs::read_to_string(path).map_err(|source| CompareError::Io { path: path.to_path_buf(), source })?;
    parse_published(path, &text)
}

/// [`load`] on text already read; `path` only names the file in errors.
pub(super) fn parse_published(path: &Path, text: &str) -> Result<Published, CompareError> {
    let records = read_records(path, text)?;
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
    } else if names == ZHOU_RATIONALE_HEADER {
        file.finding_rows("finding").map(Published::ZhouRationale)
    } else if names == ZHOU_IMAGES_HEADER {
        file.finding_rows("image_finding").map(Published::ZhouImages)
    } else if names == CROWD_ACCURACY_HEADER {
        Err(CompareError::NoCounterpart {
            path: path.to_path_buf(),
            what: "people's accuracy from each method's top words (Lu et al. 2024): compare a crowd study's answers with `grid ledger … --crowd ANSWERS` or `grid crowd import … --compare`",
        })
    } else {
        Err(CompareError::UnknownHeader { path: path.to_path_buf(), header: header.fields.join(",") })
    }
}

pub(super) fn check_field_count(path: &Path, record: &Record, expected: usize) -> Result<(), CompareError> {
    if record.fields.len() == expected {
        return Ok(());
    }
    Err(CompareError::FieldCount { path: path.to_path_buf(), line: record.line, expected, found: record.fields.len() })
}

/// The data records of one file, with the path for errors.
pub(super) struct CsvFile<'a> {
    pub(super) path: &'a Path,
    pub(super) rows: &'a [Record],
}

impl CsvFile<'_> {
    pub(super) fn field_error(&self, record: &Record, column: &'static str, message: String) -> CompareError {
        CompareError::Field { path: self.path.to_path_buf(), line: record.line, column, message }
    }

    /// Field `i` (named `column`), trimmed and not empty.
    pub(super) fn text<'r>(&self, record: &'r Record, i: usize, column: &'static str) -> Result<&'r str, CompareError> {
        let s = record.fields[i].trim();
        if s.is_empty() {
            return Err(self.field_error(record, column, "empty".into()));
        }
        Ok(s)
    }

    /// Field `i` as a finite number inside `range`.
    pub(super) fn number(
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
    pub(super) fn optional_number(
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

    pub(super) fn arch(&self, record: &Record, i: usize) -> Result<PaperArch, CompareError> {
        let s = self.text(record, i, "arch")?;
        PaperArch::parse(s)
            .ok_or_else(|| self.field_error(record, "arch", format!("`{s}` is neither `lstm` nor `bert`")))
    }

    /// A shortcut kind's name, or `natural`.
    pub(super) fn regime(&self, record: &Record, i: usize) -> Result<Regime, CompareError> {
        let s = self.text(record, i, "shortcut")?;
        s.parse::<Regime>().map_err(|e| self.field_error(record, "shortcut", e.to_string()))
    }

    /// The configs a method cell stands for, canonical, in expansion order.
    pub(super) fn methods(&self, record: &Record, i: usize) -> Result<Vec<Method>, CompareError> {
        let printed = self.text(record, i, "method")?;
        let names = expand(printed).map_err(|e| self.field_error(record, "method", e.to_string()))?;
        names
            .iter()
            .map(|n| n.parse::<Method>().map_err(|e| self.field_error(record, "method", e.to_string())))
            .collect()
    }

    pub(super) fn precision_rank(&self) -> Result<Vec<PrecisionRankRow>, CompareError> {
        let mut out = Vec::new();
        let mut seen = Seen::default();
        for record in self.rows {
            let arch = self.arch(record, 0)?;
            let printed_as = self.text(record, 1, "method")?.to_string();
            let dataset = self.text(record, 2, "dataset")?.to_string();
            let shortcut = self.regime(record, 3)?;
            let precision = self.optional_number(record, 4, "precision", 0.0..=1.0)?;
            let rank = self.optional_number(record, 5, "rank", 1.0..=1e6)?;
            for method in self.methods(record, 1)? {
                let what =
                    format!("arch `{}`, method `{method}`, dataset `{dataset}`, shortcut `{shortcut}`", arch.name());
                seen.check(self.path, record.line, what)?;
                let (dataset, printed_as) = (dataset.clone(), printed_as.clone());
                let line = record.line;
                out.push(PrecisionRankRow { line, arch, method, printed_as, dataset, shortcut, precision, rank });
            }
        }
        Ok(out)
    }

    pub(super) fn diagnosticity(&self) -> Result<Vec<DiagnosticityRow>, CompareError> {
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

    pub(super) fn source_accuracy(&self) -> Result<Vec<SourceAccuracyRow>, CompareError> {
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

    pub(super) fn zhou_attr(&self) -> Result<Vec<ZhouAttrRow>, CompareError> {
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
pub(super) struct Seen(std::collections::HashMap<String, usize>);

impl Seen {
    pub(super) fn check(&mut self, path: &Path, line: usize, what: String) -> Result<(), CompareError> {
        if let Some(&first_line) = self.0.get(&what) {
            return Err(CompareError::Duplicate { path: path.to_path_buf(), line, first_line, what });
        }
        self.0.insert(what, line);
        Ok(())
    }
}
