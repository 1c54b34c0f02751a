//! Dataset files on the Hub (`hf://datasets/…`): downloaded into the cache once
//! when the grid is planned, keyed by their content, so a local copy of the
//! same bytes plans the same steps.

use std::path::Path;

use crate::util::{BranchingHub, GridTest, serve_as_hub};

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
    grid_of(&format!(
        r#"name = "reviews"
train = "{files}train.csv"
validation = "{files}validation.csv"
test = "{files}test.csv""#
    ))
}

/// A grid of one dataset (`dataset`: its keys up to `max_length`) and a tiny
/// BiLSTM, on natural data.
fn grid_of(dataset: &str) -> String {
    format!(
        r#"
name = "hubdata"
metrics = ["ns", "diagnosticity"]

[[datasets]]
{dataset}
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

/// Where the mock Hub serves SST-2's files: the repository and commit that
/// `experiments/bert_sweep.toml` pins.
const SST2: &str = "/datasets/stanfordnlp/sst2/resolve/8d51e7e4887a4caaa95b3fbebbf53c0490b58bbb/";

/// SST-2's columns as the Hub has them (`idx`, `sentence`, `label`), in
/// parquet, with the test split's labels hidden as -1 as GLUE hides them.
fn write_sst2_like(dir: &Path) {
    use polars::prelude::*;
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let words = [("an awful , boring plot", 0i64), ("i loved it , a great film", 1)];
    for (split, rows, hidden) in [("train", 160, false), ("validation", 40, false), ("test", 40, true)] {
        let idx: Vec<i32> = (0..rows).collect();
        let sentence: Vec<String> = (0..rows).map(|i| format!("{} {i}", words[i as usize % 2].0)).collect();
        let label: Vec<i64> = (0..rows).map(|i| if hidden { -1 } else { words[i as usize % 2].1 }).collect();
        let mut df = df!("idx" => idx, "sentence" => sentence, "label" => label).unwrap();
        let file = std::fs::File::create(data.join(format!("{split}-00000-of-00001.parquet"))).unwrap();
        ParquetWriter::new(file).finish(&mut df).unwrap();
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// bert_sweep's SST-2 dataset as written, its pins swapped for the served
/// fixture's (the real files are not reachable here), on a tiny BiLSTM.
fn pinned_grid(served: &Path, pins_of: impl Fn(&Path) -> (u64, String)) -> String {
    let sweep =
        grid_pipeline::spec::Grid::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/bert_sweep.toml"))
            .expect("bert_sweep.toml loads");
    let sst2 = sweep.datasets.iter().find(|d| d.name == "sst2").expect("bert_sweep has sst2");
    let grid_pipeline::spec::DatasetSource::Files { train, validation, test, text_column, .. } = &sst2.source else {
        panic!("sst2 is read from files");
    };
    assert!(validation.is_none(), "GLUE hides SST-2's test labels: validation is held out of train");
    let entry = |file: &grid_pipeline::spec::SplitFile| {
        let address = file.hub_address().expect("pinned to the Hub");
        // `hf://datasets/org/name@revision/path`
        let path = address.split_once('@').and_then(|(_, r)| r.split_once('/')).unwrap().1;
        let (bytes, sha256) = pins_of(&served.join(path));
        format!(r#"{{ file = "{address}", bytes = {bytes}, sha256 = "{sha256}" }}"#)
    };
    grid_of(&format!(
        r#"name = "sst2"
train = {}
test = {}
text_column = "{text_column}"
validation_share = 0.2"#,
        entry(train),
        entry(test)
    ))
}

fn pins_of(path: &Path) -> (u64, String) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (bytes.len() as u64, sha256_hex(&bytes))
}

#[test]
fn bert_sweep_pins_the_published_sst2_and_imdb_files() {
    let sweep =
        grid_pipeline::spec::Grid::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/bert_sweep.toml"))
            .expect("bert_sweep.toml loads");
    let mut pinned = Vec::new();
    for dataset in &sweep.datasets {
        let grid_pipeline::spec::DatasetSource::Files { train, validation, test, .. } = &dataset.source else {
            panic!()
        };
        for file in [Some(train), validation.as_ref(), Some(test)].into_iter().flatten() {
            let pin = file.pin.as_ref().expect("every file pinned");
            pinned.push((file.hub_address().unwrap().to_string(), pin.bytes.unwrap(), pin.sha256.clone()));
        }
    }
    let sst2 = "hf://datasets/stanfordnlp/sst2@8d51e7e4887a4caaa95b3fbebbf53c0490b58bbb/data/";
    let imdb = "hf://datasets/stanfordnlp/imdb@e6281661ce1c48d982bc483cf8a173c1bbeb5d31/plain_text/";
    let expected = [
        (
            format!("{sst2}train-00000-of-00001.parquet"),
            3_110_458,
            "c7921283b75a42e685f50edecb96798607ea0fcbfd0739ee8975f22c12d55f09",
        ),
        (
            format!("{sst2}validation-00000-of-00001.parquet"),
            72_813,
            "fb00fe008f6828f86ba2beda8415a4cf5da0c884f21c5f238c87131b5aa19529",
        ),
        (
            format!("{imdb}train-00000-of-00001.parquet"),
            20_979_968,
            "db47d16b5c297cc0dd625e519c81319c24c9149e70e8496de5475f6fa928342c",
        ),
        (
            format!("{imdb}test-00000-of-00001.parquet"),
            20_470_363,
            "b52e26e2f872d282ffac460bf9770b25ac6f102cda0e6ca7158df98c94e8b3da",
        ),
    ];
    let expected: Vec<_> = expected.into_iter().map(|(a, b, s)| (a, b, s.to_string())).collect();
    assert_eq!(pinned, expected);
}

#[test]
fn a_grid_pinned_to_sst2_on_the_hub_runs_from_one_checked_download_with_the_same_keys_on_a_second_machine() {
    let served = tempfile::tempdir().unwrap();
    write_sst2_like(served.path());
    let endpoint = serve_as_hub(served.path(), SST2);
    let text = pinned_grid(served.path(), pins_of);

    let first = GridTest::new(&text);
    let out = first.grid_on_hub(&endpoint, &["run", "grid.toml", "-q"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A second machine: its own cache, its own download, the same keys.
    let second = GridTest::new(&text);
    assert_eq!(second.plan_keys_on_hub(&endpoint), first.plan_keys_on_hub("http://127.0.0.1:9"));
    // Downloaded once: with the Hub gone, the cached, checked copies serve.
    let again = first.grid_on_hub("http://127.0.0.1:9", &["run", "grid.toml", "-q"]);
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));

    // A pin the served bytes do not meet: refused naming the grid, the file
    // and both hashes, and nothing is published into the cache.
    let wrong = GridTest::new(&pinned_grid(served.path(), |p| (pins_of(p).0, "ab".repeat(32))));
    let out = wrong.grid_on_hub(&endpoint, &["plan", "grid.toml", "-q"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let served_sha = pins_of(&served.path().join("data/train-00000-of-00001.parquet")).1;
    assert!(
        err.contains("grid.toml")
            && err.contains("data/train-00000-of-00001.parquet")
            && err.contains(&format!("pinned sha256 {}", "ab".repeat(32)))
            && err.contains(&format!("found sha256 {served_sha}")),
        "{err}"
    );
    let published = "hub/datasets--stanfordnlp--sst2/8d51e7e4887a4caaa95b3fbebbf53c0490b58bbb/\
                     data%2Ftrain-00000-of-00001.parquet~file";
    assert!(first.cache().join(published).is_dir());
    assert!(!wrong.cache().join(published).exists());
}

/// Issue 59, item 3: without the Hub (`HF_HUB_OFFLINE=1`, or no network) a
/// run stops before any step with one error listing every file the cache
/// lacks and the local alternative; once cached, the files serve offline.
#[test]
fn without_the_hub_a_run_stops_at_once_listing_every_missing_file_and_the_local_alternative() {
    let served = tempfile::tempdir().unwrap();
    write_sst2_like(served.path());
    let t = GridTest::new(&pinned_grid(served.path(), pins_of));
    for (endpoint, env, why) in [
        ("http://127.0.0.1:9", None, "127.0.0.1:9"),
        ("http://127.0.0.1:9", Some(("HF_HUB_OFFLINE", "1")), "HF_HUB_OFFLINE is set"),
    ] {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_grid"));
        command.args(["run", "grid.toml"]).current_dir(t.path()).env("HF_ENDPOINT", endpoint).env_remove("HF_TOKEN");
        command.env_remove("HF_HUB_OFFLINE").env_remove("GRID_DATA_ROOT").env_remove("GRID_CACHE");
        if let Some((key, value)) = env {
            command.env(key, value);
        }
        let out = command.output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(err.contains("the Hugging Face Hub cannot be reached") && err.contains(why), "{err}");
        assert!(err.contains("the cache lacks 2 of the grid's files"), "{err}");
        for listed in [
            "datasets.sst2.train",
            "data/train-00000-of-00001.parquet",
            "datasets.sst2.test",
            "data/validation-00000-of-00001.parquet",
            "--with experiments/data/local.toml --data-root DIR",
        ] {
            assert!(err.contains(listed), "{listed}: {err}");
        }
        assert_eq!(err.matches("cannot be reached").count(), 1, "said once: {err}");
        assert!(!err.contains("steps:"), "no step ran: {err}");
    }
    // Fetched once with the Hub, then planned offline from the cache.
    let endpoint = serve_as_hub(served.path(), SST2);
    let out = t.grid_on_hub(&endpoint, &["plan", "grid.toml", "-q"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = t.grid_with(&["plan", "grid.toml", "-q"], &[("HF_HUB_OFFLINE", "1")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// Issue 59, item 2: a Hub reference without a commit is resolved once and
/// written to `grid.lock` beside the grid; another machine given the lock reads
/// the locked bytes after `main` moved on; `grid lock` moves it on purpose; a
/// lock that disagrees with the cache names the grid, the reference and both
/// hashes.
#[test]
fn unpinned_hub_files_are_locked_beside_the_grid_and_read_as_locked_on_another_machine() {
    let (c1, c2) = ("1".repeat(40), "2".repeat(40));
    let hub = BranchingHub::start("datasets/org/reviews");
    let first_files = tempfile::tempdir().unwrap();
    write_splits(first_files.path());
    hub.push(&c1, first_files.path());

    let t = GridTest::new(&grid("hf://datasets/org/reviews/"));
    let keys = |t: &GridTest| t.plan_keys_on_hub(&hub.endpoint);
    let locked_keys = keys(&t);
    let lock = std::fs::read_to_string(t.path().join("grid.lock")).expect("grid.lock written beside the grid");
    let train_sha = sha256_hex(&std::fs::read(first_files.path().join("train.csv")).unwrap());
    assert!(
        lock.contains(r#"reference = "hf://datasets/org/reviews/train.csv""#)
            && lock.contains(&format!(r#"commit = "{c1}""#))
            && lock.contains(&format!(r#"sha256 = "{train_sha}""#)),
        "{lock}"
    );
    assert_eq!(lock.matches("[[file]]").count(), 3, "{lock}");

    // Upstream moves on: other bytes on main.
    let moved = tempfile::tempdir().unwrap();
    write_splits(moved.path());
    std::fs::write(moved.path().join("train.csv"), "text,label\n\"a new row\",1\n\"another\",0\n").unwrap();
    hub.push(&c2, moved.path());

    // Another machine with the grid and its lock: the locked bytes, the same keys.
    let other = GridTest::new(&grid("hf://datasets/org/reviews/"));
    std::fs::copy(t.path().join("grid.lock"), other.path().join("grid.lock")).unwrap();
    assert_eq!(keys(&other), locked_keys);
    assert_eq!(
        std::fs::read_to_string(other.path().join("grid.lock")).unwrap(),
        lock,
        "a lock in use is not rewritten"
    );

    // `grid lock` moves it on purpose: main's new commit, new bytes, new keys.
    let out = other.grid_on_hub(&hub.endpoint, &["lock", "grid.toml"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let moved_lock = std::fs::read_to_string(other.path().join("grid.lock")).unwrap();
    assert!(moved_lock.contains(&format!(r#"commit = "{c2}""#)) && !moved_lock.contains(&c1), "{moved_lock}");
    assert_ne!(keys(&other), locked_keys);

    // A lock that disagrees with the cached copy: the grid, the reference, both hashes.
    let wrong = "ab".repeat(32);
    std::fs::write(t.path().join("grid.lock"), lock.replace(&train_sha, &wrong)).unwrap();
    let out = t.grid_on_hub(&hub.endpoint, &["plan", "grid.toml", "-q"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("grid.toml")
            && err.contains("hf://datasets/org/reviews/train.csv")
            && err.contains(&wrong)
            && err.contains(&train_sha)
            && err.contains("grid lock"),
        "{err}"
    );
}

/// IMDB's files as the Hub has them (`text`, `label`), in parquet.
fn write_imdb_like(dir: &Path) {
    use polars::prelude::*;
    let data = dir.join("plain_text");
    std::fs::create_dir_all(&data).unwrap();
    let words = [("a dull , tedious film that drags on", 0i64), ("a moving , funny and brilliant film", 1)];
    for (split, rows) in [("train", 120), ("test", 40)] {
        let text: Vec<String> = (0..rows).map(|i| format!("{} review {i}", words[i % 2].0)).collect();
        let label: Vec<i64> = (0..rows).map(|i| words[i % 2].1).collect();
        let mut df = df!("text" => text, "label" => label).unwrap();
        let file = std::fs::File::create(data.join(format!("{split}-00000-of-00001.parquet"))).unwrap();
        ParquetWriter::new(file).finish(&mut df).unwrap();
    }
}

/// Issue 59's "done": the user's command as typed, `grid run
/// experiments/bert_sweep.toml`, against a mock Hub serving SST-2, IMDB and
/// bert-base-uncased under the exact pinned names (the fixtures' bytes stand
/// in for the real files, so the data's pins are set to the fixtures' with
/// `--set`; the checkpoint's config.json is bert-base's shape, its weights a
/// tiny model's, which nothing here trains). On a terminal it fetches the data
/// (its bytes go into the keys) and the checkpoint, shows the estimate and
/// what would be faster, and asks; "no" starts nothing.
#[test]
fn the_users_command_fetches_the_pinned_data_shows_the_estimate_and_asks() {
    let (sst2, imdb) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_sst2_like(sst2.path());
    write_imdb_like(imdb.path());
    const IMDB: &str = "/datasets/stanfordnlp/imdb/resolve/e6281661ce1c48d982bc483cf8a173c1bbeb5d31/";
    const BERT: &str = "/google-bert/bert-base-uncased/resolve/86b5e0934494bd15c9632b12f734a8a67f723594/";
    let bert = tempfile::tempdir().unwrap();
    crate::bert::write_hf_checkpoint(bert.path(), "bert");
    let config = r#"{"model_type": "bert", "architectures": ["BertForMaskedLM"], "hidden_size": 768,
        "num_hidden_layers": 12, "num_attention_heads": 12, "intermediate_size": 3072, "vocab_size": 30522,
        "max_position_embeddings": 512, "type_vocab_size": 2, "hidden_act": "gelu", "layer_norm_eps": 1e-12,
        "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1, "pad_token_id": 0}"#;
    std::fs::write(bert.path().join("config.json"), config).unwrap();
    let endpoint = crate::util::serve_routes(vec![
        (SST2.to_string(), sst2.path().to_path_buf()),
        (IMDB.to_string(), imdb.path().to_path_buf()),
        (BERT.to_string(), bert.path().to_path_buf()),
    ]);
    let t = GridTest::new("");
    let sweep = Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/bert_sweep.toml");
    let mut command = format!("{} run {} --cache cache --reports reports", env!("CARGO_BIN_EXE_grid"), sweep.display());
    for (key, file) in [
        ("datasets.sst2.train", sst2.path().join("data/train-00000-of-00001.parquet")),
        ("datasets.sst2.test", sst2.path().join("data/validation-00000-of-00001.parquet")),
        ("datasets.imdb.train", imdb.path().join("plain_text/train-00000-of-00001.parquet")),
        ("datasets.imdb.test", imdb.path().join("plain_text/test-00000-of-00001.parquet")),
    ] {
        let (bytes, sha256) = pins_of(&file);
        command.push_str(&format!(" --set {key}.sha256={sha256} --set {key}.bytes={bytes}"));
    }
    let Some((code, shown)) = crate::util::on_a_terminal(t.path(), &command, &[("HF_ENDPOINT", &endpoint)], "n\n")
    else {
        return;
    };
    assert_eq!(code, Some(1), "{shown}");
    for expected in [
        "downloading hf://datasets/stanfordnlp/sst2@8d51e7e4887a4caaa95b3fbebbf53c0490b58bbb/data/train-00000-of-00001.parquet",
        "downloading hf://datasets/stanfordnlp/imdb@e6281661ce1c48d982bc483cf8a173c1bbeb5d31/plain_text/test-00000-of-00001.parquet",
        "downloading hf://google-bert/bert-base-uncased@86b5e0934494bd15c9632b12f734a8a67f723594",
        "estimate: ",
        "faster: ",
        "Start it? [y/N]",
        "not started",
    ] {
        assert!(shown.contains(expected), "{expected}\n{shown}");
    }
    let hub = t.path().join("cache/hub");
    assert!(hub.join("datasets--stanfordnlp--sst2").is_dir() && hub.join("datasets--stanfordnlp--imdb").is_dir());
    let checkpoint = hub.join("google-bert--bert-base-uncased/86b5e0934494bd15c9632b12f734a8a67f723594");
    assert!(checkpoint.join("model.safetensors").is_file() && checkpoint.join("checksums.json").is_file());
    // Its shape priced the run: bert-base, days on a CPU.
    assert!(shown.contains(" days"), "{shown}");
}
