//! Zhou et al.'s article manipulations end to end on tiny data: label
//! reassignment, the three datasets (articles, CN, NC), verification against
//! the reassignment's bound, Attr% on correlating and non-correlating articles,
//! and the paper's Table 1 layout.

use grid_cache::Cache;
use grid_methods::shortcut::{ARTICLES, SyntheticExample};
use grid_pipeline::dag::{self, PlanOptions};
use grid_pipeline::spec::Grid;
use grid_pipeline::step_kind::StepKind;

use crate::util::GridTest;

const GRID: &str = r#"
name = "articles"
metrics = ["precision", "attr", "attr-noncorr"]

[[datasets]]
name = "gen"
generated = { train = 600, validation = 150, test = 120, seed = 3 }
max_length = 48

[shortcuts]
kinds = ["articles", "articles-cn", "articles-nc"]
keep_probability = 0.5
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
max_steps = 200
eval_every = 40
patience = 120

[attribution]
methods = ["attn", "gxil", "random"]
sample = 40
"#;

fn read(t: &GridTest, name: &str) -> String {
    let path = t.reports().join("articles").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn is_article(word: &str) -> bool {
    ARTICLES.contains(&word.to_lowercase().as_str())
}

#[test]
fn article_manipulations_end_to_end() {
    let t = GridTest::new(GRID);
    let grid = Grid::load(&t.grid_file()).expect("valid grid");
    let cache = Cache::open(t.cache()).expect("cache");
    let plan = dag::plan(&grid, &cache, &PlanOptions::default()).expect("plan");
    let labels: Vec<&str> = plan.steps.iter().map(|s| s.label.as_str()).collect();
    // Non-correlating articles exist only in CN and NC.
    assert!(labels.contains(&"score/gen/articles-cn/lstm/attn/attr-noncorr"), "{labels:?}");
    assert!(labels.contains(&"score/gen/articles-nc/lstm/gxil/attr-noncorr"));
    assert!(!labels.iter().any(|l| l.starts_with("score/gen/articles/") && l.ends_with("/attr-noncorr")));
    assert!(labels.contains(&"score/gen/articles/lstm/gxil/attr"));

    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());

    // The synthetic test sets: ground truth = the correlating articles, which
    // say the reassigned label; CN's distractors sit in the second half.
    let cache = Cache::open(t.cache()).unwrap();
    for kind in ["articles", "articles-cn", "articles-nc"] {
        let step = plan.steps.iter().find(|s| s.label == format!("synth/gen/{kind}")).unwrap();
        assert!(cache.lookup(StepKind::Synth, &step.key).unwrap().is_some(), "synth cached");
        let dir = cache.step_dir(StepKind::Synth, &step.key);
        let text = std::fs::read_to_string(dir.join("test.jsonl")).unwrap();
        let test: Vec<SyntheticExample> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert!(test.len() > 40, "{kind}: {} of 120 test examples have an article", test.len());
        let kept = test.iter().filter(|e| e.label == e.original_label).count();
        assert!((20..test.len() - 20).contains(&kept), "{kind}: r = 0.5 kept {kept} of {}", test.len());
        for e in &test {
            let words: Vec<&str> = e.text.split(' ').collect();
            let said = if e.label == 1 { "the" } else { "a" };
            assert!(!e.shortcut_positions.is_empty());
            for &p in &e.shortcut_positions {
                assert_eq!(words[p].to_lowercase(), said, "{kind}: {}", e.text);
            }
            // Every article of the text is either G or a distractor.
            let articles = words.iter().enumerate().filter(|(_, w)| is_article(w)).map(|(i, _)| i);
            let mut regions: Vec<usize> = e.shortcut_positions.iter().chain(&e.distractor_positions).copied().collect();
            regions.sort_unstable();
            assert_eq!(articles.collect::<Vec<_>>(), regions, "{kind}: {}", e.text);
            let mid = words.len() / 2;
            match kind {
                "articles" => assert!(e.distractor_positions.is_empty()),
                "articles-cn" => {
                    assert!(
                        e.shortcut_positions.iter().all(|&p| p < mid)
                            && e.distractor_positions.iter().all(|&p| p >= mid)
                    )
                }
                _ => assert!(
                    e.shortcut_positions.iter().all(|&p| p >= mid) && e.distractor_positions.iter().all(|&p| p < mid)
                ),
            }
        }
    }

    // Verification against max(r, 1 − r) = 50%: the original model stays
    // near it, a model of the articles goes well beyond.
    let verification = read(&t, "verification.csv");
    let header: Vec<&str> = verification.lines().next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap_or_else(|| panic!("{name}: {header:?}"));
    for line in verification.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        let value = |name: &str| fields[column(name)].parse::<f64>().unwrap();
        assert!(value("original_model_on_synthetic") < 0.65, "{line}");
        assert!(value("shortcut_model_on_synthetic") > 0.9, "the articles are learnable: {line}");
        assert!(value("shortcut_model_on_flip") > 0.9, "flipped articles are followed: {line}");
    }
    let accuracy = read(&t, "zhou_accuracy.md");
    assert!(accuracy.contains("| lstm") && accuracy.contains("articles-nc") && accuracy.contains("50.0"), "{accuracy}");
    // Bastings' Table 1 is about inserted shortcuts; a reassigned model's drop is not one.
    assert!(!t.reports().join("articles").join("bastings_table1.md").exists());

    // Zhou et al. Table 1: every method's Attr% beside the regions' shares.
    let table = read(&t, "zhou_table1_lstm.md");
    for needle in ["corr. articles", "non-corr. articles", "other words", "| articles-cn", "| attn", "NA"] {
        assert!(table.contains(needle), "{needle}: {table}");
    }
    let csv = read(&t, "zhou_table1_lstm.csv");
    let attn_whole = csv.lines().find(|l| l.starts_with("gen,articles,attn,")).expect("attn row");
    // "61.2% / 9.1%": Attr% and the articles' share of the tokens.
    let cell = attn_whole.split(',').nth(3).unwrap();
    let (attr, share) = cell.split_once(" / ").expect("Attr% / share");
    let percent = |s: &str| s.trim_end_matches(" †").trim_end_matches('%').parse::<f64>().unwrap();
    assert!((0.0..=100.0).contains(&percent(attr)) && (0.0..50.0).contains(&percent(share)), "{attn_whole}");
    let html = read(&t, "report.html");
    assert!(html.contains("table-zhou_table1_lstm") && html.contains(" distractor\""), "distractors marked");

    // Zhou et al.'s published Table 1 beside ours, through the binary.
    let reference = concat!(env!("CARGO_MANIFEST_DIR"), "/experiments/reference/zhou2022_article_attention.csv");
    let out = t.grid(&["report", "grid.toml", "-q", "--compare", reference]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let compared = read(&t, "compare_zhou2022_article_attention.md");
    for needle in ["| articles-nc", "attr-noncorr", "attr-other", "word frequency", "BeerAdvocate"] {
        assert!(compared.contains(needle), "{needle}: {compared}");
    }

    // A new keep probability reruns synthesis and everything after it, and
    // leaves the original models alone.
    t.write_grid(&GRID.replace("keep_probability = 0.5", "keep_probability = 0.8"));
    let grid = Grid::load(&t.grid_file()).unwrap();
    let p = dag::plan(&grid, &cache, &PlanOptions::default()).unwrap();
    let stale: Vec<&str> =
        p.steps.iter().filter(|s| cache.lookup(s.kind, &s.key).unwrap().is_none()).map(|s| s.label.as_str()).collect();
    assert!(stale.contains(&"synth/gen/articles-cn"));
    assert!(!stale.iter().any(|l| l.starts_with("train/gen/original/") || l.starts_with("corpus/")), "{stale:?}");
}
