//! KernelSHAP over superpixels (Lundberg & Lee 2017): the segments are the
//! players, a coalition's value the probability of the explained class with
//! the other segments hidden. The coalitions, the Shapley kernel and the
//! constrained fit are the text method's ([`crate::salience::kernel_shap`]):
//! exact Shapley values when `samples ≥ 2^d − 2`, else kernel-distributed
//! samples in complementary pairs. A pixel's saliency is `|φ|` of its
//! segment.
//!
//! (The paper's SHAP is GradientSHAP, [`super::gradient_shap`]; this is the
//! superpixel SHAP the issue asks for beside it, and what Captum's
//! `KernelShap` computes given a feature mask.)

use grid_core::image::Image;
use grid_core::image::slic::Segments;

use super::PixelMap;
use super::perturb::{Hiding, Probabilities, segment_map, target_probabilities};
use crate::salience::kernel_shap::{coalitions, shapley_values};
use crate::salience::stream_rng;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KernelShapOptions {
    /// Coalitions besides the empty and the full one.
    pub samples: usize,
    pub hiding: Hiding,
    pub seed: u64,
}

impl Default for KernelShapOptions {
    fn default() -> KernelShapOptions {
        KernelShapOptions { samples: 1000, hiding: Hiding::SegmentMean, seed: 0 }
    }
}

/// One map per image, for the probability of its target class; `streams`
/// name each image's random stream (its index in the dataset).
pub fn kernel_shap(
    model: &impl Probabilities,
    images: &[&Image],
    segments: &[Segments],
    targets: &[usize],
    streams: &[u64],
    options: KernelShapOptions,
) -> Vec<PixelMap> {
    let mut maps = Vec::with_capacity(images.len());
    for (((image, segments), &target), &stream) in images.iter().zip(segments).zip(targets).zip(streams) {
        let d = segments.count();
        let mut rng = stream_rng(options.seed, stream);
        let plan = coalitions(&mut rng, d, options.samples);
        // The full coalition, the empty one, then the plan's.
        let keeps: Vec<Vec<bool>> =
            [vec![true; d], vec![false; d]].into_iter().chain(plan.keeps.iter().cloned()).collect();
        let values = target_probabilities(model, image, segments, &keeps, options.hiding, target);
        let phi = shapley_values(d, &plan.keeps, &values[2..], &plan.weights, values[0], values[1]);
        maps.push(segment_map(segments, &phi));
    }
    maps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::salience::image::perturb::tests::{MeanRed, quadrants};

    /// On an additive model the Shapley value of a segment is what it adds:
    /// each quadrant's red / 4, exactly (all 14 coalitions enumerated).
    #[test]
    fn on_an_additive_model_each_segment_gets_what_it_adds() {
        let (image, segments) = quadrants();
        let options = KernelShapOptions { samples: 14, hiding: Hiding::Colour([0.0; 3]), seed: 3 };
        let map = &kernel_shap(&MeanRed, &[&image], std::slice::from_ref(&segments), &[1], &[0], options)[0];
        for p in 0..16 {
            let share = 0.05 * (segments.at(p / 4, p % 4) + 1) as f32;
            assert!((map.values[p] - share).abs() < 1e-6, "pixel {p}: {} vs {share}", map.values[p]);
        }
        // Sampled (fewer coalitions than 2^d − 2), an additive model is
        // still fitted exactly.
        let sampled = KernelShapOptions { samples: 12, ..options };
        let again = &kernel_shap(&MeanRed, &[&image], std::slice::from_ref(&segments), &[1], &[0], sampled)[0];
        for (a, b) in map.values.iter().zip(&again.values) {
            assert!((a - b).abs() < 1e-6, "{a} vs {b}");
        }
    }
}
