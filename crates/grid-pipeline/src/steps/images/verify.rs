//! Image `verify`: the trained model's accuracy on the manipulated test
//! split, judged against what the reassigned labels allow without the
//! manipulation (`grid_methods::shortcut::image::verification`).

use std::path::Path;

use anyhow::Result;
use burn::tensor::backend::{AutodiffBackend, Backend};

use super::{SPLITS, Split};
use crate::context::StepContext;
use crate::io::write_json;
use crate::spec::image_checkpoints::Checkpoint;
use grid_core::train::images::predict_images;
use grid_methods::shortcut::image::verification::{ImageThresholds, verify};

pub const VERIFICATION: &str = "verification.json";
/// Of a checkpoint's verification: the step it was taken at.
pub const CHECKPOINT_STEP: &str = "checkpoint_step.json";

pub fn run(
    thresholds: ImageThresholds,
    keep_probability: f64,
    checkpoint: Option<Checkpoint>,
    ctx: &StepContext,
    out: &Path,
) -> Result<()> {
    let test = Split::read(&ctx.inputs[1], SPLITS[2])?;
    let predictions = grid_core::with_autodiff_backend!(ctx.compute, |B, device| {
        predict::<<B as AutodiffBackend>::InnerBackend>(&ctx.inputs[0], checkpoint, &test, &device)
    })?;
    let labels: Vec<u32> = test.labels.iter().map(|l| l.label).collect();
    let manipulated: Vec<bool> = test.labels.iter().map(|l| l.manipulated).collect();
    let verification = verify(&predictions, &labels, &manipulated, keep_probability, thresholds);
    write_json(&out.join("predictions.json"), &predictions)?;
    // The step a checkpoint was taken at, for the report (a position's is
    // known only once its training ended).
    if let Some(checkpoint) = checkpoint {
        write_json(&out.join(CHECKPOINT_STEP), &super::train::checkpoint_step(&ctx.inputs[0], checkpoint)?)?;
    }
    write_json(&out.join(VERIFICATION), &verification)
}

fn predict<B: Backend>(
    model: &Path,
    checkpoint: Option<Checkpoint>,
    test: &Split,
    device: &B::Device,
) -> Result<Vec<u32>> {
    let model = super::train::load::<B>(model, checkpoint, device)?;
    Ok(predict_images(&model, &test.refs(), device))
}
