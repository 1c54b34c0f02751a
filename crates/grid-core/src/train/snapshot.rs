//! Snapshots of a training run, so that a run stopped part way (Ctrl-C, a
//! cluster's time limit, a killed process, a device call that ends) resumes
//! where it stopped instead of from step 0, and ends with the weights a run
//! never stopped would have: bit for bit on one machine.
//!
//! A snapshot is taken at an evaluation step, at most every
//! [`Snapshots::every`], and at the step a run is asked to stop (Ctrl-C,
//! SIGTERM: a cluster's time limit, `timeout`) where that resumes exactly
//! ([`Interrupted`]): the weights, the optimizer's state (momentum, Adam's
//! moments), the best weights so far, and the loop's state — the step, the
//! position of the host RNG at the start of the epoch and now, the batch the
//! epoch is at, the log and the early-stopping state. On disk:
//!
//! ```text
//! <dir>/snapshot.json      what the snapshot is, and the SHA-256 of each file
//! <dir>/step-<N>/model.mpk, optimizer.mpk, best.mpk
//! ```
//!
//! `snapshot.json` is renamed into place after its folder is complete, so a
//! process killed while writing leaves the previous snapshot in force. One that
//! fails its checksums, or does not decode, is not used: training starts from
//! step 0 and says why.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use burn::module::{AutodiffModule, Module};
use burn::optim::Optimizer;
use burn::record::{FullPrecisionSettings, NamedMpkBytesRecorder, Recorder};
use burn::tensor::backend::AutodiffBackend;
use serde::{Deserialize, Serialize};

use super::LogEntry;
use sha2::{Digest, Sha256};

/// Bumped when the layout or the loop state changes: an older snapshot is then
/// not used, unless this version still reads it ([`READS`]). Format 2 added
/// [`LoopState::interrupted`] (absent, format 1 reads the same); format 3
/// its [`Interrupted::device_position`], which an older version would ignore
/// and so resume with other masks.
const FORMAT: u32 = 3;
const READS: [u32; 3] = [1, 2, FORMAT];

const MANIFEST: &str = "snapshot.json";

/// Where a training run keeps its snapshots, and how often it takes one.
#[derive(Debug, Clone)]
pub struct Snapshots {
    pub dir: PathBuf,
    /// The least time between two snapshots (zero: at every evaluation).
    pub every: Duration,
}

/// The training loop's state at an evaluation step: with the three weight
/// records, everything a resumed run needs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoopState {
    /// Steps taken.
    pub step: usize,
    /// The host RNG's word position when the current epoch drew its batches,
    /// and now (decimal strings: JSON numbers stop at 64 bits).
    pub epoch_rng_position: String,
    pub rng_position: String,
    /// Batches of the current epoch already taken.
    pub batches_done: usize,
    pub best_step: usize,
    #[serde(with = "best_score")]
    pub best_accuracy: f64,
    pub log: Vec<LogEntry>,
    pub last_finite: Option<f64>,
    /// Examples seen, and seconds spent (all attempts together).
    pub seen: usize,
    pub seconds: f64,
    pub validation_seconds: f64,
    pub shapes: Vec<[usize; 2]>,
    /// Set on a snapshot taken between evaluations, when the run was asked
    /// to stop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<Interrupted>,
}

/// The best score so far: −∞ before the first evaluation, which JSON cannot
/// hold (serde_json writes `null` and then refuses to read it back), so it
/// is written as `null` and read back as −∞.
mod best_score {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(score: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        if score.is_finite() { serializer.serialize_some(score) } else { serializer.serialize_none() }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(deserializer)?.unwrap_or(f64::NEG_INFINITY))
    }
}

/// What a snapshot taken between two evaluations also needs: the training
/// loss summed since the last evaluation (the next log line's), and what the
/// backend's RNG was last seeded with. Such a snapshot is only taken when
/// seeding that RNG again as it was, and moving it to `device_position`, puts
/// it where the run left it: nothing was drawn from it since (the BiLSTMs,
/// ResNets and rationale models draw their masks on the host), or every mask
/// since came from the CPU backend's stream (`model::noise`), whose position
/// is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interrupted {
    pub loss_sum: f64,
    pub losses: usize,
    pub device_seed: DeviceSeed,
    /// The CPU mask stream's word position (a decimal string, as the host
    /// RNG's), when masks were drawn since the seeding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_position: Option<String>,
}

/// What the backend's RNG was seeded with: the run's seed at its start, or
/// the seed of an evaluation step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceSeed {
    Start,
    Step(usize),
}

#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    format: u32,
    state: LoopState,
    /// File name (in `step-<N>/`) → SHA-256 and length.
    files: Vec<FileSum>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct FileSum {
    name: String,
    sha256: String,
    bytes: u64,
}

/// A snapshot read back and checked: the loop's state and the three records,
/// for `load_record` on a model and optimizer built as a fresh run builds them.
pub struct Loaded<B, M, O>
where
    B: AutodiffBackend,
    M: AutodiffModule<B>,
    O: Optimizer<M, B>,
{
    pub state: LoopState,
    pub epoch_rng_position: u128,
    pub rng_position: u128,
    /// [`Interrupted::device_position`], read.
    pub device_position: Option<u128>,
    pub model: <M as Module<B>>::Record,
    pub optimizer: O::Record,
    pub best: <M::InnerModule as Module<B::InnerBackend>>::Record,
}

type Bytes = NamedMpkBytesRecorder<FullPrecisionSettings>;

impl Snapshots {
    /// The step of the snapshot in `dir`, if one is there (not verified):
    /// what `grid plan` reports.
    pub fn step_in(dir: &Path) -> Option<usize> {
        let text = fs::read_to_string(dir.join(MANIFEST)).ok()?;
        let manifest: Manifest = serde_json::from_str(&text).ok()?;
        READS.contains(&manifest.format).then_some(manifest.state.step)
    }

    /// Whether a snapshot is due, `last` being when the previous one was taken.
    pub fn due(&self, last: Instant) -> bool {
        last.elapsed() >= self.every
    }

    /// Writes a snapshot; the previous one stays in force until this one is whole.
    pub fn save<B, M, O>(&self, model: &M, optimizer: &O, best: &M::InnerModule, state: &LoopState) -> Result<()>
    where
        B: AutodiffBackend,
        M: AutodiffModule<B>,
        O: Optimizer<M, B>,
    {
        let folder = format!("step-{}", state.step);
        let staging = self.dir.join(format!("{folder}.partial"));
        if staging.exists() {
            fs::remove_dir_all(&staging).with_context(|| format!("removing {}", staging.display()))?;
        }
        fs::create_dir_all(&staging).with_context(|| format!("creating {}", staging.display()))?;
        let recorder = Bytes::default();
        let records: [(&str, Vec<u8>); 3] = [
            ("model.mpk", Recorder::<B>::record(&recorder, model.clone().into_record(), ())?),
            ("optimizer.mpk", Recorder::<B>::record(&recorder, optimizer.to_record(), ())?),
            ("best.mpk", Recorder::<B::InnerBackend>::record(&recorder, best.clone().into_record(), ())?),
        ];
        let mut files = Vec::new();
        for (name, bytes) in &records {
            let path = staging.join(name);
            fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
            files.push(FileSum {
                name: (*name).into(),
                sha256: hex::encode(Sha256::digest(bytes)),
                bytes: bytes.len() as u64,
            });
        }
        let done = self.dir.join(&folder);
        if done.exists() {
            fs::remove_dir_all(&done).with_context(|| format!("removing {}", done.display()))?;
        }
        fs::rename(&staging, &done).with_context(|| format!("renaming {}", staging.display()))?;
        let manifest = Manifest { format: FORMAT, state: state.clone(), files };
        let temporary = self.dir.join(format!("{MANIFEST}.partial"));
        fs::write(&temporary, serde_json::to_vec_pretty(&manifest)?)
            .with_context(|| format!("writing {}", temporary.display()))?;
        fs::rename(&temporary, self.dir.join(MANIFEST)).with_context(|| format!("renaming {}", temporary.display()))?;
        self.remove_folders_except(Some(&folder));
        Ok(())
    }

    /// The snapshot in the folder. `Ok(None)`: there is none. `Err`: there is
    /// one that cannot be used (the reason); the folder is then emptied.
    pub fn load<B, M, O>(&self, device: &B::Device) -> Result<Option<Loaded<B, M, O>>>
    where
        B: AutodiffBackend,
        M: AutodiffModule<B>,
        O: Optimizer<M, B>,
    {
        let path = self.dir.join(MANIFEST);
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let loaded = self.read::<B, M, O>(&text, device);
        if loaded.is_err() {
            self.clear();
        }
        loaded.map(Some)
    }

    fn read<B, M, O>(&self, text: &str, device: &B::Device) -> Result<Loaded<B, M, O>>
    where
        B: AutodiffBackend,
        M: AutodiffModule<B>,
        O: Optimizer<M, B>,
    {
        let manifest: Manifest = serde_json::from_str(text)
            .with_context(|| format!("{} does not parse", self.dir.join(MANIFEST).display()))?;
        if !READS.contains(&manifest.format) {
            bail!("snapshot format {} (this version reads {READS:?})", manifest.format);
        }
        let position = |text: &str| -> Result<u128> {
            text.parse().with_context(|| format!("snapshot.json: RNG position `{text}` is not a number"))
        };
        let epoch_rng_position = position(&manifest.state.epoch_rng_position)?;
        let rng_position = position(&manifest.state.rng_position)?;
        let device_position = match manifest.state.interrupted.as_ref().and_then(|i| i.device_position.as_deref()) {
            Some(text) => Some(position(text)?),
            None => None,
        };
        let folder = self.dir.join(format!("step-{}", manifest.state.step));
        let read = |name: &str| -> Result<Vec<u8>> {
            let sum = manifest
                .files
                .iter()
                .find(|f| f.name == name)
                .with_context(|| format!("snapshot.json lists no `{name}`"))?;
            let path = folder.join(name);
            let bytes = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            if bytes.len() as u64 != sum.bytes || hex::encode(Sha256::digest(&bytes)) != sum.sha256 {
                bail!("{} does not match its checksum", path.display());
            }
            Ok(bytes)
        };
        let recorder = Bytes::default();
        let model = Recorder::<B>::load(&recorder, read("model.mpk")?, device).context("model.mpk")?;
        let optimizer = Recorder::<B>::load(&recorder, read("optimizer.mpk")?, device).context("optimizer.mpk")?;
        let best = Recorder::<B::InnerBackend>::load(&recorder, read("best.mpk")?, device).context("best.mpk")?;
        Ok(Loaded { state: manifest.state, epoch_rng_position, rng_position, device_position, model, optimizer, best })
    }

    /// Removes every snapshot (the run finished, or one could not be used).
    pub fn clear(&self) {
        let _ = fs::remove_file(self.dir.join(MANIFEST));
        self.remove_folders_except(None);
    }

    fn remove_folders_except(&self, keep: Option<&str>) {
        let Ok(entries) = fs::read_dir(&self.dir) else { return };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with("step-") && Some(name.as_ref()) != keep {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A resumed run's log is the snapshot's, read back: its floats must be
    /// the ones written, bit for bit (serde_json's default parser is off by
    /// one ULP on some values, 0.20688787516397286 among them).
    #[test]
    fn the_loop_state_reads_back_bit_for_bit() {
        let awkward = 0.206_887_875_163_972_86;
        let state = LoopState {
            step: 50,
            epoch_rng_position: u128::MAX.to_string(),
            rng_position: "7".into(),
            batches_done: 3,
            best_step: 50,
            best_accuracy: awkward,
            log: vec![LogEntry {
                step: 50,
                train_loss: awkward,
                validation_accuracy: 0.52,
                marked_accuracy: None,
                unmarked_accuracy: None,
                selection: None,
            }],
            last_finite: Some(awkward),
            seen: 800,
            seconds: 1.0 / 3.0,
            validation_seconds: 0.1,
            shapes: vec![[16, 32]],
            interrupted: Some(Interrupted {
                loss_sum: awkward,
                losses: 3,
                device_seed: DeviceSeed::Step(50),
                device_position: Some(u128::MAX.to_string()),
            }),
        };
        let manifest = Manifest { format: FORMAT, state: state.clone(), files: Vec::new() };
        let text = serde_json::to_string_pretty(&manifest).unwrap();
        let back: Manifest = serde_json::from_str(&text).unwrap();
        assert_eq!(back.state, state);
        assert_eq!(back.state.best_accuracy.to_bits(), awkward.to_bits());
        // Before the first evaluation (a run stopped early): no best score yet.
        let early = LoopState { best_accuracy: f64::NEG_INFINITY, log: Vec::new(), ..state };
        let text =
            serde_json::to_string(&Manifest { format: FORMAT, state: early.clone(), files: Vec::new() }).unwrap();
        let back: Manifest = serde_json::from_str(&text).unwrap();
        assert_eq!(back.state, early);
    }

    /// A snapshot of format 1 (taken at an evaluation step, before
    /// snapshots between evaluations existed) still resumes a run; a format
    /// this version does not know does not.
    #[test]
    fn format_1_snapshots_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let state = LoopState {
            step: 250,
            epoch_rng_position: "0".into(),
            rng_position: "64".into(),
            batches_done: 250,
            best_step: 250,
            best_accuracy: 0.5,
            log: Vec::new(),
            last_finite: Some(0.69),
            seen: 16_000,
            seconds: 60.0,
            validation_seconds: 5.0,
            shapes: Vec::new(),
            interrupted: None,
        };
        for (format, readable) in [(1, true), (FORMAT, true), (FORMAT + 1, false)] {
            let manifest = Manifest { format, state: state.clone(), files: Vec::new() };
            let text = serde_json::to_string(&manifest).unwrap();
            assert!(!text.contains("interrupted"), "format 1's fields only: {text}");
            fs::write(dir.path().join(MANIFEST), text).unwrap();
            assert_eq!(Snapshots::step_in(dir.path()), readable.then_some(250), "format {format}");
        }
    }
}
