//! Image `attribute`: one pixel method's maps of the first `sample` test
//! images, each for the class the model predicts, with each image's label
//! and whether it carries the manipulation: `maps.bin` (f32, little
//! endian, one `height × width` map after another) and `maps.json`.

use std::path::Path;

use anyhow::{Context, Result, bail};
use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;
use serde::{Deserialize, Serialize};

use super::{ImageLabel, SPLITS, Split};
use crate::context::StepContext;
use crate::io::{read_json, write_json};
use crate::spec::image_checkpoints::Checkpoint;
use grid_core::train::images::predict_images;
use grid_methods::salience::image::{PixelMap, PixelMethod, PixelSettings, explain};

/// What `maps.json` says of `maps.bin`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapsIndex {
    pub method: PixelMethod,
    pub height: usize,
    pub width: usize,
    pub examples: Vec<ExplainedImage>,
}

/// One explained test image.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ExplainedImage {
    /// Its position in the test split.
    pub index: usize,
    /// The class explained: the model's prediction.
    pub target: u32,
    #[serde(flatten)]
    pub label: ImageLabel,
}

pub fn run(
    method: PixelMethod,
    settings: &PixelSettings,
    sample: usize,
    checkpoint: Option<Checkpoint>,
    ctx: &StepContext,
    out: &Path,
) -> Result<()> {
    let (model, data) = (&ctx.inputs[0], &ctx.inputs[1]);
    let mut test = Split::read(data, SPLITS[2])?;
    test.images.truncate(sample);
    test.labels.truncate(sample);
    // Only GradientSHAP draws baselines: the others need not read the
    // training split (hundreds of MB at 224 pixels).
    let background = if method == PixelMethod::GradientShap {
        let mut images = Split::read(data, SPLITS[0])?.images;
        images.truncate(settings.background);
        images
    } else {
        Vec::new()
    };
    let (maps, targets) = grid_core::with_autodiff_backend!(ctx.compute, |B, device| {
        maps::<B>(method, settings, (model, checkpoint), &test, &background, &device)
    })?;
    let (height, width) = test.images.first().map_or((0, 0), |i| (i.height(), i.width()));
    let examples = targets
        .iter()
        .zip(&test.labels)
        .enumerate()
        .map(|(index, (&target, &label))| ExplainedImage { index, target, label })
        .collect();
    write_maps(out, &MapsIndex { method, height, width, examples }, &maps)
}

fn maps<B: AutodiffBackend>(
    method: PixelMethod,
    settings: &PixelSettings,
    (model, checkpoint): (&Path, Option<Checkpoint>),
    test: &Split,
    background: &[grid_core::image::Image],
    device: &B::Device,
) -> Result<(Vec<PixelMap>, Vec<u32>)> {
    // No map needs the weights' gradients: untracked, a backward pass skips them.
    let model = super::train::load::<B>(model, checkpoint, device)?.no_grad();
    let images = test.refs();
    let targets = predict_images(&model, &images, device);
    let classes: Vec<usize> = targets.iter().map(|&t| t as usize).collect();
    let streams: Vec<u64> = (0..images.len() as u64).collect();
    let background: Vec<&grid_core::image::Image> = background.iter().collect();
    let maps = explain(method, settings, &model, &images, &classes, &streams, &background, device);
    Ok((maps, targets))
}

fn write_maps(out: &Path, index: &MapsIndex, maps: &[PixelMap]) -> Result<()> {
    let bytes: Vec<u8> = maps.iter().flat_map(|m| m.values.iter().flat_map(|v| v.to_le_bytes())).collect();
    std::fs::write(out.join("maps.bin"), bytes).context("cannot write maps.bin")?;
    write_json(&out.join("maps.json"), index)
}

/// The maps an attribute step wrote, with their index.
pub fn read_maps(dir: &Path) -> Result<(MapsIndex, Vec<PixelMap>)> {
    let index: MapsIndex = read_json(&dir.join("maps.json"))?;
    let path = dir.join("maps.bin");
    let bytes = std::fs::read(&path).with_context(|| format!("{}: cannot read", path.display()))?;
    let size = index.height * index.width;
    if bytes.len() != 4 * size * index.examples.len() {
        bail!("{}: {} bytes for {} maps of {size} pixels", path.display(), bytes.len(), index.examples.len());
    }
    let values: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().expect("4 bytes"))).collect();
    let maps = values
        .chunks(size.max(1))
        .take(index.examples.len())
        .map(|v| PixelMap { height: index.height, width: index.width, values: v.to_vec() })
        .collect();
    Ok((index, maps))
}
