//! SmoothGrad (Smilkov et al. 2017) over pixels as the paper runs it
//! (App. A.2): the [`gradient`](super::gradient) map averaged over copies of
//! the input with Gaussian noise of σ = `spread · (max − min)` of the image
//! (the paper: 50 copies, spread 0.15). Seeded.

use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorData};
use grid_core::image::{IMAGENET_MEAN, IMAGENET_STD, Image};
use grid_core::model::resnet::ResNet;
use rand_distr::{Distribution, Normal};

use super::{PixelMap, channel_abs_sum, input_gradient};
use crate::salience::stream_rng;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SmoothGradOptions {
    pub samples: usize,
    pub spread: f32,
    pub seed: u64,
}

impl Default for SmoothGradOptions {
    fn default() -> SmoothGradOptions {
        SmoothGradOptions { samples: 50, spread: 0.15, seed: 0 }
    }
}

/// One map per image, for its target's logit; `streams` name each image's
/// random stream (its index in the dataset), so a map does not depend on
/// the batch it was explained in.
pub fn smoothgrad<B: AutodiffBackend>(
    model: &ResNet<B>,
    images: &[&Image],
    targets: &[usize],
    streams: &[u64],
    options: SmoothGradOptions,
    device: &B::Device,
) -> Vec<PixelMap> {
    let samples = options.samples.max(1);
    let mut maps: Vec<PixelMap> = Vec::new();
    for ((image, &target), &stream) in images.iter().zip(targets).zip(streams) {
        let clean = image.normalised(IMAGENET_MEAN, IMAGENET_STD);
        let (min, max) = clean.iter().fold((f32::MAX, f32::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        let sigma = options.spread * (max - min);
        let mut rng = stream_rng(options.seed, stream);
        let noise = Normal::new(0.0f32, sigma.max(0.0)).expect("a finite σ");
        let noisy: Vec<f32> =
            (0..samples).flat_map(|_| clean.iter().map(|v| v + noise.sample(&mut rng)).collect::<Vec<_>>()).collect();
        let [_, c, h, w] = [1, 3, image.height(), image.width()];
        let inputs = Tensor::<B, 4>::from_data(TensorData::new(noisy, [samples, c, h, w]), device);
        let per_copy = channel_abs_sum(input_gradient(model, inputs, &vec![target; samples]));
        let mut mean = vec![0.0f32; h * w];
        for map in &per_copy {
            for (m, v) in mean.iter_mut().zip(&map.values) {
                *m += v / samples as f32;
            }
        }
        maps.push(PixelMap { height: h, width: w, values: mean });
    }
    maps
}

#[cfg(test)]
mod tests {
    use burn::backend::{Autodiff, Flex};
    use grid_core::model::resnet::{Depth, ResNetConfig, Stem};

    use super::*;
    use crate::salience::image::gradient::gradient;
    use crate::shortcut::image::tests::textured;

    type A = Autodiff<Flex>;

    #[test]
    fn without_noise_it_is_the_gradient_and_with_it_seeded() {
        let device = Default::default();
        let model = ResNetConfig { depth: Depth::R18, width: 2, stem: Stem::Small, classes: 2 }.init::<A>(0, &device);
        let (a, b) = (textured(8, 8, 1), textured(8, 8, 2));
        let plain = gradient(&model, &[&a, &b], &[0, 1], &device);
        let quiet = SmoothGradOptions { samples: 3, spread: 0.0, seed: 5 };
        let smooth = smoothgrad(&model, &[&a, &b], &[0, 1], &[0, 1], quiet, &device);
        for (p, s) in plain.iter().zip(&smooth) {
            for (x, y) in p.values.iter().zip(&s.values) {
                assert!((x - y).abs() <= 1e-5 * x.abs().max(1e-3), "{x} vs {y}");
            }
        }
        let noisy = SmoothGradOptions { samples: 4, spread: 0.15, seed: 5 };
        let once = smoothgrad(&model, &[&a], &[0], &[4], noisy, &device);
        assert_eq!(once, smoothgrad(&model, &[&a], &[0], &[4], noisy, &device));
        assert_ne!(once[0], plain[0]);
        let batched = smoothgrad(&model, &[&b, &a], &[1, 0], &[3, 4], noisy, &device);
        assert_eq!(batched[1], once[0], "a map does not depend on its batch");
    }
}
