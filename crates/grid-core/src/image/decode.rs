//! Image files (PNG, JPEG) to [`Image`]s as the paper prepared its birds:
//! centre-cropped to a square, then resized to the model's side (the paper:
//! 224; a CPU grid: less). Normalisation is the model's (`Image::normalised`).

use std::path::Path;

use anyhow::{Context, Result};
use image::imageops::FilterType;

use super::Image;

/// Decodes `bytes` (named `source` in errors), crops the centre square and
/// resizes it to `side × side`.
pub fn decode(bytes: &[u8], source: &str, side: usize) -> Result<Image> {
    anyhow::ensure!(side > 0, "{source}: the image side must be at least 1 pixel");
    let decoded = image::load_from_memory(bytes).with_context(|| format!("{source}: not a PNG or JPEG image"))?;
    let rgb = decoded.to_rgb8();
    let (width, height) = rgb.dimensions();
    let square = width.min(height);
    let (left, top) = ((width - square) / 2, (height - square) / 2);
    let cropped = image::imageops::crop_imm(&rgb, left, top, square, square).to_image();
    let side32 = u32::try_from(side).with_context(|| format!("{source}: side {side} is too large"))?;
    // Triangle (bilinear) as torchvision's Resize does by default; a shrink
    // by more than 2 averages over the source pixels it covers.
    let resized = if square == side32 {
        cropped
    } else {
        image::imageops::resize(&cropped, side32, side32, FilterType::Triangle)
    };
    Ok(from_rgb8(&resized))
}

/// An 8-bit RGB buffer as an [`Image`] (values `/ 255`).
pub fn from_rgb8(rgb: &image::RgbImage) -> Image {
    let (w, h) = (rgb.width() as usize, rgb.height() as usize);
    let plane = w * h;
    let mut pixels = vec![0.0f32; 3 * plane];
    for (i, pixel) in rgb.pixels().enumerate() {
        for c in 0..3 {
            pixels[c * plane + i] = f32::from(pixel[c]) / 255.0;
        }
    }
    Image::new(h.max(1), w.max(1), pixels).expect("8-bit values are in [0, 1]")
}

/// [`decode`] of the file at `path`.
pub fn load(path: &Path, side: usize) -> Result<Image> {
    let bytes = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    decode(&bytes, &path.display().to_string(), side)
}

/// An [`Image`] as 8-bit RGB PNG bytes (for reports and test fixtures).
pub fn encode_png(image: &Image) -> Result<Vec<u8>> {
    let (h, w) = (image.height(), image.width());
    let mut buffer = image::RgbImage::new(w as u32, h as u32);
    for y in 0..h {
        for x in 0..w {
            let rgb = image.rgb(y, x).map(|v| (v * 255.0).round() as u8);
            buffer.put_pixel(x as u32, y as u32, image::Rgb(rgb));
        }
    }
    let mut bytes = Vec::new();
    buffer.write_to(&mut std::io::Cursor::new(&mut bytes), image::ImageFormat::Png).context("encoding a PNG")?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 6 × 4 (wide) image whose columns are 0, 50, …, 250 in red.
    fn wide() -> Image {
        let (h, w) = (4, 6);
        let mut image = Image::filled(h, w, [0.0; 3]);
        for y in 0..h {
            for x in 0..w {
                image.set_rgb(y, x, [x as f32 * 50.0 / 255.0, 0.2, 1.0]);
            }
        }
        image
    }

    #[test]
    fn the_centre_square_is_kept_and_a_png_round_trips() {
        let png = encode_png(&wide()).unwrap();
        // Same side: the crop alone, columns 1 to 4 of 0 to 5.
        let image = decode(&png, "wide.png", 4).unwrap();
        assert_eq!((image.height(), image.width()), (4, 4));
        for x in 0..4 {
            assert_eq!(image.rgb(2, x), [(x + 1) as f32 * 50.0 / 255.0, 51.0 / 255.0, 1.0]);
        }
        // Halved, by the triangle filter widened to the scale (PIL's
        // antialiased bilinear, torchvision's default): output column 0 is
        // centred on crop position 1.0 and weighs the columns 50, 100 and 150
        // by 3/4, 3/4 and 1/4; column 1 weighs 100, 150 and 200 by 1/4, 3/4, 3/4.
        let small = decode(&png, "wide.png", 2).unwrap();
        assert_eq!((small.height(), small.width()), (2, 2));
        let (first, second) = ((37.5 + 75.0 + 37.5) / 1.75, (25.0 + 112.5 + 150.0) / 1.75);
        assert!((small.rgb(0, 0)[0] - first / 255.0).abs() < 1.0 / 255.0, "{:?}", small.rgb(0, 0));
        assert!((small.rgb(1, 1)[0] - second / 255.0).abs() < 1.0 / 255.0, "{:?}", small.rgb(1, 1));
    }

    #[test]
    fn a_file_that_is_not_an_image_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bird.jpg");
        std::fs::write(&path, "not a jpeg").unwrap();
        let error = format!("{:#}", load(&path, 8).unwrap_err());
        assert!(error.contains("bird.jpg") && error.contains("not a PNG or JPEG"), "{error}");
        let error = format!("{:#}", load(&dir.path().join("missing.png"), 8).unwrap_err());
        assert!(error.contains("missing.png"), "{error}");
    }
}
