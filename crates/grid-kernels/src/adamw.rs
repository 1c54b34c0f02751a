//! AdamW's update of one parameter in one pass over its values, its gradient
//! and its two moments, in the CPU's widest lanes ([`crate::dispatch`]).
//!
//! burn's AdamW runs the same update as a chain of a dozen element-wise
//! tensor operations, each a pass over memory (17% of a MiniLM training step
//! on the CPU backend, with dropout's scaling). The arithmetic here is those
//! operations' own, in their order and in f32, one IEEE operation each (Rust
//! never fuses `a·b + c`), so a parameter and its moments come out bit for
//! bit as burn's: a training run does not change by taking this path.

use rayon::prelude::*;

use crate::dispatch::{Loop, widest};

/// From this many values, split over threads.
const PARALLEL_ELEMENTS: usize = 1 << 15;
/// Values per thread's share (each value is updated on its own, so the split
/// never changes one).
const CHUNK: usize = 1 << 14;

/// One update's constants, in f32 as burn's `AdaptiveMomentumW` holds them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Update {
    pub beta_1: f32,
    pub beta_2: f32,
    pub epsilon: f32,
    /// The learning rate, rounded to f32 (burn's `mul_scalar(lr)`).
    pub learning_rate: f32,
    /// `1 − lr·λ` rounded to f32; `None` where `lr·λ` is zero (burn then
    /// leaves the parameter as it is instead of multiplying by one).
    pub decay: Option<f32>,
    /// The update's number, from 1: the bias corrections' exponent.
    pub time: i32,
}

impl Update {
    /// The update's constants from burn's settings: `beta_1`, `beta_2`,
    /// `epsilon` and `weight_decay` as f32 (as `AdamWConfig` keeps them), the
    /// learning rate as f64 (as the scheduler gives it).
    pub fn new(beta_1: f32, beta_2: f32, epsilon: f32, weight_decay: f32, learning_rate: f64, time: i32) -> Self {
        let decay_rate = learning_rate * weight_decay as f64;
        Self {
            beta_1,
            beta_2,
            epsilon,
            learning_rate: learning_rate as f32,
            decay: (decay_rate != 0.0).then_some((1.0 - decay_rate) as f32),
            time,
        }
    }
}

/// Whether the moments hold earlier updates or are written for the first time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moments {
    /// The first update: the moments' values are ignored and overwritten.
    Fresh,
    /// The moments after the update before.
    Continued,
}

/// Updates `parameter` by `grad` in place, with its first and second moments
/// (all four the same length), as burn's AdamW does with
/// `cautious_weight_decay` and `amsgrad` off:
///
/// `m ← β₁m + (1−β₁)g`, `v ← β₂v + (1−β₂)g²` (`(1−β₁)g`, `(1−β₂)g²` alone
/// when [`Moments::Fresh`]), `δ = (m / (1−β₁ᵗ)) / (√(v / (1−β₂ᵗ)) + ε)`,
/// `θ ← θ(1 − lr·λ) − lr·δ`.
pub fn step(
    update: Update,
    moments: Moments,
    parameter: &mut [f32],
    grad: &[f32],
    first: &mut [f32],
    second: &mut [f32],
) {
    let n = parameter.len();
    assert!(
        grad.len() == n && first.len() == n && second.len() == n,
        "AdamW: the parameter, gradient and moments differ in length"
    );
    let constants = Constants::of(update);
    let run = |((parameter, grad), (first, second)): Share<'_>| match moments {
        Moments::Fresh => widest(Pass::<true> { c: constants, parameter, grad, first, second }),
        Moments::Continued => widest(Pass::<false> { c: constants, parameter, grad, first, second }),
    };
    if n >= PARALLEL_ELEMENTS {
        parameter
            .par_chunks_mut(CHUNK)
            .zip(grad.par_chunks(CHUNK))
            .zip(first.par_chunks_mut(CHUNK).zip(second.par_chunks_mut(CHUNK)))
            .for_each(run);
    } else {
        run(((parameter, grad), (first, second)));
    }
}

/// One share of the values: the parameter's and its gradient's, the two moments'.
type Share<'a> = ((&'a mut [f32], &'a [f32]), (&'a mut [f32], &'a mut [f32]));

/// The per-value constants, computed once as burn computes them.
#[derive(Clone, Copy)]
struct Constants {
    beta_1: f32,
    beta_2: f32,
    factor_1: f32,
    factor_2: f32,
    correction_1: f32,
    correction_2: f32,
    epsilon: f32,
    learning_rate: f32,
    decay: Option<f32>,
}

impl Constants {
    fn of(update: Update) -> Self {
        let Update { beta_1, beta_2, epsilon, learning_rate, decay, time } = update;
        Self {
            beta_1,
            beta_2,
            factor_1: 1.0 - beta_1,
            factor_2: 1.0 - beta_2,
            correction_1: 1.0 - beta_1.powi(time),
            correction_2: 1.0 - beta_2.powi(time),
            epsilon,
            learning_rate,
            decay,
        }
    }
}

/// One share of the values; `FRESH`: [`Moments::Fresh`].
struct Pass<'a, const FRESH: bool> {
    c: Constants,
    parameter: &'a mut [f32],
    grad: &'a [f32],
    first: &'a mut [f32],
    second: &'a mut [f32],
}

impl<const FRESH: bool> Loop for Pass<'_, FRESH> {
    #[inline(always)]
    fn run(self) {
        let Pass { c, parameter, grad, first, second } = self;
        let values = parameter.iter_mut().zip(grad).zip(first.iter_mut().zip(second.iter_mut()));
        match c.decay {
            Some(keep) => values.for_each(|((p, &g), (m, v))| *p = value::<FRESH>(&c, *p * keep, g, m, v)),
            None => values.for_each(|((p, &g), (m, v))| *p = value::<FRESH>(&c, *p, g, m, v)),
        }
    }
}

/// One value's update from its decayed value `decayed`; the moments in place.
#[inline(always)]
fn value<const FRESH: bool>(c: &Constants, decayed: f32, g: f32, m: &mut f32, v: &mut f32) -> f32 {
    let square = g * g;
    if FRESH {
        *m = g * c.factor_1;
        *v = square * c.factor_2;
    } else {
        *m = *m * c.beta_1 + g * c.factor_1;
        *v = *v * c.beta_2 + square * c.factor_2;
    }
    let delta = (*m / c.correction_1) / ((*v / c.correction_2).sqrt() + c.epsilon);
    decayed - delta * c.learning_rate
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The update as burn's operations compute it, one whole-array pass per
    /// operation (`adamw.rs` of burn-optim, with the CPU backend's scalar
    /// operations: each scalar rounded to f32 first).
    fn burns(
        update: Update,
        fresh: bool,
        parameter: &mut [f32],
        grad: &[f32],
        first: &mut Vec<f32>,
        second: &mut Vec<f32>,
    ) {
        let c = Constants::of(update);
        let square: Vec<f32> = grad.iter().map(|g| g * g).collect();
        let scaled_g: Vec<f32> = grad.iter().map(|g| g * c.factor_1).collect();
        let scaled_square: Vec<f32> = square.iter().map(|s| s * c.factor_2).collect();
        if fresh {
            *first = scaled_g;
            *second = scaled_square;
        } else {
            *first = first.iter().map(|m| m * c.beta_1).zip(&scaled_g).map(|(a, b)| a + b).collect();
            *second = second.iter().map(|v| v * c.beta_2).zip(&scaled_square).map(|(a, b)| a + b).collect();
        }
        let m_hat: Vec<f32> = first.iter().map(|m| m / c.correction_1).collect();
        let denominator: Vec<f32> = second.iter().map(|v| (v / c.correction_2).sqrt() + c.epsilon).collect();
        for ((p, m), d) in parameter.iter_mut().zip(m_hat).zip(denominator) {
            let decayed = c.decay.map_or(*p, |keep| *p * keep);
            *p = decayed - (m / d) * c.learning_rate;
        }
    }

    fn wave(n: usize, scale: f32, phase: f32) -> Vec<f32> {
        (0..n).map(|i| ((i as f32 * 0.731 + phase).sin() * scale) * (1.0 + (i % 7) as f32)).collect()
    }

    /// Bit for bit burn's chain of operations over four updates (fresh
    /// moments, a zero learning rate at warm-up, with and without weight
    /// decay), alone and split over threads.
    #[test]
    fn equals_burns_operations_bit_for_bit() {
        for n in [1, 37, PARALLEL_ELEMENTS + 1000] {
            for weight_decay in [0.0, 0.01] {
                let mut ours = wave(n, 0.5, 0.0);
                let mut theirs = ours.clone();
                let (mut m, mut v) = (vec![f32::NAN; n], vec![f32::NAN; n]);
                let (mut their_m, mut their_v) = (Vec::new(), Vec::new());
                for (t, lr) in [0.0, 1e-3, 5e-2, 2e-5].into_iter().enumerate() {
                    let grad = wave(n, 1e-2 * (t + 1) as f32, t as f32);
                    let update = Update::new(0.9, 0.999, 1e-8, weight_decay, lr, t as i32 + 1);
                    let moments = if t == 0 { Moments::Fresh } else { Moments::Continued };
                    step(update, moments, &mut ours, &grad, &mut m, &mut v);
                    burns(update, t == 0, &mut theirs, &grad, &mut their_m, &mut their_v);
                    let bits = |x: &[f32]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&ours), bits(&theirs), "parameters after update {t} (n {n}, λ {weight_decay})");
                    assert_eq!(bits(&m), bits(&their_m), "first moments after update {t}");
                    assert_eq!(bits(&v), bits(&their_v), "second moments after update {t}");
                }
            }
        }
    }

    /// The values move against the gradient, by about the learning rate on
    /// the first step (Adam's normalised step), and a zero rate leaves them.
    #[test]
    fn the_first_step_moves_each_value_by_the_rate_against_its_gradient() {
        let mut parameter = vec![1.0f32, -2.0, 0.5];
        let grad = [0.3f32, -0.1, 2.0];
        let (mut m, mut v) = (vec![0.0; 3], vec![0.0; 3]);
        step(Update::new(0.9, 0.999, 1e-8, 0.0, 0.01, 1), Moments::Fresh, &mut parameter, &grad, &mut m, &mut v);
        for (p, expected) in parameter.iter().zip([0.99f32, -1.99, 0.49]) {
            assert!((p - expected).abs() < 1e-6, "{p} vs {expected}");
        }
        let before = parameter.clone();
        step(Update::new(0.9, 0.999, 1e-8, 0.1, 0.0, 2), Moments::Continued, &mut parameter, &grad, &mut m, &mut v);
        assert_eq!(parameter, before);
    }
}
