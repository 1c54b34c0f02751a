//! A BiLSTM whose embeddings start from a GloVe file (issue 14, item 4): the
//! file's coverage is recorded, its content is part of the models' keys, and a
//! file that does not fit the model is refused before anything runs.

use grid_cache::Cache;
use grid_pipeline::dag::{self, PlanOptions};
use grid_pipeline::spec::Grid;
use grid_pipeline::step_kind::StepKind;

use crate::util::{GridTest, TINY};

/// Words of the generated corpus, and one it never uses.
const VECTORS: &str = "the 0.1 0.2 -0.3 0.4\nfilm 0.5 -0.1 0.2 0.0\ngood 0.9 0.8 0.7 0.6\n\
bad -0.9 -0.8 -0.7 -0.6\nmovie 0.4 -0.2 0.1 0.3\nzyzzyva 1 1 1 1\n";

fn glove_grid(dim: usize) -> String {
    TINY.replace("embedding_dim = 16", &format!("embedding_dim = {dim}\nglove = \"vectors.txt\""))
}

fn train_records(t: &GridTest) -> Vec<serde_json::Value> {
    let grid = Grid::load(&t.grid_file()).unwrap();
    let cache = Cache::open(t.cache()).unwrap();
    let plan = dag::plan(&grid, &cache, &PlanOptions::default()).unwrap();
    plan.steps
        .iter()
        .filter(|s| s.kind == StepKind::Train)
        .map(|s| {
            let path = cache.step_dir(s.kind, &s.key).join("training.json");
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
        })
        .collect()
}

#[test]
fn glove_rows_are_loaded_and_the_file_is_in_the_key() {
    let t = GridTest::new(&glove_grid(4));
    std::fs::write(t.path().join("vectors.txt"), VECTORS).unwrap();
    let first = t.run();
    assert!(first.succeeded(), "{:?}", first.failures().collect::<Vec<_>>());
    for record in train_records(&t) {
        // Five of the six words are in every model's vocabulary; `zyzzyva` is not.
        assert_eq!(record["glove"]["found"], 5, "{record}");
        assert!(record["glove"]["vocab"].as_u64().unwrap() > 5, "{record}");
    }

    // Another vector for one word: every model trains again, nothing upstream.
    std::fs::write(t.path().join("vectors.txt"), VECTORS.replace("good 0.9", "good 0.95")).unwrap();
    let second = t.run();
    assert!(second.succeeded());
    assert_eq!(second.executed_of(StepKind::Corpus), 0);
    assert_eq!(second.executed_of(StepKind::Synth), 0);
    assert_eq!(second.executed_of(StepKind::Train), 4);
}

#[test]
fn a_file_of_the_wrong_width_is_refused_at_planning() {
    let t = GridTest::new(&glove_grid(8));
    std::fs::write(t.path().join("vectors.txt"), VECTORS).unwrap();
    let out = t.grid(&["run", "grid.toml", "-q"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("model `lstm`: GloVe file"), "{stderr}");
    assert!(stderr.contains("vectors.txt:1: 4-dimensional vectors, but `embedding_dim` is 8"), "{stderr}");
    assert!(!t.cache().join("corpus").exists(), "nothing ran");

    // A malformed line further down fails training with the file and line named.
    let t = GridTest::new(&glove_grid(4));
    std::fs::write(t.path().join("vectors.txt"), format!("{VECTORS}is 0.1 zero 0.3 0.4\n")).unwrap();
    let outcome = t.run();
    let errors: Vec<String> = outcome
        .failures()
        .filter_map(|r| match &r.status {
            dag::StepStatus::Failed { error } => Some(error.clone()),
            _ => None,
        })
        .collect();
    assert!(!errors.is_empty());
    assert!(errors.iter().all(|e| e.contains("vectors.txt:7: `zero` is not a number")), "{errors:?}");
}
