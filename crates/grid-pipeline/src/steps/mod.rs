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
pub mod report;
pub mod score;
pub mod synth;
pub mod train;
pub mod verify;
pub mod work;

use std::path::Path;

use anyhow::Result;

use crate::context::StepContext;
pub use work::Work;

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
