//! Eight `f32` values in SIMD lanes (`wide`, SSE or AVX as the build allows):
//! loads and stores of whole or partial groups, and the activations the
//! kernels share. Each lane computes exactly what a scalar loop would with the
//! same operations in the same order (no fused multiply-add), so a value does
//! not depend on where it sits in a group.

use wide::f32x8;

/// Values per SIMD group.
pub const LANES: usize = 8;

/// The groups of a run of `len` values: `(start, n)` with `n` ≤ 8 values
/// each, the last one partial when `len` is not a multiple of eight.
pub fn groups(len: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..len).step_by(LANES).map(move |at| (at, (len - at).min(LANES)))
}

/// `n` ≤ 8 values from `at` in SIMD lanes (the rest zero). A whole group is
/// one fixed-size load; a copy of a run-time length would be a call to
/// `memcpy` per group.
#[inline(always)]
pub fn load_lanes(from: &[f32], at: usize, n: usize) -> f32x8 {
    if n == LANES {
        f32x8::from(<[f32; LANES]>::try_from(&from[at..at + LANES]).expect("eight lanes"))
    } else {
        let mut lanes = [0.0f32; LANES];
        lanes[..n].copy_from_slice(&from[at..at + n]);
        f32x8::from(lanes)
    }
}

/// The first `n` lanes of `value` to `to` from `at` (see [`load_lanes`]).
#[inline(always)]
pub fn store_lanes(to: &mut [f32], at: usize, n: usize, value: f32x8) {
    let lanes = value.to_array();
    if n == LANES {
        to[at..at + LANES].copy_from_slice(&lanes);
    } else {
        to[at..at + n].copy_from_slice(&lanes[..n]);
    }
}

/// tanh from one vectorised `exp`: `(1 − e) / (1 + e)` with `e = exp(−2|x|)`,
/// the sign put back; below 4e-4, `x` itself (the error, x³/3, is under
/// 2.2e-11). `wide`'s own `tanh` goes through a scalar `expm1` per lane.
/// Within 1.8e-7 of libm's `tanhf` (two units in the last place near ±1;
/// `activation`'s test measures it), relative ≤ 1e-4 near 4e-4.
pub fn tanh(x: f32x8) -> f32x8 {
    let magnitude = x.abs();
    let e = (magnitude * f32x8::from(-2.0)).exp();
    let t = (f32x8::ONE - e) / (f32x8::ONE + e);
    magnitude.simd_lt(f32x8::from(4e-4)).select(magnitude, t).flip_signs(x)
}
