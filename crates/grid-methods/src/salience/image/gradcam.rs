//! GradCAM (Selvaraju et al. 2017) at a ResNet's last convolutional block:
//! `ReLU(Σ_k α_k A_k)` with `α_k` the spatial mean of the target logit's
//! gradient on feature map `A_k`, upsampled bilinearly to the image. For a
//! ResNet's average pooling and linear head `α_k = w_tk / (h·w)`, so it is
//! class activation mapping (CAM), as the paper notes (App. A.2).

use burn::tensor::backend::AutodiffBackend;
use grid_core::image::Image;
use grid_core::model::resnet::ResNet;

use super::{PixelMap, batch, targets_sum};

/// One map per image, for its target's logit, at the image's size.
pub fn gradcam<B: AutodiffBackend>(
    model: &ResNet<B>,
    images: &[&Image],
    targets: &[usize],
    device: &B::Device,
) -> Vec<PixelMap> {
    let features = model.evaluated_features(batch::<B>(images, device)).detach().require_grad();
    let grads = targets_sum(model.head(features.clone()), targets).backward();
    let grad = features.grad(&grads).expect("the features take part in the logits");
    let [_, _, h, w] = grad.dims();
    let alpha = grad.mean_dim(3).mean_dim(2); // [n, k, 1, 1]
    let cam = (features.inner() * alpha).sum_dim(1).clamp_min(0.0); // [n, 1, h, w]
    let cam: Vec<f32> = cam.into_data().to_vec().expect("f32 maps");
    cam.chunks(h * w).zip(images).map(|(small, image)| upsample(small, h, w, image.height(), image.width())).collect()
}

/// Bilinear upsampling with aligned pixel centres (`align_corners = false`,
/// as `F.interpolate` and Captum's `LayerAttribution.interpolate` do).
fn upsample(values: &[f32], h: usize, w: usize, height: usize, width: usize) -> PixelMap {
    let source = |out: usize, from: usize, to: usize| -> (usize, usize, f32) {
        let position = ((out as f32 + 0.5) * from as f32 / to as f32 - 0.5).max(0.0);
        let low = (position.floor() as usize).min(from - 1);
        let high = (low + 1).min(from - 1);
        (low, high, position - low as f32)
    };
    let mut out = Vec::with_capacity(height * width);
    for y in 0..height {
        let (y0, y1, fy) = source(y, h, height);
        for x in 0..width {
            let (x0, x1, fx) = source(x, w, width);
            let at = |yy: usize, xx: usize| values[yy * w + xx];
            let top = at(y0, x0) * (1.0 - fx) + at(y0, x1) * fx;
            let bottom = at(y1, x0) * (1.0 - fx) + at(y1, x1) * fx;
            out.push(top * (1.0 - fy) + bottom * fy);
        }
    }
    PixelMap { height, width, values: out }
}

#[cfg(test)]
mod tests {
    use burn::backend::{Autodiff, Flex};
    use grid_core::model::resnet::{Depth, ResNetConfig, Stem};

    use super::*;
    use crate::shortcut::image::tests::textured;

    type A = Autodiff<Flex>;

    /// With average pooling and a linear head, GradCAM is ReLU(CAM):
    /// `Σ_k w_tk A_k / (h·w)`, computed here from the weights.
    #[test]
    fn on_a_resnet_it_is_class_activation_mapping() {
        let device = Default::default();
        let model = ResNetConfig { depth: Depth::R18, width: 2, stem: Stem::Small, classes: 3 }.init::<A>(0, &device);
        let image = textured(16, 16, 3);
        let inner = burn::module::AutodiffModule::valid(&model);
        let features = inner.features(batch::<Flex>(&[&image], &device)); // [1, 16, 2, 2]
        let [_, k, h, w] = features.dims();
        let weight: Vec<f32> = inner.fc.weight.val().into_data().to_vec().unwrap(); // [k, classes]
        let a: Vec<f32> = features.into_data().to_vec().unwrap();
        let target = 2;
        let cam: Vec<f32> = (0..h * w)
            .map(|p| (0..k).map(|c| weight[c * 3 + target] * a[c * h * w + p]).sum::<f32>() / (h * w) as f32)
            .map(|v| v.max(0.0))
            .collect();
        let expected = upsample(&cam, h, w, 16, 16);
        let got = &gradcam(&model, &[&image], &[target], &device)[0];
        for (g, e) in got.values.iter().zip(&expected.values) {
            assert!((g - e).abs() <= 1e-5 + 1e-4 * e.abs(), "{g} vs {e}");
        }
    }

    #[test]
    fn upsampling_keeps_a_constant_and_interpolates_between_centres() {
        assert!(upsample(&[2.0; 4], 2, 2, 8, 8).values.iter().all(|&v| v == 2.0));
        // 1 × 2 → 1 × 4: centres of the outputs at 0.25, 0.75, 1.25, 1.75 of
        // the input's pixel grid: clamped, 1/4, 3/4, clamped.
        let row = upsample(&[0.0, 4.0], 1, 2, 1, 4).values;
        assert_eq!(row, [0.0, 1.0, 3.0, 4.0]);
    }
}
