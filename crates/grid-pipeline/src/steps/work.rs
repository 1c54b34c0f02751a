//! What each step kind does, with everything it needs that is not in its key:
//! the planner (`dag`) builds these, the executors in this module run them.
//! Input positions refer to the step's own inputs, so a step needs nothing of
//! the plan it came from.

use super::corpus::ResolvedFiles;
use crate::spec::Architecture;
use crate::spec::image_checkpoints::Checkpoint;
use crate::spec::{DatasetSpec, ModelSpec, VerificationSpec};
use grid_core::model::ModelAssets;
use grid_methods::metrics::Metric;
use grid_methods::salience::Method;
use grid_methods::shortcut::{Regime, ShortcutKind, ShortcutOptions, ShortcutTokens};
use grid_report::ReportFormat;

/// What a step does, with everything it needs that is not in its key (such as
/// resolved file paths).
#[derive(Debug, Clone)]
pub enum Work {
    Corpus {
        dataset: DatasetSpec,
        files: Option<ResolvedFiles>,
    },
    Synth {
        options: ShortcutOptions,
    },
    Train {
        model: ModelSpec,
        max_length: usize,
        shortcut_tokens: Vec<String>,
        assets: ModelAssets,
        /// The rule planted in the training data (its key is in the synth
        /// input's): which validation examples carry it.
        planted: Option<(ShortcutKind, ShortcutTokens)>,
    },
    Verify {
        thresholds: VerificationSpec,
        chance: super::verify::Chance,
    },
    /// Inputs: a natural model, corpus.
    Evaluate,
    Attribute(super::attribute::Options),
    Erasure(super::erasure::Options),
    Agreement(super::agreement::Options),
    /// Inputs: the attribute step (ranking metrics, Attr%), the erasure step
    /// (erasure metrics), or the erasure steps of the method and of `random`
    /// (diagnosticity).
    Score {
        metric: Metric,
        word_aggregation: Option<grid_methods::metrics::WordAggregation>,
    },
    /// A step of the image protocol ([`super::images`]).
    Image(super::images::ImageWork),
    Report(ReportWork),
}

impl Work {
    /// The salience method a step computes maps with (attribution, erasure,
    /// image attribution): what the estimate groups its timings by. Every
    /// other step has none.
    pub fn method_name(&self) -> Option<String> {
        use super::images::ImageWork;
        match self {
            Work::Attribute(options) => Some(options.method.to_string()),
            Work::Erasure(options) => Some(options.attribution.method.to_string()),
            Work::Image(ImageWork::Attribute { method, .. }) => Some(method.name().to_string()),
            Work::Image(
                ImageWork::Corpus { .. }
                | ImageWork::Synth { .. }
                | ImageWork::Train { .. }
                | ImageWork::Verify { .. }
                | ImageWork::Score,
            )
            | Work::Corpus { .. }
            | Work::Synth { .. }
            | Work::Train { .. }
            | Work::Verify { .. }
            | Work::Evaluate
            | Work::Agreement(_)
            | Work::Score { .. }
            | Work::Report(_) => None,
        }
    }
}

/// What the report step reads, and where each input lands.
#[derive(Debug, Clone)]
pub struct ReportWork {
    /// The grid's name, the tables' title.
    pub title: String,
    pub formats: Vec<ReportFormat>,
    pub cells: Vec<CellCoordinates>,
    pub verifications: Vec<VerifyCoordinates>,
    /// A natural grid's models, measured on their test sets.
    pub evaluations: Vec<EvaluateCoordinates>,
    pub agreements: Vec<AgreementCoordinates>,
    /// Per model cell, its attribute steps: the HTML report shows a few
    /// examples highlighted by every method.
    pub examples: Vec<ExampleSource>,
    /// The image protocol's cells: one per (model, manipulation, method).
    pub images: Vec<ImageCellCoordinates>,
}

/// Where an image cell's `Attr%` lands (Zhou et al.'s Figure 3).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ImageCellCoordinates {
    /// Positions of its score and its model's verify step among the
    /// report's inputs.
    pub score: usize,
    pub verify: usize,
    /// A trained model's attribute and synth steps (positions), whose maps
    /// and test images the report overlays; none for a checkpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maps: Option<[usize; 2]>,
    pub model: String,
    pub dataset: String,
    pub manipulation: grid_methods::shortcut::image::ManipulationKind,
    /// `r` of the label reassignment.
    pub keep_probability: f64,
    /// The manipulation's visibility level when the grid sweeps them (left
    /// out of the report's key otherwise, so that grids without a sweep
    /// keep theirs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub visibility: Option<grid_methods::shortcut::image::Visibility>,
    pub method: grid_methods::salience::image::PixelMethod,
    pub seed: u64,
    /// A training checkpoint (Figure 4); `None`: the trained model.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checkpoint: Option<Checkpoint>,
}

/// Which model cell an agreement step compares.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AgreementCoordinates {
    /// Position of the agreement step among the report's inputs.
    pub agreement: usize,
    pub model: String,
    pub architecture: Architecture,
    pub dataset: String,
    pub regime: Regime,
    pub seed: u64,
}

/// A model cell's attributions, for example views.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ExampleSource {
    pub model: String,
    pub dataset: String,
    pub regime: Regime,
    /// (method, position of its attribute step among the report's inputs),
    /// in grid order.
    pub attributions: Vec<(Method, usize)>,
}

/// Where a score lands in the result tables.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CellCoordinates {
    /// Positions of the score and verify steps among the report's inputs; a
    /// natural cell has nothing planted to verify.
    pub score: usize,
    pub verify: Option<usize>,
    pub model: String,
    pub architecture: Architecture,
    pub dataset: String,
    pub regime: Regime,
    pub method: Method,
    pub metric: Metric,
    pub seed: u64,
    /// A rationale metric's model: its selector and target rate (left out
    /// of the key when absent, so other grids' report keys stay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rationale: Option<grid_core::model::rationale::RationaleSetting>,
}

/// Which model an evaluate step measured.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct EvaluateCoordinates {
    /// Position of the evaluate step among the report's inputs.
    pub evaluate: usize,
    pub model: String,
    pub architecture: Architecture,
    pub dataset: String,
    pub seed: u64,
}

/// Which verification row a verify step is.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct VerifyCoordinates {
    /// Position of the verify step among the report's inputs.
    pub verify: usize,
    pub model: String,
    pub architecture: Architecture,
    pub dataset: String,
    pub shortcut: ShortcutKind,
    pub seed: u64,
    /// The synthetic-accuracy threshold the verify step applied (its key has it).
    pub min_synthetic_accuracy: f64,
    /// The largest loss on the original test set it allowed (inserted rules only).
    pub max_original_drop: Option<f64>,
}
