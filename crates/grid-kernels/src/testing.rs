//! Inputs the kernels' tests share.

/// `len` values of `sin(i · scale + phase)`: deterministic, varied, in [−1, 1].
pub(crate) fn wave(len: usize, scale: f32, phase: f32) -> Vec<f32> {
    (0..len).map(|i| ((i as f32) * scale + phase).sin()).collect()
}
