//! The machine's measured ceiling for `f32` arithmetic: fused multiply-adds
//! on the widest SIMD the CPU has, with nothing read from memory. A GEMM
//! cannot run faster than this, so a GEMM's rate over it says how much of the
//! machine the GEMM uses, on any CPU, without a table of clocks and FMA units
//! (a turbo clock, a shared AVX-512 unit or an SMT sibling all show here).

use std::time::Instant;

/// Independent accumulators per thread: enough to cover the FMA latency on
/// every unit (4 cycles × 2 pipes) and few enough for 16 registers (AVX2).
const CHAINS: usize = 12;

/// Multiply-adds per accumulator between clock reads.
const ROUND: usize = 1 << 16;

struct Fmas {
    rounds: usize,
}

impl pulp::WithSimd for Fmas {
    /// A value to keep (so the loop is not removed), and the lanes per vector.
    type Output = (f32, usize);

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, simd: S) -> Self::Output {
        let scale = simd.splat_f32s(0.999_999_9);
        let shift = simd.splat_f32s(1e-7);
        let mut acc = [simd.splat_f32s(1.0); CHAINS];
        for _ in 0..self.rounds {
            for _ in 0..ROUND {
                for chain in &mut acc {
                    *chain = simd.mul_add_f32s(*chain, scale, shift);
                }
            }
            // The compiler may not fold the rounds into fewer operations.
            acc = std::hint::black_box(acc);
        }
        let sum = acc.into_iter().fold(simd.splat_f32s(0.0), |sum, chain| simd.add_f32s(sum, chain));
        (simd.reduce_sum_f32s(sum), std::mem::size_of::<S::f32s>() / std::mem::size_of::<f32>())
    }
}

/// Floating-point operations per second (a multiply-add counts two) of
/// `threads` threads of rayon's pool running multiply-adds at once, the best
/// of a few timed rounds of about `seconds` in all.
pub fn fma_flops(threads: usize, seconds: f64) -> f64 {
    let threads = threads.max(1);
    let arch = pulp::Arch::new();
    // How many rounds take about a tenth of the time, from one untimed round.
    let start = Instant::now();
    std::hint::black_box(arch.dispatch(Fmas { rounds: 1 }));
    let rounds = ((seconds / 10.0) / start.elapsed().as_secs_f64().max(1e-6)).ceil().max(1.0) as usize;
    let mut best = 0.0f64;
    let budget = Instant::now();
    while best == 0.0 || budget.elapsed().as_secs_f64() < seconds {
        let start = Instant::now();
        let lanes = std::sync::atomic::AtomicUsize::new(0);
        rayon::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|_| {
                    let (value, width) = arch.dispatch(Fmas { rounds });
                    std::hint::black_box(value);
                    lanes.store(width, std::sync::atomic::Ordering::Relaxed);
                });
            }
        });
        let elapsed = start.elapsed().as_secs_f64();
        let flops = 2.0 * (threads * rounds * ROUND * CHAINS * lanes.into_inner()) as f64;
        best = best.max(flops / elapsed);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No CPU does a TFLOP/s per core, so a count that is off by the lane
    /// width or the chains shows here; the floor is low enough for an
    /// emulated CPU (CI runs the tests under QEMU too), high enough to catch a
    /// loop that did not run.
    #[test]
    fn the_ceiling_is_in_a_plausible_range() {
        let flops = fma_flops(1, 0.05);
        eprintln!("{:.1} GFLOP/s on one thread", flops / 1e9);
        assert!((1e6..1e12).contains(&flops), "{flops} flop/s on one thread");
    }
}
