//! Crash safety (issue 13, item 5): a grid killed with `kill -9` at random
//! moments — the whole process tree, or the parent alone, leaving its
//! `grid step` workers to finish on their own — never leaves a cache entry
//! that does not verify, and the run that finally completes writes tables
//! byte-identical to a clean run's.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};

use crate::util::{GridTest, RANDOM_BERT, TINY, report_files};

const KILLS: usize = 20;

fn grid(dir: &std::path::Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_grid"));
    command.current_dir(dir).env_remove("GRID_DATA_ROOT").env_remove("GRID_CACHE");
    command
}

/// Every step `grid status --json` lists, as (label, state).
fn states(t: &GridTest) -> Vec<(String, String)> {
    let output = grid(t.path()).args(["status", "grid.toml", "--json"]).output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let lines: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).unwrap();
    lines.iter().map(|l| (l["label"].as_str().unwrap().to_string(), l["state"].as_str().unwrap().to_string())).collect()
}

#[cfg(unix)]
#[test]
fn kill_9_at_random_moments_never_leaves_a_bad_entry() {
    use std::os::unix::process::CommandExt;
    // Longer trainings than TINY's, so that the kills land mid-step.
    let grid_text = TINY
        .replace(r#"methods = ["gradl-l1", "gxil", "random"]"#, r#"methods = ["gxil", "random"]"#)
        .replace("max_steps = 120", "max_steps = 1200")
        .replace("patience = 80", "patience = 1200");
    let clean = GridTest::new(&grid_text);
    let run = grid(clean.path()).args(["run", "grid.toml", "-q"]).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));

    let t = GridTest::new(&grid_text);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(13);
    let mut cached_after = Vec::new();
    for kill in 0..KILLS {
        let mut child = grid(t.path())
            .args(["run", "grid.toml", "-q", "-j", "2"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let moment = Duration::from_millis(rng.random_range(100..800));
        let started = Instant::now();
        while started.elapsed() < moment {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let whole_tree = kill % 2 == 0;
        let target = if whole_tree { format!("-{}", child.id()) } else { child.id().to_string() };
        let _ = Command::new("kill").args(["-9", "--", &target]).status();
        let _ = child.wait();
        let states = states(&t);
        let damaged: Vec<_> = states.iter().filter(|(_, state)| state == "damaged").collect();
        assert!(damaged.is_empty(), "kill {kill} ({moment:?}, whole tree: {whole_tree}) left {damaged:?}");
        cached_after.push(states.iter().filter(|(_, state)| state == "cached").count());
    }
    eprintln!("steps cached after each kill: {cached_after:?}");
    // The kills landed while there was work left: they tested something.
    let total = states(&t).len();
    assert!(cached_after.iter().filter(|&&c| c < total).count() >= KILLS / 2, "{cached_after:?} of {total}");
    // Orphaned workers of a killed parent may still hold locks: the final run
    // waits for them.
    let last = grid(t.path()).args(["run", "grid.toml", "-q"]).output().unwrap();
    assert!(last.status.success(), "{}", String::from_utf8_lossy(&last.stderr));
    let left: Vec<_> = states(&t).into_iter().filter(|(_, state)| state != "cached").collect();
    assert!(left.is_empty(), "after the final run: {left:?}");
    let staging = std::fs::read_dir(t.cache().join("tmp")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(staging, 0, "staging folders left after a complete run");
    assert_eq!(report_files(&t.reports().join("tiny")), report_files(&clean.reports().join("tiny")));
}

/// A write that fails part-way (the disk fills up) fails its step with the
/// path that could not be written, publishes nothing of it, and loses
/// nothing else; the next run computes what is missing. The failure is made
/// with a file-size limit (`ulimit -f`, SIGXFSZ ignored, so writes past it
/// fail with EFBIG as they would with ENOSPC) rather than a full disk,
/// which would need root to mount.
#[cfg(unix)]
#[test]
fn a_failed_write_publishes_nothing_and_loses_nothing_else() {
    let t = GridTest::new(TINY);
    let grid_bin = env!("CARGO_BIN_EXE_grid");
    let limited = Command::new("bash")
        .args(["-c", &format!("trap '' XFSZ; ulimit -f 64; exec '{grid_bin}' run grid.toml -q -j 1")])
        .current_dir(t.path())
        .env_remove("GRID_DATA_ROOT")
        .env_remove("GRID_CACHE")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&limited.stderr);
    assert_eq!(limited.status.code(), Some(1), "{said}");
    let failed = said.lines().find(|l| l.contains(" failed: ")).unwrap_or_else(|| panic!("{said}"));
    assert!(failed.contains("cannot write") && failed.contains("File too large"), "{failed}");
    let after = states(&t);
    assert!(after.iter().any(|(_, s)| s == "cached"), "other steps were kept: {after:?}");
    assert!(after.iter().all(|(_, s)| s != "damaged"), "{after:?}");
    let staging = std::fs::read_dir(t.cache().join("tmp")).map(|d| d.count()).unwrap_or(0);
    assert_eq!(staging, 0, "a failed step left its staging folder");

    let rerun = grid(t.path()).args(["run", "grid.toml", "-q"]).output().unwrap();
    assert!(rerun.status.success(), "{}", String::from_utf8_lossy(&rerun.stderr));
    assert!(states(&t).iter().all(|(_, s)| s == "cached"));
}

/// The tiny grid cut to one shortcut model and one method, its training long
/// enough (1,200 steps) to be stopped part way.
#[cfg(unix)]
fn one_long_training() -> String {
    TINY.replace(r#"kinds = ["st", "tic", "op"]"#, r#"kinds = ["st"]"#)
        .replace(r#"methods = ["gradl-l1", "gxil", "random"]"#, r#"methods = ["gxil"]"#)
        .replace("max_steps = 120", "max_steps = 1200")
        .replace("patience = 80", "patience = 1200")
}

/// A training step killed with `kill -9` part way goes on from its last
/// snapshot on the next run — `grid plan` says from which step — and the run
/// ends with tables byte-identical to an unbroken run's.
#[cfg(unix)]
#[test]
fn a_killed_training_resumes_from_its_snapshot() {
    let grid_text = one_long_training();
    let clean = clean_run(&grid_text);
    let t = GridTest::new(&grid_text);
    let mut child = killable_run(&t);
    let resume = t.cache().join("resume");
    let snapshot = || -> Option<std::path::PathBuf> {
        let folder = std::fs::read_dir(&resume).ok()?.flatten().next()?.path();
        folder.join("snapshot.json").exists().then_some(folder)
    };
    let started = Instant::now();
    let folder = loop {
        if let Some(folder) = snapshot() {
            break folder;
        }
        assert!(child.try_wait().unwrap().is_none(), "the run ended before any snapshot");
        assert!(started.elapsed() < Duration::from_secs(300), "no snapshot after 5 minutes");
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = Command::new("kill").args(["-9", "--", &format!("-{}", child.id())]).status();
    let _ = child.wait();
    assert!(folder.join("snapshot.json").exists(), "the snapshot outlives the kill");

    let plan = grid(t.path()).args(["plan", "grid.toml"]).output().unwrap();
    let planned = String::from_utf8_lossy(&plan.stdout);
    assert!(planned.contains("training resumes from its snapshot at step"), "{planned}");

    let rerun = grid(t.path()).args(["run", "grid.toml", "-v"]).env("GRID_SNAPSHOT_SECONDS", "0").output().unwrap();
    let said = String::from_utf8_lossy(&rerun.stderr);
    assert!(rerun.status.success(), "{said}");
    assert!(said.contains("resuming from the snapshot at step"), "{said}");
    assert!(!folder.exists(), "the resume folder is removed once the step is cached");
    assert_eq!(report_files(&t.reports().join("tiny")), report_files(&clean.reports().join("tiny")));
}

/// `timeout`, like a terminal's Ctrl-C, signals the whole process group: a
/// `grid step` worker training a model has the signal from it and again from
/// `grid run` a moment later, and still snapshots the step it stopped at. No
/// evaluation was due a snapshot (`GRID_SNAPSHOT_SECONDS` is an hour), so the
/// rerun resuming at all shows the stop's own snapshot; its tables are a clean
/// run's.
#[cfg(unix)]
#[test]
fn a_worker_stopped_with_its_run_snapshots_the_step_it_stopped_at() {
    stopped_training_resumes_where_it_stopped(&one_long_training(), "2", 1);
}

/// `grid run` itself (`-j 1`, the training in its own process) takes a
/// second signal a moment after the first as the same stop, as `timeout`
/// passing on a terminal's Ctrl-C sends it: the training still snapshots
/// the step it stopped at.
#[cfg(unix)]
#[test]
fn grid_run_signalled_twice_at_once_still_stops_cleanly() {
    stopped_training_resumes_where_it_stopped(&one_long_training(), "1", 2);
}

/// A BERT with dropout, stopped in `grid run`'s own process between two
/// evaluations, snapshots the step it stopped at too: on the CPU its dropout
/// masks come from a stream whose position the snapshot keeps. Its only
/// evaluation is its last step, so resuming at all shows the stop's snapshot;
/// the tables are a clean run's, which the masks' stream decides.
#[cfg(unix)]
#[test]
fn a_stopped_bert_with_dropout_resumes_where_it_stopped() {
    let lstm = r#"name = "lstm"
architecture = "bilstm"
embedding_dim = 16
hidden_size = 16
attention_size = 16
mlp_size = 16
dropout = 0.1"#;
    let bert = format!("name = \"bert\"\narchitecture = \"bert\"\n{RANDOM_BERT}\ndropout = 0.2");
    assert!(TINY.contains(lstm), "the tiny grid's model");
    let grid_text = one_long_training()
        .replace(lstm, &bert)
        .replace("learning_rate = 0.1", "learning_rate = 1e-3")
        .replace("max_steps = 1200", "max_steps = 1000")
        .replace("eval_every = 40", "eval_every = 1000")
        .replace("patience = 1200", "patience = 1000");
    stopped_training_resumes_where_it_stopped(&grid_text, "1", 1);
}

/// Runs `grid_text` with `jobs`, sends the run's process group SIGTERM
/// `signals` times at once when a training is under way, and checks
/// that the rerun resumes the training from a snapshot (none was due at an
/// evaluation: `GRID_SNAPSHOT_SECONDS` is an hour) and ends with a clean
/// run's tables.
#[cfg(unix)]
fn stopped_training_resumes_where_it_stopped(grid_text: &str, jobs: &str, signals: usize) {
    use std::os::unix::process::CommandExt;
    let clean = clean_run(grid_text);
    let t = GridTest::new(grid_text);
    let mut run = grid(t.path())
        .args(["run", "grid.toml", "-q", "-j", jobs])
        .env("GRID_SNAPSHOT_SECONDS", "3600")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !states(&t).iter().any(|(label, state)| label.starts_with("train/") && state == "running") {
        assert!(run.try_wait().unwrap().is_none(), "the run ended before its training");
        assert!(started.elapsed() < Duration::from_secs(300), "no training after 5 minutes");
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(1500));
    // The shell's own `kill`, so that a second signal follows the first
    // within microseconds, as `timeout` passes one on.
    let kill = format!("kill -TERM -- -{}", run.id());
    let _ = Command::new("bash").args(["-c", &vec![kill.as_str(); signals].join("; ")]).status();
    let mut said = String::new();
    std::io::Read::read_to_string(&mut run.stderr.take().unwrap(), &mut said).unwrap();
    assert_eq!(run.wait().unwrap().code(), Some(130), "{said}");
    assert!(!states(&t).iter().any(|(_, state)| state == "running" || state == "failed"), "{said}");

    let plan = grid(t.path()).args(["plan", "grid.toml"]).output().unwrap();
    let planned = String::from_utf8_lossy(&plan.stdout);
    assert!(planned.contains("training resumes from its snapshot at step"), "{planned}");
    let rerun = grid(t.path()).args(["run", "grid.toml", "-v"]).output().unwrap();
    let again = String::from_utf8_lossy(&rerun.stderr);
    assert!(rerun.status.success(), "{again}");
    assert!(again.contains("resuming from the snapshot at step"), "{again}");
    assert_eq!(report_files(&t.reports().join("tiny")), report_files(&clean.reports().join("tiny")));
    // The stopped attempt's time (1.5 s or more) is in the finished step's
    // record, for the estimates: its manifest's seconds are the last run's.
    let earlier: Vec<f64> = std::fs::read_dir(t.cache().join("train"))
        .unwrap()
        .flatten()
        .flat_map(|shard| std::fs::read_dir(shard.path()).unwrap().flatten())
        .filter_map(|step| std::fs::read(step.path().join("manifest.json")).ok())
        .filter_map(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .filter_map(|manifest| manifest["work"]["earlier"]["seconds"].as_f64())
        .collect();
    assert!(earlier.iter().any(|&s| s >= 1.5), "the stopped attempt's seconds: {earlier:?}");
}

/// An attribution step killed with `kill -9` part way goes on, on the next
/// run, after the examples it had explained — `grid plan` says how many — and
/// the run ends with tables byte-identical to an unbroken run's.
#[cfg(unix)]
#[test]
fn a_killed_attribution_goes_on_after_the_examples_it_explained() {
    let grid_text = slow_attribution();
    let clean = clean_run(&grid_text);
    let t = GridTest::new(&grid_text);
    let mut child = killable_run(&t);
    let started = Instant::now();
    while attribution_parts(&t) < 3 {
        assert!(child.try_wait().unwrap().is_none(), "the run ended before three chunks were written");
        assert!(started.elapsed() < Duration::from_secs(300), "no attribution progress after 5 minutes");
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = Command::new("kill").args(["-9", "--", &format!("-{}", child.id())]).status();
    let _ = child.wait();

    let plan = grid(t.path()).args(["plan", "grid.toml"]).output().unwrap();
    let planned = String::from_utf8_lossy(&plan.stdout);
    assert!(planned.contains("attribution goes on after the"), "{planned}");

    let rerun = grid(t.path()).args(["run", "grid.toml", "-v"]).output().unwrap();
    let said = String::from_utf8_lossy(&rerun.stderr);
    assert!(rerun.status.success(), "{said}");
    assert!(said.contains("examples were explained by an earlier attempt"), "{said}");
    assert!(!said.contains("not used"), "every part written before the kill is whole: {said}");
    assert_eq!(attribution_parts(&t), 0, "the resume folder is removed once the step is cached");
    assert_eq!(report_files(&t.reports().join("tiny")), report_files(&clean.reports().join("tiny")));
}

/// Ctrl-C during an attribution step (SIGINT to the process group, as a
/// terminal sends it) writes what the step had explained, though no write was
/// due yet, and the next run goes on from there.
#[cfg(unix)]
#[test]
fn a_stopped_attribution_keeps_what_it_explained() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::CommandExt;
    let grid_text = slow_attribution();
    let clean = clean_run(&grid_text);

    let t = GridTest::new(&grid_text);
    let mut child = grid(t.path())
        .args(["run", "grid.toml", "-v", "-j", "1"])
        .env("GRID_SNAPSHOT_SECONDS", "3600")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    // Verification is the last step before the attribution.
    while !said.contains("ran verify/") {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "the run ended before its attribution: {said}");
        said.push_str(&line);
    }
    std::thread::sleep(Duration::from_millis(300));
    let _ = Command::new("kill").args(["-INT", "--", &format!("-{}", child.id())]).status();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{said}{rest}");
    assert!(attribution_parts(&t) >= 1, "nothing was kept: {rest}");

    let rerun = grid(t.path()).args(["run", "grid.toml", "-v"]).output().unwrap();
    let again = String::from_utf8_lossy(&rerun.stderr);
    assert!(rerun.status.success(), "{again}");
    assert!(again.contains("examples were explained by an earlier attempt"), "{again}");
    assert_eq!(report_files(&t.reports().join("tiny")), report_files(&clean.reports().join("tiny")));
}

/// TINY with one shortcut and IG with 1,000 steps over all 120 test examples,
/// one per model call: many chunks, each slow enough for a stop to land
/// between them.
fn slow_attribution() -> String {
    TINY.replace(r#"kinds = ["st", "tic", "op"]"#, r#"kinds = ["st"]"#)
        .replace(r#"methods = ["gradl-l1", "gxil", "random"]"#, "methods = [\"igl-zero-1000\"]\nbatch_size = 1")
        .replace("sample = 40", "sample = 120")
}

/// Part files in the attribution steps' resume folders.
fn attribution_parts(t: &GridTest) -> usize {
    let Ok(folders) = std::fs::read_dir(t.cache().join("resume")) else { return 0 };
    folders
        .flatten()
        .filter(|f| f.file_name().to_string_lossy().starts_with("attribute-"))
        .flat_map(|f| std::fs::read_dir(f.path()).into_iter().flatten().flatten())
        .filter(|p| p.file_name().to_string_lossy().starts_with("part-"))
        .count()
}

/// A finished run of `grid_text`: the tables an interrupted run must end with.
fn clean_run(grid_text: &str) -> GridTest {
    let clean = GridTest::new(grid_text);
    let run = grid(clean.path()).args(["run", "grid.toml", "-q"]).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    clean
}

/// `grid run -q -j 1` in a process group of its own (so that `kill -- -PID`
/// reaches its workers), keeping its progress at every chance: a training
/// snapshot at every evaluation, attribution parts after every chunk.
#[cfg(unix)]
fn killable_run(t: &GridTest) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    grid(t.path())
        .args(["run", "grid.toml", "-q", "-j", "1"])
        .env("GRID_SNAPSHOT_SECONDS", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap()
}
