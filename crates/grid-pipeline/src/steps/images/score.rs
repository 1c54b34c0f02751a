//! Image `score`: `Attr%(φ∪)` of one method's maps, averaged over the
//! manipulated and over the untouched test images, beside `%ER`, φ∪'s
//! share of the image (`grid_methods::metrics::pixel_attr`).

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::attribute::read_maps;
use super::synth::StoredRegion;
use crate::io::write_json;
use grid_methods::metrics::pixel_attr::attr_share;

pub const SCORE: &str = "attr.json";

/// What `attr.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImageScore {
    /// `%ER`.
    pub region_share: f64,
    pub manipulated: ClassScore,
    pub untouched: ClassScore,
}

/// The mean `Attr%` over one class's images; `None` when it had none (or
/// only all-zero maps, which put no attribution anywhere).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClassScore {
    pub attr: Option<f64>,
    pub images: usize,
}

/// Inputs: the attribute step, the synth step.
pub fn run(inputs: &[PathBuf], out: &Path) -> Result<()> {
    let (index, maps) = read_maps(&inputs[0])?;
    let region = StoredRegion::read(&inputs[1])?;
    let class = |manipulated: bool| {
        let shares: Vec<f64> = index
            .examples
            .iter()
            .zip(&maps)
            .filter(|(e, _)| e.label.manipulated == manipulated)
            .filter_map(|(_, map)| attr_share(&map.values, &region))
            .collect();
        let attr = (!shares.is_empty()).then(|| shares.iter().sum::<f64>() / shares.len() as f64);
        ClassScore { attr, images: shares.len() }
    };
    let score = ImageScore { region_share: region.share(), manipulated: class(true), untouched: class(false) };
    write_json(&out.join(SCORE), &score)
}
