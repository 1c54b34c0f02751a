//! Zhou et al.'s rationale models end to end on tiny data: both selectors at
//! two target rates, on the article manipulations with and without
//! non-correlating articles, to the `zhou_rationale` table; the rationale
//! scored by every metric the grid names, the `sel-*` metrics on the
//! rationale only.

use grid_cache::Cache;
use grid_pipeline::dag::{self, PlanOptions};
use grid_pipeline::spec::Grid;

use crate::util::GridTest;

const MODELS: [(&str, &str, f64); 4] =
    [("rl-07", "rl", 0.07), ("rl-15", "rl", 0.15), ("cr-07", "hardkuma", 0.07), ("cr-15", "hardkuma", 0.15)];

fn grid() -> String {
    let mut text = String::from(
        r#"
name = "rationale"
metrics = ["sel-precision", "sel-recall", "sel-noncorr", "sel-rate", "attr"]

[[datasets]]
name = "gen"
generated = { train = 600, validation = 150, test = 120, seed = 3 }
max_length = 48

[shortcuts]
kinds = ["articles", "articles-nc"]
keep_probability = 0.5
seed = 5

[attribution]
methods = ["rationale", "gxil"]
sample = 60
"#,
    );
    for (name, selector, rate) in MODELS {
        text.push_str(&format!(
            r#"
[[models]]
name = "{name}"
architecture = "rationale"
selector = "{selector}"
selection_rate = {rate}
embedding_dim = 16
hidden_size = 16
attention_size = 16
mlp_size = 16
dropout = 0.1

[models.training]
learning_rate = 0.01
max_steps = 150
eval_every = 50
"#
        ));
    }
    text
}

fn csv(t: &GridTest, name: &str) -> polars::prelude::DataFrame {
    crate::util::read_csv(&t.reports().join("rationale").join(name))
}

#[test]
fn a_rationale_grid_runs_to_zhous_table() {
    let t = GridTest::new(&grid());
    let grid = Grid::load(&t.grid_file()).expect("valid grid");
    let cache = Cache::open(t.cache()).expect("cache");
    let plan = dag::plan(&grid, &cache, &PlanOptions::default()).expect("plan");
    let labels: Vec<&str> = plan.steps.iter().map(|s| s.label.as_str()).collect();
    // `sel-*` score the rationale only; `sel-noncorr` only where there are
    // non-correlating articles; `attr` scores both methods.
    assert!(labels.contains(&"score/gen/articles/rl-07/rationale/sel-precision"), "{labels:?}");
    assert!(labels.contains(&"score/gen/articles-nc/cr-15/rationale/sel-noncorr"));
    assert!(!labels.contains(&"score/gen/articles/cr-15/rationale/sel-noncorr"));
    assert!(!labels.iter().any(|l| l.contains("/gxil/sel-")));
    assert!(labels.contains(&"score/gen/articles/cr-07/gxil/attr"));

    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());

    let table = csv(&t, "zhou_rationale.csv");
    assert_eq!(table.height(), MODELS.len() * 2, "one row per model and manipulation");
    let column = |name: &str| -> Vec<String> {
        table.column(name).unwrap().str().unwrap().iter().map(|v| v.unwrap_or_default().to_string()).collect()
    };
    let selectors = column("selector");
    assert!(selectors.contains(&"RL".to_string()) && selectors.contains(&"CR".to_string()), "{selectors:?}");
    let number = |s: &str| -> f64 { s.trim_end_matches(" †").parse().unwrap_or_else(|_| panic!("a number: {s:?}")) };
    // Empty where undefined (a model that selects nothing has no precision).
    for name in ["precision", "recall", "realised %Sel", "%Sel per review"] {
        for value in column(name).into_iter().filter(|v| !v.is_empty()) {
            let v = number(&value);
            assert!((0.0..=1.0).contains(&v), "{name}: {v}");
        }
    }
    // The optimal lines bound what any selection reaches.
    for (optimal, ours) in
        [("optimal precision (set / review)", "precision"), ("optimal recall (set / review)", "recall")]
    {
        for (line, value) in column(optimal).iter().zip(column(ours)).filter(|(l, v)| !l.is_empty() && !v.is_empty()) {
            let (set, _review) = line.split_once(" / ").expect("two optima");
            assert!(number(&value) <= number(set) + 1e-9, "{ours} {value} above the optimum {set}");
        }
    }
    let manipulations = column("manipulation");
    for (manipulation, noncorr) in manipulations.iter().zip(column("non-corr. selected")) {
        assert_eq!(manipulation == "articles-nc", !noncorr.is_empty(), "{manipulation}: {noncorr:?}");
    }

    // The figures, and the rationales highlighted on the HTML page.
    let dir = t.reports().join("rationale");
    for stem in ["rationale_gen_articles", "rationale_gen_articles-nc"] {
        assert!(dir.join(format!("{stem}.svg")).is_file() && dir.join(format!("{stem}.png")).is_file(), "{stem}");
    }
    let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
    assert!(html.contains("data-method=\"rationale\"") && html.contains("A rationale model's own selection"));
    assert!(html.contains("table-zhou_rationale"));

    // The paper's findings, checked through the binary.
    let reference = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/reference/zhou2022_rationale_findings.csv");
    let out = t.grid(&["report", "grid.toml", "-q", "--compare", reference]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let compared = std::fs::read_to_string(dir.join("compare_zhou2022_rationale_findings.md")).unwrap();
    for needle in ["§7.1: We trained models", "§7.2:", "lowest", "findings above are the comparison"] {
        assert!(compared.contains(needle), "{needle}: {compared}");
    }
    let marks =
        compared.lines().filter(|l| l.starts_with("- ✓") || l.starts_with("- ✗") || l.starts_with("- ?")).count();
    assert_eq!(marks, 4, "{compared}");

    // Each model logs its selection rates at every evaluation.
    let cache = Cache::open(t.cache()).unwrap();
    let trained = plan.steps.iter().find(|s| s.label.starts_with("train/") && s.label.contains("cr-07")).unwrap();
    let dir = cache.step_dir(trained.kind, &trained.key);
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("training.json")).unwrap()).unwrap();
    assert_eq!(record["selector"], "hardkuma");
    let log = record["summary"]["log"].as_array().expect("a log");
    assert!(!log.is_empty() && log.iter().all(|e| e["selection"]["realised"].is_number()), "{log:?}");
}
