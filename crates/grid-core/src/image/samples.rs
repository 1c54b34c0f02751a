//! Natural photographs that ship with `grid`, and datasets of random crops
//! of them: the image protocol's embedded default (no download), as the
//! generated corpus is the text grids'.
//!
//! The paper's curated Flickr bird pairs are not published, and CUB-200
//! cannot be fetched from here (only package registries are reachable).
//! The closest honest substitute at hand: six colour photographs from
//! scikit-image's sample data (its PyPI wheel), each CC0 or in the public
//! domain (`samples/README.md` gives each one's source and licence), shrunk
//! to 320 pixels on their long side. A class is a group of photographs; an
//! example is a random square crop of one of them (40–80% of its short
//! side), resized to the grid's side. Under label reassignment with
//! `r = 0.5` (the paper's main experiment) the classes carry no signal and
//! only the planted manipulation predicts the label, so what matters is
//! that the pixels are natural (textures, edges, colour) for the five
//! manipulations to act on; a grid that needs learnable classes (the
//! paper's 5.3, `r ≠ 0.5`) gets two visibly different groups.

use anyhow::{Context, Result};
use image::imageops::FilterType;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::Image;
use super::decode::from_rgb8;

/// One embedded photograph.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub name: &'static str,
    pub bytes: &'static [u8],
}

/// The embedded photographs, by name.
pub const SAMPLES: [Sample; 6] = [
    Sample { name: "chelsea", bytes: include_bytes!("samples/chelsea.jpg") },
    Sample { name: "coffee", bytes: include_bytes!("samples/coffee.jpg") },
    Sample { name: "astronaut", bytes: include_bytes!("samples/astronaut.jpg") },
    Sample { name: "rocket", bytes: include_bytes!("samples/rocket.jpg") },
    Sample { name: "immunohistochemistry", bytes: include_bytes!("samples/immunohistochemistry.jpg") },
    Sample { name: "retina", bytes: include_bytes!("samples/retina.jpg") },
];

/// The default two classes: everyday photographs (a cat, a coffee cup, an
/// astronaut) against a rocket launch, stained tissue under a microscope and an eye's fundus.
pub const DEFAULT_CLASSES: [&[&str]; 2] =
    [&["chelsea", "coffee", "astronaut"], &["rocket", "immunohistochemistry", "retina"]];

/// The sample named `name`.
pub fn sample(name: &str) -> Result<Sample> {
    SAMPLES.iter().copied().find(|s| s.name == name).with_context(|| {
        let names: Vec<&str> = SAMPLES.iter().map(|s| s.name).collect();
        format!("no embedded photograph `{name}` (there are {})", names.join(", "))
    })
}

/// `per_class` random crops per class (`classes[c]` names its photographs,
/// taken in turn), each `side × side`, with label `c`; seeded.
pub fn crops(classes: &[&[&str]], per_class: usize, side: usize, seed: u64) -> Result<Vec<(Image, u32)>> {
    anyhow::ensure!(side > 0, "the image side must be at least 1 pixel");
    let side32 = u32::try_from(side).context("image side too large")?;
    let mut out = Vec::with_capacity(classes.len() * per_class);
    for (label, names) in classes.iter().enumerate() {
        anyhow::ensure!(!names.is_empty(), "class {label} names no photograph");
        let photos = names
            .iter()
            .map(|n| {
                let s = sample(n)?;
                let decoded = image::load_from_memory(s.bytes).with_context(|| format!("embedded {n}"))?;
                Ok(decoded.to_rgb8())
            })
            .collect::<Result<Vec<_>>>()?;
        // One stream per class: adding a class leaves the others' crops alone.
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(label as u64);
        for i in 0..per_class {
            let photo = &photos[i % photos.len()];
            let (w, h) = photo.dimensions();
            let short = w.min(h);
            let size = ((short as f64 * rng.random_range(0.4..=0.8)).round() as u32).clamp(1, short);
            let (left, top) = (rng.random_range(0..=w - size), rng.random_range(0..=h - size));
            let crop = image::imageops::crop_imm(photo, left, top, size, size).to_image();
            let resized = image::imageops::resize(&crop, side32, side32, FilterType::Triangle);
            out.push((from_rgb8(&resized), label as u32));
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_decodes_in_colour() {
        for s in SAMPLES {
            let rgb = image::load_from_memory(s.bytes).unwrap().to_rgb8();
            assert_eq!(rgb.width().max(rgb.height()), 320, "{}", s.name);
            // Colour, not grey: the hue manipulation needs saturation.
            let coloured = rgb.pixels().filter(|p| p[0].abs_diff(p[1]) > 10 || p[1].abs_diff(p[2]) > 10).count();
            assert!(coloured * 10 > rgb.pixels().len(), "{} is nearly grey", s.name);
        }
        assert!(sample("dog").unwrap_err().to_string().contains("chelsea, coffee"));
    }

    #[test]
    fn crops_are_seeded_labelled_and_differ() {
        let set = crops(&DEFAULT_CLASSES, 5, 16, 1).unwrap();
        assert_eq!(set.len(), 10);
        assert_eq!(set.iter().filter(|(_, l)| *l == 1).count(), 5);
        assert!(set.iter().all(|(i, _)| i.height() == 16 && i.width() == 16));
        assert_eq!(set, crops(&DEFAULT_CLASSES, 5, 16, 1).unwrap());
        assert_ne!(set, crops(&DEFAULT_CLASSES, 5, 16, 2).unwrap());
        assert_ne!(set[0].0, set[3].0, "two crops of one photograph differ");
        // Adding examples leaves the first ones as they were.
        assert_eq!(crops(&DEFAULT_CLASSES, 6, 16, 1).unwrap()[..5], set[..5]);
    }
}
