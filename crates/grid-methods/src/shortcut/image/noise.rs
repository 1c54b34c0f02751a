//! Striped noise: pixels of a vertical stripe replaced, each with a
//! probability, by a uniformly random colour (App. A.1).

use serde::{Deserialize, Serialize};

use super::{Manipulation, check_stripe, check_unit, stripe_columns, uniform};
use grid_core::image::{Image, Mask};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Noise {
    /// The stripe's columns, `[from, to)` as fractions of the width.
    pub from: f64,
    pub to: f64,
    /// The chance a pixel is replaced (the visibility: the paper's 0.02–0.1).
    pub probability: f64,
}

impl Noise {
    /// The five visibility levels (App. A.4), least visible first: the probability that a pixel is replaced.
    pub const VISIBILITY: [f64; 5] = [0.02, 0.04, 0.06, 0.08, 0.1];
}

impl Default for Noise {
    /// φ = 30% of the image; the middle visibility level, 0.06.
    fn default() -> Noise {
        Noise { from: 0.35, to: 0.65, probability: 0.06 }
    }
}

impl Manipulation for Noise {
    fn region(&self, height: usize, width: usize) -> Mask {
        let (left, right) = stripe_columns(self.from, self.to, width);
        Mask::from_fn(height, width, |_, x| (left..right).contains(&x))
    }

    fn apply(&self, image: &Image, rng: &mut dyn rand::RngCore) -> Image {
        let (h, w) = (image.height(), image.width());
        let (left, right) = stripe_columns(self.from, self.to, w);
        let mut out = image.clone();
        for y in 0..h {
            for x in left..right {
                // One draw per pixel whether replaced or not: the stream
                // does not depend on the image.
                let replace = uniform(rng) < self.probability;
                let colour = [uniform(rng) as f32, uniform(rng) as f32, uniform(rng) as f32];
                if replace {
                    out.set_rgb(y, x, colour);
                }
            }
        }
        out
    }

    fn check(&self, _height: usize, width: usize) -> Result<(), String> {
        check_unit("probability", self.probability)?;
        check_stripe(self.from, self.to, width)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shortcut::image::tests::{changed, textured};

    #[test]
    fn about_the_probability_of_the_stripe_is_replaced() {
        let image = textured(100, 100, 3);
        let noise = Noise { from: 0.2, to: 0.7, probability: 0.1 };
        let rng = &mut <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(11);
        let share = changed(&image, &noise.apply(&image, rng)).count() as f64 / noise.region(100, 100).count() as f64;
        // 5,000 pixels: the standard error of the share is 0.004.
        assert!((share - 0.1).abs() < 0.015, "{share}");
    }
}
