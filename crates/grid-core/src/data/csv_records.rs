//! Small CSV files people write or edit by hand — published numbers, crowd
//! answers — read as RFC 4180 records that remember the line they start on,
//! so every error names the file and the line (and the column, for a quoting
//! error). polars reads the big dataset files (`data::table`), but it names no
//! line for a malformed row, pads a short row with nulls, and keeps blank
//! lines as rows; for a file a person fixes by hand the line is what matters.

use std::path::{Path, PathBuf};

/// Malformed quoting, at a line and column (both 1-based).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}:{column}: {message}", path.display())]
pub struct CsvSyntaxError {
    pub path: PathBuf,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// One CSV record and the line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub line: usize,
    pub fields: Vec<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Quoting {
    /// At the start of a field.
    Start,
    Unquoted,
    Quoted,
    /// Just read a `"` inside a quoted field: the end, or the first of `""`.
    AfterQuote,
}

/// RFC 4180 records: `,` separates, `"…"` quotes (with `""` for a quote, commas
/// and line breaks allowed inside), `\n` or `\r\n` ends a record. A leading BOM and
/// blank lines are skipped.
pub fn read_records(path: &Path, text: &str) -> Result<Vec<Record>, CsvSyntaxError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let syntax = |line, column, message: &str| CsvSyntaxError {
        path: path.to_path_buf(),
        line,
        column,
        message: message.to_string(),
    };
    let mut records = Vec::new();
    let (mut fields, mut field) = (Vec::new(), String::new());
    let (mut line, mut column, mut record_line) = (1, 0, 1);
    let mut state = Quoting::Start;
    let mut quote_opened_at = (1, 1);
    for c in text.chars() {
        column += 1;
        match (state, c) {
            (Quoting::Quoted, '"') => state = Quoting::AfterQuote,
            (Quoting::Quoted, c) => field.push(c),
            (Quoting::AfterQuote, '"') => {
                field.push('"');
                state = Quoting::Quoted;
            }
            (_, '\r') => {} // only ever before `\n` in the files we read
            (_, ',') => {
                fields.push(std::mem::take(&mut field));
                state = Quoting::Start;
            }
            (_, '\n') => {
                fields.push(std::mem::take(&mut field));
                push_record(&mut records, record_line, std::mem::take(&mut fields));
                state = Quoting::Start;
            }
            (Quoting::Start, '"') => {
                quote_opened_at = (line, column);
                state = Quoting::Quoted;
            }
            (Quoting::Unquoted, '"') => {
                return Err(syntax(line, column, "a `\"` inside an unquoted field (quote the whole field)"));
            }
            (Quoting::Start | Quoting::Unquoted, c) => {
                field.push(c);
                state = Quoting::Unquoted;
            }
            (Quoting::AfterQuote, c) => {
                return Err(syntax(line, column, &format!("`{c}` after a closing quote; expected `,` or a line end")));
            }
        }
        if c == '\n' {
            line += 1;
            column = 0;
            if state != Quoting::Quoted {
                record_line = line;
            }
        }
    }
    if state == Quoting::Quoted {
        return Err(syntax(quote_opened_at.0, quote_opened_at.1, "this quote is never closed"));
    }
    if !fields.is_empty() || !field.is_empty() {
        fields.push(field);
        push_record(&mut records, record_line, fields);
    }
    Ok(records)
}

/// Adds a record unless it is a blank line.
fn push_record(records: &mut Vec<Record>, line: usize, fields: Vec<String>) {
    let blank = fields.len() == 1 && fields[0].trim().is_empty();
    if !blank {
        records.push(Record { line, fields });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_remember_their_line() {
        let path = Path::new("x.csv");
        let text = "\u{feff}a,b\r\n\"x, y\",\"say \"\"hi\"\"\"\r\n\n\"two\nlines\",z\nlast,\n";
        let got = read_records(path, text).unwrap();
        let fields = |r: &Record| r.fields.clone();
        assert_eq!(got.iter().map(|r| r.line).collect::<Vec<_>>(), [1, 2, 4, 6]);
        assert_eq!(fields(&got[1]), ["x, y", "say \"hi\""]);
        assert_eq!(fields(&got[2]), ["two\nlines", "z"]);
        assert_eq!(fields(&got[3]), ["last", ""]);
        // No final newline.
        assert_eq!(read_records(path, "a,b").unwrap()[0].fields, ["a", "b"]);
    }

    #[test]
    fn quoting_errors_name_line_and_column() {
        let path = Path::new("x.csv");
        let err = read_records(path, "a,b\n\"open,b\n").unwrap_err();
        assert_eq!(err.to_string(), "x.csv:2:1: this quote is never closed");
        let err = read_records(path, "a,b\n\"q\"x,b\n").unwrap_err();
        assert_eq!(err.to_string(), "x.csv:2:4: `x` after a closing quote; expected `,` or a line end");
        let err = read_records(path, "a,b\nab\"c,d\n").unwrap_err();
        assert!(err.to_string().starts_with("x.csv:2:3: a `\"` inside an unquoted field"), "{err}");
    }
}
