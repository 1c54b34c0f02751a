//! The command line's words: subcommands, their options and their help.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "grid",
    version,
    about = "Declarative experiment grids for evaluating input-salience methods on shortcut-trained classifiers"
)]
pub struct Cli {
    #[command(subcommand)]
    pub(super) command: Command,
}

#[derive(Debug, Subcommand)]
pub(super) enum Command {
    /// Plan the grid, run every step the cache lacks, write the reports.
    Run {
        #[command(flatten)]
        common: Common,
        /// Where steps run: `local` (this machine), or `slurm` (every missing
        /// step as a task of a Slurm job array over the shared cache; see the
        /// grid's `[slurm]` table).
        #[arg(long, default_value = "local")]
        executor: ExecutorChoice,
        /// With `--executor slurm`: follow the jobs until they end, then write
        /// the reports (without it, `grid run` returns after submitting).
        #[arg(long)]
        wait: bool,
        /// Start without asking, however long the estimate. On a terminal, a
        /// run predicted to take over a day on its device asks first; scripts
        /// (no terminal) and Slurm jobs are never asked.
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Resolve the grid's Hub references that name no commit (a branch, a
    /// tag, `main`) to their commit and each file's size and sha256, and write
    /// them to the lock file beside the grid (`bert_sweep.lock`), anew.
    Lock {
        #[command(flatten)]
        common: Common,
    },
    /// Show every step: cached, or why it will run.
    Plan {
        #[command(flatten)]
        common: Common,
        /// One JSON object per step (label, kind, key, state and its details), as an array.
        #[arg(long)]
        json: bool,
        /// Predict the time the missing steps take on this CPU and on a GPU,
        /// and the disk they add, from what this cache has measured and the
        /// cost model (docs/commands.md, "Before a long run"). With `--json`, as one object.
        #[arg(long)]
        estimate: bool,
    },
    /// Where every step stands: cached, running (another process holds its
    /// lock), failed (the error and the log of the last attempt), damaged, or
    /// missing (and why it would run).
    Status {
        #[command(flatten)]
        common: Common,
        /// One JSON object per step, as an array.
        #[arg(long)]
        json: bool,
    },
    /// Everything about one step: its state, parameters, inputs, files, and
    /// why it would run.
    Show {
        #[command(flatten)]
        common: Common,
        /// The step's label (`train/sst2/st/lstm`) or the start of its key
        /// (at least 6 hex digits, as `grid plan` prints 12).
        step: String,
        /// As one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Bring every step of the grid that the remote cache (`--remote`) holds
    /// and the local cache lacks down now (a run pulls only what it reads).
    Pull {
        #[command(flatten)]
        common: Common,
    },
    /// Re-render the tables from the cache only; computes nothing else.
    Report {
        #[command(flatten)]
        common: Common,
        /// Published numbers to set beside ours, cell by cell, with which
        /// findings hold (e.g. experiments/reference/bastings2022_precision_rank.csv).
        /// Repeatable.
        #[arg(long)]
        compare: Vec<PathBuf>,
        /// Compare our dataset OURS with the published PUBLISHED, e.g.
        /// `--compare-as generated=sst2`. Repeatable.
        #[arg(long, value_name = "OURS=PUBLISHED")]
        compare_as: Vec<String>,
    },
    /// Time attribution methods on the grid's trained shortcut models (from the
    /// cache): attributions per second, with date, commit and machine.
    Bench {
        #[command(flatten)]
        common: Common,
        /// Method configs to time, comma-separated (default: the grid's own).
        #[arg(long, value_delimiter = ',')]
        methods: Option<Vec<String>>,
        /// Timed examples per model and method.
        #[arg(long, default_value_t = 64)]
        examples: usize,
        /// Only models whose train step label contains this, e.g. `/st/`.
        #[arg(long)]
        only: Option<String>,
        /// Also write the rows and their context as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Overrides the grid's `internal_batch_size` (IG steps / SmoothGrad copies per pass).
        #[arg(long)]
        internal_batch_size: Option<usize>,
        /// Overrides the grid's `perturbations_per_eval` (LIME / KernelSHAP / occlusion).
        #[arg(long)]
        perturbations_per_eval: Option<usize>,
        /// Write every timed example (token ids, prediction, scores) as JSON lines
        /// here, for `scripts/captum_bench.py` to explain the same inputs.
        #[arg(long)]
        dump: Option<PathBuf>,
        /// Instead of methods: a roofline of the dense products (GEMMs) of the
        /// grid's models, grid's path beside single matmuls, torch's `F.linear`
        /// (when `--python` has torch) and the machine's measured ceiling.
        #[arg(long)]
        gemm: bool,
        /// With `--gemm`: tokens per example (padded) in every batch.
        #[arg(long, default_value_t = 32, requires = "gemm")]
        tokens: usize,
        /// Instead of methods: images per second of the grid's ResNets (its
        /// `[images]` models at its side) training, evaluating and taking input
        /// gradients, beside PyTorch's on the same shapes (when `--python` has
        /// torch and torchvision).
        #[arg(long, conflicts_with = "gemm")]
        resnet: bool,
        /// With `--resnet`: time grid, then torch, this many times in turn
        /// and report the medians (each ratio the median of the sittings'
        /// own), with every sitting's ratios: on a shared machine whose
        /// speed drifts between minutes, one sitting's ratio is not the
        /// kernels' alone.
        #[arg(long, default_value_t = 1, requires = "resnet", value_parser = clap::value_parser!(u32).range(1..=100))]
        sittings: u32,
        /// With `--gemm` or `--resnet`: the Python whose torch is timed on the
        /// same shapes; `none` skips it.
        #[arg(long, default_value = "python3")]
        python: String,
    },
    /// Remove cached steps that none of the given grids plans (as `grid run`
    /// would plan them, under either precision), and/or that finished before
    /// `--older-than`; compiled GPU kernels stay unless `--kernels` is given.
    /// Steps being computed are left alone, and so is every frozen grid text
    /// a run used in the last seven days.
    Gc {
        /// Grid files whose steps are kept.
        #[arg(required_unless_present = "older_than")]
        grids: Vec<PathBuf>,
        /// Also remove steps finished before this date (`2026-11-01`, UTC) or
        /// this many days ago (`30d`), whether a grid plans them or not.
        #[arg(long, value_name = "DATE|Nd")]
        older_than: Option<String>,
        /// Cache folder, or an object store's URL (as `--remote`, with a
        /// working copy under `~/.cache/grid/remotes/`).
        #[arg(long, default_value = "cache", env = "GRID_CACHE")]
        cache: PathBuf,
        /// Also collect this remote cache (`s3://…`, `gs://…`, `az://…`, a
        /// folder): the records and payloads no grid plans, and uploads no
        /// record names that are over a day old.
        #[arg(long, env = "GRID_REMOTE", value_name = "URL")]
        remote: Option<String>,
        /// Folder relative data paths resolve against (default: each grid file's folder).
        #[arg(long, env = "GRID_DATA_ROOT")]
        data_root: Option<PathBuf>,
        /// Overrides applied to every grid, as for `grid run` (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
        /// Say what would be removed; remove nothing.
        #[arg(long)]
        dry_run: bool,
        /// Also remove `<cache>/kernels/` (compiled GPU kernels and autotune results).
        #[arg(long)]
        kernels: bool,
    },
    /// The findings ledger: every finding of the papers that `--compare`
    /// checks, over these grids' cached reports, per paper: holds, fails or
    /// undecided (a finding that rests on a model that failed verification is
    /// undecided, never holds), with the numbers it rests on. Also written to
    /// `<reports>/ledger.md`.
    Ledger {
        /// Grid files whose reports are read (run them first).
        #[arg(required = true)]
        grids: Vec<PathBuf>,
        /// Published numbers to check against (repeatable). Default: every
        /// CSV in `reference/` beside the first grid file
        /// (`experiments/reference/`).
        #[arg(long, value_name = "FILE")]
        compare: Vec<PathBuf>,
        /// Compare our dataset OURS with the published PUBLISHED, e.g. `sst2=SST`.
        #[arg(long = "compare-as", value_name = "OURS=PUBLISHED")]
        compare_as: Vec<String>,
        /// Answers to the first grid's crowd study (`grid crowd export`, then
        /// people or `grid crowd simulate`): Lu et al.'s findings join the ledger.
        #[arg(long, value_name = "ANSWERS")]
        crowd: Option<PathBuf>,
        /// The study the answers are to (default: `<reports>/<first grid>/crowd/study`).
        #[arg(long, value_name = "DIR", requires = "crowd")]
        study: Option<PathBuf>,
        #[arg(long, default_value = "cache", env = "GRID_CACHE")]
        cache: PathBuf,
        #[arg(long, env = "GRID_REMOTE", value_name = "URL")]
        remote: Option<String>,
        /// Folder the ledger is written to.
        #[arg(long, default_value = "reports")]
        reports: PathBuf,
        /// Folder relative data paths resolve against (default: each grid file's folder).
        #[arg(long, env = "GRID_DATA_ROOT")]
        data_root: Option<PathBuf>,
        /// A grid fragment written over every grid, as for `grid run` (repeatable).
        #[arg(long = "with", value_name = "FILE")]
        with: Vec<PathBuf>,
        /// Overrides applied to every grid, as for `grid run` (repeatable).
        #[arg(long = "set", value_name = "KEY=VALUE")]
        set: Vec<String>,
    },
    /// Lu et al.'s crowd study: export the tasks for people, import their answers.
    Crowd {
        #[command(subcommand)]
        command: CrowdCommand,
    },
    /// Run the one step with this key (what `run` starts for each model step
    /// when `--jobs` > 1; also the unit of work for a cluster scheduler).
    #[command(hide = true)]
    Step {
        #[command(flatten)]
        common: Common,
        /// The step's key (64 hex digits, as `grid plan` shows its first 12);
        /// repeatable: the steps run one after the other.
        #[arg(long, required = true)]
        key: Vec<String>,
    },
}

/// `grid crowd …`.
#[derive(Debug, Subcommand)]
pub(super) enum CrowdCommand {
    /// Write a study from the grid's cached attributions: `study.json`,
    /// `questionnaire.html` (self-contained, one task at a time) and
    /// `tasks.csv` (a platform's import layout), with attention checks.
    Export {
        #[command(flatten)]
        common: Common,
        /// Folder for the study (default: `<reports>/<grid name>/crowd/study`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Models to explain, comma-separated (default: every model).
        #[arg(long, value_delimiter = ',')]
        models: Vec<String>,
        /// Method configs, comma-separated (default: the grid's).
        #[arg(long, value_delimiter = ',')]
        methods: Vec<String>,
        /// Top-k settings, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "5,10,20,30,40")]
        k: Vec<usize>,
        /// Examples per model cell, balanced over the labels.
        #[arg(long, default_value_t = 100)]
        examples: usize,
        /// Answers collected per task.
        #[arg(long, default_value_t = 5)]
        answers: usize,
        /// Attention checks per batch.
        #[arg(long, default_value_t = 2)]
        checks: usize,
        /// Salience tasks per batch at most: what one person answers (Lu et al.: 100).
        #[arg(long, default_value_t = 100)]
        batch_size: usize,
        /// Seed of the example choice and the dealing into batches.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Label names, comma-separated (default: the dataset's `label_names`).
        #[arg(long, value_delimiter = ',')]
        labels: Vec<String>,
    },
    /// Answer the study with simulated workers: the explained model reads only
    /// the shown words and draws a label from its softmax ("don't know" near
    /// chance). Writes an answers file for `grid crowd import`, which labels
    /// every table as simulated.
    Simulate {
        #[command(flatten)]
        common: Common,
        /// The study (its folder or `study.json`; default: where export writes it).
        #[arg(long)]
        study: Option<PathBuf>,
        /// The answers file to write (default: `<study folder>/../simulated-answers.csv`).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Seed of the simulated workers' draws.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// "Don't know" when the drawn label's probability is below 1/C + this.
        #[arg(long, default_value_t = 0.1)]
        unsure_margin: f64,
    },
    /// Score a platform's answers (CSV: worker, task, answer) against the
    /// study: Lu et al.'s accuracy per k, score, Flips and Aids, and the
    /// attention checks per worker.
    Import {
        #[command(flatten)]
        common: Common,
        /// The answers file.
        answers: PathBuf,
        /// The study (its folder or `study.json`; default: where export writes it).
        #[arg(long)]
        study: Option<PathBuf>,
        /// Leave out every answer of a worker who failed an attention check.
        #[arg(long)]
        exclude_failed_checks: bool,
        /// Lu et al.'s published accuracies to set beside ours, with which
        /// findings hold (experiments/reference/lu2024_crowd_accuracy.csv).
        #[arg(long)]
        compare: Option<PathBuf>,
        /// Compare our dataset OURS with the published PUBLISHED, e.g. `sst2=imdb`.
        #[arg(long, value_name = "OURS=PUBLISHED")]
        compare_as: Vec<String>,
    },
}

/// `grid run --executor`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum ExecutorChoice {
    Local,
    Slurm,
}

#[derive(Debug, Args)]
pub(super) struct Common {
    /// The grid file (TOML).
    pub(super) grid: PathBuf,
    /// Cache folder, or an object store's URL (`s3://bucket/prefix`,
    /// `gs://…`, `az://…`): then that store is the cache, as `--remote`, with
    /// a working copy under `~/.cache/grid/remotes/`.
    #[arg(long, default_value = "cache", env = "GRID_CACHE")]
    pub(super) cache: PathBuf,
    /// A remote cache behind the local one, shared by machines without a
    /// common filesystem: `s3://bucket/prefix`, `gs://bucket/prefix`,
    /// `az://container/prefix`, or a folder. Steps the local cache lacks are
    /// pulled from it (only those a step that runs reads, and the report);
    /// steps computed are published to it. Credentials and endpoints come from
    /// each store's environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`).
    #[arg(long, env = "GRID_REMOTE", value_name = "URL")]
    pub(super) remote: Option<String>,
    /// Folder the report tables are written to (under `<grid name>/`).
    #[arg(long, default_value = "reports")]
    pub(super) reports: PathBuf,
    /// Folder relative data paths resolve against (default: the grid file's folder).
    #[arg(long, env = "GRID_DATA_ROOT")]
    pub(super) data_root: Option<PathBuf>,
    /// `auto`, `cpu`, or `cuda` / `cuda:N` in builds with the `cuda` or
    /// `libtorch` feature. `auto`: the GPU when this build has a GPU backend,
    /// the machine a GPU, and the grid a model large enough to pay for it
    /// (`backend::placement`), else the CPU; the run says which and why.
    #[arg(long, default_value = "auto")]
    pub(super) device: String,
    /// What computes: `flex` (burn's CPU backend), `cubecl` (burn-cuda, feature
    /// `cuda`) or `libtorch` (PyTorch's kernels, CPU or CUDA, feature `libtorch`).
    /// Default: flex on CPU; on CUDA libtorch when built in, else cubecl.
    #[arg(long, default_value = "auto")]
    pub(super) backend: String,
    /// `f32`; `bf16-mixed` with `--backend libtorch` (f32 weights and
    /// optimizer state, bf16 products and attention inside the fused blocks, as
    /// PyTorch's autocast); or `bf16` on CUDA (bf16 weights and activations).
    #[arg(long, default_value = "f32")]
    pub(super) precision: String,
    /// Padding of batch shapes before they reach a model: `exact`, or a length
    /// multiple N (lengths to multiples of N, batches to powers of two, so a GPU
    /// compiles kernels for a handful of shapes). Default: exact on CPU, 16 on CUDA.
    #[arg(long, default_value = "auto")]
    pub(super) shape_buckets: String,
    /// CUDA: how hard cubecl searches for the fastest kernel of each new shape
    /// (minimal, balanced, extensive, full). Results are kept under
    /// `<cache>/kernels/`, so each shape is tuned once per device.
    #[arg(long, default_value = "balanced")]
    pub(super) autotune: String,
    /// Changes a key of the grid file, as if written there (repeatable):
    /// `models.bert.checkpoint=DIR`, `datasets.sst2.limits.train=8000`. An
    /// entry of `[[models]]` or `[[datasets]]` is named by its `name`.
    /// `~KEY` deletes a key or an entry: `~datasets.imdb`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub(super) set: Vec<String>,
    /// A grid fragment written over the grid before any `--set`, one key at a
    /// time (repeatable): `[[datasets]]` entries by `name`, left out where the
    /// grid has no such entry. `experiments/data/local.toml` reads SST-2 and
    /// IMDB from local copies under `--data-root` instead of the Hub.
    #[arg(long = "with", value_name = "FILE")]
    pub(super) with: Vec<PathBuf>,
    /// Resolve the grid's Hub references that name no commit anew and
    /// rewrite its lock file (`grid lock`); without it, the lock is read.
    #[arg(long)]
    pub(super) update_lock: bool,
    /// Workers only: plan from this frozen grid text (the run's, in
    /// `<cache>/grids/`), read as if it were GRID, instead of the file.
    #[arg(long, hide = true, value_name = "FILE")]
    pub(super) frozen: Option<PathBuf>,
    /// Steps run at the same time (default: the number of CPU cores).
    #[arg(long, short = 'j')]
    pub(super) jobs: Option<usize>,
    /// CUDA: model steps (train, verify, attribute, erasure) sharing the GPU at
    /// once, each in its own process and CUDA context. Small models are bound by
    /// kernel-launch latency and leave the GPU idle (the quickstart's showed 0%
    /// utilisation on an H200), so a few at once fill it; large ones want 1.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    pub(super) gpu_jobs: u16,
    /// Print only the tables and errors.
    #[arg(long, short = 'q', conflicts_with = "verbose")]
    pub(super) quiet: bool,
    /// Print more about each step.
    #[arg(long, short = 'v')]
    pub(super) verbose: bool,
}
