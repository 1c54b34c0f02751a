//! `C [m, n] = A [m, k] · B [k, n]` with a left operand packed once and
//! reused for many right operands: a convolution's weight against each
//! image's patch matrix. The products a ResNet makes have few rows (its
//! outputs: 8 to 512) and many columns (the positions), the shape on which
//! `gemm`'s kernels run at about half the CPU's ceiling.
//!
//! On a CPU with AVX-512 each 8 × 48 block of `C` is held in 24 registers
//! while the whole depth `k` streams past: per step one row of a packed
//! 48-column panel of `B` (three vectors) and eight broadcast values of `A`,
//! 24 fused multiply-adds. Every value of `C` is the sum over `k` in order,
//! one fused multiply-add at a time, so it depends only on its row of `A` and
//! its column of `B`: not on `n`, the panel it fell in, the threads or the
//! batch (a saliency map does not depend on the images beside it).
//!
//! On a CPU with AVX2 and FMA but not AVX-512 (16 vector registers of 8
//! lanes) the same block runs as tiles of 4 × 16, 8 sums in registers,
//! each over the whole depth: the same fused multiply-adds in the same
//! order, so a value is the same bits on either CPU.
//! [`PackedLhs::available`] says whether this CPU runs one of them; the
//! callers keep `gemm` for the others.

use std::mem::MaybeUninit;

use rayon::prelude::*;

use crate::chunks::{as_uninit, for_each_chunk, written};

/// Rows of `C` per block (and of `A` per packed block).
const ROWS: usize = 8;
/// Lanes of a vector.
const LANES: usize = 16;
/// Columns of `C` per panel: three vectors.
const PANEL: usize = 3 * LANES;
/// Depth per pass over a panel: 128 rows of it are 24 kB.
const SLICE: usize = 128;
/// Panels packed together, a slice of each (192 kB).
const GROUP: usize = 8;
/// Packed values from which [`PackedLhs::of`] packs on the threads.
const PARALLEL_PACK: usize = 1 << 18;

/// `A [m, k]` in blocks of [`ROWS`] rows, each stored column by column
/// (`[k][ROWS]`), the last block padded with zero rows.
pub struct PackedLhs {
    rows: usize,
    depth: usize,
    blocks: Vec<f32>,
}

/// The instructions a block's kernel is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Isa {
    /// AVX-512 F: an 8 × 48 block in 24 registers.
    Avx512,
    /// AVX2 and FMA: the block as tiles of 4 × 16, 8 sums in registers each.
    Avx2,
}

impl Isa {
    /// This CPU's, detected once; `None` where it has neither.
    pub(crate) fn detected() -> Option<Isa> {
        #[cfg(target_arch = "x86_64")]
        {
            static ISA: std::sync::OnceLock<Option<Isa>> = std::sync::OnceLock::new();
            *ISA.get_or_init(|| {
                if std::arch::is_x86_feature_detected!("avx512f") {
                    Some(Isa::Avx512)
                } else if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma") {
                    Some(Isa::Avx2)
                } else {
                    None
                }
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        None
    }
}

impl PackedLhs {
    /// Whether this CPU runs the packed product (AVX-512 F, or AVX2 and FMA).
    pub fn available() -> bool {
        Isa::detected().is_some()
    }

    /// Packs `a` `[rows, depth]`, element `(i, k)` at `i · row_stride + k ·
    /// column_stride` (a transposed matrix packs as well).
    pub fn of(a: &[f32], rows: usize, depth: usize, (row_stride, column_stride): (usize, usize)) -> PackedLhs {
        if rows > 0 && depth > 0 {
            let last = (rows - 1) * row_stride + (depth - 1) * column_stride;
            assert!(last < a.len(), "packed: left operand too small");
        }
        let count = rows.div_ceil(ROWS);
        // Written in order, a column of a block (ROWS values) at a time: each
        // read is one of ROWS streams through `a` (or, transposed, one run).
        // A deep layer's weight is megabytes (512 channels, 3 × 3: 9 MB,
        // 2 ms on one thread of an Intel Xeon, against a product of 16 ms),
        // so large ones are packed on the threads, into memory not cleared
        // first.
        let parallel = count * depth * ROWS >= PARALLEL_PACK;
        let blocks = written(count * depth * ROWS, |blocks| {
            for_each_chunk(blocks, depth * ROWS, parallel, |(b, block)| {
                let live = ROWS.min(rows - b * ROWS);
                let first = b * ROWS * row_stride;
                for (k, column) in block.chunks_exact_mut(ROWS).enumerate() {
                    let at = first + k * column_stride;
                    let (values, beyond) = column.split_at_mut(live);
                    if row_stride == 1 {
                        for (value, &v) in values.iter_mut().zip(&a[at..at + live]) {
                            value.write(v);
                        }
                    } else {
                        for (r, value) in values.iter_mut().enumerate() {
                            value.write(a[at + r * row_stride]);
                        }
                    }
                    for value in beyond {
                        value.write(0.0);
                    }
                }
            })
        });
        PackedLhs { rows, depth, blocks }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn depth(&self) -> usize {
        self.depth
    }

    /// `dst [rows, n] = self · b`, `b` `[depth, n]` row-major with rows
    /// `b_stride` apart, `dst` rows `n` apart; every value of `dst` written.
    /// Panels run on rayon's threads with `parallel`, else on this one.
    pub fn multiply(&self, b: &[f32], b_stride: usize, n: usize, dst: &mut [f32], parallel: bool) {
        self.multiply_into(b, b_stride, n, as_uninit(dst), parallel);
    }

    /// [`PackedLhs::multiply`] into a destination not yet written.
    pub fn multiply_into(&self, b: &[f32], b_stride: usize, n: usize, dst: &mut [MaybeUninit<f32>], parallel: bool) {
        assert!(Self::available(), "packed: this CPU has neither AVX-512 nor AVX2");
        assert_eq!(dst.len(), self.rows * n, "packed: a destination of rows × n");
        assert!(self.depth == 0 || (self.depth - 1) * b_stride + n <= b.len(), "packed: right operand too small");
        if n == 0 || self.rows == 0 {
            return;
        }
        let all = panels(n);
        let groups = all.len().div_ceil(GROUP);
        let out = Out(dst.as_mut_ptr().cast::<f32>());
        let run = |g: usize| {
            let panels = &all[g * GROUP..all.len().min((g + 1) * GROUP)];
            with_panel(panels.len() * SLICE * PANEL, |slices| {
                // The depth a slice at a time: the group's panels of that
                // slice stay in the second-level cache while each panel, in
                // the first, meets every block of rows. A block's sums carry
                // from one slice to the next through `dst` unchanged (a float
                // is stored and read back exactly), so each is still the
                // whole depth in order.
                for start in (0..self.depth).step_by(SLICE) {
                    let depth = SLICE.min(self.depth - start);
                    let rows_of_b = &b[start * b_stride..];
                    for (&(column, columns), panel) in panels.iter().zip(slices.chunks_exact_mut(SLICE * PANEL)) {
                        pack_panel(rows_of_b, b_stride, column, columns, depth, panel);
                    }
                    for (&(column, columns), panel) in panels.iter().zip(slices.chunks_exact(SLICE * PANEL)) {
                        for (block, a) in self.blocks.chunks_exact(self.depth * ROWS).enumerate() {
                            let rows = ROWS.min(self.rows - block * ROWS);
                            // SAFETY: the block writes `rows` rows of `columns`
                            // values at `(block · ROWS, column)` of `dst` (rows ×
                            // n): inside it, and no other panel or block writes
                            // them; `start > 0` reads what the slice before wrote.
                            unsafe {
                                let c = out.get().add(block * ROWS * n + column);
                                let a = &a[start * ROWS..];
                                let tile = Tile { c, stride: n, rows, columns, accumulate: start > 0 };
                                block_product(depth, Lhs::packed(a), Rhs::panel(panel), tile);
                            }
                        }
                    }
                }
            });
        };
        if parallel && groups > 1 {
            (0..groups).into_par_iter().for_each(run);
        } else {
            (0..groups).for_each(run);
        }
    }

    /// `dst [rows, n] = self · B` where row `k` of `B` is the `n` values of
    /// `b` from `offsets[k]`, read in place: a same-size convolution's padded
    /// image, whose rows for each (channel, kernel tap) are views of it at
    /// overlapping offsets (`conv::PaddedImage`), as one product of the whole
    /// depth instead of one per tap through `dst`. Each block of `dst` holds
    /// its sums in registers over the whole depth; each value is the depth in
    /// order, as in [`PackedLhs::multiply`]. Panels run on rayon's threads
    /// with `parallel`.
    pub fn multiply_gathered(
        &self,
        b: &[f32],
        offsets: &[usize],
        n: usize,
        dst: &mut [MaybeUninit<f32>],
        parallel: bool,
    ) {
        assert!(Self::available(), "packed: this CPU has neither AVX-512 nor AVX2");
        assert_eq!(offsets.len(), self.depth, "packed: an offset per row of the right operand");
        assert_eq!(dst.len(), self.rows * n, "packed: a destination of rows × n");
        assert!(offsets.iter().all(|&at| at + n <= b.len()), "packed: right operand too small");
        if n == 0 || self.rows == 0 {
            return;
        }
        if self.depth == 0 {
            dst.fill(MaybeUninit::new(0.0));
            return;
        }
        let out = Out(dst.as_mut_ptr().cast::<f32>());
        let run = |&(column, columns): &(usize, usize)| {
            for (block, a) in self.blocks.chunks_exact(self.depth * ROWS).enumerate() {
                let rows = ROWS.min(self.rows - block * ROWS);
                // SAFETY: the block writes `rows` rows of `columns` values at
                // `(block · ROWS, column)` of `dst` (rows × n): inside it, and
                // no other panel or block writes them; row `k` of the operand
                // is `b`'s values from `offsets[k] + column`, the last vector
                // masked to `columns`: inside `b` (asserted).
                unsafe {
                    let c = out.get().add(block * ROWS * n + column);
                    let rhs = Gathered { b: b.as_ptr().add(column), offsets: offsets.as_ptr() };
                    let tile = Tile { c, stride: n, rows, columns, accumulate: false };
                    block_product(self.depth, Lhs::packed(a), rhs, tile);
                }
            }
        };
        let all = panels(n);
        if parallel {
            all.par_iter().for_each(run);
        } else {
            all.iter().for_each(run);
        }
    }
}

/// `dst [m, n] = a [m, depth] · b [depth, n]` (with `accumulate`, added to
/// `dst`), both operands read where they lie: `a` row-major with rows
/// `a_stride` apart, `b` row-major with rows `b_stride` apart, `dst` rows
/// `n` apart; on this thread (callers split the rows).
///
/// For products whose depth is long and whose `b` is narrow, as a
/// convolution's weight gradient `∂Wᵀ = cols · ∂Yᵀ` (depth: images ×
/// positions; `b`: the output channels), where packing `a` would copy as
/// much as the product reads. The depth a slice at a time: each block of
/// rows meets the slice of `b` while it is in the first-level cache. Every
/// value is the sum over the depth in order, as in [`PackedLhs::multiply`]:
/// it does not depend on how the caller splits the rows.
pub fn multiply_strided(
    (a, a_stride): (&[f32], usize),
    (b, b_stride): (&[f32], usize),
    (m, n, depth): (usize, usize, usize),
    dst: &mut [f32],
    accumulate: bool,
) {
    assert!(PackedLhs::available(), "packed: this CPU has neither AVX-512 nor AVX2");
    assert_eq!(dst.len(), m * n, "packed: a destination of m × n");
    if m == 0 || n == 0 {
        return;
    }
    if depth == 0 {
        if !accumulate {
            dst.fill(0.0);
        }
        return;
    }
    assert!(a_stride >= depth && (m - 1) * a_stride + depth <= a.len(), "packed: left operand too small");
    assert!(b_stride >= n && (depth - 1) * b_stride + n <= b.len(), "packed: right operand too small");
    let all = panels(n);
    for start in (0..depth).step_by(SLICE) {
        let slice = SLICE.min(depth - start);
        for &(column, columns) in &all {
            for block in 0..m.div_ceil(ROWS) {
                let rows = ROWS.min(m - block * ROWS);
                // SAFETY: rows `block · ROWS ..+ rows` of `a` and depth
                // `start ..+ slice` are inside it (asserted), as are rows
                // `start ..+ slice` of `b` at columns `column ..+ columns`;
                // the tile is inside `dst`, initialised where it accumulates
                // (`accumulate`, or the slice before wrote it).
                unsafe {
                    let lhs =
                        Lhs { a: a.as_ptr().add(block * ROWS * a_stride + start), row_step: a_stride, depth_step: 1 };
                    let rhs = Rhs { b: b.as_ptr().add(start * b_stride + column), stride: b_stride };
                    let c = dst.as_mut_ptr().add(block * ROWS * n + column);
                    let tile = Tile { c, stride: n, rows, columns, accumulate: accumulate || start > 0 };
                    block_product(slice, lhs, rhs, tile);
                }
            }
        }
    }
}

/// The panels of `n` columns, `(first column, columns)`: full panels,
/// except that a remainder of one vector or less after a full panel is
/// shared out as two vectors and the rest (a block with one vector of
/// columns keeps only 8 sums going, too few to hide the fused
/// multiply-add's latency).
fn panels(n: usize) -> Vec<(usize, usize)> {
    let mut widths = vec![PANEL; n / PANEL];
    let rest = n % PANEL;
    if rest > 0 && rest <= LANES && !widths.is_empty() {
        widths.pop();
        widths.extend([2 * LANES, PANEL - 2 * LANES + rest]);
    } else if rest > 0 {
        widths.push(rest);
    }
    widths
        .iter()
        .scan(0, |first, &w| {
            let panel = (*first, w);
            *first += w;
            Some(panel)
        })
        .collect()
}

/// The destination's pointer, shared by the panels (each writes its own columns).
#[derive(Clone, Copy)]
struct Out(*mut f32);
// SAFETY: the panels write disjoint values (see `multiply`).
unsafe impl Send for Out {}
unsafe impl Sync for Out {}

impl Out {
    fn get(self) -> *mut f32 {
        self.0
    }
}

/// Copies `columns` (≤ [`PANEL`]) columns of `b` from `first` into `panel`
/// `[depth][PANEL]`, zeros after them.
fn pack_panel(b: &[f32], stride: usize, first: usize, columns: usize, depth: usize, panel: &mut [f32]) {
    assert!(columns <= PANEL && panel.len() >= depth * PANEL);
    assert!(depth == 0 || (depth - 1) * stride + first + columns <= b.len(), "packed: right operand too small");
    #[cfg(target_arch = "x86_64")]
    if Isa::detected() == Some(Isa::Avx512) {
        // SAFETY: the CPU has AVX-512 F; rows `0..depth` of `b` hold `first
        // + columns` values (asserted), `panel` `depth` rows.
        unsafe { avx512::pack(b.as_ptr().add(first), stride, columns, depth, panel.as_mut_ptr()) }
        return;
    }
    for (k, row) in panel.chunks_exact_mut(PANEL).take(depth).enumerate() {
        let start = k * stride + first;
        row[..columns].copy_from_slice(&b[start..start + columns]);
        row[columns..].fill(0.0);
    }
}

/// A cache line of values: panels are built of them, so that no load of a
/// panel's vector straddles two lines.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([f32; LANES]);

thread_local! {
    static PANEL_SCRATCH: std::cell::Cell<Vec<Line>> = const { std::cell::Cell::new(Vec::new()) };
}

/// `f` with a thread's panel buffer of at least `len` values (aligned to a
/// cache line), taken out while `f` runs.
fn with_panel<T>(len: usize, f: impl FnOnce(&mut [f32]) -> T) -> T {
    let mut buffer = PANEL_SCRATCH.take();
    let lines = len.div_ceil(LANES);
    if buffer.len() < lines {
        buffer.resize(lines, Line([0.0; LANES]));
    }
    // SAFETY: `Line` is `LANES` f32s without padding (`repr(C)`, 64 bytes).
    let values = unsafe { std::slice::from_raw_parts_mut(buffer.as_mut_ptr().cast::<f32>(), lines * LANES) };
    let out = f(&mut values[..len]);
    PANEL_SCRATCH.set(buffer);
    out
}

/// Where a block's sums go: `rows` rows of `columns` values from `c`,
/// `stride` apart; with `accumulate`, added to the values there.
#[derive(Clone, Copy)]
struct Tile {
    c: *mut f32,
    stride: usize,
    rows: usize,
    columns: usize,
    accumulate: bool,
}

/// A block's left values: element `(r, k)` at `a + r · row_step + k ·
/// depth_step`, for the block's live rows (the kernel reads no other).
#[derive(Clone, Copy)]
struct Lhs {
    a: *const f32,
    row_step: usize,
    depth_step: usize,
}

impl Lhs {
    /// A block of [`PackedLhs`], `[depth][ROWS]`.
    fn packed(a: &[f32]) -> Lhs {
        Lhs { a: a.as_ptr(), row_step: 1, depth_step: ROWS }
    }
}

/// The right operand's rows for a block: row `k` at `b + k · stride`, its
/// first `columns` values read (the last vector masked).
#[derive(Clone, Copy)]
struct Rhs {
    b: *const f32,
    stride: usize,
}

impl Rhs {
    fn panel(panel: &[f32]) -> Rhs {
        Rhs { b: panel.as_ptr(), stride: PANEL }
    }
}

/// The right operand's rows for a block, each where its offset says: row
/// `k` at `b + offsets[k]` (a padded image's view per channel and kernel
/// tap, see [`PackedLhs::multiply_gathered`]).
#[derive(Clone, Copy)]
struct Gathered {
    b: *const f32,
    offsets: *const usize,
}

/// Where a block's right operand has its row `k`.
trait RowsOf: Copy {
    /// # Safety
    /// `k` is inside the operand's depth.
    unsafe fn row(self, k: usize) -> *const f32;

    /// The same rows from `columns` further right.
    ///
    /// # Safety
    /// Those columns are inside the operand.
    unsafe fn right(self, columns: usize) -> Self;
}

impl RowsOf for Rhs {
    #[inline(always)]
    unsafe fn row(self, k: usize) -> *const f32 {
        // SAFETY: the caller's `k` is a row of the operand.
        unsafe { self.b.add(k * self.stride) }
    }

    #[inline(always)]
    unsafe fn right(self, columns: usize) -> Rhs {
        // SAFETY: the caller's columns are inside the operand.
        Rhs { b: unsafe { self.b.add(columns) }, ..self }
    }
}

impl RowsOf for Gathered {
    #[inline(always)]
    unsafe fn row(self, k: usize) -> *const f32 {
        // SAFETY: the caller's `k` is inside `offsets`, each row inside `b`.
        unsafe { self.b.add(*self.offsets.add(k)) }
    }

    #[inline(always)]
    unsafe fn right(self, columns: usize) -> Gathered {
        // SAFETY: the caller's columns are inside every row.
        Gathered { b: unsafe { self.b.add(columns) }, ..self }
    }
}

/// One block: `tile = lhs [rows, depth] · rhs [depth, columns]`, the
/// narrowest kernel that covers its columns.
///
/// # Safety
/// `lhs` holds the tile's rows and `rhs` its columns over `depth`; the
/// tile's values are writable (and, to accumulate, initialised); the CPU
/// runs a packed kernel ([`PackedLhs::available`]).
unsafe fn block_product(depth: usize, lhs: Lhs, rhs: impl RowsOf, tile: Tile) {
    debug_assert!(tile.rows <= ROWS && tile.columns <= PANEL);
    #[cfg(target_arch = "x86_64")]
    unsafe {
        match Isa::detected() {
            Some(Isa::Avx512) => match tile.columns.div_ceil(LANES) {
                1 => avx512::block::<1>(depth, lhs, rhs, tile),
                2 => avx512::block::<2>(depth, lhs, rhs, tile),
                _ => avx512::block::<3>(depth, lhs, rhs, tile),
            },
            Some(Isa::Avx2) => avx2::block(depth, lhs, rhs, tile),
            None => unreachable!("packed: no kernel for this CPU"),
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (depth, lhs, rhs, tile);
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use std::arch::x86_64::*;

    use super::{LANES, Lhs, PANEL, ROWS, RowsOf, Tile};

    /// `depth` rows of `columns` values, `stride` apart from `b`, into
    /// `panel` rows of [`PANEL`] (zeros after the columns): three vector
    /// moves a row, not a `memcpy` call.
    ///
    /// # Safety
    /// As [`super::pack_panel`] asserts; the CPU has AVX-512 F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn pack(b: *const f32, stride: usize, columns: usize, depth: usize, panel: *mut f32) {
        let mask = |v: usize| -> __mmask16 {
            let left = columns.saturating_sub(v * LANES).min(LANES);
            if left == LANES { 0xffff } else { (1u16 << left) - 1 }
        };
        let masks = [mask(0), mask(1), mask(2)];
        for k in 0..depth {
            // SAFETY: row k < depth of both, masked to `columns` in `b`.
            unsafe {
                let (from, to) = (b.add(k * stride), panel.add(k * PANEL));
                for (v, &m) in masks.iter().enumerate() {
                    _mm512_storeu_ps(to.add(v * LANES), _mm512_maskz_loadu_ps(m, from.add(v * LANES)));
                }
            }
        }
    }

    /// `V` vectors of columns: `ROWS × V` accumulators, the depth in order.
    /// Rows past the tile's repeat its last (their sums are not stored), so
    /// nothing outside the live rows is read.
    ///
    /// # Safety
    /// As [`super::block_product`]; `columns ≤ V · LANES`.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn block<const V: usize>(depth: usize, lhs: Lhs, rhs: impl RowsOf, tile: Tile) {
        let Tile { c, stride: c_stride, rows, columns, accumulate } = tile;
        let last = columns - (V - 1) * LANES;
        let mask: __mmask16 = if last >= LANES { 0xffff } else { (1u16 << last) - 1 };
        let offsets: [usize; ROWS] = std::array::from_fn(|r| r.min(rows.saturating_sub(1)) * lhs.row_step);
        let mut acc = [[_mm512_setzero_ps(); V]; ROWS];
        if accumulate {
            for (r, acc) in acc.iter_mut().enumerate().take(rows) {
                // SAFETY: row r < rows of `c`, its first `columns` values.
                unsafe {
                    let out = c.add(r * c_stride);
                    for (v, acc) in acc.iter_mut().enumerate() {
                        let m = if v + 1 < V { 0xffff } else { mask };
                        *acc = _mm512_maskz_loadu_ps(m, out.add(v * LANES));
                    }
                }
            }
        }
        for k in 0..depth {
            // SAFETY: k < depth: inside `rhs` (its live columns) and `lhs`
            // (its live rows).
            unsafe {
                let row = rhs.row(k);
                let mut b = [_mm512_setzero_ps(); V];
                for (v, b) in b.iter_mut().enumerate() {
                    *b = if v + 1 < V {
                        _mm512_loadu_ps(row.add(v * LANES))
                    } else {
                        _mm512_maskz_loadu_ps(mask, row.add(v * LANES))
                    };
                }
                let column = lhs.a.add(k * lhs.depth_step);
                for (r, acc) in acc.iter_mut().enumerate() {
                    let x = _mm512_set1_ps(*column.add(offsets[r]));
                    for v in 0..V {
                        acc[v] = _mm512_fmadd_ps(x, b[v], acc[v]);
                    }
                }
            }
        }
        for (r, acc) in acc.iter().enumerate().take(rows) {
            // SAFETY: row r < rows of `c`, its first `columns` values.
            unsafe {
                let out = c.add(r * c_stride);
                for (v, &value) in acc.iter().enumerate() {
                    if v + 1 < V {
                        _mm512_storeu_ps(out.add(v * LANES), value);
                    } else {
                        _mm512_mask_storeu_ps(out.add(v * LANES), mask, value);
                    }
                }
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    use super::{Lhs, RowsOf, Tile};

    /// Lanes of a vector.
    const LANES: usize = 8;
    /// Rows of a tile.
    const ROWS: usize = 4;
    /// Columns of a tile: 4 × 2 sums, 2 vectors of the right operand and
    /// the broadcast values leave registers spare.
    const COLUMNS: usize = 2 * LANES;

    /// A block (≤ 8 rows, ≤ 48 columns) as tiles of [`ROWS`] × [`COLUMNS`],
    /// each the whole depth in order.
    ///
    /// # Safety
    /// As [`super::block_product`]; the CPU has AVX2 and FMA.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn block(depth: usize, lhs: Lhs, rhs: impl RowsOf, tile: Tile) {
        for first_row in (0..tile.rows).step_by(ROWS) {
            for first_column in (0..tile.columns).step_by(COLUMNS) {
                // SAFETY: the tile's rows and columns from these are inside
                // the block's, which the caller vouches for.
                unsafe {
                    let lhs = Lhs { a: lhs.a.add(first_row * lhs.row_step), ..lhs };
                    let rhs = rhs.right(first_column);
                    let part = Tile {
                        c: tile.c.add(first_row * tile.stride + first_column),
                        rows: ROWS.min(tile.rows - first_row),
                        columns: COLUMNS.min(tile.columns - first_column),
                        ..tile
                    };
                    // Whole vectors without masks: in 4 × 24 tiles a mask
                    // held in a register left too few for the sums, two of
                    // which went to the stack at every step (0.4× `gemm`).
                    match (part.columns.div_ceil(LANES), part.columns.is_multiple_of(LANES)) {
                        (1, true) => small::<1, false>(depth, lhs, rhs, part),
                        (_, true) => small::<2, false>(depth, lhs, rhs, part),
                        (1, false) => small::<1, true>(depth, lhs, rhs, part),
                        (_, false) => small::<2, true>(depth, lhs, rhs, part),
                    }
                }
            }
        }
    }

    /// The mask of `live` lanes of a vector (all from 8 on).
    ///
    /// # Safety
    /// The CPU has AVX2.
    #[target_feature(enable = "avx2")]
    unsafe fn mask(live: usize) -> __m256i {
        let lanes: [i32; LANES] = std::array::from_fn(|i| if i < live { -1 } else { 0 });
        // SAFETY: an unaligned load of eight values from an array of eight.
        unsafe { _mm256_loadu_si256(lanes.as_ptr().cast()) }
    }

    /// `V` vectors of columns: `ROWS × V` accumulators, the depth in order;
    /// the last vector `MASKED` where the columns end inside it. Rows past
    /// the tile's repeat its last (their sums are not stored), so nothing
    /// outside the live rows is read.
    ///
    /// # Safety
    /// As [`block`]; `rows ≤ ROWS`, `columns ≤ V · LANES`, and `columns =
    /// V · LANES` unless `MASKED`.
    #[target_feature(enable = "avx2,fma")]
    unsafe fn small<const V: usize, const MASKED: bool>(depth: usize, lhs: Lhs, rhs: impl RowsOf, tile: Tile) {
        let Tile { c, stride: c_stride, rows, columns, accumulate } = tile;
        // SAFETY: the CPU has AVX2. Only a masked tile reads it.
        let last = if MASKED { unsafe { mask(columns - (V - 1) * LANES) } } else { _mm256_setzero_si256() };
        let offsets: [usize; ROWS] = std::array::from_fn(|r| r.min(rows.saturating_sub(1)) * lhs.row_step);
        let mut acc = [[_mm256_setzero_ps(); V]; ROWS];
        if accumulate {
            for (r, acc) in acc.iter_mut().enumerate().take(rows) {
                // SAFETY: row r < rows of `c`, its first `columns` values.
                unsafe {
                    let out = c.add(r * c_stride);
                    for (v, acc) in acc.iter_mut().enumerate() {
                        *acc = if !MASKED || v + 1 < V {
                            _mm256_loadu_ps(out.add(v * LANES))
                        } else {
                            _mm256_maskload_ps(out.add(v * LANES), last)
                        };
                    }
                }
            }
        }
        for k in 0..depth {
            // SAFETY: k < depth: inside `rhs` (its live columns) and `lhs`
            // (its live rows).
            unsafe {
                let row = rhs.row(k);
                let mut b = [_mm256_setzero_ps(); V];
                for (v, b) in b.iter_mut().enumerate() {
                    *b = if !MASKED || v + 1 < V {
                        _mm256_loadu_ps(row.add(v * LANES))
                    } else {
                        _mm256_maskload_ps(row.add(v * LANES), last)
                    };
                }
                let column = lhs.a.add(k * lhs.depth_step);
                for (r, acc) in acc.iter_mut().enumerate() {
                    let x = _mm256_broadcast_ss(&*column.add(offsets[r]));
                    for v in 0..V {
                        acc[v] = _mm256_fmadd_ps(x, b[v], acc[v]);
                    }
                }
            }
        }
        for (r, acc) in acc.iter().enumerate().take(rows) {
            // SAFETY: row r < rows of `c`, its first `columns` values.
            unsafe {
                let out = c.add(r * c_stride);
                for (v, &value) in acc.iter().enumerate() {
                    if !MASKED || v + 1 < V {
                        _mm256_storeu_ps(out.add(v * LANES), value);
                    } else {
                        _mm256_maskstore_ps(out.add(v * LANES), last, value);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wave(len: usize, scale: f32, phase: f32) -> Vec<f32> {
        (0..len).map(|i| ((i as f32) * scale + phase).sin()).collect()
    }

    fn naive(a: &[f32], b: &[f32], (m, n, k): (usize, usize, usize)) -> Vec<f64> {
        let mut c = vec![0.0f64; m * n];
        for i in 0..m {
            for j in 0..n {
                c[i * n + j] = (0..k).map(|t| a[i * k + t] as f64 * b[t * n + j] as f64).sum();
            }
        }
        c
    }

    fn multiply(lhs: &PackedLhs, b: &[f32], n: usize, parallel: bool) -> Vec<f32> {
        let mut out = vec![f32::NAN; lhs.rows() * n];
        lhs.multiply(b, n, n, &mut out, parallel);
        out
    }

    /// Rows and columns that fill no block or panel, a column count of each
    /// kernel width, one thread and several: the product to rounding.
    #[test]
    fn packed_product_is_the_product() {
        if !PackedLhs::available() {
            return;
        }
        for (m, n, k) in
            [(1, 1, 1), (8, 48, 5), (13, 17, 27), (32, 100, 288), (5, 33, 9), (20, 97, 64), (9, 64, 130), (3, 49, 7)]
        {
            let a = wave(m * k, 0.37, 0.2);
            let b = wave(k * n, 0.53, 0.9);
            let lhs = PackedLhs::of(&a, m, k, (k, 1));
            let expected = naive(&a, &b, (m, n, k));
            for parallel in [false, true] {
                let c = multiply(&lhs, &b, n, parallel);
                let worst = c.iter().zip(&expected).map(|(&c, &e)| (c as f64 - e).abs()).fold(0.0, f64::max);
                assert!(worst <= 1e-4 * k as f64, "{m}×{n}×{k}: off by {worst}");
            }
        }
    }

    /// Each value is the depth's fused multiply-adds in order from zero,
    /// whichever kernel this CPU runs (AVX-512 or AVX2), slices of the
    /// depth and threads included: the bits of a scalar `mul_add` chain.
    #[test]
    fn a_value_is_the_fused_multiply_adds_in_order() {
        if !PackedLhs::available() {
            return;
        }
        for (m, n, k) in [(13, 57, 300), (8, 48, 5), (3, 7, 129), (9, 100, 40)] {
            let a = wave(m * k, 0.37, 0.2);
            let b = wave(k * n, 0.53, 0.9);
            let c = multiply(&PackedLhs::of(&a, m, k, (k, 1)), &b, n, true);
            let mut strided = vec![f32::NAN; m * n];
            multiply_strided((&a, k), (&b, n), (m, n, k), &mut strided, false);
            for (i, j) in (0..m).flat_map(|i| (0..n).map(move |j| (i, j))) {
                let expected = (0..k).fold(0.0f32, |sum, t| a[i * k + t].mul_add(b[t * n + j], sum));
                assert_eq!(c[i * n + j].to_bits(), expected.to_bits(), "{m}×{n}×{k} at ({i}, {j})");
                assert_eq!(strided[i * n + j].to_bits(), expected.to_bits(), "strided {m}×{n}×{k} at ({i}, {j})");
            }
        }
    }

    /// Rows of the right operand at overlapping, unordered offsets of one
    /// buffer (as a padded image's taps are), column counts of each kernel
    /// width, one thread and several: the product of the rows they name; a
    /// value the same bits on one thread as on several.
    #[test]
    fn gathered_product_is_the_product_of_the_rows_named() {
        if !PackedLhs::available() {
            return;
        }
        for (m, n, k) in [(1, 1, 1), (8, 48, 9), (13, 17, 27), (32, 100, 288), (5, 33, 18), (20, 145, 72)] {
            let a = wave(m * k, 0.37, 0.2);
            let buffer = wave(3 * n + 7 * k, 0.53, 0.9);
            let offsets: Vec<usize> = (0..k).map(|r| (r * 7 + (r % 3) * n) % (buffer.len() - n + 1)).collect();
            let b: Vec<f32> = offsets.iter().flat_map(|&at| buffer[at..at + n].iter().copied()).collect();
            let lhs = PackedLhs::of(&a, m, k, (k, 1));
            let expected = naive(&a, &b, (m, n, k));
            let run = |parallel| {
                let mut c = vec![f32::NAN; m * n];
                lhs.multiply_gathered(&buffer, &offsets, n, as_uninit(&mut c), parallel);
                c
            };
            let (one, several) = (run(false), run(true));
            let worst = one.iter().zip(&expected).map(|(&c, &e)| (c as f64 - e).abs()).fold(0.0, f64::max);
            assert!(worst <= 1e-4 * k as f64, "{m}×{n}×{k}: off by {worst}");
            assert_eq!(one, several, "{m}×{n}×{k}");
        }
    }

    /// Both operands where they lie, rows apart by more than their length,
    /// a destination written or added to: the product to rounding; and a row
    /// of it the same bit for bit when the rows are split.
    #[test]
    fn strided_product_is_the_product() {
        if !PackedLhs::available() {
            return;
        }
        for (m, n, k) in [(1, 1, 1), (8, 32, 300), (13, 17, 27), (37, 64, 129), (20, 97, 256), (9, 8, 1000)] {
            let (a_stride, b_stride) = (k + 3, n + 5);
            let a = wave(m * a_stride, 0.37, 0.2);
            let b = wave(k * b_stride, 0.53, 0.9);
            let dense_a: Vec<f32> = a.chunks_exact(a_stride).flat_map(|r| r[..k].to_vec()).collect();
            let dense_b: Vec<f32> = b.chunks_exact(b_stride).flat_map(|r| r[..n].to_vec()).collect();
            let expected = naive(&dense_a, &dense_b, (m, n, k));
            let mut c = vec![f32::NAN; m * n];
            multiply_strided((&a, a_stride), (&b, b_stride), (m, n, k), &mut c, false);
            let worst = c.iter().zip(&expected).map(|(&c, &e)| (c as f64 - e).abs()).fold(0.0, f64::max);
            assert!(worst <= 1e-4 * k as f64, "{m}×{n}×{k}: off by {worst}");
            let mut twice = c.clone();
            multiply_strided((&a, a_stride), (&b, b_stride), (m, n, k), &mut twice, true);
            for (t, c) in twice.iter().zip(&c) {
                assert!((t - 2.0 * c).abs() <= 1e-5 * c.abs().max(1.0), "{m}×{n}×{k}: {t} vs 2 × {c}");
            }
            if m > 8 {
                let mut tail = vec![f32::NAN; (m - 8) * n];
                multiply_strided((&a[8 * a_stride..], a_stride), (&b, b_stride), (m - 8, n, k), &mut tail, false);
                assert_eq!(tail, c[8 * n..], "{m}×{n}×{k}: rows split");
            }
        }
    }

    /// A column's values do not depend on which panel or how many columns
    /// it came with: the first 20 columns of a wide product are those of
    /// the narrow one, bit for bit.
    #[test]
    fn a_column_does_not_depend_on_its_neighbours() {
        if !PackedLhs::available() {
            return;
        }
        let (m, k) = (11, 70);
        let a = wave(m * k, 0.31, 0.4);
        let wide_n = 130;
        let b_wide = wave(k * wide_n, 0.17, 0.3);
        let narrow_n = 20;
        let b_narrow: Vec<f32> = b_wide.chunks_exact(wide_n).flat_map(|row| row[..narrow_n].to_vec()).collect();
        let lhs = PackedLhs::of(&a, m, k, (k, 1));
        let wide = multiply(&lhs, &b_wide, wide_n, true);
        let narrow = multiply(&lhs, &b_narrow, narrow_n, false);
        for i in 0..m {
            assert_eq!(wide[i * wide_n..i * wide_n + narrow_n], narrow[i * narrow_n..(i + 1) * narrow_n], "row {i}");
        }
    }
}

/// Rates against `gemm` on a ResNet's forward products (width 32 at 64
/// pixels, one image per product, one thread): `cargo test -p grid-kernels
/// --release packed_rates -- --ignored --nocapture`.
#[cfg(test)]
mod rates {
    use std::time::Instant;

    use super::PackedLhs;
    use crate::chunks::as_uninit;
    use crate::matmul::{Threads, product_into};

    /// `a [m, k]` and `b [k, n]`, row-major, of arbitrary values.
    fn operands((m, n, k): (usize, usize, usize)) -> (Vec<f32>, Vec<f32>) {
        let a = (0..m * k).map(|i| (i as f32 * 0.37).sin()).collect();
        let b = (0..k * n).map(|i| (i as f32 * 0.53).sin()).collect();
        (a, b)
    }

    /// GFLOP/s of `f` writing an `m × n` product of depth `k`, after a first
    /// call, over calls worth about `flops` floating-point operations.
    fn gflops((m, n, k): (usize, usize, usize), flops: f64, f: &mut dyn FnMut(&mut [f32])) -> f64 {
        let mut out = vec![0.0f32; m * n];
        let reps = (flops / (2.0 * (m * n * k) as f64)).ceil() as usize;
        f(&mut out);
        let start = Instant::now();
        for _ in 0..reps {
            f(&mut out);
        }
        2.0 * (m * n * k * reps) as f64 / start.elapsed().as_secs_f64() / 1e9
    }

    #[test]
    #[ignore = "a measurement, not a test"]
    fn packed_rates() {
        if !PackedLhs::available() {
            return;
        }
        for (m, n, k) in [
            (32, 1024, 288),
            (64, 256, 576),
            (128, 64, 1152),
            (256, 64, 2304),
            (288, 1024, 32),
            (576, 256, 64),
            (1152, 64, 128),
            (2304, 16, 256),
            (32, 4096, 288),
            (256, 64, 2304),
            (8, 1024, 72),
            (16, 1024, 144),
            (16, 256, 144),
            (16, 1024, 72),
            (8, 1024, 27),
        ] {
            let (a, b) = operands((m, n, k));
            let time = |f: &mut dyn FnMut(&mut [f32])| gflops((m, n, k), 2e9, f);
            let gemm = time(&mut |out| product_into(Threads::One, (m, n, k), as_uninit(out), &a, (k, 1), &b, (n, 1)));
            let lhs = PackedLhs::of(&a, m, k, (k, 1));
            let packed = time(&mut |out| lhs.multiply_into(&b, n, n, as_uninit(out), false));
            let with_packing =
                time(&mut |out| PackedLhs::of(&a, m, k, (k, 1)).multiply_into(&b, n, n, as_uninit(out), false));
            println!(
                "{m:>4} × {n:>5} × {k:>5}: gemm {gemm:6.1} GFLOP/s, packed {packed:6.1} ({:.2}×), packing A each time {with_packing:6.1}",
                packed / gemm
            );
        }
    }

    /// The dense layers' products (MiniLM's and BERT-base's: 16 examples of
    /// 26 pieces), one thread: `gemm`, the packed product packing `x` each
    /// time, and [`super::multiply_strided`] reading both in place.
    #[test]
    #[ignore = "a measurement, not a test"]
    fn dense_rates() {
        if !PackedLhs::available() {
            return;
        }
        for (m, n, k) in [(416, 384, 384), (416, 1536, 384), (416, 384, 1536), (416, 3072, 768), (416, 768, 3072)] {
            let (a, b) = operands((m, n, k));
            let time = |f: &mut dyn FnMut(&mut [f32])| gflops((m, n, k), 4e9, f);
            let gemm = time(&mut |out| product_into(Threads::One, (m, n, k), as_uninit(out), &a, (k, 1), &b, (n, 1)));
            let packed =
                time(&mut |out| PackedLhs::of(&a, m, k, (k, 1)).multiply_into(&b, n, n, as_uninit(out), false));
            let strided = time(&mut |out| super::multiply_strided((&a, k), (&b, n), (m, n, k), out, false));
            println!(
                "{m:>4} × {n:>5} × {k:>5}: gemm {gemm:6.1} GFLOP/s, packed {packed:6.1} ({:.2}×), strided {strided:6.1} ({:.2}×)",
                packed / gemm,
                strided / gemm
            );
        }
    }
}
