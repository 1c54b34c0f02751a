//! Splitting an output into chunks, over threads when it is long.

use std::mem::MaybeUninit;

use rayon::prelude::*;

/// A destination not yet written (what [`written`] hands its `fill`, in pieces).
pub(crate) type Unwritten<'a, T = f32> = &'a mut [MaybeUninit<T>];

/// `len` values written by `fill` (every one of them) without zeroing them first.
pub(crate) fn written<T>(len: usize, fill: impl FnOnce(&mut [MaybeUninit<T>])) -> Vec<T> {
    let mut values: Vec<T> = Vec::with_capacity(len);
    fill(&mut values.spare_capacity_mut()[..len]);
    // SAFETY: `fill` wrote every value (the callers' contract).
    unsafe { values.set_len(len) };
    values
}

/// Initialised values as a destination for code that writes without
/// reading (a product into `MaybeUninit`).
pub(crate) fn as_uninit(values: &mut [f32]) -> &mut [MaybeUninit<f32>] {
    // SAFETY: `MaybeUninit<f32>` has `f32`'s layout, and its users write only
    // floats, so `values` stays initialised.
    unsafe { &mut *(values as *mut [f32] as *mut [MaybeUninit<f32>]) }
}

/// `f(index, chunk)` for each `chunk`-long piece of `out` (the last may be
/// shorter), on rayon's threads when `parallel`, else in order. Each piece
/// is computed the same way either way, so the split never changes a value.
pub(crate) fn for_each_chunk<T: Send>(
    out: &mut [T],
    chunk: usize,
    parallel: bool,
    f: impl Fn((usize, &mut [T])) + Sync + Send,
) {
    if parallel {
        out.par_chunks_mut(chunk).enumerate().for_each(f);
    } else {
        out.chunks_mut(chunk).enumerate().for_each(f);
    }
}

/// [`for_each_chunk`] over two outputs split alike: the `i`-th `chunk_a`-long
/// piece of `a` with the `i`-th `chunk_b`-long piece of `b` (per-value and
/// per-row outputs of the same rows).
pub(crate) fn for_each_chunk_pair<A: Send, B: Send>(
    a: &mut [A],
    chunk_a: usize,
    b: &mut [B],
    chunk_b: usize,
    parallel: bool,
    f: impl Fn((usize, (&mut [A], &mut [B]))) + Sync + Send,
) {
    if parallel {
        a.par_chunks_mut(chunk_a).zip(b.par_chunks_mut(chunk_b)).enumerate().for_each(f);
    } else {
        a.chunks_mut(chunk_a).zip(b.chunks_mut(chunk_b)).enumerate().for_each(f);
    }
}

/// `f(row, values)` for each `len`-long row of `out`, split into shares of
/// whole rows (about `share_values` values each; at least one row), on
/// rayon's threads when `parallel`. Rows are computed alone, so the split
/// never changes a value.
pub(crate) fn for_each_row<T: Send>(
    out: &mut [T],
    len: usize,
    share_values: usize,
    parallel: bool,
    f: impl Fn(usize, &mut [T]) + Sync + Send,
) {
    let rows = rows_per_share(len, share_values);
    for_each_chunk(out, rows * len, parallel, |(share, chunk)| {
        for (k, values) in chunk.chunks_mut(len).enumerate() {
            f(share * rows + k, values);
        }
    });
}

/// [`for_each_row`] with one more output of one value per row:
/// `f(row, values, &mut that row's value)`.
pub(crate) fn for_each_row_with_scalar<T: Send>(
    out: &mut [T],
    len: usize,
    per_row: &mut [f32],
    share_values: usize,
    parallel: bool,
    f: impl Fn(usize, &mut [T], &mut f32) + Sync + Send,
) {
    let rows = rows_per_share(len, share_values);
    for_each_chunk_pair(out, rows * len, per_row, rows, parallel, |(share, (chunk, scalars))| {
        for (k, (values, scalar)) in chunk.chunks_mut(len).zip(scalars.iter_mut()).enumerate() {
            f(share * rows + k, values, scalar);
        }
    });
}

/// Whole `len`-long rows in a share of about `share_values` values.
pub(crate) fn rows_per_share(len: usize, share_values: usize) -> usize {
    (share_values / len).max(1)
}
