//! The image protocol's steps in the cost model: a ResNet's multiply-adds
//! per image at the grid's side ([`ResNetConfig::macs_per_image`]) stand
//! where a text model's per token stand, and each pixel method's passes
//! per explained image where a text method's do. They are convolutions,
//! priced at the prior's convolution rate for the model's width.

use super::StepWork;
use crate::dag::Plan;
use crate::spec::images::ImageSource;
use crate::steps::Work;
use crate::steps::images::ImageWork;
use grid_core::model::resnet::ResNetConfig;

/// A training step's backward pass costs about two forward ones (each
/// layer's input gradient and weight gradient).
const BACKWARD: f64 = 2.0;

/// The work of image step `index`, whose dataset has `counts` images.
pub(super) fn step_work(plan: &Plan, index: usize, work: &ImageWork, counts: Counts) -> StepWork {
    let side = side(plan, index).unwrap_or(224) as f64;
    let image_bytes = 3.0 * side * side;
    let model = model(plan, index);
    let macs = model.map_or(0.0, |m| m.macs_per_image(side as usize));
    let conv_width = model.map_or(0.0, |m| m.width as f64);
    let forward = |images: f64, passes: f64| StepWork {
        conv_infer_macs: images * passes * macs,
        conv_width,
        example_passes: images * passes,
        ..StepWork::default()
    };
    match work {
        // Decoding, cropping and resizing: ~10 ns a pixel value.
        ImageWork::Corpus { .. } | ImageWork::Synth { .. } => StepWork {
            fixed_seconds: 0.05 + counts.total() * image_bytes * 1.0e-8,
            bytes: counts.total() * image_bytes,
            ..StepWork::default()
        },
        ImageWork::Train { model, .. } => {
            let t = &model.training;
            let images = t.max_steps.get() as f64 * t.batch_size.get() as f64;
            let evaluations = (t.max_steps.get() / t.eval_every.get()) as f64;
            StepWork {
                conv_train_macs: (1.0 + BACKWARD) * images * macs,
                optimizer_steps: t.max_steps.get() as f64,
                bytes: 4.0 * model.config.parameters(),
                ..forward(evaluations * counts.validation, 1.0)
            }
        }
        ImageWork::Verify { .. } => StepWork { bytes: 1.0e3 + 4.0 * counts.test, ..forward(counts.test, 1.0) },
        ImageWork::Attribute { method, settings, sample, .. } => {
            let images = (*sample as f64).min(counts.test);
            let passes = method.forward_passes(settings);
            StepWork { fixed_seconds: 0.02, bytes: images * side * side * 4.0, ..forward(images, passes) }
        }
        ImageWork::Score => StepWork { fixed_seconds: 0.01, bytes: 300.0, ..StepWork::default() },
    }
}

/// The group whose measurements price an image step: its kind, the model's
/// shape at the grid's side, and the method.
pub(super) fn group(plan: &Plan, index: usize) -> String {
    let step = &plan.steps[index];
    let shape = model(plan, index).map(|m| {
        let side = side(plan, index).unwrap_or(224);
        format!("resnet{:?}-w{}-{:?}-{side}px", m.depth, m.width, m.stem).to_lowercase()
    });
    let method = step.work.method_name().unwrap_or_default();
    format!("{}/{}/{method}", step.kind.name(), shape.unwrap_or_default())
}

/// Images per split of the dataset an image step reads.
#[derive(Debug, Clone, Copy)]
pub(super) struct Counts {
    train: f64,
    validation: f64,
    test: f64,
}

impl Counts {
    fn total(&self) -> f64 {
        self.train + self.validation + self.test
    }
}

/// The steps `index` reads, nearest first, along first inputs.
fn lineage(plan: &Plan, index: usize) -> impl Iterator<Item = &Work> {
    std::iter::successors(Some(index), |&i| plan.steps[i].inputs.first().copied()).map(|i| &plan.steps[i].work)
}

fn side(plan: &Plan, index: usize) -> Option<usize> {
    lineage(plan, index).find_map(|w| match w {
        Work::Image(ImageWork::Corpus { side, .. }) => Some(*side),
        _ => None,
    })
}

fn model(plan: &Plan, index: usize) -> Option<&ResNetConfig> {
    lineage(plan, index).find_map(|w| match w {
        Work::Image(ImageWork::Train { model, .. }) => Some(&model.config),
        _ => None,
    })
}

/// The image corpus step that step `index` reads (itself for a corpus).
pub(super) fn corpus(plan: &Plan, index: usize) -> Option<usize> {
    std::iter::successors(Some(index), |&i| plan.steps[i].inputs.first().copied())
        .find(|&i| matches!(plan.steps[i].work, Work::Image(ImageWork::Corpus { .. })))
}

/// From the grid file for embedded crops; for a folder, its listing (an
/// assumed 1,000 images when it cannot be read yet). A folder is listed
/// each call: an estimate gathers them once per corpus (`Inputs`).
pub(super) fn counts(plan: &Plan, index: usize) -> Counts {
    let corpus = lineage(plan, index).find_map(|w| match w {
        Work::Image(ImageWork::Corpus { dataset, folder, .. }) => Some((dataset, folder)),
        _ => None,
    });
    match corpus {
        Some((dataset, folder)) => match &dataset.source {
            ImageSource::Embedded { classes, train, validation, test } => {
                let n = classes.len() as f64;
                Counts { train: n * *train as f64, validation: n * *validation as f64, test: n * *test as f64 }
            }
            ImageSource::Folder { validation_share, test_share, .. } => {
                let listed = folder
                    .as_deref()
                    .and_then(|f| grid_core::image::folder::ImageFolder::open(f).ok())
                    .map_or(1000.0, |f| f.files().len() as f64);
                Counts {
                    train: listed * (1.0 - validation_share - test_share),
                    validation: listed * validation_share,
                    test: listed * test_share,
                }
            }
        },
        None => Counts { train: 1000.0, validation: 100.0, test: 200.0 },
    }
}
