//! Image `train`: a ResNet trained on the synth step's manipulated
//! training split, validated on its validation split (manipulated and
//! untouched images apart), saved in torchvision's layout with its config
//! and `training.json`.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Mutex;

use anyhow::{Context, Result};
use burn::tensor::backend::AutodiffBackend;

use super::{SPLITS, Split};
use crate::context::StepContext;
use crate::io::{read_json, write_json};
use crate::spec::image_checkpoints::{Checkpoint, Checkpoints, candidate_evaluations, evaluation_steps, resolve};
use crate::spec::images::ImageModelSpec;
use grid_core::model::resnet::load::{load_torchvision, save_torchvision};
use grid_core::model::resnet::{ResNet, ResNetConfig};
use grid_core::train::Control;
use grid_core::train::images::{LabelledImage, train_resnet};

pub const WEIGHTS: &str = "model.safetensors";
pub const CONFIG: &str = "config.json";

/// The steps a run that may stop early resolved its checkpoints' positions
/// to (position k at index k).
pub const CHECKPOINT_STEPS: &str = "checkpoint_steps.json";

/// A checkpoint's file in the payload (payloads are flat: the cache
/// checksums a step's files, not folders).
fn checkpoint_file(step: usize) -> String {
    format!("checkpoint-step-{step}.safetensors")
}

pub fn run(model: &ImageModelSpec, checkpoints: &Checkpoints, ctx: &StepContext, out: &Path) -> Result<()> {
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
    checkpoints: &Checkpoints,
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
    let evaluations = evaluation_steps(model.training.max_steps.get(), model.training.eval_every.get());
    // The models saved as training passes them: the steps asked for, or every
    // one that positions resolved at the end could fall on before the last.
    let save_at: BTreeSet<usize> = match checkpoints {
        Checkpoints::Steps(steps) => steps.iter().copied().collect(),
        Checkpoints::Spaced { spaced } => {
            candidate_evaluations(*spaced, evaluations.len()).into_iter().map(|i| evaluations[i - 1]).collect()
        }
    };
    let spaced = match checkpoints {
        Checkpoints::Spaced { spaced } if *spaced > 0 => Some(*spaced),
        _ => None,
    };
    let saved = Mutex::new(Ok(()));
    // The last evaluation's model, where positions end.
    let last = Mutex::new(None);
    let hook = |step: usize, m: &ResNet<B::InnerBackend>| {
        if save_at.contains(&step) {
            let result = save_checkpoint(m, &kept.join(checkpoint_file(step)));
            let mut saved = saved.lock().unwrap_or_else(|p| p.into_inner());
            if saved.is_ok() {
                *saved = result;
            }
        }
        if spaced.is_some() {
            *last.lock().unwrap_or_else(|p| p.into_inner()) = Some((step, m.clone()));
        }
    };
    let start = model.config.init::<B>(model.training.seed, device);
    let (trained, summary) = train_resnet(start, &model.training, &control, train, validation, &hook, device)
        .with_context(|| format!("image model `{}`", model.name))?;
    saved.into_inner().unwrap_or_else(|p| p.into_inner())?;
    let steps = match (checkpoints, spaced) {
        (Checkpoints::Spaced { .. }, Some(n)) => {
            let (end, at_end) = last.into_inner().unwrap_or_else(|p| p.into_inner()).with_context(|| {
                format!("image model `{}`: training ended without an evaluation to resolve its checkpoints", model.name)
            })?;
            // A candidate's model was saved as training passed it.
            if !save_at.contains(&end) {
                save_checkpoint(&at_end, &kept.join(checkpoint_file(end)))?;
            }
            let run: Vec<usize> = evaluations.iter().copied().filter(|&s| s < end).chain([end]).collect();
            let steps = resolve(n, &run);
            write_json(&out.join(CHECKPOINT_STEPS), &steps)?;
            steps
        }
        (Checkpoints::Steps(steps), _) => steps.clone(),
        (Checkpoints::Spaced { .. }, None) => Vec::new(),
    };
    if spaced.is_some() {
        for &step in &steps {
            anyhow::ensure!(
                kept.join(checkpoint_file(step)).is_file(),
                "image model `{}`: no checkpoint kept at step {step}, where a position fell",
                model.name
            );
        }
    }
    if !checkpoints.is_empty() && kept != out {
        let into = out;
        for &step in steps.iter().filter(|&&s| kept.join(checkpoint_file(s)).is_file()) {
            std::fs::copy(kept.join(checkpoint_file(step)), into.join(checkpoint_file(step)))
                .with_context(|| format!("checkpoint at step {step}"))?;
        }
    } else if spaced.is_some() {
        // Kept in the payload itself: the candidates no position chose go.
        for step in save_at.iter().filter(|s| !steps.contains(s)) {
            let unused = out.join(checkpoint_file(*step));
            if unused.is_file() {
                std::fs::remove_file(&unused).with_context(|| format!("{}: cannot remove", unused.display()))?;
            }
        }
    }
    save_torchvision(&trained, &out.join(WEIGHTS))?;
    write_json(&out.join(CONFIG), &model.config)?;
    write_json(&out.join("training.json"), &summary)
}

/// `model` saved at `path`, over the file a run interrupted after passing
/// this step left there (it resumes from an earlier snapshot and passes the
/// step again), or the same evaluation kept as a candidate.
fn save_checkpoint<B: burn::tensor::backend::Backend>(model: &ResNet<B>, path: &Path) -> Result<()> {
    if path.is_file() {
        std::fs::remove_file(path).with_context(|| format!("{}: cannot replace", path.display()))?;
    }
    save_torchvision(model, path)
}

/// The step a checkpoint of the train step's payload `dir` was taken at.
pub fn checkpoint_step(dir: &Path, checkpoint: Checkpoint) -> Result<usize> {
    match checkpoint {
        Checkpoint::Step(step) => Ok(step),
        Checkpoint::Spaced { spaced, of } => {
            let steps: Vec<usize> = read_json(&dir.join(CHECKPOINT_STEPS))?;
            steps.get(spaced).copied().with_context(|| {
                format!("{}: no step for checkpoint {} of {of}", dir.join(CHECKPOINT_STEPS).display(), spaced + 1)
            })
        }
    }
}

/// The trained model of a train step's payload, or one of its checkpoints,
/// on `B`.
pub fn load<B: burn::tensor::backend::Backend>(
    dir: &Path,
    checkpoint: Option<Checkpoint>,
    device: &B::Device,
) -> Result<ResNet<B>> {
    let config: ResNetConfig = read_json(&dir.join(CONFIG))?;
    let weights = match checkpoint {
        None => dir.join(WEIGHTS),
        Some(checkpoint) => {
            let step = checkpoint_step(dir, checkpoint)?;
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

#[cfg(test)]
mod tests {
    use burn::backend::Flex;
    use grid_core::model::resnet::{Depth, ResNetConfig, Stem};

    use super::*;

    /// A run interrupted after it kept a checkpoint resumes from an earlier
    /// snapshot and passes that step again: the second save replaces the
    /// file (it was refused, and the step failed), and reads back.
    #[test]
    fn a_checkpoint_saved_again_replaces_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let config = ResNetConfig { depth: Depth::R18, width: 2, stem: Stem::Small, classes: 2 };
        let device = Default::default();
        let path = dir.path().join(checkpoint_file(50));
        let (first, second) = (config.init::<Flex>(1, &device), config.init::<Flex>(2, &device));
        save_checkpoint(&first, &path).unwrap();
        save_checkpoint(&second, &path).unwrap();
        let read = load_torchvision::<Flex>(&path, &config, &device).unwrap();
        let weights = |m: &ResNet<Flex>| m.fc.weight.val().into_data().to_vec::<f32>().unwrap();
        assert_eq!(weights(&read), weights(&second));
        assert_ne!(weights(&read), weights(&first));
    }
}
