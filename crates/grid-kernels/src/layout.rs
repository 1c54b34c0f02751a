//! Copies that change a tensor's layout. burn's CPU backend swaps two
//! dimensions as a strided view and makes it contiguous later, one computed
//! index per element (its `StridedIter`: with the copies around it, 16% of
//! the tiny BERT's training profile, from splitting and merging attention
//! heads); here each contiguous run of the innermost dimension is one copy.

use crate::chunks::for_each_chunk;

/// From this many values, split over threads (by the first dimension).
const PARALLEL_ELEMENTS: usize = 1 << 16;

/// `[a, b, c, d]` → `[a, c, b, d]`, row-major: the two middle dimensions
/// swapped (attention's `[batch, time, heads, head]` ↔ `[batch, heads, time,
/// head]`). Its own inverse, with `b` and `c` exchanged.
pub fn swap_middle(values: &[f32], [a, b, c, d]: [usize; 4]) -> Vec<f32> {
    assert_eq!(values.len(), a * b * c * d, "values for the shape");
    let mut out = vec![0.0f32; values.len()];
    if out.is_empty() {
        return out;
    }
    let block = b * c * d; // one index of the first dimension, either layout
    let copy = |(i, out): (usize, &mut [f32])| {
        let from = &values[i * block..(i + 1) * block];
        for j in 0..b {
            for k in 0..c {
                let (src, dst) = ((j * c + k) * d, (k * b + j) * d);
                out[dst..dst + d].copy_from_slice(&from[src..src + d]);
            }
        }
    };
    for_each_chunk(&mut out, block, values.len() >= PARALLEL_ELEMENTS, copy);
    out
}

/// `to [columns, rows] = fromᵀ` for `from` `[rows, columns]`, row-major.
/// Where the CPU has AVX-512, 16 × 16 tiles in registers (16 loads, 64
/// shuffles, 16 stores a tile; each load and store one cache line), down a
/// band of 16 columns so that each output row's values are written in a
/// run; the rest, and other CPUs, in 8 × 8 tiles through a local array
/// (which the compiler turns into register shuffles: element by element,
/// this was 7% of the ResNet layers' products), edges one value at a time.
/// The 8 × 8 tiles alone ran the output gradients' transpose of a ResNet's
/// weight gradient at a fraction of the memory's rate (a tenth of the
/// ImageNet stem's training step at 112 pixels; BENCHMARKS.md).
pub(crate) fn transpose(from: &[f32], (rows, columns): (usize, usize), to: &mut [f32]) {
    assert!(from.len() >= rows * columns && to.len() >= rows * columns, "transpose: sizes");
    let (mut wide_rows, mut wide_columns) = (0, 0);
    #[cfg(target_arch = "x86_64")]
    if crate::packed::Isa::detected() == Some(crate::packed::Isa::Avx512) && rows >= 16 && columns >= 16 {
        (wide_rows, wide_columns) = (rows / 16 * 16, columns / 16 * 16);
        // SAFETY: the CPU has AVX-512 F; both slices hold `rows × columns`
        // values (asserted) and the tiles lie inside them.
        unsafe { avx512::tiles(from, (rows, columns), (wide_rows, wide_columns), to) };
    }
    // What the wide tiles left: every column of the rows below them, and
    // the columns right of them in their rows.
    tiles(from, (rows, columns), (wide_rows..rows, 0..columns), to);
    tiles(from, (rows, columns), (0..wide_rows, wide_columns..columns), to);
}

/// [`transpose`] of the values in `row_range × column_range`: 8 × 8 tiles
/// in bands of tiles that keep both sides' lines in the cache, the edges
/// one value at a time.
fn tiles(
    from: &[f32],
    (rows, columns): (usize, usize),
    (row_range, column_range): (std::ops::Range<usize>, std::ops::Range<usize>),
    to: &mut [f32],
) {
    const T: usize = 8;
    const BAND: usize = 32;
    let tiled_rows = row_range.start + row_range.len() / T * T;
    let tiled_columns = column_range.start + column_range.len() / T * T;
    for c1 in (column_range.start..tiled_columns).step_by(BAND) {
        for r0 in (row_range.start..tiled_rows).step_by(T) {
            for c0 in (c1..tiled_columns.min(c1 + BAND)).step_by(T) {
                let mut tile = [[0.0f32; T]; T];
                for (i, row) in tile.iter_mut().enumerate() {
                    row.copy_from_slice(&from[(r0 + i) * columns + c0..][..T]);
                }
                for j in 0..T {
                    let out: &mut [f32; T] = (&mut to[(c0 + j) * rows + r0..][..T]).try_into().expect("a whole tile");
                    *out = std::array::from_fn(|i| tile[i][j]);
                }
            }
        }
    }
    let one = |r: usize, c: usize, to: &mut [f32]| to[c * rows + r] = from[r * columns + c];
    for r in row_range.clone() {
        for c in tiled_columns..column_range.end {
            one(r, c, to);
        }
    }
    for r in tiled_rows..row_range.end {
        for c in column_range.start..tiled_columns {
            one(r, c, to);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    /// The 16 × 16 tiles of [`super::transpose`] in `wide_rows ×
    /// wide_columns` (multiples of 16).
    ///
    /// # Safety
    /// The CPU has AVX-512 F; `from` and `to` hold `rows × columns` values;
    /// `wide_rows ≤ rows`, `wide_columns ≤ columns`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn tiles(
        from: &[f32],
        (rows, columns): (usize, usize),
        (wide_rows, wide_columns): (usize, usize),
        to: &mut [f32],
    ) {
        let (src, dst) = (from.as_ptr(), to.as_mut_ptr());
        for c0 in (0..wide_columns).step_by(16) {
            for r0 in (0..wide_rows).step_by(16) {
                // SAFETY: rows r0..r0+16 and columns c0..c0+16 are inside
                // `from`; their transposes inside `to` (the caller's bounds).
                unsafe {
                    let r: [__m512; 16] = std::array::from_fn(|i| _mm512_loadu_ps(src.add((r0 + i) * columns + c0)));
                    for (c, row) in tile(r).into_iter().enumerate() {
                        _mm512_storeu_ps(dst.add((c0 + c) * rows + r0), row);
                    }
                }
            }
        }
    }

    /// Row `c` of the result holds value `c` of every row of `r`.
    #[target_feature(enable = "avx512f")]
    fn tile(r: [__m512; 16]) -> [__m512; 16] {
        // Within each 128-bit lane: 32-bit, then 64-bit interleaves. After
        // them, lane `l` of `u[4i + j]` holds value `4l + j` of rows `4i ..
        // 4i + 4`.
        let t: [__m512; 16] = std::array::from_fn(|k| {
            let (a, b) = (r[k & !1], r[k | 1]);
            if k % 2 == 0 { _mm512_unpacklo_ps(a, b) } else { _mm512_unpackhi_ps(a, b) }
        });
        let u: [__m512; 16] = std::array::from_fn(|k| {
            let (i, j) = (k / 4, k % 4);
            let (a, b) = (_mm512_castps_pd(t[4 * i + j / 2]), _mm512_castps_pd(t[4 * i + j / 2 + 2]));
            _mm512_castpd_ps(if j % 2 == 0 { _mm512_unpacklo_pd(a, b) } else { _mm512_unpackhi_pd(a, b) })
        });
        // Then whole lanes: row `4l + j` gathers lane `l` of u[j], u[4 + j],
        // u[8 + j] and u[12 + j].
        let mut out = [_mm512_setzero_ps(); 16];
        for j in 0..4 {
            let even_low = _mm512_shuffle_f32x4::<0x88>(u[j], u[4 + j]);
            let odd_low = _mm512_shuffle_f32x4::<0xdd>(u[j], u[4 + j]);
            let even_high = _mm512_shuffle_f32x4::<0x88>(u[8 + j], u[12 + j]);
            let odd_high = _mm512_shuffle_f32x4::<0xdd>(u[8 + j], u[12 + j]);
            out[j] = _mm512_shuffle_f32x4::<0x88>(even_low, even_high);
            out[8 + j] = _mm512_shuffle_f32x4::<0xdd>(even_low, even_high);
            out[4 + j] = _mm512_shuffle_f32x4::<0x88>(odd_low, odd_high);
            out[12 + j] = _mm512_shuffle_f32x4::<0xdd>(odd_low, odd_high);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swaps_the_middle_dimensions_and_undoes_itself() {
        let shape = [2, 3, 4, 5];
        let values: Vec<f32> = (0..120).map(|v| v as f32).collect();
        let swapped = swap_middle(&values, shape);
        for i in 0..2 {
            for j in 0..3 {
                for k in 0..4 {
                    for l in 0..5 {
                        assert_eq!(swapped[((i * 4 + k) * 3 + j) * 5 + l], values[((i * 3 + j) * 4 + k) * 5 + l]);
                    }
                }
            }
        }
        assert_eq!(swap_middle(&swapped, [2, 4, 3, 5]), values);
        // Past the threshold for threads: the same as a serial copy.
        let big: Vec<f32> = (0..PARALLEL_ELEMENTS * 2).map(|v| v as f32).collect();
        let there = swap_middle(&big, [4, 16, 32, PARALLEL_ELEMENTS / 1024]);
        assert_eq!(swap_middle(&there, [4, 32, 16, PARALLEL_ELEMENTS / 1024]), big);
        assert!(swap_middle(&[], [0, 2, 3, 4]).is_empty());
    }

    /// The transpose of matrices with and without whole tiles of 8 and 16,
    /// and edges of every width.
    #[test]
    fn transpose_swaps_rows_and_columns() {
        let shapes =
            [(8, 16), (13, 21), (3, 5), (32, 1024), (1, 9), (16, 16), (17, 33), (64, 3136), (40, 24), (24, 40)];
        for (rows, columns) in shapes {
            let from: Vec<f32> = (0..rows * columns).map(|v| v as f32).collect();
            let mut to = vec![f32::NAN; rows * columns];
            transpose(&from, (rows, columns), &mut to);
            for r in 0..rows {
                for c in 0..columns {
                    assert_eq!(to[c * rows + r], from[r * columns + c], "{rows} × {columns} at ({r}, {c})");
                }
            }
        }
    }

    /// Gigabytes a second read and written, wide tiles and 8 × 8 tiles alone,
    /// on the shapes of a ResNet's weight gradients.
    #[test]
    #[ignore = "a measurement, not a test"]
    fn transpose_rates() {
        for (rows, columns, times) in [(16, 1024, 2000), (64, 3136, 200), (64, 784, 800), (128, 196, 1600)] {
            let from: Vec<f32> = (0..rows * columns).map(|v| v as f32).collect();
            let rate = |f: &dyn Fn(&mut [f32])| {
                let start = std::time::Instant::now();
                let mut to = vec![0.0f32; rows * columns];
                for _ in 0..times {
                    f(&mut to);
                }
                (8 * rows * columns * times) as f64 / start.elapsed().as_secs_f64() / 1e9
            };
            let wide = rate(&|to| transpose(&from, (rows, columns), to));
            let narrow = rate(&|to| tiles(&from, (rows, columns), (0..rows, 0..columns), to));
            println!("{rows} × {columns}: {wide:.1} GB/s, 8 × 8 tiles {narrow:.1} GB/s");
        }
    }
}
