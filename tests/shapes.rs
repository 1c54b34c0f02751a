//! Few shapes: a grid with the quickstart's two architectures and every
//! quickstart method, run with the GPU buckets on CPU, sends each model a
//! handful of `[rows, time]` shapes in training and attribution, and reaches the
//! same verdicts as with exact shapes.

use std::collections::{BTreeMap, BTreeSet};

use grid_cache::Cache;
use grid_core::backend::Compute;
use grid_core::buckets::Buckets;
use grid_pipeline::dag::{self, PlanOptions};
use grid_pipeline::spec::Grid;
use grid_pipeline::step_kind::StepKind;

use crate::util::GridTest;

/// The quickstart's models and methods at test size.
pub const QUICKSTART_SMALL: &str = r#"
name = "shapes"
metrics = ["precision"]

[[datasets]]
name = "gen"
generated = { train = 500, validation = 120, test = 100, seed = 3 }
max_length = 48

[shortcuts]
kinds = ["st"]
seed = 5

[[models]]
name = "lstm"
architecture = "bilstm"
embedding_dim = 16
hidden_size = 16
attention_size = 16
mlp_size = 16
dropout = 0.0
word_dropout = 0.0

[models.training]
batch_size = 32
learning_rate = 0.2
max_steps = 80
eval_every = 40
patience = 80

[[models]]
name = "tiny-bert"
architecture = "bert"
hidden_size = 16
num_hidden_layers = 1
num_attention_heads = 2
intermediate_size = 32
wordpiece_vocab_size = 200
dropout = 0.0

[models.training]
batch_size = 16
learning_rate = 1e-3
max_steps = 60
eval_every = 30
patience = 60

[attribution]
methods = [
    "grad{p,l}-{l1,l2,mean}", "gxi{p,l}",
    "igl-{zero,pad}-20",
    "limeunk-40",
    "occlusion-unk",
    "attn", "attn-last", "attn-scaled",
    "deeplift",
    "random",
]
sample = 30
internal_batch_size = 64
perturbations_per_eval = 64
"#;

/// Distinct shapes per model (training, validation and every attribution step),
/// keyed by the model's name.
fn shapes_per_model(t: &GridTest) -> BTreeMap<String, BTreeSet<[usize; 2]>> {
    let grid = Grid::load(&t.grid_file()).unwrap();
    let cache = Cache::open(t.cache()).unwrap();
    let plan = dag::plan(&grid, &cache, &PlanOptions::default()).unwrap();
    let mut shapes: BTreeMap<String, BTreeSet<[usize; 2]>> = BTreeMap::new();
    let read = |kind: StepKind, key, file: &str| -> serde_json::Value {
        let path = cache.step_dir(kind, key).join(file);
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
            .unwrap()
    };
    let parse = |v: &serde_json::Value| -> Vec<[usize; 2]> { serde_json::from_value(v.clone()).unwrap() };
    for step in &plan.steps {
        let model = if step.label.contains("tiny-bert") { "tiny-bert" } else { "lstm" };
        // Only the shortcut model (st) is attributed; train steps of the original count too.
        let found = match step.kind {
            StepKind::Train if step.label.contains("/st/") => {
                parse(&read(step.kind, &step.key, "training.json")["summary"]["shapes"])
            }
            StepKind::Attribute => parse(&read(step.kind, &step.key, "summary.json")["shapes"]),
            _ => continue,
        };
        shapes.entry(model.to_string()).or_default().extend(found);
    }
    shapes
}

#[test]
fn a_model_sees_a_handful_of_shapes_and_the_same_verdicts() {
    let exact = GridTest::new(QUICKSTART_SMALL);
    let outcome = exact.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    let bucketed = GridTest::new(QUICKSTART_SMALL);
    let outcome = bucketed.run_with(Compute { buckets: Buckets::GPU, ..Compute::cpu() });
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());

    // The documented bound (README, "The GPU path"): lengths in multiples of 16
    // up to max_length (48: 3 buckets) times batches of a power of two up to
    // 256 rows (9 sizes).
    let bound = 48usize.div_ceil(16) * 9;
    let (exact_shapes, bucketed_shapes) = (shapes_per_model(&exact), shapes_per_model(&bucketed));
    for (model, shapes) in &bucketed_shapes {
        eprintln!("{model}: {} shapes bucketed, {} exact", shapes.len(), exact_shapes[model].len());
        assert!(shapes.len() <= bound, "{model}: {} shapes > {bound}: {shapes:?}", shapes.len());
        assert!(shapes.iter().all(|&[rows, time]| rows.is_power_of_two() && time % 16 == 0), "{model}: {shapes:?}");
        assert!(exact_shapes[model].len() > 2 * shapes.len(), "{model}: exact {:?}", exact_shapes[model]);
    }
    assert_eq!(bucketed_shapes.len(), 2);

    // Same verdicts: every accuracy of the verification table equal.
    let table = |t: &GridTest| std::fs::read_to_string(t.reports().join("shapes/verification.csv")).unwrap();
    assert_eq!(table(&exact), table(&bucketed));
}
