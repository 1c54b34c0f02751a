//! What a long attribution step has explained so far, so that one stopped part
//! way (Ctrl-C, a cluster's time limit, a killed process, a device call that
//! ends) goes on from the examples it had finished instead of from the first.
//! IG with 1,000 steps or LIME with 3,000 perturbations over 1,000 examples is
//! hours of CPU: more than one sitting.
//!
//! A step explains its examples in chunks that are the same on every attempt
//! (length order, `batch_size` at a time), so a chunk's scores do not depend on
//! which attempt computed it: a resumed step ends bit for bit as an unbroken
//! one on the same machine. Finished chunks are written, at most every
//! [`Progress::every`] and when a stop is asked for, as part files in the
//! step's resume folder:
//!
//! ```text
//! <dir>/part-<first chunk>.jsonl   line 1: {"format":…,"sha256":…,"seconds":…,"shapes":…}
//!                                  then one {"chunk":k,"record":{…}} per example
//! ```
//!
//! The checksum covers the lines after the first. A part is written under a
//! temporary name and renamed, so a killed process leaves whole parts only. A
//! part is bound to the content of the steps it was computed from (the
//! checksums in their manifests): step keys name a recipe, and a model trained
//! again under the same key (its entry was damaged, or removed) is other
//! weights. A part that fails its checksum or does not decode, that was written
//! from other inputs, or any of whose chunks does not hold the examples this
//! attempt would put in it (their test indices, tokens and ground truth), is
//! not used: its examples are explained again, and the step's log says why.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::AttributedExample;
use grid_cache::files::sha256_hex;

/// Bumped when the part layout changes: older parts are then not used.
const FORMAT: u32 = 1;

#[derive(Debug, Serialize, Deserialize)]
struct Header {
    format: u32,
    /// SHA-256 of the bytes after the header line.
    sha256: String,
    /// [`inputs_digest`] of the steps the part was computed from.
    inputs: String,
    /// Seconds the attempt spent explaining this part's chunks.
    seconds: f64,
    /// The `[rows, time]` shapes the attempt had sent through the model.
    shapes: Vec<[usize; 2]>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Row {
    chunk: usize,
    record: AttributedExample,
}

/// Chunks earlier attempts finished, as far as they can be vouched for.
#[derive(Debug, Default)]
pub struct Resumed {
    /// Chunk number → its explained examples, in the chunk's order.
    pub chunks: HashMap<usize, Vec<AttributedExample>>,
    /// Seconds earlier attempts spent on them.
    pub seconds: f64,
    pub shapes: Vec<[usize; 2]>,
    /// Why parts were not used, one line each (for the step's log).
    pub rejected: Vec<String>,
}

impl Resumed {
    pub fn examples(&self) -> usize {
        self.chunks.values().map(Vec::len).sum()
    }
}

/// Writes finished chunks into the resume folder.
#[derive(Debug)]
pub struct Progress {
    dir: PathBuf,
    /// The least time between two writes (zero: after every chunk).
    every: Duration,
    inputs: String,
    last_write: Instant,
    pending: Vec<Row>,
    first_pending: Option<usize>,
}

impl Progress {
    /// `inputs`: the [`inputs_digest`] of the step's input folders.
    pub fn new(dir: PathBuf, every: Duration, inputs: String) -> Progress {
        Progress { dir, every, inputs, last_write: Instant::now(), pending: Vec::new(), first_pending: None }
    }

    /// The chunks earlier attempts wrote that hold what `expected` says: per
    /// chunk, the records as this attempt prepared them (scores still empty).
    pub fn load(&self, expected: &[Vec<&AttributedExample>]) -> Resumed {
        let mut resumed = Resumed::default();
        for path in part_files(&self.dir) {
            match read_part(&path, &self.inputs, expected) {
                Ok((header, chunks)) => {
                    resumed.seconds += header.seconds;
                    resumed.shapes.extend(header.shapes);
                    resumed.chunks.extend(chunks);
                }
                Err(e) => resumed.rejected.push(format!("{}: not used: {e:#}", path.display())),
            }
        }
        resumed.shapes.sort_unstable();
        resumed.shapes.dedup();
        resumed
    }

    /// Notes chunk `chunk` as explained, and writes what is pending when a
    /// write is due; `shapes`: those the attempt has sent through the model.
    pub fn finished(&mut self, chunk: usize, records: Vec<AttributedExample>, shapes: &[[usize; 2]]) -> Result<()> {
        self.first_pending.get_or_insert(chunk);
        self.pending.extend(records.into_iter().map(|record| Row { chunk, record }));
        if self.last_write.elapsed() >= self.every {
            self.write(shapes)?;
        }
        Ok(())
    }

    /// Writes the pending chunks as one part (nothing when none is pending).
    pub fn write(&mut self, shapes: &[[usize; 2]]) -> Result<()> {
        let Some(first) = self.first_pending else { return Ok(()) };
        let mut body = Vec::new();
        for row in &self.pending {
            serde_json::to_writer(&mut body, row)?;
            body.push(b'\n');
        }
        let header = Header {
            format: FORMAT,
            sha256: sha256_hex(&body),
            inputs: self.inputs.clone(),
            seconds: self.last_write.elapsed().as_secs_f64(),
            shapes: shapes.to_vec(),
        };
        fs::create_dir_all(&self.dir).with_context(|| format!("{}: cannot create", self.dir.display()))?;
        let path = self.dir.join(format!("part-{first}.jsonl"));
        let staged = self.dir.join(format!(".part-{first}.jsonl.{}", std::process::id()));
        let mut file = fs::File::create(&staged).with_context(|| format!("{}: cannot create", staged.display()))?;
        serde_json::to_writer(&mut file, &header)?;
        file.write_all(b"\n")
            .and_then(|()| file.write_all(&body))
            .and_then(|()| file.sync_all())
            .with_context(|| format!("{}: cannot write", staged.display()))?;
        fs::rename(&staged, &path).with_context(|| format!("{}: cannot rename into place", path.display()))?;
        self.pending.clear();
        self.first_pending = None;
        self.last_write = Instant::now();
        Ok(())
    }
}

/// A digest of what the step reads: the payload checksums in each input
/// folder's `manifest.json` (a folder without one, as in unit tests, by its
/// path).
pub fn inputs_digest(inputs: &[PathBuf]) -> String {
    let mut text = String::new();
    for folder in inputs {
        match crate::io::read_json::<grid_cache::Manifest<crate::step_kind::StepKind>>(&folder.join("manifest.json")) {
            Ok(manifest) => {
                for file in manifest.files {
                    text.push_str(&format!("{} {} {}\n", file.name, file.bytes, file.sha256));
                }
            }
            Err(_) => text.push_str(&format!("{}\n", folder.display())),
        }
        text.push('\n');
    }
    sha256_hex(text.as_bytes())
}

/// How many explained examples the folder's parts hold (for `grid plan`:
/// "resumes with N examples explained"); parts are checked, not matched.
pub fn examples_in(dir: &Path) -> Option<usize> {
    let examples: usize =
        part_files(dir).iter().filter_map(|path| read_rows(path).ok()).map(|(_, rows)| rows.len()).sum();
    (examples > 0).then_some(examples)
}

fn part_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("part-") && n.ends_with(".jsonl"))
        })
        .collect();
    paths.sort();
    paths
}

/// A part's header and rows, if its checksum holds and every row decodes.
fn read_rows(path: &Path) -> Result<(Header, Vec<Row>)> {
    let bytes = fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let split = bytes.iter().position(|&b| b == b'\n').context("no header line")?;
    let header: Header = serde_json::from_slice(&bytes[..split]).context("header line")?;
    anyhow::ensure!(header.format == FORMAT, "format {} (this grid writes {FORMAT})", header.format);
    let body = &bytes[split + 1..];
    anyhow::ensure!(sha256_hex(body) == header.sha256, "checksum does not match its contents");
    let mut rows = Vec::new();
    for (n, line) in body.split(|&b| b == b'\n').enumerate().filter(|(_, l)| !l.is_empty()) {
        rows.push(serde_json::from_slice(line).with_context(|| format!("line {}", n + 2))?);
    }
    Ok((header, rows))
}

/// A part whose chunks are each whole and hold what `expected` says.
fn read_part(
    path: &Path,
    inputs: &str,
    expected: &[Vec<&AttributedExample>],
) -> Result<(Header, HashMap<usize, Vec<AttributedExample>>)> {
    let (header, rows) = read_rows(path)?;
    anyhow::ensure!(
        header.inputs == inputs,
        "computed from other inputs (a step it reads, such as the model, was computed again since)"
    );
    let mut chunks: HashMap<usize, Vec<AttributedExample>> = HashMap::new();
    for row in rows {
        chunks.entry(row.chunk).or_default().push(row.record);
    }
    for (&chunk, records) in &chunks {
        let wanted = expected
            .get(chunk)
            .with_context(|| format!("chunk {chunk}: this attempt has {} chunks", expected.len()))?;
        anyhow::ensure!(
            records.len() == wanted.len(),
            "chunk {chunk}: {} examples, this attempt's has {}",
            records.len(),
            wanted.len()
        );
        for (record, &wanted) in records.iter().zip(wanted) {
            anyhow::ensure!(
                same_example(record, wanted),
                "chunk {chunk}: test example {} is not the one this attempt would explain there ({})",
                record.index,
                wanted.index
            );
            anyhow::ensure!(
                record.scores.len() == wanted.tokens.len() && record.scores.iter().all(|s| s.is_finite()),
                "chunk {chunk}: test example {} has {} finite scores for {} tokens",
                record.index,
                record.scores.iter().filter(|s| s.is_finite()).count(),
                wanted.tokens.len()
            );
        }
    }
    Ok((header, chunks))
}

/// The same example, encoded the same way: all but what explaining adds.
fn same_example(done: &AttributedExample, prepared: &AttributedExample) -> bool {
    done.index == prepared.index
        && done.tokens == prepared.tokens
        && done.word_of_token == prepared.word_of_token
        && done.ground_truth == prepared.ground_truth
        && done.distractors == prepared.distractors
        && done.label == prepared.label
}

#[cfg(test)]
mod tests_support {
    use super::*;

    pub fn prepared(index: usize) -> AttributedExample {
        AttributedExample {
            index,
            tokens: vec!["[CLS]".into(), format!("w{index}"), "#1".into(), "[SEP]".into()],
            word_of_token: vec![None, Some(0), Some(1), None],
            ground_truth: vec![2],
            distractors: Vec::new(),
            label: 1,
            predicted: 0,
            scores: Vec::new(),
            completeness_gap: None,
        }
    }

    pub fn explained(index: usize) -> AttributedExample {
        AttributedExample { predicted: 1, scores: vec![0.0, 0.1, 0.9 + index as f32, 0.0], ..prepared(index) }
    }

    /// Chunks [[0, 1], [2, 3], [4]] of test examples 10..15.
    pub fn expected_records() -> Vec<Vec<AttributedExample>> {
        vec![vec![prepared(10), prepared(11)], vec![prepared(12), prepared(13)], vec![prepared(14)]]
    }

    pub fn refs(chunks: &[Vec<AttributedExample>]) -> Vec<Vec<&AttributedExample>> {
        chunks.iter().map(|c| c.iter().collect()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::*;
    use super::*;

    #[test]
    fn finished_chunks_come_back_with_their_time_and_shapes() {
        let dir = tempfile::tempdir().unwrap();
        let mut progress = Progress::new(dir.path().join("resume"), Duration::ZERO, "model a".into());
        progress.finished(0, vec![explained(10), explained(11)], &[[2, 16]]).unwrap();
        progress.finished(2, vec![explained(14)], &[[2, 16], [1, 16]]).unwrap();

        let expected = expected_records();
        let resumed = progress.load(&refs(&expected));
        assert!(resumed.rejected.is_empty(), "{:?}", resumed.rejected);
        assert_eq!(resumed.examples(), 3);
        assert_eq!(resumed.chunks[&0], vec![explained(10), explained(11)]);
        assert_eq!(resumed.chunks[&2], vec![explained(14)]);
        assert!(!resumed.chunks.contains_key(&1));
        assert_eq!(resumed.shapes, vec![[1, 16], [2, 16]]);
        assert!(resumed.seconds >= 0.0);
        assert_eq!(examples_in(&dir.path().join("resume")), Some(3));
    }

    #[test]
    fn nothing_is_written_before_a_write_is_due() {
        let dir = tempfile::tempdir().unwrap();
        let mut progress = Progress::new(dir.path().to_path_buf(), Duration::from_secs(3600), "model a".into());
        progress.finished(0, vec![explained(10), explained(11)], &[]).unwrap();
        assert_eq!(examples_in(dir.path()), None);
        progress.write(&[]).unwrap();
        assert_eq!(examples_in(dir.path()), Some(2));
    }

    #[test]
    fn a_damaged_part_is_not_used_and_the_others_are() {
        let dir = tempfile::tempdir().unwrap();
        let mut progress = Progress::new(dir.path().to_path_buf(), Duration::ZERO, "model a".into());
        progress.finished(0, vec![explained(10), explained(11)], &[]).unwrap();
        progress.finished(1, vec![explained(12), explained(13)], &[]).unwrap();
        let part = dir.path().join("part-1.jsonl");
        let text = fs::read_to_string(&part).unwrap().replace("\"predicted\":1", "\"predicted\":0");
        fs::write(&part, text).unwrap();

        let expected = expected_records();
        let resumed = progress.load(&refs(&expected));
        assert_eq!(resumed.chunks.keys().copied().collect::<Vec<_>>(), vec![0]);
        assert_eq!(resumed.rejected.len(), 1);
        assert!(resumed.rejected[0].contains("part-1.jsonl") && resumed.rejected[0].contains("checksum"));
    }

    #[test]
    fn a_part_of_other_examples_is_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let mut progress = Progress::new(dir.path().to_path_buf(), Duration::ZERO, "model a".into());
        // Chunk 1 of another sample (examples 20 and 21), and a chunk this attempt does not have.
        progress.finished(1, vec![explained(20), explained(21)], &[]).unwrap();
        progress.finished(7, vec![explained(12)], &[]).unwrap();
        // Chunk 0 with a score missing.
        let short = AttributedExample { scores: vec![0.5], ..explained(10) };
        progress.finished(0, vec![short, explained(11)], &[]).unwrap();

        let expected = expected_records();
        let resumed = progress.load(&refs(&expected));
        assert!(resumed.chunks.is_empty(), "{:?}", resumed.chunks.keys());
        let said = resumed.rejected.join("\n");
        assert!(said.contains("test example 20 is not the one this attempt would explain there (12)"), "{said}");
        assert!(said.contains("chunk 7: this attempt has 3 chunks"), "{said}");
        assert!(said.contains("test example 10 has 1 finite scores for 4 tokens"), "{said}");
    }
}

#[cfg(test)]
mod binding {
    use super::tests_support::*;
    use super::*;

    #[test]
    fn parts_from_a_model_trained_again_are_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let mut before = Progress::new(dir.path().to_path_buf(), Duration::ZERO, "model a".into());
        before.finished(0, vec![explained(10), explained(11)], &[]).unwrap();
        let expected = expected_records();
        let after = Progress::new(dir.path().to_path_buf(), Duration::ZERO, "model b".into());
        let resumed = after.load(&refs(&expected));
        assert!(resumed.chunks.is_empty());
        assert!(resumed.rejected[0].contains("computed from other inputs"), "{:?}", resumed.rejected);
        assert_eq!(before.load(&refs(&expected)).examples(), 2);
    }

    #[test]
    fn the_inputs_digest_follows_the_payload_checksums() {
        let dir = tempfile::tempdir().unwrap();
        let cache = grid_cache::Cache::open(dir.path()).unwrap();
        let key = grid_cache::StepKey::compute(crate::step_kind::StepKind::Train, &serde_json::json!({}), &[]);
        let staging = cache.begin(crate::step_kind::StepKind::Train, &key).unwrap();
        fs::write(staging.dir.join("model.safetensors"), "weights").unwrap();
        cache.publish(staging, "train/x", &serde_json::json!({}), Vec::new(), 1.0, "cpu").unwrap();
        let folder = cache.step_dir(crate::step_kind::StepKind::Train, &key);
        let first = inputs_digest(std::slice::from_ref(&folder));
        assert_eq!(first, inputs_digest(std::slice::from_ref(&folder)));

        // Trained again under the same key: other weights, another digest.
        fs::remove_dir_all(&folder).unwrap();
        let staging = cache.begin(crate::step_kind::StepKind::Train, &key).unwrap();
        fs::write(staging.dir.join("model.safetensors"), "other weights").unwrap();
        cache.publish(staging, "train/x", &serde_json::json!({}), Vec::new(), 1.0, "cpu").unwrap();
        assert_ne!(first, inputs_digest(std::slice::from_ref(&folder)));
    }
}
