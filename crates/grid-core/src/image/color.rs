//! RGB ↔ HSB (hue, saturation, brightness; also called HSV), each component
//! on `[0, 1]`: the space the paper shifts brightness and hue in (App. A.1).

/// `[r, g, b]` → `[hue, saturation, brightness]`; a grey's hue is 0.
pub fn rgb_to_hsb([r, g, b]: [f32; 3]) -> [f32; 3] {
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    let chroma = max - min;
    let hue = if chroma <= 0.0 {
        0.0
    } else if max == r {
        ((g - b) / chroma).rem_euclid(6.0) / 6.0
    } else if max == g {
        ((b - r) / chroma + 2.0) / 6.0
    } else {
        ((r - g) / chroma + 4.0) / 6.0
    };
    let saturation = if max <= 0.0 { 0.0 } else { chroma / max };
    [hue, saturation, max]
}

/// `[hue, saturation, brightness]` → `[r, g, b]`; the hue wraps around.
pub fn hsb_to_rgb([hue, saturation, brightness]: [f32; 3]) -> [f32; 3] {
    let chroma = brightness * saturation;
    let sector = hue.rem_euclid(1.0) * 6.0;
    let second = chroma * (1.0 - (sector.rem_euclid(2.0) - 1.0).abs());
    let (r, g, b) = match sector as u32 {
        0 => (chroma, second, 0.0),
        1 => (second, chroma, 0.0),
        2 => (0.0, chroma, second),
        3 => (0.0, second, chroma),
        4 => (second, 0.0, chroma),
        _ => (chroma, 0.0, second),
    };
    let lift = brightness - chroma;
    [r + lift, g + lift, b + lift]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primaries_and_greys_by_hand() {
        assert_eq!(rgb_to_hsb([1.0, 0.0, 0.0]), [0.0, 1.0, 1.0]);
        assert_eq!(rgb_to_hsb([0.0, 0.5, 0.0]), [1.0 / 3.0, 1.0, 0.5]);
        assert_eq!(rgb_to_hsb([0.0, 0.0, 1.0]), [2.0 / 3.0, 1.0, 1.0]);
        assert_eq!(rgb_to_hsb([0.4, 0.4, 0.4]), [0.0, 0.0, 0.4]);
        assert_eq!(hsb_to_rgb([0.5, 1.0, 1.0]), [0.0, 1.0, 1.0]);
        assert_eq!(hsb_to_rgb([1.25, 0.0, 0.3]), [0.3, 0.3, 0.3]);
    }

    #[test]
    fn a_round_trip_returns_the_colour() {
        let mut worst = 0.0f32;
        for r in 0..=10 {
            for g in 0..=10 {
                for b in 0..=10 {
                    let rgb = [r as f32 / 10.0, g as f32 / 10.0, b as f32 / 10.0];
                    let back = hsb_to_rgb(rgb_to_hsb(rgb));
                    for (a, b) in rgb.iter().zip(back) {
                        worst = worst.max((a - b).abs());
                    }
                }
            }
        }
        assert!(worst < 1e-6, "{worst}");
    }
}
