//! Watermark: the text "IMGxxxx", "xxxx" four random digits, at a random
//! place inside a box; "IMG" in white, the digits in black (App. A.1). The
//! glyphs are a 5 × 7 bitmap font drawn at the font size, so that the text
//! depends on nothing outside this file.

use serde::{Deserialize, Serialize};

use super::{Manipulation, check_unit, uniform};
use grid_core::image::{Image, Mask};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Watermark {
    /// The box the text is placed in: rows `[top, bottom)` and columns
    /// `[left, right)`, fractions of the height and width.
    pub top: f64,
    pub bottom: f64,
    pub left: f64,
    pub right: f64,
    /// The text's height, a fraction of the shorter side (the visibility:
    /// the paper's 7–15 pixels of 224).
    pub font: f64,
}

impl Watermark {
    /// The five visibility levels (App. A.4), least visible first: the font size: 7 to 15 pixels of 224.
    pub const VISIBILITY: [f64; 5] = [7.0 / 224.0, 9.0 / 224.0, 11.0 / 224.0, 13.0 / 224.0, 15.0 / 224.0];
}

impl Default for Watermark {
    /// φ ≈ 31% of the image, the paper's mean `%ER` for the watermark; the
    /// middle visibility level, 11 pixels of 224.
    fn default() -> Watermark {
        Watermark { top: 0.0, bottom: 0.35, left: 0.05, right: 0.95, font: 11.0 / 224.0 }
    }
}

/// Glyph rows, top to bottom, the leftmost of 5 columns in the highest bit.
const GLYPH_ROWS: usize = 7;
const GLYPH_COLUMNS: usize = 5;
/// A glyph and the gap after it, in glyph columns.
const ADVANCE: usize = GLYPH_COLUMNS + 1;
/// "IMG" and four digits.
const CHARACTERS: usize = 7;

fn glyph(c: char) -> [u8; GLYPH_ROWS] {
    match c {
        'I' => [0b01110, 0b00100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110],
        'M' => [0b10001, 0b11011, 0b10101, 0b10101, 0b10001, 0b10001, 0b10001],
        'G' => [0b01110, 0b10001, 0b10000, 0b10111, 0b10001, 0b10001, 0b01111],
        '0' => [0b01110, 0b10001, 0b10011, 0b10101, 0b11001, 0b10001, 0b01110],
        '1' => [0b00100, 0b01100, 0b00100, 0b00100, 0b00100, 0b00100, 0b01110],
        '2' => [0b01110, 0b10001, 0b00001, 0b00010, 0b00100, 0b01000, 0b11111],
        '3' => [0b11111, 0b00010, 0b00100, 0b00010, 0b00001, 0b10001, 0b01110],
        '4' => [0b00010, 0b00110, 0b01010, 0b10010, 0b11111, 0b00010, 0b00010],
        '5' => [0b11111, 0b10000, 0b11110, 0b00001, 0b00001, 0b10001, 0b01110],
        '6' => [0b00110, 0b01000, 0b10000, 0b11110, 0b10001, 0b10001, 0b01110],
        '7' => [0b11111, 0b00001, 0b00010, 0b00100, 0b01000, 0b01000, 0b01000],
        '8' => [0b01110, 0b10001, 0b10001, 0b01110, 0b10001, 0b10001, 0b01110],
        '9' => [0b01110, 0b10001, 0b10001, 0b01111, 0b00001, 0b00010, 0b01100],
        _ => [0; GLYPH_ROWS],
    }
}

impl Watermark {
    /// The box in pixels: `(top, bottom, left, right)`.
    fn bounds(&self, height: usize, width: usize) -> (usize, usize, usize, usize) {
        let at = |f: f64, n: usize| ((f.clamp(0.0, 1.0) * n as f64).round() as usize).min(n);
        (at(self.top, height), at(self.bottom, height), at(self.left, width), at(self.right, width))
    }

    /// The text's size in pixels, `(height, width)`: the font size, and the
    /// seven glyphs' advance at that scale.
    fn text_size(&self, height: usize, width: usize) -> (usize, usize) {
        let rows = ((self.font * height.min(width) as f64).round() as usize).max(1);
        let columns = (rows * (CHARACTERS * ADVANCE - 1)).div_ceil(GLYPH_ROWS);
        (rows, columns)
    }
}

impl Manipulation for Watermark {
    fn region(&self, height: usize, width: usize) -> Mask {
        let (top, bottom, left, right) = self.bounds(height, width);
        Mask::from_fn(height, width, |y, x| (top..bottom).contains(&y) && (left..right).contains(&x))
    }

    fn apply(&self, image: &Image, rng: &mut dyn rand::RngCore) -> Image {
        let (h, w) = (image.height(), image.width());
        let (top, bottom, left, right) = self.bounds(h, w);
        let (rows, columns) = self.text_size(h, w);
        let mut text: Vec<char> = "IMG".chars().collect();
        for _ in 0..4 {
            text.push(char::from(b'0' + (uniform(rng) * 10.0).min(9.0) as u8));
        }
        // The text's corner: anywhere that keeps it inside the box (`check`
        // makes sure it fits).
        let place = |from: usize, to: usize, size: usize, draw: f64| {
            let room = to.saturating_sub(from).saturating_sub(size);
            from + ((draw * (room + 1) as f64) as usize).min(room)
        };
        let y0 = place(top, bottom, rows, uniform(rng));
        let x0 = place(left, right, columns, uniform(rng));
        let mut out = image.clone();
        for ty in 0..rows.min(h.saturating_sub(y0)) {
            let glyph_row = ty * GLYPH_ROWS / rows;
            for tx in 0..columns.min(w.saturating_sub(x0)) {
                let cell = tx * (CHARACTERS * ADVANCE - 1) / columns;
                let (character, glyph_column) = (cell / ADVANCE, cell % ADVANCE);
                if glyph_column >= GLYPH_COLUMNS {
                    continue;
                }
                let bits = glyph(text[character])[glyph_row];
                if bits >> (GLYPH_COLUMNS - 1 - glyph_column) & 1 == 1 {
                    let colour = if character < 3 { [1.0; 3] } else { [0.0; 3] };
                    out.set_rgb(y0 + ty, x0 + tx, colour);
                }
            }
        }
        out
    }

    fn check(&self, height: usize, width: usize) -> Result<(), String> {
        for (name, value) in [("top", self.top), ("bottom", self.bottom), ("left", self.left), ("right", self.right)] {
            check_unit(name, value)?;
        }
        check_unit("font", self.font)?;
        let (top, bottom, left, right) = self.bounds(height, width);
        let (rows, columns) = self.text_size(height, width);
        if bottom.saturating_sub(top) < rows || right.saturating_sub(left) < columns {
            return Err(format!(
                "the text ({rows}×{columns} pixels at font {}) does not fit its box ({}×{} pixels) on {height}×{width}",
                self.font,
                bottom.saturating_sub(top),
                right.saturating_sub(left)
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    /// At 7 pixels a glyph row is a pixel row: the text reads back, "IMG" in
    /// white and four digits in black, inside the box.
    #[test]
    fn the_text_reads_img_and_four_digits() {
        let (h, w) = (20, 60);
        let mark = Watermark { top: 0.1, bottom: 0.9, left: 0.1, right: 0.9, font: 7.0 / 20.0 };
        mark.check(h, w).unwrap();
        let grey = Image::filled(h, w, [0.5; 3]);
        let mut seen = std::collections::HashSet::new();
        for seed in 0..6 {
            let out = mark.apply(&grey, &mut ChaCha8Rng::seed_from_u64(seed));
            let painted: Vec<(usize, usize)> =
                (0..h).flat_map(|y| (0..w).map(move |x| (y, x))).filter(|&(y, x)| out.rgb(y, x) != [0.5; 3]).collect();
            let y0 = painted.iter().map(|p| p.0).min().unwrap();
            // "I" starts in its glyph's second column.
            let x0 = painted.iter().map(|p| p.1).min().unwrap() - 1;
            assert!(mark.region(h, w).contains(y0, x0));
            let read = |character: usize| -> [u8; GLYPH_ROWS] {
                std::array::from_fn(|row| {
                    (0..GLYPH_COLUMNS).fold(0u8, |bits, column| {
                        let (y, x) = (y0 + row, x0 + character * ADVANCE + column);
                        (bits << 1) | u8::from(x < w && out.rgb(y, x) != [0.5; 3])
                    })
                })
            };
            assert_eq!([read(0), read(1), read(2)], [glyph('I'), glyph('M'), glyph('G')]);
            assert_eq!(out.rgb(y0, x0 + 1), [1.0; 3], "\"IMG\" in white");
            let digits: String =
                (3..7).map(|c| ('0'..='9').find(|&d| glyph(d) == read(c)).expect("a digit's glyph")).collect();
            seen.insert(digits);
        }
        assert!(seen.len() > 1, "the digits are drawn: {seen:?}");
    }
}
