//! Saliency maps overlaid on sample images (Zhou et al. 2022, Figure 2's
//! right panel, for every cell): per trained model, a sheet of a few test
//! images, one row each, the image first and then each method's map as a
//! heat overlay, with the manipulated region φ outlined. Written as
//! `zhou_images_maps_<dataset>_<manipulation>_<model>.png`, and as an SVG
//! wrapping that PNG so the HTML page shows it with the charts.

use std::path::Path;

use base64::Engine;
use grid_core::image::decode::encode_png;
use grid_core::image::{Image, Mask};
use grid_methods::salience::image::PixelMethod;
use grid_methods::shortcut::image::{ManipulationKind, Visibility};

use super::{Plot, ReportError, file_safe, write_text};

/// One test image with each method's map of it.
#[derive(Debug, Clone, PartialEq)]
pub struct SheetExample {
    pub image: Image,
    /// Whether the manipulation was applied (the artifact is present).
    pub manipulated: bool,
    pub label: u32,
    /// The class the maps explain: the model's prediction.
    pub target: u32,
    /// (method, `height × width` values), in grid order.
    pub maps: Vec<(PixelMethod, Vec<f32>)>,
}

/// A trained model's sheet.
#[derive(Debug, Clone, PartialEq)]
pub struct MapSheet {
    pub model: String,
    pub dataset: String,
    pub manipulation: ManipulationKind,
    /// `r`: named in the file when it is not 0.5.
    pub keep_probability: f64,
    /// The visibility level, named in the file when the grid sweeps them.
    pub visibility: Option<Visibility>,
    pub seed: u64,
    pub region: Mask,
    pub examples: Vec<SheetExample>,
}

/// A tile's colour at a pixel of the source image.
type Tile<'a> = Box<dyn Fn(usize, usize) -> [f32; 3] + 'a>;

/// Pixels between tiles.
const GAP: usize = 4;
/// A tile is the image scaled by a whole factor to at least this side.
const TILE: usize = 96;
/// φ's outline.
const OUTLINE: [f32; 3] = [1.0, 0.85, 0.0];

impl MapSheet {
    pub fn stem(&self) -> String {
        let r = if self.keep_probability == 0.5 { String::new() } else { format!("_r{}", self.keep_probability) };
        let v = self.visibility.map(|v| format!("_v{v}")).unwrap_or_default();
        format!(
            "zhou_images_maps_{}_{}{v}{r}_{}",
            file_safe(&self.dataset),
            file_safe(self.manipulation.name()),
            file_safe(&self.model)
        )
    }

    fn title(&self) -> String {
        let methods: Vec<&str> =
            self.examples.first().map(|e| e.maps.iter().map(|(m, _)| m.name()).collect()).unwrap_or_default();
        let mut r =
            if self.keep_probability == 0.5 { String::new() } else { format!(" (r = {})", self.keep_probability) };
        if let Some(v) = self.visibility {
            r = format!(" (visibility {v}){r}");
        }
        format!(
            "{} · {} · {}{r}: test images, then {} (φ outlined)",
            self.model,
            self.dataset,
            self.manipulation,
            methods.join(", ")
        )
    }

    /// The sheet as an image: a row per example, a column per tile.
    pub fn render(&self) -> Option<Image> {
        let first = self.examples.first()?;
        let (h, w) = (first.image.height(), first.image.width());
        let scale = TILE.div_ceil(h.max(w)).max(1);
        let (tile_h, tile_w) = (h * scale, w * scale);
        let columns = 1 + first.maps.len();
        let rows = self.examples.len();
        let (height, width) = (rows * tile_h + (rows + 1) * GAP, columns * tile_w + (columns + 1) * GAP);
        let mut sheet = Image::filled(height, width, [1.0, 1.0, 1.0]);
        for (r, example) in self.examples.iter().enumerate() {
            let top = GAP + r * (tile_h + GAP);
            let mut tiles: Vec<Tile> = vec![Box::new(|y, x| example.image.rgb(y, x))];
            for (_, values) in &example.maps {
                let peak = values.iter().copied().fold(0.0f32, |m, v| m.max(v.abs()));
                tiles.push(Box::new(move |y, x| {
                    let heat = if peak > 0.0 { values[y * w + x].abs() / peak } else { 0.0 };
                    let [r, g, b] = example.image.rgb(y, x);
                    let grey = 0.299 * r + 0.587 * g + 0.114 * b;
                    let colour = heat_colour(heat);
                    [0, 1, 2].map(|c| 0.35 * grey + 0.65 * colour[c])
                }));
            }
            for (c, tile) in tiles.iter().enumerate() {
                let left = GAP + c * (tile_w + GAP);
                for ty in 0..tile_h {
                    for tx in 0..tile_w {
                        let (y, x) = (ty / scale, tx / scale);
                        let rgb = if self.on_outline(ty, tx, scale) { OUTLINE } else { tile(y, x) };
                        sheet.set_rgb(top + ty, left + tx, rgb.map(|v| v.clamp(0.0, 1.0)));
                    }
                }
            }
        }
        Some(sheet)
    }

    /// Whether the scaled pixel `(ty, tx)` is on φ's boundary: inside φ,
    /// on the edge of its source pixel next to a pixel outside.
    fn on_outline(&self, ty: usize, tx: usize, scale: usize) -> bool {
        let (y, x) = (ty / scale, tx / scale);
        if !self.region.contains(y, x) {
            return false;
        }
        let (h, w) = (self.region.height(), self.region.width());
        let outside = |dy: isize, dx: isize| {
            let (ny, nx) = (y as isize + dy, x as isize + dx);
            ny < 0 || nx < 0 || ny >= h as isize || nx >= w as isize || !self.region.contains(ny as usize, nx as usize)
        };
        (ty.is_multiple_of(scale) && outside(-1, 0))
            || (ty % scale == scale - 1 && outside(1, 0))
            || (tx.is_multiple_of(scale) && outside(0, -1))
            || (tx % scale == scale - 1 && outside(0, 1))
    }
}

/// A dark-to-bright heat scale (black, purple, red, yellow, white) for
/// `v` in `[0, 1]`.
fn heat_colour(v: f32) -> [f32; 3] {
    const STOPS: [[f32; 3]; 5] =
        [[0.0, 0.0, 0.02], [0.34, 0.06, 0.43], [0.80, 0.20, 0.25], [0.99, 0.65, 0.04], [0.99, 1.0, 0.75]];
    let v = v.clamp(0.0, 1.0) * (STOPS.len() - 1) as f32;
    let i = (v.floor() as usize).min(STOPS.len() - 2);
    let t = v - i as f32;
    [0, 1, 2].map(|c| STOPS[i][c] * (1.0 - t) + STOPS[i + 1][c] * t)
}

/// Writes each sheet as `<stem>.png` and `<stem>.svg` (the PNG inside), and
/// returns them as plots for the HTML page.
pub fn write_map_sheets(dir: &Path, sheets: &[MapSheet]) -> Result<Vec<Plot>, ReportError> {
    let mut plots = Vec::new();
    for sheet in sheets {
        let Some(image) = sheet.render() else { continue };
        let stem = sheet.stem();
        let path = dir.join(format!("{stem}.png"));
        let png = encode_png(&image)
            .map_err(|e| ReportError::Io { path: path.clone(), source: std::io::Error::other(e.to_string()) })?;
        std::fs::write(&path, &png).map_err(|source| ReportError::Io { path: path.clone(), source })?;
        let (w, h) = (image.width(), image.height());
        let data = base64::engine::general_purpose::STANDARD.encode(&png);
        let svg = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">\
             <image width=\"{w}\" height=\"{h}\" style=\"image-rendering: pixelated\" \
             href=\"data:image/png;base64,{data}\"/></svg>\n"
        );
        write_text(dir, &format!("{stem}.svg"), &svg)?;
        plots.push(Plot { stem, title: sheet.title(), svg });
    }
    Ok(plots)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sheet() -> MapSheet {
        let image = Image::filled(8, 8, [0.5, 0.5, 0.5]);
        let region = Mask::from_fn(8, 8, |y, _| y < 3);
        // The map is hot inside φ only.
        let map: Vec<f32> = (0..64).map(|i| if i / 8 < 3 { 1.0 } else { 0.0 }).collect();
        let example = |manipulated| SheetExample {
            image: image.clone(),
            manipulated,
            label: 1,
            target: 1,
            maps: vec![(PixelMethod::Gradient, map.clone()), (PixelMethod::Lime, vec![0.0; 64])],
        };
        MapSheet {
            model: "m".into(),
            dataset: "d".into(),
            manipulation: ManipulationKind::Watermark,
            keep_probability: 0.5,
            visibility: None,
            seed: 1,
            region,
            examples: vec![example(true), example(false)],
        }
    }

    #[test]
    fn a_row_per_example_a_tile_per_method_the_region_outlined_and_hot() {
        let sheet = sheet();
        let image = sheet.render().unwrap();
        // 8 pixels scaled by 12 to 96; three tiles across, two rows.
        assert_eq!((image.height(), image.width()), (2 * 96 + 3 * GAP, 3 * 96 + 4 * GAP));
        let tile = |row: usize, column: usize, y: usize, x: usize| {
            image.rgb(GAP + row * (96 + GAP) + y, GAP + column * (96 + GAP) + x)
        };
        // φ's top-left corner is outlined; inside φ the gradient tile is
        // hot (bright), outside it dark; an all-zero map is dark everywhere.
        assert_eq!(tile(0, 1, 0, 0), OUTLINE);
        let brightness = |rgb: [f32; 3]| rgb.iter().sum::<f32>();
        assert!(brightness(tile(0, 1, 12, 20)) > 2.0, "{:?}", tile(0, 1, 12, 20));
        assert!(brightness(tile(0, 1, 60, 20)) < 1.0, "{:?}", tile(0, 1, 60, 20));
        assert!(brightness(tile(1, 2, 12, 20)) < 1.0);
        assert_eq!(sheet.stem(), "zhou_images_maps_d_watermark_m");
    }

    #[test]
    fn sheets_are_written_as_png_and_as_svg_for_the_page() {
        let dir = tempfile::tempdir().unwrap();
        let plots = write_map_sheets(dir.path(), &[sheet()]).unwrap();
        assert_eq!(plots.len(), 1);
        assert!(plots[0].svg.starts_with("<svg") && plots[0].svg.contains("data:image/png;base64,"));
        let png = std::fs::read(dir.path().join("zhou_images_maps_d_watermark_m.png")).unwrap();
        assert_eq!(&png[1..4], b"PNG");
        assert!(plots[0].title.contains("gradient, lime"));
    }
}
