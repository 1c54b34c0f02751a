//! Local table files (CSV, TSV, JSON lines, Parquet) read through polars and
//! mapped into [`Example`]s.
//!
//! One call reads one split file. The caller names the text column and the label
//! column; every other column is ignored. Labels come in two shapes:
//!
//! - **class indices**: an integer column holding `0..C` (any integer dtype);
//! - **class names**: a string column, mapped through the caller's ordered
//!   `label_names` (index in that list = class id).
//!
//! Parquet and JSON lines carry their own dtypes, so the dtype decides. CSV and TSV
//! are read with every column as a string (polars' type inference only looks at the
//! first rows and would turn a late bad value into an error that names no row, or a
//! numeric-looking text into a number), and the label column counts as class
//! indices when every non-null cell is an integer — unless `label_names` is given
//! and every cell is one of the names, so a file whose class names happen to be
//! `"0"` and `"1"` still maps through the names.
//!
//! TSV is GLUE style: tab separator, no quoting at all (a `"` is an ordinary
//! character). CSV is RFC 4180 style: `,` separator, `"` quoting, header row.
//!
//! Errors name the file and, where it applies, the column or the row. Rows are
//! counted from 1 over the data rows, header excluded, in file order (the first
//! record of a Parquet or JSON lines file is row 1 too). An empty CSV/TSV field
//! is read as null, so an empty text there is a "null text" error.

use std::fmt;
use std::fs::File;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use polars::prelude::*;
use serde::{Deserialize, Serialize};

use super::Example;

/// The file formats [`read_split`] understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TableFormat {
    /// Comma-separated, `"` quoting, header row.
    Csv,
    /// Tab-separated, no quoting (GLUE style), header row.
    Tsv,
    /// One JSON object per line (`.jsonl` / `.ndjson`).
    Jsonl,
    /// Apache Parquet.
    Parquet,
}

impl TableFormat {
    /// The format a file name implies: `.csv`, `.tsv`, `.jsonl`/`.ndjson`,
    /// `.parquet`/`.pq` (case-insensitive). `None` for anything else.
    pub fn from_extension(path: &Path) -> Option<TableFormat> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        match ext.as_str() {
            "csv" => Some(TableFormat::Csv),
            "tsv" => Some(TableFormat::Tsv),
            "jsonl" | "ndjson" => Some(TableFormat::Jsonl),
            "parquet" | "pq" => Some(TableFormat::Parquet),
            _ => None,
        }
    }

    /// Lower-case name, as in the TOML.
    pub fn name(self) -> &'static str {
        match self {
            TableFormat::Csv => "csv",
            TableFormat::Tsv => "tsv",
            TableFormat::Jsonl => "jsonl",
            TableFormat::Parquet => "parquet",
        }
    }
}

impl fmt::Display for TableFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which columns hold the text and the label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableColumns<'a> {
    pub text: &'a str,
    pub label: &'a str,
}

/// Everything that can go wrong reading a split. Every variant names the file;
/// rows are 1-based data rows (header excluded).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TableError {
    /// The file could not be opened or read.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// polars could not parse the file (malformed CSV, bad JSON, not Parquet, ...).
    #[error("{}: cannot read as {format}: {source}", path.display())]
    Parse {
        path: PathBuf,
        format: TableFormat,
        #[source]
        source: PolarsError,
    },
    /// A named column is not in the file.
    #[error("{}: no column `{column}` (columns: {})", path.display(), available.join(", "))]
    MissingColumn { path: PathBuf, column: String, available: Vec<String> },
    /// The text column is not a string column.
    #[error("{}: text column `{column}` has dtype {dtype}, expected strings", path.display())]
    TextDtype { path: PathBuf, column: String, dtype: String },
    /// The label column is neither integers nor strings.
    #[error(
        "{}: label column `{column}` has dtype {dtype}, expected integer class indices or string class names",
        path.display()
    )]
    LabelDtype { path: PathBuf, column: String, dtype: String },
    /// A row has no text.
    #[error("{}: row {row}: null text", path.display())]
    NullText { path: PathBuf, row: usize },
    /// A row has no label.
    #[error("{}: row {row}: null label", path.display())]
    NullLabel { path: PathBuf, row: usize },
    /// An integer label outside `0..C` (or outside `0..=u32::MAX` when no label
    /// names bound `C`).
    #[error(
        "{}: row {row}: label {label} is not a class index{}{}",
        path.display(),
        classes_hint(*.num_classes),
        hidden_hint(*.label)
    )]
    BadIndex { path: PathBuf, row: usize, label: i128, num_classes: Option<usize> },
    /// A string label that is not one of `label_names`.
    #[error("{}: row {row}: unknown label {label:?} (label names: {})", path.display(), names.join(", "))]
    UnknownName { path: PathBuf, row: usize, label: String, names: Vec<String> },
    /// The label column holds strings but the caller gave no `label_names`.
    #[error(
        "{}: label column `{column}` holds class names (row {row}: {label:?}) but no label names were given",
        path.display()
    )]
    NamesRequired { path: PathBuf, column: String, row: usize, label: String },
}

fn classes_hint(num_classes: Option<usize>) -> String {
    match num_classes {
        Some(c) => format!(" ({c} classes)"),
        None => String::new(),
    }
}

/// GLUE (SST-2 on the Hub among them) writes -1 for the test labels it hides.
fn hidden_hint(label: i128) -> &'static str {
    if label == -1 {
        "; -1 is how GLUE marks a hidden test label: use the labelled validation file as `test` and let \
         `validation_share` hold out validation from train"
    } else {
        ""
    }
}

/// Reads one split file into examples.
///
/// `label` column: integer `0..C` (any integer dtype) or strings; for strings pass
/// `label_names` (ordered, index = class id); an unknown string is an error naming
/// the row. With `label_names` given, integer labels must also be `< label_names.len()`.
/// `limit` keeps the first N rows (CPU subsets); readers stop early where they can.
pub fn read_split(
    path: &Path,
    format: TableFormat,
    columns: &TableColumns,
    label_names: Option<&[String]>,
    limit: Option<usize>,
) -> Result<Vec<Example>, TableError> {
    let df = read_frame(path, format, columns, limit)?;
    let df = match limit {
        Some(n) if df.height() > n => df.head(Some(n)),
        _ => df,
    };

    let available = || df.get_column_names().iter().map(|n| n.to_string()).collect::<Vec<_>>();
    let column = |name: &str| {
        df.column(name).map_err(|_| TableError::MissingColumn {
            path: path.to_path_buf(),
            column: name.to_string(),
            available: available(),
        })
    };
    let text_col = column(columns.text)?;
    let label_col = column(columns.label)?;

    let texts = text_values(path, columns.text, text_col)?;
    let text_format = matches!(format, TableFormat::Csv | TableFormat::Tsv);
    let labels = label_values(path, columns.label, label_col, label_names, text_format)?;

    Ok(texts.into_iter().zip(labels).map(|(text, label)| Example { text, label }).collect())
}

/// Reads the file into a frame. Only Parquet is projected to the two columns up
/// front (after checking they exist, for a better error than polars gives).
fn read_frame(
    path: &Path,
    format: TableFormat,
    columns: &TableColumns,
    limit: Option<usize>,
) -> Result<DataFrame, TableError> {
    let parse_err = |source: PolarsError| TableError::Parse { path: path.to_path_buf(), format, source };
    let io_err = |source: std::io::Error| TableError::Io { path: path.to_path_buf(), source };
    match format {
        TableFormat::Csv | TableFormat::Tsv => {
            let file = File::open(path).map_err(io_err)?;
            let tsv = format == TableFormat::Tsv;
            CsvReadOptions::default()
                .with_has_header(true)
                // 0 rows of inference = every column is read as a string.
                .with_infer_schema_length(Some(0))
                .with_n_rows(limit)
                .map_parse_options(|p| {
                    if tsv {
                        p.with_separator(b'\t').with_quote_char(None)
                    } else {
                        p.with_separator(b',').with_quote_char(Some(b'"'))
                    }
                })
                .into_reader_with_file_handle(file)
                .finish()
                .map_err(parse_err)
        }
        TableFormat::Jsonl => {
            let bytes = std::fs::read(path).map_err(io_err)?;
            let bytes = match limit {
                Some(n) => first_lines(&bytes, n).to_vec(),
                None => bytes,
            };
            if bytes.iter().all(|b| b.is_ascii_whitespace()) {
                // polars rejects an empty input; an empty file is an empty split.
                return Ok(DataFrame::empty());
            }
            JsonReader::new(Cursor::new(bytes))
                .with_json_format(JsonFormat::JsonLines)
                // Infer over every line: JSON values carry their own types.
                .infer_schema_len(None)
                .finish()
                .map_err(parse_err)
        }
        TableFormat::Parquet => {
            let file = File::open(path).map_err(io_err)?;
            let mut reader = ParquetReader::new(file);
            let schema = reader.schema().map_err(parse_err)?;
            for name in [columns.text, columns.label] {
                if !schema.contains(name) {
                    return Err(TableError::MissingColumn {
                        path: path.to_path_buf(),
                        column: name.to_string(),
                        available: schema.iter_names().map(|n| n.to_string()).collect(),
                    });
                }
            }
            let mut wanted = vec![columns.text.to_string()];
            if columns.label != columns.text {
                wanted.push(columns.label.to_string());
            }
            reader.with_columns(Some(wanted)).with_slice(limit.map(|n| (0, n))).finish().map_err(parse_err)
        }
    }
}

/// The prefix of `bytes` holding the first `n` non-blank lines.
fn first_lines(bytes: &[u8], n: usize) -> &[u8] {
    let mut seen = 0;
    let mut start = 0;
    while start < bytes.len() {
        if seen == n {
            return &bytes[..start];
        }
        let end = bytes[start..].iter().position(|&b| b == b'\n').map_or(bytes.len(), |i| start + i + 1);
        if !bytes[start..end].iter().all(|b| b.is_ascii_whitespace()) {
            seen += 1;
        }
        start = end;
    }
    bytes
}

fn text_values(path: &Path, name: &str, col: &Column) -> Result<Vec<String>, TableError> {
    let ca = col.str().map_err(|_| TableError::TextDtype {
        path: path.to_path_buf(),
        column: name.to_string(),
        dtype: col.dtype().to_string(),
    })?;
    ca.iter()
        .enumerate()
        .map(|(i, v)| v.map(str::to_string).ok_or(TableError::NullText { path: path.to_path_buf(), row: i + 1 }))
        .collect()
}

fn label_values(
    path: &Path,
    name: &str,
    col: &Column,
    label_names: Option<&[String]>,
    text_format: bool,
) -> Result<Vec<u32>, TableError> {
    let dtype = col.dtype();
    if dtype.is_integer() {
        let values = integer_values(col).map_err(|_| TableError::LabelDtype {
            path: path.to_path_buf(),
            column: name.to_string(),
            dtype: dtype.to_string(),
        })?;
        return index_labels(path, values.into_iter(), label_names);
    }
    let Ok(ca) = col.str() else {
        return Err(TableError::LabelDtype {
            path: path.to_path_buf(),
            column: name.to_string(),
            dtype: dtype.to_string(),
        });
    };
    if text_format {
        let all_names = label_names.is_some_and(|names| ca.iter().flatten().all(|v| names.iter().any(|n| n == v)));
        let all_ints = ca.iter().flatten().all(|v| v.trim().parse::<i128>().is_ok());
        if !all_names && all_ints {
            let values = ca.iter().map(|v| v.and_then(|s| s.trim().parse::<i128>().ok()));
            return index_labels(path, values, label_names);
        }
    }
    let Some(names) = label_names else {
        // Rows before the first string are nulls: report the first row either way.
        return match ca.iter().enumerate().next() {
            None => Ok(Vec::new()),
            Some((_, None)) => Err(TableError::NullLabel { path: path.to_path_buf(), row: 1 }),
            Some((_, Some(label))) => Err(TableError::NamesRequired {
                path: path.to_path_buf(),
                column: name.to_string(),
                row: 1,
                label: label.to_string(),
            }),
        };
    };
    ca.iter()
        .enumerate()
        .map(|(i, v)| {
            let row = i + 1;
            let v = v.ok_or(TableError::NullLabel { path: path.to_path_buf(), row })?;
            let index = names.iter().position(|n| n == v).ok_or_else(|| TableError::UnknownName {
                path: path.to_path_buf(),
                row,
                label: v.to_string(),
                names: names.to_vec(),
            })?;
            // A name list longer than u32::MAX cannot be built in practice.
            u32::try_from(index).map_err(|_| TableError::BadIndex {
                path: path.to_path_buf(),
                row,
                label: index as i128,
                num_classes: Some(names.len()),
            })
        })
        .collect()
}

/// Any integer column as `i128` (lossless for every polars integer dtype).
fn integer_values(col: &Column) -> PolarsResult<Vec<Option<i128>>> {
    if col.dtype() == &DataType::UInt64 {
        Ok(col.u64()?.iter().map(|v| v.map(i128::from)).collect())
    } else {
        let cast = col.cast(&DataType::Int64)?;
        Ok(cast.i64()?.iter().map(|v| v.map(i128::from)).collect())
    }
}

fn index_labels(
    path: &Path,
    values: impl Iterator<Item = Option<i128>>,
    label_names: Option<&[String]>,
) -> Result<Vec<u32>, TableError> {
    let num_classes = label_names.map(<[String]>::len);
    values
        .enumerate()
        .map(|(i, v)| {
            let row = i + 1;
            let label = v.ok_or(TableError::NullLabel { path: path.to_path_buf(), row })?;
            let in_range = label >= 0 && num_classes.is_none_or(|c| label < c as i128);
            match u32::try_from(label) {
                Ok(index) if in_range => Ok(index),
                _ => Err(TableError::BadIndex { path: path.to_path_buf(), row, label, num_classes }),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    const COLS: TableColumns<'static> = TableColumns { text: "text", label: "label" };

    fn write(dir: &Path, name: &str, content: &str) -> PathBuf {
        let path = dir.join(name);
        let mut f = File::create(&path).unwrap();
        f.write_all(content.as_bytes()).unwrap();
        path
    }

    fn write_parquet(dir: &Path, name: &str, mut df: DataFrame) -> PathBuf {
        let path = dir.join(name);
        let f = File::create(&path).unwrap();
        ParquetWriter::new(f).finish(&mut df).unwrap();
        path
    }

    fn ex(text: &str, label: u32) -> Example {
        Example { text: text.to_string(), label }
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn format_from_extension() {
        let f = |p: &str| TableFormat::from_extension(Path::new(p));
        assert_eq!(f("a/train.csv"), Some(TableFormat::Csv));
        assert_eq!(f("a/train.TSV"), Some(TableFormat::Tsv));
        assert_eq!(f("x.jsonl"), Some(TableFormat::Jsonl));
        assert_eq!(f("x.ndjson"), Some(TableFormat::Jsonl));
        assert_eq!(f("x.parquet"), Some(TableFormat::Parquet));
        assert_eq!(f("x.pq"), Some(TableFormat::Parquet));
        assert_eq!(f("x.json"), None);
        assert_eq!(f("noext"), None);
    }

    #[test]
    fn format_serde_names() {
        assert_eq!(serde_json::to_string(&TableFormat::Jsonl).unwrap(), "\"jsonl\"");
        let f: TableFormat = serde_json::from_str("\"parquet\"").unwrap();
        assert_eq!(f, TableFormat::Parquet);
    }

    #[test]
    fn csv_with_quoting_and_extra_columns() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "t.csv",
            "id,text,label\n1,\"a, quoted \"\"film\"\"\",1\n2,plain,0\n3,\"two\nlines\",1\n",
        );
        let got = read_split(&p, TableFormat::Csv, &COLS, None, None).unwrap();
        assert_eq!(got, vec![ex("a, quoted \"film\"", 1), ex("plain", 0), ex("two\nlines", 1)]);
    }

    #[test]
    fn csv_numeric_looking_text_stays_text() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "t.csv", "text,label\n007,1\n3.50,0\n");
        let got = read_split(&p, TableFormat::Csv, &COLS, None, None).unwrap();
        assert_eq!(got, vec![ex("007", 1), ex("3.50", 0)]);
    }

    #[test]
    fn tsv_glue_style_no_quoting() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "t.tsv",
            "sentence\tlabel\nit 's a \"charming\" , often funny journey \t1\n\"unbalanced quote\t0\n",
        );
        let cols = TableColumns { text: "sentence", label: "label" };
        let got = read_split(&p, TableFormat::Tsv, &cols, None, None).unwrap();
        assert_eq!(got, vec![ex("it 's a \"charming\" , often funny journey ", 1), ex("\"unbalanced quote", 0)]);
    }

    #[test]
    fn jsonl_ints_and_limit() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "t.jsonl",
            "{\"text\": \"a\", \"label\": 0}\n\n{\"text\": \"b\", \"label\": 1, \"x\": 3}\n{\"text\": \"c\", \"label\": 1}\n",
        );
        let all = read_split(&p, TableFormat::Jsonl, &COLS, None, None).unwrap();
        assert_eq!(all, vec![ex("a", 0), ex("b", 1), ex("c", 1)]);
        let two = read_split(&p, TableFormat::Jsonl, &COLS, None, Some(2)).unwrap();
        assert_eq!(two, vec![ex("a", 0), ex("b", 1)]);
    }

    #[test]
    fn jsonl_blank_file_has_no_columns() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "t.jsonl", "\n");
        // No columns at all: the missing column is reported.
        let err = read_split(&p, TableFormat::Jsonl, &COLS, None, None).unwrap_err();
        assert!(matches!(err, TableError::MissingColumn { .. }), "{err}");
    }

    #[test]
    fn jsonl_string_labels_with_names() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(
            dir.path(),
            "t.ndjson",
            "{\"text\": \"a\", \"label\": \"pos\"}\n{\"text\": \"b\", \"label\": \"neg\"}\n",
        );
        let n = names(&["neg", "pos"]);
        let got = read_split(&p, TableFormat::Jsonl, &COLS, Some(&n), None).unwrap();
        assert_eq!(got, vec![ex("a", 1), ex("b", 0)]);
    }

    #[test]
    fn parquet_any_int_dtype_and_limit() {
        let dir = tempfile::tempdir().unwrap();
        let df = df!(
            "text" => ["a", "b", "c"],
            "label" => [1u32, 0, 1],
            "other" => [1.0f64, 2.0, 3.0],
        )
        .unwrap();
        let p = write_parquet(dir.path(), "t.parquet", df);
        let got = read_split(&p, TableFormat::Parquet, &COLS, None, None).unwrap();
        assert_eq!(got, vec![ex("a", 1), ex("b", 0), ex("c", 1)]);
        let got = read_split(&p, TableFormat::Parquet, &COLS, None, Some(1)).unwrap();
        assert_eq!(got, vec![ex("a", 1)]);

        let df = df!("text" => ["x"], "label" => [1u64]).unwrap();
        let p = write_parquet(dir.path(), "u64.parquet", df);
        let got = read_split(&p, TableFormat::Parquet, &COLS, None, None).unwrap();
        assert_eq!(got, vec![ex("x", 1)]);
    }

    #[test]
    fn csv_string_labels_with_names() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "t.csv", "text,label\na,positive\nb,negative\n");
        let n = names(&["negative", "positive"]);
        let got = read_split(&p, TableFormat::Csv, &COLS, Some(&n), None).unwrap();
        assert_eq!(got, vec![ex("a", 1), ex("b", 0)]);
    }

    #[test]
    fn csv_numeric_names_map_through_names() {
        // Class names that look like integers still go through `label_names`.
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "t.csv", "text,label\na,1\nb,0\n");
        let n = names(&["1", "0"]);
        let got = read_split(&p, TableFormat::Csv, &COLS, Some(&n), None).unwrap();
        assert_eq!(got, vec![ex("a", 0), ex("b", 1)]);
    }

    #[test]
    fn csv_int_labels_checked_against_names() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "t.csv", "text,label\na,1\nb,0\n");
        let n = names(&["neg", "pos"]);
        let got = read_split(&p, TableFormat::Csv, &COLS, Some(&n), None).unwrap();
        assert_eq!(got, vec![ex("a", 1), ex("b", 0)]);

        let p = write(dir.path(), "u.csv", "text,label\na,1\nb,2\n");
        let err = read_split(&p, TableFormat::Csv, &COLS, Some(&n), None).unwrap_err();
        // `2` is neither a name nor an index below 2: reported as an unknown name.
        assert!(err.to_string().contains("row 2"), "{err}");
    }

    #[test]
    fn csv_limit() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "t.csv", "text,label\na,0\nb,1\nc,bad\n");
        // The bad row is past the limit, so it is never looked at.
        let got = read_split(&p, TableFormat::Csv, &COLS, None, Some(2)).unwrap();
        assert_eq!(got, vec![ex("a", 0), ex("b", 1)]);
    }

    // ---- errors ----

    #[test]
    fn err_missing_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("nope.csv");
        for format in [TableFormat::Csv, TableFormat::Tsv, TableFormat::Jsonl, TableFormat::Parquet] {
            let err = read_split(&p, format, &COLS, None, None).unwrap_err();
            assert!(matches!(err, TableError::Io { .. }), "{format}: {err}");
            assert!(err.to_string().starts_with(&p.display().to_string()));
        }
    }

    #[test]
    fn err_missing_column_names_file_and_columns() {
        let dir = tempfile::tempdir().unwrap();
        let df = df!("text" => ["a"], "label" => [0i64]).unwrap();
        let p = write_parquet(dir.path(), "train.parquet", df);
        let cols = TableColumns { text: "sentence", label: "label" };
        let err = read_split(&p, TableFormat::Parquet, &cols, None, None).unwrap_err();
        assert_eq!(err.to_string(), format!("{}: no column `sentence` (columns: text, label)", p.display()));

        let p = write(dir.path(), "t.csv", "text,y\na,0\n");
        let err = read_split(&p, TableFormat::Csv, &COLS, None, None).unwrap_err();
        assert_eq!(err.to_string(), format!("{}: no column `label` (columns: text, y)", p.display()));
    }

    #[test]
    fn err_negative_label() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "t.csv", "text,label\na,0\nb,-1\n");
        let err = read_split(&p, TableFormat::Csv, &COLS, None, None).unwrap_err();
        let err = err.to_string();
        assert!(
            err.starts_with(&format!("{}: row 2: label -1 is not a class index; -1 is how GLUE", p.display())),
            "{err}"
        );
    }

    #[test]
    fn err_label_out_of_range_with_names() {
        let dir = tempfile::tempdir().unwrap();
        let df = df!("text" => ["a", "b", "c"], "label" => [0i32, 1, 5]).unwrap();
        let p = write_parquet(dir.path(), "t.parquet", df);
        let n = names(&["neg", "pos"]);
        let err = read_split(&p, TableFormat::Parquet, &COLS, Some(&n), None).unwrap_err();
        assert_eq!(err.to_string(), format!("{}: row 3: label 5 is not a class index (2 classes)", p.display()));
    }

    #[test]
    fn err_null_text() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "t.csv", "text,label\na,0\nb,1\n,0\n");
        let err = read_split(&p, TableFormat::Csv, &COLS, None, None).unwrap_err();
        assert_eq!(err.to_string(), format!("{}: row 3: null text", p.display()));

        let p = write(dir.path(), "t.jsonl", "{\"text\": \"a\", \"label\": 0}\n{\"text\": null, \"label\": 1}\n");
        let err = read_split(&p, TableFormat::Jsonl, &COLS, None, None).unwrap_err();
        assert!(matches!(err, TableError::NullText { row: 2, .. }), "{err}");
    }

    #[test]
    fn err_null_label() {
        let dir = tempfile::tempdir().unwrap();
        let df = df!("text" => ["a", "b"], "label" => [Some(0i64), None]).unwrap();
        let p = write_parquet(dir.path(), "t.parquet", df);
        let err = read_split(&p, TableFormat::Parquet, &COLS, None, None).unwrap_err();
        assert_eq!(err.to_string(), format!("{}: row 2: null label", p.display()));
    }

    #[test]
    fn err_unknown_name() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "t.tsv", "text\tlabel\na\tpos\nb\tneutral\n");
        let n = names(&["neg", "pos"]);
        let err = read_split(&p, TableFormat::Tsv, &COLS, Some(&n), None).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("{}: row 2: unknown label \"neutral\" (label names: neg, pos)", p.display())
        );
    }

    #[test]
    fn err_string_labels_without_names() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "t.csv", "text,label\na,0\nb,pos\n");
        let err = read_split(&p, TableFormat::Csv, &COLS, None, None).unwrap_err();
        assert!(matches!(err, TableError::NamesRequired { .. }), "{err}");
        assert!(err.to_string().contains("label column `label`"), "{err}");
    }

    #[test]
    fn string_label_edge_cases_without_names() {
        let dir = tempfile::tempdir().unwrap();
        let empty: Vec<&str> = Vec::new();
        let df = df!("text" => empty.clone(), "label" => empty).unwrap();
        let p = write_parquet(dir.path(), "empty.parquet", df);
        let got = read_split(&p, TableFormat::Parquet, &COLS, None, None).unwrap();
        assert!(got.is_empty());

        let df = df!("text" => ["a", "b"], "label" => [None, Some("pos")]).unwrap();
        let p = write_parquet(dir.path(), "nulls.parquet", df);
        let err = read_split(&p, TableFormat::Parquet, &COLS, None, None).unwrap_err();
        assert_eq!(err.to_string(), format!("{}: row 1: null label", p.display()));
    }

    #[test]
    fn err_label_dtype() {
        let dir = tempfile::tempdir().unwrap();
        let df = df!("text" => ["a"], "label" => [0.5f64]).unwrap();
        let p = write_parquet(dir.path(), "t.parquet", df);
        let err = read_split(&p, TableFormat::Parquet, &COLS, None, None).unwrap_err();
        assert!(matches!(err, TableError::LabelDtype { .. }), "{err}");
        assert!(err.to_string().contains("`label`"), "{err}");
    }

    #[test]
    fn err_text_dtype() {
        let dir = tempfile::tempdir().unwrap();
        let df = df!("text" => [1i64], "label" => [0i64]).unwrap();
        let p = write_parquet(dir.path(), "t.parquet", df);
        let err = read_split(&p, TableFormat::Parquet, &COLS, None, None).unwrap_err();
        assert!(matches!(err, TableError::TextDtype { .. }), "{err}");
    }

    #[test]
    fn err_malformed_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), "t.parquet", "this is not parquet");
        let err = read_split(&p, TableFormat::Parquet, &COLS, None, None).unwrap_err();
        assert!(matches!(err, TableError::Parse { .. }), "{err}");
        assert!(err.to_string().starts_with(&p.display().to_string()), "{err}");

        let p = write(dir.path(), "t.jsonl", "{\"text\": \"a\", \"label\": 0}\n{not json\n");
        let err = read_split(&p, TableFormat::Jsonl, &COLS, None, None).unwrap_err();
        assert!(matches!(err, TableError::Parse { .. }), "{err}");

        let p = write(dir.path(), "t.csv", "");
        let err = read_split(&p, TableFormat::Csv, &COLS, None, None).unwrap_err();
        assert!(matches!(err, TableError::Parse { .. }), "{err}");
    }

    /// The shared real files, when present (they are not in the repository).
    #[test]
    fn real_sst2_parquet_if_present() {
        let p = &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/sst2/validation.parquet");
        if !p.exists() {
            return;
        }
        let got = read_split(p, TableFormat::Parquet, &COLS, None, Some(10)).unwrap();
        assert_eq!(got.len(), 10);
        assert!(got.iter().all(|e| e.label <= 1 && !e.text.is_empty()));
    }
}
