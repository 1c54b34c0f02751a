//! Dataset files on the Hub (`hf://datasets/…`): downloaded into the cache once
//! when the grid is planned, keyed by their content, so a local copy of the
//! same bytes plans the same steps.

use std::path::Path;

use crate::util::{GridTest, serve_as_hub};

/// The Hub's address of the test repository's files.
const REPO: &str = "/datasets/org/reviews/resolve/c0ffee/";

fn write_splits(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let words = [("an awful , boring plot", 0), ("I loved it , a great film", 1)];
    for (split, rows) in [("train", 120), ("validation", 30), ("test", 30)] {
        let mut csv = String::from("text,label\n");
        for i in 0..rows {
            let (text, label) = words[i % 2];
            csv.push_str(&format!("\"{text} {i}\",{label}\n"));
        }
        std::fs::write(dir.join(format!("{split}.csv")), csv).unwrap();
    }
}

fn grid(files: &str) -> String {
    format!(
        r#"
name = "hubdata"
metrics = ["ns", "diagnosticity"]

[[datasets]]
name = "reviews"
train = "{files}train.csv"
validation = "{files}validation.csv"
test = "{files}test.csv"
max_length = 16

[[models]]
name = "lstm"
architecture = "bilstm"
embedding_dim = 8
hidden_size = 8
attention_size = 8
mlp_size = 8

[models.training]
max_steps = 20
eval_every = 20

[attribution]
methods = ["gxil", "random"]
sample = 10
"#
    )
}

#[test]
fn hub_dataset_files_download_once_and_plan_the_keys_of_the_same_local_bytes() {
    let served = tempfile::tempdir().unwrap();
    write_splits(served.path());
    let endpoint = serve_as_hub(served.path(), REPO);

    let hub = GridTest::new(&grid("hf://datasets/org/reviews@c0ffee/"));
    let out = hub.grid_on_hub(&endpoint, &["run", "grid.toml", "-q"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let downloaded = hub.cache().join("hub/datasets--org--reviews/c0ffee/train.csv~file");
    assert_eq!(
        std::fs::read(downloaded.join("train.csv")).unwrap(),
        std::fs::read(served.path().join("train.csv")).unwrap()
    );
    assert!(downloaded.join("checksums.json").is_file());
    let hub_plan = hub.grid_on_hub(&endpoint, &["plan", "grid.toml", "--json"]);
    assert!(hub_plan.status.success());

    // The same bytes as local files: every key the same.
    let local = GridTest::new(&grid("data/"));
    write_splits(&local.path().join("data"));
    let local_plan = local.grid_on_hub("http://127.0.0.1:9", &["plan", "grid.toml", "--json"]);
    assert!(local_plan.status.success(), "{}", String::from_utf8_lossy(&local_plan.stderr));
    let keys = |out: &std::process::Output| -> Vec<String> {
        let steps: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        steps.iter().map(|s| s["key"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(keys(&hub_plan), keys(&local_plan));

    // Planned again with the Hub unreachable: the cached files serve.
    let offline = hub.grid_on_hub("http://127.0.0.1:9", &["plan", "grid.toml", "-q"]);
    assert!(offline.status.success(), "{}", String::from_utf8_lossy(&offline.stderr));
}

#[test]
fn a_missing_hub_dataset_file_is_a_usage_error_naming_the_dataset_and_file() {
    let served = tempfile::tempdir().unwrap();
    let endpoint = serve_as_hub(served.path(), REPO);
    let t = GridTest::new(&grid("hf://datasets/org/reviews@c0ffee/"));
    let out = t.grid_on_hub(&endpoint, &["plan", "grid.toml", "-q"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("dataset `reviews`") && err.contains("/datasets/org/reviews/resolve/c0ffee/train.csv: HTTP 404"),
        "{err}"
    );
    let bad = GridTest::new(&grid("hf://datasets/org/reviews@c0ffee/../"));
    let out = bad.grid_on_hub(&endpoint, &["plan", "grid.toml", "-q"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a file path in the repository"));
}
