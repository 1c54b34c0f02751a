//! Dense products on strided views of slices, through the `gemm` crate that
//! burn's CPU backend uses (it picks its SIMD kernels at run time), or a
//! products split over the pool, a CBLAS library named by `GRID_BLAS`
//! ([`crate::blas`]). Shared by the kernels that multiply inside a fused pass.

use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::blas;

/// `dst[m × n] = lhs[m × k] · rhs[k × n]` (with `accumulate`: `+=`), each
/// given by its row and column strides.
pub(crate) fn gemm(
    accumulate: bool,
    (m, n, k): (usize, usize, usize),
    (dst, dst_rs): (&mut [f32], usize),
    lhs: &[f32],
    (lhs_rs, lhs_cs): (usize, usize),
    rhs: &[f32],
    (rhs_rs, rhs_cs): (usize, usize),
) {
    // Split over threads only where the product is large enough to pay for it;
    // the split is over rows and columns, so each sum keeps its order.
    let threads = if m * n * k >= 1 << 21 { Threads::Pool } else { Threads::One };
    product(threads, accumulate, (m, n, k), (dst, dst_rs), lhs, (lhs_rs, lhs_cs), rhs, (rhs_rs, rhs_cs));
}

/// Where a product runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Threads {
    /// On the calling thread (a caller that splits the work itself).
    One,
    /// Over rayon's threads, as the `gemm` crate splits it.
    Pool,
}

/// [`gemm`] on the given threads.
#[allow(clippy::too_many_arguments)]
pub(crate) fn product(
    threads: Threads,
    accumulate: bool,
    (m, n, k): (usize, usize, usize),
    (dst, dst_rs): (&mut [f32], usize),
    lhs: &[f32],
    (lhs_rs, lhs_cs): (usize, usize),
    rhs: &[f32],
    (rhs_rs, rhs_cs): (usize, usize),
) {
    check((m, n, k), (dst.len(), dst_rs), (lhs.len(), lhs_rs, lhs_cs), (rhs.len(), rhs_rs, rhs_cs));
    // SAFETY: `check` keeps every access inside the slices; `dst` does not
    // alias `lhs` or `rhs` (it is borrowed mutably).
    unsafe {
        raw(
            threads,
            accumulate,
            (m, n, k),
            (dst.as_mut_ptr(), dst_rs),
            (lhs.as_ptr(), lhs_rs, lhs_cs),
            (rhs.as_ptr(), rhs_rs, rhs_cs),
        )
    }
}

/// [`product`] into an uninitialised `dst`, every element of which it
/// writes (none is read): no zero-filled buffer first.
#[allow(clippy::too_many_arguments)]
pub(crate) fn product_into(
    threads: Threads,
    (m, n, k): (usize, usize, usize),
    dst: &mut [MaybeUninit<f32>],
    lhs: &[f32],
    (lhs_rs, lhs_cs): (usize, usize),
    rhs: &[f32],
    (rhs_rs, rhs_cs): (usize, usize),
) {
    assert_eq!(dst.len(), m * n, "gemm: a destination of m × n");
    check((m, n, k), (dst.len(), n), (lhs.len(), lhs_rs, lhs_cs), (rhs.len(), rhs_rs, rhs_cs));
    if k == 0 {
        dst.fill(MaybeUninit::new(0.0));
        return;
    }
    // SAFETY: as in `product`; without accumulation neither `gemm` nor BLAS
    // reads the destination, and with k > 0 both write all of it.
    unsafe {
        raw(
            threads,
            false,
            (m, n, k),
            (dst.as_mut_ptr().cast(), n),
            (lhs.as_ptr(), lhs_rs, lhs_cs),
            (rhs.as_ptr(), rhs_rs, rhs_cs),
        )
    }
}

/// The last element each operand is read or written at must lie inside it.
fn check(
    (m, n, k): (usize, usize, usize),
    (dst_len, dst_rs): (usize, usize),
    (lhs_len, lhs_rs, lhs_cs): (usize, usize, usize),
    (rhs_len, rhs_rs, rhs_cs): (usize, usize, usize),
) {
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    assert!((m - 1) * dst_rs + n <= dst_len, "gemm: destination too small");
    assert!((m - 1) * lhs_rs + (k - 1) * lhs_cs < lhs_len, "gemm: left operand too small");
    assert!((k - 1) * rhs_rs + (n - 1) * rhs_cs < rhs_len, "gemm: right operand too small");
}

/// Whether products split over the pool may go to the `GRID_BLAS` library
/// (on by default; `grid bench --gemm` turns it off to time `gemm` beside it).
static BLAS_ENABLED: AtomicBool = AtomicBool::new(true);

/// Lets (`true`) or keeps (`false`) products from the `GRID_BLAS` library.
pub fn set_blas_enabled(enabled: bool) {
    BLAS_ENABLED.store(enabled, Ordering::Relaxed);
}

/// The library that products split over the pool go to, if any.
pub fn blas_in_use() -> Option<&'static blas::Blas> {
    if !BLAS_ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    blas::active().ok().flatten()
}

/// Rows per block below which a product is not split over threads.
const MIN_BLOCK_ROWS: usize = 32;

/// A product as one library call per block of rows, the blocks on rayon's
/// threads (one per thread); `false` where the library cannot take the
/// operands' strides (nothing done) or a size past its `int`s.
///
/// # Safety
/// As [`raw`]'s.
unsafe fn on_row_blocks(
    library: &blas::Blas,
    accumulate: bool,
    (m, n, k): (usize, usize, usize),
    (dst, dst_rs): (*mut f32, usize),
    (lhs, lhs_rs, lhs_cs): (*const f32, usize, usize),
    (rhs, rhs_rs, rhs_cs): (*const f32, usize, usize),
) -> bool {
    if !blas::takes((m, n, k), (lhs_rs, lhs_cs), (rhs_rs, rhs_cs)) {
        return false;
    }
    let blocks = rayon::current_num_threads().min(m / MIN_BLOCK_ROWS).max(1);
    // Rows split evenly, in multiples of 8 (whole SIMD lanes of a column).
    let per_block = m.div_ceil(blocks).next_multiple_of(8);
    // Pointers cross to rayon's threads as addresses: each block writes its
    // own rows of `dst` only.
    let (dst_at, lhs_at, rhs_at) = (dst as usize, lhs as usize, rhs as usize);
    let taken = std::sync::atomic::AtomicBool::new(true);
    rayon::scope(|scope| {
        for first in (0..m).step_by(per_block) {
            let rows = per_block.min(m - first);
            let taken = &taken;
            scope.spawn(move |_| {
                let dst = (dst_at as *mut f32).wrapping_add(first * dst_rs);
                let lhs = (lhs_at as *const f32).wrapping_add(first * lhs_rs);
                // SAFETY: the caller's contract, for rows `first..first + rows`.
                let rhs = (rhs_at as *const f32, rhs_rs, rhs_cs);
                let ok = unsafe { library.sgemm(accumulate, (rows, n, k), (dst, dst_rs), (lhs, lhs_rs, lhs_cs), rhs) };
                if !ok {
                    taken.store(false, Ordering::Relaxed);
                }
            });
        }
    });
    // The strides suit every block (`takes`), and a block is no larger than
    // the whole, so a block is refused only for sizes no block can take.
    taken.into_inner()
}

/// # Safety
/// As `product`'s checks and aliasing; an uninitialised `dst` only without
/// `accumulate`.
unsafe fn raw(
    threads: Threads,
    accumulate: bool,
    (m, n, k): (usize, usize, usize),
    (dst, dst_rs): (*mut f32, usize),
    (lhs, lhs_rs, lhs_cs): (*const f32, usize, usize),
    (rhs, rhs_rs, rhs_cs): (*const f32, usize, usize),
) {
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    if threads == Threads::Pool
        && let Some(library) = blas_in_use()
        // SAFETY: the caller's contract.
        && unsafe { on_row_blocks(library, accumulate, (m, n, k), (dst, dst_rs), (lhs, lhs_rs, lhs_cs), (rhs, rhs_rs, rhs_cs)) }
    {
        return;
    }
    let parallelism = match threads {
        Threads::One => gemm::Parallelism::None,
        Threads::Pool => gemm::Parallelism::Rayon(0),
    };
    // SAFETY: the caller's contract.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            dst_rs as isize,
            accumulate,
            lhs,
            lhs_cs as isize,
            lhs_rs as isize,
            rhs,
            rhs_cs as isize,
            rhs_rs as isize,
            1.0f32,
            1.0f32,
            false,
            false,
            false,
            parallelism,
        );
    }
}
