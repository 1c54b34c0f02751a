//! DeepLift's Rescale rule: the thresholds shared by the kernels that compute
//! its multipliers (`lstm`, `norm`, `softmax`, and [`elementwise`] here) and by
//! the rule's burn-operation path (`grid::model::rules`), so that both switch
//! from a secant to its limit at the same place.

/// Below this difference, relative to `1 + |x| + |x₀|`, a secant of a smooth
/// function loses more digits to cancellation than `φ′` at the midpoint misses
/// (`φ‴Δ²/24`, about 4e-8 relative here): the slope at the midpoint is taken.
pub const NEAR: f32 = 1e-3;

/// Below this `|Δ|`, the secants of `exp` and `log` in the softmax rule come from
/// their Taylor series (error below 1e-10) rather than from differences that
/// cancel (error `ε/|Δ|`, 6e-7 at the threshold).
pub const SERIES: f32 = 0.1;

/// The Rescale rule of a smooth element-wise `φ` over values whose first half
/// are inputs and second half their references (value `i` paired with
/// `i + n/2`): `φ` of every value, and each pair's multiplier, the secant
/// `(φ(x) − φ(x₀)) / (x − x₀)` or, where `x` and `x₀` are [`NEAR`], `slope` at
/// their midpoint. `phi` and `slope` map a run of values; `slope` runs only on
/// the few midpoints that need it. A pair's two multipliers are the same number.
pub fn elementwise(
    x: &[f32],
    phi: impl Fn(&[f32]) -> Vec<f32>,
    slope: impl Fn(&[f32]) -> Vec<f32>,
) -> (Vec<f32>, Vec<f32>) {
    assert!(x.len().is_multiple_of(2), "DeepLift stacks inputs over references");
    let half = x.len() / 2;
    let y = phi(x);
    let mut multipliers = vec![0.0f32; x.len()];
    let (mut near, mut midpoints) = (Vec::new(), Vec::new());
    let (inputs, references) = x.split_at(half);
    let (outputs, reference_outputs) = y.split_at(half);
    let (m, m0) = multipliers.split_at_mut(half);
    for i in 0..half {
        let (a, b) = (inputs[i], references[i]);
        let dx = a - b;
        if dx.abs() < (a.abs() + b.abs() + 1.0) * NEAR {
            near.push(i);
            midpoints.push((a + b) * 0.5);
        } else {
            let secant = (outputs[i] - reference_outputs[i]) / dx;
            (m[i], m0[i]) = (secant, secant);
        }
    }
    for (&i, slope) in near.iter().zip(slope(&midpoints)) {
        (m[i], m0[i]) = (slope, slope);
    }
    (y, multipliers)
}

/// `(x + x₀) / 2` of every value, over values whose first half are inputs
/// and second half their references: DeepLift's product rule weighs each
/// factor's difference by the other factor's midpoint.
pub fn midpoints(x: &[f32]) -> Vec<f32> {
    assert!(x.len().is_multiple_of(2), "DeepLift stacks inputs over references");
    let (inputs, references) = x.split_at(x.len() / 2);
    let half: Vec<f32> = inputs.iter().zip(references).map(|(a, b)| (a + b) * 0.5).collect();
    half.iter().chain(&half).copied().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secants_far_apart_slopes_near() {
        let cube = |v: &[f32]| v.iter().map(|x| x * x * x).collect::<Vec<_>>();
        let slope = |v: &[f32]| v.iter().map(|x| 3.0 * x * x).collect::<Vec<_>>();
        // Pairs (1, 3), (2, 2), (−1, −1.0001): a secant, a slope, a slope.
        let (y, m) = elementwise(&[1.0, 2.0, -1.0, 3.0, 2.0, -1.0001], cube, slope);
        assert_eq!(y, vec![1.0, 8.0, -1.0, 27.0, 8.0, cube(&[-1.0001])[0]]);
        assert_eq!(m[0], 13.0); // (27 − 1) / 2
        assert_eq!(m[1], 12.0);
        assert!((m[2] - 3.0 * 1.00005f32.powi(2)).abs() < 1e-5);
        assert_eq!(m[..3], m[3..], "a pair shares its multiplier");
    }

    #[test]
    fn midpoints_are_shared_by_a_pair() {
        assert_eq!(midpoints(&[1.0, -2.0, 3.0, 4.0]), vec![2.0, 1.0, 2.0, 1.0]);
    }
}
