//! The thresholds of DeepLift's Rescale rule, shared by the kernels that
//! compute its multipliers (`lstm`, `norm`, `softmax`) and by the rule's
//! burn-operation path (`grid::model::rules`), so that both switch from a
//! secant to its limit at the same place.

/// Below this difference, relative to `1 + |x| + |x₀|`, a secant of a smooth
/// function loses more digits to cancellation than `φ′` at the midpoint misses
/// (`φ‴Δ²/24`, about 4e-8 relative here): the slope at the midpoint is taken.
pub const NEAR: f32 = 1e-3;

/// Below this `|Δ|`, the secants of `exp` and `log` in the softmax rule come from
/// their Taylor series (error below 1e-10) rather than from differences that
/// cancel (error `ε/|Δ|`, 6e-7 at the threshold).
pub const SERIES: f32 = 0.1;
