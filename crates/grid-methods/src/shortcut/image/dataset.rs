//! A manipulated image dataset (Zhou et al. 2022, section 5): labels are
//! reassigned at random — each kept with probability `r`, flipped
//! otherwise — and the manipulation is applied to the images of the
//! positive class *after* reassignment, the negative class left as it was.
//! At `r = 0.5` the images say nothing about the label: only the
//! manipulation does, and a model that classifies well must rest on φ.

use grid_core::image::{Image, Mask};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{ImageShortcut, Manipulation};

/// One example of the manipulated set.
#[derive(Debug, Clone, PartialEq)]
pub struct ManipulatedImage {
    pub image: Image,
    /// After reassignment: what the model is trained on.
    pub label: usize,
    /// The dataset's own label.
    pub original_label: usize,
    /// Whether the manipulation was applied (the label is 1).
    pub manipulated: bool,
}

/// The manipulated set and φ∪, the union of the two classes' regions (the
/// negative class has none, so φ∪ is the manipulation's own region).
#[derive(Debug, Clone, PartialEq)]
pub struct ManipulatedSet {
    pub examples: Vec<ManipulatedImage>,
    pub region: Mask,
}

/// Reassigns the labels of `examples` (binary) with keep probability
/// `keep_probability` and manipulates the positive ones. Each example draws
/// from its own stream (of `seed` and its index), so an example's outcome
/// does not depend on the others or on the order they are processed in.
pub fn manipulate(
    examples: &[(Image, usize)],
    shortcut: &ImageShortcut,
    keep_probability: f64,
    seed: u64,
) -> Result<ManipulatedSet, String> {
    let Some((first, _)) = examples.first() else { return Err("no images to manipulate".into()) };
    let (height, width) = (first.height(), first.width());
    shortcut.check(height, width)?;
    if !(0.0..=1.0).contains(&keep_probability) {
        return Err(format!("keep_probability = {keep_probability} is outside [0, 1]"));
    }
    let examples = examples
        .iter()
        .enumerate()
        .map(|(i, (image, original_label))| {
            if (image.height(), image.width()) != (height, width) {
                return Err(format!(
                    "image {i} is {}×{}, the first {height}×{width}: one size per set",
                    image.height(),
                    image.width()
                ));
            }
            if *original_label > 1 {
                return Err(format!("image {i} has label {original_label}: the manipulations are binary"));
            }
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            rng.set_stream(i as u64);
            let keep = rng.random::<f64>() < keep_probability;
            let label = if keep { *original_label } else { 1 - original_label };
            let manipulated = label == 1;
            let image = if manipulated { shortcut.apply(image, &mut rng) } else { image.clone() };
            Ok(ManipulatedImage { image, label, original_label: *original_label, manipulated })
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(ManipulatedSet { examples, region: shortcut.region(height, width) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shortcut::image::tests::{changed, textured};

    fn images(n: usize) -> Vec<(Image, usize)> {
        (0..n).map(|i| (textured(16, 16, i as u64), i % 2)).collect()
    }

    #[test]
    fn labels_survive_at_rate_r_and_the_positive_class_is_manipulated() {
        // Hue changes every image it is applied to (noise may, by chance, none).
        let shortcut = ImageShortcut::default_of("hue").unwrap();
        let source = images(2000);
        for r in [0.5, 0.8] {
            let set = manipulate(&source, &shortcut, r, 9).unwrap();
            let kept = set.examples.iter().filter(|e| e.label == e.original_label).count() as f64 / 2000.0;
            // 2,000 draws: the standard error is at most 0.011.
            assert!((kept - r).abs() < 0.04, "r = {r}: {kept}");
            for (e, (image, _)) in set.examples.iter().zip(&source) {
                assert_eq!(e.manipulated, e.label == 1);
                if e.manipulated {
                    assert!(changed(image, &e.image).count() > 0);
                } else {
                    assert_eq!(&e.image, image);
                }
            }
            assert_eq!(set.region, shortcut.region(16, 16));
        }
    }

    #[test]
    fn seeded_per_example_and_checked() {
        let shortcut = ImageShortcut::default_of("watermark").unwrap();
        let source = images(40);
        let whole = manipulate(&source, &shortcut, 0.5, 3).unwrap();
        assert_eq!(whole, manipulate(&source, &shortcut, 0.5, 3).unwrap());
        // An example's outcome is its own: the set's first half alone gives the same.
        let half = manipulate(&source[..20], &shortcut, 0.5, 3).unwrap();
        assert_eq!(half.examples, whole.examples[..20]);
        assert_ne!(whole, manipulate(&source, &shortcut, 0.5, 4).unwrap());

        let mut mixed = images(3);
        mixed[2].0 = textured(16, 12, 0);
        assert!(manipulate(&mixed, &shortcut, 0.5, 3).unwrap_err().contains("one size per set"));
        let three = vec![(textured(16, 16, 0), 2)];
        assert!(manipulate(&three, &shortcut, 0.5, 3).unwrap_err().contains("binary"));
        assert!(manipulate(&images(2), &shortcut, 1.5, 3).unwrap_err().contains("keep_probability"));
    }
}
