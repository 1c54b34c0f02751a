//! Splitting an output into chunks, over threads when it is long.

use rayon::prelude::*;

/// `f(index, chunk)` for each `chunk`-long piece of `out` (the last may be
/// shorter), on rayon's threads when `parallel`, else in order. Each piece
/// is computed the same way either way, so the split never changes a value.
pub(crate) fn for_each_chunk(
    out: &mut [f32],
    chunk: usize,
    parallel: bool,
    f: impl Fn((usize, &mut [f32])) + Sync + Send,
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
pub(crate) fn for_each_chunk_pair(
    a: &mut [f32],
    chunk_a: usize,
    b: &mut [f32],
    chunk_b: usize,
    parallel: bool,
    f: impl Fn((usize, (&mut [f32], &mut [f32]))) + Sync + Send,
) {
    if parallel {
        a.par_chunks_mut(chunk_a).zip(b.par_chunks_mut(chunk_b)).enumerate().for_each(f);
    } else {
        a.chunks_mut(chunk_a).zip(b.chunks_mut(chunk_b)).enumerate().for_each(f);
    }
}
