//! Zhou et al.'s image protocol as a grid, end to end on the embedded
//! photographs: `[images]` planned into corpus, synth, train, verify,
//! attribute and score steps, run, and reported as the Figure 3 table;
//! a second run computes nothing.

use grid_cache::Cache;
use grid_pipeline::dag::{self, PlanOptions};
use grid_pipeline::spec::Grid;

use crate::util::GridTest;

/// Small enough for the suite: one manipulation (the watermark, which a
/// narrow ResNet learns fastest), 32 pixels, 400 training crops.
const GRID: &str = r#"
name = "images"

[images]
side = 32
manipulations = ["watermark"]
seed = 1

[[images.datasets]]
name = "photos"
embedded = { train = 200, validation = 20, test = 20 }

[[images.models]]
name = "r18w8"
depth = 18
width = 8
training = { max_steps = 150, eval_every = 25 }

[images.attribution]
methods = ["gradient", "gradcam", "kernel-shap"]
sample = 40
perturbation_samples = 64
checkpoints = 2
"#;

fn csv(t: &GridTest, name: &str) -> polars::prelude::DataFrame {
    crate::util::read_csv(&t.reports().join("images").join(name))
}

#[test]
fn an_image_grid_runs_to_zhous_figure_3_table() {
    let t = GridTest::new(GRID);
    let grid = Grid::load(&t.grid_file()).expect("valid grid");
    let cache = Cache::open(t.cache()).expect("cache");
    let plan = dag::plan(&grid, &cache, &PlanOptions::default()).expect("plan");
    let labels: Vec<&str> = plan.steps.iter().map(|s| s.label.as_str()).collect();
    for label in [
        "corpus/images/photos",
        "synth/images/photos/watermark",
        "train/images/photos/watermark/r18w8",
        "verify/images/photos/watermark/r18w8",
        "attribute/images/photos/watermark/r18w8/kernel-shap",
        "score/images/photos/watermark/r18w8/kernel-shap/attr",
        "verify/images/photos/watermark/r18w8/step-25",
        "score/images/photos/watermark/r18w8/kernel-shap/step-150/attr",
        "report/images",
    ] {
        assert!(labels.contains(&label), "{label} not in {labels:?}");
    }
    // corpus, synth, train; per model (the trained one and two checkpoints)
    // a verify and each method's attribute and score; the report.
    assert_eq!(plan.steps.len(), 3 + 3 * (1 + 3 * 2) + 1);

    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());

    let data: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.reports().join("images").join("report_data.json")).unwrap()).unwrap();
    let all = data["images"].as_array().expect("image rows");
    // Three methods × two classes of test image, for the trained model and
    // the checkpoints at steps 25 and 150 (a class without images has none).
    let rows: Vec<&serde_json::Value> = all.iter().filter(|r| r.get("checkpoint").is_none()).collect();
    assert_eq!(rows.len(), 6, "{rows:?}");
    let steps: Vec<u64> = all.iter().filter_map(|r| r["checkpoint"].as_u64()).collect();
    assert!(steps.contains(&25) && steps.contains(&150), "{steps:?}");
    assert!(rows.iter().all(|r| r["verified"] == true), "the watermark is learned: {rows:?}");
    let attr = |method: &str, class: &str| {
        rows.iter()
            .find(|r| r["method"] == method && r["class"] == class)
            .and_then(|r| r["attr"].as_f64())
            .unwrap_or_else(|| panic!("no {method}/{class} row"))
    };
    let region = rows[0]["region_share"].as_f64().unwrap();
    // KernelSHAP finds the watermark where it is, well above an even map.
    assert!(
        attr("kernel-shap", "manipulated") > region + 0.2,
        "KernelSHAP {} against %ER {region}",
        attr("kernel-shap", "manipulated")
    );

    let table = csv(&t, "zhou_images_attr.csv");
    let methods: Vec<String> =
        table.column("method").unwrap().str().unwrap().iter().map(|m| m.unwrap_or_default().to_string()).collect();
    assert_eq!(methods, ["gradient", "gradcam", "kernel-shap"]);
    assert!(table.column("watermark").is_ok(), "{table}");
    assert!(t.reports().join("images").join("zhou_images_attr_er.svg").is_file());
    assert!(t.reports().join("images").join("zhou_images_attr_accuracy.svg").is_file(), "Figure 4");
    // A few test images with every method's map overlaid, on the page too.
    assert!(t.reports().join("images").join("zhou_images_maps_photos_watermark_r18w8.png").is_file());
    let html = std::fs::read_to_string(t.reports().join("images").join("report.html")).unwrap();
    assert!(html.contains("r18w8 · photos · watermark: test images, then gradient, gradcam, kernel-shap"));

    // `--compare` against the paper's findings: each held, not held or
    // undecided, with our numbers; the checkpoints decide the fifth.
    let reference =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/reference/zhou2022_image_findings.csv");
    let mut written = Vec::new();
    grid_pipeline::compare::compare_with_published(&plan, &cache, &t.reports(), &[reference], &[], |w| written.push(w))
        .expect("compare");
    let markdown = &written[0].markdown;
    assert_eq!(markdown.lines().filter(|l| l.contains("§5.")).count(), 6, "six findings: {markdown}");
    assert!(markdown.contains("§5.2: SHAP on watermark") && markdown.contains("Spearman"), "{markdown}");

    // Everything is cached: nothing runs again.
    let again = t.run();
    assert!(again.succeeded());
    assert_eq!(again.executed().count(), 0);
    assert_eq!(again.cached(), plan.steps.len());
}

/// A model that stops at an accuracy bar cannot know its checkpoints' steps
/// before it trains: they are positions, log-spaced over the evaluations
/// the run made, resolved when it ends (not steps it may never reach).
#[test]
fn checkpoints_of_a_run_that_stops_early_are_spaced_over_the_steps_it_ran() {
    let grid = GRID
        .replace(
            "training = { max_steps = 150, eval_every = 25 }",
            "training = { max_steps = 1000, eval_every = 25, stop_at_accuracy = 0.9 }",
        )
        .replace(r#"methods = ["gradient", "gradcam", "kernel-shap"]"#, r#"methods = ["gradient"]"#)
        .replace("checkpoints = 2", "checkpoints = 3");
    let t = GridTest::new(&grid);
    let plan = dag::plan(
        &Grid::load(&t.grid_file()).expect("valid grid"),
        &Cache::open(t.cache()).unwrap(),
        &PlanOptions::default(),
    )
    .expect("plan");
    let labels: Vec<&str> = plan.steps.iter().map(|s| s.label.as_str()).collect();
    for k in 1..=3 {
        let label = format!("score/images/photos/watermark/r18w8/gradient/checkpoint-{k}-of-3/attr");
        assert!(labels.contains(&label.as_str()), "{label} not in {labels:?}");
    }
    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());

    let data: serde_json::Value =
        serde_json::from_slice(&std::fs::read(t.reports().join("images").join("report_data.json")).unwrap()).unwrap();
    let mut steps: Vec<u64> = data["images"]
        .as_array()
        .expect("image rows")
        .iter()
        .filter(|r| r["class"] == "manipulated")
        .filter_map(|r| r["checkpoint"].as_u64())
        .collect();
    steps.sort();
    // The watermark is learned in well under 1,000 steps; the positions
    // fall on the first evaluation, one in between and the last.
    assert_eq!(steps.len(), 3, "{steps:?}");
    let end = steps[2];
    assert!(end < 1000 && end.is_multiple_of(25), "stopped at the bar: {steps:?}");
    assert_eq!(steps[0], 25, "{steps:?}");
    assert!(steps[0] <= steps[1] && steps[1] <= end, "{steps:?}");
    let again = t.run();
    assert!(again.succeeded());
    assert_eq!(again.executed().count(), 0);
}

#[test]
fn a_bad_images_section_names_the_key_and_its_line() {
    let t = GridTest::new(&GRID.replace("[\"watermark\"]", "[\"watermark\", \"glitter\"]"));
    let err = Grid::load(&t.grid_file()).unwrap_err().to_string();
    assert!(err.contains("grid.toml:6:") && err.contains("unknown manipulation `glitter`"), "{err}");

    let t = GridTest::new(&GRID.replace("depth = 18", "depth = 50"));
    let err = Grid::load(&t.grid_file()).unwrap_err().to_string();
    assert!(err.contains("grid.toml:15:") && err.contains("ResNet-18 or -34"), "{err}");

    let t = GridTest::new(&GRID.replace("\"kernel-shap\"]", "\"shap\"]"));
    let err = Grid::load(&t.grid_file()).unwrap_err().to_string();
    assert!(err.contains("unknown pixel method `shap`") && err.contains("gradient-shap"), "{err}");

    let t =
        GridTest::new(&GRID.replace("embedded = { train = 200, validation = 20, test = 20 }", "folder = \"birds\""));
    let grid = Grid::load(&t.grid_file()).expect("a folder is checked when planned");
    let cache = Cache::open(t.cache()).expect("cache");
    let err = dag::plan(&grid, &cache, &PlanOptions::default()).unwrap_err().to_string();
    assert!(err.contains("image dataset") || err.contains("dataset `photos`"), "{err}");
    assert!(err.contains("birds"), "{err}");
}

/// Zhou et al.'s §5.4: `keep_probability` as a list sweeps `r`, each value
/// its own synth, models and cells, named in the labels.
#[test]
fn a_list_of_keep_probabilities_sweeps_r() {
    let t = GridTest::new(&GRID.replace("seed = 1\n", "seed = 1\nkeep_probability = [0.5, 0.8]\n"));
    let grid = Grid::load(&t.grid_file()).expect("valid grid");
    assert_eq!(grid.images.as_ref().unwrap().keep_probabilities, [0.5, 0.8]);
    let cache = Cache::open(t.cache()).expect("cache");
    let plan = dag::plan(&grid, &cache, &PlanOptions::default()).expect("plan");
    let synth: Vec<&dag::Step> = plan.steps.iter().filter(|s| s.label.starts_with("synth/")).collect();
    let labels: Vec<&str> = synth.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels, ["synth/images/photos/watermark/r-0.5", "synth/images/photos/watermark/r-0.8"]);
    assert_eq!(synth[1].params["keep_probability"], 0.8);
    assert_ne!(synth[0].key, synth[1].key);
    let verify = plan.steps.iter().find(|s| s.label == "verify/images/photos/watermark/r-0.8/r18w8").expect("verify");
    assert_eq!(verify.params["keep_probability"], 0.8);

    for (bad, message) in [("[]", "is empty"), ("[0.5, 0.5]", "lists 0.5 twice"), ("1.5", "outside [0, 1]")] {
        let t = GridTest::new(&GRID.replace("seed = 1\n", &format!("seed = 1\nkeep_probability = {bad}\n")));
        let err = Grid::load(&t.grid_file()).unwrap_err().to_string();
        assert!(err.contains("grid.toml:8:") && err.contains(message), "{bad}: {err}");
    }
}

/// Zhou et al.'s §5.3: `visibility` sweeps each manipulation's strength
/// over the paper's levels, each its own synth (keyed by the strength it
/// sets), models and cells; with an `r` sweep, both in the labels.
#[test]
fn a_list_of_visibility_levels_sweeps_the_strength() {
    let t = GridTest::new(&GRID.replace("seed = 1\n", "seed = 1\nvisibility = [5, 1, 3]\n"));
    let grid = Grid::load(&t.grid_file()).expect("valid grid");
    let levels: Vec<u8> = grid.images.as_ref().unwrap().visibilities.iter().map(|v| v.get()).collect();
    assert_eq!(levels, [1, 3, 5], "levels in rising order");
    let cache = Cache::open(t.cache()).expect("cache");
    let plan = dag::plan(&grid, &cache, &PlanOptions::default()).expect("plan");
    let synth: Vec<&dag::Step> = plan.steps.iter().filter(|s| s.label.starts_with("synth/")).collect();
    let labels: Vec<&str> = synth.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(
        labels,
        ["synth/images/photos/watermark/v-1", "synth/images/photos/watermark/v-3", "synth/images/photos/watermark/v-5"]
    );
    // The font the level sets, as a fraction of 224 pixels.
    let font = |s: &dag::Step| s.params["manipulation"]["font"].as_f64().unwrap() * 224.0;
    assert_eq!(synth.iter().map(|s| font(s).round() as u32).collect::<Vec<_>>(), [7, 11, 15]);
    // Level 3 is the default watermark: the same data as a grid without the sweep.
    let plain = GridTest::new(GRID);
    let plain_plan = dag::plan(
        &Grid::load(&plain.grid_file()).unwrap(),
        &Cache::open(plain.cache()).unwrap(),
        &PlanOptions::default(),
    )
    .unwrap();
    let plain_synth = plain_plan.steps.iter().find(|s| s.label.starts_with("synth/")).unwrap();
    assert_eq!(synth[1].key, plain_synth.key);
    assert_ne!(synth[0].key, synth[1].key);
    assert!(plan.steps.iter().any(|s| s.label == "verify/images/photos/watermark/v-5/r18w8"));

    // Both sweeps: the level, then r.
    let both =
        GridTest::new(&GRID.replace("seed = 1\n", "seed = 1\nvisibility = [2]\nkeep_probability = [0.5, 0.9]\n"));
    let plan = dag::plan(
        &Grid::load(&both.grid_file()).unwrap(),
        &Cache::open(both.cache()).unwrap(),
        &PlanOptions::default(),
    )
    .unwrap();
    assert!(
        plan.steps.iter().any(|s| s.label == "synth/images/photos/watermark/v-2/r-0.9"),
        "{:?}",
        plan.steps[1].label
    );

    for (bad, message) in [("[]", "is empty"), ("[2, 2]", "lists level 2 twice"), ("[0, 1]", "not one of 1 to 5")] {
        let t = GridTest::new(&GRID.replace("seed = 1\n", &format!("seed = 1\nvisibility = {bad}\n")));
        let err = Grid::load(&t.grid_file()).unwrap_err().to_string();
        assert!(err.contains("grid.toml:8:") && err.contains(message), "{bad}: {err}");
    }
    // A manipulation that sets the strength the sweep sets.
    let t = GridTest::new(
        &GRID
            .replace("[\"watermark\"]", "[{ kind = \"watermark\", font = 0.05 }]")
            .replace("seed = 1\n", "seed = 1\nvisibility = [1, 5]\n"),
    );
    let err = Grid::load(&t.grid_file()).unwrap_err().to_string();
    assert!(err.contains("grid.toml:6:") && err.contains("sets `font`, which `images.visibility` sweeps"), "{err}");
}
