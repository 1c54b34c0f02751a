//! Initial embeddings from a GloVe-format text file (`word v1 … vd` per line),
//! as the paper's LSTM uses (Pennington et al. 2014). Words the file lacks get
//! `N(0, σ²)` rows with σ the spread of the loaded vectors (`[PAD]` too; the
//! model zeroes it for `pad_embedding = "zero"`).

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

#[derive(Debug, thiserror::Error)]
pub enum GloveError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}:{line}: expected a word and {dim} numbers, found {found} numbers")]
    Dimension { path: PathBuf, line: usize, dim: usize, found: usize },
    #[error("{path}: holds no vectors")]
    Empty { path: PathBuf },
    #[error("{path}:{line}: `{value}` is not a number")]
    Number { path: PathBuf, line: usize, value: String },
}

/// The vectors' width and the first line that has it, read from the first
/// lines only (planning checks it against `embedding_dim` before anything
/// trains). A word may contain spaces (840B) and a line may be malformed, so
/// the width is the commonest count of trailing numbers over those lines.
pub fn dimension(path: &Path) -> Result<Option<(usize, usize)>, GloveError> {
    const LINES: usize = 20;
    // width → (lines with it, first such line)
    let mut widths: std::collections::BTreeMap<usize, (usize, usize)> = Default::default();
    for line in non_blank_lines(path)?.take(LINES) {
        let (n, line) = line?;
        // The first field is a word whatever it looks like.
        let fields: Vec<&str> = line.split(' ').collect();
        let numbers = fields[1..].iter().rev().take_while(|f| f.parse::<f32>().is_ok()).count();
        widths.entry(numbers).or_insert((0, n)).0 += 1;
    }
    // Ties go to the narrower width (the map iterates in increasing order).
    let commonest = widths.into_iter().rev().max_by_key(|&(_, (count, _))| count);
    Ok(commonest.map(|(width, (_, line))| (width, line)))
}

/// The file's non-blank lines with their numbers (from 1).
fn non_blank_lines(path: &Path) -> Result<impl Iterator<Item = Result<(usize, String), GloveError>> + '_, GloveError> {
    let io = move |source| GloveError::Io { path: path.into(), source };
    let file = File::open(path).map_err(io)?;
    Ok(BufReader::new(file).lines().enumerate().filter_map(move |(n, line)| match line {
        Ok(line) if line.trim().is_empty() => None,
        Ok(line) => Some(Ok((n + 1, line))),
        Err(source) => Some(Err(io(source))),
    }))
}

/// Coverage statistics, recorded in the training log.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GloveCoverage {
    pub found: usize,
    pub vocab: usize,
}

/// An embedding matrix `[words.len(), dim]`, row-major.
pub fn load(
    path: &Path,
    words: &[String],
    dim: usize,
    rng: &mut ChaCha8Rng,
) -> Result<(Vec<f32>, GloveCoverage), GloveError> {
    let index: std::collections::HashMap<&str, usize> =
        words.iter().enumerate().map(|(i, w)| (w.as_str(), i)).collect();
    let mut matrix = vec![f32::NAN; words.len() * dim];
    let mut found = 0;
    let (mut sum, mut sum_sq, mut count) = (0.0f64, 0.0f64, 0usize);
    for line in non_blank_lines(path)? {
        let (n, line) = line?;
        // GloVe's 840B file has words containing spaces: the vector is the last `dim` fields.
        let fields: Vec<&str> = line.split(' ').collect();
        if fields.len() < dim + 1 {
            return Err(GloveError::Dimension {
                path: path.into(),
                line: n,
                dim,
                found: fields.len().saturating_sub(1),
            });
        }
        let word = fields[..fields.len() - dim].join(" ");
        let Some(&row) = index.get(word.as_str()) else { continue };
        if !matrix[row * dim].is_nan() {
            continue;
        }
        for (d, value) in fields[fields.len() - dim..].iter().enumerate() {
            let v: f32 = value.parse().map_err(|_| GloveError::Number {
                path: path.into(),
                line: n,
                value: value.to_string(),
            })?;
            matrix[row * dim + d] = v;
            sum += v as f64;
            sum_sq += (v as f64) * (v as f64);
            count += 1;
        }
        found += 1;
    }
    let mean = if count > 0 { sum / count as f64 } else { 0.0 };
    let std = if count > 1 { (sum_sq / count as f64 - mean * mean).max(1e-8).sqrt() } else { 1.0 };
    let normal = Normal::new(0.0f32, std as f32).expect("finite std");
    for v in matrix.iter_mut().filter(|v| v.is_nan()) {
        *v = normal.sample(rng);
    }
    Ok((matrix, GloveCoverage { found, vocab: words.len() }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn loads_known_rows_and_fills_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.txt");
        std::fs::write(&path, "good 1 2\nbad -1 -2\nnew york 3 4\n").unwrap();
        let words: Vec<String> = ["[PAD]", "good", "new york", "oov"].iter().map(|s| s.to_string()).collect();
        let (m, cov) = load(&path, &words, 2, &mut ChaCha8Rng::seed_from_u64(0)).unwrap();
        assert_eq!(&m[2..4], &[1.0, 2.0]);
        assert_eq!(&m[4..6], &[3.0, 4.0]);
        assert!(m.iter().all(|v| v.is_finite()));
        assert_eq!(cov, GloveCoverage { found: 2, vocab: 4 });
        assert_eq!(dimension(&path).unwrap(), Some((2, 1)));
    }

    #[test]
    fn errors_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.txt");
        std::fs::write(&path, "good 1 2\nbad 1 x\n").unwrap();
        let words = vec!["bad".to_string()];
        let err = load(&path, &words, 2, &mut ChaCha8Rng::seed_from_u64(0)).unwrap_err().to_string();
        assert!(err.ends_with("g.txt:2: `x` is not a number"), "{err}");
        std::fs::write(&path, "good 1\n").unwrap();
        let err = load(&path, &words, 2, &mut ChaCha8Rng::seed_from_u64(0)).unwrap_err().to_string();
        assert!(err.contains("g.txt:1: expected a word and 2 numbers"), "{err}");
    }

    #[test]
    fn dimension_survives_numeric_and_spaced_words() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g.txt");
        std::fs::write(&path, "room 101 0.4 0.5 0.6\n\n1.5 0.1 0.2 0.3\nat&t corp 1 2 3\nbad 1 x 3\n").unwrap();
        // Line 1 reads as four numbers (the word is `room 101`), line 5 as two
        // (malformed: loading names it); line 3's word is a number.
        assert_eq!(dimension(&path).unwrap(), Some((3, 3)));
        std::fs::write(&path, "").unwrap();
        assert_eq!(dimension(&path).unwrap(), None);
    }
}
