//! What the perturbation methods over superpixels share ([`super::lime`],
//! [`super::kernel_shap`]): a classifier asked for class probabilities of a
//! batch of images, and images with some segments hidden.

use burn::module::AutodiffModule;
use burn::tensor::activation::softmax;
use burn::tensor::backend::{AutodiffBackend, Backend};
use grid_core::image::Image;
use grid_core::image::slic::Segments;
use grid_core::model::resnet::ResNet;

use super::{PixelMap, batch};

/// Class probabilities of images: what LIME and KernelSHAP query. A trait,
/// so that their tests can ask models whose answers are known by hand.
pub trait Probabilities {
    /// One row of class probabilities per image.
    fn probabilities(&self, images: &[Image]) -> Vec<Vec<f64>>;
}

/// A ResNet evaluated (running batch-norm statistics, no gradients), in
/// batches of at most `per_eval` images.
pub struct Evaluated<B: Backend> {
    model: ResNet<B>,
    per_eval: usize,
    device: B::Device,
}

impl<B: Backend> Evaluated<B> {
    pub fn new<A: AutodiffBackend<InnerBackend = B>>(model: &ResNet<A>, per_eval: usize, device: &B::Device) -> Self {
        Evaluated { model: model.valid(), per_eval: per_eval.max(1), device: device.clone() }
    }
}

impl<B: Backend> Probabilities for Evaluated<B> {
    fn probabilities(&self, images: &[Image]) -> Vec<Vec<f64>> {
        let mut rows = Vec::with_capacity(images.len());
        for chunk in images.chunks(self.per_eval) {
            let refs: Vec<&Image> = chunk.iter().collect();
            let logits = self.model.forward(batch::<B>(&refs, &self.device));
            let [n, classes] = logits.dims();
            let p: Vec<f32> = softmax(logits, 1).into_data().to_vec().expect("f32 probabilities");
            rows.extend(p.chunks(classes).take(n).map(|r| r.iter().map(|&v| f64::from(v)).collect::<Vec<f64>>()));
        }
        rows
    }
}

/// What a hidden segment is painted with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Hiding {
    /// The segment's own mean colour (LIME's `hide_color=None`, its default).
    SegmentMean,
    /// One colour for every segment.
    Colour([f32; 3]),
}

impl Hiding {
    /// The colour each segment of `image` is hidden with.
    pub fn colours(self, image: &Image, segments: &Segments) -> Vec<[f32; 3]> {
        match self {
            Hiding::SegmentMean => segments.mean_colours(image),
            Hiding::Colour(rgb) => vec![rgb.map(|v| v.clamp(0.0, 1.0)); segments.count()],
        }
    }
}

/// `image` with every segment whose `keep` is false painted `colours[s]`.
pub fn hide(image: &Image, segments: &Segments, keep: &[bool], colours: &[[f32; 3]]) -> Image {
    let mut out = image.clone();
    for y in 0..image.height() {
        for x in 0..image.width() {
            let s = segments.at(y, x);
            if !keep[s] {
                out.set_rgb(y, x, colours[s]);
            }
        }
    }
    out
}

/// The probability of class `target` for `image` with each of `keeps`'
/// hidden segments painted as `hiding` says: what the surrogate fits read.
pub fn target_probabilities(
    model: &impl Probabilities,
    image: &Image,
    segments: &Segments,
    keeps: &[Vec<bool>],
    hiding: Hiding,
    target: usize,
) -> Vec<f64> {
    let colours = hiding.colours(image, segments);
    let perturbed: Vec<Image> = keeps.iter().map(|k| hide(image, segments, k, &colours)).collect();
    model.probabilities(&perturbed).iter().map(|p| p[target]).collect()
}

/// A map that gives every pixel its segment's `|value|`.
pub fn segment_map(segments: &Segments, values: &[f64]) -> PixelMap {
    let values = segments.labels().iter().map(|&s| values[s as usize].abs() as f32).collect();
    PixelMap { height: segments.height(), width: segments.width(), values }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A "classifier" of two classes whose second probability is the mean
    /// red of the image: additive over segments when hidden ones go black.
    pub(crate) struct MeanRed;

    impl Probabilities for MeanRed {
        fn probabilities(&self, images: &[Image]) -> Vec<Vec<f64>> {
            images
                .iter()
                .map(|i| {
                    let red = i.channel(0).iter().map(|&v| f64::from(v)).sum::<f64>() / i.channel(0).len() as f64;
                    vec![1.0 - red, red]
                })
                .collect()
        }
    }

    /// A 4 × 4 image in four 2 × 2 quadrants of reds 0.2, 0.4, 0.6, 0.8.
    pub(crate) fn quadrants() -> (Image, Segments) {
        let label = |y: usize, x: usize| (y / 2 * 2 + x / 2) as u32;
        let labels: Vec<u32> = (0..16).map(|p| label(p / 4, p % 4)).collect();
        let mut image = Image::filled(4, 4, [0.0, 0.5, 0.5]);
        for (p, &label) in labels.iter().enumerate() {
            let red = 0.2 * (label + 1) as f32;
            image.set_rgb(p / 4, p % 4, [red, 0.5, 0.5]);
        }
        (image, Segments::new(4, 4, labels).unwrap())
    }

    #[test]
    fn hiding_paints_only_the_hidden_segments() {
        let (image, segments) = quadrants();
        let colours = Hiding::Colour([0.0; 3]).colours(&image, &segments);
        let hidden = hide(&image, &segments, &[true, false, true, true], &colours);
        for p in 0..16 {
            let (y, x) = (p / 4, p % 4);
            let want = if segments.at(y, x) == 1 { [0.0; 3] } else { image.rgb(y, x) };
            assert_eq!(hidden.rgb(y, x), want);
        }
        // Each quadrant is one colour: its mean hides nothing.
        let means = Hiding::SegmentMean.colours(&image, &segments);
        assert_eq!(hide(&image, &segments, &[false; 4], &means), image);
        let map = segment_map(&segments, &[1.0, -2.0, 0.0, 3.0]);
        assert_eq!(&map.values[..4], &[1.0, 1.0, 2.0, 2.0]);
    }
}
