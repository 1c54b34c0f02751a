//! Issue 2, point 4: the cache recomputes exactly what changed. These tests count
//! executed steps, never time.

use grid_cache::Cache;
use grid_pipeline::dag::StepStatus;
use grid_pipeline::step_kind::StepKind;

use crate::util::{GridTest, TINY};

#[test]
fn rerun_computes_nothing() {
    let t = GridTest::tiny_after_first_run();
    let outcome = t.run();
    assert!(outcome.succeeded());
    assert_eq!(outcome.executed().count(), 0, "{:?}", outcome.executed().map(|r| &r.label).collect::<Vec<_>>());
    assert_eq!(outcome.cached(), outcome.records.len());
    assert!(outcome.console.is_some(), "the tables are printed from the cached report");
    assert!(t.reports().join("tiny/results_long.csv").is_file());
}

#[test]
fn adding_a_method_runs_only_its_cells() {
    let t = GridTest::tiny_after_first_run();
    t.write_grid(&TINY.replace(r#""gxil", "random""#, r#""gxil", "random", "gradp-l2""#));
    let outcome = t.run();
    assert!(outcome.succeeded());
    // 3 shortcuts × 1 new method; × 2 metrics; and the report.
    assert_eq!(outcome.executed_of(StepKind::Attribute), 3);
    assert_eq!(outcome.executed_of(StepKind::Score), 6);
    assert_eq!(outcome.executed_of(StepKind::Report), 1);
    assert_eq!(outcome.executed().count(), 10, "nothing is trained, synthesised or verified again");
    assert!(outcome.executed().all(|r| r.kind != StepKind::Attribute || r.label.ends_with("/gradp-l2")));
}

#[test]
fn changing_a_dataset_option_reruns_only_its_branch() {
    // Two datasets; change the second one's corpus seed.
    let two = TINY.replace(
        "[shortcuts]",
        "[[datasets]]\nname = \"other\"\ngenerated = { train = 600, validation = 150, test = 120, seed = 4 }\nmax_length = 48\n\n[shortcuts]",
    );
    let t = GridTest::new(&two);
    assert!(t.run().succeeded());
    t.write_grid(&two.replace("seed = 4 }", "seed = 9 }"));
    let outcome = t.run();
    assert!(outcome.succeeded());
    let executed: Vec<&str> = outcome.executed().map(|r| r.label.as_str()).collect();
    assert!(executed.iter().all(|l| l.contains("/other") || l.starts_with("report/")), "{executed:?}");
    assert_eq!(outcome.executed_of(StepKind::Corpus), 1);
    assert_eq!(outcome.executed_of(StepKind::Synth), 3);
    assert_eq!(outcome.executed_of(StepKind::Train), 4, "one original model and three shortcut models");
    assert_eq!(outcome.executed_of(StepKind::Verify), 3);
    assert_eq!(outcome.executed_of(StepKind::Attribute), 9);
    assert_eq!(outcome.executed_of(StepKind::Score), 18);
    assert_eq!(outcome.executed_of(StepKind::Report), 1);
}

/// A training reads its data's train and validation splits, not the test
/// split: changing only the test split gives every model a new key (its input,
/// the corpus or synth step, is keyed by all three), but the work is the same,
/// so each takes the cached result of its old key instead of training again.
/// Verification and everything after it read the test set, and run again.
/// A change to what they train on trains them again.
#[test]
fn changing_only_the_test_split_trains_nothing_again() {
    let t = GridTest::tiny_after_first_run();
    let cache = Cache::open(t.cache()).unwrap();
    // As a cache written before content keys has them: the key is then
    // derived from the manifests of the training's inputs.
    for manifest in train_manifests(&cache) {
        let path = cache.step_dir(StepKind::Train, &manifest.key).join("manifest.json");
        let mut json: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(json.as_object_mut().unwrap().remove("content_key").is_some());
        std::fs::write(&path, serde_json::to_vec_pretty(&json).unwrap()).unwrap();
    }
    let trained_before = train_manifests(&cache);
    assert_eq!(trained_before.len(), 4);
    assert!(trained_before.iter().all(|m| m.content_key.is_none()));

    t.write_grid(&TINY.replace("max_length = 48", "max_length = 48\nlimits = { test = 100 }"));
    let plan = t.grid(&["plan", "grid.toml"]);
    let plan = String::from_utf8_lossy(&plan.stdout);
    let train_lines: Vec<&str> = plan.lines().filter(|l| l.contains(" train/")).collect();
    assert_eq!(train_lines.len(), 4, "{plan}");
    assert!(train_lines.iter().all(|l| l.contains("a cached result is taken if")), "{plan}");
    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    assert_eq!(outcome.executed_of(StepKind::Train), 0);
    let reused: Vec<_> = outcome.records.iter().filter(|r| matches!(r.status, StepStatus::Reused { .. })).collect();
    assert_eq!(reused.len(), 4, "{reused:?}");
    for record in &reused {
        assert_eq!(record.kind, StepKind::Train);
        let StepStatus::Reused { from } = &record.status else { unreachable!() };
        assert_eq!(from.label, record.label, "each model takes its own earlier training");
    }
    assert_eq!(outcome.executed_of(StepKind::Corpus), 1);
    assert_eq!(outcome.executed_of(StepKind::Synth), 3);
    assert_eq!(outcome.executed_of(StepKind::Verify), 3);
    assert_eq!(outcome.executed_of(StepKind::Attribute), 9);

    let plan = t.grid(&["plan", "grid.toml"]);
    let plan = String::from_utf8_lossy(&plan.stdout);
    let train_lines: Vec<&str> = plan.lines().filter(|l| l.contains(" train/")).collect();
    assert!(train_lines.iter().all(|l| l.starts_with("cached") && l.contains("taken from")), "{plan}");

    // New keys, the same checked files, and each manifest names its source.
    let trained_after: Vec<_> = train_manifests(&cache).into_iter().filter(|m| m.reused_from.is_some()).collect();
    assert_eq!(trained_after.len(), 4);
    for after in &trained_after {
        let from = after.reused_from.as_ref().unwrap();
        let before = trained_before.iter().find(|b| b.key == from.key).expect("the source is an earlier training");
        assert_ne!(after.key, before.key);
        assert_eq!(after.files, before.files);
        assert_eq!(after.label, before.label);
        assert!(after.content_key.is_some());
    }

    // Fewer training examples: a different training, computed.
    t.write_grid(&TINY.replace("max_length = 48", "max_length = 48\nlimits = { test = 100, train = 500 }"));
    let outcome = t.run();
    assert!(outcome.succeeded());
    assert_eq!(outcome.executed_of(StepKind::Train), 4);
    assert_eq!(outcome.reused(), 0);
}

/// Two runs of one grid on one machine write the same checkpoint bytes, so
/// the sha256 in their manifests agree (burn's metadata map, in hash order,
/// had made equal tensors differ in bytes).
#[test]
fn equal_trainings_write_equal_bytes() {
    let warm = GridTest::tiny_after_first_run();
    let fresh = GridTest::new(TINY);
    assert!(fresh.run().succeeded());
    let files = |t: &GridTest| {
        let mut by_label: Vec<_> = train_manifests(&Cache::open(t.cache()).unwrap())
            .into_iter()
            .map(|m| (m.label, m.files.into_iter().find(|f| f.name == "model.safetensors").unwrap()))
            .collect();
        by_label.sort_by(|a, b| a.0.cmp(&b.0));
        by_label
    };
    let (warm, fresh) = (files(&warm), files(&fresh));
    assert_eq!(warm.len(), 4);
    assert_eq!(warm, fresh);
}

fn train_manifests(cache: &Cache) -> Vec<grid_cache::Manifest<StepKind>> {
    cache.manifests(StepKind::Train).unwrap()
}

/// Issue 13: the cache serves nothing it cannot vouch for. A flipped byte in an
/// attribution, a deleted checkpoint and a cut manifest each make their step
/// run again (the damaged folder set aside, not deleted); nothing else reruns,
/// the run succeeds, and the tables are the same as before the damage.
#[test]
fn damaged_entries_are_computed_again_and_nothing_else() {
    let t = GridTest::tiny_after_first_run();
    let before = t.run();
    assert!(before.succeeded());
    let tables = std::fs::read(t.reports().join("tiny/results_long.csv")).unwrap();
    let steps = |kind: &str| -> Vec<std::path::PathBuf> {
        let mut dirs: Vec<_> = std::fs::read_dir(t.cache().join(kind))
            .unwrap()
            .flatten()
            .filter(|shard| shard.path().is_dir())
            .flat_map(|shard| std::fs::read_dir(shard.path()).unwrap().flatten().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        dirs
    };
    let attribution = steps("attribute").into_iter().find(|d| d.join("attributions.jsonl").is_file()).unwrap();
    let payload = attribution.join("attributions.jsonl");
    let mut bytes = std::fs::read(&payload).unwrap();
    let digit = bytes.iter().position(|b| b.is_ascii_digit()).unwrap();
    bytes[digit] = if bytes[digit] == b'7' { b'8' } else { b'7' };
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&payload, bytes).unwrap();
    let model = steps("train").into_iter().next().unwrap();
    std::fs::remove_file(model.join("model.safetensors")).unwrap();
    let verification = steps("verify").into_iter().next().unwrap().join("manifest.json");
    let text = std::fs::read(&verification).unwrap();
    std::fs::write(&verification, &text[..text.len() / 3]).unwrap();

    let plan = t.grid(&["plan", "grid.toml"]);
    let said = String::from_utf8_lossy(&plan.stdout);
    assert_eq!(said.matches("cached result damaged").count(), 3, "{said}");
    assert!(said.contains("model.safetensors: listed in the manifest but missing"), "{said}");

    let after = t.run();
    assert!(after.succeeded(), "{:?}", after.failures().collect::<Vec<_>>());
    let ran: Vec<StepKind> = after.executed().map(|r| r.kind).collect();
    assert_eq!(after.executed_of(StepKind::Attribute), 1, "{ran:?}");
    assert_eq!(after.executed_of(StepKind::Train), 1, "{ran:?}");
    assert_eq!(after.executed_of(StepKind::Verify), 1, "{ran:?}");
    assert_eq!(ran.len(), 3, "keys did not change, so nothing downstream reruns: {ran:?}");
    assert_eq!(std::fs::read_dir(t.cache().join("damaged")).unwrap().count(), 3, "set aside, not deleted");
    assert_eq!(std::fs::read(t.reports().join("tiny/results_long.csv")).unwrap(), tables);
}
