//! Payload files: JSON and JSON Lines, written and read with the file's name in
//! every error.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub fn write_jsonl<T: Serialize>(path: &Path, rows: &[T]) -> Result<()> {
    let file = File::create(path).with_context(|| format!("{}: cannot create", path.display()))?;
    let mut out = BufWriter::new(file);
    for row in rows {
        serde_json::to_writer(&mut out, row).with_context(|| format!("{}: cannot write", path.display()))?;
        out.write_all(b"\n")?;
    }
    out.flush().with_context(|| format!("{}: cannot write", path.display()))
}

pub fn read_jsonl<T: DeserializeOwned>(path: &Path) -> Result<Vec<T>> {
    let file = File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let mut rows = Vec::new();
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("{}: cannot read", path.display()))?;
        if line.is_empty() {
            continue;
        }
        rows.push(serde_json::from_str(&line).with_context(|| format!("{}:{}: invalid row", path.display(), n + 1))?);
    }
    Ok(rows)
}

pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let json = serde_json::to_vec_pretty(value)?;
    std::fs::write(path, json).with_context(|| format!("{}: cannot write", path.display()))
}

pub fn read_json<T: DeserializeOwned>(path: &Path) -> Result<T> {
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("{}: invalid JSON", path.display()))
}
