//! `Attr%` over pixels (Zhou et al. 2022, section 5): the share of a
//! saliency map's total inside the effective region φ∪, per image; and
//! `%ER`, φ∪'s share of the image (a map spread evenly scores `%ER`: the
//! paper's random line). Maps are non-negative (absolute gradients,
//! GradCAM's ReLU); a negative value counts by its magnitude.

use grid_core::image::Mask;

/// Σ_{p∈φ} |s_p| / Σ_p |s_p|; `None` for a map that is zero everywhere.
pub fn attr_share(map: &[f32], region: &Mask) -> Option<f64> {
    assert_eq!(map.len(), region.as_slice().len(), "one value per pixel");
    let (inside, total) = map.iter().zip(region.as_slice()).fold((0.0f64, 0.0f64), |(i, t), (&v, &m)| {
        let v = f64::from(v.abs());
        (if m { i + v } else { i }, t + v)
    });
    (total > 0.0).then(|| inside / total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_hand() {
        let region = Mask::from_fn(2, 2, |y, _| y == 0);
        assert_eq!(attr_share(&[1.0, 3.0, 2.0, 2.0], &region), Some(0.5));
        assert_eq!(attr_share(&[1.0, -1.0, 0.0, 0.0], &region), Some(1.0));
        assert_eq!(attr_share(&[0.0; 4], &region), None);
        // An even map scores the region's share: the random line.
        assert_eq!(attr_share(&[0.7; 4], &region), Some(region.share()));
    }
}
