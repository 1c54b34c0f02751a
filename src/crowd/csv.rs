//! The study's CSV inputs (a platform's answers, the published accuracies),
//! read through polars with every column as text, so ids like `007` stay as
//! written and each reader checks its own values, naming the line.

use std::fs::File;
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use polars::prelude::*;

/// A CSV file with a header row, every column a string column.
pub struct TextTable {
    frame: DataFrame,
    path: std::path::PathBuf,
}

impl TextTable {
    pub fn read(path: &Path) -> Result<TextTable> {
        let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
        let frame = CsvReadOptions::default()
            .with_has_header(true)
            .with_infer_schema_length(Some(0))
            .into_reader_with_file_handle(file)
            .finish()
            .map_err(|e| anyhow!("{}: not a CSV file with a header row: {e}", path.display()))?;
        Ok(TextTable { frame, path: path.to_path_buf() })
    }

    pub fn names(&self) -> Vec<String> {
        self.frame.get_column_names().iter().map(|s| s.to_string()).collect()
    }

    pub fn rows(&self) -> usize {
        self.frame.height()
    }

    /// The first of `names` the file has (the others are accepted spellings),
    /// an empty cell as `None`; an error naming the columns there are.
    pub fn column(&self, names: &[&str]) -> Result<Vec<Option<String>>> {
        let Some(column) = names.iter().find_map(|n| self.frame.column(n).ok()) else {
            return Err(anyhow!(
                "{}: no `{}` column (it has: {})",
                self.path.display(),
                names[0],
                self.names().join(", ")
            ));
        };
        let values = column.str().map_err(|e| anyhow!("{}: column `{}`: {e}", self.path.display(), names[0]))?;
        Ok(values.iter().map(|v| v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty())).collect())
    }
}
