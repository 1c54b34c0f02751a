//! Peripheral blurring: a Gaussian filter over the part of the image
//! outside a disc around the centre (App. A.1).

use serde::{Deserialize, Serialize};

use super::{Manipulation, check_unit};
use grid_core::image::{Image, Mask, distance_from_centre};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Blur {
    /// The unaffected disc's radius, a fraction of the shorter side.
    pub radius: f64,
    /// The filter's standard deviation, a fraction of the shorter side (the
    /// visibility: the paper's 2–10 pixels of 224).
    pub sigma: f64,
}

impl Blur {
    /// The five visibility levels (App. A.4), least visible first: σ: 2 to 10 pixels of 224.
    pub const VISIBILITY: [f64; 5] = [2.0 / 224.0, 4.0 / 224.0, 6.0 / 224.0, 8.0 / 224.0, 10.0 / 224.0];
}

impl Default for Blur {
    /// φ = 36% of a square image, the paper's mean `%ER` for blurring; σ the
    /// middle level, 6 pixels of 224.
    fn default() -> Blur {
        Blur { radius: 0.45, sigma: 6.0 / 224.0 }
    }
}

impl Manipulation for Blur {
    fn region(&self, height: usize, width: usize) -> Mask {
        Mask::from_fn(height, width, |y, x| distance_from_centre(height, width, y, x) > self.radius)
    }

    fn apply(&self, image: &Image, _rng: &mut dyn rand::RngCore) -> Image {
        let (h, w) = (image.height(), image.width());
        let sigma = (self.sigma * h.min(w) as f64).max(1e-6);
        let kernel = gaussian(sigma);
        let region = self.region(h, w);
        let mut out = image.clone();
        for c in 0..3 {
            let plane = image.channel(c);
            // Separable: along rows, then along columns; mirrored at the edges.
            let rows = filter(plane, h, w, &kernel, |y, x| y * w + x);
            let both = filter(&rows, w, h, &kernel, |x, y| y * w + x);
            for y in 0..h {
                for x in 0..w {
                    if region.contains(y, x) {
                        let mut rgb = out.rgb(y, x);
                        rgb[c] = both[y * w + x];
                        out.set_rgb(y, x, rgb);
                    }
                }
            }
        }
        out
    }

    fn check(&self, height: usize, width: usize) -> Result<(), String> {
        check_unit("sigma", self.sigma)?;
        if self.sigma <= 0.0 {
            return Err("sigma must be above 0".into());
        }
        if self.radius.is_nan() || self.radius < 0.0 {
            return Err(format!("radius = {} must be at least 0", self.radius));
        }
        if self.region(height, width).count() == 0 {
            return Err(format!("radius {} leaves nothing to blur on {height}×{width}", self.radius));
        }
        Ok(())
    }
}

/// A normalised Gaussian kernel over `±⌈3σ⌉`.
fn gaussian(sigma: f64) -> Vec<f32> {
    let reach = (3.0 * sigma).ceil().max(1.0) as i64;
    let weights: Vec<f64> = (-reach..=reach).map(|d| (-(d * d) as f64 / (2.0 * sigma * sigma)).exp()).collect();
    let total: f64 = weights.iter().sum();
    weights.iter().map(|w| (w / total) as f32).collect()
}

/// Filters `lines` lines of `length` values each (addressed by
/// `at(line, position)`) with `kernel`, mirroring at both ends; the result
/// laid out as the input.
fn filter(values: &[f32], lines: usize, length: usize, kernel: &[f32], at: impl Fn(usize, usize) -> usize) -> Vec<f32> {
    let reach = (kernel.len() / 2) as i64;
    let mirror = |i: i64| -> usize {
        let n = length as i64;
        let period = 2 * n;
        let m = i.rem_euclid(period.max(1));
        (if m < n { m } else { period - 1 - m }) as usize
    };
    let mut out = vec![0.0f32; values.len()];
    for line in 0..lines {
        for p in 0..length {
            let sum: f32 =
                kernel.iter().enumerate().map(|(k, w)| w * values[at(line, mirror(p as i64 + k as i64 - reach))]).sum();
            out[at(line, p)] = sum.clamp(0.0, 1.0);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flat_image_stays_flat_and_the_kernel_sums_to_one() {
        let kernel = gaussian(2.0);
        assert_eq!(kernel.len(), 13);
        assert!((kernel.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        let flat = Image::filled(20, 20, [0.25, 0.5, 0.75]);
        let out = Blur::default().apply(&flat, &mut <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0));
        for (a, b) in flat.pixels().iter().zip(out.pixels()) {
            assert!((a - b).abs() < 1e-6);
        }
    }

    #[test]
    fn the_region_is_outside_the_disc() {
        let region = Blur { radius: 0.45, sigma: 0.01 }.region(224, 224);
        assert!((region.share() - (1.0 - std::f64::consts::PI * 0.45 * 0.45)).abs() < 0.01, "{}", region.share());
        assert!(region.contains(0, 0) && !region.contains(112, 112));
    }
}
