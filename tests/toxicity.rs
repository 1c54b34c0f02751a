//! Issue 59, item 6: Bastings et al.'s third dataset. No registry serves
//! Wikipedia Toxicity, so a user brings Wulczyn et al.'s release; the
//! converter applies its preprocessing and `experiments/toxicity.toml` runs on
//! the result. Here on a fixture in the release's own layout.

use std::path::Path;

use crate::util::GridTest;

/// A small copy of the release's two TSVs: 3 annotators per comment, toxic
/// comments by majority, with the release's NEWLINE_TOKEN / TAB_TOKEN.
fn write_release(dir: &Path) {
    let mut comments = String::from("rev_id\tcomment\tyear\tlogged_in\tns\tsample\tsplit\n");
    let mut annotations = String::from("rev_id\tworker_id\ttoxicity\ttoxicity_score\n");
    let mut id = 1000;
    for (split, n) in [("train", 200), ("dev", 60), ("test", 60)] {
        for i in 0..n {
            id += 1;
            // Every fourth comment toxic by 2 of 3 votes, every fourth + 1 by 1 of 3 (not toxic).
            let (text, votes) = match i % 4 {
                0 => (format!("you are an idiot NEWLINE_TOKENand a fool {i}"), [1, 1, 0]),
                1 => (format!("thanks for the edit TAB_TOKEN on page {i}"), [1, 0, 0]),
                _ => (format!("please see the talk page about source {i}"), [0, 0, 0]),
            };
            comments.push_str(&format!("{id}\t{text}\t2015\tTrue\tarticle\trandom\t{split}\n"));
            for (worker, vote) in votes.iter().enumerate() {
                annotations.push_str(&format!("{id}\t{worker}\t{vote}\t{}\n", if *vote == 1 { -1 } else { 1 }));
            }
        }
    }
    std::fs::write(dir.join("toxicity_annotated_comments.tsv"), comments).unwrap();
    std::fs::write(dir.join("toxicity_annotations.tsv"), annotations).unwrap();
}

#[test]
fn wulczyns_release_is_converted_with_its_preprocessing_and_the_toxicity_grid_runs_on_it() {
    let Ok(python) = std::process::Command::new("python3").arg("--version").output() else {
        assert!(std::env::var_os("CI").is_none(), "CI needs python3 for the Toxicity converter");
        eprintln!("skipped: no python3");
        return;
    };
    assert!(python.status.success());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let release = tempfile::tempdir().unwrap();
    write_release(release.path());
    let t = GridTest::new("");
    let data = t.path().join("data");
    let out = std::process::Command::new("python3")
        .arg(root.join("scripts/toxicity_from_wulczyn.py"))
        .args([release.path(), &data])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    let train = crate::util::read_csv(&data.join("toxicity/train.csv"));
    assert_eq!(train.height(), 200);
    let labels: Vec<String> =
        train.column("label").unwrap().str().unwrap().iter().map(|v| v.unwrap_or_default().to_string()).collect();
    assert_eq!(labels.iter().filter(|l| *l == "1").count(), 50, "toxic by a majority of annotators only");
    let texts: Vec<String> =
        train.column("text").unwrap().str().unwrap().iter().map(|v| v.unwrap_or_default().to_string()).collect();
    assert_eq!(texts[0], "you are an idiot and a fool 0", "NEWLINE_TOKEN became a space");
    assert_eq!(texts[1], "thanks for the edit on page 1", "TAB_TOKEN became a space");
    assert_eq!(crate::util::read_csv(&data.join("toxicity/validation.csv")).height(), 60, "`dev` is validation");

    // The committed grid, shrunk to a tiny BiLSTM, end to end on the converted files.
    let grid = root.join("experiments/toxicity.toml");
    let grid = grid.to_str().unwrap();
    let run = t.grid(&[
        "run",
        grid,
        "--data-root",
        data.to_str().unwrap(),
        "--cache",
        "cache",
        "--reports",
        "reports",
        "-q",
        "--set",
        "~models.bert",
        "--set",
        "~models.lstm.glove",
        "--set",
        "models.lstm.embedding_dim=8",
        "--set",
        "models.lstm.hidden_size=8",
        "--set",
        "models.lstm.attention_size=8",
        "--set",
        "models.lstm.mlp_size=8",
        "--set",
        "models.lstm.training.max_steps=20",
        "--set",
        "models.lstm.training.eval_every=20",
        "--set",
        "datasets.toxicity.max_length=24",
        "--set",
        "datasets.toxicity.insert_within=12",
        "--set",
        "attribution.sample=10",
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    assert!(t.reports().join("toxicity/lstm_precision.csv").is_file());

    // A release without its annotations is named, with what it should hold.
    std::fs::remove_file(release.path().join("toxicity_annotations.tsv")).unwrap();
    let out = std::process::Command::new("python3")
        .arg(root.join("scripts/toxicity_from_wulczyn.py"))
        .args([release.path(), &data])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("toxicity_annotations.tsv: not found"));
}
