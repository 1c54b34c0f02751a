//! Dense products on strided views of slices, through the `gemm` crate that
//! burn's CPU backend uses (it picks its SIMD kernels at run time), or, for
//! the fixed blocks of the dense layers ([`Threads::Block`]), a CBLAS library
//! (`GRID_BLAS`, [`crate::blas`]). Shared by the kernels that multiply
//! inside a fused pass.

use std::mem::MaybeUninit;

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
    product(
        Threads::of_size((m, n, k)),
        accumulate,
        (m, n, k),
        (dst, dst_rs),
        lhs,
        (lhs_rs, lhs_cs),
        rhs,
        (rhs_rs, rhs_cs),
    );
}

/// Where a product runs.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Threads {
    /// On the calling thread (a caller that splits the work itself).
    One,
    /// Over rayon's threads, as the `gemm` crate splits it.
    Pool,
    /// On the calling thread, one of a caller's fixed blocks (several run at
    /// once): in the given CBLAS library (it runs single-threaded), else as
    /// [`Threads::One`]. A block of a fixed shape takes the same path
    /// whatever else runs, so its values do not depend on how a batch was
    /// split. The caller names the library (usually `linear::blas_in_use`), so
    /// `GRID_BLAS=auto` can time one without changing what other threads use.
    Block(Option<&'static blas::Blas>),
}

impl Threads {
    /// Over threads only where the product is large enough to pay for it;
    /// the split is over rows and columns, so each sum keeps its order.
    pub(crate) fn of_size((m, n, k): (usize, usize, usize)) -> Threads {
        if m * n * k >= 1 << 21 { Threads::Pool } else { Threads::One }
    }
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
    lhs_strides: (usize, usize),
    rhs: &[f32],
    rhs_strides: (usize, usize),
) {
    assert_eq!(dst.len(), m * n, "gemm: a destination of m × n");
    product_into_rows(threads, (m, n, k), (dst, n), lhs, lhs_strides, rhs, rhs_strides);
}

/// [`product_into`] into rows `dst_rs` apart: the `m × n` values it names
/// are written, the rest of `dst` (between rows) left as it was.
#[allow(clippy::too_many_arguments)]
pub(crate) fn product_into_rows(
    threads: Threads,
    (m, n, k): (usize, usize, usize),
    (dst, dst_rs): (&mut [MaybeUninit<f32>], usize),
    lhs: &[f32],
    (lhs_rs, lhs_cs): (usize, usize),
    rhs: &[f32],
    (rhs_rs, rhs_cs): (usize, usize),
) {
    if k == 0 {
        // An empty sum: zeros, written here since no product runs.
        assert!(m == 0 || n == 0 || (m - 1) * dst_rs + n <= dst.len(), "gemm: destination too small");
        for row in 0..m {
            dst[row * dst_rs..][..n].fill(MaybeUninit::new(0.0));
        }
        return;
    }
    check((m, n, k), (dst.len(), dst_rs), (lhs.len(), lhs_rs, lhs_cs), (rhs.len(), rhs_rs, rhs_cs));
    // SAFETY: as in `product`; without accumulation neither `gemm` nor BLAS
    // reads the destination, and with k > 0 both write every value named.
    unsafe {
        raw(
            threads,
            false,
            (m, n, k),
            (dst.as_mut_ptr().cast(), dst_rs),
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
    if let Threads::Block(Some(library)) = threads
        // SAFETY: the caller's contract.
        && unsafe { library.sgemm(accumulate, (m, n, k), (dst, dst_rs), (lhs, lhs_rs, lhs_cs), (rhs, rhs_rs, rhs_cs)) }
    {
        return;
    }
    let parallelism = match threads {
        Threads::One | Threads::Block(_) => gemm::Parallelism::None,
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
