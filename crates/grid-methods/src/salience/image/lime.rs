//! LIME over superpixels (Ribeiro et al. 2016) as the paper runs it (App.
//! A.2: `lime_image.LimeImageExplainer` with its defaults): `n` samples of
//! which the first keeps every segment and every other keeps each segment
//! with probability ½; hidden segments painted with their mean colour; the
//! target is the probability of the explained class; each sample weighted
//! by `√exp(−D² / 0.25²)` with `D` the cosine distance between its keep
//! vector and all-ones; a weighted ridge fit (`α = 1`, unpenalised
//! intercept). A pixel's saliency is `|β|` of its segment. (The paper
//! segments with quickshift, the issue asks for SLIC: the segmentation is
//! the caller's, see [`grid_core::image::slic`].)
//!
//! Each image draws from its own stream, so a map does not depend on the
//! batch it was explained in.

use grid_core::image::Image;
use grid_core::image::slic::Segments;
use nalgebra::DMatrix;
use rand::Rng;

use super::PixelMap;
use super::perturb::{Hiding, Probabilities, segment_map, target_probabilities};
use crate::salience::regression::weighted_least_squares;
use crate::salience::stream_rng;

/// `LimeImageExplainer`'s defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LimeOptions {
    pub samples: usize,
    pub kernel_width: f64,
    pub hiding: Hiding,
    pub seed: u64,
}

impl Default for LimeOptions {
    fn default() -> LimeOptions {
        LimeOptions { samples: 1000, kernel_width: 0.25, hiding: Hiding::SegmentMean, seed: 0 }
    }
}

/// One map per image, for the probability of its target class; `streams`
/// name each image's random stream (its index in the dataset).
pub fn lime(
    model: &impl Probabilities,
    images: &[&Image],
    segments: &[Segments],
    targets: &[usize],
    streams: &[u64],
    options: LimeOptions,
) -> Vec<PixelMap> {
    let mut maps = Vec::with_capacity(images.len());
    for (((image, segments), &target), &stream) in images.iter().zip(segments).zip(targets).zip(streams) {
        let mut rng = stream_rng(options.seed, stream);
        let keeps = keep_vectors(&mut rng, segments.count(), options.samples.max(1));
        let targets = target_probabilities(model, image, segments, &keeps, options.hiding, target);
        maps.push(segment_map(segments, &coefficients(&keeps, &targets, options.kernel_width)));
    }
    maps
}

/// `n` keep vectors over `d` segments: all kept first, then each segment
/// kept with probability ½ (`randint(0, 2)`).
pub fn keep_vectors(rng: &mut impl Rng, d: usize, n: usize) -> Vec<Vec<bool>> {
    (0..n).map(|s| if s == 0 { vec![true; d] } else { (0..d).map(|_| rng.random::<bool>()).collect() }).collect()
}

/// The kernel weight of a keep vector with `kept` of `d` segments: the
/// cosine distance to all-ones is `1 − √(kept/d)` (1 for none kept, as
/// scikit-learn has it for a zero vector).
pub fn weight(kept: usize, d: usize, kernel_width: f64) -> f64 {
    let distance = 1.0 - (kept as f64 / d as f64).sqrt();
    (-(distance * distance) / (kernel_width * kernel_width)).exp().sqrt()
}

/// The ridge coefficients, one per segment, of samples `keeps` whose
/// targets are `targets`.
pub fn coefficients(keeps: &[Vec<bool>], targets: &[f64], kernel_width: f64) -> Vec<f64> {
    let d = keeps.first().map_or(0, Vec::len);
    if d == 0 {
        return Vec::new();
    }
    let x = DMatrix::from_fn(keeps.len(), d, |i, j| f64::from(u8::from(keeps[i][j])));
    let weights: Vec<f64> = keeps.iter().map(|k| weight(k.iter().filter(|&&b| b).count(), d, kernel_width)).collect();
    weighted_least_squares(&x, targets, &weights, 1.0, true).coefficients
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::salience::image::perturb::tests::{MeanRed, quadrants};

    #[test]
    fn the_kernel_by_hand() {
        // 1 of 4 kept: D = 1 − ½ = ½, √exp(−0.25 / 0.0625) = e^−2.
        assert!((weight(1, 4, 0.25) - (-2.0f64).exp()).abs() < 1e-12);
        assert_eq!(weight(4, 4, 0.25), 1.0);
    }

    /// The mean red is additive over the quadrants when hidden ones go
    /// black: each coefficient is its quadrant's share of the red, less the
    /// ridge's little shrinkage (400 samples outweigh `α = 1`).
    #[test]
    fn on_an_additive_model_the_coefficients_follow_each_segments_share() {
        let (image, segments) = quadrants();
        let options = LimeOptions { samples: 400, hiding: Hiding::Colour([0.0; 3]), ..LimeOptions::default() };
        let map = &lime(&MeanRed, &[&image], std::slice::from_ref(&segments), &[1], &[7], options)[0];
        let at = |s: usize| map.values[(0..16).find(|&p| segments.at(p / 4, p % 4) == s).unwrap()];
        // Each quadrant adds red / 4 to the mean: 0.05, 0.1, 0.15, 0.2.
        for s in 0..4 {
            let share = 0.05 * (s + 1) as f32;
            assert!((at(s) - share).abs() <= 0.05 * share, "segment {s}: {} vs {share}", at(s));
        }
        assert!(at(0) < at(1) && at(1) < at(2) && at(2) < at(3), "{:?}", map.values);
        // Seeded by stream: the same stream gives the same map, another a different one.
        let again = &lime(&MeanRed, &[&image], std::slice::from_ref(&segments), &[1], &[7], options)[0];
        assert_eq!(map, again);
        let other = &lime(&MeanRed, &[&image], std::slice::from_ref(&segments), &[1], &[8], options)[0];
        assert_ne!(map, other);
    }
}
