//! Image `corpus`: a dataset's images at the grid's side, split in three.
//! Crops of the embedded photographs give each split its own draw; a
//! folder of class folders is shuffled (seeded) and cut by the shares.

use std::path::Path;

use anyhow::{Context, Result};
use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;

use super::{ImageLabel, SPLITS, Split};
use crate::spec::images::{ImageDatasetSpec, ImageSource};
use grid_core::image::Image;
use grid_core::image::folder::ImageFolder;
use grid_core::image::samples::crops;

pub fn run(dataset: &ImageDatasetSpec, side: usize, seed: u64, folder: Option<&Path>, out: &Path) -> Result<()> {
    let name = &dataset.name;
    let splits: Vec<Vec<(Image, u32)>> = match &dataset.source {
        ImageSource::Embedded { classes, train, validation, test } => {
            let classes: Vec<Vec<&str>> = classes.iter().map(|c| c.iter().map(String::as_str).collect()).collect();
            let classes: Vec<&[&str]> = classes.iter().map(Vec::as_slice).collect();
            // One seed per split: the test crops are not the training ones.
            [*train, *validation, *test]
                .into_iter()
                .enumerate()
                .map(|(i, per_class)| crops(&classes, per_class, side, seed.wrapping_add(i as u64)))
                .collect::<Result<_>>()
                .with_context(|| format!("image dataset `{name}`"))?
        }
        ImageSource::Folder { validation_share, test_share, .. } => {
            let root = folder.context("a folder dataset's path is resolved when the grid is planned")?;
            let listing = ImageFolder::open(root).with_context(|| format!("image dataset `{name}`"))?;
            anyhow::ensure!(
                listing.classes().len() == 2,
                "image dataset `{name}`: {} has {} class folders; the manipulations are binary",
                root.display(),
                listing.classes().len()
            );
            let mut images = listing.load(side).with_context(|| format!("image dataset `{name}`"))?;
            images.shuffle(&mut ChaCha8Rng::seed_from_u64(seed));
            let n = images.len();
            let test = ((n as f64 * test_share).round() as usize).max(1);
            let validation = ((n as f64 * validation_share).round() as usize).max(1);
            anyhow::ensure!(
                test + validation < n,
                "image dataset `{name}`: {n} images leave none to train on after the test and validation shares"
            );
            let rest = images.split_off(test);
            let (validation_part, train_part) = rest.split_at(validation);
            let labelled = |part: &[(Image, usize)]| part.iter().map(|(i, l)| (i.clone(), *l as u32)).collect();
            vec![labelled(train_part), labelled(validation_part), labelled(&images)]
        }
    };
    for (name, split) in SPLITS.iter().zip(splits) {
        let (images, labels): (Vec<Image>, Vec<ImageLabel>) = split
            .into_iter()
            .map(|(image, label)| (image, ImageLabel { label, original_label: label, manipulated: false }))
            .unzip();
        Split { images, labels }.write(out, name)?;
    }
    Ok(())
}
