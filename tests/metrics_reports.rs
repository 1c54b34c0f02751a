//! Every metric and report of a grid, end to end on tiny data: erasure metrics
//! and their diagnosticity, Attr%, method agreement, two training seeds, the
//! paper layouts in CSV / Markdown / LaTeX, charts and the HTML page.

use grid_cache::Cache;
use grid_pipeline::dag::{self, PlanOptions};
use grid_pipeline::spec::Grid;
use grid_pipeline::step_kind::StepKind;

use crate::util::GridTest;

const GRID: &str = r#"
name = "full"
metrics = ["precision", "rank", "attr", "ns", "nc", "soft-ns", "soft-nc", "diagnosticity", "agreement"]
seeds = [1, 2]

[[datasets]]
name = "gen"
generated = { train = 600, validation = 150, test = 120, seed = 3 }
max_length = 48

[shortcuts]
kinds = ["st", "op"]
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
methods = ["gradl-l1", "gxil", "occlusion-unk"]
sample = 30

[erasure]
ratios = [0.1, 0.5]

[agreement]
top_k = 3
"#;

fn plan(t: &GridTest) -> dag::Plan {
    let grid = Grid::load(&t.grid_file()).expect("valid grid");
    let cache = Cache::open(t.cache()).expect("cache");
    dag::plan(&grid, &cache, &PlanOptions::default()).expect("plan")
}

fn read(t: &GridTest, name: &str) -> String {
    let path = t.reports().join("full").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_metric_and_report_of_a_two_seed_grid() {
    let t = GridTest::new(GRID);
    let p = plan(&t);
    let labels: Vec<&str> = p.steps.iter().map(|s| s.label.as_str()).collect();
    // Per seed: a model, a random attribution for diagnosticity (not a listed
    // method), an erasure per method and one agreement per model cell.
    assert!(labels.contains(&"train/gen/st/lstm/seed-2"), "{labels:?}");
    assert!(labels.contains(&"attribute/gen/op/lstm/seed-1/random"));
    assert!(labels.contains(&"erasure/gen/op/lstm/seed-1/occlusion-unk"));
    assert!(labels.contains(&"agreement/gen/st/lstm/seed-2"));
    assert!(labels.contains(&"score/gen/st/lstm/seed-1/gxil/diag-soft-nc"));
    assert!(!labels.iter().any(|l| l.starts_with("score/") && l.contains("/random/")), "random is not a listed method");
    let count = |kind: StepKind| p.steps.iter().filter(|s| s.kind == kind).count();
    // 2 shortcuts × 2 seeds × (3 methods + random).
    assert_eq!(count(StepKind::Erasure), 16);
    assert_eq!(count(StepKind::Agreement), 4);
    // 3 methods × 11 metrics × 4 model cells.
    assert_eq!(count(StepKind::Score), 132);

    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());

    let long = read(&t, "results_long.csv");
    assert!(long.lines().next().unwrap().contains(",seed,"));
    let seeds: std::collections::BTreeSet<&str> = long.lines().skip(1).map(|l| l.split(',').nth(6).unwrap()).collect();
    assert_eq!(seeds.into_iter().collect::<Vec<_>>(), ["1", "2"]);
    // Every value of a share-like metric lies in [0, 1] (NC and Soft-NC are
    // normalised but not clipped, PROTOCOL §3).
    for line in long.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        let (metric, value) = (fields[5], fields[7]);
        if !["rank", "nc", "soft-nc"].contains(&metric) && !value.is_empty() {
            let v: f64 = value.parse().unwrap();
            assert!((0.0..=1.0).contains(&v), "{line}");
        }
    }

    // Mean ± sd over the two seeds in the per-metric layouts.
    assert!(read(&t, "lstm_precision.md").contains(" ± "));
    for stem in [
        "recommendation",
        "bastings_table1",
        "verification_seeds",
        "bastings_table2_gxi",
        "bastings_table3_grad",
        "family_occlusion",
        "bastings_full_lstm",
        "zhao_table2_lstm",
        "zhao_table3_lstm",
        "zhao_table6_lstm",
        "zhao_erasure_lstm",
        "agreement_lstm_gen_st_seed1",
        "lstm_attr",
        "lstm_soft-ns",
        "lstm_diag-ns",
    ] {
        for ext in ["csv", "md", "tex"] {
            assert!(!read(&t, &format!("{stem}.{ext}")).is_empty(), "{stem}.{ext}");
        }
    }
    // Both seeds' shortcut models, per shortcut: how many passed and how close they came.
    let seeds = read(&t, "verification_seeds.md");
    assert!(seeds.contains("worst margin") && seeds.matches(" of 2 |").count() == 2, "{seeds}");
    let tex = read(&t, "zhao_table2_lstm.tex");
    assert!(tex.contains("\\toprule") && tex.contains("Soft-NS") && tex.contains("\\label{tab:zhao_table2_lstm}"));
    let agreement = read(&t, "agreement_lstm_gen_st_seed1.md");
    assert!(agreement.contains("| gradl-l1") && agreement.contains("occlusion-unk"), "{agreement}");

    let dir = t.reports().join("full");
    for chart in ["verification", "precision_lstm_gen"] {
        for ext in ["svg", "png"] {
            let len = std::fs::metadata(dir.join(format!("{chart}.{ext}"))).map(|m| m.len()).unwrap_or(0);
            assert!(len > 1000, "{chart}.{ext}: {len} bytes");
        }
    }
    let html = read(&t, "report.html");
    for id in ["table-recommendation", "table-zhao_table2_lstm", "plot-verification", "section"] {
        assert!(html.contains(id), "{id}");
    }
    assert!(html.matches("class=\"example\"").count() >= 2, "example views");
    assert!(html.contains("shortcut"), "shortcut tokens marked");

    // Other erasure ratios: only erasure, its scores and the report run again.
    t.write_grid(&GRID.replace("ratios = [0.1, 0.5]", "ratios = [0.2, 0.5]"));
    let p = plan(&t);
    let cache = Cache::open(t.cache()).unwrap();
    let stale: Vec<StepKind> =
        p.steps.iter().filter(|s| cache.lookup(s.kind, &s.key).unwrap().is_none()).map(|s| s.kind).collect();
    assert!(stale.iter().all(|k| matches!(k, StepKind::Erasure | StepKind::Score | StepKind::Report)), "{stale:?}");
    assert_eq!(stale.iter().filter(|k| **k == StepKind::Erasure).count(), 16);
    // The ranking scores (precision, rank, attr) do not read erasure.
    assert_eq!(stale.iter().filter(|k| **k == StepKind::Score).count(), 3 * 8 * 4);
}
