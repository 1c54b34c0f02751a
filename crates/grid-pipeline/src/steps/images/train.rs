//! Image `train`: a ResNet trained on the synth step's manipulated
//! training split, validated on its validation split (manipulated and
//! untouched images apart), saved in torchvision's layout with its config
//! and `training.json`.

use std::path::Path;

use anyhow::{Context, Result};
use burn::tensor::backend::AutodiffBackend;

use super::{SPLITS, Split};
use crate::context::StepContext;
use crate::io::{read_json, write_json};
use crate::spec::images::ImageModelSpec;
use grid_core::model::resnet::load::{load_torchvision, save_torchvision};
use grid_core::model::resnet::{ResNet, ResNetConfig};
use grid_core::train::Control;
use grid_core::train::images::{LabelledImage, train_resnet};

pub const WEIGHTS: &str = "model.safetensors";
pub const CONFIG: &str = "config.json";

/// A checkpoint's file in the payload (payloads are flat: the cache
/// checksums a step's files, not folders).
fn checkpoint_file(step: usize) -> String {
    format!("checkpoint-step-{step}.safetensors")
}

pub fn run(model: &ImageModelSpec, checkpoints: &[usize], ctx: &StepContext, out: &Path) -> Result<()> {
    let labelled = |name: &str| -> Result<Vec<LabelledImage>> {
        let split = Split::read(&ctx.inputs[0], name)?;
        Ok(split
            .images
            .into_iter()
            .zip(split.labels)
            .map(|(image, l)| LabelledImage { image, label: l.label, marked: l.manipulated })
            .collect())
    };
    let (train, validation) = (labelled(SPLITS[0])?, labelled(SPLITS[1])?);
    grid_core::with_autodiff_backend!(ctx.compute, |B, device| fit::<B>(
        model,
        checkpoints,
        &train,
        &validation,
        ctx,
        out,
        &device
    ))
}

fn fit<B: AutodiffBackend>(
    model: &ImageModelSpec,
    checkpoints: &[usize],
    train: &[LabelledImage],
    validation: &[LabelledImage],
    ctx: &StepContext,
    out: &Path,
    device: &B::Device,
) -> Result<()> {
    let control = Control {
        progress: ctx.progress,
        log: ctx.log,
        snapshots: ctx.snapshots.as_ref(),
        stop: &grid_core::interrupt::requested,
    };
    // Checkpoints go where snapshots go, when there is such a place: a run
    // resumed after an interruption does not pass the earlier ones again.
    let kept = ctx.snapshots.as_ref().map_or_else(|| out.to_path_buf(), |s| s.dir.join("checkpoints"));
    if !checkpoints.is_empty() {
        std::fs::create_dir_all(&kept).with_context(|| format!("{}: cannot create", kept.display()))?;
    }
    let saved = std::sync::Mutex::new(Ok(()));
    let hook = |step: usize, m: &ResNet<B::InnerBackend>| {
        if checkpoints.contains(&step) {
            let result = save_torchvision(m, &kept.join(checkpoint_file(step)));
            let mut saved = saved.lock().unwrap_or_else(|p| p.into_inner());
            if saved.is_ok() {
                *saved = result;
            }
        }
    };
    let start = model.config.init::<B>(model.training.seed, device);
    let (trained, summary) = train_resnet(start, &model.training, &control, train, validation, &hook, device)
        .with_context(|| format!("image model `{}`", model.name))?;
    saved.into_inner().unwrap_or_else(|p| p.into_inner())?;
    if !checkpoints.is_empty() && kept != out {
        let into = out;
        for &step in checkpoints.iter().filter(|&&s| kept.join(checkpoint_file(s)).is_file()) {
            std::fs::copy(kept.join(checkpoint_file(step)), into.join(checkpoint_file(step)))
                .with_context(|| format!("checkpoint at step {step}"))?;
        }
    }
    save_torchvision(&trained, &out.join(WEIGHTS))?;
    write_json(&out.join(CONFIG), &model.config)?;
    write_json(&out.join("training.json"), &summary)
}

/// The trained model of a train step's payload, or its checkpoint at
/// `checkpoint` steps, on `B`.
pub fn load<B: burn::tensor::backend::Backend>(
    dir: &Path,
    checkpoint: Option<usize>,
    device: &B::Device,
) -> Result<ResNet<B>> {
    let config: ResNetConfig = read_json(&dir.join(CONFIG))?;
    let weights = match checkpoint {
        None => dir.join(WEIGHTS),
        Some(step) => {
            let path = dir.join(checkpoint_file(step));
            if !path.is_file() {
                let summary: grid_core::train::TrainSummary = read_json(&dir.join("training.json"))?;
                anyhow::bail!(
                    "no checkpoint at step {step}: training stopped at step {} (early stopping); ask for fewer \
                     `checkpoints` or a larger `training.patience`",
                    summary.steps
                );
            }
            path
        }
    };
    load_torchvision::<B>(&weights, &config, device)
}
