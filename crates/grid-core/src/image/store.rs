//! Sets of same-sized images in one file: what the image steps' payloads
//! hold. 8 bits per channel value, as image files keep them (a manipulated
//! image is saved as a photograph would be), planar per image, after a
//! header that names the format, the count and the size, so that a
//! truncated or foreign file is refused with its path.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::Image;

const MAGIC: &[u8; 8] = b"GRIDIMG1";
const HEADER: usize = MAGIC.len() + 3 * 4;

/// Writes `images` (all one size) at `path`.
pub fn write(path: &Path, images: &[Image]) -> Result<()> {
    let (height, width) = images.first().map(|i| (i.height(), i.width())).unwrap_or((0, 0));
    if let Some((i, image)) = images.iter().enumerate().find(|(_, i)| (i.height(), i.width()) != (height, width)) {
        bail!(
            "{}: image {i} is {}×{}, the first {height}×{width}: one size per file",
            path.display(),
            image.height(),
            image.width()
        );
    }
    let mut bytes = Vec::with_capacity(HEADER + images.len() * 3 * height * width);
    bytes.extend_from_slice(MAGIC);
    for n in [images.len(), height, width] {
        bytes.extend_from_slice(&u32::try_from(n).context("image set too large")?.to_le_bytes());
    }
    for image in images {
        bytes.extend(image.pixels().iter().map(|&v| (v * 255.0).round().clamp(0.0, 255.0) as u8));
    }
    let mut file = std::fs::File::create(path).with_context(|| format!("{}: cannot create", path.display()))?;
    file.write_all(&bytes).with_context(|| format!("{}: cannot write", path.display()))
}

/// Reads the images [`write`] wrote at `path`.
pub fn read(path: &Path) -> Result<Vec<Image>> {
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    if bytes.len() < HEADER || &bytes[..MAGIC.len()] != MAGIC {
        bail!("{}: not an image set written by grid (no GRIDIMG1 header)", path.display());
    }
    let field = |i: usize| {
        let at = MAGIC.len() + 4 * i;
        u32::from_le_bytes(bytes[at..at + 4].try_into().expect("four bytes")) as usize
    };
    let (count, height, width) = (field(0), field(1), field(2));
    let size = 3 * height * width;
    let expected = HEADER + count * size;
    if bytes.len() != expected {
        bail!(
            "{}: {} bytes, but {count} images of {height}×{width} take {expected}: the file is damaged",
            path.display(),
            bytes.len()
        );
    }
    bytes[HEADER..]
        .chunks(size.max(1))
        .take(count)
        .map(|chunk| {
            let pixels = chunk.iter().map(|&b| f32::from(b) / 255.0).collect();
            Image::new(height, width, pixels).with_context(|| path.display().to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(seed: u32) -> Image {
        let pixels = (0..3 * 5 * 4).map(|i| ((i as u32 * 37 + seed * 11) % 256) as f32 / 255.0).collect();
        Image::new(5, 4, pixels).unwrap()
    }

    #[test]
    fn images_survive_the_round_trip_to_eight_bits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("set.bin");
        let images = vec![image(0), image(1), image(2)];
        write(&path, &images).unwrap();
        assert_eq!(read(&path).unwrap(), images);

        // 0.3 · 255 = 76.5 is kept as 77 / 255.
        let off = Image::new(5, 4, vec![0.3; 60]).unwrap();
        write(&path, std::slice::from_ref(&off)).unwrap();
        let back = read(&path).unwrap();
        assert!(back[0].pixels().iter().all(|&v| v == 77.0 / 255.0), "{:?}", &back[0].pixels()[..3]);
        assert!((back[0].pixels()[0] - 0.3).abs() <= 0.5 / 255.0);
    }

    #[test]
    fn damaged_or_foreign_files_are_refused_with_their_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("set.bin");
        write(&path, &[image(0), image(1)]).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let err = read(&path).unwrap_err().to_string();
        assert!(err.contains("set.bin") && err.contains("damaged"), "{err}");
        std::fs::write(&path, b"P6 not ours").unwrap();
        assert!(read(&path).unwrap_err().to_string().contains("GRIDIMG1"));

        let mixed = [image(0), Image::new(2, 2, vec![0.0; 12]).unwrap()];
        assert!(write(&path, &mixed).unwrap_err().to_string().contains("one size per file"));
    }
}
