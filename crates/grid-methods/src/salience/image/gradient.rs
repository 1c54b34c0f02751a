//! Gradient (Simonyan et al. 2014) over pixels: `Σ_c |∂ logit_t / ∂ x_c|`,
//! the paper's reading (App. A.2), with respect to the normalised input.

use burn::tensor::backend::AutodiffBackend;
use grid_core::image::Image;
use grid_core::model::resnet::ResNet;

use super::{PixelMap, batch, channel_abs_sum, input_gradient};

/// One map per image, for the logit of its target class.
pub fn gradient<B: AutodiffBackend>(
    model: &ResNet<B>,
    images: &[&Image],
    targets: &[usize],
    device: &B::Device,
) -> Vec<PixelMap> {
    channel_abs_sum(input_gradient(model, batch::<B>(images, device), targets))
}

#[cfg(test)]
mod tests {
    use burn::backend::{Autodiff, Flex};
    use burn::tensor::Tensor;
    use grid_core::model::resnet::{Depth, ResNetConfig, Stem};

    use super::*;
    use crate::shortcut::image::tests::textured;

    type A = Autodiff<Flex>;

    /// Against central differences of the logit, pixel by pixel. The model
    /// is piecewise linear (ReLUs), so a difference whose ±ε straddles a
    /// kink is off; a few of the 16 pixels may be: at least 13 must agree.
    #[test]
    fn matches_finite_differences() {
        let device = Default::default();
        let model = ResNetConfig { depth: Depth::R18, width: 2, stem: Stem::Small, classes: 2 }.init::<A>(0, &device);
        let image = textured(8, 8, 4);
        let map = &gradient(&model, &[&image], &[1], &device)[0];
        let input: Vec<f32> = batch::<Flex>(&[&image], &device).into_data().to_vec().unwrap();
        let inner = burn::module::AutodiffModule::valid(&model);
        let logit = |data: Vec<f32>| -> f64 {
            let x = Tensor::<Flex, 4>::from_data(burn::tensor::TensorData::new(data, [1, 3, 8, 8]), &device);
            inner.forward(x).narrow(1, 1, 1).into_scalar() as f64
        };
        let eps = 1e-3f32;
        let mut agree = 0;
        for p in 0..16 {
            let (y, x) = (p / 4 * 2, p % 4 * 2 + 1);
            let mut expected = 0.0;
            for c in 0..3 {
                let bump = |d: f32| {
                    let mut data = input.clone();
                    data[(c * 8 + y) * 8 + x] += d;
                    data
                };
                expected += ((logit(bump(eps)) - logit(bump(-eps))) / (2.0 * eps as f64)).abs();
            }
            let got = map.values[y * 8 + x] as f64;
            agree += usize::from((got - expected).abs() < 3e-2 * expected + 2e-4);
        }
        assert!(agree >= 13, "{agree} of 16 pixels agree with central differences");
    }
}
