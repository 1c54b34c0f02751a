//! Images for Zhou et al.'s image protocol (2022, section 5; issue 47): RGB
//! pixels in `[0, 1]`, planar (channel, row, column) as convolutions read
//! them, and masks over pixels, which say where a manipulation acted (its
//! effective region φ, what `Attr%` sums attribution over).
//!
//! - [`decode`]: image files to [`Image`]s (centre crop, resize).
//! - [`folder`]: a dataset as class folders of images, fingerprinted.
//! - [`color`]: RGB ↔ HSB, where brightness and hue are shifted; RGB → CIELAB.
//! - [`slic`]: SLIC superpixels, the features LIME and KernelSHAP hide.
//! - [`samples`]: the embedded photographs and datasets of their crops.
//! - [`store`]: sets of images in one file, the image steps' payloads.
//!
//! The five manipulations that plant image shortcuts are in
//! `grid-methods` (`shortcut::image`), beside the text ones.

pub mod color;
pub mod decode;
pub mod folder;
pub mod samples;
pub mod slic;
pub mod store;

/// ImageNet's per-channel mean and standard deviation (RGB, on `[0, 1]`),
/// which the paper and torchvision's ResNets normalise with.
pub const IMAGENET_MEAN: [f32; 3] = [0.485, 0.456, 0.406];
pub const IMAGENET_STD: [f32; 3] = [0.229, 0.224, 0.225];

/// What is wrong with pixels handed to [`Image::new`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ImageError {
    #[error("{height}×{width} RGB needs {expected} values, got {got}")]
    Length { height: usize, width: usize, expected: usize, got: usize },
    #[error("pixel value {value} at index {index} is outside [0, 1]")]
    OutOfRange { index: usize, value: f32 },
    #[error("an image needs at least one pixel ({height}×{width})")]
    Empty { height: usize, width: usize },
}

/// An RGB image, values in `[0, 1]`, stored planar: `pixels[c·h·w + y·w + x]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Image {
    height: usize,
    width: usize,
    pixels: Vec<f32>,
}

impl Image {
    /// Checked: `3 · height · width` values, each in `[0, 1]`.
    pub fn new(height: usize, width: usize, pixels: Vec<f32>) -> Result<Image, ImageError> {
        if height == 0 || width == 0 {
            return Err(ImageError::Empty { height, width });
        }
        let expected = 3 * height * width;
        if pixels.len() != expected {
            return Err(ImageError::Length { height, width, expected, got: pixels.len() });
        }
        if let Some((index, &value)) = pixels.iter().enumerate().find(|(_, v)| !(0.0..=1.0).contains(*v)) {
            return Err(ImageError::OutOfRange { index, value });
        }
        Ok(Image { height, width, pixels })
    }

    /// Every pixel the colour `rgb` (clamped to `[0, 1]`).
    pub fn filled(height: usize, width: usize, rgb: [f32; 3]) -> Image {
        let (height, width) = (height.max(1), width.max(1));
        let pixels = rgb.iter().flat_map(|&v| std::iter::repeat_n(v.clamp(0.0, 1.0), height * width)).collect();
        Image { height, width, pixels }
    }

    pub fn height(&self) -> usize {
        self.height
    }

    pub fn width(&self) -> usize {
        self.width
    }

    /// The planar values, `3 · height · width` of them.
    pub fn pixels(&self) -> &[f32] {
        &self.pixels
    }

    fn index(&self, channel: usize, y: usize, x: usize) -> usize {
        (channel * self.height + y) * self.width + x
    }

    /// The colour at row `y`, column `x`.
    pub fn rgb(&self, y: usize, x: usize) -> [f32; 3] {
        [0, 1, 2].map(|c| self.pixels[self.index(c, y, x)])
    }

    /// Sets the colour at row `y`, column `x` (clamped to `[0, 1]`).
    pub fn set_rgb(&mut self, y: usize, x: usize, rgb: [f32; 3]) {
        for (c, v) in rgb.into_iter().enumerate() {
            let i = self.index(c, y, x);
            self.pixels[i] = v.clamp(0.0, 1.0);
        }
    }

    /// One channel as a plane, row by row.
    pub fn channel(&self, channel: usize) -> &[f32] {
        let plane = self.height * self.width;
        &self.pixels[channel * plane..(channel + 1) * plane]
    }

    /// `(value − mean) / std` per channel: a model's input.
    pub fn normalised(&self, mean: [f32; 3], std: [f32; 3]) -> Vec<f32> {
        let plane = self.height * self.width;
        self.pixels.iter().enumerate().map(|(i, v)| (v - mean[i / plane]) / std[i / plane]).collect()
    }
}

/// A set of pixels of an `height × width` image: a manipulation's effective
/// region.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mask {
    height: usize,
    width: usize,
    inside: Vec<bool>,
}

impl Mask {
    /// The pixels `(y, x)` for which `inside` holds.
    pub fn from_fn(height: usize, width: usize, inside: impl Fn(usize, usize) -> bool) -> Mask {
        let inside = (0..height * width).map(|i| inside(i / width, i % width)).collect();
        Mask { height, width, inside }
    }

    pub fn height(&self) -> usize {
        self.height
    }

    pub fn width(&self) -> usize {
        self.width
    }

    pub fn contains(&self, y: usize, x: usize) -> bool {
        self.inside[y * self.width + x]
    }

    /// Row by row, `true` inside.
    pub fn as_slice(&self) -> &[bool] {
        &self.inside
    }

    /// Pixels inside.
    pub fn count(&self) -> usize {
        self.inside.iter().filter(|&&b| b).count()
    }

    /// The region's share of the image: the paper's `%ER` (as a fraction).
    pub fn share(&self) -> f64 {
        self.count() as f64 / self.inside.len().max(1) as f64
    }

    /// The pixels in either mask (φ∪ of two classes' manipulations).
    pub fn union(&self, other: &Mask) -> Mask {
        assert_eq!((self.height, self.width), (other.height, other.width), "masks of one image size");
        let inside = self.inside.iter().zip(&other.inside).map(|(a, b)| *a || *b).collect();
        Mask { height: self.height, width: self.width, inside }
    }
}

/// A centre-relative distance: from pixel `(y, x)`'s centre to the image's
/// centre, as a fraction of the shorter side (so that regions scale with
/// the resolution).
pub fn distance_from_centre(height: usize, width: usize, y: usize, x: usize) -> f64 {
    let dy = y as f64 + 0.5 - height as f64 / 2.0;
    let dx = x as f64 + 0.5 - width as f64 / 2.0;
    (dy * dy + dx * dx).sqrt() / height.min(width) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pixels_are_checked_and_addressed_planar() {
        assert!(matches!(Image::new(2, 2, vec![0.5; 11]), Err(ImageError::Length { expected: 12, .. })));
        assert!(matches!(Image::new(1, 1, vec![0.5, 1.5, 0.0]), Err(ImageError::OutOfRange { index: 1, .. })));
        assert!(matches!(Image::new(0, 3, vec![]), Err(ImageError::Empty { .. })));
        let pixels: Vec<f32> = (0..12).map(|i| i as f32 / 12.0).collect();
        let image = Image::new(2, 2, pixels).unwrap();
        // Red plane first, then green, then blue; rows within a plane.
        assert_eq!(image.rgb(1, 0), [2.0 / 12.0, 6.0 / 12.0, 10.0 / 12.0]);
        assert_eq!(image.channel(2), &[8.0 / 12.0, 9.0 / 12.0, 10.0 / 12.0, 11.0 / 12.0]);
        let mut changed = image.clone();
        changed.set_rgb(0, 1, [2.0, -1.0, 0.25]);
        assert_eq!(changed.rgb(0, 1), [1.0, 0.0, 0.25]);
    }

    #[test]
    fn normalisation_is_per_channel() {
        let image = Image::filled(1, 2, [0.485, 0.456 + 0.224, 0.0]);
        let input = image.normalised(IMAGENET_MEAN, IMAGENET_STD);
        assert!(input[0].abs() < 1e-6 && input[1].abs() < 1e-6);
        assert!((input[2] - 1.0).abs() < 1e-5 && (input[3] - 1.0).abs() < 1e-5);
        assert!((input[4] + 0.406 / 0.225).abs() < 1e-5);
    }

    #[test]
    fn masks_count_their_share_and_unite() {
        let left = Mask::from_fn(4, 4, |_, x| x < 1);
        let top = Mask::from_fn(4, 4, |y, _| y < 2);
        assert_eq!(left.count(), 4);
        assert_eq!(top.share(), 0.5);
        assert_eq!(left.union(&top).count(), 8 + 2);
        assert!(left.contains(3, 0) && !left.contains(3, 1));
    }
}
