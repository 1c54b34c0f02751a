//! Zhou et al.'s five image manipulations (2022, App. A.1), the image
//! shortcuts: artifacts a dataset could pick up by accident, planted in the
//! images of the positive class after labels are reassigned at random.
//!
//! Each has an *effective region* φ: the pixels any instantiation of it may
//! change, whatever its random draw (the noise, the watermark's place and
//! digits) and its visibility. `Attr%` sums attribution over φ, and `%ER` is
//! φ's share of the image. Sizes are fractions of the image's shorter side,
//! so that one setting serves a 224-pixel grid and a 32-pixel one.
//!
//! One file per manipulation; a new one is a file and a variant of
//! [`ImageShortcut`]. [`dataset`] reassigns labels and manipulates a set;
//! [`verification`] judges a model trained on it.

mod blur;
mod brightness;
pub mod dataset;
mod hue;
mod noise;
pub mod verification;
mod watermark;

pub use blur::Blur;
pub use brightness::Brightness;
pub use hue::Hue;
pub use noise::Noise;
pub use watermark::Watermark;

use rand::Rng;
use serde::{Deserialize, Serialize};

use grid_core::image::{Image, Mask};

/// What every manipulation does.
pub trait Manipulation {
    /// The pixels any instantiation may change on a `height × width` image.
    fn region(&self, height: usize, width: usize) -> Mask;
    /// The manipulated image; pixels outside [`region`](Self::region) are
    /// left bit for bit as they were.
    fn apply(&self, image: &Image, rng: &mut dyn rand::RngCore) -> Image;
    /// Whether the settings make sense on a `height × width` image (a
    /// region inside it and not empty, a watermark that fits its box).
    fn check(&self, height: usize, width: usize) -> Result<(), String>;
}

/// One of the five visibility levels of a manipulation (App. A.4), from 1,
/// the least visible, to 5; 3 is each manipulation's default. The level sets
/// the manipulation's strength (blur σ, brightness or hue shift, noise
/// probability, font size) and nothing else: φ stays the same.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "u8", into = "u8")]
pub struct Visibility(u8);

impl Visibility {
    pub const LEVELS: std::ops::RangeInclusive<u8> = 1..=5;
    /// The level of every default manipulation.
    pub const MIDDLE: Visibility = Visibility(3);

    pub fn get(self) -> u8 {
        self.0
    }

    /// The level's value among a manipulation's five, least visible first.
    fn pick(self, values: [f64; 5]) -> f64 {
        values[usize::from(self.0 - 1)]
    }
}

impl TryFrom<u8> for Visibility {
    type Error = String;
    fn try_from(level: u8) -> Result<Visibility, String> {
        if Visibility::LEVELS.contains(&level) {
            Ok(Visibility(level))
        } else {
            Err(format!("visibility level {level} is not one of 1 to 5 (Zhou et al., App. A.4)"))
        }
    }
}

impl From<Visibility> for u8 {
    fn from(v: Visibility) -> u8 {
        v.0
    }
}

impl std::fmt::Display for Visibility {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Which of the five a manipulation is, without its settings: what a
/// report's rows and findings name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ManipulationKind {
    Blur,
    Brightness,
    Hue,
    Noise,
    Watermark,
}

impl ManipulationKind {
    pub fn name(self) -> &'static str {
        match self {
            ManipulationKind::Blur => "blur",
            ManipulationKind::Brightness => "brightness",
            ManipulationKind::Hue => "hue",
            ManipulationKind::Noise => "noise",
            ManipulationKind::Watermark => "watermark",
        }
    }
}

impl std::fmt::Display for ManipulationKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One of the five, with its settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum ImageShortcut {
    Blur(Blur),
    Brightness(Brightness),
    Hue(Hue),
    Noise(Noise),
    Watermark(Watermark),
}

impl ImageShortcut {
    /// The names grid files use.
    pub const NAMES: [&'static str; 5] = ["blur", "brightness", "hue", "noise", "watermark"];

    /// The manipulation `name` with its default settings: the paper's
    /// middle visibility level (App. A.4), regions near the paper's `%ER`.
    pub fn default_of(name: &str) -> Option<ImageShortcut> {
        Some(match name {
            "blur" => ImageShortcut::Blur(Blur::default()),
            "brightness" => ImageShortcut::Brightness(Brightness::default()),
            "hue" => ImageShortcut::Hue(Hue::default()),
            "noise" => ImageShortcut::Noise(Noise::default()),
            "watermark" => ImageShortcut::Watermark(Watermark::default()),
            _ => return None,
        })
    }

    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    pub fn kind(&self) -> ManipulationKind {
        match self {
            ImageShortcut::Blur(_) => ManipulationKind::Blur,
            ImageShortcut::Brightness(_) => ManipulationKind::Brightness,
            ImageShortcut::Hue(_) => ManipulationKind::Hue,
            ImageShortcut::Noise(_) => ManipulationKind::Noise,
            ImageShortcut::Watermark(_) => ManipulationKind::Watermark,
        }
    }

    /// The setting a visibility level sets, as grid files name it.
    pub fn visibility_setting(&self) -> &'static str {
        match self {
            ImageShortcut::Blur(_) => "sigma",
            ImageShortcut::Brightness(_) | ImageShortcut::Hue(_) => "shift",
            ImageShortcut::Noise(_) => "probability",
            ImageShortcut::Watermark(_) => "font",
        }
    }

    /// This manipulation at visibility `level`: the paper's value for it
    /// (App. A.4; lengths as fractions of 224 pixels), every other setting
    /// as it was.
    pub fn at_visibility(&self, level: Visibility) -> ImageShortcut {
        let mut out = self.clone();
        match &mut out {
            ImageShortcut::Blur(m) => m.sigma = level.pick(Blur::VISIBILITY),
            ImageShortcut::Brightness(m) => m.shift = level.pick(Brightness::VISIBILITY),
            ImageShortcut::Hue(m) => m.shift = level.pick(Hue::VISIBILITY),
            ImageShortcut::Noise(m) => m.probability = level.pick(Noise::VISIBILITY),
            ImageShortcut::Watermark(m) => m.font = level.pick(Watermark::VISIBILITY),
        }
        out
    }

    fn manipulation(&self) -> &dyn Manipulation {
        match self {
            ImageShortcut::Blur(m) => m,
            ImageShortcut::Brightness(m) => m,
            ImageShortcut::Hue(m) => m,
            ImageShortcut::Noise(m) => m,
            ImageShortcut::Watermark(m) => m,
        }
    }
}

impl Manipulation for ImageShortcut {
    fn region(&self, height: usize, width: usize) -> Mask {
        self.manipulation().region(height, width)
    }
    fn apply(&self, image: &Image, rng: &mut dyn rand::RngCore) -> Image {
        self.manipulation().apply(image, rng)
    }
    fn check(&self, height: usize, width: usize) -> Result<(), String> {
        self.manipulation().check(height, width).map_err(|e| format!("{}: {e}", self.name()))
    }
}

/// The columns `[left, right)` of a vertical stripe given as fractions of
/// the width (the paper's "upper" and "lower" positions).
fn stripe_columns(from: f64, to: f64, width: usize) -> (usize, usize) {
    let at = |f: f64| ((f.clamp(0.0, 1.0) * width as f64).round() as usize).min(width);
    (at(from), at(to))
}

/// A stripe's settings, checked.
fn check_stripe(from: f64, to: f64, width: usize) -> Result<(), String> {
    if !(0.0..=1.0).contains(&from) || !(0.0..=1.0).contains(&to) || from >= to {
        return Err(format!("the stripe [{from}, {to}) must lie in [0, 1], left before right"));
    }
    let (left, right) = stripe_columns(from, to, width);
    if left >= right {
        return Err(format!("the stripe [{from}, {to}) covers no column of a {width}-pixel-wide image"));
    }
    Ok(())
}

/// A probability or a fraction, checked.
fn check_unit(name: &str, value: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&value) { Ok(()) } else { Err(format!("{name} = {value} is outside [0, 1]")) }
}

/// A uniform draw on `[0, 1)` from a dyn RNG.
fn uniform(rng: &mut dyn rand::RngCore) -> f64 {
    rng.random::<f64>()
}

#[cfg(test)]
pub(crate) mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    /// A textured image: every pixel its own random, saturated-enough colour,
    /// so that any filter or shift changes it.
    pub fn textured(height: usize, width: usize, seed: u64) -> Image {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut image = Image::filled(height, width, [0.0; 3]);
        for y in 0..height {
            for x in 0..width {
                let rgb = grid_core::image::color::hsb_to_rgb([
                    rng.random::<f32>(),
                    0.4 + 0.5 * rng.random::<f32>(),
                    0.3 + 0.5 * rng.random::<f32>(),
                ]);
                image.set_rgb(y, x, rgb);
            }
        }
        image
    }

    /// The pixels whose colour differs.
    pub fn changed(a: &Image, b: &Image) -> Mask {
        Mask::from_fn(a.height(), a.width(), |y, x| a.rgb(y, x) != b.rgb(y, x))
    }

    /// Each manipulation changes pixels inside its region only, and most of
    /// the region (all but where its effect fades to nothing); it is seeded.
    #[test]
    fn each_changes_its_region_only_and_most_of_it() {
        let (h, w) = (48, 64);
        let image = textured(h, w, 1);
        // The least share of the region each changes (noise: about its
        // probability; the watermark: its text's strokes within the box).
        let floors = [("blur", 0.95), ("brightness", 0.85), ("hue", 0.8), ("noise", 0.04), ("watermark", 0.005)];
        for (name, floor) in floors {
            let shortcut = ImageShortcut::default_of(name).unwrap();
            shortcut.check(h, w).unwrap();
            let region = shortcut.region(h, w);
            assert!(region.count() > 0 && region.count() < h * w, "{name}");
            let manipulated = shortcut.apply(&image, &mut ChaCha8Rng::seed_from_u64(7));
            let changed = changed(&image, &manipulated);
            for y in 0..h {
                for x in 0..w {
                    assert!(!changed.contains(y, x) || region.contains(y, x), "{name} changed ({y}, {x}) outside φ");
                }
            }
            let share = changed.count() as f64 / region.count() as f64;
            assert!(share >= floor, "{name}: {share:.3} of φ changed");
            let again = shortcut.apply(&image, &mut ChaCha8Rng::seed_from_u64(7));
            assert_eq!(manipulated, again, "{name} is seeded");
        }
    }

    /// The region does not depend on the visibility (App. A.4: "crucial").
    #[test]
    fn regions_do_not_depend_on_visibility() {
        let (h, w) = (40, 40);
        let pairs = [
            (ImageShortcut::Blur(Blur { sigma: 2.0 / 224.0, ..Blur::default() }), ImageShortcut::Blur(Blur::default())),
            (
                ImageShortcut::Brightness(Brightness { shift: 0.1, ..Brightness::default() }),
                ImageShortcut::Brightness(Brightness { shift: 0.3, ..Brightness::default() }),
            ),
            (
                ImageShortcut::Hue(Hue { shift: 0.05, ..Hue::default() }),
                ImageShortcut::Hue(Hue { shift: 0.25, ..Hue::default() }),
            ),
            (
                ImageShortcut::Noise(Noise { probability: 0.02, ..Noise::default() }),
                ImageShortcut::Noise(Noise { probability: 0.1, ..Noise::default() }),
            ),
            (
                ImageShortcut::Watermark(Watermark { font: 0.04, ..Watermark::default() }),
                ImageShortcut::Watermark(Watermark::default()),
            ),
        ];
        for (low, high) in pairs {
            assert_eq!(low.region(h, w), high.region(h, w), "{}", low.name());
        }
    }

    /// Level 3 is every default; the levels rise in strength and keep φ.
    #[test]
    fn visibility_levels_are_the_papers_and_keep_the_region() {
        // The paper's size, where the watermark's five fonts differ by pixels.
        let (h, w) = (224, 224);
        let image = textured(h, w, 3);
        for name in ImageShortcut::NAMES {
            let default = ImageShortcut::default_of(name).unwrap();
            assert_eq!(default.at_visibility(Visibility::MIDDLE), default, "{name}");
            let json = |m: &ImageShortcut| serde_json::to_value(m).unwrap()[default.visibility_setting()].clone();
            let mut previous: Option<(f64, f64)> = None;
            for level in Visibility::LEVELS {
                let at = default.at_visibility(Visibility::try_from(level).unwrap());
                at.check(h, w).unwrap();
                assert_eq!(at.region(h, w), default.region(h, w), "{name} at {level}");
                let value = json(&at).as_f64().unwrap();
                // How far the manipulated image moves from the original.
                let moved = {
                    let out = at.apply(&image, &mut ChaCha8Rng::seed_from_u64(5));
                    let mut sum = 0.0;
                    for y in 0..h {
                        for x in 0..w {
                            let (a, b) = (image.rgb(y, x), out.rgb(y, x));
                            sum += (0..3).map(|c| f64::from((a[c] - b[c]).abs())).sum::<f64>();
                        }
                    }
                    sum
                };
                if let Some((v, m)) = previous {
                    assert!(value > v, "{name}: level {level} sets {value}, not above {v}");
                    // The watermark's glyphs grow with the font; the others' strength.
                    assert!(moved > m, "{name}: level {level} changes the image less ({moved} vs {m})");
                }
                previous = Some((value, moved));
            }
        }
        assert_eq!(Watermark::VISIBILITY[0] * 224.0, 7.0);
        assert_eq!(
            Visibility::try_from(0).unwrap_err(),
            "visibility level 0 is not one of 1 to 5 (Zhou et al., App. A.4)"
        );
        assert!(Visibility::try_from(6).is_err());
        assert_eq!(serde_json::to_value(Visibility::MIDDLE).unwrap(), 3);
    }

    #[test]
    fn names_settings_and_bad_settings() {
        for name in ImageShortcut::NAMES {
            let shortcut = ImageShortcut::default_of(name).unwrap();
            assert_eq!(shortcut.name(), name);
            let json = serde_json::to_value(&shortcut).unwrap();
            assert_eq!(json["kind"], name);
            assert_eq!(serde_json::from_value::<ImageShortcut>(json).unwrap(), shortcut);
        }
        assert!(ImageShortcut::default_of("sepia").is_none());
        let bad = ImageShortcut::Hue(Hue { from: 0.6, to: 0.4, ..Hue::default() });
        assert!(bad.check(32, 32).unwrap_err().starts_with("hue: the stripe"));
        let narrow = ImageShortcut::Noise(Noise { from: 0.50, to: 0.51, ..Noise::default() });
        assert!(narrow.check(32, 32).unwrap_err().contains("covers no column"));
        let big = ImageShortcut::Watermark(Watermark { font: 0.5, ..Watermark::default() });
        assert!(big.check(64, 64).unwrap_err().contains("does not fit"), "{:?}", big.check(64, 64));
    }
}
