//! GitHub pipe tables rendered from a polars [`DataFrame`].
//!
//! Every column is cast to strings first (nulls print as empty cells), so callers
//! format numbers themselves and hand over string columns. Cells are padded to the
//! column width (in characters, so `†` counts as one) to keep the raw text readable
//! on a terminal; `|` is escaped as `\|` and line breaks become spaces, since a
//! pipe-table cell cannot hold either.

use polars::prelude::*;

/// Horizontal alignment of one column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// Renders `df` as a pipe table, one line per row plus header and rule, each line
/// ending in `\n`. `align[i]` sets column `i`; columns past the end of `align` are
/// left-aligned. A frame without columns renders as the empty string.
pub fn table(df: &DataFrame, align: &[Align]) -> PolarsResult<String> {
    if df.width() == 0 {
        return Ok(String::new());
    }
    let header: Vec<String> = df.get_column_names().iter().map(|n| escape(n)).collect();
    let body = super::tables::text_columns(df, escape)?;
    let aligns: Vec<Align> = (0..header.len()).map(|i| align.get(i).copied().unwrap_or(Align::Left)).collect();
    // At least 3 wide so the rule is a valid `---`.
    let widths: Vec<usize> = header
        .iter()
        .zip(&body)
        .map(|(h, cells)| cells.iter().map(|c| c.chars().count()).chain([h.chars().count(), 3]).max().unwrap_or(3))
        .collect();

    let mut out = String::new();
    push_row(&mut out, header.iter().map(String::as_str), &widths, &aligns);
    out.push('|');
    for (w, a) in widths.iter().zip(&aligns) {
        out.push(' ');
        match a {
            Align::Left => out.push_str(&"-".repeat(*w)),
            Align::Right => {
                out.push_str(&"-".repeat(w - 1));
                out.push(':');
            }
        }
        out.push_str(" |");
    }
    out.push('\n');
    for row in 0..df.height() {
        push_row(&mut out, body.iter().map(|cells| cells[row].as_str()), &widths, &aligns);
    }
    Ok(out)
}

fn push_row<'a>(out: &mut String, cells: impl Iterator<Item = &'a str>, widths: &[usize], aligns: &[Align]) {
    out.push('|');
    for ((cell, w), a) in cells.zip(widths).zip(aligns) {
        let pad = " ".repeat(w.saturating_sub(cell.chars().count()));
        out.push(' ');
        match a {
            Align::Left => {
                out.push_str(cell);
                out.push_str(&pad);
            }
            Align::Right => {
                out.push_str(&pad);
                out.push_str(cell);
            }
        }
        out.push_str(" |");
    }
    out.push('\n');
}

/// Makes `s` safe inside one pipe-table cell.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '\r' | '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pads_and_aligns() {
        let df = df!("method" => ["a", "longer"], "x" => ["1.00", "0.5 †"]).unwrap();
        let got = table(&df, &[Align::Left, Align::Right]).unwrap();
        assert_eq!(
            got,
            "| method |     x |\n\
             | ------ | ----: |\n\
             | a      |  1.00 |\n\
             | longer | 0.5 † |\n"
        );
    }

    #[test]
    fn escapes_pipes_and_newlines() {
        let df = df!("a|b" => ["x|y", "two\nlines"]).unwrap();
        let got = table(&df, &[]).unwrap();
        assert_eq!(got, "| a\\|b      |\n| --------- |\n| x\\|y      |\n| two lines |\n");
    }

    #[test]
    fn nulls_are_empty_and_no_rows_is_header_only() {
        let df = df!("a" => [Some("x"), None]).unwrap();
        assert_eq!(table(&df, &[]).unwrap(), "| a   |\n| --- |\n| x   |\n|     |\n");
        let empty = df!("a" => Vec::<String>::new()).unwrap();
        assert_eq!(table(&empty, &[]).unwrap(), "| a   |\n| --- |\n");
        assert_eq!(table(&DataFrame::empty(), &[]).unwrap(), "");
    }
}
