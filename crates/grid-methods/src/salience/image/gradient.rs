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

    /// Against central differences of the logit, pixel by pixel.
    #[test]
    fn matches_finite_differences() {
        let device = Default::default();
        let model = ResNetConfig { depth: Depth::R18, width: 2, stem: Stem::Small, classes: 2 }.init::<A>(&device);
        let image = textured(8, 8, 4);
        let map = &gradient(&model, &[&image], &[1], &device)[0];
        let input = batch::<Flex>(&[&image], &device);
        let inner = burn::module::AutodiffModule::valid(&model);
        let logit = |x: Tensor<Flex, 4>| -> f64 { inner.forward(x).narrow(1, 1, 1).into_scalar() as f64 };
        let eps = 1e-2f32;
        for (y, x) in [(0, 0), (3, 5), (7, 2)] {
            let mut expected = 0.0;
            for c in 0..3 {
                let bump = |d: f32| {
                    let mut data: Vec<f32> = input.clone().into_data().to_vec().unwrap();
                    data[(c * 8 + y) * 8 + x] += d;
                    Tensor::<Flex, 4>::from_data(burn::tensor::TensorData::new(data, [1, 3, 8, 8]), &device)
                };
                expected += ((logit(bump(eps)) - logit(bump(-eps))) / (2.0 * eps as f64)).abs();
            }
            let got = map.values[y * 8 + x] as f64;
            assert!((got - expected).abs() < 2e-2 * expected.max(1e-2), "({y}, {x}): {got} vs {expected}");
        }
    }
}
