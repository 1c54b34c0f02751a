//! Striped hue shift: the hue of a vertical stripe raised, then lowered,
//! down its length in one period of a sine (App. A.1).

use serde::{Deserialize, Serialize};

use super::{Manipulation, check_stripe, check_unit, stripe_columns};
use grid_core::image::color::{hsb_to_rgb, rgb_to_hsb};
use grid_core::image::{Image, Mask};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Hue {
    /// The stripe's columns, `[from, to)` as fractions of the width.
    pub from: f64,
    pub to: f64,
    /// The sine's amplitude on the hue circle, `[0, 1]` (the visibility:
    /// the paper's 0.05–0.25).
    pub shift: f64,
}

impl Hue {
    /// The five visibility levels (App. A.4), least visible first: the shift of the hue component.
    pub const VISIBILITY: [f64; 5] = [0.05, 0.1, 0.15, 0.2, 0.25];
}

impl Default for Hue {
    /// φ = 30% of the image; the middle visibility level, 0.15.
    fn default() -> Hue {
        Hue { from: 0.35, to: 0.65, shift: 0.15 }
    }
}

impl Manipulation for Hue {
    fn region(&self, height: usize, width: usize) -> Mask {
        let (left, right) = stripe_columns(self.from, self.to, width);
        Mask::from_fn(height, width, |_, x| (left..right).contains(&x))
    }

    fn apply(&self, image: &Image, _rng: &mut dyn rand::RngCore) -> Image {
        let (h, w) = (image.height(), image.width());
        let (left, right) = stripe_columns(self.from, self.to, w);
        let mut out = image.clone();
        for y in 0..h {
            // Up in the stripe's top half, down in its bottom half.
            let phase = 2.0 * std::f64::consts::PI * (y as f64 + 0.5) / h as f64;
            let shift = (self.shift * phase.sin()) as f32;
            for x in left..right {
                let [hue, saturation, brightness] = rgb_to_hsb(image.rgb(y, x));
                out.set_rgb(y, x, hsb_to_rgb([hue + shift, saturation, brightness]));
            }
        }
        out
    }

    fn check(&self, _height: usize, width: usize) -> Result<(), String> {
        check_unit("shift", self.shift)?;
        check_stripe(self.from, self.to, width)
    }
}
