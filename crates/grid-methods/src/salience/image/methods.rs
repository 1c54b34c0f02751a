//! The pixel methods by name, as grid files list them, and one entry point
//! that runs any of them: what the pipeline's image attribute step calls.
//! A new method is its file in this folder, a variant here and its arm in
//! [`explain`].

use std::fmt;
use std::str::FromStr;

use burn::tensor::backend::AutodiffBackend;
use grid_core::image::Image;
use grid_core::image::slic::{Segments, SlicOptions, slic};
use grid_core::model::resnet::ResNet;
use serde::{Deserialize, Serialize};

use super::PixelMap;
use super::gradcam::gradcam;
use super::gradient::gradient;
use super::gradient_shap::{GradientShapOptions, gradient_shap};
use super::kernel_shap::{KernelShapOptions, kernel_shap};
use super::lime::{LimeOptions, lime};
use super::perturb::Evaluated;
use super::smoothgrad::{SmoothGradOptions, smoothgrad};

/// Zhou et al.'s five saliency maps, with SHAP in its two readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PixelMethod {
    Gradient,
    #[serde(rename = "smoothgrad")]
    SmoothGrad,
    #[serde(rename = "gradcam")]
    GradCam,
    Lime,
    /// KernelSHAP over superpixels.
    KernelShap,
    /// Expected gradients against a background of training images.
    GradientShap,
}

impl PixelMethod {
    pub const ALL: [PixelMethod; 6] = [
        PixelMethod::Gradient,
        PixelMethod::SmoothGrad,
        PixelMethod::GradCam,
        PixelMethod::Lime,
        PixelMethod::KernelShap,
        PixelMethod::GradientShap,
    ];

    pub fn name(self) -> &'static str {
        match self {
            PixelMethod::Gradient => "gradient",
            PixelMethod::SmoothGrad => "smoothgrad",
            PixelMethod::GradCam => "gradcam",
            PixelMethod::Lime => "lime",
            PixelMethod::KernelShap => "kernel-shap",
            PixelMethod::GradientShap => "gradient-shap",
        }
    }

    /// Zhou et al.'s SHAP, in either reading: KernelSHAP over superpixels or
    /// GradientSHAP.
    pub fn is_shap(self) -> bool {
        matches!(self, PixelMethod::KernelShap | PixelMethod::GradientShap)
    }

    /// A map's multiply-adds in forward passes' worth of its model: an input
    /// gradient costs about a forward pass again (each layer's input
    /// gradient, no weight gradients), so a gradient is 2; SmoothGrad and
    /// GradientSHAP take one per sample; GradCAM's backward pass stops at
    /// the last block (through the pooling and the head only), so 1; LIME
    /// and KernelSHAP evaluate their perturbed images. What the cost model
    /// prices and `grid bench --resnet` divides by.
    pub fn forward_passes(self, settings: &PixelSettings) -> f64 {
        match self {
            PixelMethod::Gradient => 2.0,
            PixelMethod::SmoothGrad => 2.0 * settings.smoothgrad_samples as f64,
            PixelMethod::GradientShap => 2.0 * settings.gradient_shap_samples as f64,
            PixelMethod::GradCam => 1.0,
            PixelMethod::Lime | PixelMethod::KernelShap => settings.perturbation_samples as f64,
        }
    }

    /// The settings that change this method's maps (what its cache key
    /// holds): a change to another method's leaves its maps cached.
    pub fn settings_json(self, settings: &PixelSettings) -> serde_json::Value {
        match self {
            PixelMethod::Gradient | PixelMethod::GradCam => serde_json::json!({}),
            PixelMethod::SmoothGrad => serde_json::json!({
                "samples": settings.smoothgrad_samples, "spread": settings.smoothgrad_spread, "seed": settings.seed,
            }),
            PixelMethod::Lime | PixelMethod::KernelShap => serde_json::json!({
                "samples": settings.perturbation_samples, "superpixels": settings.superpixels, "seed": settings.seed,
            }),
            PixelMethod::GradientShap => serde_json::json!({
                "samples": settings.gradient_shap_samples, "background": settings.background, "seed": settings.seed,
            }),
        }
    }
}

impl fmt::Display for PixelMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PixelMethod {
    type Err = String;

    fn from_str(s: &str) -> Result<PixelMethod, String> {
        PixelMethod::ALL.into_iter().find(|m| m.name() == s).ok_or_else(|| {
            let names: Vec<&str> = PixelMethod::ALL.iter().map(|m| m.name()).collect();
            format!("unknown pixel method `{s}` (there are {})", names.join(", "))
        })
    }
}

/// How the sampled methods sample: one setting per family of methods.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PixelSettings {
    /// SLIC superpixels per image, for LIME and KernelSHAP.
    pub superpixels: usize,
    /// Noisy copies per image (the paper: 50).
    pub smoothgrad_samples: usize,
    /// The noise's σ as a share of the image's value range (the paper: 0.15).
    pub smoothgrad_spread: f32,
    /// Perturbed images per explained image, for LIME and KernelSHAP.
    pub perturbation_samples: usize,
    /// Background draws per image for GradientSHAP.
    pub gradient_shap_samples: usize,
    /// Training images GradientSHAP draws its baselines from.
    pub background: usize,
    /// Images per forward pass of the perturbation methods: speed only.
    pub per_eval: usize,
    pub seed: u64,
}

impl Default for PixelSettings {
    fn default() -> PixelSettings {
        PixelSettings {
            superpixels: 16,
            smoothgrad_samples: 50,
            smoothgrad_spread: 0.15,
            perturbation_samples: 200,
            gradient_shap_samples: 64,
            background: 32,
            per_eval: 64,
            seed: 0,
        }
    }
}

/// `method`'s maps of `images` for their `targets` classes. `streams` name
/// each image's random stream (its index in the test set), `background`
/// is GradientSHAP's (only it reads it).
#[allow(clippy::too_many_arguments)]
pub fn explain<B: AutodiffBackend>(
    method: PixelMethod,
    settings: &PixelSettings,
    model: &ResNet<B>,
    images: &[&Image],
    targets: &[usize],
    streams: &[u64],
    background: &[&Image],
    device: &B::Device,
) -> Vec<PixelMap> {
    let segments = || -> Vec<Segments> {
        let options = SlicOptions { segments: settings.superpixels, ..SlicOptions::default() };
        images.iter().map(|i| slic(i, options)).collect()
    };
    let seed = settings.seed;
    match method {
        PixelMethod::Gradient => gradient(model, images, targets, device),
        PixelMethod::GradCam => gradcam(model, images, targets, device),
        PixelMethod::SmoothGrad => {
            let options =
                SmoothGradOptions { samples: settings.smoothgrad_samples, spread: settings.smoothgrad_spread, seed };
            smoothgrad(model, images, targets, streams, options, device)
        }
        PixelMethod::Lime => {
            let probabilities = Evaluated::<B::InnerBackend>::new(model, settings.per_eval, device);
            let options = LimeOptions { samples: settings.perturbation_samples, seed, ..LimeOptions::default() };
            lime(&probabilities, images, &segments(), targets, streams, options)
        }
        PixelMethod::KernelShap => {
            let probabilities = Evaluated::<B::InnerBackend>::new(model, settings.per_eval, device);
            let options =
                KernelShapOptions { samples: settings.perturbation_samples, seed, ..KernelShapOptions::default() };
            kernel_shap(&probabilities, images, &segments(), targets, streams, options)
        }
        PixelMethod::GradientShap => {
            let options =
                GradientShapOptions { samples: settings.gradient_shap_samples, per_eval: settings.per_eval, seed };
            gradient_shap(model, images, targets, streams, background, options, device)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_names_list_the_known() {
        for method in PixelMethod::ALL {
            assert_eq!(method.name().parse::<PixelMethod>(), Ok(method));
            let json = serde_json::to_string(&method).unwrap();
            assert_eq!(json, format!("\"{}\"", method.name()));
        }
        let err = "shap".parse::<PixelMethod>().unwrap_err();
        assert!(err.contains("kernel-shap") && err.contains("gradient-shap"), "{err}");
    }

    #[test]
    fn a_key_holds_only_its_own_methods_settings() {
        let base = PixelSettings::default();
        let more_lime = PixelSettings { perturbation_samples: 500, ..base };
        assert_eq!(PixelMethod::Gradient.settings_json(&base), PixelMethod::Gradient.settings_json(&more_lime));
        assert_eq!(PixelMethod::SmoothGrad.settings_json(&base), PixelMethod::SmoothGrad.settings_json(&more_lime));
        assert_ne!(PixelMethod::Lime.settings_json(&base), PixelMethod::Lime.settings_json(&more_lime));
    }
}
