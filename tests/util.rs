//! The `gridtest` fixture: a temporary folder with a grid file, a cache and a
//! reports folder, and helpers to run the library or the `grid` binary there.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use grid_cache::Cache;
use grid_core::backend::Compute;
use grid_pipeline::dag::{self, PlanOptions, RunOptions, RunOutcome, Verbosity};
use grid_pipeline::spec::Grid;

/// A tiny grid: generated corpus, all three shortcuts, a small BiLSTM.
pub const TINY: &str = r#"
name = "tiny"
metrics = ["precision", "rank"]

[[datasets]]
name = "gen"
generated = { train = 600, validation = 150, test = 120, seed = 3 }
max_length = 48

[shortcuts]
kinds = ["st", "tic", "op"]
seed = 5

[[models]]
name = "lstm"
architecture = "bilstm"
embedding_dim = 16
hidden_size = 16
attention_size = 16
mlp_size = 16
dropout = 0.1

[models.training]
batch_size = 32
learning_rate = 0.1
max_steps = 120
eval_every = 40
patience = 80

[attribution]
methods = ["gradl-l1", "gxil", "random"]
sample = 40
"#;

/// A randomly initialised BERT small enough for a test: its size keys in a
/// grid's `[[models]]` entry (a WordPiece vocabulary learnt from the corpus).
pub const RANDOM_BERT: &str = "hidden_size = 16\nnum_hidden_layers = 1\nnum_attention_heads = 2\nintermediate_size = 32\nwordpiece_vocab_size = 200";

pub struct GridTest {
    pub dir: tempfile::TempDir,
}

impl GridTest {
    /// A fresh folder holding `grid.toml` with `text`.
    pub fn new(text: &str) -> GridTest {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("grid.toml"), text).expect("write grid");
        GridTest { dir }
    }

    /// A fresh folder whose cache already holds a full run of [`TINY`], so tests
    /// that count recomputation do not each train from scratch.
    pub fn tiny_after_first_run() -> GridTest {
        static WARM: OnceLock<PathBuf> = OnceLock::new();
        let warm = WARM.get_or_init(|| {
            let t = GridTest::new(TINY);
            let outcome = t.run();
            assert!(outcome.succeeded(), "first run failed: {:?}", outcome.failures().collect::<Vec<_>>());
            t.dir.keep()
        });
        let t = GridTest::new(TINY);
        copy_dir(&warm.join("cache"), &t.cache());
        t
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    pub fn grid_file(&self) -> PathBuf {
        self.path().join("grid.toml")
    }
    pub fn cache(&self) -> PathBuf {
        self.path().join("cache")
    }
    pub fn reports(&self) -> PathBuf {
        self.path().join("reports")
    }

    pub fn write_grid(&self, text: &str) {
        std::fs::write(self.grid_file(), text).expect("write grid");
    }

    /// Plans and runs the grid through the library.
    pub fn run(&self) -> RunOutcome {
        self.run_with(Compute::cpu())
    }

    /// [`GridTest::run`] on `compute`.
    pub fn run_with(&self, compute: Compute) -> RunOutcome {
        self.run_on(Cache::open(self.cache()).expect("cache"), compute)
    }

    /// [`GridTest::run`] with a remote cache (`--remote`) behind this folder's.
    pub fn run_with_remote(&self, remote: &str) -> RunOutcome {
        let remote = grid_cache::Remote::open(remote).expect("remote");
        self.run_on(Cache::open(self.cache()).expect("cache").with_remote(remote), Compute::cpu())
    }

    fn run_on(&self, cache: Cache, compute: Compute) -> RunOutcome {
        let grid = Grid::load(&self.grid_file()).expect("valid grid");
        // The precision goes into the keys, as `grid run --precision` plans them.
        let plan_options = PlanOptions { precision: compute.precision, ..PlanOptions::default() };
        let plan = dag::plan(&grid, &cache, &plan_options).expect("plan");
        let options = RunOptions {
            jobs: 2,
            gpu_jobs: 1,
            compute,
            verbosity: Verbosity::Quiet,
            reports_dir: Some(self.reports()),
            cache_only: false,
            worker: None,
        };
        dag::execute(&plan, &cache, &options).expect("execute")
    }

    /// Starts the `grid` binary in this folder, its stderr piped, not waiting.
    pub fn spawn_grid(&self, args: &[&str]) -> std::process::Child {
        self.spawn_grid_with(args, &[])
    }

    /// [`GridTest::spawn_grid`] with these environment variables set.
    pub fn spawn_grid_with(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Child {
        Command::new(env!("CARGO_BIN_EXE_grid"))
            .args(args)
            .envs(env.iter().copied())
            .current_dir(self.path())
            .env_remove("GRID_DATA_ROOT")
            .env_remove("GRID_CACHE")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run grid")
    }

    /// The `grid` binary in this folder, with no data root or cache from the environment.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_grid"));
        command.args(args).current_dir(self.path()).env_remove("GRID_DATA_ROOT").env_remove("GRID_CACHE");
        command
    }

    /// Runs the `grid` binary in this folder.
    pub fn grid(&self, args: &[&str]) -> std::process::Output {
        self.command(args).output().expect("run grid")
    }

    /// The keys `grid plan` gives every step, planned against the Hub at `endpoint`.
    pub fn plan_keys_on_hub(&self, endpoint: &str) -> Vec<String> {
        let out = self.grid_on_hub(endpoint, &["plan", "grid.toml", "--json"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let steps: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        steps.iter().map(|s| s["key"].as_str().unwrap().to_string()).collect()
    }

    /// [`GridTest::grid`] with these environment variables set.
    pub fn grid_with(&self, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
        self.command(args).envs(env.iter().copied()).output().expect("run grid")
    }

    /// Runs the `grid` binary in this folder against the Hub at `endpoint`
    /// (a [`serve_as_hub`] server), with no token.
    pub fn grid_on_hub(&self, endpoint: &str, args: &[&str]) -> std::process::Output {
        self.command(args).env("HF_ENDPOINT", endpoint).env_remove("HF_TOKEN").output().expect("run grid")
    }
}

pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file of a reports folder with its bytes, sorted by name: two runs'
/// tables compare byte for byte.
pub fn report_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect();
    files.sort();
    files
}

/// Serves the files of `dir` over HTTP/1.1 as the Hub does, under `prefix`
/// (`/org/name/resolve/main/`, `/datasets/org/name/resolve/<rev>/`); any
/// other path is a 404. Returns the endpoint (`HF_ENDPOINT`).
pub fn serve_as_hub(dir: &Path, prefix: &'static str) -> String {
    serve_routes(vec![(prefix.to_string(), dir.to_path_buf())])
}

/// A mock Hub serving several repositories: a request under a route's prefix
/// gets the file of that name in its folder, anything else a 404.
pub fn serve_routes(routes: Vec<(String, PathBuf)>) -> String {
    serve(move |_, path| {
        routes.iter().find_map(|(prefix, dir)| {
            let body = path.strip_prefix(prefix.as_str()).and_then(|file| std::fs::read(dir.join(file)).ok())?;
            Some((body, Vec::new()))
        })
    })
}

/// A local HTTP server answering each request (method, path) with `answer`'s
/// body and extra headers, or a 404; a HEAD gets the headers alone.
fn serve(answer: impl Fn(&str, &str) -> Option<(Vec<u8>, Vec<String>)> + Send + 'static) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = String::new();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            reader.read_line(&mut request).unwrap();
            let mut line = String::new();
            while reader.read_line(&mut line).map(|n| n > 2).unwrap_or(false) {
                line.clear();
            }
            let mut words = request.split_whitespace();
            let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
            let reply = match answer(method, path) {
                Some((body, headers)) => {
                    let extra: String = headers.iter().map(|h| format!("{h}\r\n")).collect();
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
                        body.len()
                    );
                    if method == "HEAD" { head.into_bytes() } else { [head.into_bytes(), body].concat() }
                }
                None => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
            };
            let _ = stream.write_all(&reply);
        }
    });
    address
}

/// Which commit `main` points at, and each commit's folder of files.
type Branches = std::sync::Arc<std::sync::Mutex<(String, std::collections::BTreeMap<String, PathBuf>)>>;

/// A mock Hub with branches: `main` points at a commit, each commit at a
/// folder of files; answers HEAD with `X-Repo-Commit` as the Hub does.
pub struct BranchingHub {
    pub endpoint: String,
    state: Branches,
}

impl BranchingHub {
    pub fn start(repo: &'static str) -> BranchingHub {
        let state: Branches = Default::default();
        let served = state.clone();
        let endpoint = serve(move |_, path| {
            let (main, commits) = served.lock().unwrap().clone();
            let (revision, file) = path.strip_prefix(&format!("/{repo}/resolve/"))?.split_once('/')?;
            let commit = if revision == "main" { main } else { revision.to_string() };
            let body = std::fs::read(commits.get(&commit)?.join(file)).ok()?;
            Some((body, vec![format!("X-Repo-Commit: {commit}")]))
        });
        BranchingHub { endpoint, state }
    }

    /// `main` now points at `commit`, whose files are in `dir`.
    pub fn push(&self, commit: &str, dir: &Path) {
        let mut state = self.state.lock().unwrap();
        state.0 = commit.to_string();
        state.1.insert(commit.to_string(), dir.to_path_buf());
    }
}

/// Runs `command` (a shell line) in `dir` on a pseudo-terminal (util-linux's
/// `script`), typing `answer`; its exit code and all it showed (`script` passes
/// stdout and stderr through its own stdout). `None` without `script`, which CI
/// must have.
pub fn on_a_terminal(dir: &Path, command: &str, env: &[(&str, &str)], answer: &str) -> Option<(Option<i32>, String)> {
    use std::io::Write;
    if Command::new("script").arg("--version").output().is_err() {
        assert!(std::env::var_os("CI").is_none(), "CI needs util-linux's `script` for this test");
        eprintln!("skipped: no `script` (util-linux) for a pseudo-terminal");
        return None;
    }
    let mut child = Command::new("script")
        .args(["-qec", command, "/dev/null"])
        .current_dir(dir)
        .envs(env.iter().copied())
        .env_remove("SLURM_JOB_ID")
        .env_remove("HF_TOKEN")
        .env_remove("HF_HUB_OFFLINE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("script");
    child.stdin.take().unwrap().write_all(answer.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    Some((out.status.code(), String::from_utf8_lossy(&out.stdout).into_owned()))
}

/// A CSV file the report wrote, every column read as text.
pub fn read_csv(path: &Path) -> polars::prelude::DataFrame {
    use polars::prelude::*;
    CsvReadOptions::default()
        .with_infer_schema_length(Some(0))
        .try_into_reader_with_file_path(Some(path.to_path_buf()))
        .and_then(|r| r.finish())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}
