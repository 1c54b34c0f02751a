//! `exp`, `tanh` and `erf` one value at a time, with exactly the operations,
//! in the same order, that [`crate::lanes`] runs eight at a time with `wide`
//! (no fused multiply-add, the same constants, the same special cases), so
//! that a value is bit for bit the same either way (`tests` checks it over
//! millions of inputs). Written branch-free for the compiler to vectorise: a
//! loop over them inside [`crate::dispatch::widest`] runs in the CPU's widest
//! lanes (AVX-512 or AVX2), where `wide` is held to the build's baseline
//! (SSE2) because it picks its width when it is compiled.

/// `v` rounded to the nearest integer, ties to even, for any `v` (what SSE2's
/// conversion gives `wide` below 2³¹, and `v` itself beyond, where every float
/// is an integer): adding and removing 2²³ rounds the fraction away in the
/// FPU's own round-to-nearest-even mode, with no call to libm's `roundevenf`
/// where the CPU has no rounding instruction.
#[inline(always)]
fn round_ties_even(v: f32) -> f32 {
    const TWO_23: f32 = 8_388_608.0;
    let magnitude = v.abs();
    let rounded = (magnitude + TWO_23) - TWO_23;
    if magnitude < TWO_23 { rounded.copysign(v) } else { v }
}

/// `2ⁿ` for an integer-valued `n`, as `wide`'s `vm_pow2n`: the exponent field
/// built directly, subnormal results below 2⁻¹²⁶, 0 below 2⁻¹⁴⁹.
#[inline(always)]
fn pow2n(n: f32) -> f32 {
    const BIAS_AND_SHIFT: f32 = 127.0 + 8_388_608.0;
    let normal = f32::from_bits((n + BIAS_AND_SHIFT).to_bits() << 23);
    let subnormal_range = (-149.0..-126.0).contains(&n);
    // In 0..23 in the subnormal range (n is an integer), 0 elsewhere (where
    // the value is not used), so the conversion is exact; the plain one
    // (`as`, saturating) would keep the compiler from vectorising it.
    let shift = if subnormal_range { n + 149.0 } else { 0.0 };
    // SAFETY: `shift` is finite and within 0..23, so it fits an i32.
    let shift = unsafe { shift.to_int_unchecked::<i32>() } as u32;
    let subnormal = f32::from_bits(1u32 << shift);
    if n < -149.0 {
        0.0
    } else if n < -126.0 {
        subnormal
    } else {
        normal
    }
}

/// `e^x` as `wide`'s `f32x8::exp` computes each lane: `x = r ln 2 + f` with
/// `r` rounded, a degree-5 polynomial in `f`, `2ʳ` from the exponent bits
/// (split in two past 2¹²⁷), then overflow to ∞, underflow to 0, NaN.
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const P0: f32 = 1.0 / 2.0;
    const P1: f32 = 1.0 / 6.0;
    const P2: f32 = 1.0 / 24.0;
    const P3: f32 = 1.0 / 120.0;
    const P4: f32 = 1.0 / 720.0;
    const P5: f32 = 1.0 / 5040.0;
    const LN2D_HI: f32 = 0.693_359_4; // 0.693359375 exactly
    const LN2D_LO: f32 = -2.121_944_4e-4;
    const MAX_X: f32 = 88.723;
    const MIN_X: f32 = -103.63;
    const MAX_R: f32 = 127.0;
    let finite = x.is_finite();
    let r = round_ties_even(x * std::f32::consts::LOG2_E);
    let big = r > MAX_R;
    let r_safe = if big { MAX_R } else { r };
    let excess = if big { r - MAX_R } else { 0.0 };
    let scale = pow2n(excess);
    let f = x - r * LN2D_HI;
    let f = f - r * LN2D_LO;
    // wide's polynomial_5: (c3 f + c2) f² + ((c5 f + c4) f⁴ + (c1 f + c0)).
    let f2 = f * f;
    let f4 = f2 * f2;
    let z = (P3 * f + P2) * f2 + ((P5 * f + P4) * f4 + (P1 * f + P0));
    let z = z * f2 + f;
    let z = (z + 1.0) * scale * pow2n(r_safe);
    if x.is_nan() {
        f32::NAN
    } else if (x > MAX_X && finite) || (!finite && x > 0.0) {
        f32::INFINITY
    } else if (x < MIN_X && finite) || (!finite && x < 0.0) {
        0.0
    } else {
        z
    }
}

/// Values per group of the fixed-length loops below: a whole AVX-512
/// register (two AVX2 ones).
pub(crate) const GROUP: usize = 16;

/// The groups of a run of `len` values: `(start, n)` with `n` ≤ 16 values
/// each, the last one partial when `len` is not a multiple of 16.
#[inline(always)]
pub(crate) fn groups(len: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..len).step_by(GROUP).map(move |at| (at, (len - at).min(GROUP)))
}

/// `n` ≤ 16 values from `at`, the rest zero. A whole group is one fixed-size
/// copy, which the compiler keeps in registers; a copy of a run-time length
/// is a call to `memcpy`.
#[inline(always)]
pub(crate) fn load_group(from: &[f32], at: usize, n: usize) -> [f32; GROUP] {
    let mut lanes = [0.0f32; GROUP];
    if n == GROUP {
        lanes.copy_from_slice(&from[at..at + GROUP]);
    } else {
        for (lane, &v) in lanes.iter_mut().zip(&from[at..at + n]) {
            *lane = v;
        }
    }
    lanes
}

/// The first `n` values of `lanes` to `to` from `at` (see [`load_group`]).
#[inline(always)]
pub(crate) fn store_group(to: &mut [f32], at: usize, n: usize, lanes: &[f32; GROUP]) {
    if n == GROUP {
        to[at..at + GROUP].copy_from_slice(lanes);
    } else {
        for (v, &lane) in to[at..at + n].iter_mut().zip(lanes) {
            *v = lane;
        }
    }
}

/// `e^{v − shift}` of every value in place, in groups of 16 (the last one
/// padded): a loop of fixed length is vectorised whole, where a short row
/// (attention's are a sentence long) would otherwise run one value at a time
/// in the remainder of a vectorised loop.
#[inline(always)]
pub(crate) fn exp_shifted_in_place(values: &mut [f32], shift: f32) {
    for (at, n) in groups(values.len()) {
        let mut lanes = load_group(values, at, n);
        for v in &mut lanes {
            *v = exp(*v - shift);
        }
        store_group(values, at, n, &lanes);
    }
}

/// `a` with the sign of `b` flipped into it (`wide`'s `flip_signs`).
#[inline(always)]
fn flip_signs(a: f32, b: f32) -> f32 {
    f32::from_bits(a.to_bits() ^ (b.to_bits() & 0x8000_0000))
}

/// [`crate::lanes::tanh`] one value at a time.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let magnitude = x.abs();
    let e = exp(magnitude * -2.0);
    let t = (1.0 - e) / (1.0 + e);
    flip_signs(if magnitude < 4e-4 { magnitude } else { t }, x)
}

/// erf after Abramowitz & Stegun 7.1.26: `1 − t·P(t)·e^{−x²}` with
/// `t = 1 / (1 + p|x|)` and a fifth-degree `P`, the sign put back; and the
/// `e^{−x²}` it used. The formula's own error is under 1.5e-7; in f32,
/// within 2e-7 of erf (`activation`'s tests measure it through GELU).
#[inline(always)]
pub fn erf(x: f32) -> (f32, f32) {
    let magnitude = x.abs();
    let gaussian = exp(-(magnitude * magnitude));
    let t = 1.0 / (1.0 + 0.327_591_1 * magnitude);
    let poly = ((((1.061_405_4 * t - 1.453_152) * t + 1.421_413_8) * t - 0.284_496_74) * t + 0.254_829_6) * t;
    (flip_signs(1.0 - poly * gaussian, x), gaussian)
}

#[cfg(test)]
mod tests {
    use super::*;
    use wide::f32x8;

    /// Inputs across the whole float line: a sweep of the range where exp,
    /// tanh and erf do their work, every 4093rd bit pattern (subnormals, huge
    /// values, infinities, NaNs), and the thresholds themselves.
    fn inputs() -> Vec<f32> {
        let mut v: Vec<f32> = (0..2_000_000).map(|i| (i as f32 / 2_000_000.0 - 0.5) * 240.0).collect();
        v.extend((0..u32::MAX / 4093).map(|i| f32::from_bits(i * 4093)));
        v.extend([0.0, -0.0, 88.723, -103.63, 88.72, 88.73, -87.0, -103.0, 4e-4, -4e-4, 1e-30, -1e-30]);
        v.extend([f32::INFINITY, f32::NEG_INFINITY, f32::NAN, f32::MAX, f32::MIN, f32::MIN_POSITIVE]);
        v
    }

    fn same(a: f32, b: f32) -> bool {
        a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
    }

    fn check(name: &str, lanes: impl Fn(f32x8) -> f32x8, one: impl Fn(f32) -> f32) {
        for group in inputs().chunks(8) {
            let mut x = [0.0f32; 8];
            x[..group.len()].copy_from_slice(group);
            let want = lanes(f32x8::from(x)).to_array();
            for (i, &v) in x.iter().enumerate() {
                assert!(same(one(v), want[i]), "{name}({v:e}) = {:e}, lanes {:e}", one(v), want[i]);
            }
        }
    }

    #[test]
    fn exp_is_wides_bit_for_bit() {
        check("exp", |x| x.exp(), exp);
    }

    #[test]
    fn tanh_is_the_lanes_bit_for_bit() {
        check("tanh", crate::lanes::tanh, tanh);
    }

    /// The erf `activation` ran in `wide`'s lanes until its loops were
    /// dispatched: the reference the recorded results came from.
    fn erf_lanes(x: f32x8) -> (f32x8, f32x8) {
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

    #[test]
    fn erf_is_the_lanes_bit_for_bit() {
        check("erf", |x| erf_lanes(x).0, |x| erf(x).0);
        check("gaussian", |x| erf_lanes(x).1, |x| erf(x).1);
    }

    /// The dispatched loops (whatever instruction set this CPU gets) give
    /// the eight-lane values bit for bit: tanh and GELU over the sweep.
    #[test]
    fn dispatched_loops_give_the_lanes_values() {
        let x = inputs();
        let (tanh, gelu) = (crate::activation::tanh(&x), crate::activation::gelu(&x));
        let half = f32x8::splat(0.5);
        let sqrt_half = f32x8::splat(std::f32::consts::FRAC_1_SQRT_2);
        for (k, group) in x.chunks(8).enumerate() {
            let mut lanes = [0.0f32; 8];
            lanes[..group.len()].copy_from_slice(group);
            let v = f32x8::from(lanes);
            let (want_tanh, want_gelu) =
                (crate::lanes::tanh(v).to_array(), (half * v * (f32x8::ONE + erf_lanes(v * sqrt_half).0)).to_array());
            for i in 0..group.len() {
                let at = 8 * k + i;
                assert!(same(tanh[at], want_tanh[i]), "tanh({:e})", x[at]);
                assert!(same(gelu[at], want_gelu[i]), "gelu({:e})", x[at]);
            }
        }
    }

    #[test]
    fn rounding_is_ties_to_even() {
        for (v, r) in [(0.5f32, 0.0f32), (1.5, 2.0), (2.5, 2.0), (-2.5, -2.0), (-0.4, -0.0), (8_388_609.0, 8_388_609.0)]
        {
            assert!(same(round_ties_even(v), r), "{v}");
        }
    }
}
