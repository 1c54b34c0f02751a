//! LaTeX tables (booktabs) from [`DisplayTable`]s, ready to `\input` into a paper.
//!
//! Columns are cast to strings (nulls print as empty cells); LaTeX's special
//! characters are escaped, `†` becomes `\dag` and `±` becomes `$\pm$`, so method
//! names such as `igl-zero-100` or `#0` print as they read. Needs
//! `\usepackage{booktabs}` in the preamble.

use polars::prelude::*;

use super::DisplayTable;
use super::markdown::Align;

/// The table as a floating `table` environment with caption and label
/// `tab:<stem>`.
pub fn table(t: &DisplayTable) -> PolarsResult<String> {
    let df = &t.frame;
    let mut out = String::from("\\begin{table}[t]\n\\centering\n\\small\n");
    let spec: String = (0..df.width())
        .map(|i| match t.align.get(i).copied().unwrap_or(Align::Left) {
            Align::Left => 'l',
            Align::Right => 'r',
        })
        .collect();
    out.push_str(&format!("\\begin{{tabular}}{{{spec}}}\n\\toprule\n"));
    let header: Vec<String> = df.get_column_names().iter().map(|n| escape(n)).collect();
    push_row(&mut out, &header);
    out.push_str("\\midrule\n");
    let columns = super::tables::text_columns(df, escape)?;
    for row in 0..df.height() {
        let cells: Vec<String> = columns.iter().map(|c| c[row].clone()).collect();
        push_row(&mut out, &cells);
    }
    out.push_str("\\bottomrule\n\\end{tabular}\n");
    let mut caption = escape(&t.title);
    for note in &t.notes {
        caption.push(' ');
        caption.push_str(&escape(note));
    }
    out.push_str(&format!("\\caption{{{caption}}}\n\\label{{tab:{}}}\n\\end{{table}}\n", t.stem));
    Ok(out)
}

fn push_row(out: &mut String, cells: &[String]) {
    out.push_str(&cells.join(" & "));
    out.push_str(" \\\\\n");
}

/// `s` as LaTeX text.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\textbackslash{}"),
            '&' | '%' | '$' | '#' | '_' | '{' | '}' => {
                out.push('\\');
                out.push(c);
            }
            '~' => out.push_str("\\textasciitilde{}"),
            '^' => out.push_str("\\textasciicircum{}"),
            '†' => out.push_str("\\dag{}"),
            '±' => out.push_str("$\\pm$"),
            '✓' => out.push_str("$\\checkmark$"),
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
    fn booktabs_table_with_escapes() {
        let t = DisplayTable {
            stem: "lstm_precision".into(),
            title: "Precision of lstm_1 (100%)".into(),
            frame: df!("method" => ["igl-zero-100", "#0 & co"], "sst2:st" => [Some("0.96 ± 0.01"), None]).unwrap(),
            align: vec![Align::Left, Align::Right],
            notes: vec!["† failed verification.".into()],
        };
        let got = table(&t).unwrap();
        assert_eq!(
            got,
            "\\begin{table}[t]\n\\centering\n\\small\n\\begin{tabular}{lr}\n\\toprule\n\
             method & sst2:st \\\\\n\\midrule\n\
             igl-zero-100 & 0.96 $\\pm$ 0.01 \\\\\n\
             \\#0 \\& co &  \\\\\n\
             \\bottomrule\n\\end{tabular}\n\
             \\caption{Precision of lstm\\_1 (100\\%) \\dag{} failed verification.}\n\
             \\label{tab:lstm_precision}\n\\end{table}\n"
        );
    }

    #[test]
    fn escapes_every_special_character() {
        assert_eq!(escape(r"a\b~c^d{e}$f"), r"a\textbackslash{}b\textasciitilde{}c\textasciicircum{}d\{e\}\$f");
    }
}
