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

/// `Σ f(v)` over `planes` in f64, in [`SUM_LANES`] interleaved lanes.
#[inline(always)]
fn lane_sum<'a>(planes: impl Iterator<Item = &'a [f32]>, f: impl Fn(f64) -> f64) -> f64 {
    let mut lanes = [0.0f64; SUM_LANES];
    for plane in planes {
        let mut chunks = plane.chunks_exact(SUM_LANES);
        for chunk in &mut chunks {
            let chunk: &[f32; SUM_LANES] = chunk.try_into().expect("a whole chunk");
            for i in 0..SUM_LANES {
                lanes[i] += f(f64::from(chunk[i]));
            }
        }
        for (lane, &v) in lanes.iter_mut().zip(chunks.remainder()) {
            *lane += f(f64::from(v));
        }
    }
    lanes.iter().sum()
}

/// The batch's μ and biased σ² of every channel.
fn batch_statistics(dims: &Dims, x: &[f32]) -> (Vec<f32>, Vec<f32>) {
    let count = dims.count().max(1) as f64;
    let stats = per_channel(dims, |c| {
        let planes = || (0..dims.batch).map(|n| plane(x, dims, n, c));
        let mean = lane_sum(planes(), |v| v) / count;
        let squares = lane_sum(planes(), |v| (v - mean) * (v - mean));
        (mean as f32, (squares / count) as f32)
    });
    stats.into_iter().unzip()
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
    let relu = |v: f32| if epilogue.relu { v.max(0.0) } else { v };
    let y = new_planes(&dims, |c, start, out| {
        let (a, b) = (scale[c], shift[c]);
        let x = &x[start..start + positions];
        match residual {
            Some(skip) => {
                let skip = &skip[start..start + positions];
                for ((y, &v), &s) in out.iter_mut().zip(x).zip(skip) {
                    y.write(relu(v * a + b + s));
                }
            }
            None => {
                for (y, &v) in out.iter_mut().zip(x) {
                    y.write(relu(v * a + b));
                }
            }
        }
    });
    Forward { y, mean, var }
}

/// The backward pass's gradients.
#[derive(Debug, Clone)]
pub struct Backward {
    /// Of the input.
    pub x: Vec<f32>,
    /// Of γ and β, per channel.
    pub gamma: Vec<f32>,
    pub beta: Vec<f32>,
    /// Of the residual (the output's gradient through the ReLU), when the
    /// epilogue added one.
    pub residual: Option<Vec<f32>>,
}

/// The backward pass from the output's gradient `grad`, with the forward's
/// input `x`, output `y` (the ReLU's mask) and statistics (`forward`'s
/// `mean` and `var`); `batch`: whether they were the batch's (and so
/// depend on `x`).
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
    epilogue: Epilogue,
) -> Backward {
    assert!(x.len() == dims.len() && y.len() == dims.len() && grad.len() == dims.len(), "batch norm: sizes");
    // The gradient at the normalisation's output: through the ReLU.
    let masked: Cow<[f32]> = if epilogue.relu {
        let through = |(&g, &v): (&f32, &f32)| if v > 0.0 { g } else { 0.0 };
        if dims.len() >= PARALLEL_VALUES {
            Cow::Owned(grad.par_iter().zip(y).map(through).collect())
        } else {
            Cow::Owned(grad.iter().zip(y).map(through).collect())
        }
    } else {
        Cow::Borrowed(grad)
    };
    let inv_std: Vec<f32> = var.iter().map(|&v| 1.0 / (v + epsilon).sqrt()).collect();
    // Σ g and Σ g · x̂ per channel.
    let sums = per_channel(&dims, |c| {
        let (mut sum, mut dot) = ([0.0f64; SUM_LANES], [0.0f64; SUM_LANES]);
        let (m, s) = (mean[c], inv_std[c]);
        for n in 0..dims.batch {
            let (g, x) = (plane(&masked, &dims, n, c), plane(x, &dims, n, c));
            let (mut gs, mut xs) = (g.chunks_exact(SUM_LANES), x.chunks_exact(SUM_LANES));
            for (g, x) in (&mut gs).zip(&mut xs) {
                let g: &[f32; SUM_LANES] = g.try_into().expect("a whole chunk");
                let x: &[f32; SUM_LANES] = x.try_into().expect("a whole chunk");
                for i in 0..SUM_LANES {
                    sum[i] += f64::from(g[i]);
                    dot[i] += f64::from(g[i]) * f64::from((x[i] - m) * s);
                }
            }
            for (i, (&g, &v)) in gs.remainder().iter().zip(xs.remainder()).enumerate() {
                sum[i] += f64::from(g);
                dot[i] += f64::from(g) * f64::from((v - m) * s);
            }
        }
        (sum.iter().sum::<f64>(), dot.iter().sum::<f64>())
    });
    let count = dims.count().max(1) as f64;
    // ∂x = γ σ⁻¹ (g − [batch] (Σg + x̂ Σ g x̂) / N).
    let terms: Vec<(f32, f32, f32)> = (0..dims.channels)
        .map(|c| {
            let (sum, dot) = sums[c];
            let a = gamma[c] * inv_std[c];
            if batch { (a, (sum / count) as f32, (dot / count) as f32) } else { (a, 0.0, 0.0) }
        })
        .collect();
    let positions = dims.positions;
    let dx = new_planes(&dims, |c, start, out| {
        let (a, mean_g, mean_gx) = terms[c];
        let g = &masked[start..start + positions];
        if !batch {
            for (dx, &g) in out.iter_mut().zip(g) {
                dx.write(g * a);
            }
            return;
        }
        let x = &x[start..start + positions];
        let (m, s) = (mean[c], inv_std[c]);
        for ((dx, &g), &v) in out.iter_mut().zip(g).zip(x) {
            dx.write(a * (g - mean_g - (v - m) * s * mean_gx));
        }
    });
    Backward {
        x: dx,
        gamma: sums.iter().map(|&(_, dot)| dot as f32).collect(),
        beta: sums.iter().map(|&(sum, _)| sum as f32).collect(),
        residual: epilogue.residual.then(|| masked.into_owned()),
    }
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
                let grads = backward(dims, &x, &out.y, &probe, &gamma, (&out.mean, &out.var), 1e-5, batch, epilogue);
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
                    check("∂γ", grads.gamma[c], f(&x, &up, &beta, skip), f(&x, &down, &beta, skip));
                    let (mut up, mut down) = (beta.clone(), beta.clone());
                    up[c] += h;
                    down[c] -= h;
                    check("∂β", grads.beta[c], f(&x, &gamma, &up, skip), f(&x, &gamma, &down, skip));
                }
            }
        }
    }
}
