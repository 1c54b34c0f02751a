//! The `grid` binary: commands, output and exit codes.

use crate::util::{GridTest, TINY};
use grid_pipeline::step_kind::StepKind;
use std::collections::HashSet;

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn bad_toml_exits_2_naming_file_line_and_column() {
    let t = GridTest::new(&TINY.replace("dropout = 0.1", "dropout = 0.1\ndropuot = 0.2"));
    let out = t.grid(&["run", "grid.toml", "-q"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("grid.toml:22:1: unknown field `dropuot`"), "{err}");
    assert!(!t.cache().join("train").exists(), "nothing runs on a bad grid");
}

#[test]
fn missing_data_file_exits_2_and_says_where_it_looked() {
    let t = GridTest::new(&TINY.replace(
        "generated = { train = 600, validation = 150, test = 120, seed = 3 }",
        "train = \"nowhere/train.parquet\"\ntest = \"nowhere/test.parquet\"",
    ));
    let out = t.grid(&["plan", "grid.toml", "--data-root", "/data"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("/data/nowhere/train.parquet: file not found"), "{err}");
}

#[test]
fn usage_errors_exit_2() {
    let t = GridTest::new(TINY);
    assert_eq!(t.grid(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(t.grid(&["run", "grid.toml", "--device", "tpu"]).status.code(), Some(2));
    assert_eq!(t.grid(&["run", "absent.toml"]).status.code(), Some(2));
    // No GPU here: CUDA is a sentence (no CUDA in this build, or no driver), not a panic.
    let out = t.grid(&["run", "grid.toml", "--device", "cuda"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("cuda") && !err.contains("panicked"), "{err}");
    let out = t.grid(&["run", "grid.toml", "--precision", "bf16"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--precision bf16 needs --device cuda"));
    // Backends: an unknown name, a CPU-only backend on CUDA, one not built in.
    let out = t.grid(&["run", "grid.toml", "--backend", "torch"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--backend: unknown backend `torch`"), "{}", text(&out.stderr));
    let out = t.grid(&["run", "grid.toml", "--backend", "flex", "--device", "cuda"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("runs on the CPU only"), "{}", text(&out.stderr));
    if !cfg!(feature = "libtorch") {
        let out = t.grid(&["run", "grid.toml", "--backend", "libtorch"]);
        assert_eq!(out.status.code(), Some(2));
        assert!(text(&out.stderr).contains("--features libtorch"), "{}", text(&out.stderr));
    }
    // `bench --resnet` on a grid without ResNets names the file.
    let out = t.grid(&["bench", "grid.toml", "--resnet", "--python", "none"]);
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(err.contains("grid.toml") && err.contains("`[images]`"), "{err}");
}

/// `--set` is the file edited: the plan with an override is the plan of the file
/// with that value written in, key for key, and a bad override is named.
#[test]
fn set_overrides_are_the_file_edited() {
    let t = GridTest::tiny_after_first_run();
    let out = t.grid(&["plan", "grid.toml", "--set", "models.lstm.training.max_steps=130"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let with_set = text(&out.stdout);
    assert!(with_set.lines().any(|l| l.starts_with("run ")), "{with_set}");
    t.write_grid(&TINY.replace("max_steps = 120", "max_steps = 130"));
    assert_eq!(with_set, text(&t.grid(&["plan", "grid.toml"]).stdout));

    t.write_grid(TINY);
    let refused = |setting: &str, expected: &str| {
        let out = t.grid(&["plan", "grid.toml", "--set", setting]);
        assert_eq!(out.status.code(), Some(2), "{setting}");
        let err = text(&out.stderr);
        assert!(err.contains(&format!("--set {setting}")) && err.contains(expected), "{setting}: {err}");
    };
    refused("models.lstm.training.max_steps=-5", "max_steps");
    refused("models.gru.dropout=0.1", "no `models` entry named `gru` (it has: lstm)");
    refused(r#"attribution.methods=["gradl-l9"]"#, "gradl-l9");
    refused("models.lstm.trainig.max_steps=10", "trainig");
    // An error in the file itself still names the file's line, overrides or not.
    t.write_grid(&TINY.replace("learning_rate = 0.1", "learning_rate = -0.1"));
    let out = t.grid(&["plan", "grid.toml", "--set", "models.lstm.dropout=0.2"]);
    assert_eq!(out.status.code(), Some(2));
    let line = TINY.lines().position(|l| l.starts_with("learning_rate")).unwrap() + 1;
    assert!(text(&out.stderr).contains(&format!("grid.toml:{line}:")), "{}", text(&out.stderr));
}

#[test]
fn plan_says_what_is_cached_and_why_the_rest_runs() {
    let t = GridTest::tiny_after_first_run();
    let out = t.grid(&["plan", "grid.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let plan = text(&out.stdout);
    assert!(plan.lines().filter(|l| l.starts_with("cached")).count() == 39, "{plan}");

    t.write_grid(&TINY.replace("max_steps = 120", "max_steps = 130"));
    let plan = text(&t.grid(&["plan", "grid.toml"]).stdout);
    let line = |label: &str| {
        plan.lines()
            .find(|l| l.contains(&format!("  {label}  (")))
            .unwrap_or_else(|| panic!("{label}:\n{plan}"))
            .to_string()
    };
    assert!(line("train/gen/st/lstm").contains("parameter `training.max_steps` changed from 120 to 130"), "{plan}");
    assert!(line("verify/gen/st/lstm").contains("input `train/gen/st/lstm` changed"), "{plan}");
    assert!(line("corpus/gen").starts_with("cached"), "{plan}");
    assert!(line("synth/gen/op").starts_with("cached"), "{plan}");
}

/// `GRID_BLAS=auto`: the first `plan` times the libraries it is given
/// against `gemm` and says what it chose; the next reads the choice back
/// for this machine instead of measuring again. (Against Debian's OpenBLAS
/// where installed, as in CI; a candidate that is not there is skipped.)
#[test]
fn grid_blas_auto_measures_once_and_says_what_it_chose() {
    let t = GridTest::new(TINY);
    let memory = t.path().join("blas-choice.tsv");
    let openblas = "/usr/lib/x86_64-linux-gnu/libopenblas.so.0";
    let candidates = format!("{}:{openblas}", t.path().join("no/libmkl_rt.so.2").display());
    let plan = || {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_grid"))
            .args(["plan", "grid.toml"])
            .current_dir(t.path())
            .env("GRID_BLAS", "auto")
            .env("GRID_BLAS_CANDIDATES", &candidates)
            .env("GRID_BLAS_MEMORY", &memory)
            .output()
            .expect("run grid");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let stderr = text(&out.stderr);
        stderr
            .lines()
            .find(|l| l.starts_with("note: GRID_BLAS=auto: "))
            .unwrap_or_else(|| panic!("{stderr}"))
            .to_owned()
    };
    let first = plan();
    assert!(first.ends_with(&format!("measured now, remembered in {}", memory.display())), "{first}");
    let chosen = first.split(';').next().unwrap();
    assert!(std::fs::read_to_string(&memory).unwrap().lines().count() == 1);
    let second = plan();
    assert!(second.contains("as measured before on this machine"), "{second}");
    assert_eq!(second.split(';').next().unwrap().split(" (").next(), chosen.split(" (").next(), "the same choice");
}

/// `--device auto` (the default) says where the run goes and why: on a
/// machine (or a build) without a GPU, the CPU.
#[test]
fn plan_says_where_device_auto_puts_the_grid() {
    let t = GridTest::new(TINY);
    let out = t.grid(&["plan", "grid.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let line = stderr.lines().find(|l| l.starts_with("device: ")).unwrap_or_else(|| panic!("{stderr}"));
    assert!(line.starts_with("device: cpu (--device auto: no GPU to use ("), "{line}");
    let explicit = t.grid(&["plan", "grid.toml", "--device", "cpu"]);
    assert!(!text(&explicit.stderr).contains("device: "), "an explicit device needs no reason");

    // A run records each trained shape's rate on the device kind it ran on.
    let ran = GridTest::tiny_after_first_run();
    let records: Vec<_> = std::fs::read_dir(ran.cache().join("placement")).expect("rates recorded").collect();
    assert!(!records.is_empty());
    for record in records {
        let text = std::fs::read_to_string(record.unwrap().path()).unwrap();
        let rates: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(rates["cpu"].as_f64().is_some_and(|r| r > 0.0) && rates["cuda"].is_null(), "{text}");
    }
}

#[test]
fn report_renders_from_the_cache_only() {
    let empty = GridTest::new(TINY);
    let out = empty.grid(&["report", "grid.toml", "-q"]);
    assert_eq!(out.status.code(), Some(2), "nothing cached: nothing to report");
    assert!(text(&out.stderr).contains("not in the cache"), "{}", text(&out.stderr));
    assert!(!empty.cache().join("train").exists(), "report never trains");

    let t = GridTest::tiny_after_first_run();
    std::fs::remove_dir_all(t.cache().join("report")).unwrap();
    let out = t.grid(&["report", "grid.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("gradl-l1") && stdout.contains("gen:tic"), "{stdout}");
    assert!(text(&out.stderr).contains("1 ran"), "{}", text(&out.stderr));
    assert!(t.reports().join("tiny/lstm_rank.md").is_file());
}

#[test]
fn report_compares_with_published_numbers() {
    let t = GridTest::tiny_after_first_run();
    let reference = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/reference/bastings2022_precision_rank.csv");
    let out = t.grid(&["report", "grid.toml", "-q", "--compare", reference, "--compare-as", "gen=sst2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("bastings2022_precision_rank.csv"), "{stdout}");
    // gradl-l1, gxil and random on st/tic/op match published SST-2 cells.
    let md = std::fs::read_to_string(t.reports().join("tiny/compare_bastings2022_precision_rank.md")).unwrap();
    assert!(md.contains("gxil") && md.contains("random"), "{md}");
    let csv = std::fs::read_to_string(t.reports().join("tiny/compare_bastings2022_precision_rank.csv")).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(header.contains("ours") && header.contains("published") && header.contains("difference"), "{header}");
    // 3 methods × 3 shortcuts × (precision, rank).
    assert_eq!(csv.lines().count(), 1 + 18, "{csv}");

    // A malformed published file: exit 2, naming the file and line.
    std::fs::write(t.path().join("bad.csv"), "arch,method,dataset,shortcut,precision,rank\nlstm,gxil,sst2,st,high,1\n")
        .unwrap();
    let out = t.grid(&["report", "grid.toml", "-q", "--compare", "bad.csv"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("bad.csv:2"), "{}", text(&out.stderr));
    let out = t.grid(&["report", "grid.toml", "-q", "--compare", reference, "--compare-as", "gen"]);
    assert_eq!(out.status.code(), Some(2), "an alias without `=`");
}

#[test]
fn second_run_of_the_binary_reports_everything_cached() {
    let t = GridTest::tiny_after_first_run();
    let out = t.grid(&["run", "grid.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("39 steps: 0 ran, 39 cached, 0 failed"), "{}", text(&out.stderr));
}

#[test]
fn parallel_run_uses_worker_processes_and_matches_in_process_results() {
    let grid = TINY.replace("kinds = [\"st\", \"tic\", \"op\"]", "kinds = [\"st\"]");
    let t = GridTest::new(&grid);
    let out = t.grid(&["run", "grid.toml", "-j", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("ran train/gen/st/lstm"), "{}", text(&out.stderr));
    // The same grid in one process (library, threads) finds every step already cached:
    // worker processes published under the same keys.
    let outcome = t.run();
    assert_eq!(outcome.executed().count(), 0);
}

#[test]
fn a_bad_data_file_fails_its_branch_only_and_names_the_row() {
    let t = GridTest::new(&TINY.replace(
        "[shortcuts]",
        "[[datasets]]\nname = \"broken\"\ntrain = \"train.csv\"\ntest = \"test.csv\"\nmax_length = 48\n\n[shortcuts]\nkinds = [\"st\"]",
    ).replace("kinds = [\"st\", \"tic\", \"op\"]\n", ""));
    std::fs::write(t.path().join("train.csv"), "text,label\na fine film,1\na dull film,-1\n").unwrap();
    std::fs::write(t.path().join("test.csv"), "text,label\ngood,1\n").unwrap();
    let out = t.grid(&["run", "grid.toml", "-j", "1"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("corpus/broken failed") && err.contains("train.csv") && err.contains("row 2"), "{err}");
    // The healthy dataset's branch completed and stays cached.
    let plan = text(&t.grid(&["plan", "grid.toml"]).stdout);
    assert!(plan.lines().any(|l| l.starts_with("cached") && l.contains("  verify/gen/st/lstm  (")), "{plan}");
}

/// `grid gc` keeps what the grid plans and removes what an edit of it left
/// behind: after a new attribution sample, the old attribution and score steps
/// go, the models stay, and the grid still plans everything as cached.
#[test]
fn gc_removes_what_the_grid_no_longer_plans() {
    let t = GridTest::tiny_after_first_run();
    let steps = |kind: &str| -> usize {
        let shards = std::fs::read_dir(t.cache().join(kind)).unwrap();
        shards
            .flatten()
            .flat_map(|s| std::fs::read_dir(s.path()).unwrap().flatten())
            .filter(|e| e.path().is_dir())
            .count()
    };
    let (train, attribute) = (steps("train"), steps("attribute"));
    t.write_grid(&TINY.replace("sample = 40", "sample = 30"));
    let edited = t.grid(&["run", "grid.toml"]);
    assert_eq!(edited.status.code(), Some(0), "{}", text(&edited.stderr));
    assert_eq!(steps("attribute"), 2 * attribute);
    t.write_grid(TINY);
    let again = t.grid(&["run", "grid.toml"]);
    assert_eq!(again.status.code(), Some(0), "all cached: {}", text(&again.stderr));

    let kernels = t.cache().join("kernels/cuda/some-gpu");
    std::fs::create_dir_all(&kernels).unwrap();
    std::fs::write(kernels.join("kernel.bin"), [1u8; 64]).unwrap();
    // Each text a run planned from is frozen; aged past the grace, only the kept grid's stays.
    let frozen = || -> Vec<std::path::PathBuf> {
        std::fs::read_dir(t.cache().join("grids")).unwrap().flatten().map(|e| e.path()).collect()
    };
    assert_eq!(frozen().len(), 2, "{:?}", frozen());
    let month_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(30 * 86_400);
    for path in frozen() {
        std::fs::File::options().write(true).open(&path).unwrap().set_modified(month_ago).unwrap();
    }

    let dry = t.grid(&["gc", "grid.toml", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0), "{}", text(&dry.stderr));
    let said = text(&dry.stderr);
    assert!(said.contains("would remove attribute"), "{said}");
    assert!(said.contains("would remove grid text"), "{said}");
    assert_eq!(frozen().len(), 2);
    assert_eq!(steps("attribute"), 2 * attribute, "a dry run removes nothing");

    let out = t.grid(&["gc", "grid.toml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let said = text(&out.stderr);
    assert!(said.contains("compiled kernels") && said.contains("kept"), "{said}");
    assert_eq!(steps("train"), train, "the models are the grid's own");
    assert_eq!(steps("attribute"), attribute, "the sample-30 attributions are gone");
    assert_eq!(frozen().len(), 1, "the sample-30 grid text is gone, the kept grid's stays");
    assert!(kernels.join("kernel.bin").exists());
    let plan = text(&t.grid(&["plan", "grid.toml"]).stdout);
    assert!(!plan.lines().any(|l| l.starts_with("run ")), "everything the grid plans is still cached:\n{plan}");

    let out = t.grid(&["gc", "grid.toml", "--kernels"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!t.cache().join("kernels").exists());
}

/// Issue 13: two `grid run` on one cache compute no step twice, and neither
/// claims a step the other computed: every step is `ran` in exactly one of
/// them (worker processes say when they found the step cached).
#[test]
fn two_runs_on_one_cache_each_report_only_what_they_computed() {
    let grid = TINY.replace("kinds = [\"st\", \"tic\", \"op\"]", "kinds = [\"st\", \"tic\"]");
    let t = GridTest::new(&grid);
    let spawn = || t.spawn_grid(&["run", "grid.toml", "-j", "2"]);
    let (first, second) = (spawn(), spawn());
    let outputs = [first.wait_with_output().unwrap(), second.wait_with_output().unwrap()];
    let mut ran: Vec<String> = Vec::new();
    for out in &outputs {
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        ran.extend(
            text(&out.stderr)
                .lines()
                .filter_map(|l| l.trim_start().strip_prefix("ran "))
                .map(|l| l.split(" in ").next().unwrap_or(l).to_string()),
        );
    }
    let total = ran.len();
    ran.sort();
    ran.dedup();
    assert_eq!(ran.len(), total, "a step reported as run by both: {ran:?}");
    let planned = text(&t.grid(&["plan", "grid.toml"]).stdout).lines().filter(|l| l.starts_with("cached ")).count();
    assert_eq!(total, planned, "every step ran exactly once across the two: {ran:?}");
}

/// What `grid ARGS` prints on stdout as JSON; it must succeed.
fn grid_json(t: &GridTest, args: &[&str]) -> serde_json::Value {
    let output = t.grid(args);
    assert_eq!(output.status.code(), Some(0), "{args:?}: {}", text(&output.stderr));
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {}", text(&output.stdout)))
}

/// Issue 13, item 4: `grid status` and `grid show` say where each step stands
/// and why, and `--json` on them and on `grid plan` says the same to scripts.
#[test]
fn status_show_and_plan_json_say_where_each_step_stands() {
    let t = GridTest::tiny_after_first_run();
    // A new sample size: the models stay cached, the attributions are missing.
    t.write_grid(&TINY.replace("sample = 40", "sample = 30"));
    let status = t.grid(&["status", "grid.toml"]);
    assert_eq!(status.status.code(), Some(0), "{}", text(&status.stderr));
    let out = text(&status.stdout);
    let line = |label: &str| out.lines().find(|l| l.contains(&format!("  {label}  "))).unwrap_or_default().to_string();
    assert!(line("train/gen/st/lstm").starts_with("cached "), "{out}");
    let missing = line("attribute/gen/st/lstm/gxil");
    assert!(missing.starts_with("missing ") && missing.contains("parameter `sample` changed from 40 to 30"), "{out}");
    assert!(out.contains("attribute: ") && out.contains("missing"), "counts per kind:\n{out}");

    let json = |args: &[&str]| grid_json(&t, args);
    let steps = json(&["status", "grid.toml", "--json"]);
    assert_eq!(steps, json(&["plan", "grid.toml", "--json"]), "plan --json and status --json agree");
    let steps = steps.as_array().unwrap();
    let step = |label: &str| steps.iter().find(|s| s["label"] == label).unwrap_or_else(|| panic!("no {label}"));
    assert_eq!(step("train/gen/st/lstm")["state"], "cached");
    assert_eq!(step("attribute/gen/st/lstm/gxil")["state"], "missing");
    assert_eq!(step("attribute/gen/st/lstm/gxil")["kind"], "attribute");

    let shown = text(&t.grid(&["show", "grid.toml", "train/gen/st/lstm"]).stdout);
    for expected in ["step     train/gen/st/lstm", "state    cached: computed in", "model.safetensors", "synth/gen/st"]
    {
        assert!(shown.contains(expected), "missing `{expected}`:\n{shown}");
    }
    let key = step("train/gen/st/lstm")["key"].as_str().unwrap().to_string();
    let by_key = json(&["show", "grid.toml", &key[..10], "--json"]);
    assert_eq!(by_key["label"], "train/gen/st/lstm");
    assert_eq!(by_key["key"], key.as_str());
    assert!(by_key["files"].as_array().unwrap().iter().any(|f| f["name"] == "model.safetensors"), "{by_key}");
    assert_eq!(by_key["params"]["architecture"]["bilstm"]["hidden_size"], 16);
    let would_run = text(&t.grid(&["show", "grid.toml", "attribute/gen/st/lstm/gxil"]).stdout);
    assert!(would_run.contains("would run: parameter `sample` changed from 40 to 30"), "{would_run}");

    let unknown = t.grid(&["show", "grid.toml", "train/gen/xx/lstm"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        text(&unknown.stderr).contains("no step of tiny is labelled `train/gen/xx/lstm`"),
        "{}",
        text(&unknown.stderr)
    );
}

/// A failed step is remembered with its error and its worker's output, shown
/// by `grid status`, and forgotten once the step is computed.
#[test]
fn status_shows_a_failed_step_with_its_error_and_log() {
    let diverging = TINY
        .replace("learning_rate = 0.1", "learning_rate = 1e30")
        .replace("kinds = [\"st\", \"tic\", \"op\"]", "kinds = [\"st\"]");
    let t = GridTest::new(&diverging);
    let run = t.grid(&["run", "grid.toml", "-j", "2"]);
    assert_eq!(run.status.code(), Some(1), "{}", text(&run.stderr));
    let steps = grid_json(&t, &["status", "grid.toml", "--json"]);
    let failed: Vec<&serde_json::Value> = steps.as_array().unwrap().iter().filter(|s| s["state"] == "failed").collect();
    assert!(!failed.is_empty(), "{steps:#}");
    for step in &failed {
        assert!(step["error"].as_str().unwrap().contains("diverged"), "{step}");
        let log = step["log"].as_str().expect("a worker's failure keeps its output");
        // Relative to where `grid` ran, as the cache folder was given.
        assert!(t.path().join(log).is_file(), "{log}");
    }
    let out = text(&t.grid(&["status", "grid.toml"]).stdout);
    assert!(
        out.lines().any(|l| l.starts_with("failed ") && l.contains("training diverged") && l.contains("log: ")),
        "{out}"
    );

    // Fixed and rerun: nothing is failed any more.
    t.write_grid(&diverging.replace("learning_rate = 1e30", "learning_rate = 0.1"));
    assert!(t.run().succeeded());
    let out = text(&t.grid(&["status", "grid.toml"]).stdout);
    assert!(!out.contains("failed "), "{out}");
}

/// `grid gc --older-than`: by age, with or without grids; a bad date is a usage error naming it.
#[test]
fn gc_by_age_removes_what_finished_before_the_date() {
    let t = GridTest::tiny_after_first_run();
    let recent = t.grid(&["gc", "--older-than", "30d"]);
    assert_eq!(recent.status.code(), Some(0), "{}", text(&recent.stderr));
    assert!(text(&recent.stderr).contains("removed 0 steps"), "{}", text(&recent.stderr));
    let future = t.grid(&["gc", "--older-than", "2999-01-01", "--dry-run"]);
    let said = text(&future.stderr);
    assert!(said.contains("would remove train ") && said.contains("kept 0 finished since the date"), "{said}");
    let plan = text(&t.grid(&["plan", "grid.toml"]).stdout);
    assert!(!plan.lines().any(|l| l.starts_with("run ")), "a dry run removes nothing:\n{plan}");
    let bad = t.grid(&["gc", "--older-than", "last week"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        text(&bad.stderr).contains("--older-than last week: expected a date like 2026-11-01"),
        "{}",
        text(&bad.stderr)
    );
    let neither = t.grid(&["gc"]);
    assert_eq!(neither.status.code(), Some(2), "gc needs grids or a date");
}

/// Ctrl-C (issue 13, item 5): a run stopped while its models train stops its
/// workers, says what finished, exits 130, records no failure and leaves
/// nothing running; what finished stays cached.
#[test]
fn ctrl_c_stops_the_run_and_its_workers_and_exits_130() {
    use std::time::{Duration, Instant};
    let slow = TINY.replace("max_steps = 120", "max_steps = 1000000").replace("patience = 80", "patience = 1000000");
    let t = GridTest::new(&slow);
    let mut run = t.spawn_grid(&["run", "grid.toml", "-j", "2"]);
    let status = |t: &GridTest| grid_json(t, &["status", "grid.toml", "--json"]).as_array().unwrap().clone();
    let started = Instant::now();
    while !status(&t).iter().any(|s| s["kind"] == "train" && s["state"] == "running") {
        assert!(started.elapsed() < Duration::from_secs(120), "no training started");
        std::thread::sleep(Duration::from_millis(200));
    }
    // To the parent alone: it must stop its workers itself.
    unsafe { libc::kill(run.id() as libc::pid_t, libc::SIGINT) };
    let stopping = Instant::now();
    let code = loop {
        if let Some(code) = run.try_wait().unwrap() {
            break code.code();
        }
        assert!(stopping.elapsed() < Duration::from_secs(60), "the run did not stop");
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut said = String::new();
    std::io::Read::read_to_string(&mut run.stderr.take().unwrap(), &mut said).unwrap();
    assert_eq!(code, Some(130), "{said}");
    assert!(said.contains("interrupted after") && said.contains("computes only what is missing"), "{said}");
    let steps = status(&t);
    assert!(!steps.iter().any(|s| s["state"] == "running" || s["state"] == "failed"), "{steps:#?}");
    assert!(steps.iter().any(|s| s["label"] == "corpus/gen" && s["state"] == "cached"), "{steps:#?}");
    assert!(steps.iter().filter(|s| s["kind"] == "train").all(|s| s["state"] == "missing"), "{steps:#?}");
}

/// `grid bench` times the cached models' methods, pass after pass until a
/// second has gone by for a fast method, and reports the fastest pass: rows in
/// JSON and Markdown, one per (shortcut model, method).
#[test]
fn bench_times_cached_models_over_several_passes() {
    let t = GridTest::tiny_after_first_run();
    let json = t.path().join("bench.json");
    let out = t.grid(&[
        "bench",
        "grid.toml",
        "--only",
        "/st/",
        "--methods",
        "gradl-l1,gxil",
        "--examples",
        "8",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("| passes | seconds (fastest) | examples/s |"), "{stdout}");
    let rows: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = rows["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{rows:?}");
    for row in rows {
        assert_eq!(row["cell"], "gen/st/lstm");
        assert_eq!(row["examples"], 8);
        // Eight gradient explanations of a tiny BiLSTM take milliseconds: timed again and again.
        let passes = row["passes"].as_u64().unwrap();
        assert!(passes > 1 && passes <= 50, "{row}");
        let (seconds, rate) = (row["seconds"].as_f64().unwrap(), row["examples_per_second"].as_f64().unwrap());
        assert!((rate - 8.0 / seconds).abs() < 1e-6 * rate, "{row}");
    }
}

/// `extends`: a grid written as another plus one more method trains nothing
/// and computes only the new method's cells, under its own name.
#[test]
fn an_extending_grid_reuses_the_base_grids_models() {
    let t = GridTest::tiny_after_first_run();
    let more = "extends = \"grid.toml\"\n\n[attribution]\nmethods = [\"gradp-l2\"]\n";
    std::fs::write(t.path().join("more.toml"), more).unwrap();
    let plan = grid_json(&t, &["plan", "more.toml", "--json"]);
    let steps = plan.as_array().expect("an array of steps");
    let state = |kind: &str| -> Vec<String> {
        steps.iter().filter(|s| s["kind"] == kind).map(|s| s["state"].as_str().unwrap().to_string()).collect()
    };
    let trained = state("train");
    assert!(trained.len() == 4 && trained.iter().all(|s| s == "cached"), "{trained:?}");
    let attributed = state("attribute");
    assert!(!attributed.is_empty() && attributed.iter().all(|s| s != "cached"), "{attributed:?}");

    let out = t.grid(&["run", "more.toml", "-j", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(t.path().join("reports/more").is_dir(), "reports go under the extending grid's own name");
    let plan = grid_json(&t, &["plan", "more.toml", "--json"]);
    assert!(plan.as_array().unwrap().iter().all(|s| s["state"] == "cached"), "{plan}");

    // A bad value in the extending file names that file's line.
    std::fs::write(t.path().join("more.toml"), more.replace("[\"gradp-l2\"]", "[\"gradp-l9\"]")).unwrap();
    let out = t.grid(&["plan", "more.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("more.toml:4:"), "{}", text(&out.stderr));
}

/// A run's workers plan from the grid text the run planned (frozen in
/// `<cache>/grids/`), not from the file: an edit while the run goes on
/// (here: the method the step belongs to deleted, and a `--set` that no
/// longer applies) does not reach them.
#[test]
fn a_worker_plans_from_the_frozen_grid_not_the_edited_file() {
    use grid_pipeline::spec::Grid;
    let t = GridTest::tiny_after_first_run();
    let set = r#"attribution.methods=["gradl-l1", "gxil", "random", "gradp-l2"]"#;
    let settings = [set.parse::<grid_pipeline::spec::overrides::Override>().unwrap()];
    let planned = Grid::load_with(&t.grid_file(), &settings).unwrap();
    let cache = grid_cache::Cache::open(t.cache()).unwrap();
    let frozen = cache.freeze_grid(&planned.text).unwrap();
    let plan = grid_pipeline::dag::plan(&planned, &cache, &Default::default()).unwrap();
    let step =
        plan.steps.iter().find(|s| s.label == "attribute/gen/st/lstm/gradp-l2").expect("the added method's step");
    let key = step.key.as_str();

    // The file changes under the run.
    t.write_grid(&TINY.replace(r#""gxil", "random""#, r#""gxil""#));
    let frozen_arg = frozen.to_str().unwrap();
    let out = t.grid(&["step", "grid.toml", "--frozen", frozen_arg, "--key", key, "-q"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(cache.lookup(step.kind, &step.key).unwrap().is_some(), "the worker computed the run's step");

    // Reading the file instead, the same worker finds no such step.
    let out = t.grid(&["step", "grid.toml", "--key", key, "-q"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("has key"), "{}", text(&out.stderr));
    // The frozen text holds the overrides: a worker takes no `--set` beside it.
    let out = t.grid(&["step", "grid.toml", "--frozen", frozen_arg, "--set", set, "--key", key]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--frozen takes no --set"), "{}", text(&out.stderr));
}

/// Issue 44, item 3: `grid plan --estimate` says what a run will take before
/// it starts: from the cost model on an empty cache, and from what the cache
/// measured once a run has recorded its steps' work. `grid run` prints the
/// same in one line before it starts.
#[test]
fn estimate_predicts_a_run_from_what_the_cache_measured() {
    let t = GridTest::new(TINY);
    let estimate = |extra: &[&str]| {
        let mut args = vec!["plan", "grid.toml", "--estimate", "--json"];
        args.extend_from_slice(extra);
        grid_json(&t, &args)
    };
    let kind = |e: &serde_json::Value, kind: &str| {
        e["kinds"].as_array().unwrap().iter().find(|k| k["kind"] == kind).cloned().unwrap_or_else(|| panic!("{e}"))
    };
    let cpu_seconds = |e: &serde_json::Value| e["devices"][0]["seconds"].as_f64().unwrap();

    // Nothing measured: every step from the cost model.
    let before = estimate(&[]);
    assert_eq!(before["missing"], before["steps"], "{before}");
    assert_eq!(before["measured"], 0, "{before}");
    assert!(cpu_seconds(&before) > 0.0 && before["bytes"].as_u64().unwrap() > 0, "{before}");
    assert_eq!(kind(&before, "train")["missing"], 4, "{before}");

    // One step after another (`-j 1`), so each step's seconds are its wall time.
    let out = t.grid(&["run", "grid.toml", "-j", "1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let steps = before["steps"].as_u64().unwrap();
    assert!(
        text(&out.stderr).contains(&format!("estimate: {steps} of {steps} steps to run: ≈ ")),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(estimate(&[])["missing"], 0, "a full cache leaves nothing to estimate");

    // Another training seed: new keys, the same model shapes and methods, so
    // every model step is priced by the first run's measurements.
    let seed = ["--set", "models.lstm.training.seed=2"];
    let after = estimate(&seed);
    for k in ["train", "verify", "attribute"] {
        let line = kind(&after, k);
        assert_eq!(line["measured"], line["missing"], "{k}: {after}");
    }
    let predicted = cpu_seconds(&after);
    let step_keys = || -> HashSet<(StepKind, String)> {
        manifests(&t).into_iter().map(|m| (m.kind, m.key.as_str().to_string())).collect()
    };
    let before_second = step_keys();
    let mut args = vec!["run", "grid.toml", "-j", "1"];
    args.extend_from_slice(&seed);
    let out = t.grid(&args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // What the second run's steps measured, less the time their threads
    // waited for a CPU (the estimate predicts a machine to itself). Not the
    // command's wall time: under a loaded test suite that is several times
    // the steps' own, and it adds the process's start and planning.
    let ran: f64 = manifests(&t)
        .into_iter()
        .filter(|m| !before_second.contains(&(m.kind, m.key.as_str().to_string())))
        .map(|m| {
            let waited = m.work.as_ref().and_then(|w| w["waited_seconds"].as_f64()).unwrap_or(0.0);
            m.seconds - waited.clamp(0.0, 0.9 * m.seconds)
        })
        .sum();
    assert!(ran > 0.0, "the second run recorded its steps");
    assert!(predicted > ran / 5.0 && predicted < ran * 5.0, "predicted {predicted:.2} s, its steps took {ran:.2} s");
}

/// Every step manifest in the test's cache.
fn manifests(t: &GridTest) -> Vec<grid_cache::Manifest<StepKind>> {
    let cache = grid_cache::Cache::open(t.cache()).unwrap();
    StepKind::ALL.iter().flat_map(|&kind| cache.manifests(kind).unwrap()).collect()
}

/// Issue 59, item 4: on a terminal, a run predicted to take over a day asks
/// before it starts, after the estimate and the faster options; "no" starts
/// nothing. The terminal is a pseudo-terminal from util-linux's `script`.
#[test]
fn a_run_of_days_asks_on_a_terminal_and_an_answer_of_no_starts_nothing() {
    let t = GridTest::new(TINY);
    // A BiLSTM of 1,024 units for a million steps: months on any CPU.
    let command = format!(
        "{} run grid.toml -j 1 --set models.lstm.hidden_size=1024 --set models.lstm.embedding_dim=1024 \
         --set models.lstm.training.max_steps=1000000",
        env!("CARGO_BIN_EXE_grid")
    );
    let Some((code, shown)) = crate::util::on_a_terminal(t.path(), &command, &[], "n\n") else { return };
    assert_eq!(code, Some(1), "{shown}");
    assert!(shown.contains("estimate: ") && shown.contains("faster: "), "{shown}");
    assert!(shown.contains("Start it? [y/N]") && shown.contains("not started"), "{shown}");
    // Nothing ran: no step's result is in the cache.
    let plan = grid_json(
        &t,
        &[
            "plan",
            "grid.toml",
            "--json",
            "--set",
            "models.lstm.hidden_size=1024",
            "--set",
            "models.lstm.embedding_dim=1024",
            "--set",
            "models.lstm.training.max_steps=1000000",
        ],
    );
    assert!(plan.as_array().unwrap().iter().all(|s| s["state"] != "cached"), "{plan}");
}

/// Issue 60, item 1: `grid ledger` gathers every finding `--compare` checks
/// over the grids' cached reports, per paper, with the numbers; a grid not run
/// yet is named, not an error.
#[test]
fn the_ledger_lists_every_finding_per_paper_with_its_numbers() {
    let t = GridTest::tiny_after_first_run();
    let reference = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/reference");
    let precision = reference.join("bastings2022_precision_rank.csv");
    let unrun = TINY.replace("seed = 5", "seed = 6").replace("name = \"tiny\"", "name = \"unrun\"");
    std::fs::write(t.path().join("unrun.toml"), unrun).unwrap();
    // A grid that cannot be planned here (its data file is missing) is a note too.
    let unplannable = TINY
        .replace(
            "generated = { train = 600, validation = 150, test = 120, seed = 3 }",
            "train = \"no/train.csv\"\ntest = \"no/test.csv\"",
        )
        .replace("name = \"tiny\"", "name = \"elsewhere\"");
    std::fs::write(t.path().join("elsewhere.toml"), unplannable).unwrap();
    let out = t.grid(&[
        "ledger",
        "grid.toml",
        "unrun.toml",
        "elsewhere.toml",
        "--compare",
        precision.to_str().unwrap(),
        "--compare",
        reference.join("lu2024_crowd_accuracy.csv").to_str().unwrap(),
        "--compare-as",
        "gen=sst2",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ledger = text(&out.stdout);
    assert!(ledger.starts_with("# Findings ledger\n"), "{ledger}");
    assert!(ledger.contains("## Bastings et al. (2022)"), "{ledger}");
    let tally = ledger.lines().find(|l| l.contains(" finding(s): ")).unwrap_or_else(|| panic!("{ledger}"));
    assert!(tally.contains(" hold, ") && tally.contains(" fail, ") && tally.contains(" undecided"), "{tally}");
    assert!(ledger.contains("| tiny |"), "each finding names its grid:\n{ledger}");
    assert!(ledger.contains("lu2024_crowd_accuracy.csv: "), "a file --compare cannot read is a note:\n{ledger}");
    assert!(ledger.contains("unrun: not run yet"), "{ledger}");
    assert!(ledger.contains("- elsewhere.toml: not planned here: ") && ledger.contains("no/train.csv"), "{ledger}");
    assert_eq!(std::fs::read_to_string(t.reports().join("ledger.md")).unwrap(), ledger);

    // Without --compare, the reference folder beside the grid; none here.
    let out = t.grid(&["ledger", "grid.toml"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("reference") && text(&out.stderr).contains("--compare FILE"),
        "{}",
        text(&out.stderr)
    );
}
