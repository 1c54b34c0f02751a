//! Element-wise activations over whole tensors, in the CPU's widest SIMD
//! lanes ([`crate::dispatch`]): burn's CPU backend computes them with one
//! scalar `libm` call per element (`tanhf`, whose `expm1f` was 9% of the
//! BiLSTM's integrated-gradients profile through its attention's tanh; `erff`
//! 6% of the tiny BERT's training through GELU).

use std::marker::PhantomData;
use std::mem::MaybeUninit;

use crate::chunks::{for_each_chunk, for_each_chunk_pair, written};
use crate::dispatch::{Loop, widest};
use crate::math::{erf, tanh as tanh_one};

/// From this many values, split over threads.
const PARALLEL_ELEMENTS: usize = 1 << 15;
/// Values per thread's share (every value is computed on its own, so the
/// split never changes one).
const CHUNK: usize = 4096;

/// `tanh` of every value (within 1.8e-7 of libm's: see
/// [`crate::lanes::tanh`], which it equals bit for bit).
pub fn tanh(inputs: &[f32]) -> Vec<f32> {
    map::<Tanh>(inputs)
}

/// The gradient of tanh's input from its output `y` and the output's
/// gradient: `grad · (1 − y²)`.
pub fn tanh_backward(output: &[f32], grad: &[f32]) -> Vec<f32> {
    map2::<TanhGradient>(output, grad)
}

/// tanh's derivative `1 − tanh²(x)` of every value.
pub fn tanh_derivative(inputs: &[f32]) -> Vec<f32> {
    map::<TanhSlope>(inputs)
}

/// The exact (erf-based) GELU of every value: `x · Φ(x)`, with
/// `Φ(x) = (1 + erf(x / √2)) / 2` (within 2e-7 · max(1, |x|) of it:
/// see [`crate::math::erf`]).
pub fn gelu(inputs: &[f32]) -> Vec<f32> {
    map::<Gelu>(inputs)
}

/// GELU and its derivative `Φ(x) + x φ(x)` (`φ` the standard normal
/// density) of every value, from one erf: what a forward pass that will be
/// differentiated keeps, so that its backward is one product
/// ([`times_derivative`]) instead of a second erf.
pub fn gelu_with_derivative(inputs: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let mut values = Vec::new();
    let derivative = written(inputs.len(), |derivative| values = map_with::<GeluAndSlope>(inputs, derivative));
    (values, derivative)
}

/// GELU's derivative `Φ(x) + x φ(x)` of every value.
pub fn gelu_derivative(inputs: &[f32]) -> Vec<f32> {
    map::<GeluSlope>(inputs)
}

/// The gradient of GELU's input from the input and the output's gradient:
/// `grad · (Φ(x) + x φ(x))`.
pub fn gelu_backward(inputs: &[f32], grad: &[f32]) -> Vec<f32> {
    map2::<GeluGradient>(inputs, grad)
}

/// An input's gradient from a derivative kept by the forward pass:
/// `grad · derivative`.
pub fn times_derivative(derivative: &[f32], grad: &[f32]) -> Vec<f32> {
    map2::<Product>(derivative, grad)
}

/// A function of one value, inlined into the loop that maps it (see
/// `crate::dispatch`: a closure or function pointer may be called out of
/// line, one value at a time).
trait Unary {
    type Output;
    fn of(x: f32) -> Self::Output;
}

/// A function of two values, as [`Unary`].
trait Binary {
    fn of(x: f32, y: f32) -> f32;
}

struct Tanh;
struct TanhSlope;
struct TanhGradient;
struct Gelu;
struct GeluAndSlope;
struct GeluSlope;
struct GeluGradient;
struct Product;

impl Unary for Tanh {
    type Output = f32;
    #[inline(always)]
    fn of(x: f32) -> f32 {
        tanh_one(x)
    }
}

impl Unary for TanhSlope {
    type Output = f32;
    #[inline(always)]
    fn of(x: f32) -> f32 {
        let y = tanh_one(x);
        1.0 - y * y
    }
}

impl Binary for TanhGradient {
    #[inline(always)]
    fn of(y: f32, grad: f32) -> f32 {
        grad * (1.0 - y * y)
    }
}

impl Unary for Gelu {
    type Output = f32;
    #[inline(always)]
    fn of(x: f32) -> f32 {
        HALF * x * (1.0 + erf(x * SQRT_HALF).0)
    }
}

impl Unary for GeluAndSlope {
    type Output = (f32, f32);
    #[inline(always)]
    fn of(x: f32) -> (f32, f32) {
        let (cdf, slope) = gelu_parts(x);
        (x * cdf, slope)
    }
}

impl Unary for GeluSlope {
    type Output = f32;
    #[inline(always)]
    fn of(x: f32) -> f32 {
        gelu_parts(x).1
    }
}

impl Binary for GeluGradient {
    #[inline(always)]
    fn of(x: f32, grad: f32) -> f32 {
        grad * gelu_parts(x).1
    }
}

impl Binary for Product {
    #[inline(always)]
    fn of(derivative: f32, grad: f32) -> f32 {
        grad * derivative
    }
}

/// `Φ(x)` and GELU's derivative `Φ(x) + x φ(x)`. erf(x / √2) is built on
/// e^{−x²/2}, the density's own exponential: one `exp` for both.
#[inline(always)]
fn gelu_parts(x: f32) -> (f32, f32) {
    let (erf, gaussian) = erf(x * SQRT_HALF);
    let cdf = HALF * (1.0 + erf);
    let pdf = gaussian * 0.398_942_3;
    (cdf, cdf + x * pdf)
}

const HALF: f32 = 0.5;
const SQRT_HALF: f32 = std::f32::consts::FRAC_1_SQRT_2;

/// `F` of every input, in the CPU's widest lanes, split over threads for long
/// inputs. The output is not zero-filled first (a pass over it as long as
/// the map's own on a BiLSTM's attention): every value is written.
fn map<F: Unary<Output = f32>>(inputs: &[f32]) -> Vec<f32> {
    written(inputs.len(), |out| {
        for_each_chunk(out, CHUNK, inputs.len() >= PARALLEL_ELEMENTS, |(at, out)| {
            widest(One::<F> { inputs: &inputs[at * CHUNK..][..out.len()], out, f: PhantomData })
        })
    })
}

/// [`map`] over two inputs of the same length.
fn map2<F: Binary>(inputs: &[f32], others: &[f32]) -> Vec<f32> {
    assert_eq!(inputs.len(), others.len(), "one value of each per output");
    written(inputs.len(), |out| {
        for_each_chunk(out, CHUNK, inputs.len() >= PARALLEL_ELEMENTS, |(at, out)| {
            let (inputs, others) = (&inputs[at * CHUNK..][..out.len()], &others[at * CHUNK..][..out.len()]);
            widest(Two::<F> { inputs, others, out, f: PhantomData })
        })
    })
}

/// [`map`] with two results per input: the first returned, the second
/// written to `second` (the same length; every value of both written).
fn map_with<F: Unary<Output = (f32, f32)>>(inputs: &[f32], second: &mut [MaybeUninit<f32>]) -> Vec<f32> {
    assert_eq!(inputs.len(), second.len(), "one second value per input");
    written(inputs.len(), |out| {
        for_each_chunk_pair(out, CHUNK, second, CHUNK, inputs.len() >= PARALLEL_ELEMENTS, |(at, (out, second))| {
            widest(Pair::<F> { inputs: &inputs[at * CHUNK..][..out.len()], out, second, f: PhantomData })
        })
    })
}

struct One<'a, F> {
    inputs: &'a [f32],
    out: &'a mut [MaybeUninit<f32>],
    f: PhantomData<F>,
}

impl<F: Unary<Output = f32>> Loop for One<'_, F> {
    #[inline(always)]
    fn run(self) {
        for (out, &x) in self.out.iter_mut().zip(self.inputs) {
            out.write(F::of(x));
        }
    }
}

struct Two<'a, F> {
    inputs: &'a [f32],
    others: &'a [f32],
    out: &'a mut [MaybeUninit<f32>],
    f: PhantomData<F>,
}

impl<F: Binary> Loop for Two<'_, F> {
    #[inline(always)]
    fn run(self) {
        for ((out, &x), &y) in self.out.iter_mut().zip(self.inputs).zip(self.others) {
            out.write(F::of(x, y));
        }
    }
}

struct Pair<'a, F> {
    inputs: &'a [f32],
    out: &'a mut [MaybeUninit<f32>],
    second: &'a mut [MaybeUninit<f32>],
    f: PhantomData<F>,
}

impl<F: Unary<Output = (f32, f32)>> Loop for Pair<'_, F> {
    #[inline(always)]
    fn run(self) {
        for ((out, second), &x) in self.out.iter_mut().zip(self.second.iter_mut()).zip(self.inputs) {
            let (first, other) = F::of(x);
            out.write(first);
            second.write(other);
        }
    }
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
