//! The image protocol's steps (Zhou et al. 2022, section 5; issue 47):
//! the same kinds as the text grid's (`corpus`, `synth`, `train`,
//! `verify`, `attribute`, `score`), each a file here that moves image sets,
//! ResNets and pixel maps in and out of the cache. The science is in
//! `grid_core::image`, `grid_core::train::images` and `grid_methods`'
//! `shortcut::image`, `salience::image` and `metrics::pixel_attr`.

pub mod attribute;
pub mod corpus;
pub mod score;
pub mod synth;
pub mod train;
pub mod verify;

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::context::StepContext;
use crate::spec::image_checkpoints::{Checkpoint, Checkpoints};
use crate::spec::images::{ImageDatasetSpec, ImageModelSpec};
use grid_core::image::Image;
use grid_core::image::store;
use grid_methods::salience::image::{PixelMethod, PixelSettings};
use grid_methods::shortcut::image::ImageShortcut;
use grid_methods::shortcut::image::verification::ImageThresholds;

/// What an image step does, with what it needs beyond its key.
#[derive(Debug, Clone)]
pub enum ImageWork {
    /// No inputs: the dataset's images at `side`, split.
    Corpus { dataset: ImageDatasetSpec, side: usize, seed: u64, folder: Option<PathBuf> },
    /// Input: the corpus.
    Synth { manipulation: ImageShortcut, keep_probability: f64, seed: u64 },
    /// Input: the synth step. `checkpoints`: the models kept beside the
    /// trained one (Figure 4).
    Train { model: ImageModelSpec, checkpoints: Checkpoints },
    /// Inputs: the train and synth steps; of the trained model, or of one
    /// of its checkpoints.
    Verify { thresholds: ImageThresholds, keep_probability: f64, checkpoint: Option<Checkpoint> },
    /// Inputs: the train and synth steps.
    Attribute { method: PixelMethod, settings: PixelSettings, sample: usize, checkpoint: Option<Checkpoint> },
    /// Inputs: the attribute and synth steps.
    Score,
}

/// Runs one image step, writing its payload into `out`.
pub fn execute(work: &ImageWork, ctx: &StepContext, out: &Path) -> Result<()> {
    match work {
        ImageWork::Corpus { dataset, side, seed, folder } => corpus::run(dataset, *side, *seed, folder.as_deref(), out),
        ImageWork::Synth { manipulation, keep_probability, seed } => {
            synth::run(manipulation, *keep_probability, *seed, &ctx.inputs[0], out)
        }
        ImageWork::Train { model, checkpoints } => train::run(model, checkpoints, ctx, out),
        ImageWork::Verify { thresholds, keep_probability, checkpoint } => {
            verify::run(*thresholds, *keep_probability, *checkpoint, ctx, out)
        }
        ImageWork::Attribute { method, settings, sample, checkpoint } => {
            attribute::run(*method, settings, *sample, *checkpoint, ctx, out)
        }
        ImageWork::Score => score::run(&ctx.inputs, out),
    }
}

/// The three splits, in the order the payloads name them.
pub const SPLITS: [&str; 3] = ["train", "validation", "test"];

/// One image of a split, beside its pixels: its label after reassignment
/// (the corpus's own label before any), the dataset's label, and whether
/// the manipulation was applied.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ImageLabel {
    pub label: u32,
    pub original_label: u32,
    pub manipulated: bool,
}

/// A split as a payload holds it: `<split>.images` and `<split>.json`.
pub struct Split {
    pub images: Vec<Image>,
    pub labels: Vec<ImageLabel>,
}

impl Split {
    pub fn write(&self, dir: &Path, name: &str) -> Result<()> {
        store::write(&dir.join(format!("{name}.images")), &self.images)?;
        crate::io::write_json(&dir.join(format!("{name}.json")), &self.labels)
    }

    pub fn read(dir: &Path, name: &str) -> Result<Split> {
        let images = store::read(&dir.join(format!("{name}.images")))?;
        let path = dir.join(format!("{name}.json"));
        let labels: Vec<ImageLabel> = crate::io::read_json(&path)?;
        anyhow::ensure!(
            labels.len() == images.len(),
            "{}: {} labels for {} images",
            path.display(),
            labels.len(),
            images.len()
        );
        Ok(Split { images, labels })
    }

    pub fn refs(&self) -> Vec<&Image> {
        self.images.iter().collect()
    }
}
