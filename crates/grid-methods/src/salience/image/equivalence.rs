//! The pixel methods against Captum (and LIME against the `lime` package,
//! the paper's) on one torchvision ResNet-34 layout and three photographs:
//! the fixture `tests/fixtures/resnet_torchvision`, written by
//! `scripts/image_fixtures.py`.
//!
//! Deterministic methods match to float rounding: the logits, Gradient
//! (Captum's `Saliency`), GradCAM (`LayerGradCam` + `interpolate`),
//! KernelSHAP with every coalition (exact Shapley values, Captum's
//! `ShapleyValues`), and LIME on the `lime` package's own samples (its
//! targets and its ridge coefficients). SmoothGrad and GradientSHAP draw
//! noise and baselines from their generators, Captum from torch's: they are
//! compared as estimates of one expectation, within the Monte-Carlo error
//! of their sample counts.

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};

    use burn::backend::{Autodiff, Flex};
    use burn::module::AutodiffModule;
    use grid_core::image::Image;
    use grid_core::image::slic::Segments;
    use grid_core::model::resnet::load::load_torchvision;
    use grid_core::model::resnet::{Depth, ResNet, ResNetConfig, Stem};

    use crate::salience::image::gradcam::gradcam;
    use crate::salience::image::gradient::gradient;
    use crate::salience::image::gradient_shap::{GradientShapOptions, attributions};
    use crate::salience::image::kernel_shap::{KernelShapOptions, kernel_shap};
    use crate::salience::image::lime::coefficients;
    use crate::salience::image::perturb::{Evaluated, Hiding, target_probabilities};
    use crate::salience::image::smoothgrad::{SmoothGradOptions, smoothgrad};
    use crate::salience::image::{PixelMap, batch};

    type A = Autodiff<Flex>;

    fn fixture() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/resnet_torchvision")
    }

    /// The fixture's tensors, by name, as f64 values and a shape.
    struct Reference {
        bytes: Vec<u8>,
    }

    impl Reference {
        fn open() -> Reference {
            Reference { bytes: std::fs::read(fixture().join("reference.safetensors")).unwrap() }
        }

        fn get(&self, name: &str) -> (Vec<usize>, Vec<f64>) {
            let tensors = safetensors::SafeTensors::deserialize(&self.bytes).unwrap();
            let view = tensors.tensor(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            let data = view.data();
            let values = match view.dtype() {
                safetensors::Dtype::U8 => data.iter().map(|&b| f64::from(b)).collect(),
                safetensors::Dtype::I64 => {
                    data.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f64).collect()
                }
                safetensors::Dtype::F64 => {
                    data.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect()
                }
                safetensors::Dtype::F32 => {
                    data.chunks_exact(4).map(|c| f64::from(f32::from_le_bytes(c.try_into().unwrap()))).collect()
                }
                other => panic!("{name}: dtype {other:?}"),
            };
            (view.shape().to_vec(), values)
        }

        /// `[n, …]` → n rows.
        fn rows(&self, name: &str) -> Vec<Vec<f64>> {
            let (shape, values) = self.get(name);
            values.chunks(values.len() / shape[0]).map(<[f64]>::to_vec).collect()
        }
    }

    struct Fixture {
        model: ResNet<A>,
        images: Vec<Image>,
        targets: Vec<usize>,
        reference: Reference,
    }

    fn open() -> Fixture {
        let device = Default::default();
        let config = ResNetConfig { depth: Depth::R34, width: 4, stem: Stem::ImageNet, classes: 2 };
        let model = load_torchvision::<A>(&fixture().join("model.safetensors"), &config, &device).unwrap();
        let reference = Reference::open();
        let (shape, _) = reference.get("images");
        let side = shape[2];
        let images = reference
            .rows("images")
            .into_iter()
            .map(|v| Image::new(side, side, v.into_iter().map(|x| x as f32).collect()).unwrap())
            .collect();
        let targets = reference.get("targets").1.into_iter().map(|t| t as usize).collect();
        Fixture { model, images, targets, reference }
    }

    impl Fixture {
        fn refs(&self) -> Vec<&Image> {
            self.images.iter().collect()
        }

        fn segments(&self) -> Vec<Segments> {
            let side = self.images[0].height();
            self.reference
                .rows("segments")
                .into_iter()
                .map(|v| Segments::new(side, side, v.into_iter().map(|l| l as u32).collect()).unwrap())
                .collect()
        }
    }

    /// The largest difference between `got` and `want`, relative to `want`'s largest magnitude.
    fn relative_error(got: &[f32], want: &[f64]) -> f64 {
        let scale = want.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-12);
        got.iter().zip(want).map(|(g, w)| (f64::from(*g) - w).abs()).fold(0.0, f64::max) / scale
    }

    /// `‖got − want‖₁ / ‖want‖₁`.
    fn l1_error(got: &[f64], want: &[f64]) -> f64 {
        let diff: f64 = got.iter().zip(want).map(|(g, w)| (g - w).abs()).sum();
        diff / want.iter().map(|w| w.abs()).sum::<f64>().max(1e-12)
    }

    fn as_f64(map: &PixelMap) -> Vec<f64> {
        map.values.iter().map(|&v| f64::from(v)).collect()
    }

    #[test]
    fn the_logits_are_torchvisions() {
        let f = open();
        let device = Default::default();
        let got: Vec<f32> = f.model.valid().forward(batch::<Flex>(&f.refs(), &device)).into_data().to_vec().unwrap();
        let (_, want) = f.reference.get("logits");
        let worst = got.iter().zip(&want).map(|(g, w)| (f64::from(*g) - w).abs()).fold(0.0, f64::max);
        assert!(worst < 1e-4, "logits differ by up to {worst:e}: {got:?} vs {want:?}");
    }

    #[test]
    fn gradient_and_gradcam_are_captums() {
        let f = open();
        let device = Default::default();
        let maps = gradient(&f.model, &f.refs(), &f.targets, &device);
        for (i, (map, want)) in maps.iter().zip(f.reference.rows("saliency")).enumerate() {
            let e = relative_error(&map.values, &want);
            assert!(e < 1e-4, "Saliency of image {i} differs by {e:e} of its largest value");
        }
        let maps = gradcam(&f.model, &f.refs(), &f.targets, &device);
        for (i, (map, want)) in maps.iter().zip(f.reference.rows("gradcam")).enumerate() {
            let e = relative_error(&map.values, &want);
            assert!(e < 1e-4, "GradCAM of image {i} differs by {e:e} of its largest value");
        }
    }

    /// With every coalition enumerated KernelSHAP is the Shapley value,
    /// which Captum's `ShapleyValues` computes exactly over permutations.
    #[test]
    fn kernel_shap_over_segments_is_captums_exact_shapley_value() {
        let f = open();
        let device = Default::default();
        let segments = f.segments();
        let model = Evaluated::<Flex>::new(&f.model, 64, &device);
        let options = KernelShapOptions { samples: 1 << 10, hiding: Hiding::SegmentMean, seed: 0 };
        let maps = kernel_shap(&model, &f.refs(), &segments, &f.targets, &[0, 1, 2], options);
        for (i, (map, want)) in maps.iter().zip(f.reference.rows("shapley")).enumerate() {
            let want: Vec<f64> = want.iter().map(|v| v.abs()).collect();
            let e = relative_error(&map.values, &want);
            assert!(e < 1e-4, "Shapley values of image {i} differ by {e:e} of the largest");
        }
    }

    /// On the `lime` package's own samples: the images it perturbed give
    /// the probabilities it recorded, and the ridge fit its coefficients.
    #[test]
    fn lime_on_the_lime_packages_samples_gives_its_coefficients() {
        let f = open();
        let device = Default::default();
        let segments = f.segments();
        let model = Evaluated::<Flex>::new(&f.model, 100, &device);
        for (i, (image, segments)) in f.images.iter().zip(&segments).enumerate() {
            let keeps: Vec<Vec<bool>> = f
                .reference
                .rows(&format!("lime_keeps_{i}"))
                .into_iter()
                .map(|row| row.iter().map(|&v| v == 1.0).collect())
                .collect();
            let targets = target_probabilities(&model, image, segments, &keeps, Hiding::SegmentMean, f.targets[i]);
            let (_, want) = f.reference.get(&format!("lime_targets_{i}"));
            let worst = targets.iter().zip(&want).map(|(g, w)| (g - w).abs()).fold(0.0, f64::max);
            assert!(worst < 1e-5, "image {i}: the perturbed images' probabilities differ by {worst:e}");
            let got = coefficients(&keeps, &want, 0.25);
            let (_, want) = f.reference.get(&format!("lime_coefficients_{i}"));
            let got: Vec<f32> = got.iter().map(|&v| v as f32).collect();
            let e = relative_error(&got, &want);
            assert!(e < 1e-5, "image {i}: LIME coefficients differ by {e:e} of the largest: {got:?} vs {want:?}");
        }
    }

    /// SmoothGrad: both are means of 512 noisy gradients of one
    /// distribution; the maps agree within the sampling error.
    #[test]
    fn smoothgrad_estimates_what_captums_noise_tunnel_estimates() {
        let f = open();
        let device = Default::default();
        let options = SmoothGradOptions { samples: 512, spread: 0.15, seed: 0 };
        let maps = smoothgrad(&f.model, &f.refs(), &f.targets, &[0, 1, 2], options, &device);
        for (i, (map, want)) in maps.iter().zip(f.reference.rows("smoothgrad")).enumerate() {
            let e = l1_error(&as_f64(map), &want);
            assert!(e < 0.1, "SmoothGrad of image {i}: L1 error {e:.3} against Captum's");
        }
    }

    /// GradientSHAP: both average 2,000 (baseline, t) draws against the
    /// same background; the signed attributions agree within the sampling
    /// error (an L1 error of about 0.07 here, 2026-11-29), and so do their
    /// totals.
    #[test]
    fn gradient_shap_estimates_what_captums_gradient_shap_estimates() {
        let f = open();
        let device = Default::default();
        let options = GradientShapOptions { samples: 2000, per_eval: 100, seed: 0 };
        let phis = attributions(&f.model, &f.refs(), &f.targets, &[0, 1, 2], &f.refs(), options, &device);
        for (i, (phi, want)) in phis.iter().zip(f.reference.rows("gradient_shap")).enumerate() {
            let e = l1_error(phi, &want);
            let (total, expected) = (phi.iter().sum::<f64>(), want.iter().sum::<f64>());
            assert!(e < 0.15, "GradientSHAP of image {i}: L1 error {e:.3} against Captum's");
            assert!((total - expected).abs() < 0.1 * expected.abs().max(0.05), "totals {total} vs {expected}");
        }
    }
}
