//! Element-wise activations over whole tensors in SIMD lanes: burn's CPU
//! backend computes them with one scalar `libm` call per element (`tanhf`,
//! whose `expm1f` was 9% of the BiLSTM's integrated-gradients profile through
//! its attention's tanh; `erff` 6% of the tiny BERT's training through GELU).

use wide::f32x8;

use crate::chunks::{for_each_chunk, for_each_chunk_pair};
use crate::lanes::{LANES, groups, load_lanes, store_lanes, tanh as tanh_lanes};

/// From this many values, split over threads.
const PARALLEL_ELEMENTS: usize = 1 << 15;
/// Values per thread's share: whole SIMD groups, so that every value is
/// computed the same way however the work is split.
const CHUNK: usize = 512 * LANES;

/// `tanh` of every value (within 1.8e-7 of libm's: see
/// [`crate::lanes::tanh`]).
pub fn tanh(inputs: &[f32]) -> Vec<f32> {
    map_lanes(inputs, &[], |x, _| tanh_lanes(x))
}

/// The gradient of tanh's input from its output `y` and the output's
/// gradient: `grad · (1 − y²)`.
pub fn tanh_backward(output: &[f32], grad: &[f32]) -> Vec<f32> {
    assert_eq!(output.len(), grad.len(), "one gradient per output");
    map_lanes(output, grad, |y, g| g * (f32x8::ONE - y * y))
}

/// tanh's derivative `1 − tanh²(x)` of every value.
pub fn tanh_derivative(inputs: &[f32]) -> Vec<f32> {
    map_lanes(inputs, &[], |x, _| {
        let y = tanh_lanes(x);
        f32x8::ONE - y * y
    })
}

/// The exact (erf-based) GELU of every value: `x · Φ(x)`, with
/// `Φ(x) = (1 + erf(x / √2)) / 2` (within 2e-7 · max(1, |x|) of it:
/// see [`erf`]).
pub fn gelu(inputs: &[f32]) -> Vec<f32> {
    map_lanes(inputs, &[], |x, _| HALF * x * (f32x8::ONE + erf(x * SQRT_HALF).0))
}

/// GELU and its derivative `Φ(x) + x φ(x)` (`φ` the standard normal
/// density) of every value, from one erf: what a forward pass that will be
/// differentiated keeps, so that its backward is one product
/// ([`times_derivative`]) instead of a second erf.
pub fn gelu_with_derivative(inputs: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let mut derivative = vec![0.0f32; inputs.len()];
    let values = map_lanes_with(inputs, &mut derivative, |x| {
        let (cdf, slope) = gelu_parts(x);
        (x * cdf, slope)
    });
    (values, derivative)
}

/// GELU's derivative `Φ(x) + x φ(x)` of every value.
pub fn gelu_derivative(inputs: &[f32]) -> Vec<f32> {
    map_lanes(inputs, &[], |x, _| gelu_parts(x).1)
}

/// The gradient of GELU's input from the input and the output's gradient:
/// `grad · (Φ(x) + x φ(x))`.
pub fn gelu_backward(inputs: &[f32], grad: &[f32]) -> Vec<f32> {
    assert_eq!(inputs.len(), grad.len(), "one gradient per input");
    map_lanes(inputs, grad, |x, g| g * gelu_parts(x).1)
}

/// `Φ(x)` and GELU's derivative `Φ(x) + x φ(x)`. erf(x / √2) is built on
/// e^{−x²/2}, the density's own exponential: one `exp` for both.
#[inline(always)]
fn gelu_parts(x: f32x8) -> (f32x8, f32x8) {
    let (erf, gaussian) = erf(x * SQRT_HALF);
    let cdf = HALF * (f32x8::ONE + erf);
    let pdf = gaussian * f32x8::from(0.398_942_3);
    (cdf, cdf + x * pdf)
}

/// An input's gradient from a derivative kept by the forward pass:
/// `grad · derivative`.
pub fn times_derivative(derivative: &[f32], grad: &[f32]) -> Vec<f32> {
    assert_eq!(derivative.len(), grad.len(), "one gradient per value");
    map_lanes(derivative, grad, |d, g| g * d)
}

const HALF: f32x8 = f32x8::new([0.5; LANES]);
const SQRT_HALF: f32x8 = f32x8::new([std::f32::consts::FRAC_1_SQRT_2; LANES]);

/// erf in lanes, after Abramowitz & Stegun 7.1.26: `1 − t·P(t)·e^{−x²}` with
/// `t = 1 / (1 + p|x|)` and a fifth-degree `P`, the sign put back; and the
/// `e^{−x²}` it used. The formula's own error is under 1.5e-7; in f32,
/// within 2e-7 of erf (`tests` measures it).
fn erf(x: f32x8) -> (f32x8, f32x8) {
    let magnitude = x.abs();
    let gaussian = (-(magnitude * magnitude)).exp();
    let t = f32x8::ONE / (f32x8::ONE + f32x8::from(0.327_591_1) * magnitude);
    let poly = ((((f32x8::from(1.061_405_4) * t - f32x8::from(1.453_152)) * t + f32x8::from(1.421_413_8)) * t
        - f32x8::from(0.284_496_74))
        * t
        + f32x8::from(0.254_829_6))
        * t;
    ((f32x8::ONE - poly * gaussian).flip_signs(x), gaussian)
}

/// `f` over `inputs` in SIMD groups, its first result returned and its
/// second written to `second` (the same length), split over threads in
/// whole groups for long inputs.
fn map_lanes_with(inputs: &[f32], second: &mut [f32], f: impl Fn(f32x8) -> (f32x8, f32x8) + Sync) -> Vec<f32> {
    assert_eq!(inputs.len(), second.len(), "one second value per input");
    let mut out = vec![0.0f32; inputs.len()];
    let apply = |(at, (chunk, second)): (usize, (&mut [f32], &mut [f32]))| {
        let from = at * CHUNK;
        for (j, n) in groups(chunk.len()) {
            let (y, z) = f(load_lanes(inputs, from + j, n));
            store_lanes(chunk, j, n, y);
            store_lanes(second, j, n, z);
        }
    };
    for_each_chunk_pair(&mut out, CHUNK, second, CHUNK, inputs.len() >= PARALLEL_ELEMENTS, apply);
    out
}

/// `f` over `inputs` (and `others`, the same length, or empty) in SIMD
/// groups, split over threads in whole groups for long inputs.
fn map_lanes(inputs: &[f32], others: &[f32], f: impl Fn(f32x8, f32x8) -> f32x8 + Sync) -> Vec<f32> {
    let mut out = vec![0.0f32; inputs.len()];
    let apply = |(at, chunk): (usize, &mut [f32])| {
        let from = at * CHUNK;
        for (j, n) in groups(chunk.len()) {
            let x = load_lanes(inputs, from + j, n);
            let y = if others.is_empty() { f32x8::ZERO } else { load_lanes(others, from + j, n) };
            store_lanes(chunk, j, n, f(x, y));
        }
    };
    for_each_chunk(&mut out, CHUNK, inputs.len() >= PARALLEL_ELEMENTS, apply);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf in f64 from its Maclaurin series (|x| ≤ 4, where its alternating
    /// terms still leave ten digits), 1 beyond (erf(4) = 1 − 1.5e-8).
    fn erf_reference(x: f64) -> f64 {
        if x.abs() > 4.0 {
            return x.signum();
        }
        let (mut term, mut sum) = (x, x);
        for n in 1..200 {
            term *= -x * x / n as f64;
            sum += term / (2 * n + 1) as f64;
        }
        sum * 2.0 / std::f64::consts::PI.sqrt()
    }

    #[test]
    fn gelu_and_its_gradient_match_the_definition() {
        let n = PARALLEL_ELEMENTS + 3;
        let inputs: Vec<f32> = (0..n).map(|i| (i as f32 / n as f32 - 0.5) * 16.0).collect();
        let ones = vec![1.0f32; n];
        let (ours, slopes) = (gelu(&inputs), gelu_backward(&inputs, &ones));
        for ((&x, &y), &d) in inputs.iter().zip(&ours).zip(&slopes) {
            let x64 = x as f64;
            let cdf = 0.5 * (1.0 + erf_reference(x64 / 2f64.sqrt()));
            let pdf = (-0.5 * x64 * x64).exp() / (2.0 * std::f64::consts::PI).sqrt();
            let bound = 3e-7 * x64.abs().max(1.0);
            assert!((y as f64 - x64 * cdf).abs() <= bound, "gelu({x}) = {y}, exact {}", x64 * cdf);
            assert!((d as f64 - (cdf + x64 * pdf)).abs() <= bound, "gelu'({x}) = {d}, exact {}", cdf + x64 * pdf);
        }
        // Kept by the forward pass: the same values and slopes.
        let (values, derivative) = gelu_with_derivative(&inputs);
        assert_eq!(values, ours);
        assert_eq!(derivative, slopes);
        assert_eq!(times_derivative(&derivative, &ones), slopes);
        // Threads or not, the same values.
        assert_eq!(gelu(&inputs[..PARALLEL_ELEMENTS - 1]), ours[..PARALLEL_ELEMENTS - 1]);
        assert_eq!(gelu(&[0.0, -0.0]), [0.0, 0.0]);
    }

    #[test]
    fn tanh_is_libms_within_its_bound_and_split_does_not_matter() {
        // Across the range (saturation, the small-|x| branch, zero, signs),
        // past the threshold for threads and with a partial last group.
        let n = PARALLEL_ELEMENTS + 5;
        let inputs: Vec<f32> = (0..n).map(|i| (i as f32 / n as f32 - 0.5) * 24.0).collect();
        let ours = tanh(&inputs);
        let worst = inputs.iter().zip(&ours).map(|(x, t)| (t - x.tanh()).abs()).fold(0.0f32, f32::max);
        assert!(worst <= 3e-7, "worst absolute difference from libm {worst}");
        // The same values computed without threads, group by group.
        assert_eq!(tanh(&inputs[..PARALLEL_ELEMENTS - 3]), ours[..PARALLEL_ELEMENTS - 3]);
        assert_eq!(tanh(&[1e-5f32, -2e-4, 0.0, -0.0]), [1e-5, -2e-4, 0.0, -0.0]);
    }

    #[test]
    fn tanh_backward_is_one_minus_the_square() {
        let y = [0.5f32, -0.25, 0.0, 0.99];
        let g = [2.0f32, 4.0, -1.0, 1.0];
        assert_eq!(tanh_backward(&y, &g), [1.5, 3.75, -1.0, 1.0 - 0.99 * 0.99]);
    }
}
