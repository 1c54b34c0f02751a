//! Loops compiled for the widest SIMD the CPU has, picked at run time.
//!
//! `wide` fixes its lane width when it is compiled, so a portable build runs
//! its eight-lane groups as pairs of SSE2 operations even on an AVX-512 CPU.
//! A [`Loop`] over [`crate::math`]'s one-value functions is instead compiled
//! once per instruction set (`pulp`'s dispatch: AVX-512, AVX2 + FMA, or the
//! baseline) and vectorised by the compiler to that width. The values do not
//! depend on which one runs: the operations are the same IEEE ones, and Rust
//! never contracts `a·b + c` into a fused multiply-add.
//!
//! Everything a loop calls must be inlined into it to be compiled that way:
//! its `run` and the functions it calls are `#[inline(always)]`, and the
//! per-value functions are passed as such function items, not closures
//! (whose bodies the compiler may keep out of line).

/// A loop to compile for the widest instruction set.
pub(crate) trait Loop {
    /// Runs the loop; implementations are `#[inline(always)]`.
    fn run(self);
}

struct Widest<L>(L);

impl<L: Loop> pulp::WithSimd for Widest<L> {
    type Output = ();

    #[inline(always)]
    fn with_simd<S: pulp::Simd>(self, _simd: S) {
        self.0.run()
    }
}

/// Runs `body` compiled for the instruction set of the CPU it runs on
/// (detected once: kernels dispatch per row).
#[inline]
pub(crate) fn widest(body: impl Loop) {
    static ARCH: std::sync::OnceLock<pulp::Arch> = std::sync::OnceLock::new();
    ARCH.get_or_init(pulp::Arch::new).dispatch(Widest(body))
}
