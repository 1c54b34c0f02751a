//! `grid run --executor slurm` on a real Slurm (issue 13, items 2 and 3).
//! Ignored by default: they need a running cluster and `SLURM_CONF`. `.ci/run`
//! starts a single-node one (`scripts/slurm_single_node.sh`) and runs them
//! with `cargo test --test tests slurm -- --ignored`.

use crate::util::{GridTest, TINY, report_files as files};

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// TINY cut to one shortcut and two methods: the same DAG shapes, a third of the work.
fn small_grid() -> String {
    TINY.replace(r#"kinds = ["st", "tic", "op"]"#, r#"kinds = ["st"]"#)
        .replace(r#"methods = ["gradl-l1", "gxil", "random"]"#, r#"methods = ["gxil", "random"]"#)
}

#[test]
#[ignore = "needs a running Slurm cluster (SLURM_CONF); .ci/run starts one"]
fn slurm_tables_equal_local_ones_and_nothing_is_submitted_twice() {
    let t = GridTest::new(&small_grid());
    let local = t.grid(&["run", "grid.toml", "--cache", "local-cache", "--reports", "local-reports", "-q"]);
    assert_eq!(local.status.code(), Some(0), "{}", text(&local.stderr));

    // Submit, and at once submit again: the second finds every step in flight.
    let first = t.grid(&["run", "grid.toml", "--executor", "slurm"]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let said = text(&first.stderr);
    assert!(said.contains("submitted job") && said.contains("0 cached"), "{said}");
    let second = t.grid(&["run", "grid.toml", "--executor", "slurm"]);
    let said = text(&second.stderr);
    assert!(said.contains("0 steps submitted in 0 job arrays"), "{said}");

    let status = t.grid(&["status", "grid.toml"]);
    let listed = text(&status.stdout);
    assert!(listed.contains("Slurm task") || listed.lines().all(|l| !l.starts_with("missing")), "{listed}");

    // `--wait` submits nothing more, follows the tasks, then writes the tables.
    let waited = t.grid(&["run", "grid.toml", "--executor", "slurm", "--wait"]);
    let said = text(&waited.stderr);
    assert_eq!(waited.status.code(), Some(0), "{said}");
    assert!(said.contains("0 steps submitted"), "{said}");
    let slurm = files(&t.reports().join("tiny"));
    assert!(!slurm.is_empty());
    assert_eq!(slurm, files(&t.path().join("local-reports").join("tiny")), "tables differ from the local run's");

    let again = t.grid(&["run", "grid.toml", "--executor", "slurm"]);
    let said = text(&again.stderr);
    assert!(said.contains("0 steps submitted in 0 job arrays, 0 already queued or running"), "{said}");
}

#[test]
#[ignore = "needs a running Slurm cluster (SLURM_CONF); .ci/run starts one"]
fn a_failing_task_cancels_its_dependents_stops_its_branch_only_and_is_reported() {
    let t = GridTest::new(&small_grid().replace(
        "[shortcuts]",
        "[[datasets]]\nname = \"bad\"\ntrain = \"bad.csv\"\ntest = \"bad.csv\"\n\n[shortcuts]",
    ));
    // A label outside the binary classes fails the corpus step.
    let rows: String = (0..40).map(|i| format!("\"words here {i}\",{}\n", if i == 7 { 5 } else { i % 2 })).collect();
    std::fs::write(t.path().join("bad.csv"), format!("text,label\n{rows}")).unwrap();
    let run = t.grid(&["run", "grid.toml", "--executor", "slurm", "--wait"]);
    let said = text(&run.stderr);
    assert_eq!(run.status.code(), Some(1), "{said}");
    let failed = said.lines().find(|l| l.starts_with("error: corpus/bad failed")).unwrap_or_else(|| panic!("{said}"));
    assert!(failed.contains("Slurm task") && failed.contains(".log"), "{failed}");
    assert!(said.contains("error: synth/bad/st skipped: input `corpus/bad` did not complete"), "{said}");
    // The good dataset's branch ran on.
    let status = text(&t.grid(&["status", "grid.toml"]).stdout);
    let state = |label: &str| {
        status
            .lines()
            .find(|l| l.ends_with(&format!("  {label}")) || l.contains(&format!("  {label}  ")))
            .unwrap_or_else(|| panic!("{label} not in {status}"))
            .split_whitespace()
            .next()
            .unwrap()
            .to_string()
    };
    assert_eq!(state("verify/gen/st/lstm"), "cached", "{status}");
    assert_eq!(state("corpus/bad"), "failed", "{status}");
    let log = status.lines().find(|l| l.contains("  corpus/bad  ")).unwrap();
    let path = log.rsplit("log: ").next().unwrap().trim_end_matches(')');
    let task_log = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path} from {log}: {e}"));
    // The failing task took the tasks that could only skip off the queue.
    assert!(task_log.contains("cancelled the Slurm tasks of steps that need corpus/bad: "), "{task_log}");
    // Only the bad branch (and the report, which reads every cell) is left
    // for a later `grid run` to submit again.
    for line in status.lines().filter(|l| l.starts_with("missing") || l.starts_with("failed")) {
        assert!(line.contains("/bad") || line.contains("report/tiny"), "{line}");
    }
}

/// Two clusters and one bucket (here a folder): cluster A computes the grid
/// locally and publishes it; cluster B, with an empty cache, adds a method
/// and runs under Slurm. Its tasks pull the trained models they read from
/// the remote and publish their cells to it; nothing trains on B.
#[test]
#[ignore = "needs a running Slurm cluster (SLURM_CONF); .ci/run starts one"]
fn slurm_tasks_pull_their_inputs_from_the_remote_and_publish_to_it() {
    let remote_dir = tempfile::tempdir().unwrap();
    let remote = remote_dir.path().to_str().unwrap();
    let a = GridTest::new(&small_grid());
    let run = a.grid(&["run", "grid.toml", "--remote", remote, "-q"]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let records = || grid_cache::Remote::open(remote).unwrap().list("steps").unwrap().len();
    let published = records();

    let b = GridTest::new(&small_grid().replace(r#"["gxil", "random"]"#, r#"["gxil", "random", "gradl-l1"]"#));
    let run = b.grid(&["run", "grid.toml", "--executor", "slurm", "--wait", "--remote", remote]);
    let said = text(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{said}");
    // One attribution, its scores (precision and rank), and the report.
    assert_eq!(records(), published + 4, "{said}");
    // The models B's tasks read are A's, pulled (same finish time, same
    // bytes), not trained again.
    let trains = |t: &GridTest| {
        let cache = grid_cache::Cache::open(t.cache()).unwrap();
        let mut m: Vec<_> = cache
            .manifests(grid_pipeline::step_kind::StepKind::Train)
            .unwrap()
            .into_iter()
            .map(|m| (m.key.clone(), m.finished_at, m.files.clone()))
            .collect();
        m.sort_by(|x, y| x.0.as_str().cmp(y.0.as_str()));
        m
    };
    let (on_b, on_a) = (trains(&b), trains(&a));
    assert!(!on_b.is_empty(), "the new cells read a model");
    assert!(on_b.iter().all(|m| on_a.contains(m)), "a model was trained on B: {on_b:?}");
    assert!(files(&b.reports().join("tiny")).iter().any(|(name, _)| name.ends_with(".csv")), "{said}");
}
