//! Every method config of the papers, plus the extra methods, from one TOML on
//! both architectures: each runs end to end, writes finite scores, reports its
//! completeness gap where it has one, and lands in the tables; configs an
//! architecture cannot run (`[MASK]` on the BiLSTM, `attn` on BERT) are left
//! out of the plan with a note instead of failing.

use grid_cache::Cache;
use grid_pipeline::dag::{self, PlanOptions};
use grid_pipeline::io::read_jsonl;
use grid_pipeline::spec::Grid;
use grid_pipeline::step_kind::StepKind;
use grid_pipeline::steps::attribute::{AttributedExample, AttributionSummary};

use crate::util::GridTest;

const ALL_METHODS: &str = r#"
name = "methods"
metrics = ["precision", "rank"]

[[datasets]]
name = "gen"
generated = { train = 300, validation = 80, test = 60, seed = 3 }
max_length = 32
batch_size = 16

[shortcuts]
kinds = ["st"]
seed = 5

[[models]]
name = "lstm"
architecture = "bilstm"
embedding_dim = 8
hidden_size = 8
attention_size = 8
mlp_size = 8

[models.training]
max_steps = 30
eval_every = 30
patience = 30

[[models]]
name = "bert"
architecture = "bert"
hidden_size = 16
num_hidden_layers = 1
num_attention_heads = 2
intermediate_size = 32
wordpiece_vocab_size = 200

[models.training]
learning_rate = 1e-3
max_steps = 30
eval_every = 30
patience = 30

[attribution]
methods = [
    "grad{p,l}-{l1,l2,mean}", "gxi{p,l}",
    "ig{p,l}-{zero,mask,unk,pad}-{5,10}",
    "lime{unk,mask,erase}-{20,40}",
    "kernelshap-{unk,mask,erase}-20",
    "occlusion-{unk,mask,erase}",
    "smooth-gradl-l2-3-0.1", "smooth-igl-zero-4-2-0.1",
    "attn", "attn-last", "attn-all", "attn-scaled",
    "deeplift", "deeplift-{unk,pad,mask}",
    "random",
]
sample = 8
internal_batch_size = 7
perturbations_per_eval = 50
"#;

#[test]
fn every_method_runs_on_both_architectures() {
    let t = GridTest::new(ALL_METHODS);
    let grid = Grid::load(&t.grid_file()).unwrap();
    let cache = Cache::open(t.cache()).unwrap();
    let plan = dag::plan(&grid, &cache, &PlanOptions::default()).unwrap();
    let mask_free = |m: &str| !m.contains("mask");
    let methods: Vec<String> = grid.attribution.methods.iter().map(|m| m.to_string()).collect();
    let lstm_methods: Vec<&String> =
        methods.iter().filter(|m| mask_free(m) && !m.starts_with("attn-l") && *m != "attn-all").collect();
    let bert_methods: Vec<&String> = methods.iter().filter(|m| *m != "attn").collect();
    let attribute_labels: Vec<&str> =
        plan.steps.iter().filter(|s| s.kind == StepKind::Attribute).map(|s| s.label.as_str()).collect();
    assert_eq!(attribute_labels.len(), lstm_methods.len() + bert_methods.len());
    for note in ["igl-mask-5 on model `lstm`", "attn-last on model `lstm`", "attn on model `bert`"] {
        assert!(plan.skipped.iter().any(|s| s.starts_with(note)), "{note} not in {:?}", plan.skipped);
    }

    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    for step in plan.steps.iter().filter(|s| s.kind == StepKind::Attribute) {
        let dir = cache.step_dir(step.kind, &step.key);
        let rows: Vec<AttributedExample> = read_jsonl(&dir.join("attributions.jsonl")).unwrap();
        let summary: AttributionSummary =
            serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
        assert!(!rows.is_empty(), "{}", step.label);
        let complete = summary.method.starts_with("ig") || summary.method.starts_with("deeplift");
        for row in &rows {
            assert_eq!(row.scores.len(), row.tokens.len(), "{}", step.label);
            assert!(row.scores.iter().all(|s| s.is_finite()), "{}: {:?}", step.label, row.scores);
            assert_eq!(row.completeness_gap.is_some(), complete, "{}", step.label);
        }
        if summary.method.starts_with("deeplift") {
            // Summation-to-delta: DeepLift's gap is float rounding only.
            assert!(summary.max_abs_completeness_gap.unwrap() < 1e-3, "{}: {summary:?}", step.label);
        }
    }
    let precision = std::fs::read_to_string(t.reports().join("methods").join("bert_precision.csv")).unwrap();
    for method in &bert_methods {
        assert!(precision.lines().any(|l| l.starts_with(&format!("{method},"))), "{method} row missing:\n{precision}");
    }
}

#[test]
fn word_aggregation_rescores_without_recomputing_attributions() {
    let small = r#"
name = "words"
metrics = ["precision"]

[[datasets]]
name = "gen"
generated = { train = 300, validation = 80, test = 60, seed = 3 }
max_length = 32

[shortcuts]
kinds = ["st"]
seed = 5

[[models]]
name = "bert"
architecture = "bert"
hidden_size = 16
num_hidden_layers = 1
num_attention_heads = 2
intermediate_size = 32
wordpiece_vocab_size = 120

[models.training]
learning_rate = 1e-3
max_steps = 20
eval_every = 20
patience = 20

[attribution]
methods = ["gradl-l2", "igl-zero-5"]
sample = 10
"#;
    let t = GridTest::new(small);
    assert!(t.run().succeeded());
    t.write_grid(&small.replace("sample = 10", "sample = 10\nword_aggregation = \"max\""));
    let outcome = t.run();
    assert!(outcome.succeeded());
    let ran: Vec<&str> = outcome.executed().map(|r| r.label.as_str()).collect();
    assert!(ran.iter().all(|l| l.starts_with("score/") || l.starts_with("report")), "only scoring reruns: {ran:?}");
    assert_eq!(ran.iter().filter(|l| l.starts_with("score/")).count(), 2);
}
