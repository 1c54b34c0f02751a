//! Small dense products on strided views of slices, through the `gemm`
//! crate that burn's CPU backend uses (it picks its SIMD kernels at run
//! time). Shared by the kernels that multiply inside a fused pass.

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
    if m == 0 || n == 0 || k == 0 {
        return;
    }
    // The last element each operand is read or written at must lie inside it.
    assert!((m - 1) * dst_rs + n <= dst.len(), "gemm: destination too small");
    assert!((m - 1) * lhs_rs + (k - 1) * lhs_cs < lhs.len(), "gemm: left operand too small");
    assert!((k - 1) * rhs_rs + (n - 1) * rhs_cs < rhs.len(), "gemm: right operand too small");
    let parallelism = match threads {
        Threads::One => gemm::Parallelism::None,
        Threads::Pool => gemm::Parallelism::Rayon(0),
    };
    // SAFETY: the asserts above keep every access inside the slices; `dst`
    // does not alias `lhs` or `rhs` (it is borrowed mutably).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            dst_rs as isize,
            accumulate,
            lhs.as_ptr(),
            lhs_cs as isize,
            lhs_rs as isize,
            rhs.as_ptr(),
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
