//! GradientSHAP (Lundberg & Lee 2017; expected gradients), the paper's SHAP
//! (App. A.2: `shap.GradientExplainer` with its defaults, the whole test
//! set as background): over `n` samples of a background image `b` and
//! `t ~ U(0, 1)`, `φ = mean[(x − b) ⊙ ∇f(b + t (x − b))]` for `f` the
//! target's logit, on the normalised input. Its expectation is what
//! integrated gradients from each background image average to, so
//! `Σ φ ≈ f(x) − E_b f(b)`. A pixel's saliency is `|Σ_c φ_c|`: a pixel's
//! share of the output is the sum of its channels' shares.
//!
//! Each image draws from its own stream, so a map does not depend on the
//! batch it was explained in.

use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorData};
use grid_core::image::{IMAGENET_MEAN, IMAGENET_STD, Image};
use grid_core::model::resnet::ResNet;
use rand::Rng;

use super::{PixelMap, input_gradient};
use crate::salience::stream_rng;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradientShapOptions {
    /// `shap.GradientExplainer`'s `nsamples` (200).
    pub samples: usize,
    /// Samples per backward pass.
    pub per_eval: usize,
    pub seed: u64,
}

impl Default for GradientShapOptions {
    fn default() -> GradientShapOptions {
        GradientShapOptions { samples: 200, per_eval: 50, seed: 0 }
    }
}

/// One map per image, for the logit of its target class, against the
/// `background` images (the same size); `streams` name each image's random
/// stream (its index in the dataset).
pub fn gradient_shap<B: AutodiffBackend>(
    model: &ResNet<B>,
    images: &[&Image],
    targets: &[usize],
    streams: &[u64],
    background: &[&Image],
    options: GradientShapOptions,
    device: &B::Device,
) -> Vec<PixelMap> {
    let phis = attributions(model, images, targets, streams, background, options, device);
    phis.iter()
        .zip(images)
        .map(|(phi, image)| {
            let plane = image.height() * image.width();
            let values = (0..plane).map(|p| (phi[p] + phi[plane + p] + phi[2 * plane + p]).abs() as f32).collect();
            PixelMap { height: image.height(), width: image.width(), values }
        })
        .collect()
}

/// The signed φ of each image, `[3, h, w]` row by row, that
/// [`gradient_shap`] maps.
pub fn attributions<B: AutodiffBackend>(
    model: &ResNet<B>,
    images: &[&Image],
    targets: &[usize],
    streams: &[u64],
    background: &[&Image],
    options: GradientShapOptions,
    device: &B::Device,
) -> Vec<Vec<f64>> {
    assert!(!background.is_empty(), "GradientSHAP needs background images");
    let normalised = |i: &Image| i.normalised(IMAGENET_MEAN, IMAGENET_STD);
    let background: Vec<Vec<f32>> = background.iter().map(|b| normalised(b)).collect();
    let mut out = Vec::with_capacity(images.len());
    for ((image, &target), &stream) in images.iter().zip(targets).zip(streams) {
        let (h, w) = (image.height(), image.width());
        let x = normalised(image);
        let mut rng = stream_rng(options.seed, stream);
        let draws: Vec<(usize, f32)> =
            (0..options.samples.max(1)).map(|_| (rng.random_range(0..background.len()), rng.random::<f32>())).collect();
        let mut phi = vec![0.0f64; x.len()];
        for chunk in draws.chunks(options.per_eval.max(1)) {
            let points: Vec<f32> = chunk
                .iter()
                .flat_map(|&(b, t)| x.iter().zip(&background[b]).map(move |(xv, bv)| bv + t * (xv - bv)))
                .collect();
            let inputs = Tensor::<B, 4>::from_data(TensorData::new(points, [chunk.len(), 3, h, w]), device);
            let grads: Vec<f32> =
                input_gradient(model, inputs, &vec![target; chunk.len()]).into_data().to_vec().expect("f32 gradients");
            for (&(b, _), g) in chunk.iter().zip(grads.chunks(x.len())) {
                for (((p, &gv), &xv), &bv) in phi.iter_mut().zip(g).zip(&x).zip(&background[b]) {
                    *p += f64::from(gv) * f64::from(xv - bv);
                }
            }
        }
        let n = draws.len() as f64;
        out.push(phi.into_iter().map(|v| v / n).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use burn::backend::{Autodiff, Flex};
    use burn::module::AutodiffModule;
    use grid_core::model::resnet::{Depth, ResNetConfig, Stem};

    use super::*;
    use crate::salience::image::batch;
    use crate::shortcut::image::tests::textured;

    type A = Autodiff<Flex>;

    /// Completeness in expectation: with one background image the signed
    /// attributions sum to f(x) − f(b) up to the Monte-Carlo error of the
    /// path integral over t; and an image against itself gets nothing.
    #[test]
    fn attributions_add_up_to_the_logit_difference() {
        let device = Default::default();
        let model = ResNetConfig { depth: Depth::R18, width: 2, stem: Stem::Small, classes: 2 }.init::<A>(0, &device);
        let (x, b) = (textured(8, 8, 1), textured(8, 8, 2));
        let logit = |i: &Image| -> f64 {
            let l: Vec<f32> = model.valid().forward(batch::<Flex>(&[i], &device)).into_data().to_vec().unwrap();
            f64::from(l[1])
        };
        let expected = logit(&x) - logit(&b);
        let options = GradientShapOptions { samples: 400, per_eval: 100, seed: 1 };
        let phi = &attributions(&model, &[&x], &[1], &[0], &[&b], options, &device)[0];
        let sum: f64 = phi.iter().sum();
        assert!((sum - expected).abs() <= 0.1 * expected.abs().max(1e-3), "Σφ {sum} vs f(x) − f(b) {expected}");
        let nothing = gradient_shap(&model, &[&x], &[1], &[0], &[&x], options, &device);
        assert!(nothing[0].values.iter().all(|&v| v == 0.0));
        let once = gradient_shap(&model, &[&x], &[1], &[5], &[&b, &x], options, &device);
        assert_eq!(once, gradient_shap(&model, &[&x], &[1], &[5], &[&b, &x], options, &device));
        let mixed = gradient_shap(&model, &[&b, &x], &[0, 1], &[9, 5], &[&b, &x], options, &device);
        assert_eq!(mixed[1], once[0], "a map does not depend on its batch");
    }
}
