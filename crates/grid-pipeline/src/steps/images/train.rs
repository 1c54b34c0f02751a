//! Image `train`: a ResNet trained on the synth step's manipulated
//! training split, validated on its validation split (manipulated and
//! untouched images apart), saved in torchvision's layout with its config
//! and `training.json`.

use std::path::Path;

use anyhow::{Context, Result};
use burn::tensor::backend::AutodiffBackend;

use super::{SPLITS, Split};
use crate::model::resnet::load::{load_torchvision, save_torchvision};
use crate::model::resnet::{ResNet, ResNetConfig};
use crate::spec::images::ImageModelSpec;
use crate::steps::StepContext;
use crate::steps::io::{read_json, write_json};
use crate::train::Control;
use crate::train::images::{LabelledImage, train_resnet};

pub const WEIGHTS: &str = "model.safetensors";
pub const CONFIG: &str = "config.json";

pub fn run(model: &ImageModelSpec, ctx: &StepContext, out: &Path) -> Result<()> {
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
    crate::with_autodiff_backend!(ctx.compute, |B, device| fit::<B>(model, &train, &validation, ctx, out, &device))
}

fn fit<B: AutodiffBackend>(
    model: &ImageModelSpec,
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
        stop: &crate::interrupt::requested,
    };
    let start = model.config.init::<B>(model.training.seed, device);
    let (trained, summary) = train_resnet(start, &model.training, &control, train, validation, device)
        .with_context(|| format!("image model `{}`", model.name))?;
    save_torchvision(&trained, &out.join(WEIGHTS))?;
    write_json(&out.join(CONFIG), &model.config)?;
    write_json(&out.join("training.json"), &summary)
}

/// The trained model of a train step's payload, on `B`.
pub fn load<B: burn::tensor::backend::Backend>(dir: &Path, device: &B::Device) -> Result<ResNet<B>> {
    let config: ResNetConfig = read_json(&dir.join(CONFIG))?;
    load_torchvision::<B>(&dir.join(WEIGHTS), &config, device)
}
