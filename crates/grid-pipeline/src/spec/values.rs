//! The grid file's default values of the validated scalars
//! ([`Share`], [`Positive`], in `grid_core::values`).

pub use grid_core::values::{Positive, Share};

pub(super) fn default_mix() -> Share {
    Share::new(0.2)
}

pub(super) fn default_keep() -> Share {
    Share::new(0.5)
}

pub(super) fn default_validation() -> Share {
    Share::new(0.1)
}

pub(super) fn default_synthetic() -> Share {
    Share::new(grid_methods::shortcut::MIN_SYNTHETIC_ACCURACY)
}

pub(super) fn default_chance() -> Share {
    Share::new(0.1)
}

pub(super) fn default_drop() -> Share {
    Share::new(0.02)
}

pub(super) fn default_max_length() -> Positive {
    Positive::new(128)
}

pub(super) fn default_max_distance() -> Positive {
    Positive::new(50)
}
