//! Max pooling over `[batch, channels, height, width]` planes (a ResNet's
//! ImageNet stem: 3 × 3 windows, stride 2, one pixel of padding): the
//! output with each value's argmax in its input plane, and the gradient
//! scattered back to those argmaxes. burn's CPU backend runs a 2-D pooling
//! as a 3-D one with index arithmetic per value; in a ResNet-18's training
//! step at 112 pixels that was a tenth of the step (perf).
//!
//! Ties go to the first maximum of the window in row-major order (a later
//! value wins only when greater, as burn's and PyTorch's CPU kernels), and
//! padding never wins; the backward pass adds an output's gradient to its
//! argmax in the outputs' order. So values and gradients are burn's bit for
//! bit.

use rayon::prelude::*;

use crate::chunks::{Unwritten, for_each_chunk_pair, written};

/// From this many input values, planes are split over threads.
const PARALLEL_VALUES: usize = 1 << 15;

/// The pooling's shape: no dilation, floor rounding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    pub batch: usize,
    pub channels: usize,
    /// Input height and width.
    pub size: [usize; 2],
    pub kernel: [usize; 2],
    pub stride: [usize; 2],
    /// Padding on each side (top and bottom, left and right).
    pub padding: [usize; 2],
}

impl Dims {
    /// Whether this kernel computes the pooling: every window holds at least
    /// one input value (padding at most half the window, as PyTorch
    /// requires) and the stride moves.
    pub fn supported(&self) -> bool {
        (0..2).all(|i| {
            self.kernel[i] > 0
                && self.stride[i] > 0
                && 2 * self.padding[i] <= self.kernel[i]
                && self.size[i] + 2 * self.padding[i] >= self.kernel[i]
        })
    }

    /// The output's height and width.
    pub fn out_size(&self) -> [usize; 2] {
        [0, 1].map(|i| (self.size[i] + 2 * self.padding[i] - self.kernel[i]) / self.stride[i] + 1)
    }

    fn plane_len(&self) -> usize {
        self.size[0] * self.size[1]
    }

    fn out_plane_len(&self) -> usize {
        let [oh, ow] = self.out_size();
        oh * ow
    }

    fn planes(&self) -> usize {
        self.batch * self.channels
    }

    fn check(&self, input_len: usize, output_len: usize) {
        assert!(self.supported(), "max pool: unsupported shape {self:?}");
        assert_eq!(input_len, self.planes() * self.plane_len(), "max pool: input size");
        assert_eq!(output_len, self.planes() * self.out_plane_len(), "max pool: output size");
    }

    fn parallel(&self) -> bool {
        self.planes() * self.plane_len() >= PARALLEL_VALUES
    }

    /// The input rows (or columns, `axis` 1) of window `o` along `axis`.
    fn window(&self, axis: usize, o: usize) -> std::ops::Range<usize> {
        let start = (o * self.stride[axis]) as isize - self.padding[axis] as isize;
        let end = (start + self.kernel[axis] as isize).min(self.size[axis] as isize);
        start.max(0) as usize..end as usize
    }
}

/// The pooled values and, for each, the index of its input value in its
/// plane.
#[derive(Debug, Clone, PartialEq)]
pub struct Pooled {
    pub values: Vec<f32>,
    pub argmax: Vec<u32>,
}

/// The max pooling of `x` `[batch, channels, h, w]`: `[batch, channels, oh,
/// ow]` values and their argmaxes.
pub fn forward(dims: Dims, x: &[f32]) -> Pooled {
    let (plane_len, out_len) = (dims.plane_len(), dims.out_plane_len());
    dims.check(x.len(), dims.planes() * out_len);
    assert!(plane_len <= u32::MAX as usize, "max pool: a plane of over 2³² values");
    let len = dims.planes() * out_len;
    if out_len == 0 {
        return Pooled { values: Vec::new(), argmax: Vec::new() };
    }
    let [oh, ow] = dims.out_size();
    let w = dims.size[1];
    let columns: Vec<_> = (0..ow).map(|o| dims.window(1, o)).collect();
    // Every output and argmax is written (one per window): not zero-filled first.
    let pool_plane = |(plane, (out, at)): (usize, (Unwritten, Unwritten<u32>))| {
        let input = &x[plane * plane_len..(plane + 1) * plane_len];
        for oy in 0..oh {
            let rows = dims.window(0, oy);
            for (ox, cols) in columns.iter().enumerate() {
                // The window's first value, then each later one that is
                // greater (ties keep the first, a NaN never replaces one),
                // as selects: a branch on the data mispredicted on about
                // every other value (3% of the ImageNet stem's training).
                // Every window holds an input value (`Dims::supported`).
                let first = rows.start * w + cols.start;
                let (mut best, mut best_at) = (input[first], first);
                for y in rows.clone() {
                    for x in cols.clone() {
                        let v = input[y * w + x];
                        let greater = v > best;
                        best = if greater { v } else { best };
                        best_at = if greater { y * w + x } else { best_at };
                    }
                }
                out[oy * ow + ox].write(best);
                at[oy * ow + ox].write(best_at as u32);
            }
        }
    };
    let mut argmax = Vec::new();
    let values = written(len, |values| {
        argmax =
            written(len, |argmax| for_each_chunk_pair(values, out_len, argmax, out_len, dims.parallel(), pool_plane));
    });
    Pooled { values, argmax }
}

/// `∂x` `[batch, channels, h, w]` from the output's gradient `grad` and the
/// forward pass's `argmax`: each output's gradient added to its argmax, in
/// the outputs' order.
pub fn backward(dims: Dims, grad: &[f32], argmax: &[u32]) -> Vec<f32> {
    let (plane_len, out_len) = (dims.plane_len(), dims.out_plane_len());
    dims.check(dims.planes() * plane_len, grad.len());
    assert_eq!(argmax.len(), grad.len(), "max pool: argmax size");
    let mut dx = vec![0.0f32; dims.planes() * plane_len];
    if plane_len == 0 {
        return dx;
    }
    let scatter = |(plane, dx): (usize, &mut [f32])| {
        let (grad, at) = (&grad[plane * out_len..(plane + 1) * out_len], &argmax[plane * out_len..][..out_len]);
        for (&g, &i) in grad.iter().zip(at) {
            dx[i as usize] += g;
        }
    };
    if dims.parallel() {
        dx.par_chunks_mut(plane_len).enumerate().for_each(scatter);
    } else {
        dx.chunks_mut(plane_len).enumerate().for_each(scatter);
    }
    dx
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stem(batch: usize, side: usize) -> Dims {
        Dims { batch, channels: 3, size: [side, side], kernel: [3, 3], stride: [2, 2], padding: [1, 1] }
    }

    /// The definition, one output at a time over the padded plane (padding
    /// as −∞ that never wins).
    fn direct(dims: &Dims, x: &[f32]) -> (Vec<f32>, Vec<u32>) {
        let ([h, w], [oh, ow]) = (dims.size, dims.out_size());
        let (mut values, mut argmax) = (Vec::new(), Vec::new());
        for plane in x.chunks(h * w) {
            for oy in 0..oh {
                for ox in 0..ow {
                    let mut best: Option<(f32, usize)> = None;
                    for ky in 0..dims.kernel[0] {
                        for kx in 0..dims.kernel[1] {
                            let y = (oy * dims.stride[0] + ky) as isize - dims.padding[0] as isize;
                            let x = (ox * dims.stride[1] + kx) as isize - dims.padding[1] as isize;
                            if y < 0 || x < 0 || y >= h as isize || x >= w as isize {
                                continue;
                            }
                            let at = y as usize * w + x as usize;
                            if best.is_none_or(|(b, _)| plane[at] > b) {
                                best = Some((plane[at], at));
                            }
                        }
                    }
                    let (v, at) = best.expect("a value in every window");
                    values.push(v);
                    argmax.push(at as u32);
                }
            }
        }
        (values, argmax)
    }

    /// Values and argmaxes are the definition's on the stem's shape (odd and
    /// even sides, planes split over threads or not), on 2 × 2 windows of
    /// stride 2 without padding, and where ties (repeated values) pick the
    /// first.
    #[test]
    fn the_pooling_is_its_definition() {
        let shapes = [
            stem(2, 9),
            stem(2, 8),
            stem(8, 112),
            Dims { batch: 1, channels: 2, size: [6, 7], kernel: [2, 2], stride: [2, 2], padding: [0, 0] },
            Dims { batch: 1, channels: 1, size: [5, 5], kernel: [3, 1], stride: [1, 1], padding: [1, 0] },
        ];
        for dims in shapes {
            let len = dims.planes() * dims.plane_len();
            for x in [
                (0..len).map(|i| ((i as f32) * 0.37).sin()).collect::<Vec<_>>(),
                (0..len).map(|i| (i % 3) as f32).collect(),
            ] {
                let pooled = forward(dims, &x);
                let (values, argmax) = direct(&dims, &x);
                assert_eq!(pooled.values, values, "{dims:?}");
                assert_eq!(pooled.argmax, argmax, "{dims:?}");
            }
        }
    }

    /// The gradient reaches each argmax as the sum of its outputs'
    /// gradients, and nothing else.
    #[test]
    fn the_gradient_goes_to_the_argmaxes() {
        for dims in [stem(2, 9), stem(4, 64)] {
            let len = dims.planes() * dims.plane_len();
            let x: Vec<f32> = (0..len).map(|i| ((i as f32) * 0.61).cos()).collect();
            let pooled = forward(dims, &x);
            let grad: Vec<f32> = (0..pooled.values.len()).map(|i| ((i as f32) * 0.29).sin()).collect();
            let dx = backward(dims, &grad, &pooled.argmax);
            let mut expected = vec![0.0f32; len];
            let out_len = dims.out_plane_len();
            for (o, (&g, &at)) in grad.iter().zip(&pooled.argmax).enumerate() {
                expected[(o / out_len) * dims.plane_len() + at as usize] += g;
            }
            assert_eq!(dx, expected, "{dims:?}");
        }
    }

    #[test]
    fn padding_over_half_a_window_is_not_supported() {
        let mut dims = stem(1, 8);
        assert!(dims.supported());
        dims.padding = [2, 2];
        assert!(!dims.supported());
    }
}
