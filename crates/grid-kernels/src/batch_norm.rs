//! Batch normalisation over `[batch, channels, positions]` (NCHW images,
//! the positions `h · w`), with what follows it in a ResNet fused in: the
//! skip connection's sum and the ReLU. `y = relu?(γ (x − μ) / √(σ² + ε) + β
//! + skip?)`, per channel, forward in one kernel and backward in one:
//!
//! - [`Statistics::Batch`]: μ and σ² (biased, as burn's and torch's
//!   normalisation use it) of the batch, what training runs; the backward
//!   pass goes through them;
//! - [`Statistics::Given`]: the running ones, an evaluated model (what
//!   saliency maps differentiate): an affine map per channel.
//!
//! Sums run per channel in f64, over the images in order, so a channel's
//! statistics do not depend on the threads. With given statistics a value
//! depends on its own image alone.

use std::borrow::Cow;
use std::mem::MaybeUninit;

use rayon::prelude::*;

use crate::chunks::{for_each_chunk, written};
use crate::dispatch::{Loop, widest};

/// The shape of a batch: `batch` images of `channels` planes of `positions`
/// values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    pub batch: usize,
    pub channels: usize,
    pub positions: usize,
}

impl Dims {
    fn len(&self) -> usize {
        self.batch * self.channels * self.positions
    }

    /// Values per channel.
    fn count(&self) -> usize {
        self.batch * self.positions
    }
}

/// Where μ and σ² come from.
#[derive(Debug, Clone, Copy)]
pub enum Statistics<'a> {
    /// The batch's own.
    Batch,
    /// Given per channel (the running ones).
    Given { mean: &'a [f32], var: &'a [f32] },
}

/// What follows the normalisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Epilogue {
    /// A skip connection's values are added.
    pub residual: bool,
    /// Then the ReLU.
    pub relu: bool,
}

/// The forward pass's output and the statistics it used.
#[derive(Debug, Clone)]
pub struct Forward {
    pub y: Vec<f32>,
    /// μ and σ² per channel (the batch's, or the given ones).
    pub mean: Vec<f32>,
    pub var: Vec<f32>,
}

/// Below this many values a pass runs on one thread.
const PARALLEL_VALUES: usize = 1 << 15;

/// Channel `c`'s values of image `n`.
fn plane<'a>(values: &'a [f32], dims: &Dims, n: usize, c: usize) -> &'a [f32] {
    let start = (n * dims.channels + c) * dims.positions;
    &values[start..start + dims.positions]
}

/// `f(c)` for every channel, on the threads when the batch is large.
fn per_channel<T: Send>(dims: &Dims, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    if dims.len() >= PARALLEL_VALUES {
        (0..dims.channels).into_par_iter().map(f).collect()
    } else {
        (0..dims.channels).map(f).collect()
    }
}

/// A new `[batch, channels, positions]` array written plane by plane:
/// `f(c, start, plane)` for every `positions`-long plane (image by image,
/// channel by channel; `start` its first index) writes each of its values.
/// On the threads when the batch is large; nothing is copied or zeroed first.
fn new_planes(dims: &Dims, f: impl Fn(usize, usize, &mut [MaybeUninit<f32>]) + Sync + Send) -> Vec<f32> {
    let (len, positions, channels) = (dims.len(), dims.positions.max(1), dims.channels.max(1));
    // `f` writes every value of every plane, and the planes cover `len`.
    written(len, |out| {
        for_each_chunk(out, positions, len >= PARALLEL_VALUES, |(i, plane)| f(i % channels, i * positions, plane))
    })
}

/// Interleaved sums: a plane's value `i` goes to lane `i % SUM_LANES`, the
/// lanes added in order when read. One running sum is a chain of dependent
/// additions, a value per addition's latency (a sixth of the batch norm's
/// time went there); lanes the compiler keeps in vector registers are not.
/// The order depends only on where the values are, never on the threads.
const SUM_LANES: usize = 16;

/// Two sums over the same values, `(Σ a, Σ a · b)`, in [`SUM_LANES`]
/// interleaved lanes. A plane's last values (fewer than a chunk) go to sums
/// of their own: indexing the lanes by a count kept them in memory, not in
/// registers.
struct LaneSums {
    first: [f64; SUM_LANES],
    second: [f64; SUM_LANES],
    tail: (f64, f64),
}

impl LaneSums {
    fn new() -> LaneSums {
        LaneSums { first: [0.0; SUM_LANES], second: [0.0; SUM_LANES], tail: (0.0, 0.0) }
    }

    /// Adds a chunk's value `i` (`a`, and `a · b`) to lane `i`.
    #[inline(always)]
    fn add(&mut self, i: usize, a: f64, b: f64) {
        self.first[i] += a;
        self.second[i] += a * b;
    }

    /// Adds a value past a plane's last whole chunk.
    #[inline(always)]
    fn add_tail(&mut self, a: f64, b: f64) {
        self.tail.0 += a;
        self.tail.1 += a * b;
    }

    /// The two sums, the lanes added in order.
    fn totals(&self) -> (f64, f64) {
        (self.first.iter().sum::<f64>() + self.tail.0, self.second.iter().sum::<f64>() + self.tail.1)
    }
}

/// `(Σ (v − pivot), Σ (v − pivot)²)` over `planes` in f64, in
/// [`SUM_LANES`] interleaved lanes each: one read of the values for both.
#[inline(always)]
fn lane_moments<'a>(planes: impl Iterator<Item = &'a [f32]>, pivot: f64) -> (f64, f64) {
    let mut lanes = LaneSums::new();
    for plane in planes {
        let mut chunks = plane.chunks_exact(SUM_LANES);
        for chunk in &mut chunks {
            let chunk: &[f32; SUM_LANES] = chunk.try_into().expect("a whole chunk");
            for (i, &v) in chunk.iter().enumerate() {
                let d = f64::from(v) - pivot;
                lanes.add(i, d, d);
            }
        }
        for &v in chunks.remainder() {
            let d = f64::from(v) - pivot;
            lanes.add_tail(d, d);
        }
    }
    lanes.totals()
}

/// One channel's [`lane_moments`] over the batch's planes, compiled for
/// the CPU's widest vectors (the lanes are f64: a baseline build runs them
/// two at a time).
struct ChannelMoments<'a> {
    dims: &'a Dims,
    x: &'a [f32],
    channel: usize,
    pivot: f64,
    out: &'a mut (f64, f64),
}

impl Loop for ChannelMoments<'_> {
    #[inline(always)]
    fn run(self) {
        let ChannelMoments { dims, x, channel, pivot, out } = self;
        *out = lane_moments((0..dims.batch).map(|n| plane(x, dims, n, channel)), pivot);
    }
}

/// The batch's μ and biased σ² of every channel, in one read of `x`: the
/// moments about the channel's first value, whose difference from μ is a
/// value's typical size, so `E[d²] − E[d]²` cancels no more than the
/// two-pass form does (in f64, of f32 values).
fn batch_statistics(dims: &Dims, x: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let count = dims.count().max(1) as f64;
    let stats = per_channel(dims, |channel| {
        let pivot = (0..dims.batch).find_map(|n| plane(x, dims, n, channel).first()).map_or(0.0, |&v| f64::from(v));
        let mut moments = (0.0, 0.0);
        widest(ChannelMoments { dims, x, channel, pivot, out: &mut moments });
        let (sum, squares) = moments;
        let shift = sum / count;
        ((pivot + shift) as f32, (squares / count - shift * shift).max(0.0) as f32)
    });
    stats.into_iter().unzip()
}

/// A plane of the forward's output, `relu?(x · a + b + skip?)`, with
/// `affine` `(a, b)`.
struct Normalised<'a> {
    x: &'a [f32],
    skip: Option<&'a [f32]>,
    affine: (f32, f32),
    relu: bool,
    out: &'a mut [MaybeUninit<f32>],
}

impl Loop for Normalised<'_> {
    #[inline(always)]
    fn run(self) {
        let Normalised { x, skip, affine: (a, b), relu, out } = self;
        match (skip, relu) {
            (Some(skip), true) => {
                for ((y, &v), &s) in out.iter_mut().zip(x).zip(skip) {
                    y.write((v * a + b + s).max(0.0));
                }
            }
            (Some(skip), false) => {
                for ((y, &v), &s) in out.iter_mut().zip(x).zip(skip) {
                    y.write(v * a + b + s);
                }
            }
            (None, true) => {
                for (y, &v) in out.iter_mut().zip(x) {
                    y.write((v * a + b).max(0.0));
                }
            }
            (None, false) => {
                for (y, &v) in out.iter_mut().zip(x) {
                    y.write(v * a + b);
                }
            }
        }
    }
}

/// The forward pass: `x` and the optional `residual` `[batch, channels,
/// positions]`, `gamma` and `beta` `[channels]`.
pub fn forward(
    dims: Dims,
    x: &[f32],
    (gamma, beta): (&[f32], &[f32]),
    epsilon: f32,
    statistics: Statistics,
    epilogue: Epilogue,
    residual: Option<&[f32]>,
) -> Forward {
    assert_eq!(x.len(), dims.len(), "batch norm: input size");
    assert!(gamma.len() == dims.channels && beta.len() == dims.channels, "batch norm: γ and β per channel");
    assert_eq!(epilogue.residual, residual.is_some(), "batch norm: a residual exactly when the epilogue adds one");
    if let Some(residual) = residual {
        assert_eq!(residual.len(), dims.len(), "batch norm: residual size");
    }
    let (mean, var) = match statistics {
        Statistics::Batch => batch_statistics(&dims, x),
        Statistics::Given { mean, var } => {
            assert!(mean.len() == dims.channels && var.len() == dims.channels, "batch norm: statistics per channel");
            (mean.to_vec(), var.to_vec())
        }
    };
    // y = x · scale + shift per channel.
    let scale: Vec<f32> = (0..dims.channels).map(|c| gamma[c] / (var[c] + epsilon).sqrt()).collect();
    let shift: Vec<f32> = (0..dims.channels).map(|c| beta[c] - mean[c] * scale[c]).collect();
    let positions = dims.positions;
    let y = new_planes(&dims, |c, start, out| {
        let x = &x[start..start + positions];
        let skip = residual.map(|skip| &skip[start..start + positions]);
        widest(Normalised { x, skip, affine: (scale[c], shift[c]), relu: epilogue.relu, out });
    });
    Forward { y, mean, var }
}

/// The ReLU's gradient from its output's `g` and its output `y`.
#[inline(always)]
fn relu_gradient(g: f32, y: f32) -> f32 {
    if y > 0.0 { g } else { 0.0 }
}

/// Adds a plane's `g` (through the ReLU's mask `y > 0` when `MASKED`) and
/// `g · x̂` to their lanes, `x̂ = (x − m) s`.
#[inline(always)]
fn add_moments<const MASKED: bool>((g, y, x): (&[f32], &[f32], &[f32]), (m, s): (f32, f32), lanes: &mut LaneSums) {
    let value = |g: f32, y: f32| if MASKED { relu_gradient(g, y) } else { g };
    let (mut gs, mut ys, mut xs) = (g.chunks_exact(SUM_LANES), y.chunks_exact(SUM_LANES), x.chunks_exact(SUM_LANES));
    for ((g, y), x) in (&mut gs).zip(&mut ys).zip(&mut xs) {
        let g: &[f32; SUM_LANES] = g.try_into().expect("a whole chunk");
        let y: &[f32; SUM_LANES] = y.try_into().expect("a whole chunk");
        let x: &[f32; SUM_LANES] = x.try_into().expect("a whole chunk");
        for i in 0..SUM_LANES {
            lanes.add(i, f64::from(value(g[i], y[i])), f64::from((x[i] - m) * s));
        }
    }
    for ((&g, &y), &v) in gs.remainder().iter().zip(ys.remainder()).zip(xs.remainder()) {
        lanes.add_tail(f64::from(value(g, y)), f64::from((v - m) * s));
    }
}

/// One channel's `(Σ g, Σ g · x̂)` over the batch's planes, `g` through
/// the ReLU's `mask` where it is read through one; compiled for the CPU's
/// widest vectors.
struct GradientMoments<'a> {
    dims: &'a Dims,
    grad: &'a [f32],
    mask: Option<&'a [f32]>,
    x: &'a [f32],
    channel: usize,
    /// μ and σ⁻¹.
    centre: (f32, f32),
    out: &'a mut (f64, f64),
}

impl Loop for GradientMoments<'_> {
    #[inline(always)]
    fn run(self) {
        let GradientMoments { dims, grad, mask, x, channel, centre, out } = self;
        let mut lanes = LaneSums::new();
        for n in 0..dims.batch {
            let (g, x) = (plane(grad, dims, n, channel), plane(x, dims, n, channel));
            match mask {
                Some(y) => add_moments::<true>((g, plane(y, dims, n, channel), x), centre, &mut lanes),
                None => add_moments::<false>((g, g, x), centre, &mut lanes),
            }
        }
        *out = lanes.totals();
    }
}

/// A plane of the input's gradient: `a (g − mean_g − x̂ · mean_gx)` with
/// the batch's statistics (`x` given), `a g` with given ones; `g` through
/// the ReLU's `mask` where it is read through one.
struct InputGradient<'a> {
    grad: &'a [f32],
    mask: Option<&'a [f32]>,
    x: Option<&'a [f32]>,
    /// `a = γ σ⁻¹`, the means of `g` and of `g · x̂`.
    terms: (f32, f32, f32),
    /// μ and σ⁻¹.
    centre: (f32, f32),
    out: &'a mut [MaybeUninit<f32>],
}

impl Loop for InputGradient<'_> {
    #[inline(always)]
    fn run(self) {
        let InputGradient { grad, mask, x, terms: (a, mean_g, mean_gx), centre: (m, s), out } = self;
        match (mask, x) {
            (None, None) => {
                for (dx, &g) in out.iter_mut().zip(grad) {
                    dx.write(g * a);
                }
            }
            (Some(y), None) => {
                for ((dx, &g), &y) in out.iter_mut().zip(grad).zip(y) {
                    dx.write(relu_gradient(g, y) * a);
                }
            }
            (None, Some(x)) => {
                for ((dx, &g), &v) in out.iter_mut().zip(grad).zip(x) {
                    dx.write(a * (g - mean_g - (v - m) * s * mean_gx));
                }
            }
            (Some(y), Some(x)) => {
                for (((dx, &g), &y), &v) in out.iter_mut().zip(grad).zip(y).zip(x) {
                    dx.write(a * (relu_gradient(g, y) - mean_g - (v - m) * s * mean_gx));
                }
            }
        }
    }
}

/// The backward pass's gradients.
#[derive(Debug, Clone)]
pub struct Backward {
    /// Of the input.
    pub x: Vec<f32>,
    /// Of γ and β, when asked for.
    pub affine: Option<AffineGradients>,
    /// Of the residual (the output's gradient through the ReLU), when the
    /// epilogue added one.
    pub residual: Option<Vec<f32>>,
}

/// The gradients of γ and β, per channel.
#[derive(Debug, Clone)]
pub struct AffineGradients {
    pub gamma: Vec<f32>,
    pub beta: Vec<f32>,
}

/// The backward pass from the output's gradient `grad`, with the forward's
/// input `x`, output `y` (the ReLU's mask) and statistics (`forward`'s
/// `mean` and `var`); `batch`: whether they were the batch's (and so
/// depend on `x`); `affine`: whether γ's and β's gradients are wanted. With
/// given statistics and no γ or β to train (a saliency map's gradient
/// through a model in evaluation) the input's gradient is one scaled pass,
/// and the per-channel sums, a pass over the gradient and the input, are
/// not taken.
#[allow(clippy::too_many_arguments)]
pub fn backward(
    dims: Dims,
    x: &[f32],
    y: &[f32],
    grad: &[f32],
    gamma: &[f32],
    (mean, var): (&[f32], &[f32]),
    epsilon: f32,
    batch: bool,
    affine: bool,
    epilogue: Epilogue,
) -> Backward {
    assert!(x.len() == dims.len() && y.len() == dims.len() && grad.len() == dims.len(), "batch norm: sizes");
    // The gradient at the normalisation's output is `grad` where the ReLU
    // passed (`y > 0`). With a skip connection it is that one's gradient
    // too, so it is written out once; else each pass reads it through the
    // mask (a pass over the activations fewer).
    let through = |(&g, &y): (&f32, &f32)| relu_gradient(g, y);
    let (grad, mask): (Cow<[f32]>, Option<&[f32]>) = match (epilogue.relu, epilogue.residual) {
        (true, true) if dims.len() >= PARALLEL_VALUES => {
            (Cow::Owned(grad.par_iter().zip(y).map(through).collect()), None)
        }
        (true, true) => (Cow::Owned(grad.iter().zip(y).map(through).collect()), None),
        (true, false) => (Cow::Borrowed(grad), Some(y)),
        (false, _) => (Cow::Borrowed(grad), None),
    };
    let inv_std: Vec<f32> = var.iter().map(|&v| 1.0 / (v + epsilon).sqrt()).collect();
    // Σ g and Σ g · x̂ per channel.
    let sums = (batch || affine).then(|| {
        per_channel(&dims, |channel| {
            let mut sums = (0.0, 0.0);
            let (grad, centre) = (&*grad, (mean[channel], inv_std[channel]));
            widest(GradientMoments { dims: &dims, grad, mask, x, channel, centre, out: &mut sums });
            sums
        })
    });
    let count = dims.count().max(1) as f64;
    // ∂x = γ σ⁻¹ (g − [batch] (Σg + x̂ Σ g x̂) / N).
    let terms: Vec<(f32, f32, f32)> = (0..dims.channels)
        .map(|c| {
            let a = gamma[c] * inv_std[c];
            match &sums {
                Some(sums) if batch => (a, (sums[c].0 / count) as f32, (sums[c].1 / count) as f32),
                _ => (a, 0.0, 0.0),
            }
        })
        .collect();
    let positions = dims.positions;
    let dx = new_planes(&dims, |c, start, out| {
        let range = start..start + positions;
        let (x, mask) = (batch.then(|| &x[range.clone()]), mask.map(|y| &y[range.clone()]));
        let (grad, centre) = (&grad[range], (mean[c], inv_std[c]));
        widest(InputGradient { grad, mask, x, terms: terms[c], centre, out });
    });
    let affine = sums.filter(|_| affine).map(|sums| AffineGradients {
        gamma: sums.iter().map(|&(_, dot)| dot as f32).collect(),
        beta: sums.iter().map(|&(sum, _)| sum as f32).collect(),
    });
    Backward { x: dx, affine, residual: epilogue.residual.then(|| grad.into_owned()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::wave;

    fn dims() -> Dims {
        Dims { batch: 3, channels: 4, positions: 10 }
    }

    /// `Σ probe · forward(x)` in f64, the function the gradients are of.
    fn probed(
        dims: Dims,
        x: &[f32],
        (gamma, beta): (&[f32], &[f32]),
        statistics: Statistics,
        epilogue: Epilogue,
        residual: Option<&[f32]>,
        probe: &[f32],
    ) -> f64 {
        let y = forward(dims, x, (gamma, beta), 1e-5, statistics, epilogue, residual).y;
        y.iter().zip(probe).map(|(&y, &p)| f64::from(y) * f64::from(p)).sum()
    }

    #[test]
    fn the_output_is_normalised_per_channel() {
        let dims = dims();
        let x: Vec<f32> =
            wave(dims.len(), 0.37, 0.1).iter().enumerate().map(|(i, v)| v * 3.0 + i as f32 * 0.01).collect();
        let (gamma, beta) = (vec![1.0; 4], vec![0.0; 4]);
        let none = Epilogue { residual: false, relu: false };
        let out = forward(dims, &x, (&gamma, &beta), 0.0, Statistics::Batch, none, None);
        for c in 0..dims.channels {
            let values: Vec<f64> =
                (0..dims.batch).flat_map(|n| plane(&out.y, &dims, n, c).to_vec()).map(f64::from).collect();
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / values.len() as f64;
            assert!(mean.abs() < 1e-5 && (var - 1.0).abs() < 1e-4, "channel {c}: mean {mean}, var {var}");
        }
        // Given statistics: the affine map.
        let (mean, var) = (vec![0.5, -1.0, 0.0, 2.0], vec![4.0, 1.0, 0.25, 9.0]);
        let given = forward(dims, &x, (&gamma, &beta), 0.0, Statistics::Given { mean: &mean, var: &var }, none, None);
        let i = (2 * dims.channels + 3) * dims.positions + 5;
        assert!((given.y[i] - (x[i] - 2.0) / 3.0).abs() < 1e-6);
    }

    /// One read's moments against the two-pass definition in f64, where a
    /// channel's mean is 10⁵ of its spread (naive `E[x²] − μ²` in f32 would
    /// read a variance of noise), and a constant channel's variance is 0.
    #[test]
    fn the_batch_statistics_are_the_definitions_far_from_zero() {
        let dims = Dims { batch: 3, channels: 2, positions: 37 };
        let mut x: Vec<f32> = wave(dims.len(), 0.37, 0.1).iter().map(|v| 1000.0 + v * 0.01).collect();
        for n in 0..dims.batch {
            let start = (n * dims.channels + 1) * dims.positions;
            x[start..start + dims.positions].fill(-3.5);
        }
        let (mean, var) = batch_statistics(&dims, &x);
        for c in 0..dims.channels {
            let values: Vec<f64> =
                (0..dims.batch).flat_map(|n| plane(&x, &dims, n, c).to_vec()).map(f64::from).collect();
            let m = values.iter().sum::<f64>() / values.len() as f64;
            let v = values.iter().map(|x| (x - m).powi(2)).sum::<f64>() / values.len() as f64;
            assert!((f64::from(mean[c]) - m).abs() <= m.abs() * 1e-7, "channel {c}: μ {} vs {m}", mean[c]);
            assert!((f64::from(var[c]) - v).abs() <= v * 1e-5, "channel {c}: σ² {} vs {v}", var[c]);
        }
        assert_eq!(var[1], 0.0);
    }

    /// Every gradient against finite differences in f64, for each
    /// statistics and epilogue.
    #[test]
    fn the_gradients_are_the_functions() {
        let dims = dims();
        let x = wave(dims.len(), 0.37, 0.1);
        let skip = wave(dims.len(), 0.71, 0.3);
        let probe = wave(dims.len(), 0.29, 0.4);
        let gamma = vec![0.5, 1.5, -1.0, 2.0];
        let beta = vec![0.1, -0.2, 0.3, 0.05];
        let (mean, var) = (vec![0.1, -0.2, 0.0, 0.3], vec![0.5, 1.0, 0.8, 0.3]);
        let given = Statistics::Given { mean: &mean, var: &var };
        for statistics in [Statistics::Batch, given] {
            for (residual, relu) in [(false, false), (false, true), (true, true)] {
                let epilogue = Epilogue { residual, relu };
                let skip = residual.then_some(skip.as_slice());
                let out = forward(dims, &x, (&gamma, &beta), 1e-5, statistics, epilogue, skip);
                let batch = matches!(statistics, Statistics::Batch);
                let stats = (out.mean.as_slice(), out.var.as_slice());
                let grads = backward(dims, &x, &out.y, &probe, &gamma, stats, 1e-5, batch, true, epilogue);
                // Without γ and β the input's gradient is the same, bit for bit.
                let alone = backward(dims, &x, &out.y, &probe, &gamma, stats, 1e-5, batch, false, epilogue);
                assert!(alone.affine.is_none());
                assert_eq!(alone.x, grads.x, "{statistics:?}, {epilogue:?}");
                assert_eq!(alone.residual, grads.residual);
                let affine = grads.affine.as_ref().expect("γ and β asked for");
                let f = |x: &[f32], gamma: &[f32], beta: &[f32], skip: Option<&[f32]>| {
                    probed(dims, x, (gamma, beta), statistics, epilogue, skip, &probe)
                };
                let h = 1e-3f32;
                let check = |name: &str, got: f32, up: f64, down: f64| {
                    let numeric = (up - down) / (2.0 * f64::from(h));
                    assert!(
                        (f64::from(got) - numeric).abs() < 2e-2 * numeric.abs().max(1.0),
                        "{name} ({statistics:?}, {epilogue:?}): {got} vs {numeric}"
                    );
                };
                for i in (0..dims.len()).step_by(7) {
                    let (mut up, mut down) = (x.clone(), x.clone());
                    up[i] += h;
                    down[i] -= h;
                    check("∂x", grads.x[i], f(&up, &gamma, &beta, skip), f(&down, &gamma, &beta, skip));
                    if let Some(skip) = skip {
                        let (mut up, mut down) = (skip.to_vec(), skip.to_vec());
                        up[i] += h;
                        down[i] -= h;
                        let dr = grads.residual.as_ref().expect("a residual gradient")[i];
                        check("∂skip", dr, f(&x, &gamma, &beta, Some(&up)), f(&x, &gamma, &beta, Some(&down)));
                    }
                }
                for c in 0..dims.channels {
                    let (mut up, mut down) = (gamma.clone(), gamma.clone());
                    up[c] += h;
                    down[c] -= h;
                    check("∂γ", affine.gamma[c], f(&x, &up, &beta, skip), f(&x, &down, &beta, skip));
                    let (mut up, mut down) = (beta.clone(), beta.clone());
                    up[c] += h;
                    down[c] -= h;
                    check("∂β", affine.beta[c], f(&x, &gamma, &up, skip), f(&x, &gamma, &down, skip));
                }
            }
        }
    }

    /// Batch norm's rates on a ResNet's training shapes (batch 32, 32 px and
    /// deeper; the ImageNet stem's 64 channels at 56 px, batch 16), in GB/s
    /// of activations it must touch at the least (forward: `x` read, `y`
    /// written; backward: `x`, `y` and `grad` read, `∂x` written; the
    /// batch's statistics alone: `x` read), on
    /// rayon's threads: `cargo test -p grid-kernels --release
    /// batch_norm_rates -- --ignored --nocapture`.
    #[test]
    #[ignore]
    fn batch_norm_rates() {
        use std::time::Instant;
        let shapes = [(32, 32, 1024), (32, 64, 256), (32, 128, 64), (32, 256, 16), (16, 64, 3136)];
        let fused = Epilogue { residual: false, relu: true };
        for (batch, channels, positions) in shapes {
            let dims = Dims { batch, channels, positions };
            let x = wave(dims.len(), 0.37, 0.1);
            let grad = wave(dims.len(), 0.29, 0.3);
            let (gamma, beta) = (vec![1.1; channels], vec![0.1; channels]);
            let bytes = 4.0 * dims.len() as f64;
            let rate = |f: &dyn Fn() -> usize, passes: f64| {
                let _ = f();
                let reps = (4e9 / bytes).ceil() as usize;
                let start = Instant::now();
                for _ in 0..reps {
                    std::hint::black_box(f());
                }
                passes * bytes * reps as f64 / start.elapsed().as_secs_f64() / 1e9
            };
            let out = forward(dims, &x, (&gamma, &beta), 1e-5, Statistics::Batch, fused, None);
            let forward_rate =
                rate(&|| forward(dims, &x, (&gamma, &beta), 1e-5, Statistics::Batch, fused, None).y.len(), 2.0);
            let stats_rate = rate(&|| batch_statistics(&dims, &x).0.len(), 1.0);
            let stats = (out.mean.as_slice(), out.var.as_slice());
            let backward_rate =
                rate(&|| backward(dims, &x, &out.y, &grad, &gamma, stats, 1e-5, true, true, fused).x.len(), 4.0);
            println!(
                "{batch:>3} × {channels:>4} ch × {positions:>5} positions: statistics {stats_rate:5.1}, forward {forward_rate:5.1}, backward {backward_rate:5.1} GB/s"
            );
        }
    }
}
