//! CSV syntax for the published files: quoted fields, line numbers kept for
//! errors that name the row.

use super::*;

// ---------------------------------------------------------------------------
// CSV syntax
// ---------------------------------------------------------------------------

/// One CSV record and the line it starts on.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Record {
    pub(super) line: usize,
    pub(super) fields: Vec<String>,
}

#[derive(Clone, Copy, PartialEq)]
pub(super) enum Quoting {
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
pub(super) fn read_csv(path: &Path, text: &str) -> Result<Vec<Record>, CompareError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let syntax = |line, column, message: &str| CompareError::Syntax {
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
pub(super) fn push_record(records: &mut Vec<Record>, line: usize, fields: Vec<String>) {
    let blank = fields.len() == 1 && fields[0].trim().is_empty();
    if !blank {
        records.push(Record { line, fields });
    }
}
