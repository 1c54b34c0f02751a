//! Central brightness shift: the centre of the image dimmed in HSB space,
//! most at the centre and fading to nothing at a radius (App. A.1).

use serde::{Deserialize, Serialize};

use super::{Manipulation, check_unit};
use grid_core::image::color::{hsb_to_rgb, rgb_to_hsb};
use grid_core::image::{Image, Mask, distance_from_centre};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Brightness {
    /// The dimmed disc's radius, a fraction of the shorter side.
    pub radius: f64,
    /// The brightness taken away at the centre, on `[0, 1]` (the
    /// visibility: the paper's 0.1–0.3).
    pub shift: f64,
}

impl Brightness {
    /// The five visibility levels (App. A.4), least visible first: the shift of the brightness component.
    pub const VISIBILITY: [f64; 5] = [0.1, 0.15, 0.2, 0.25, 0.3];
}

impl Default for Brightness {
    /// φ ≈ 38% of a square image; the middle visibility level, 0.2.
    fn default() -> Brightness {
        Brightness { radius: 0.35, shift: 0.2 }
    }
}

impl Manipulation for Brightness {
    fn region(&self, height: usize, width: usize) -> Mask {
        Mask::from_fn(height, width, |y, x| distance_from_centre(height, width, y, x) < self.radius)
    }

    fn apply(&self, image: &Image, _rng: &mut dyn rand::RngCore) -> Image {
        let (h, w) = (image.height(), image.width());
        let mut out = image.clone();
        for y in 0..h {
            for x in 0..w {
                let distance = distance_from_centre(h, w, y, x);
                if distance >= self.radius {
                    continue;
                }
                // Linear from the full shift at the centre to none at the radius.
                let shift = (self.shift * (1.0 - distance / self.radius)) as f32;
                let [hue, saturation, brightness] = rgb_to_hsb(image.rgb(y, x));
                out.set_rgb(y, x, hsb_to_rgb([hue, saturation, (brightness - shift).max(0.0)]));
            }
        }
        out
    }

    fn check(&self, height: usize, width: usize) -> Result<(), String> {
        check_unit("shift", self.shift)?;
        if self.region(height, width).count() == 0 {
            return Err(format!("radius {} dims no pixel of {height}×{width}", self.radius));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_centre_loses_the_whole_shift_and_the_edge_nothing() {
        let grey = Image::filled(41, 41, [0.6; 3]);
        let rng = &mut <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(0);
        let out = Brightness { radius: 0.4, shift: 0.3 }.apply(&grey, rng);
        let centre = out.rgb(20, 20)[0];
        // The centre pixel's centre is the image's: the full shift.
        assert!((centre - 0.3).abs() < 1e-6, "{centre}");
        assert_eq!(out.rgb(0, 0), [0.6; 3]);
        // Halfway out, half the shift (distance 8.2 of 41 = 0.2 = half the radius).
        let half = out.rgb(20, 28)[0];
        assert!((half - (0.6 - 0.3 * (1.0 - 8.0 / 41.0 / 0.4) as f32)).abs() < 1e-5, "{half}");
    }
}
