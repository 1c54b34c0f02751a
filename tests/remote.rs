//! Issue 46: a remote cache behind the local one. One machine fills it; a
//! second, with an empty cache and no shared filesystem, is served from it
//! and computes nothing it holds; what a new cell needs is pulled, and only
//! that.

use std::path::Path;

use grid_cache::Cache;
use grid_pipeline::step_kind::StepKind;

use crate::util::{GridTest, TINY, report_files};

/// The step folders of a cache, per kind.
fn cached_kinds(cache: &Path) -> Vec<(StepKind, usize)> {
    let cache = Cache::open(cache).unwrap();
    StepKind::ALL.into_iter().map(|kind| (kind, cache.manifests(kind).unwrap().len())).filter(|(_, n)| *n > 0).collect()
}

#[test]
fn an_empty_cache_is_served_from_the_remote_and_pulls_only_what_it_reads() {
    let remote_dir = tempfile::tempdir().unwrap();
    let remote = remote_dir.path().join("lab-cache");
    let remote = remote.to_str().unwrap();

    // The first machine computes everything and publishes it.
    let first = GridTest::new(TINY);
    let outcome = first.run_with_remote(remote);
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    assert_eq!(outcome.cached(), 0);
    let published = grid_cache::Remote::open(remote).unwrap().list("steps").unwrap();
    assert_eq!(published.len(), outcome.records.len(), "every step has its record on the remote");

    // The second has an empty cache: it computes nothing, and only the
    // report comes down, to be shown. Its tables are the first's, byte for byte.
    let second = GridTest::new(TINY);
    let outcome = second.run_with_remote(remote);
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    assert_eq!(outcome.executed().count(), 0);
    assert!(outcome.console.is_some(), "the tables are printed from the pulled report");
    assert_eq!(cached_kinds(&second.cache()), [(StepKind::Report, 1)]);
    assert_eq!(report_files(&second.reports().join("tiny")), report_files(&first.reports().join("tiny")));

    // A new method on the second machine, through the binary (model steps in
    // child processes, which pull their own inputs): its cells are computed
    // from the trained models and data pulled for them; nothing trains.
    second.write_grid(&TINY.replace(r#""gxil", "random""#, r#""gxil", "random", "gradp-l2""#));
    let run = second.grid(&["run", "grid.toml", "--remote", remote, "-j", "2"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("10 ran"), "3 attributions, 6 scores and the report: {stderr}");
    let kinds = cached_kinds(&second.cache());
    let count = |kind| kinds.iter().find(|(k, _)| *k == kind).map_or(0, |(_, n)| *n);
    // The new cells read the shortcut models and their data, the report every
    // score, verification and attribution; nothing reads the corpus or the
    // original model, which stay on the remote.
    assert_eq!(count(StepKind::Train), 3, "the three shortcut models came down: {kinds:?}");
    assert_eq!(count(StepKind::Corpus), 0, "{kinds:?}");
    // And what the second computed is on the remote for the first.
    let after = grid_cache::Remote::open(remote).unwrap().list("steps").unwrap();
    assert_eq!(after.len(), published.len() + 10);

    // The method dropped again, `gc --remote` removes its cells from the
    // remote (and the report that showed them); a dry run first.
    second.write_grid(TINY);
    let dry = second.grid(&["gc", "grid.toml", "--remote", remote, "--dry-run"]);
    let stderr = String::from_utf8_lossy(&dry.stderr);
    assert!(dry.status.success() && stderr.contains("would remove 10 steps from"), "{stderr}");
    assert_eq!(grid_cache::Remote::open(remote).unwrap().list("steps").unwrap().len(), after.len());
    let gc = second.grid(&["gc", "grid.toml", "--remote", remote]);
    let stderr = String::from_utf8_lossy(&gc.stderr);
    assert!(gc.status.success() && stderr.contains("removed 10 steps from"), "{stderr}");
    let left = grid_cache::Remote::open(remote).unwrap();
    assert_eq!(left.list("steps").unwrap().len(), published.len());
    drop(left);
    let third = GridTest::new(TINY);
    let outcome = third.run_with_remote(remote);
    assert!(outcome.succeeded() && outcome.executed().count() == 0, "what the grid plans is all still served");
}

#[test]
fn a_bad_remote_is_a_usage_error_naming_it() {
    let t = GridTest::new(TINY);
    let run = t.grid(&["plan", "grid.toml", "--remote", "ftp://host/cache"]);
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("ftp://host/cache") && stderr.contains("unknown scheme"), "{stderr}");
}

/// The bucket of the S3-compatible server `scripts/s3_server.sh` starts
/// (CI starts one and exports what it prints), under a prefix of this test's.
fn s3_prefix(test: &GridTest) -> String {
    let bucket = std::env::var("GRID_TEST_S3")
        .expect("GRID_TEST_S3 unset: eval \"$(scripts/s3_server.sh start DIR)\" starts a server and sets it");
    let name = test.path().file_name().unwrap().to_string_lossy().into_owned();
    format!("{bucket}/{}", name.trim_start_matches('.'))
}

/// How many steps the test's grid plans.
fn planned_steps(test: &GridTest) -> usize {
    let grid = grid_pipeline::spec::Grid::load(&test.grid_file()).unwrap();
    let cache = Cache::open(test.cache()).unwrap();
    grid_pipeline::dag::plan(&grid, &cache, &grid_pipeline::dag::PlanOptions::default()).unwrap().steps.len()
}

/// One record per step and one upload per step under `prefix`.
fn records_and_uploads(prefix: &str) -> (usize, usize) {
    let remote = grid_cache::Remote::open(prefix).unwrap();
    let records = remote.list("steps").unwrap().len();
    let mut uploads: Vec<String> = remote
        .list("payloads")
        .unwrap()
        .into_iter()
        .map(|(object, _)| object.rsplit_once('/').map(|(folder, _)| folder.to_string()).unwrap_or(object))
        .collect();
    uploads.sort();
    uploads.dedup();
    // A step's folder is `payloads/<kind>/<xx>/<key>/<upload>`: one upload per key.
    let keys: std::collections::HashSet<String> =
        uploads.iter().map(|u| u.rsplit_once('/').map(|(key, _)| key.to_string()).unwrap_or_default()).collect();
    assert_eq!(keys.len(), uploads.len(), "a step with two uploads: {uploads:?}");
    (records, uploads.len())
}

/// `n` machines (each its own cache) run the grid at once against one
/// bucket: all succeed, every step has one record and at most one upload,
/// their tables are equal, and a machine with an empty cache is served them.
fn machines_at_once_share_one_bucket(n: usize) {
    let machines: Vec<GridTest> = (0..n).map(|_| GridTest::new(TINY)).collect();
    let prefix = s3_prefix(&machines[0]);
    let args = ["run", "grid.toml", "--remote", prefix.as_str(), "-j", "2"];
    let runs: Vec<_> = machines.iter().map(|m| m.spawn_grid(&args)).collect();
    for (i, run) in runs.into_iter().enumerate() {
        let out = run.wait_with_output().unwrap();
        assert!(out.status.success(), "machine {i}: {}", String::from_utf8_lossy(&out.stderr));
    }
    let steps = planned_steps(&machines[0]);
    let (records, uploads) = records_and_uploads(&prefix);
    assert_eq!(records, steps, "every step once");
    assert!(uploads <= steps, "one copy per step at most (a reused training names its source's)");
    let tables = report_files(&machines[0].reports().join("tiny"));
    for m in &machines[1..] {
        assert_eq!(report_files(&m.reports().join("tiny")), tables);
    }

    let fresh = GridTest::new(TINY);
    let out = fresh.grid(&["run", "grid.toml", "--remote", prefix.as_str()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.contains(" 0 ran"), "{stderr}");
    assert_eq!(report_files(&fresh.reports().join("tiny")), tables);
}

#[test]
#[ignore = "needs an S3 server: eval \"$(scripts/s3_server.sh start DIR)\""]
fn two_machines_running_at_once_share_one_bucket() {
    machines_at_once_share_one_bucket(2);
}

#[test]
#[ignore = "needs an S3 server: eval \"$(scripts/s3_server.sh start DIR)\""]
fn eight_machines_running_at_once_share_one_bucket() {
    machines_at_once_share_one_bucket(8);
}

#[test]
#[ignore = "needs an S3 server: eval \"$(scripts/s3_server.sh start DIR)\""]
fn a_writer_killed_mid_run_loses_nothing_and_serves_nothing_damaged() {
    let clean = GridTest::new(TINY);
    assert!(clean.run().succeeded());
    let killed = GridTest::new(TINY);
    let prefix = s3_prefix(&killed);
    let remote = grid_cache::Remote::open(&prefix).unwrap();
    let args = ["run", "grid.toml", "--remote", prefix.as_str(), "-j", "2"];
    // One step at a time in one process (-j 1), so that the kill stops every
    // writer of this machine at once, mid-step or mid-upload.
    // Short leases: what the killed process held goes stale in seconds.
    let short = [("GRID_LEASE_SECONDS", "3")];
    let mut run = killed.spawn_grid_with(&["run", "grid.toml", "--remote", prefix.as_str(), "-j", "1"], &short);
    // Killed (SIGKILL: no handler runs) a third of the way into a training
    // that starts after some steps are published: its lease is held and its
    // record far off. Timed by the run's own progress lines, not a sleep, so
    // that a slow machine finds it mid-step too.
    let lines = {
        let stderr = run.stderr.take().expect("piped stderr");
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok) {
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        lines
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(300);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = lines.recv_timeout(left).expect("the run ended or stalled before a training past the first steps");
        if line.contains("train/") && line.contains(": step 40/") && remote.list("steps").unwrap().len() >= 5 {
            break;
        }
    }
    run.kill().unwrap();
    let _ = run.wait();
    let published = remote.list("steps").unwrap().len();
    assert!(published >= 5, "published before the kill: {published}");

    // A second machine finishes the grid from what is there; then a third is
    // served it whole, and its tables are a clean run's, byte for byte.
    let second = GridTest::new(TINY);
    let out = second.grid_with(&args, &short);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // The step the killed process was computing (with -j 1 it is always in
    // one, between a few milliseconds of bookkeeping): its lease went stale
    // and is taken over, and the log says whose it was.
    assert!(stderr.contains("took over the lease of pid") && stderr.contains("expired"), "{stderr}");
    let third = GridTest::new(TINY);
    let out = third.grid(&["run", "grid.toml", "--remote", prefix.as_str()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.contains(" 0 ran"), "{stderr}");
    assert_eq!(report_files(&third.reports().join("tiny")), report_files(&clean.reports().join("tiny")));
    // And the killed machine's own cache resumes.
    let out = killed.grid(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_cache_filled_before_the_remote_was_given_is_published_by_the_next_run() {
    let t = GridTest::tiny_after_first_run();
    let remote_dir = tempfile::tempdir().unwrap();
    let remote = remote_dir.path().to_str().unwrap();
    let outcome = t.run_with_remote(remote);
    assert!(outcome.succeeded());
    assert_eq!(outcome.executed().count(), 0);
    let records = grid_cache::Remote::open(remote).unwrap().list("steps").unwrap();
    assert_eq!(records.len(), outcome.records.len(), "every cached step went up");
    // Each is remembered as published there, so the next run asks nothing.
    let cache = Cache::open(t.cache()).unwrap();
    for kind in StepKind::ALL {
        for m in cache.manifests(kind).unwrap() {
            assert!(cache.known_published(m.kind, &m.key, remote), "{}", m.label);
        }
    }
    // An empty cache is then served from it.
    let fresh = GridTest::new(TINY);
    let outcome = fresh.run_with_remote(remote);
    assert!(outcome.succeeded() && outcome.executed().count() == 0);
    assert_eq!(report_files(&fresh.reports().join("tiny")), report_files(&t.reports().join("tiny")));
}

#[test]
fn grid_pull_brings_down_every_step_the_remote_holds() {
    let remote_dir = tempfile::tempdir().unwrap();
    let remote = remote_dir.path().to_str().unwrap();
    let first = GridTest::tiny_after_first_run();
    assert!(first.run_with_remote(remote).succeeded());
    let second = GridTest::new(TINY);
    let pull = second.grid(&["pull", "grid.toml", "--remote", remote]);
    let stderr = String::from_utf8_lossy(&pull.stderr);
    assert!(pull.status.success(), "{stderr}");
    let steps = first.run().records.len();
    assert!(stderr.contains(&format!("pulled {steps} steps")), "{stderr}");
    let outcome = second.run();
    assert_eq!(outcome.cached(), steps, "everything is local now, without the remote");
    let again = second.grid(&["pull", "grid.toml", "--remote", remote]);
    assert!(String::from_utf8_lossy(&again.stderr).contains("pulled 0 steps (0 kB)"));
    let without = second.grid(&["pull", "grid.toml"]);
    assert_eq!(without.status.code(), Some(2), "a pull needs a remote");
}

/// A remote copy that fails its check is never served. When a step that
/// runs reads it, the reader sets the record aside, computes the input
/// itself first, and publishes a good copy, so that the next machine is
/// served again (before, the consumer failed, and every run again).
#[test]
fn a_damaged_input_on_the_remote_is_set_aside_computed_here_and_published_again() {
    let remote_dir = tempfile::tempdir().unwrap();
    let remote = remote_dir.path().to_str().unwrap();
    let first = GridTest::tiny_after_first_run();
    assert!(first.run_with_remote(remote).succeeded());
    // Every shortcut model's weights on the remote: same size, other bytes.
    let store = grid_cache::Remote::open(remote).unwrap();
    let mut damaged = 0;
    for (object, _) in store.list("steps/train").unwrap() {
        let record: grid_cache::remote::Published<StepKind> =
            serde_json::from_slice(&std::fs::read(remote_dir.path().join(&object)).unwrap()).unwrap();
        if record.manifest.label.contains("/original/") {
            continue;
        }
        let file = &record.manifest.files.iter().max_by_key(|f| f.bytes).unwrap().name;
        let path = remote_dir.path().join(&record.payload).join(file);
        let mut bytes = std::fs::read(&path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        std::fs::write(&path, bytes).unwrap();
        damaged += 1;
    }
    assert_eq!(damaged, 3, "st, tic and op");
    drop(store);

    // A second machine adds a method: its cells read the shortcut models.
    let second = GridTest::new(TINY);
    second.write_grid(&TINY.replace(r#""gxil", "random""#, r#""gxil", "random", "gradp-l2""#));
    let run = second.grid(&["run", "grid.toml", "--remote", remote, "-j", "2"]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert_eq!(stderr.matches("computing it here first").count(), 3, "{stderr}");
    assert!(stderr.contains("checksum") && stderr.contains("set aside to damaged/train/"), "{stderr}");
    let store = grid_cache::Remote::open(remote).unwrap();
    assert_eq!(store.list("damaged").unwrap().len(), 3, "kept for a look, until gc");
    drop(store);

    // The models are on the remote again, whole: a third machine computes nothing.
    let third = GridTest::new(TINY);
    third.write_grid(&TINY.replace(r#""gxil", "random""#, r#""gxil", "random", "gradp-l2""#));
    let run = third.grid(&["run", "grid.toml", "--remote", remote]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success() && stderr.contains(" 0 ran") && !stderr.contains("damaged"), "{stderr}");
    assert_eq!(report_files(&third.reports().join("tiny")), report_files(&second.reports().join("tiny")));
    // The second machine's weights are the first's: retrained under the same
    // seed (training.json differs: it records the seconds taken).
    let pull = third.grid(&["pull", "grid.toml", "--remote", remote]);
    assert!(pull.status.success(), "{}", String::from_utf8_lossy(&pull.stderr));
    let ours = Cache::open(third.cache()).unwrap().manifests(StepKind::Train).unwrap();
    let theirs = Cache::open(first.cache()).unwrap().manifests(StepKind::Train).unwrap();
    let files = |ms: &[grid_cache::Manifest<StepKind>]| {
        let weights =
            |m: &grid_cache::Manifest<StepKind>| m.files.iter().find(|f| f.name == "model.safetensors").cloned();
        let mut v: Vec<_> = ms.iter().map(|m| (m.key.clone(), weights(m))).collect();
        v.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        v
    };
    assert_eq!(files(&ours), files(&theirs));
}

/// `--cache s3://…` (here `file://`): the store is the cache, with a
/// working copy per URL under the user's cache folder.
#[test]
fn a_cache_given_as_a_url_is_the_remote_behind_a_working_copy() {
    let remote_dir = tempfile::tempdir().unwrap();
    let url = format!("file://{}", remote_dir.path().display());
    let first = GridTest::tiny_after_first_run();
    assert!(first.run_with_remote(remote_dir.path().to_str().unwrap()).succeeded());

    let home = tempfile::tempdir().unwrap();
    let env = [("XDG_CACHE_HOME", home.path().to_str().unwrap())];
    let second = GridTest::new(TINY);
    let run = second.grid_with(&["run", "grid.toml", "--cache", &url], &env);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success() && stderr.contains(" 0 ran"), "{stderr}");
    assert!(!second.cache().exists(), "no local `cache/` folder");
    let copies: Vec<_> = std::fs::read_dir(home.path().join("grid/remotes")).unwrap().flatten().collect();
    assert_eq!(copies.len(), 1, "one working copy");
    assert_eq!(cached_kinds(&copies[0].path()), [(StepKind::Report, 1)], "only the report came down");
    assert_eq!(report_files(&second.reports().join("tiny")), report_files(&first.reports().join("tiny")));
    let status = second.grid_with(&["status", "grid.toml", "--cache", &url], &env);
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));

    let both = second.grid_with(&["plan", "grid.toml", "--cache", &url, "--remote", "/elsewhere"], &env);
    assert_eq!(both.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&both.stderr).contains("give one of them"));
}
