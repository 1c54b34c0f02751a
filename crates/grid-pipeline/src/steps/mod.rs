//! Step executors: each reads its inputs' payloads from the cache and writes its
//! own payload into a staging folder. One file per step kind; the science lives
//! in the stage modules (`data`, `shortcut`, `train`, `salience`, `metrics`,
//! `report`), these files only move data in and out of the cache.

pub mod agreement;
pub mod attribute;
pub mod corpus;
pub mod erasure;
pub mod evaluate;
pub mod images;
pub mod io;
pub mod report;
pub mod score;
pub mod synth;
pub mod train;
pub mod verify;
pub mod work;

use std::path::{Path, PathBuf};

use anyhow::Result;
use indicatif::ProgressBar;

use crate::backend::Compute;
pub use work::Work;

/// What a step may use besides its work and output folder.
pub struct StepContext<'a> {
    /// Payload folders of the step's inputs, in the step's input order.
    pub inputs: Vec<PathBuf>,
    pub compute: Compute,
    pub progress: &'a ProgressBar,
    /// Progress lines for logs when no bar is drawn.
    pub log: &'a (dyn Fn(String) + Sync),
    /// Where a long step keeps what it needs to go on after an interruption
    /// (the step's resume folder in the cache), and how often it writes there:
    /// a training run's snapshots, an attribution's explained chunks.
    pub snapshots: Option<crate::train::Snapshots>,
}

impl StepContext<'_> {
    /// What a `train` step's training loop needs beside the model and data:
    /// `encoder`'s padding and unknown ids, this step's progress, log,
    /// batch shapes and snapshots, and Ctrl-C.
    pub fn train_setup(
        &self,
        encoder: &dyn crate::text::TextEncoder,
        word_dropout: f64,
    ) -> crate::train::TrainSetup<'_> {
        crate::train::TrainSetup {
            pad_id: encoder.pad_id(),
            unk_id: encoder.unk_id(),
            word_dropout,
            progress: self.progress,
            log: self.log,
            buckets: self.compute.buckets,
            snapshots: self.snapshots.as_ref(),
            stop: &crate::interrupt::requested,
        }
    }
}

/// Runs one step, writing its payload into `out`.
pub fn execute(work: &Work, ctx: &StepContext, out: &Path) -> Result<()> {
    match work {
        Work::Corpus { dataset, files } => corpus::run(dataset, files.as_ref(), out),
        Work::Synth { options } => synth::run(options, &ctx.inputs[0], out),
        Work::Train { model, max_length, shortcut_tokens, assets, planted } => {
            let planted = planted.as_ref().map(|(kind, tokens)| (*kind, tokens));
            train::run(model, *max_length, shortcut_tokens, planted, assets, out, ctx)
        }
        Work::Verify { thresholds, chance } => verify::run(thresholds, *chance, ctx, out),
        Work::Evaluate => evaluate::run(ctx, out),
        Work::Attribute(options) => attribute::run(options, ctx, out),
        Work::Erasure(options) => erasure::run(options, ctx, out),
        Work::Agreement(options) => agreement::run(options, &ctx.inputs, out),
        Work::Score { metric, word_aggregation } => score::run(*metric, *word_aggregation, &ctx.inputs, out),
        Work::Image(work) => images::execute(work, ctx, out),
        Work::Report(work) => report::run(work, ctx, out),
    }
}
