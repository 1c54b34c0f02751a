//! From a [`Grid`] to a DAG of content-hashed steps, and running the ones the
//! cache lacks.
//!
//! Per dataset: one `corpus` step; per (dataset, shortcut): one `synth`; per
//! (dataset, model): one `train` on the original data, shared by every shortcut;
//! per (dataset, shortcut, model): a `train` on the mixed data and a `verify`;
//! per method: an `attribute`, an `erasure` when a metric needs one; per metric:
//! a `score`; per model cell: an `agreement` when asked; one `report` for the
//! grid. With `seeds = [..]`, everything from training down is planned per seed.
//! Steps are listed in an order where every input comes before its users.

pub mod params;
pub mod plan;
pub mod run;
pub mod status;

use std::path::PathBuf;

use crate::cache::{StepKey, StepKind};
use crate::metrics::Metric;
use crate::model::hub::CheckpointSource;
use crate::report::ReportFormat;
use crate::shortcut::{ShortcutKind, ShortcutOptions};
use crate::spec::{DatasetSpec, ModelSpec, VerificationSpec};

pub use plan::{PlanError, PlanOptions, plan};
pub use run::{RunOptions, RunOutcome, StepStatus, Verbosity, WorkerCommand, execute, run_one};

/// A step of the DAG.
#[derive(Debug, Clone)]
pub struct Step {
    pub kind: StepKind,
    /// Stable, human-readable identity, e.g. `train/sst2/st/lstm`.
    pub label: String,
    /// Indices of the steps this one reads, in a fixed order.
    pub inputs: Vec<usize>,
    /// The canonical parameters that went into the key.
    pub params: serde_json::Value,
    pub key: StepKey,
    pub work: Work,
}

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
    },
    Verify {
        thresholds: VerificationSpec,
        chance: crate::steps::verify::Chance,
    },
    Attribute(crate::steps::attribute::Options),
    Erasure(crate::steps::erasure::Options),
    Agreement(crate::steps::agreement::Options),
    /// Inputs: the attribute step (ranking metrics, Attr%), the erasure step
    /// (erasure metrics), or the erasure steps of the method and of `random`
    /// (diagnosticity).
    Score {
        metric: Metric,
        word_aggregation: Option<crate::metrics::WordAggregation>,
    },
    Report(ReportWork),
}

/// What the report step reads, and where each input lands.
#[derive(Debug, Clone)]
pub struct ReportWork {
    pub formats: Vec<ReportFormat>,
    pub cells: Vec<CellCoordinates>,
    pub verifications: Vec<VerifyCoordinates>,
    pub agreements: Vec<AgreementCoordinates>,
    /// Per model cell, its attribute steps: the HTML report shows a few
    /// examples highlighted by every method.
    pub examples: Vec<ExampleSource>,
}

/// Which model cell an agreement step compares.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct AgreementCoordinates {
    pub agreement_step: usize,
    pub model: String,
    pub architecture: String,
    pub dataset: String,
    pub shortcut: ShortcutKind,
    pub seed: u64,
}

/// A model cell's attributions, for example views.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ExampleSource {
    pub model: String,
    pub dataset: String,
    pub shortcut: ShortcutKind,
    /// (method, attribute step), in grid order.
    pub attributions: Vec<(String, usize)>,
}

/// A model's inputs from outside the cache, resolved against the data root.
#[derive(Debug, Clone, PartialEq)]
pub enum ModelAssets {
    None,
    /// GloVe vectors for a BiLSTM's embeddings.
    Glove(PathBuf),
    /// A pretrained BERT-family checkpoint; `hf://` ones download into the cache
    /// under `cache_root/hub/`.
    Checkpoint {
        source: CheckpointSource,
        cache_root: PathBuf,
    },
}

/// Data files resolved against the data root.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedFiles {
    pub train: PathBuf,
    pub validation: Option<PathBuf>,
    pub test: PathBuf,
}

/// Where a score lands in the result tables.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CellCoordinates {
    pub score_step: usize,
    pub verify_step: usize,
    pub model: String,
    pub architecture: String,
    pub dataset: String,
    pub shortcut: ShortcutKind,
    pub method: String,
    pub metric: String,
    pub seed: u64,
}

/// Which verification row a verify step is.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct VerifyCoordinates {
    pub verify_step: usize,
    pub model: String,
    pub architecture: String,
    pub dataset: String,
    pub shortcut: ShortcutKind,
    pub seed: u64,
    /// The synthetic-accuracy threshold the verify step applied (its key has it).
    pub min_synthetic_accuracy: f64,
}

/// The whole DAG, topologically ordered.
#[derive(Debug, Clone)]
pub struct Plan {
    pub grid_name: String,
    pub steps: Vec<Step>,
    /// Method × model pairs left out because the method does not apply to the
    /// architecture (e.g. `[MASK]` baselines on a BiLSTM), one sentence each.
    pub skipped: Vec<String>,
}

impl Plan {
    pub fn report_step(&self) -> Option<usize> {
        self.steps.iter().position(|s| s.kind == StepKind::Report)
    }
}
