//! The study's CSV inputs (a platform's answers, the published accuracies):
//! every field as text, so ids like `007` stay as written and each reader
//! checks its own values. Read as records that remember their line
//! (`data::csv_records`), so a malformed row, a short or long row, and a bad
//! value all name the line a person has to fix.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};

use grid_core::data::csv_records::{Record, read_records};

/// A CSV file with a header row.
pub struct TextTable {
    names: Vec<String>,
    rows: Vec<Record>,
    path: PathBuf,
}

impl TextTable {
    pub fn read(path: &Path) -> Result<TextTable> {
        let text = std::fs::read_to_string(path).with_context(|| format!("{}: cannot read", path.display()))?;
        let mut records = read_records(path, &text)?.into_iter();
        let Some(header) = records.next() else {
            bail!("{}: the file is empty; expected a CSV header row", path.display());
        };
        let names: Vec<String> = header.fields.iter().map(|f| f.trim().to_string()).collect();
        let rows: Vec<Record> = records.collect();
        for row in &rows {
            if row.fields.len() != names.len() {
                bail!(
                    "{}:{}: {} fields, but the header has {} ({})",
                    path.display(),
                    row.line,
                    row.fields.len(),
                    names.len(),
                    names.join(", ")
                );
            }
        }
        Ok(TextTable { names, rows, path: path.to_path_buf() })
    }

    pub fn names(&self) -> Vec<String> {
        self.names.clone()
    }

    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// The 1-based line data row `row` starts on (the header is line 1; blank
    /// lines and line breaks inside quotes count).
    pub fn line(&self, row: usize) -> usize {
        self.rows[row].line
    }

    /// The first of `names` the file has (the others are accepted spellings),
    /// trimmed, an empty cell as `None`; an error naming the columns there are.
    pub fn column(&self, names: &[&str]) -> Result<Vec<Option<String>>> {
        let Some(index) = names.iter().find_map(|n| self.names.iter().position(|h| h == n)) else {
            return Err(anyhow!(
                "{}: no `{}` column (it has: {})",
                self.path.display(),
                names[0],
                self.names.join(", ")
            ));
        };
        Ok(self.rows.iter().map(|r| Some(r.fields[index].trim().to_string()).filter(|s| !s.is_empty())).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Result<TextTable> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("answers.csv");
        std::fs::write(&path, text).unwrap();
        TextTable::read(&path)
    }

    #[test]
    fn rows_keep_their_lines_and_text() {
        let t = table("\u{feff}worker,task,answer\r\nw1,007,0\r\n\r\n\"w,2\",\"t\nx\",1\nw3,t3,\n").unwrap();
        assert_eq!(t.rows(), 3, "a blank line is no row");
        assert_eq!((0..3).map(|r| t.line(r)).collect::<Vec<_>>(), [2, 4, 6]);
        assert_eq!(
            t.column(&["worker_id", "worker"]).unwrap(),
            [Some("w1".into()), Some("w,2".into()), Some("w3".into())]
        );
        assert_eq!(t.column(&["task"]).unwrap()[0].as_deref(), Some("007"));
        assert_eq!(t.column(&["answer"]).unwrap()[2], None);
    }

    #[test]
    fn malformed_rows_name_their_line() {
        let e = |text: &str| format!("{:#}", table(text).err().expect("an error"));
        assert!(e("worker,task\nw1,t1\nw2,t2,extra\n").contains("answers.csv:3: 3 fields, but the header has 2"));
        assert!(e("worker,task\nw1,t1\nw2\n").contains("answers.csv:3: 1 fields, but the header has 2"));
        assert!(e("worker,task\nw1,\"t1\n").contains("answers.csv:2:4: this quote is never closed"));
        assert!(e("").contains("the file is empty"));
        let t = table("worker,task\nw1,t1\n").unwrap();
        assert!(
            t.column(&["answer"])
                .expect_err("no column")
                .to_string()
                .contains("no `answer` column (it has: worker, task)")
        );
    }
}
