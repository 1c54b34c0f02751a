//! Image `synth`: labels reassigned with keep probability `r` and the
//! manipulation applied to the positive class, per split (Zhou et al.
//! 2022, section 5), and φ∪, the region the metric reads, as `region.json`.

use std::path::Path;

use anyhow::{Result, anyhow};
use serde::{Deserialize, Serialize};

use super::{ImageLabel, SPLITS, Split};
use crate::io::{read_json, write_json};
use grid_core::image::Mask;
use grid_methods::shortcut::image::ImageShortcut;
use grid_methods::shortcut::image::dataset::manipulate;

/// φ∪ as a payload holds it: one `0` / `1` per pixel, row by row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRegion {
    pub height: usize,
    pub width: usize,
    pub rows: Vec<String>,
}

impl StoredRegion {
    pub fn of(mask: &Mask) -> StoredRegion {
        let rows = (0..mask.height())
            .map(|y| (0..mask.width()).map(|x| if mask.contains(y, x) { '1' } else { '0' }).collect())
            .collect();
        StoredRegion { height: mask.height(), width: mask.width(), rows }
    }

    pub fn read(dir: &Path) -> Result<Mask> {
        let path = dir.join("region.json");
        let stored: StoredRegion = read_json(&path)?;
        let well_formed = stored.rows.len() == stored.height
            && stored.rows.iter().all(|r| r.len() == stored.width && r.bytes().all(|b| b == b'0' || b == b'1'));
        if !well_formed {
            return Err(anyhow!("{}: not a {}×{} mask of 0 and 1", path.display(), stored.height, stored.width));
        }
        let rows: Vec<&[u8]> = stored.rows.iter().map(|r| r.as_bytes()).collect();
        Ok(Mask::from_fn(stored.height, stored.width, |y, x| rows[y][x] == b'1'))
    }
}

pub fn run(manipulation: &ImageShortcut, keep_probability: f64, seed: u64, corpus: &Path, out: &Path) -> Result<()> {
    let mut region = None;
    for (i, name) in SPLITS.iter().enumerate() {
        let split = Split::read(corpus, name)?;
        let examples: Vec<_> =
            split.images.into_iter().zip(&split.labels).map(|(image, l)| (image, l.label as usize)).collect();
        // Each split its own streams: the seed and the split.
        let set = manipulate(&examples, manipulation, keep_probability, seed.wrapping_add(i as u64))
            .map_err(|e| anyhow!("{name} split: {e}"))?;
        let (images, labels) = set
            .examples
            .into_iter()
            .map(|e| {
                let label = ImageLabel {
                    label: e.label as u32,
                    original_label: e.original_label as u32,
                    manipulated: e.manipulated,
                };
                (e.image, label)
            })
            .unzip();
        Split { images, labels }.write(out, name)?;
        region = Some(set.region);
    }
    let region = region.expect("three splits");
    write_json(&out.join("region.json"), &StoredRegion::of(&region))
}
