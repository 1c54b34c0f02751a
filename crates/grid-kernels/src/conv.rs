//! A 2-D convolution over `[batch, channels, height, width]` images
//! (row-major, NCHW as burn and torch keep them) with a
//! `[outputs, inputs, kernel_h, kernel_w]` weight, no bias, no dilation, one
//! group: what every convolution of a ResNet is. Its output, its input's
//! gradient and its weight gradient, each as GEMMs of the shapes PyTorch's
//! CPU convolution uses, on patch matrices (`im2col`):
//!
//! - output, per image: `Y [out, P] = W [out, K] · cols [K, P]`, with `K =
//!   inputs · kernel_h · kernel_w` patch values and `P` output positions;
//! - input gradient, per image: `∂cols [K, P] = Wᵀ · ∂Y`, scattered back
//!   onto the image (`col2im`);
//! - weight gradient: `∂W [out, K] = ∂Y · colsᵀ`, its inner dimension the
//!   images and positions together, each thread building its block of patch
//!   rows a few images at a time, where the product reads them from its
//!   cache.
//!
//! burn's CPU backend computes the weight gradient as a convolution of
//! swapped tensors (the output gradient as a kernel as wide as the image)
//! between contiguous copies of strided views; here every copy is a run of
//! contiguous values and the arithmetic is in `gemm`.
//!
//! A convolution of stride 1 whose output keeps its input's size (a
//! ResNet's 3 × 3 layers) computes its output and input gradient without
//! patch matrices where that was measured to pay (few channels or many
//! positions): the image zero-padded once, each kernel tap's patch rows a
//! strided view of it (`PaddedImage`). Elsewhere, where an image has many
//! positions and the CPU has AVX-512 or AVX2, the output and input gradient run as
//! [`crate::packed`] products, the weight packed once per call.
//!
//! An image's output and input gradient are computed on their own, by a
//! product of a shape fixed by the layer, so they do not depend on the
//! other images of the batch (a saliency map does not depend on the batch
//! it was explained in). A 1 × 1 convolution of stride 1 without padding
//! reads the image as its own patch matrix.

use std::cell::Cell;
use std::mem::MaybeUninit;
use std::thread::LocalKey;

use rayon::prelude::*;

use crate::chunks::{as_uninit, written};
use crate::dispatch::{Loop, widest};
use crate::layout::transpose;
use crate::matmul::{Threads, product, product_into};
use crate::packed::{PackedLhs, multiply_strided};

/// The shape of a convolution's batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    pub batch: usize,
    pub inputs: usize,
    pub outputs: usize,
    /// The input's `[height, width]`.
    pub size: [usize; 2],
    /// `[kernel_h, kernel_w]`.
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    /// Zeros added on each side, `[rows, columns]`.
    pub padding: [usize; 2],
}

impl Dims {
    /// The output's `[height, width]`: `⌊(side + 2 · padding − kernel) / stride⌋ + 1`.
    pub fn out_size(&self) -> [usize; 2] {
        let side = |d: usize| {
            let padded = self.size[d] + 2 * self.padding[d];
            assert!(padded >= self.kernel[d] && self.stride[d] > 0, "conv: a kernel larger than its padded input");
            (padded - self.kernel[d]) / self.stride[d] + 1
        };
        [side(0), side(1)]
    }

    /// Values of one patch: `inputs · kernel_h · kernel_w` (the product's depth).
    pub fn patch(&self) -> usize {
        self.inputs * self.kernel[0] * self.kernel[1]
    }

    /// Output positions of one image.
    pub fn positions(&self) -> usize {
        let [h, w] = self.out_size();
        h * w
    }

    fn image_len(&self) -> usize {
        self.inputs * self.size[0] * self.size[1]
    }

    fn out_len(&self) -> usize {
        self.outputs * self.positions()
    }

    /// A 1 × 1 convolution of stride 1 without padding: the image is its own
    /// patch matrix.
    fn is_pointwise(&self) -> bool {
        self.kernel == [1, 1] && self.stride == [1, 1] && self.padding == [0, 0]
    }

    fn check(&self, x: Option<&[f32]>, weight: Option<&[f32]>, grad: Option<&[f32]>) {
        if let Some(x) = x {
            assert_eq!(x.len(), self.batch * self.image_len(), "conv: input size");
        }
        if let Some(weight) = weight {
            assert_eq!(weight.len(), self.outputs * self.patch(), "conv: weight size");
        }
        if let Some(grad) = grad {
            assert_eq!(grad.len(), self.batch * self.out_len(), "conv: output gradient size");
        }
    }

    /// Images run one per thread when there are several; a single image's
    /// product is split over the threads instead.
    fn threads_per_image(&self) -> Threads {
        if self.batch > 1 { Threads::One } else { Threads::Pool }
    }
}

/// For output index `o` in `0..out_len`, input index `o · stride + offset`:
/// the range of `o` whose input index lies in `0..in_len`.
fn inside(out_len: usize, in_len: usize, stride: usize, offset: isize) -> std::ops::Range<usize> {
    // o · stride + offset ≥ 0  ⇔  o ≥ ⌈−offset / stride⌉.
    let below = if offset >= 0 { 0 } else { offset.unsigned_abs() };
    let lo = below.div_ceil(stride);
    // o · stride + offset < in_len  ⇔  o < ⌈(in_len − offset) / stride⌉.
    let reach = in_len as isize - offset;
    let hi = if reach <= 0 { 0 } else { (reach as usize).div_ceil(stride) };
    lo.min(out_len)..hi.min(out_len).max(lo.min(out_len))
}

/// Where each kernel tap `(ki, kj)` reads a plane: worked out once per
/// layer, so that a patch row (one per channel and tap, per image) is only
/// copies.
struct Patches {
    dims: Dims,
    out: [usize; 2],
    taps: Vec<Tap>,
}

struct Tap {
    /// Output rows and columns whose input lies inside the plane.
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
    /// The tap's place in the kernel.
    ki: usize,
    kj: usize,
    shift: Option<Shift>,
}

impl Patches {
    fn of(dims: &Dims) -> Patches {
        let [kh, kw] = dims.kernel;
        let [h, w] = dims.size;
        let [oh, ow] = dims.out_size();
        let taps = (0..kh * kw)
            .map(|t| {
                let (ki, kj) = (t / kw, t % kw);
                Tap {
                    rows: inside(oh, h, dims.stride[0], ki as isize - dims.padding[0] as isize),
                    cols: inside(ow, w, dims.stride[1], kj as isize - dims.padding[1] as isize),
                    ki,
                    kj,
                    shift: Shift::of(dims, ki, kj),
                }
            })
            .collect();
        Patches { dims: *dims, out: [oh, ow], taps }
    }

    /// Row `row` of one image's patch matrix (`row = (channel, ki, kj)`),
    /// the `P` values `image[channel][oy·s + ki − p][ox·s + kj − p]` (zero
    /// outside), into `out`.
    fn row(&self, image: &[f32], row: usize, out: &mut [f32]) {
        let dims = &self.dims;
        let [h, w] = dims.size;
        let ow = self.out[1];
        let tap = &self.taps[row % self.taps.len()];
        let channel = row / self.taps.len();
        let plane = &image[channel * h * w..(channel + 1) * h * w];
        let rows = tap.rows.clone();
        if let Some(shift) = tap.shift {
            // The row is the plane moved by (dy, dx): one copy, then the values
            // that wrapped around a row's end are zeroed.
            let (start, end) = (rows.start * ow, rows.end * ow);
            out[..start].fill(0.0);
            out[end..].fill(0.0);
            let (lo, hi) = shift.valid(start, end, h * w);
            out[start..lo].fill(0.0);
            out[hi..end].fill(0.0);
            if hi > lo {
                let from = lo.wrapping_add_signed(shift.flat);
                out[lo..hi].copy_from_slice(&plane[from..from + (hi - lo)]);
            }
            shift.zero_wrapped(&mut out[start..end], w);
            return;
        }
        out[..rows.start * ow].fill(0.0);
        out[rows.end * ow..].fill(0.0);
        widest(TapRows { patches: self, tap, plane, out });
    }

    /// One image's patch matrix `[K, P]` into `cols`.
    fn image(&self, image: &[f32], cols: &mut [f32]) {
        let positions = self.out[0] * self.out[1];
        for (row, out) in cols.chunks_exact_mut(positions).enumerate() {
            self.row(image, row, out);
        }
    }

    /// One image's gradient `[inputs, h, w]`, every value written, from its
    /// patch-matrix gradient `[K, P]` (scratch, as in [`Patches::add_back`]):
    /// the values themselves where the image is its own patch matrix.
    fn image_gradient(&self, cols: &mut [f32], image: &mut [MaybeUninit<f32>]) {
        if self.dims.is_pointwise() {
            for (value, &g) in image.iter_mut().zip(cols.iter()) {
                value.write(g);
            }
        } else {
            image.fill(MaybeUninit::new(0.0));
            // SAFETY: every value was just written.
            let image = unsafe { &mut *(image as *mut [MaybeUninit<f32>] as *mut [f32]) };
            self.add_back(cols, image);
        }
    }

    /// `col2im`: adds one image's patch-matrix gradient `[K, P]` onto its
    /// gradient `[inputs, h, w]` (which the caller zeroed), each patch
    /// value's gradient to the pixel [`Patches::row`] read it from. `cols` is
    /// scratch: wrapped values are zeroed in it.
    fn add_back(&self, cols: &mut [f32], image: &mut [f32]) {
        let dims = &self.dims;
        let [h, w] = dims.size;
        let ow = self.out[1];
        for (row, values) in cols.chunks_exact_mut(self.out[0] * ow).enumerate() {
            let tap = &self.taps[row % self.taps.len()];
            let channel = row / self.taps.len();
            let plane = &mut image[channel * h * w..(channel + 1) * h * w];
            let rows = tap.rows.clone();
            if let Some(shift) = tap.shift {
                // As in `row`: the values read from outside the plane's rows
                // (wrapped) are zeroed, then one pass adds the rest.
                let (start, end) = (rows.start * ow, rows.end * ow);
                shift.zero_wrapped(&mut values[start..end], w);
                let (lo, hi) = shift.valid(start, end, h * w);
                if hi > lo {
                    let from = lo.wrapping_add_signed(shift.flat);
                    for (d, s) in plane[from..from + (hi - lo)].iter_mut().zip(&values[lo..hi]) {
                        *d += s;
                    }
                }
                continue;
            }
            let cols = tap.cols.clone();
            if cols.is_empty() {
                continue;
            }
            for oy in rows {
                let iy = oy * dims.stride[0] + tap.ki - dims.padding[0];
                let dst = &mut plane[iy * w..(iy + 1) * w];
                let src = &values[oy * ow..(oy + 1) * ow];
                let first = cols.start * dims.stride[1] + tap.kj - dims.padding[1];
                if dims.stride[1] == 1 {
                    for (d, s) in dst[first..first + cols.len()].iter_mut().zip(&src[cols.clone()]) {
                        *d += s;
                    }
                } else if dims.stride[1] == 2 {
                    // As pairs, the first of each taking the value: no bounds
                    // check per value, and vector loads and stores.
                    for (pair, s) in dst[first..].chunks_mut(2).zip(&src[cols.clone()]) {
                        pair[0] += s;
                    }
                } else {
                    for (ix, s) in (first..).step_by(dims.stride[1]).zip(&src[cols.clone()]) {
                        dst[ix] += s;
                    }
                }
            }
        }
    }
}

/// The output rows of a patch row (a tap without a [`Shift`]) whose input
/// lies inside the plane, in the CPU's widest lanes. Column stride 2 (the
/// ImageNet stem and each stage's first layer) reads the input as pairs, so
/// that the compiler loads whole vectors and shuffles them: element by
/// element through `step_by` this was a fifth of the stem's forward pass.
struct TapRows<'a> {
    patches: &'a Patches,
    tap: &'a Tap,
    plane: &'a [f32],
    out: &'a mut [f32],
}

impl Loop for TapRows<'_> {
    #[inline(always)]
    fn run(self) {
        let TapRows { patches, tap, plane, out } = self;
        let dims = &patches.dims;
        let (w, ow, stride) = (dims.size[1], patches.out[1], dims.stride[1]);
        let cols = tap.cols.clone();
        for oy in tap.rows.clone() {
            let iy = oy * dims.stride[0] + tap.ki - dims.padding[0];
            let src = &plane[iy * w..(iy + 1) * w];
            let dst = &mut out[oy * ow..(oy + 1) * ow];
            dst[..cols.start].fill(0.0);
            dst[cols.end..].fill(0.0);
            let Some(last) = cols.len().checked_sub(1) else {
                continue;
            };
            let first = cols.start * stride + tap.kj - dims.padding[1];
            let dst = &mut dst[cols.clone()];
            match stride {
                1 => dst.copy_from_slice(&src[first..first + cols.len()]),
                2 => {
                    let (body, end) = dst.split_at_mut(last);
                    for (value, pair) in body.iter_mut().zip(src[first..first + 2 * last].chunks_exact(2)) {
                        *value = pair[0];
                    }
                    end[0] = src[first + 2 * last];
                }
                _ => {
                    for (value, &v) in dst.iter_mut().zip(src[first..].iter().step_by(stride)) {
                        *value = v;
                    }
                }
            }
        }
    }
}

/// A patch row of a convolution of stride 1 whose output has its input's
/// size (a ResNet's 3 × 3 convolutions): the plane itself moved by `dy` rows
/// and `dx` columns, so that output position `j` reads input position
/// `j + flat` of the plane, except where `ox + dx` leaves the row.
#[derive(Clone, Copy)]
struct Shift {
    flat: isize,
    dx: isize,
}

impl Shift {
    fn of(dims: &Dims, ki: usize, kj: usize) -> Option<Shift> {
        if dims.stride != [1, 1] || dims.out_size() != dims.size {
            return None;
        }
        let dy = ki as isize - dims.padding[0] as isize;
        let dx = kj as isize - dims.padding[1] as isize;
        Some(Shift { flat: dy * dims.size[1] as isize + dx, dx })
    }

    /// Of the positions `start..end`, the run `lo..hi` whose input lies in the
    /// plane of `len` values.
    fn valid(self, start: usize, end: usize, len: usize) -> (usize, usize) {
        let lo = (start as isize).max(-self.flat).min(end as isize) as usize;
        let hi = (end as isize).min(len as isize - self.flat).max(lo as isize) as usize;
        (lo, hi)
    }

    /// Zeroes, in whole rows of `w` positions, the columns whose input lies
    /// past the row's start (`dx < 0`) or end (`dx > 0`).
    fn zero_wrapped(self, rows: &mut [f32], w: usize) {
        let columns = self.dx.unsigned_abs().min(w);
        let first = if self.dx < 0 { 0 } else { w - columns };
        for row in rows.chunks_exact_mut(w) {
            // One value for a 3 × 3 kernel: a store, not a `memset` call per row.
            match columns {
                0 => {}
                1 => row[first] = 0.0,
                _ => row[first..first + columns].fill(0.0),
            }
        }
    }
}

/// `f(image index, image's output)` for each image of a batch: on rayon's
/// threads when there are several. The output is not zero-filled first:
/// `f` writes all of its part.
fn per_image(out: &mut [MaybeUninit<f32>], len: usize, f: impl Fn(usize, &mut [MaybeUninit<f32>]) + Sync + Send) {
    if out.len() > len {
        out.par_chunks_mut(len).enumerate().for_each(|(n, out)| f(n, out));
    } else if !out.is_empty() {
        f(0, out);
    }
}

thread_local! {
    /// A thread's patch matrices, kept between calls (a ResNet's layers ask
    /// for the same sizes again and again).
    static SCRATCH: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
    /// A thread's block of patch rows in [`weight_gradient`], which
    /// runs inside [`with_scratch`].
    static BLOCK: Cell<Vec<f32>> = const { Cell::new(Vec::new()) };
}

/// `f` with a buffer of `len` values of no particular content: the thread's
/// scratch, taken out while `f` runs (so a nested call, e.g. from a rayon job
/// run while `f` waits, gets its own).
fn with_scratch<T>(len: usize, f: impl FnOnce(&mut [f32]) -> T) -> T {
    with_buffer(&SCRATCH, len, f)
}

/// [`with_scratch`] on another of the thread's buffers.
fn with_buffer<T>(key: &'static LocalKey<Cell<Vec<f32>>>, len: usize, f: impl FnOnce(&mut [f32]) -> T) -> T {
    let mut buffer = key.take();
    if buffer.len() < len {
        buffer.resize(len, 0.0);
    }
    let out = f(&mut buffer[..len]);
    key.set(buffer);
    out
}

/// Images with fewer output positions than this are convolved in groups
/// (see [`forward`]), and their input gradients computed transposed (see
/// [`input_gradient`]).
const FEW_POSITIONS: usize = 64;

/// Output positions per image from which a layer's products run packed
/// ([`PackedLhs`]) where the CPU has AVX-512 or AVX2. Measured on one thread
/// (BENCHMARKS.md): on a ResNet's products of 4,096 positions (its first
/// stage at 64 pixels) the packed product runs 1.2–1.3× `gemm`'s rate; at
/// 1,024 and fewer the two are within ±10%, and packing the weight at each
/// call made the 32-pixel ResNets 3–12% slower.
const PACKED_POSITIONS: usize = 2048;

/// [`PaddedImage`] is used for at most this many input channels from
/// [`PADDED_MIN_POSITIONS`] positions on, and for any channel count from
/// [`PADDED_POSITIONS`] (measured, see there).
const PADDED_INPUTS: usize = 32;
const PADDED_MIN_POSITIONS: usize = 256;
const PADDED_POSITIONS: usize = 1024;

/// A layer's weight (or its transpose) as the left operand of its
/// per-image products: packed once for the packed product where it pays,
/// else read in place by `gemm`.
enum Weight<'a> {
    Packed(PackedLhs),
    Gemm { values: &'a [f32], strides: (usize, usize) },
}

impl<'a> Weight<'a> {
    /// `values` as a `[rows, depth]` matrix of the given strides, for
    /// products of `positions` columns.
    fn of(values: &'a [f32], rows: usize, depth: usize, strides: (usize, usize), positions: usize) -> Weight<'a> {
        if positions >= PACKED_POSITIONS && PackedLhs::available() {
            Weight::Packed(PackedLhs::of(values, rows, depth, strides))
        } else {
            Weight::Gemm { values, strides }
        }
    }

    /// `dst [rows, n] = self · b`, `b` `[depth, n]` with rows `n` apart.
    fn times(
        &self,
        threads: Threads,
        (rows, n, depth): (usize, usize, usize),
        b: &[f32],
        dst: &mut [MaybeUninit<f32>],
    ) {
        match self {
            Weight::Packed(lhs) => lhs.multiply_into(b, n, n, dst, matches!(threads, Threads::Pool)),
            Weight::Gemm { values, strides } => {
                product_into(threads, (rows, n, depth), dst, values, *strides, b, (n, 1))
            }
        }
    }
}

/// The convolution's output `[batch, outputs, oh, ow]` from `x` `[batch,
/// inputs, h, w]` and `weight` `[outputs, inputs, kh, kw]`.
///
/// `gemm` tiles a row-major product's output by its columns, here the
/// positions, 64 at a time (16 at the least). Where an image has fewer than
/// [`FEW_POSITIONS`] (a ResNet's last stage: 16 at 32 pixels), images go in
/// groups of a fixed size whose patch matrices stand side by side, one
/// product per group, the last group padded with zero images: every image
/// of a layer is computed by a product of the same shape, alone or in a
/// batch.
pub fn forward(dims: Dims, x: &[f32], weight: &[f32]) -> Vec<f32> {
    dims.check(Some(x), Some(weight), None);
    let (depth, positions, image_len, out_len) = (dims.patch(), dims.positions(), dims.image_len(), dims.out_len());
    let group = if positions > 0 && positions < FEW_POSITIONS { FEW_POSITIONS.div_ceil(positions) } else { 1 };
    if group > 1 {
        return grouped_forward(dims, x, weight, group);
    }
    if let Some(padded) = PaddedImage::paying(&dims) {
        return padded_forward(&padded, x, weight);
    }
    let threads = dims.threads_per_image();
    let patches = Patches::of(&dims);
    let weight = Weight::of(weight, dims.outputs, depth, (depth, 1), positions);
    written(dims.batch * out_len, |y| {
        if out_len == 0 {
            return;
        }
        per_image(y, out_len, |n, out| {
            let image = &x[n * image_len..(n + 1) * image_len];
            let shape = (dims.outputs, positions, depth);
            if dims.is_pointwise() {
                weight.times(threads, shape, image, out);
            } else {
                with_scratch(depth * positions, |cols| {
                    patches.image(image, cols);
                    weight.times(threads, shape, cols, out);
                });
            }
        });
    })
}

/// A stride-1 convolution whose output keeps its input's size (a ResNet's
/// 3 × 3 layers), without a patch matrix: the image is zero-padded once
/// into `[inputs, h + 2·ph, w + 2·pw]`, and for each kernel tap the patch
/// rows of that tap are the padded planes read from the tap's offset, a
/// strided view read in place. The output is computed over the padded
/// width (`h · (w + 2·pw)` positions, the extra columns discarded): `Y =
/// Σ_taps W_tap [out, inputs] · X_tap [inputs, h · wp]`. One copy of the
/// image instead of `kh · kw` (im2col's), for `2·pw / w` more columns. On
/// AVX-512 or AVX2 all the taps' rows are one product's depth
/// ([`PackedLhs::multiply_gathered`]: each row where its offset says, the
/// sums in registers over every channel and tap); elsewhere one `gemm`
/// product per tap, summed in the output. The gathered product ran 1.1–1.6×
/// the per-tap `gemm` on ResNet's padded layers (8 ch at 32 px 54 → 83
/// GFLOP/s, 32 ch 101 → 123; BENCHMARKS.md "The weight gradient from patch
/// rows built in the cache").
///
/// Where it pays, measured per layer shape (`conv_rates`, 2-core AMD EPYC
/// Zen 4, BENCHMARKS.md "Convolutions without patch matrices"): forward
/// 1.2–1.6× im2col with at most 32 input channels (ResNet widths 8–32 at
/// 32 px: 8 ch 71 → 106–112 GFLOP/s, 32 ch 119–133 → 163–175), and
/// 1.06–1.16× from 1,024 positions on (64 ch at 32 and 56 px); im2col
/// stays ahead for deeper, smaller images (64 ch at 16 px 0.86–0.93×, 128
/// ch at 8 px 0.79×). The input gradient follows the same rule on its
/// turned convolution ([`padded_input_gradient`]). The weight gradient
/// this way (per tap, the view against `∂Yᵀ`) ran 0.5–1.0× the patch
/// matrix's, so it keeps it.
struct PaddedImage {
    dims: Dims,
    /// Padded plane's height and width.
    hp: usize,
    wp: usize,
}

impl PaddedImage {
    /// The layout for `dims` where it is a same-size stride-1 convolution and
    /// the measurements above favour it over the patch matrix.
    fn paying(dims: &Dims) -> Option<PaddedImage> {
        let positions = dims.positions();
        let pays = positions >= FEW_POSITIONS
            && ((dims.inputs <= PADDED_INPUTS && positions >= PADDED_MIN_POSITIONS) || positions >= PADDED_POSITIONS);
        if pays { PaddedImage::of(dims) } else { None }
    }

    fn of(dims: &Dims) -> Option<PaddedImage> {
        let same = dims.stride == [1, 1] && dims.out_size() == dims.size && !dims.is_pointwise();
        same.then(|| PaddedImage {
            dims: *dims,
            hp: dims.size[0] + 2 * dims.padding[0],
            wp: dims.size[1] + 2 * dims.padding[1],
        })
    }

    /// Values of the padded image, with `kernel_w` zeros after the last plane
    /// (the last tap's view runs past it by up to `kernel_w − 2` in the
    /// discarded columns).
    fn len(&self) -> usize {
        self.dims.inputs * self.hp * self.wp + self.dims.kernel[1]
    }

    /// Output positions over the padded width.
    fn wide_positions(&self) -> usize {
        self.dims.size[0] * self.wp
    }

    fn pad(&self, image: &[f32], padded: &mut [f32]) {
        let [h, w] = self.dims.size;
        let [ph, pw] = self.dims.padding;
        padded.fill(0.0);
        for (plane, out) in image.chunks_exact(h * w).zip(padded.chunks_exact_mut(self.hp * self.wp)) {
            for (row, out) in plane.chunks_exact(w).zip(out[ph * self.wp..].chunks_exact_mut(self.wp)) {
                out[pw..pw + w].copy_from_slice(row);
            }
        }
    }

    /// Where tap `t`'s view of the padded image starts.
    fn tap_offset(&self, t: usize) -> usize {
        let kw = self.dims.kernel[1];
        (t / kw) * self.wp + t % kw
    }
}

/// [`forward`] of a same-size stride-1 convolution through [`PaddedImage`]
/// (whose `dims` are the convolution's).
fn padded_forward(padded: &PaddedImage, x: &[f32], weight: &[f32]) -> Vec<f32> {
    let dims = padded.dims;
    let (image_len, out_len) = (dims.image_len(), dims.out_len());
    let taps = dims.kernel[0] * dims.kernel[1];
    let (wide, plane) = (padded.wide_positions(), padded.hp * padded.wp);
    let threads = dims.threads_per_image();
    // Where the CPU has AVX-512 or AVX2: one product over every (channel, tap) row,
    // the weight packed once ([`PackedLhs::multiply_gathered`]); else one
    // `gemm` product per tap, summed in the output.
    let gathered = PackedLhs::available().then(|| {
        let depth = dims.inputs * taps;
        let offsets: Vec<usize> =
            (0..dims.inputs).flat_map(|c| (0..taps).map(move |t| c * plane + padded.tap_offset(t))).collect();
        (PackedLhs::of(weight, dims.outputs, depth, (depth, 1)), offsets)
    });
    written(dims.batch * out_len, |y| {
        if out_len == 0 {
            return;
        }
        per_image(y, out_len, |n, out| {
            let image = &x[n * image_len..(n + 1) * image_len];
            with_scratch(padded.len() + dims.outputs * wide, |buffer| {
                let (xpad, ywide) = buffer.split_at_mut(padded.len());
                padded.pad(image, xpad);
                if let Some((weight, offsets)) = &gathered {
                    let parallel = matches!(threads, Threads::Pool);
                    weight.multiply_gathered(xpad, offsets, wide, as_uninit(ywide), parallel);
                } else {
                    for t in 0..taps {
                        let view = &xpad[padded.tap_offset(t)..];
                        let w_tap = &weight[t..];
                        let shape = (dims.outputs, wide, dims.inputs);
                        let strides = (dims.inputs * taps, taps);
                        product(threads, t > 0, shape, (ywide, wide), w_tap, strides, view, (plane, 1));
                    }
                }
                let [h, w] = dims.size;
                for (out, ywide) in out.chunks_exact_mut(h * w).zip(ywide.chunks_exact(wide)) {
                    for (out, row) in out.chunks_exact_mut(w).zip(ywide.chunks_exact(padded.wp)) {
                        for (value, &v) in out.iter_mut().zip(&row[..w]) {
                            value.write(v);
                        }
                    }
                }
            })
        });
    })
}

/// [`input_gradient`] of a same-size stride-1 convolution: the convolution
/// of `grad` with the kernel turned by 180° and its channels swapped
/// (`∂x[c, y, x] = Σ W[o, c, i, j] · ∂Y[o, y − i + ph, x − j + pw]`), itself
/// a same-size stride-1 convolution: `turned`'s dims are it (its inputs the
/// layer's outputs), run by [`padded_forward`].
fn padded_input_gradient(turned: &PaddedImage, grad: &[f32], weight: &[f32]) -> Vec<f32> {
    // The layer's channels: the turned convolution's, swapped.
    let (inputs, outputs) = (turned.dims.outputs, turned.dims.inputs);
    let taps = turned.dims.kernel[0] * turned.dims.kernel[1];
    let mut flipped = vec![0.0f32; weight.len()];
    for (o, filter) in weight.chunks_exact(inputs * taps).enumerate() {
        for (c, kernel) in filter.chunks_exact(taps).enumerate() {
            let to = &mut flipped[(c * outputs + o) * taps..][..taps];
            for (t, &v) in kernel.iter().enumerate() {
                to[taps - 1 - t] = v;
            }
        }
    }
    padded_forward(turned, grad, &flipped)
}

/// [`forward`] for images of few positions, `group` images per product.
fn grouped_forward(dims: Dims, x: &[f32], weight: &[f32], group: usize) -> Vec<f32> {
    let (depth, positions, image_len, out_len) = (dims.patch(), dims.positions(), dims.image_len(), dims.out_len());
    let width = group * positions;
    let threads = if dims.batch > group { Threads::One } else { Threads::Pool };
    let patches = Patches::of(&dims);
    let weight = Weight::of(weight, dims.outputs, depth, (depth, 1), width);
    written(dims.batch * out_len, |y| {
        per_image(y, group * out_len, |g, out| {
            let first = g * group;
            let images = out.len() / out_len;
            with_scratch(depth * width + dims.outputs * width, |buffer| {
                let (cols, products) = buffer.split_at_mut(depth * width);
                for (row, values) in cols.chunks_exact_mut(width).enumerate() {
                    for (i, values) in values.chunks_exact_mut(positions).enumerate() {
                        if i < images {
                            let image = &x[(first + i) * image_len..(first + i + 1) * image_len];
                            patches.row(image, row, values);
                        } else {
                            values.fill(0.0);
                        }
                    }
                }
                weight.times(threads, (dims.outputs, width, depth), cols, as_uninit(products));
                for (i, out) in out.chunks_exact_mut(out_len).enumerate() {
                    for (o, out) in out.chunks_exact_mut(positions).enumerate() {
                        let start = o * width + i * positions;
                        for (value, &v) in out.iter_mut().zip(&products[start..start + positions]) {
                            value.write(v);
                        }
                    }
                }
            })
        });
    })
}

/// `∂x` `[batch, inputs, h, w]` from the output's gradient `grad` `[batch,
/// outputs, oh, ow]` and `weight`: per image `∂cols = Wᵀ · ∂Y`, then
/// `col2im` (`Patches::add_back`; computing it instead as the convolution
/// of `grad` with the kernel flipped, a product `outputs · kh · kw` deep and
/// no `col2im`, was measured: `gemm` runs those products, few rows deep,
/// 0.8–0.97× as fast as `Wᵀ · ∂Y`, and the training rate did not move).
/// `gemm` tiles the longer side of a row-major product's output by its
/// columns, here the positions; where an image has few of them (a
/// ResNet's last stage: 16 at 32 pixels) and the patches are longer, the
/// product is computed transposed, `∂colsᵀ = ∂Yᵀ · W`, and copied back (the
/// ResNet-18 of width 64 at 32 pixels: 1.1× the training rate; the same
/// turn for the output made it 0.65× as fast, so it has none). A deep layer
/// of few positions puts images in groups instead ([`gradient_group`]).
/// Every image of a layer takes the same path.
pub fn input_gradient(dims: Dims, grad: &[f32], weight: &[f32]) -> Vec<f32> {
    dims.check(None, Some(weight), Some(grad));
    let turned = Dims { inputs: dims.outputs, outputs: dims.inputs, ..dims };
    if let Some(padded) = PaddedImage::paying(&turned) {
        return padded_input_gradient(&padded, grad, weight);
    }
    if let Some(group) = gradient_group(&dims) {
        return grouped_input_gradient(dims, grad, weight, group);
    }
    let (depth, positions, out_len, image_len) = (dims.patch(), dims.positions(), dims.out_len(), dims.image_len());
    let packed = (positions >= PACKED_POSITIONS && PackedLhs::available())
        .then(|| PackedLhs::of(weight, depth, dims.outputs, (1, depth)));
    let transposed = packed.is_none() && positions < FEW_POSITIONS && positions < depth;
    let threads = dims.threads_per_image();
    let patches = Patches::of(&dims);
    written(dims.batch * image_len, |dx| {
        if image_len == 0 {
            return;
        }
        per_image(dx, image_len, |n, image| {
            let grad = &grad[n * out_len..(n + 1) * out_len];
            let aside = if transposed { depth * positions } else { 0 };
            with_scratch(depth * positions + aside, |buffer| {
                let (cols, aside) = buffer.split_at_mut(depth * positions);
                if let Some(weight_t) = &packed {
                    weight_t.multiply(grad, positions, positions, cols, matches!(threads, Threads::Pool));
                } else if transposed {
                    // ∂colsᵀ [P, K] = ∂Yᵀ · W, then back to [K, P].
                    let shape = (positions, depth, dims.outputs);
                    product(threads, false, shape, (aside, depth), grad, (1, positions), weight, (depth, 1));
                    transpose(aside, (positions, depth), cols);
                } else {
                    // Wᵀ [K, out]: element (k, o) = weight[o · K + k].
                    let shape = (depth, positions, dims.outputs);
                    product(threads, false, shape, (cols, positions), weight, (1, depth), grad, (positions, 1));
                }
                patches.image_gradient(cols, image);
            })
        });
    })
}

/// Images per product of the input gradient where grouping them pays, a
/// choice of the layer's shape alone (so an image's gradient does not
/// depend on its batch): few positions (at most
/// [`GROUPED_GRADIENT_POSITIONS`]) and a weight of at least
/// [`GROUPED_GRADIENT_WEIGHT`] values, which `gemm` packs again for each
/// image's product of a few rows, where grouped it is packed once per call.
/// On a 2-core Intel Xeon (2 MB of second-level cache per core;
/// BENCHMARKS.md "The input gradient of few positions in groups"), batches
/// of 16–32: 512 channels at 2–6 px 1.3–1.6×, 256 channels at 4 px 1.25×,
/// a stage's first layer onto 4 px 1.2–1.5×; not taken: 512 channels at
/// 7 px (0.8×), 64–128 channels at 2–4 px (0.75–1.05×). A batch of 8 of
/// 256 channels at 4 px runs 0.7× (the packing is paid by fewer images).
fn gradient_group(dims: &Dims) -> Option<usize> {
    let positions = dims.positions();
    let pays = positions > 0
        && positions <= GROUPED_GRADIENT_POSITIONS
        && dims.outputs * dims.patch() >= GROUPED_GRADIENT_WEIGHT;
    pays.then(|| FEW_POSITIONS.div_ceil(positions))
}

const GROUPED_GRADIENT_POSITIONS: usize = 36;
const GROUPED_GRADIENT_WEIGHT: usize = 1 << 19;

/// [`input_gradient`] for images of few positions, `group` images per
/// product as in [`grouped_forward`]: `∂cols [K, group · P] = Wᵀ · ∂Y`, the
/// images' output gradients side by side and the last group padded with
/// zero images, so every image of a layer is computed by a product of the
/// same shape; each image's columns then go back onto it. Where the CPU has
/// AVX-512 or AVX2, `Wᵀ` is packed once per call: a deep layer's weight (512
/// channels: 9 MB) is the product's largest operand.
fn grouped_input_gradient(dims: Dims, grad: &[f32], weight: &[f32], group: usize) -> Vec<f32> {
    let (depth, positions, image_len, out_len, outputs) =
        (dims.patch(), dims.positions(), dims.image_len(), dims.out_len(), dims.outputs);
    let width = group * positions;
    let threads = if dims.batch > group { Threads::One } else { Threads::Pool };
    let patches = Patches::of(&dims);
    // Wᵀ [K, out]: element (k, o) = weight[o · K + k].
    let weight_t = if PackedLhs::available() {
        Weight::Packed(PackedLhs::of(weight, depth, outputs, (1, depth)))
    } else {
        Weight::Gemm { values: weight, strides: (1, depth) }
    };
    written(dims.batch * image_len, |dx| {
        if image_len == 0 {
            return;
        }
        per_image(dx, group * image_len, |g, out| {
            let first = g * group;
            with_scratch(outputs * width + depth * width + depth * positions, |buffer| {
                let (grads, rest) = buffer.split_at_mut(outputs * width);
                let (cols, one) = rest.split_at_mut(depth * width);
                for (o, row) in grads.chunks_exact_mut(width).enumerate() {
                    for (i, values) in row.chunks_exact_mut(positions).enumerate() {
                        match grad.get((first + i) * out_len..(first + i + 1) * out_len) {
                            Some(image) => values.copy_from_slice(&image[o * positions..(o + 1) * positions]),
                            None => values.fill(0.0),
                        }
                    }
                }
                weight_t.times(threads, (depth, width, outputs), grads, as_uninit(cols));
                for (i, image) in out.chunks_exact_mut(image_len).enumerate() {
                    // Image i's columns of ∂cols, `[K, P]`.
                    for (row, values) in one.chunks_exact_mut(positions).enumerate() {
                        values.copy_from_slice(&cols[row * width + i * positions..][..positions]);
                    }
                    patches.image_gradient(one, image);
                }
            })
        });
    })
}

/// `∂W` `[outputs, inputs, kh, kw]` from `x` and the output's gradient
/// `grad`: `Σ` over images and positions of `∂Y · colsᵀ`.
///
/// The product is computed transposed, `∂Wᵀ [K, out] = cols · ∂Yᵀ`: with
/// the output channels (few) as `gemm`'s rows, it ran at 42–90 GFLOP/s on
/// two threads for a ResNet's first stages, against 137–191 on one this way
/// (BENCHMARKS.md). The threads take blocks of patch rows; each builds its
/// rows of the patch matrix a few images at a time (about [`PIECE_COLUMNS`]
/// columns), where they stay in its cache for the product with `∂Yᵀ`. Built
/// for a chunk of images first, the patch matrix went to memory and back
/// (the weight gradient at 50 GFLOP/s where this runs 72, on a ResNet's 32
/// channels at 32 pixels on an AMD EPYC). Where the CPU has AVX-512 or AVX2 the
/// product is [`multiply_strided`], both operands read in place (`gemm`
/// packs `∂Yᵀ` again for each block: 43–92 GFLOP/s against 88–144), else
/// `gemm`. Each thread takes a run of blocks and goes through the images
/// once, building and multiplying all its blocks for each piece while that
/// piece's `∂Yᵀ` stays in its cache: a block after another, each reading
/// the whole batch's `∂Yᵀ` again, ran 0.8–0.9× this on layers of 28–64
/// pixels, the same on smaller ones (BENCHMARKS.md). A value is its sum
/// over the images in order, in pieces whose size the layer fixes: the
/// blocks and the thread count do not change it.
pub fn weight_gradient(dims: Dims, x: &[f32], grad: &[f32]) -> Vec<f32> {
    weight_gradient_in_blocks(dims, x, grad, block_values(&dims))
}

/// [`weight_gradient`] with thread blocks of at most `block_values` patch
/// values: which rows share a block changes no value (each is its own sum).
fn weight_gradient_in_blocks(dims: Dims, x: &[f32], grad: &[f32], block_values: usize) -> Vec<f32> {
    dims.check(Some(x), None, Some(grad));
    let (depth, positions, image_len, out_len, outputs) =
        (dims.patch(), dims.positions(), dims.image_len(), dims.out_len(), dims.outputs);
    let mut dw = vec![0.0f32; outputs * depth];
    if dims.batch == 0 || positions == 0 || dw.is_empty() {
        return dw;
    }
    let piece = PIECE_COLUMNS.div_ceil(positions).min(dims.batch);
    let columns = piece * positions;
    let cache_rows = (block_values / columns / 8 * 8).max(8);
    // Blocks fixed by the layer, not the threads: `gemm` and BLAS may sum a
    // row differently in blocks of other heights.
    let block_rows = depth.div_ceil(WEIGHT_BLOCKS).next_multiple_of(8).min(cache_rows);
    let strided = PackedLhs::available();
    // `out [rows, out] (+)= cols [rows, width] · ∂Yᵀ [width, out]`.
    let multiply = |cols: &[f32], grads: &[f32], (rows, width): (usize, usize), out: &mut [f32], accumulate| {
        if strided {
            multiply_strided((cols, width), (grads, outputs), (rows, outputs, width), out, accumulate);
        } else {
            let shape = (rows, outputs, width);
            product(Threads::One, accumulate, shape, (out, outputs), cols, (width, 1), grads, (outputs, 1));
        }
    };
    let patches = Patches::of(&dims);
    let mut transposed = vec![0.0f32; depth * outputs];
    with_scratch(dims.batch * out_len, |grads| {
        // ∂Yᵀ `[images · P, out]`, an image's `[P, out]` after another.
        grads.par_chunks_mut(out_len).zip(grad.par_chunks(out_len)).for_each(|(out, image)| {
            transpose(image, (outputs, positions), out);
        });
        let grads = &*grads;
        // Each thread takes a run of blocks and goes through the images once,
        // all its blocks for each piece, so the piece's `∂Yᵀ` is read from
        // memory once a thread, not once a block.
        let blocks = depth.div_ceil(block_rows);
        let per_group = blocks.div_ceil(rayon::current_num_threads().clamp(1, blocks));
        transposed.par_chunks_mut(per_group * block_rows * outputs).enumerate().for_each(|(group, out)| {
            let first_block_row = group * per_group * block_rows;
            with_buffer(&BLOCK, block_rows * columns, |cols| {
                for first in (0..dims.batch).step_by(piece) {
                    let images = piece.min(dims.batch - first);
                    let width = images * positions;
                    let grads = &grads[first * out_len..(first + images) * out_len];
                    for (block, out) in out.chunks_mut(block_rows * outputs).enumerate() {
                        let (first_row, rows) = (first_block_row + block * block_rows, out.len() / outputs);
                        let cols = &mut cols[..rows * width];
                        for (row, values) in cols.chunks_exact_mut(width).enumerate() {
                            for (i, values) in values.chunks_exact_mut(positions).enumerate() {
                                let image = &x[(first + i) * image_len..(first + i + 1) * image_len];
                                patches.row(image, first_row + row, values);
                            }
                        }
                        multiply(cols, grads, (rows, width), out, first > 0);
                    }
                }
            });
        });
    });
    transpose(&transposed, (depth, outputs), &mut dw);
    dw
}

/// Columns of a piece of the weight gradient's patch rows, at the least
/// (whole images).
const PIECE_COLUMNS: usize = 512;

/// Patch values in a thread's block of the weight gradient's rows: 1 MB,
/// where a second-level cache of 2 MB holds it beside the piece of `∂Yᵀ`
/// it meets (an Intel Xeon), so `∂Yᵀ` is read fewer times; 256 KB for 256
/// outputs and more, whose `∂Yᵀ` pieces are as large. Measured there
/// (`conv_rates`, medians of three or more sittings against 256 KB
/// throughout): 64 channels at 56 px 134 → 184 GFLOP/s, 128 at 28 px
/// 222 → 245, 128 at 14 px 217 → 248, 128 at 8 px 208 → 230, the others
/// within the spread; 1 MB for 256 and 512 outputs at 4 px, batch 32, was
/// 183 → 159 and 192 → 146 (BENCHMARKS.md). On an AMD EPYC with 1 MB of
/// that cache, 128 KB was tuned, 256 KB ran the same.
fn block_values(dims: &Dims) -> usize {
    if dims.outputs >= WIDE_OUTPUTS { WIDE_BLOCK_VALUES } else { BLOCK_VALUES }
}

const BLOCK_VALUES: usize = 1 << 18;
const WIDE_BLOCK_VALUES: usize = 1 << 16;
const WIDE_OUTPUTS: usize = 256;
/// Blocks of patch rows the weight gradient's threads share, at the least
/// (four per thread on two cores).
const WEIGHT_BLOCKS: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::wave;

    /// The input that kernel tap `(i, j)` of channel `c` meets at output
    /// `(oy, ox)` of image `n`; `None` in the padding.
    fn met(
        dims: &Dims,
        x: &[f32],
        (n, c): (usize, usize),
        (oy, ox): (usize, usize),
        (i, j): (usize, usize),
    ) -> Option<f32> {
        let [h, w] = dims.size;
        let iy = (oy * dims.stride[0] + i).checked_sub(dims.padding[0])?;
        let ix = (ox * dims.stride[1] + j).checked_sub(dims.padding[1])?;
        (iy < h && ix < w).then(|| x[((n * dims.inputs + c) * h + iy) * w + ix])
    }

    /// The convolution by its definition, in f64.
    fn direct(dims: &Dims, x: &[f32], weight: &[f32]) -> Vec<f64> {
        let [oh, ow] = dims.out_size();
        let [kh, kw] = dims.kernel;
        let mut y = vec![0.0f64; dims.batch * dims.outputs * oh * ow];
        for n in 0..dims.batch {
            for o in 0..dims.outputs {
                for oy in 0..oh {
                    for ox in 0..ow {
                        let mut sum = 0.0f64;
                        for c in 0..dims.inputs {
                            for i in 0..kh {
                                for j in 0..kw {
                                    if let Some(xv) = met(dims, x, (n, c), (oy, ox), (i, j)) {
                                        let wv = weight[((o * dims.inputs + c) * kh + i) * kw + j];
                                        sum += f64::from(xv) * f64::from(wv);
                                    }
                                }
                            }
                        }
                        y[((n * dims.outputs + o) * oh + oy) * ow + ox] = sum;
                    }
                }
            }
        }
        y
    }

    /// `Σ probe · conv(x, weight)`, whose gradients are the kernel's
    /// gradients for an output gradient `probe`; by central differences in
    /// f64 (the function is linear in each argument, so they are exact up
    /// to rounding).
    fn probed(dims: &Dims, x: &[f32], weight: &[f32], probe: &[f32]) -> f64 {
        direct(dims, x, weight).iter().zip(probe).map(|(y, p)| y * f64::from(*p)).sum()
    }

    fn shapes() -> Vec<Dims> {
        let d = |batch, inputs, outputs, size, kernel, stride, padding| Dims {
            batch,
            inputs,
            outputs,
            size,
            kernel: [kernel; 2],
            stride: [stride; 2],
            padding: [padding; 2],
        };
        vec![
            // A ResNet's 3 × 3 of stride 1, its downsampling 3 × 3 and 1 × 1
            // of stride 2, the 1 × 1 of stride 1, the 7 × 7 stem of stride 2.
            d(2, 3, 4, [6, 5], 3, 1, 1),
            d(3, 4, 5, [7, 8], 3, 2, 1),
            d(2, 4, 6, [7, 7], 1, 2, 0),
            d(2, 5, 3, [4, 6], 1, 1, 0),
            d(2, 3, 4, [11, 9], 7, 2, 3),
            // Few positions, long patches: grouped outputs, the input
            // gradient transposed.
            d(2, 6, 20, [4, 4], 3, 1, 1),
            d(2, 6, 20, [7, 7], 3, 2, 1),
            // Stride 1 without padding, a 5 × 5 keeping the size (its patch
            // rows moved planes, two columns wrapped), and a kernel and
            // padding that differ by direction.
            d(2, 2, 3, [6, 7], 5, 1, 2),
            // A ResNet's last stage at its smallest: one pixel, 3 × 3.
            d(2, 3, 2, [1, 1], 3, 1, 1),
            d(2, 4, 3, [5, 5], 3, 1, 0),
            Dims { batch: 2, inputs: 3, outputs: 5, size: [6, 7], kernel: [2, 3], stride: [1, 1], padding: [1, 0] },
            Dims { batch: 1, inputs: 2, outputs: 3, size: [5, 9], kernel: [2, 3], stride: [1, 2], padding: [0, 1] },
            // Same-size layers through padded images (`PaddedImage`): 3 × 3,
            // 5 × 5, and a kernel that differs by direction.
            d(2, 2, 3, [16, 16], 3, 1, 1),
            d(1, 2, 2, [16, 17], 5, 1, 2),
            Dims { batch: 1, inputs: 2, outputs: 3, size: [17, 16], kernel: [3, 5], stride: [1, 1], padding: [1, 2] },
        ]
    }

    /// The shapes above that run without patch matrices do so, output and
    /// input gradient, so the tests that compare them with the definition
    /// cover that path.
    #[test]
    fn same_size_layers_of_enough_positions_run_on_padded_images() {
        let padded: Vec<Dims> = shapes().into_iter().filter(|d| PaddedImage::paying(d).is_some()).collect();
        assert_eq!(padded.len(), 3, "{padded:?}");
        for dims in padded {
            let turned = Dims { inputs: dims.outputs, outputs: dims.inputs, ..dims };
            assert!(PaddedImage::paying(&turned).is_some(), "{dims:?}");
        }
        let deep =
            Dims { batch: 1, inputs: 64, outputs: 64, size: [16, 16], kernel: [3; 2], stride: [1; 2], padding: [1; 2] };
        assert!(PaddedImage::paying(&deep).is_none(), "64 channels at 16 pixels keep the patch matrix");
        assert!(PaddedImage::paying(&Dims { size: [32, 32], ..deep }).is_some());
        assert!(PaddedImage::paying(&Dims { size: [32, 32], stride: [2, 2], ..deep }).is_none());
    }

    #[test]
    fn the_output_is_the_convolution() {
        for dims in shapes() {
            let x = wave(dims.batch * dims.image_len(), 0.37, 0.1);
            let weight = wave(dims.outputs * dims.patch(), 0.53, 0.7);
            let ours = forward(dims, &x, &weight);
            let exact = direct(&dims, &x, &weight);
            assert_eq!(ours.len(), exact.len());
            for (a, b) in ours.iter().zip(&exact) {
                assert!((f64::from(*a) - b).abs() < 1e-5, "{dims:?}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn the_gradients_are_the_convolutions() {
        for dims in shapes() {
            let x = wave(dims.batch * dims.image_len(), 0.37, 0.1);
            let weight = wave(dims.outputs * dims.patch(), 0.53, 0.7);
            let probe = wave(dims.batch * dims.out_len(), 0.29, 0.4);
            let dx = input_gradient(dims, &probe, &weight);
            let dw = weight_gradient(dims, &x, &probe);
            // Linear in x and in the weight: a unit step's difference is the gradient.
            for (i, got) in dx.iter().enumerate() {
                let mut up = x.clone();
                up[i] += 1.0;
                let exact = probed(&dims, &up, &weight, &probe) - probed(&dims, &x, &weight, &probe);
                assert!((f64::from(*got) - exact).abs() < 1e-4, "{dims:?} ∂x[{i}]: {got} vs {exact}");
            }
            for (i, got) in dw.iter().enumerate() {
                let mut up = weight.clone();
                up[i] += 1.0;
                let exact = probed(&dims, &x, &up, &probe) - probed(&dims, &x, &weight, &probe);
                assert!((f64::from(*got) - exact).abs() < 1e-4, "{dims:?} ∂w[{i}]: {got} vs {exact}");
            }
        }
    }

    /// An image's output and input gradient are the same bits alone as in a
    /// batch (a map does not depend on its batch).
    #[test]
    fn an_images_values_do_not_depend_on_its_batch() {
        let wide =
            Dims { batch: 3, inputs: 32, outputs: 64, size: [24, 24], kernel: [3; 2], stride: [1; 2], padding: [1; 2] };
        // A ResNet's last stage at 32 pixels: images in groups, the input
        // gradient transposed.
        let last = Dims { inputs: 128, outputs: 128, size: [4, 4], ..wide };
        // Groups of four images: one group, and several (on the threads).
        let more = Dims { batch: 9, ..last };
        // A weight large enough for the input gradient in groups too.
        let deep = Dims { inputs: 256, outputs: 256, ..more };
        assert_eq!(gradient_group(&deep), Some(4));
        for dims in [wide, last, more, deep] {
            batch_independence(dims);
        }
    }

    /// The input gradient computed in groups of images (a deep layer of few
    /// positions; the last group short, and a stage's first layer of stride
    /// 2) is its definition: `∂x[n, c, iy, ix] = Σ` over outputs and taps of
    /// the weight times the output gradient where the tap meets the pixel.
    #[test]
    fn the_input_gradient_in_groups_is_its_definition() {
        let deep =
            Dims { batch: 6, inputs: 64, outputs: 1024, size: [4, 4], kernel: [3; 2], stride: [1; 2], padding: [1; 2] };
        let first = Dims { batch: 5, inputs: 256, outputs: 512, size: [7, 7], stride: [2; 2], ..deep };
        for dims in [deep, first] {
            assert!(gradient_group(&dims).is_some_and(|group| dims.batch % group != 0), "{dims:?}");
            let weight = wave(dims.outputs * dims.patch(), 0.53, 0.7);
            let grad = wave(dims.batch * dims.out_len(), 0.29, 0.4);
            let dx = input_gradient(dims, &grad, &weight);
            let ([kh, kw], [oh, ow], [h, w]) = (dims.kernel, dims.out_size(), dims.size);
            let mut direct = vec![0.0f64; dx.len()];
            for n in 0..dims.batch {
                for o in 0..dims.outputs {
                    for c in 0..dims.inputs {
                        for (i, j) in (0..kh).flat_map(|i| (0..kw).map(move |j| (i, j))) {
                            let wv = f64::from(weight[((o * dims.inputs + c) * kh + i) * kw + j]);
                            for (oy, ox) in (0..oh).flat_map(|oy| (0..ow).map(move |ox| (oy, ox))) {
                                let iy = (oy * dims.stride[0] + i).checked_sub(dims.padding[0]);
                                let ix = (ox * dims.stride[1] + j).checked_sub(dims.padding[1]);
                                if let (Some(iy), Some(ix)) = (iy.filter(|&iy| iy < h), ix.filter(|&ix| ix < w)) {
                                    let gv = f64::from(grad[((n * dims.outputs + o) * oh + oy) * ow + ox]);
                                    direct[((n * dims.inputs + c) * h + iy) * w + ix] += wv * gv;
                                }
                            }
                        }
                    }
                }
            }
            for (got, exact) in dx.iter().zip(&direct) {
                assert!((f64::from(*got) - exact).abs() < 1e-4 * exact.abs().max(1.0), "{dims:?}: {got} vs {exact}");
            }
        }
    }

    fn batch_independence(dims: Dims) {
        let x = wave(dims.batch * dims.image_len(), 0.37, 0.1);
        let weight = wave(dims.outputs * dims.patch(), 0.53, 0.7);
        let grad = wave(dims.batch * dims.out_len(), 0.29, 0.4);
        let one = Dims { batch: 1, ..dims };
        let (image, out) = (dims.image_len(), dims.out_len());
        let y = forward(dims, &x, &weight);
        let dx = input_gradient(dims, &grad, &weight);
        for n in 0..dims.batch {
            let alone = forward(one, &x[n * image..(n + 1) * image], &weight);
            assert_eq!(&y[n * out..(n + 1) * out], alone.as_slice(), "output of image {n}");
            let alone = input_gradient(one, &grad[n * out..(n + 1) * out], &weight);
            assert_eq!(&dx[n * image..(n + 1) * image], alone.as_slice(), "input gradient of image {n}");
        }
    }

    /// Images of at least [`PACKED_POSITIONS`] positions take a padded image
    /// (same-size layers) or the packed product where the CPU runs it: the
    /// output is the convolution, the input gradient its adjoint (`⟨∂x, v⟩
    /// = ⟨probe, conv(v)⟩` for any `v`), and an image's values do not
    /// depend on its batch.
    #[test]
    fn large_images_are_convolved_alike() {
        let same =
            Dims { batch: 3, inputs: 3, outputs: 10, size: [48, 48], kernel: [3; 2], stride: [1; 2], padding: [1; 2] };
        // Stride 2: no padded image, the packed product.
        let strided = Dims { size: [96, 96], stride: [2; 2], ..same };
        for dims in [same, strided] {
            assert!(dims.positions() >= PACKED_POSITIONS);
            large_image_alike(dims);
        }
        assert!(PaddedImage::paying(&strided).is_none());
    }

    fn large_image_alike(dims: Dims) {
        let x = wave(dims.batch * dims.image_len(), 0.37, 0.1);
        let weight = wave(dims.outputs * dims.patch(), 0.53, 0.7);
        let exact = direct(&dims, &x, &weight);
        for (a, b) in forward(dims, &x, &weight).iter().zip(&exact) {
            assert!((f64::from(*a) - b).abs() < 1e-5, "{a} vs {b}");
        }
        let probe = wave(dims.batch * dims.out_len(), 0.29, 0.4);
        let dx = input_gradient(dims, &probe, &weight);
        let v = wave(x.len(), 0.11, 0.8);
        let lhs: f64 = dx.iter().zip(&v).map(|(&d, &v)| f64::from(d) * f64::from(v)).sum();
        let rhs = probed(&dims, &v, &weight, &probe);
        assert!((lhs - rhs).abs() < 1e-6 * rhs.abs().max(1.0) + 1e-3, "⟨∂x, v⟩ {lhs} vs ⟨probe, conv(v)⟩ {rhs}");
        batch_independence(dims);
    }

    /// The weight gradient by its definition, in f64: `Σ` over images and
    /// positions of the output gradient times the input each weight meets.
    fn direct_weight_gradient(dims: &Dims, x: &[f32], grad: &[f32]) -> Vec<f64> {
        let ([kh, kw], [oh, ow]) = (dims.kernel, dims.out_size());
        let mut dw = vec![0.0f64; dims.outputs * dims.patch()];
        for n in 0..dims.batch {
            for o in 0..dims.outputs {
                for (k, sum) in dw[o * dims.patch()..(o + 1) * dims.patch()].iter_mut().enumerate() {
                    let (c, i, j) = (k / (kh * kw), k / kw % kh, k % kw);
                    for oy in 0..oh {
                        for ox in 0..ow {
                            if let Some(xv) = met(dims, x, (n, c), (oy, ox), (i, j)) {
                                let gv = grad[((n * dims.outputs + o) * oh + oy) * ow + ox];
                                *sum += f64::from(xv) * f64::from(gv);
                            }
                        }
                    }
                }
            }
        }
        dw
    }

    /// A weight gradient over several pieces of images (the last one
    /// short) and several blocks of patch rows is its definition, and the
    /// same bits on one thread as on three.
    #[test]
    fn the_weight_gradient_over_pieces_and_blocks_is_its_definition() {
        let dims =
            Dims { batch: 5, inputs: 20, outputs: 6, size: [31, 31], kernel: [3; 2], stride: [2; 2], padding: [1; 2] };
        assert!(dims.positions() < PIECE_COLUMNS && dims.batch * dims.positions() > PIECE_COLUMNS);
        let x = wave(dims.batch * dims.image_len(), 0.37, 0.1);
        let grad = wave(dims.batch * dims.out_len(), 0.29, 0.4);
        let on = |threads| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| weight_gradient(dims, &x, &grad))
        };
        let ours = on(3);
        for (a, b) in ours.iter().zip(&direct_weight_gradient(&dims, &x, &grad)) {
            assert!((f64::from(*a) - b).abs() < 1e-4 * b.abs().max(1.0), "{a} vs {b}");
        }
        assert_eq!(ours, on(1));
    }

    /// Pieces of the weight gradient add up to the whole: a batch of
    /// several pieces gives the sum of its images' gradients.
    #[test]
    fn the_weight_gradient_sums_over_chunks() {
        let dims =
            Dims { batch: 5, inputs: 64, outputs: 4, size: [64, 64], kernel: [3; 2], stride: [1; 2], padding: [1; 2] };
        assert!(PIECE_COLUMNS.div_ceil(dims.positions()) < dims.batch, "more than one piece");
        let x = wave(dims.batch * dims.image_len(), 0.37, 0.1);
        let grad = wave(dims.batch * dims.out_len(), 0.29, 0.4);
        let whole = weight_gradient(dims, &x, &grad);
        let one = Dims { batch: 1, ..dims };
        let mut sum = vec![0.0f32; whole.len()];
        for n in 0..dims.batch {
            let part = weight_gradient(
                one,
                &x[n * dims.image_len()..(n + 1) * dims.image_len()],
                &grad[n * dims.out_len()..(n + 1) * dims.out_len()],
            );
            sum.iter_mut().zip(&part).for_each(|(s, p)| *s += p);
        }
        for (a, b) in whole.iter().zip(&sum) {
            assert!((a - b).abs() <= 1e-3 * b.abs().max(1.0), "{a} vs {b}");
        }
    }

    /// The weight gradient's thread blocks and thread count change no value:
    /// blocks of 16 to 512 KB and 1 to 3 threads give the same bits (cached
    /// models stay valid).
    #[test]
    fn the_weight_gradient_does_not_depend_on_its_blocks() {
        let shapes = [(8, 32, 1, 4), (32, 16, 1, 3), (16, 24, 2, 2), (64, 8, 1, 5)];
        for (channels, side, stride, batch) in shapes {
            let dims = Dims {
                batch,
                inputs: channels,
                outputs: channels * stride,
                size: [side, side],
                kernel: [3, 3],
                stride: [stride, stride],
                padding: [1, 1],
            };
            let x = wave(dims.batch * dims.image_len(), 0.37, 0.1);
            let grad = wave(dims.batch * dims.out_len(), 0.29, 0.3);
            let bits = |block_values| -> Vec<u32> {
                weight_gradient_in_blocks(dims, &x, &grad, block_values).iter().map(|v| v.to_bits()).collect()
            };
            let reference = bits(1 << 15);
            for block_values in [1 << 12, 1 << 16, 1 << 17] {
                assert_eq!(bits(block_values), reference, "{channels} channels at {side} px, {block_values} values");
            }
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a thread pool");
                let bits = pool.install(|| bits(1 << 15));
                assert_eq!(bits, reference, "{channels} channels at {side} px, {threads} threads");
            }
        }
    }

    /// The three products' rates on a ResNet-18's 3 × 3 layers (small stem,
    /// a batch of 32) and on the ImageNet stem's layers at 112 pixels (a
    /// batch of 16), on rayon's threads (what a training step runs): `cargo test -p grid-kernels --release conv_rates --
    /// --ignored --nocapture`. Each makes `2 · batch · out · K · positions`
    /// flops.
    #[test]
    #[ignore]
    fn conv_rates() {
        use std::time::Instant;
        let same = |channels: usize, side: usize| Dims {
            batch: 32,
            inputs: channels,
            outputs: channels,
            size: [side, side],
            kernel: [3, 3],
            stride: [1, 1],
            padding: [1, 1],
        };
        let layers =
            [(8, 32), (16, 16), (32, 32), (64, 16), (128, 8), (256, 4), (512, 4), (32, 64), (64, 56), (128, 28)]
                .map(|(channels, side)| (format!("{channels:>4} ch × {side:>3} px"), same(channels, side)));
        // The ImageNet stem's layers at 112 pixels, a batch of 16 (what
        // `resnet_roofline_imagenet.toml` trains): the 7 × 7 stem, the
        // same-size layers, a stage's first (stride-2) layer and its 1 × 1
        // shortcut.
        let batch16 = |dims: Dims| Dims { batch: 16, ..dims };
        let stride2 = |inputs: usize, side: usize, kernel: usize| Dims {
            batch: 16,
            inputs,
            outputs: 2 * inputs,
            size: [side, side],
            kernel: [kernel, kernel],
            stride: [2, 2],
            padding: [kernel / 2, kernel / 2],
        };
        let imagenet = [
            ("stem 7 × 7 s2 3 → 64 at 112".to_string(), Dims { outputs: 64, ..stride2(3, 112, 7) }),
            ("  64 ch ×  28 px, batch 16".to_string(), batch16(same(64, 28))),
            (" 128 ch ×  14 px, batch 16".to_string(), batch16(same(128, 14))),
            (" 256 ch ×   7 px, batch 16".to_string(), batch16(same(256, 7))),
            (" 512 ch ×   4 px, batch 16".to_string(), batch16(same(512, 4))),
            ("3 × 3 s2 64 → 128 at 28".to_string(), stride2(64, 28, 3)),
            ("1 × 1 s2 64 → 128 at 28".to_string(), stride2(64, 28, 1)),
            ("3 × 3 s2 256 → 512 at 7".to_string(), stride2(256, 7, 3)),
        ];
        for (name, dims) in layers.into_iter().chain(imagenet) {
            let x = wave(dims.batch * dims.image_len(), 0.37, 0.1);
            let weight = wave(dims.outputs * dims.patch(), 0.53, 0.7);
            let grad = wave(dims.batch * dims.out_len(), 0.29, 0.3);
            let flops = 2.0 * (dims.batch * dims.outputs * dims.patch() * dims.positions()) as f64;
            let rate = |f: &dyn Fn() -> Vec<f32>| {
                let _ = f();
                let reps = (4e9 / flops).ceil() as usize;
                let start = Instant::now();
                for _ in 0..reps {
                    std::hint::black_box(f());
                }
                flops * reps as f64 / start.elapsed().as_secs_f64() / 1e9
            };
            let forward = rate(&|| forward(dims, &x, &weight));
            let input = rate(&|| input_gradient(dims, &grad, &weight));
            let weights = rate(&|| weight_gradient(dims, &x, &grad));
            println!(
                "{name}: forward {forward:6.1} GFLOP/s, input gradient {input:6.1}, weight gradient {weights:6.1}"
            );
        }
    }
}
