//! Saliency maps over pixels for Zhou et al.'s image protocol (2022,
//! App. A.2; issue 47), on a [`ResNet`]: one non-negative value per pixel,
//! what `Attr%` sums inside and outside the effective region
//! ([`crate::metrics::pixel_attr`]).
//!
//! - [`gradient`]: the target logit's gradient, its three channels summed
//!   in absolute value;
//! - [`smoothgrad`]: the same, averaged over noisy copies;
//! - [`gradcam`]: GradCAM at the last convolutional block (CAM, for a
//!   ResNet's pooling and linear head), upsampled to the image.
//!
//! - [`lime`]: LIME over superpixels ([`grid_core::image::slic`]);
//! - [`kernel_shap`]: KernelSHAP over the same superpixels;
//! - [`gradient_shap`]: GradientSHAP (expected gradients), the paper's SHAP.
//!
//! [`perturb`] holds what the two perturbation methods share.

pub mod gradcam;
pub mod gradient;
pub mod gradient_shap;
pub mod kernel_shap;
pub mod lime;
pub mod methods;
pub mod perturb;
pub mod smoothgrad;

mod equivalence;

use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorData};
use grid_core::model::resnet::ResNet;
pub use grid_core::model::resnet::batch;
pub use methods::{PixelMethod, PixelSettings, explain};

/// A saliency map: `height × width` values, row by row.
#[derive(Debug, Clone, PartialEq)]
pub struct PixelMap {
    pub height: usize,
    pub width: usize,
    pub values: Vec<f32>,
}

/// The gradient of each example's `targets[i]` logit with respect to its
/// input, `[n, 3, h, w]`, of the evaluated model (batch norm on its running
/// statistics: the examples do not mix).
pub(crate) fn input_gradient<B: AutodiffBackend>(
    model: &ResNet<B>,
    inputs: Tensor<B, 4>,
    targets: &[usize],
) -> Tensor<B::InnerBackend, 4> {
    let inputs = inputs.require_grad();
    let logits = model.evaluate(inputs.clone());
    let grads = targets_sum(logits, targets).backward();
    inputs.grad(&grads).expect("the input takes part in the logits")
}

/// Σ_i `logits[i, targets[i]]`: one backward pass gives every example's
/// gradient of its own target (the examples do not mix).
pub(crate) fn targets_sum<B: burn::tensor::backend::Backend>(logits: Tensor<B, 2>, targets: &[usize]) -> Tensor<B, 1> {
    let [n, classes] = logits.dims();
    let mut pick = vec![0.0f32; n * classes];
    for (i, &t) in targets.iter().enumerate() {
        pick[i * classes + t] = 1.0;
    }
    let pick = Tensor::<B, 2>::from_data(TensorData::new(pick, [n, classes]), &logits.device());
    (logits * pick).sum()
}

/// `[n, 3, h, w]` → one map per example: Σ over channels of |value|.
pub(crate) fn channel_abs_sum<B: burn::tensor::backend::Backend>(grad: Tensor<B, 4>) -> Vec<PixelMap> {
    let [n, _, h, w] = grad.dims();
    let summed: Vec<f32> = grad.abs().sum_dim(1).into_data().to_vec().expect("f32 gradients");
    summed.chunks(h * w).take(n).map(|v| PixelMap { height: h, width: w, values: v.to_vec() }).collect()
}
