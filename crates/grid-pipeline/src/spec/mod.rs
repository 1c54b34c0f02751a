//! The grid file: TOML → validated [`Grid`].
//!
//! Two stages, as ripgrep does with its arguments: serde structs that mirror the
//! TOML (unknown keys, wrong types and out-of-range values are rejected while
//! parsing, so the toml crate's spans point at the offending key or value), then
//! checks across fields (duplicate names, a dataset with neither files nor the
//! generated corpus), which carry spans of their own. Every error names the file,
//! line and column. Every key is documented in docs/grid-files.md.

pub mod extends;
mod finite;
pub mod image_checkpoints;
pub mod images;
pub mod overrides;
pub mod slurm;
pub mod split_file;
mod values;

use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use toml::Spanned;

pub use crate::architectures::ArchitectureSpec;
pub use crate::architectures::bert::{BertInit, BertSpec, HeadInit, PositionInit, RandomBert};
pub use crate::architectures::bilstm::{BiLstmSpec, PadEmbedding, VocabSpec};
pub use crate::architectures::table::{ModelSpec, OptimizerName};
use grid_core::data::generated::GeneratedCorpusOptions;
use grid_core::data::table::TableFormat;
pub use grid_core::model::Architecture;
pub use grid_core::train::recipe::{BestBy, Keep, Optimizer, Schedule, TrainingSpec};
use grid_methods::metrics::WordAggregation;
use grid_methods::metrics::{ErasureMetric, Metric};
use grid_methods::salience::Method;
use grid_methods::salience::expand;
use grid_methods::shortcut::{ShortcutKind, ShortcutTokens};
use grid_report::ReportFormat;
pub use split_file::SplitFile;
pub use values::{Positive, Share};

#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("{path}: cannot read grid file: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{path}:{line}:{column}: {message}")]
    Invalid { path: PathBuf, line: usize, column: usize, message: String },
    /// A `--set` that cannot be placed, or whose value the grid refuses.
    #[error("{path}: {message}")]
    Override { path: PathBuf, message: String },
}

impl ModelSpec {
    /// The model as trained on `dataset`: the dataset's batch size, if it sets one.
    pub fn for_dataset(&self, dataset: &DatasetSpec) -> ModelSpec {
        let mut model = self.clone();
        if let Some(batch_size) = dataset.batch_size {
            model.training.batch_size = batch_size;
        }
        model
    }
}

/// A validated grid.
#[derive(Debug, Clone)]
pub struct Grid {
    pub name: String,
    /// The grid file; relative data paths without a data root resolve against its folder.
    pub path: PathBuf,
    /// The text this grid was read from: the file with its `extends` chain
    /// merged and its `--set` overrides applied. `Grid::parse(text, path)`
    /// gives this grid again; a run's workers plan from it
    /// ([`Grid::load_frozen`]), so an edit of the file while a run goes on
    /// does not reach that run.
    pub text: String,
    pub datasets: Vec<DatasetSpec>,
    /// The planted shortcuts; `None` for a natural grid (no `[shortcuts]`):
    /// models learn the task itself and are explained on the original test set.
    pub shortcuts: Option<ShortcutSpec>,
    pub models: Vec<ModelSpec>,
    pub attribution: AttributionSpec,
    pub verification: VerificationSpec,
    /// Per-cell metrics, `diagnosticity` expanded.
    pub metrics: Vec<Metric>,
    /// Erasure settings, used when a metric needs erasure.
    pub erasure: ErasureSpec,
    /// Method agreement tables, when `metrics` lists `agreement`.
    pub agreement: Option<AgreementSpec>,
    /// Training seeds: every model is trained (and everything downstream run)
    /// once per seed. Without `seeds`, each model's `training.seed`.
    pub seeds: Option<Vec<u64>>,
    pub report: ReportSpec,
    /// What `--executor slurm` asks of the cluster; in no key.
    pub slurm: slurm::SlurmSpec,
    /// Zhou et al.'s image protocol (`[images]`), planned beside the text
    /// grid; an image-only grid has no text `datasets` or `models`.
    pub images: Option<images::ImageGrid>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGrid {
    name: Option<String>,
    #[serde(default)]
    datasets: Vec<RawDataset>,
    shortcuts: Option<ShortcutSpec>,
    #[serde(default)]
    models: Vec<crate::architectures::RawModel>,
    attribution: Option<Spanned<RawAttribution>>,
    #[serde(default)]
    verification: VerificationSpec,
    metrics: Option<Spanned<Vec<Spanned<String>>>>,
    erasure: Option<Spanned<ErasureSpec>>,
    #[serde(default)]
    agreement: AgreementSpec,
    seeds: Option<Spanned<Vec<u64>>>,
    #[serde(default)]
    report: ReportSpec,
    #[serde(default)]
    slurm: slurm::SlurmSpec,
    images: Option<images::RawImages>,
}

/// Without `metrics`: Bastings et al.'s two on a shortcut grid; on a natural
/// grid, which has no ground truth, Zhao & Aletras's erasure metrics.
fn default_metrics(natural: bool) -> Spanned<Vec<Spanned<String>>> {
    let names: &[&str] =
        if natural { &["ns", "nc", "soft-ns", "soft-nc", "diagnosticity"] } else { &["precision", "rank"] };
    Spanned::new(0..0, names.iter().map(|n| Spanned::new(0..0, n.to_string())).collect())
}

/// `[erasure]`: the rationale ratios and soft-erasure sampling of PROTOCOL §3.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ErasureSpec {
    /// Rationale lengths as shares of the ordinary tokens; AOPC averages over them.
    #[serde(default = "default_ratios")]
    pub ratios: Vec<Share>,
    /// Bernoulli masks per example for Soft-NS / Soft-NC (the paper draws one).
    #[serde(default = "one")]
    pub soft_samples: Positive,
    #[serde(default)]
    pub seed: u64,
    /// `"paper"` (PROTOCOL §3) or `"authors-code"` (Zhao & Aletras's public
    /// evaluation code: NC clipped, specials zeroed too, `⌈ρ·n⌉` of the whole length).
    #[serde(default)]
    pub convention: grid_methods::metrics::erasure::Convention,
    /// Perturbed inputs per forward pass; a speed knob, not in any key.
    #[serde(default = "per_eval")]
    pub batch_size: Positive,
}

fn default_ratios() -> Vec<Share> {
    [0.01, 0.05, 0.1, 0.2, 0.5].map(Share::new).to_vec()
}
fn one() -> Positive {
    Positive::new(1)
}

impl Default for ErasureSpec {
    fn default() -> Self {
        Self {
            ratios: default_ratios(),
            soft_samples: one(),
            seed: 0,
            convention: Default::default(),
            batch_size: per_eval(),
        }
    }
}

/// `[agreement]`: method agreement (Lu et al. 2024, Table 1).
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct AgreementSpec {
    /// Size of the top sets whose overlap is averaged (capped at the input length).
    #[serde(default = "default_top_k")]
    pub top_k: Positive,
}

fn default_top_k() -> Positive {
    Positive::new(10)
}

impl Default for AgreementSpec {
    fn default() -> Self {
        Self { top_k: default_top_k() }
    }
}

/// Where a dataset comes from.
// One per dataset of a grid: its size does not matter, its shape does.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum DatasetSource {
    /// The built-in template corpus (no download).
    Generated(GeneratedCorpusOptions),
    /// Split files; paths are relative to the data root.
    Files {
        train: SplitFile,
        validation: Option<SplitFile>,
        test: SplitFile,
        format: Option<TableFormat>,
        text_column: String,
        label_column: String,
        label_names: Option<Vec<String>>,
        /// Labels are `0..classes`: the length of `label_names`, else the
        /// dataset's `classes` key, else 2.
        classes: usize,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct DatasetSpec {
    pub name: String,
    pub source: DatasetSource,
    pub limits: SplitLimits,
    /// Share of train held out as validation when there is no validation file.
    pub validation_share: Share,
    /// Model input length limit for this dataset, in tokens.
    pub max_length: Positive,
    /// Shortcut tokens go among the first this many words (default: `max_length`).
    pub insert_within: Option<Positive>,
    /// Training batch size for this dataset, overriding the models' (the paper
    /// trains with batch 32 on Toxicity, 64/16 elsewhere).
    pub batch_size: Option<Positive>,
}

impl DatasetSpec {
    /// The words the shortcut tokens are inserted among: by default as many as
    /// a word-level model reads, so truncation never cuts them for the BiLSTM
    /// (a sub-word model reads fewer words; set less for it).
    pub fn insert_within(&self) -> usize {
        self.insert_within.unwrap_or(self.max_length).get()
    }

    /// Its split files by split name (`train`, `validation`, `test`), the
    /// ones it has; none for a generated corpus.
    pub fn split_files(&self) -> Vec<(&'static str, &SplitFile)> {
        let DatasetSource::Files { train, validation, test, .. } = &self.source else { return Vec::new() };
        [("train", Some(train)), ("validation", validation.as_ref()), ("test", Some(test))]
            .into_iter()
            .filter_map(|(split, file)| Some((split, file?)))
            .collect()
    }

    /// The number of classes its labels may take (`0..classes`).
    pub fn classes(&self) -> usize {
        match &self.source {
            DatasetSource::Generated(options) => options.classes,
            DatasetSource::Files { classes, .. } => *classes,
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct SplitLimits {
    pub train: Option<Positive>,
    pub validation: Option<Positive>,
    pub test: Option<Positive>,
    /// Only the texts of at most this many (whitespace-separated) words are
    /// read, from every split file, before the hold-out and the row limits:
    /// reviews of a paper's length out of a corpus of longer ones.
    pub max_words: Option<Positive>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDataset {
    name: Spanned<String>,
    generated: Option<GeneratedCorpusOptions>,
    train: Option<SplitFile>,
    validation: Option<SplitFile>,
    test: Option<SplitFile>,
    format: Option<TableFormat>,
    #[serde(default = "default_text_column")]
    text_column: String,
    #[serde(default = "default_label_column")]
    label_column: String,
    label_names: Option<Vec<String>>,
    classes: Option<Positive>,
    #[serde(default)]
    limits: SplitLimits,
    #[serde(default = "values::default_validation")]
    validation_share: Share,
    #[serde(default = "values::default_max_length")]
    max_length: Positive,
    insert_within: Option<Positive>,
    batch_size: Option<Positive>,
}

fn default_text_column() -> String {
    "text".into()
}
fn default_label_column() -> String {
    "label".into()
}

#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct ShortcutSpec {
    #[serde(default = "inserted_kinds")]
    pub kinds: Vec<ShortcutKind>,
    #[serde(default)]
    pub tokens: TokenSpec,
    #[serde(default = "values::default_mix")]
    pub mix_share: Share,
    /// Share of original examples that get one lone rule token (tic/op);
    /// defaults to `mix_share` ("as many as the synthetic ones").
    pub lone_share: Option<Share>,
    #[serde(default = "values::default_max_distance")]
    pub max_distance: Positive,
    /// Article manipulations: probability `r` that a label survives the
    /// reassignment (Zhou et al.; 0.5 makes the text itself uninformative).
    #[serde(default = "values::default_keep")]
    pub keep_probability: Share,
    #[serde(default = "default_shortcut_seed")]
    pub seed: u64,
}

/// `[shortcuts.tokens]`: binary grids may name the paper's two indicators
/// `zero` and `one`; any grid may list one indicator per class in
/// `indicators`. Unset indicators of class `c` are `#c`.
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TokenSpec {
    pub zero: Option<String>,
    pub one: Option<String>,
    pub indicators: Option<Vec<String>>,
    pub context: String,
}

impl Default for TokenSpec {
    fn default() -> Self {
        TokenSpec { zero: None, one: None, indicators: None, context: ShortcutTokens::default().context }
    }
}

impl TokenSpec {
    /// The tokens a dataset of `classes` classes uses. `indicators` holds at
    /// least that many (checked when the grid is read); extra ones serve the
    /// grid's larger datasets.
    pub fn for_classes(&self, classes: usize) -> ShortcutTokens {
        let defaults = ShortcutTokens::default_for(classes);
        let indicators = match &self.indicators {
            Some(list) => list.iter().take(classes).cloned().collect(),
            None => defaults
                .indicators
                .into_iter()
                .enumerate()
                .map(|(c, default)| match (c, &self.zero, &self.one) {
                    (0, Some(zero), _) => zero.clone(),
                    (1, _, Some(one)) => one.clone(),
                    _ => default,
                })
                .collect(),
        };
        ShortcutTokens { indicators, context: self.context.clone() }
    }

    /// `indicators` replaces `zero` / `one`, and must cover every dataset.
    fn check(&self, datasets: &[DatasetSpec]) -> Result<(), String> {
        let Some(list) = &self.indicators else { return Ok(()) };
        if self.zero.is_some() || self.one.is_some() {
            return Err("`shortcuts.tokens`: give `indicators` or `zero` / `one`, not both".into());
        }
        match datasets.iter().find(|d| d.classes() > list.len()) {
            Some(d) => Err(format!(
                "`shortcuts.tokens.indicators` has {} entries, but dataset `{}` has {} classes (one indicator per class)",
                list.len(),
                d.name,
                d.classes()
            )),
            None => Ok(()),
        }
    }
}

fn inserted_kinds() -> Vec<ShortcutKind> {
    ShortcutKind::INSERTED.to_vec()
}
fn default_shortcut_seed() -> u64 {
    13
}

impl Default for ShortcutSpec {
    fn default() -> Self {
        Self {
            kinds: inserted_kinds(),
            tokens: TokenSpec::default(),
            mix_share: values::default_mix(),
            lone_share: None,
            max_distance: values::default_max_distance(),
            keep_probability: values::default_keep(),
            seed: default_shortcut_seed(),
        }
    }
}

/// Which of the test examples attribution samples from, by the model's own
/// prediction (Lu et al. explain correctly classified examples and study the
/// misclassified ones apart).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Subset {
    #[default]
    All,
    Correct,
    Misclassified,
}

impl Subset {
    pub fn name(self) -> &'static str {
        match self {
            Subset::All => "all",
            Subset::Correct => "correct",
            Subset::Misclassified => "misclassified",
        }
    }
}

/// Which test set attribution explains.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TestSet {
    /// Shortcut inserted, labels balanced.
    Synthetic,
    /// Shortcut chosen so the label is the opposite of the original one.
    Flip,
    /// The dataset's own test set, untouched: a natural grid's (no
    /// `[shortcuts]`), never a shortcut grid's (checked when the grid is read).
    Original,
}

#[derive(Debug, Clone, PartialEq)]
pub struct AttributionSpec {
    pub methods: Vec<Method>,
    pub sample: Positive,
    pub test_set: TestSet,
    /// The examples the sample is drawn from, by the model's prediction.
    pub subset: Subset,
    pub batch_size: Positive,
    /// IG steps / SmoothGrad samples per forward-backward pass (Captum's `internal_batch_size`).
    pub internal_batch_size: Positive,
    /// Perturbed inputs per forward pass (Captum's `perturbations_per_eval`).
    pub perturbations_per_eval: Positive,
    /// How scores of a word's subword tokens combine before scoring, if at all.
    pub word_aggregation: Option<WordAggregation>,
    pub seed: u64,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAttribution {
    methods: Vec<Spanned<String>>,
    #[serde(default = "sample")]
    sample: Positive,
    /// Absent: the synthetic test set, or on a natural grid the original one.
    test_set: Option<Spanned<TestSet>>,
    #[serde(default)]
    subset: Subset,
    #[serde(default = "attr_batch")]
    batch_size: Positive,
    #[serde(default = "internal_batch")]
    internal_batch_size: Positive,
    #[serde(default = "per_eval")]
    perturbations_per_eval: Positive,
    #[serde(default)]
    word_aggregation: Option<WordAggregation>,
    #[serde(default = "attr_seed")]
    seed: u64,
}

fn sample() -> Positive {
    Positive::new(1000)
}
fn attr_batch() -> Positive {
    Positive::new(32)
}
fn internal_batch() -> Positive {
    Positive::new(256)
}
fn per_eval() -> Positive {
    Positive::new(256)
}
fn attr_seed() -> u64 {
    7
}

/// Thresholds a shortcut model must meet (PROTOCOL §1, "Verification").
#[derive(Debug, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct VerificationSpec {
    /// The shortcut model's accuracy on the synthetic test set must reach this.
    #[serde(default = "values::default_synthetic")]
    pub min_synthetic_accuracy: Share,
    /// The original model's synthetic-test accuracy must lie within this of 0.5.
    #[serde(default = "values::default_chance")]
    pub chance_tolerance: Share,
    /// The shortcut model may lose at most this much accuracy on the original test set.
    #[serde(default = "values::default_drop")]
    pub max_original_drop: Share,
}

impl Default for VerificationSpec {
    fn default() -> Self {
        Self {
            min_synthetic_accuracy: values::default_synthetic(),
            chance_tolerance: values::default_chance(),
            max_original_drop: values::default_drop(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportSpec {
    #[serde(default = "default_formats")]
    pub formats: Vec<ReportFormat>,
}

fn default_formats() -> Vec<ReportFormat> {
    ReportFormat::ALL.to_vec()
}

impl Default for ReportSpec {
    fn default() -> Self {
        Self { formats: default_formats() }
    }
}

impl Grid {
    /// Reads and validates a grid file (with the grids it `extends`).
    pub fn load(path: &Path) -> Result<Grid, SpecError> {
        Grid::load_with(path, &[])
    }

    /// Reads a grid file with the grids it `extends` merged in and `--set`
    /// overrides written over them, and validates the result as a file (see
    /// [`extends`] and [`overrides`]). An error names the file and line the
    /// offending text was written on, or the override that wrote it.
    pub fn load_with(path: &Path, settings: &[overrides::Override]) -> Result<Grid, SpecError> {
        if let Some(setting) = settings.iter().find(|s| s.key() == "extends") {
            let message = format!("--set {setting}: `extends` is read before any override; write it in the file");
            return Err(SpecError::Override { path: path.into(), message });
        }
        let composed = extends::compose(path)?;
        let edited = if settings.is_empty() {
            composed.text.clone()
        } else {
            overrides::apply(&composed.text, path, settings)
                .map_err(|message| SpecError::Override { path: path.into(), message })?
        };
        Grid::parse(&edited, path).map_err(|error| {
            let SpecError::Invalid { line, column, message, .. } = error else { return error };
            // 1:1 is where `parse` puts an error about the grid as a whole:
            // that is the file the user named, whatever it extends.
            if (line, column) == (1, 1) {
                return SpecError::Invalid { path: path.into(), line, column, message };
            }
            let composed_line = if settings.is_empty() {
                Some(line)
            } else {
                overrides::line_origins(&composed.text, &edited).get(line.saturating_sub(1)).copied().flatten()
            };
            match composed_line {
                Some(at) => match composed.origin(at) {
                    Some(origin) => {
                        SpecError::Invalid { path: origin.path.clone(), line: origin.line, column, message }
                    }
                    // A line the merge wrote itself: no file has it as written.
                    None => SpecError::Invalid {
                        path: path.into(),
                        line: 1,
                        column: 1,
                        message: format!("{message} (in the grid merged from its `extends` chain, line {at})"),
                    },
                },
                None => {
                    let written = edited.lines().nth(line.saturating_sub(1)).unwrap_or_default();
                    let names: Vec<String> =
                        overrides::written_by(written, settings).iter().map(|o| format!("--set {o}")).collect();
                    SpecError::Override { path: path.into(), message: format!("{}: {message}", names.join(", ")) }
                }
            }
        })
    }

    /// The grid a run planned, from the text it froze (`Grid::text`, written
    /// to `frozen`), as if read from `path` (its name and relative paths).
    pub fn load_frozen(frozen: &Path, path: &Path) -> Result<Grid, SpecError> {
        let text =
            std::fs::read_to_string(frozen).map_err(|source| SpecError::Read { path: frozen.to_path_buf(), source })?;
        Grid::parse(&text, path)
    }

    /// Validates grid text; `path` is used for messages and relative paths.
    pub fn parse(text: &str, path: &Path) -> Result<Grid, SpecError> {
        let at = |span: Option<Range<usize>>, message: String| {
            let (line, column) = span.map(|s| line_column(text, s.start)).unwrap_or((1, 1));
            SpecError::Invalid { path: path.into(), line, column, message }
        };
        if let Some((span, key, value)) = finite::first_non_finite(text) {
            return Err(at(Some(span), format!("`{key}` is {value}: a grid takes finite numbers only")));
        }
        let raw: RawGrid = toml::from_str(text).map_err(|e| at(e.span(), e.message().trim_end().to_string()))?;

        let seeds = raw.seeds.map(|list| seed_list(list, &at)).transpose()?;
        let images = raw.images.map(images::images).transpose().map_err(|(span, m)| at(span, m))?;
        if images.is_some() && raw.datasets.is_empty() {
            // An image-only grid: no text part may be half there.
            no_text_parts(&raw.models, raw.attribution.as_ref(), raw.shortcuts.is_some(), &at)?;
            let name = raw.name.unwrap_or_else(|| default_name(path));
            return Ok(Grid::of_images(name, path, text, images, seeds, raw.report, raw.slurm));
        }
        if raw.datasets.is_empty() {
            return Err(at(None, "the grid declares no `[[datasets]]`".into()));
        }
        if raw.models.is_empty() {
            return Err(at(None, "the grid declares no `[[models]]`".into()));
        }
        let Some(attribution) = raw.attribution.map(Spanned::into_inner) else {
            return Err(at(None, "the grid declares no `[attribution]` (its `methods` are what it explains)".into()));
        };
        check_names(raw.datasets.iter().map(|d| &d.name), "dataset").map_err(|(s, m)| at(Some(s), m))?;
        check_names(raw.models.iter().map(|m| &m.name), "model").map_err(|(s, m)| at(Some(s), m))?;

        let datasets = raw
            .datasets
            .into_iter()
            .map(|d| {
                let span = d.name.span();
                dataset(d).map_err(|m| at(Some(span), m))
            })
            .collect::<Result<Vec<_>, _>>()?;

        let models = raw
            .models
            .into_iter()
            .map(|m| crate::architectures::table::model(m).map_err(|(span, message)| at(span, message)))
            .collect::<Result<Vec<_>, _>>()?;

        if let Some(shortcuts) = &raw.shortcuts {
            check_shortcuts(shortcuts, &datasets, &at)?;
        }
        let natural = raw.shortcuts.is_none();
        let metric_names = raw.metrics.unwrap_or_else(|| default_metrics(natural));
        let (metrics, wants_agreement) = metrics(&metric_names).map_err(|(span, m)| at(Some(span), m))?;
        check_ground_truth(natural, &metric_names, &attribution, &at)?;
        let has_distractors = raw.shortcuts.as_ref().is_some_and(|s| s.kinds.iter().any(|k| k.has_distractors()));
        if let Some(metric) = metrics.iter().find(|m| m.needs_distractors()).filter(|_| !has_distractors) {
            let span = metric_names.get_ref().iter().find(|m| m.get_ref() == metric.name()).map(|m| m.span());
            return Err(at(
                span,
                format!(
                    "metric `{metric}` needs non-correlating articles: add \"articles-cn\" or \"articles-nc\" \
                     to `shortcuts.kinds`"
                ),
            ));
        }
        let erasure = raw.erasure.map(|spec| erasure_spec(spec, &at)).transpose()?.unwrap_or_default();
        let methods = method_list(&attribution.methods, &at)?;
        check_rationale_metrics(&metric_names, &methods, &models, &at)?;

        let name = raw.name.unwrap_or_else(|| default_name(path));
        Ok(Grid {
            name,
            path: path.into(),
            text: text.to_string(),
            datasets,
            shortcuts: raw.shortcuts,
            models,
            attribution: AttributionSpec {
                methods,
                sample: attribution.sample,
                test_set: match (natural, attribution.test_set) {
                    (true, _) => TestSet::Original,
                    (false, set) => set.map(Spanned::into_inner).unwrap_or(TestSet::Synthetic),
                },
                subset: attribution.subset,
                batch_size: attribution.batch_size,
                internal_batch_size: attribution.internal_batch_size,
                perturbations_per_eval: attribution.perturbations_per_eval,
                word_aggregation: attribution.word_aggregation,
                seed: attribution.seed,
            },
            verification: raw.verification,
            metrics,
            erasure,
            agreement: wants_agreement.then_some(raw.agreement),
            seeds,
            report: raw.report,
            slurm: raw.slurm,
            images,
        })
    }

    /// An image-only grid: the text parts empty, nothing of theirs planned.
    fn of_images(
        name: String,
        path: &Path,
        text: &str,
        images: Option<images::ImageGrid>,
        seeds: Option<Vec<u64>>,
        report: ReportSpec,
        slurm: slurm::SlurmSpec,
    ) -> Grid {
        Grid {
            name,
            path: path.into(),
            text: text.to_string(),
            datasets: Vec::new(),
            shortcuts: None,
            models: Vec::new(),
            attribution: AttributionSpec {
                methods: Vec::new(),
                sample: sample(),
                test_set: TestSet::Original,
                subset: Subset::default(),
                batch_size: attr_batch(),
                internal_batch_size: internal_batch(),
                perturbations_per_eval: per_eval(),
                word_aggregation: None,
                seed: attr_seed(),
            },
            verification: VerificationSpec::default(),
            metrics: Vec::new(),
            erasure: ErasureSpec::default(),
            agreement: None,
            seeds,
            report,
            slurm,
            images,
        }
    }
}

/// The grid file's stem: a grid's name when it gives none.
fn default_name(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "grid".into())
}
/// Builds a grid file's error at a span (its line and column), for the
/// checks of [`Grid::parse`].
type At<'a> = dyn Fn(Option<Range<usize>>, String) -> SpecError + 'a;

/// `seeds`: not empty, none twice.
fn seed_list(list: Spanned<Vec<u64>>, at: &At) -> Result<Vec<u64>, SpecError> {
    let span = list.span();
    let list = list.into_inner();
    if list.is_empty() {
        return Err(at(Some(span), "`seeds` is empty; leave it out to use each model's `training.seed`".into()));
    }
    if let Some(d) = list.iter().enumerate().find_map(|(i, s)| list[..i].contains(s).then_some(s)) {
        return Err(at(Some(span), format!("seed {d} is listed twice")));
    }
    Ok(list)
}

/// An image-only grid has no text model, `[attribution]` or `[shortcuts]`.
fn no_text_parts(
    models: &[crate::architectures::RawModel],
    attribution: Option<&Spanned<RawAttribution>>,
    has_shortcuts: bool,
    at: &At,
) -> Result<(), SpecError> {
    if let Some(model) = models.first() {
        return Err(at(
            Some(model.name.span()),
            "`[[models]]` trains on text `[[datasets]]`, and this grid has none; image models are \
             `[[images.models]]`"
                .into(),
        ));
    }
    if let Some(attribution) = attribution {
        return Err(at(
            Some(attribution.span()),
            "`[attribution]` explains text models, and this grid has none; image methods are \
             `[images.attribution]`"
                .into(),
        ));
    }
    if has_shortcuts {
        return Err(at(
            None,
            "`[shortcuts]` plants text shortcuts, and this grid has no text `[[datasets]]`; image \
             manipulations are `images.manipulations`"
                .into(),
        ));
    }
    Ok(())
}

/// `[shortcuts]`: some kinds, tokens the datasets allow, and the two-article
/// kinds on two-class datasets only.
fn check_shortcuts(shortcuts: &ShortcutSpec, datasets: &[DatasetSpec], at: &At) -> Result<(), SpecError> {
    if shortcuts.kinds.is_empty() {
        return Err(at(None, "`shortcuts.kinds` is empty".into()));
    }
    shortcuts.tokens.check(datasets).map_err(|m| at(None, m))?;
    let binary_kind = shortcuts.kinds.iter().find(|k| k.article_layout().is_some());
    if let (Some(kind), Some(d)) = (binary_kind, datasets.iter().find(|d| d.classes() > 2)) {
        return Err(at(
            None,
            format!(
                "shortcut kind `{kind}` relabels with two articles (`the` / `a`), but dataset `{}` has {} \
                 classes",
                d.name,
                d.classes()
            ),
        ));
    }
    Ok(())
}

/// Ground truth is what a planted shortcut gives: a natural grid has none
/// (no metric that needs it, no synthetic test set), and a shortcut grid
/// does not explain the original test set.
fn check_ground_truth(
    natural: bool,
    metric_names: &Spanned<Vec<Spanned<String>>>,
    attribution: &RawAttribution,
    at: &At,
) -> Result<(), SpecError> {
    if natural {
        if let Some(name) =
            metric_names.get_ref().iter().find(|n| n.get_ref().parse::<Metric>().is_ok_and(|m| m.needs_ground_truth()))
        {
            return Err(at(
                Some(name.span()),
                format!(
                    "metric `{}` needs the ground truth of a planted shortcut, and this grid has no `[shortcuts]` \
                     (a natural grid: models learn the task itself); use ns, nc, soft-ns, soft-nc, diagnosticity \
                     or agreement, or add `[shortcuts]`",
                    name.get_ref()
                ),
            ));
        }
        if let Some(set) = &attribution.test_set {
            return Err(at(
                Some(set.span()),
                "`attribution.test_set` picks a synthetic test set; a grid without `[shortcuts]` explains the \
                 dataset's own test set"
                    .into(),
            ));
        }
    } else if let Some(set) = attribution.test_set.as_ref().filter(|s| *s.get_ref() == TestSet::Original) {
        return Err(at(
            Some(set.span()),
            "`attribution.test_set = \"original\"` is what a grid without `[shortcuts]` explains; a shortcut \
             grid's ground truth is in its synthetic test sets (\"synthetic\" or \"flip\")"
                .into(),
        ));
    }
    Ok(())
}

/// `[erasure]`: ratios in (0, 1].
fn erasure_spec(spec: Spanned<ErasureSpec>, at: &At) -> Result<ErasureSpec, SpecError> {
    let span = spec.span();
    let spec = spec.into_inner();
    if spec.ratios.is_empty() || spec.ratios.iter().any(|r| r.get() == 0.0) {
        return Err(at(Some(span), "`erasure.ratios` must list shares in (0, 1]".into()));
    }
    Ok(spec)
}

/// `attribution.methods`, each pattern expanded: known methods, none twice,
/// at least one.
fn method_list(patterns: &[Spanned<String>], at: &At) -> Result<Vec<Method>, SpecError> {
    let mut methods: Vec<Method> = Vec::new();
    for pattern in patterns {
        let names = expand::expand(pattern.get_ref()).map_err(|e| at(Some(pattern.span()), e.to_string()))?;
        for name in names {
            let method: Method = name
                .parse()
                .map_err(|e: grid_methods::salience::UnknownMethod| at(Some(pattern.span()), e.to_string()))?;
            if methods.contains(&method) {
                return Err(at(Some(pattern.span()), format!("method `{method}` is listed twice")));
            }
            methods.push(method);
        }
    }
    if methods.is_empty() {
        return Err(at(None, "`attribution.methods` is empty".into()));
    }
    Ok(methods)
}

/// The `sel-*` metrics score a rationale model's own selection: they need
/// the `rationale` method and a rationale model.
fn check_rationale_metrics(
    metric_names: &Spanned<Vec<Spanned<String>>>,
    methods: &[Method],
    models: &[ModelSpec],
    at: &At,
) -> Result<(), SpecError> {
    if let Some(name) = metric_names.get_ref().iter().find(|n| n.get_ref().starts_with("sel-")) {
        let has_rationale_model = models.iter().any(|m| m.kind() == Architecture::Rationale);
        if !methods.contains(&Method::Rationale) || !has_rationale_model {
            return Err(at(
                Some(name.span()),
                format!(
                    "metric `{}` scores the words a rationale model selects: it needs \"rationale\" in \
                     `attribution.methods` and a model with `architecture = \"rationale\"`",
                    name.get_ref()
                ),
            ));
        }
    }
    Ok(())
}

/// The `metrics` list: metric names, `diagnosticity` (diag-* of every erasure
/// metric listed, or of all four when none is) and `agreement`.
fn metrics(list: &Spanned<Vec<Spanned<String>>>) -> Result<(Vec<Metric>, bool), (Range<usize>, String)> {
    if list.get_ref().is_empty() {
        return Err((list.span(), "`metrics` is empty".into()));
    }
    let mut metrics: Vec<Metric> = Vec::new();
    let mut diagnosticity = false;
    let mut agreement = false;
    for name in list.get_ref() {
        let mut push = |m: Metric| {
            if metrics.contains(&m) {
                return Err((name.span(), format!("metric `{m}` is listed twice")));
            }
            metrics.push(m);
            Ok(())
        };
        match name.get_ref().as_str() {
            "diagnosticity" => diagnosticity = true,
            "agreement" => agreement = true,
            other => push(other.parse().map_err(|e| (name.span(), e))?)?,
        }
    }
    if diagnosticity {
        let listed: Vec<ErasureMetric> =
            metrics.iter().filter_map(|m| if let Metric::Erasure(e) = m { Some(*e) } else { None }).collect();
        let of = if listed.is_empty() { ErasureMetric::ALL.to_vec() } else { listed };
        for e in of {
            if !metrics.contains(&Metric::Diagnosticity(e)) {
                metrics.push(Metric::Diagnosticity(e));
            }
        }
    }
    Ok((metrics, agreement))
}

fn check_names<'a>(names: impl Iterator<Item = &'a Spanned<String>>, what: &str) -> Result<(), (Range<usize>, String)> {
    let mut seen: Vec<&str> = Vec::new();
    for name in names {
        let n = name.get_ref().as_str();
        if n.is_empty() || !n.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            return Err((
                name.span(),
                format!("{what} name `{n}` must be non-empty ASCII letters, digits, `-` or `_`"),
            ));
        }
        if seen.contains(&n) {
            return Err((name.span(), format!("{what} name `{n}` is used twice")));
        }
        seen.push(n);
    }
    Ok(())
}

fn dataset(raw: RawDataset) -> Result<DatasetSpec, String> {
    let name = raw.name.into_inner();
    let declared = raw.classes.map(Positive::get);
    let classes = match (&raw.label_names, declared) {
        (Some(names), Some(c)) if names.len() != c => {
            return Err(format!("dataset `{name}`: `classes = {c}` but `label_names` lists {} names", names.len()));
        }
        (Some(names), _) => names.len(),
        (None, Some(c)) => c,
        (None, None) => 2,
    };
    if classes < 2 {
        return Err(format!("dataset `{name}` has {classes} class; a classifier needs at least 2"));
    }
    if raw.insert_within.is_some_and(|w| w.get() < 2) {
        return Err(format!(
            "dataset `{name}`: `insert_within = 1` leaves no room for the two tokens of tic and op; it must be at least 2"
        ));
    }
    let source = match (raw.generated, raw.train, raw.test) {
        (Some(_), _, _) if declared.is_some() => {
            return Err(format!(
                "dataset `{name}`: a generated corpus sets its classes inside the table: `generated = {{ classes = N }}`"
            ));
        }
        (Some(options), None, None) if raw.validation.is_none() => {
            options.validate().map_err(|e| format!("dataset `{name}`: {e}"))?;
            DatasetSource::Generated(options)
        }
        (Some(_), _, _) => {
            return Err(format!("dataset `{name}`: `generated` cannot be combined with split files"));
        }
        (None, Some(train), Some(test)) => DatasetSource::Files {
            train,
            validation: raw.validation,
            test,
            format: raw.format,
            text_column: raw.text_column,
            label_column: raw.label_column,
            label_names: raw.label_names,
            classes,
        },
        (None, _, _) => {
            return Err(format!("dataset `{name}` needs `train` and `test` files, or a `generated = {{ … }}` table"));
        }
    };
    Ok(DatasetSpec {
        name,
        source,
        limits: raw.limits,
        validation_share: raw.validation_share,
        max_length: raw.max_length,
        insert_within: raw.insert_within,
        batch_size: raw.batch_size,
    })
}

/// 1-based line and column (in characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map(|l| l.chars().count()).unwrap_or(0) + 1;
    (line, column)
}

#[cfg(test)]
mod tests;
