//! RGB ↔ HSB (hue, saturation, brightness; also called HSV), each component
//! on `[0, 1]`: the space the paper shifts brightness and hue in (App. A.1);
//! and RGB → CIELAB, where superpixels measure colour distance
//! ([`super::slic`]).

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

/// sRGB `[r, g, b]` on `[0, 1]` → CIELAB `[L, a, b]` (D65 white, 2°
/// observer; `L` on `[0, 100]`), as scikit-image's `rgb2lab` computes it.
pub fn rgb_to_lab(rgb: [f32; 3]) -> [f32; 3] {
    let linear = rgb.map(|c| {
        let c = f64::from(c);
        if c > 0.04045 { ((c + 0.055) / 1.055).powf(2.4) } else { c / 12.92 }
    });
    let [r, g, b] = linear;
    // sRGB → XYZ, each divided by the D65 white point's coordinate.
    let x = (0.412453 * r + 0.357580 * g + 0.180423 * b) / 0.95047;
    let y = 0.212671 * r + 0.715160 * g + 0.072169 * b;
    let z = (0.019334 * r + 0.119193 * g + 0.950227 * b) / 1.08883;
    let f = |t: f64| if t > 0.008856 { t.cbrt() } else { 7.787 * t + 16.0 / 116.0 };
    let (fx, fy, fz) = (f(x), f(y), f(z));
    let l = if y > 0.008856 { 116.0 * fy - 16.0 } else { 903.3 * y };
    [l as f32, (500.0 * (fx - fy)) as f32, (200.0 * (fy - fz)) as f32]
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

    #[test]
    fn lab_of_white_black_and_the_primaries() {
        // Reference values: scikit-image's rgb2lab (D65, 2°).
        let close = |got: [f32; 3], want: [f32; 3]| got.iter().zip(want).all(|(g, w)| (g - w).abs() < 0.01);
        assert!(close(rgb_to_lab([1.0, 1.0, 1.0]), [100.0, 0.0, 0.0]), "{:?}", rgb_to_lab([1.0; 3]));
        assert_eq!(rgb_to_lab([0.0, 0.0, 0.0]), [0.0, 0.0, 0.0]);
        assert!(close(rgb_to_lab([1.0, 0.0, 0.0]), [53.2408, 80.0925, 67.2032]), "{:?}", rgb_to_lab([1.0, 0.0, 0.0]));
        assert!(close(rgb_to_lab([0.0, 1.0, 0.0]), [87.7347, -86.1827, 83.1793]), "{:?}", rgb_to_lab([0.0, 1.0, 0.0]));
        assert!(close(rgb_to_lab([0.0, 0.0, 1.0]), [32.2970, 79.1875, -107.8602]), "{:?}", rgb_to_lab([0.0, 0.0, 1.0]));
    }
}
