//! What a grid reads from the Hugging Face Hub (dataset files, checkpoints),
//! and the one error a run without the Hub gets before any step runs: every
//! file it would have fetched, and how to give it local copies instead.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::spec::Grid;
use grid_core::model::hub::{CheckpointSource, HubFile};

/// One file or checkpoint of the Hub that a grid names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubInput {
    /// What reads it, as a `--set` key: `datasets.sst2.train`, `models.bert.checkpoint`.
    pub key: String,
    /// The `hf://` reference as the grid writes it.
    pub reference: String,
    /// Whether the cache already holds it (then no network is needed for it).
    pub cached: bool,
}

/// Every Hub reference of `grid`, in the grid's order, and whether the cache
/// under `cache_root` holds it.
pub fn hub_inputs(grid: &Grid, cache_root: &Path) -> Vec<HubInput> {
    let mut inputs = Vec::new();
    for dataset in &grid.datasets {
        for (split, file) in dataset.split_files() {
            let Some(address) = file.hub_address() else { continue };
            // An address that does not parse is the plan's error to report.
            let cached = address.parse::<HubFile>().is_ok_and(|f| f.dir(cache_root).is_dir());
            inputs.push(HubInput {
                key: format!("datasets.{}.{split}", dataset.name),
                reference: address.to_string(),
                cached,
            });
        }
    }
    for model in &grid.models {
        let Some(checkpoint) = model.architecture.hub_checkpoint() else { continue };
        let cached = checkpoint.parse::<CheckpointSource>().is_ok_and(|s| s.dir(cache_root).is_dir());
        inputs.push(HubInput {
            key: format!("models.{}.checkpoint", model.name),
            reference: checkpoint.to_string(),
            cached,
        });
    }
    inputs
}

/// The Hub cannot be reached (`HF_HUB_OFFLINE`, or no network) and the
/// cache lacks files the grid needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreachable {
    pub grid: PathBuf,
    /// `HF_HUB_OFFLINE is set`, or the network error of the first request.
    pub why: String,
    pub missing: Vec<HubInput>,
}

impl Unreachable {
    /// The error for `grid` when the Hub is unreachable for `why`, if the cache
    /// lacks anything the grid names there.
    pub fn check(grid: &Grid, cache_root: &Path, why: &str) -> Option<Unreachable> {
        let missing: Vec<HubInput> = hub_inputs(grid, cache_root).into_iter().filter(|i| !i.cached).collect();
        (!missing.is_empty()).then(|| Unreachable { grid: grid.path.clone(), why: why.to_string(), missing })
    }
}

impl fmt::Display for Unreachable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{}: the Hugging Face Hub cannot be reached ({}), and the cache lacks {} of the grid's files:",
            self.grid.display(),
            self.why,
            self.missing.len()
        )?;
        for input in &self.missing {
            writeln!(f, "  {:<28} {}", input.key, input.reference)?;
        }
        write!(
            f,
            "Nothing was run. Run it where the Hub is reachable once (the files are cached), or give local copies:"
        )?;
        if self.missing.iter().any(|i| i.key.starts_with("datasets.")) {
            write!(
                f,
                "\n  datasets:    --with experiments/data/local.toml --data-root DIR (SST-2 and IMDB as \
                 DIR/sst2/*.parquet, DIR/imdb/*.parquet), or --set datasets.NAME.SPLIT=FILE"
            )?;
        }
        if self.missing.iter().any(|i| i.key.starts_with("models.")) {
            write!(
                f,
                "\n  checkpoints: --set models.NAME.checkpoint=DIR (a folder with config.json, model.safetensors and the tokenizer)"
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for Unreachable {}

#[cfg(test)]
mod tests {
    use super::*;

    const GRID: &str = r#"
[[datasets]]
name = "sst2"
train = { file = "hf://datasets/stanfordnlp/sst2@c0ffee/data/train.parquet", sha256 = "c7921283b75a42e685f50edecb96798607ea0fcbfd0739ee8975f22c12d55f09" }
test = "local/test.parquet"

[[models]]
name = "bert"
architecture = "bert"
checkpoint = "hf://google-bert/bert-base-uncased@86b5e09"

[[models]]
name = "lstm"
architecture = "bilstm"

[attribution]
methods = ["random"]
"#;

    #[test]
    fn the_error_lists_every_file_the_cache_lacks_and_the_local_alternatives() {
        let grid = Grid::parse(GRID, Path::new("grids/g.toml")).unwrap();
        let cache = tempfile::tempdir().unwrap();
        let inputs = hub_inputs(&grid, cache.path());
        assert_eq!(
            inputs.iter().map(|i| (i.key.as_str(), i.cached)).collect::<Vec<_>>(),
            [("datasets.sst2.train", false), ("models.bert.checkpoint", false)]
        );
        let err = Unreachable::check(&grid, cache.path(), "HF_HUB_OFFLINE is set").unwrap().to_string();
        assert!(
            err.starts_with("grids/g.toml: the Hugging Face Hub cannot be reached (HF_HUB_OFFLINE is set)"),
            "{err}"
        );
        let line = |key: &str, reference: &str| format!("  {key:<28} {reference}\n");
        for needed in [
            &line("datasets.sst2.train", "hf://datasets/stanfordnlp/sst2@c0ffee/data/train.parquet"),
            &line("models.bert.checkpoint", "hf://google-bert/bert-base-uncased@86b5e09"),
            "--with experiments/data/local.toml --data-root DIR",
            "--set models.NAME.checkpoint=DIR",
        ] {
            assert!(err.contains(needed), "{needed}\n{err}");
        }
        // What the cache holds needs no network.
        let file: HubFile = "hf://datasets/stanfordnlp/sst2@c0ffee/data/train.parquet".parse().unwrap();
        std::fs::create_dir_all(file.dir(cache.path())).unwrap();
        let source: CheckpointSource = "hf://google-bert/bert-base-uncased@86b5e09".parse().unwrap();
        std::fs::create_dir_all(source.dir(cache.path())).unwrap();
        assert_eq!(Unreachable::check(&grid, cache.path(), "offline"), None);
    }
}
