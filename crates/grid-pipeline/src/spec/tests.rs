use super::*;

const MINIMAL: &str = r#"
[[datasets]]
name = "toy"
generated = { train = 10, validation = 5, test = 5, seed = 1 }

[[models]]
name = "lstm"
architecture = "bilstm"

[attribution]
methods = ["grad{p,l}-{l1,l2}", "random"]
"#;

fn parse(text: &str) -> Result<Grid, SpecError> {
    Grid::parse(text, Path::new("grids/test.toml"))
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn minimal_grid_gets_the_papers_defaults() {
    let g = parse(&format!("{MINIMAL}[shortcuts]\n")).unwrap();
    assert_eq!(g.name, "test");
    let shortcuts = g.shortcuts.as_ref().expect("a shortcut grid");
    assert_eq!(shortcuts.kinds, ShortcutKind::INSERTED.to_vec());
    assert_eq!(shortcuts.mix_share.get(), 0.2);
    assert_eq!(shortcuts.max_distance.get(), 50);
    assert_eq!(g.metrics, [Metric::Precision, Metric::Rank]);
    assert_eq!(g.attribution.test_set, TestSet::Synthetic);
    let m = &g.models[0];
    let ArchitectureSpec::Bilstm(lstm) = &m.architecture else { panic!("{m:?}") };
    assert_eq!((lstm.embedding_dim.get(), lstm.hidden_size.get()), (300, 256));
    assert_eq!(lstm.pad_embedding, PadEmbedding::Learned);
    assert_eq!(m.training.optimizer, Optimizer::Sgd { momentum: Share::new(0.9) });
    assert_eq!(m.training.schedule, Schedule::Constant);
    assert_eq!(m.training.max_grad_norm, None);
    assert_eq!(m.training.learning_rate, 0.03);
    assert_eq!(m.training.max_steps.get(), 35_000);
    assert_eq!(m.training.keep, Keep::Best { patience: Positive::new(10_000), by: BestBy::Accuracy });
    let names: Vec<String> = g.attribution.methods.iter().map(|m| m.to_string()).collect();
    assert_eq!(names, ["gradp-l1", "gradp-l2", "gradl-l1", "gradl-l2", "random"]);
    assert_eq!(g.attribution.sample.get(), 1000);
    assert_eq!(g.metrics, vec![Metric::Precision, Metric::Rank]);
    assert_eq!(g.verification.min_synthetic_accuracy.get(), 0.99);
}

#[test]
fn shipped_grids_parse() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "toml") {
            Grid::load(&path).unwrap_or_else(|e| panic!("{e}"));
            seen += 1;
        }
    }
    assert!(seen >= 2, "expected the quickstart and the SST-2 grid");
}

#[test]
fn unknown_key_names_file_line_and_column() {
    let text = MINIMAL.replace("architecture = \"bilstm\"", "architecture = \"bilstm\"\nhiden_size = 3");
    let e = error(&text);
    assert!(e.starts_with("grids/test.toml:9:1: unknown field `hiden_size`"), "{e}");
}

#[test]
fn wrong_type_and_impossible_values_point_at_the_value() {
    let e = error(&MINIMAL.replace("name = \"lstm\"", "name = \"lstm\"\ndropout = 1.5"));
    assert!(e.starts_with("grids/test.toml:8:11: expected a number in [0, 1], got 1.5"), "{e}");
    let e = error(&MINIMAL.replace("name = \"lstm\"", "name = \"lstm\"\nhidden_size = 0"));
    assert!(e.starts_with("grids/test.toml:8:15: expected a whole number ≥ 1, got 0"), "{e}");
    let e = error(&MINIMAL.replace("name = \"lstm\"", "name = \"lstm\"\nhidden_size = \"big\""));
    assert!(e.starts_with("grids/test.toml:8:15:"), "{e}");
    assert!(e.contains("invalid type"), "{e}");
    let e = error(&MINIMAL.replace("architecture = \"bilstm\"", "architecture = \"gpt\""));
    assert!(e.starts_with("grids/test.toml:8:16: unknown variant `gpt`"), "{e}");
    // NaN, infinite and negative rates would train and cache a model of NaNs.
    let rate = |bad: &str| {
        error(&MINIMAL.replace("name = \"lstm\"", &format!("name = \"lstm\"\ntraining = {{ learning_rate = {bad} }}")))
    };
    for bad in ["-0.1", "0.0"] {
        let e = rate(bad);
        assert!(
            e.starts_with("grids/test.toml:8:30: model `lstm`: `training.learning_rate` must be a finite number > 0"),
            "{e}"
        );
    }
    // Non-finite numbers are refused wherever they are, before any key is read.
    for (bad, shown) in [("nan", "NaN"), ("inf", "inf"), ("-inf", "-inf")] {
        let e = rate(bad);
        let expected =
            format!("grids/test.toml:8:30: `models.lstm.training.learning_rate` is {shown}: a grid takes finite");
        assert!(e.starts_with(&expected), "{e}");
    }
    let e = error(&MINIMAL.replace("name = \"lstm\"", "name = \"lstm\"\ntraining = { weight_decay = -inf }"));
    assert!(e.contains("`models.lstm.training.weight_decay` is -inf"), "{e}");
    let e = error(&MINIMAL.replace("[attribution]", "[verification]\nmin_synthetic_accuracy = nan\n\n[attribution]"));
    assert!(e.contains(":11:26: `verification.min_synthetic_accuracy` is NaN"), "{e}");
}

#[test]
fn bad_method_names_point_at_the_entry() {
    let e = error(&MINIMAL.replace("\"random\"", "\"ramdon\""));
    assert!(e.starts_with("grids/test.toml:11:33: unknown salience method `ramdon`"), "{e}");
    let e = error(&MINIMAL.replace("\"random\"", "\"grad{p,l\""));
    assert!(e.contains("unbalanced"), "{e}");
    let e = error(&MINIMAL.replace("\"random\"", "\"gradp-l1\""));
    assert!(e.contains("method `gradp-l1` is listed twice"), "{e}");
    // An alias is the same config as its canonical name.
    let e = error(&MINIMAL.replace("\"random\"", "\"limeunk-100\", \"lime-unk-100\""));
    assert!(e.contains("method `limeunk-100` is listed twice"), "{e}");
    let e = error(&MINIMAL.replace("\"random\"", "\"limeunk-1\""));
    assert!(
        e.starts_with("grids/test.toml:11:33: unknown salience method `limeunk-1` (LIME needs at least 2 samples)"),
        "{e}"
    );
}

#[test]
fn attribution_knobs_and_word_aggregation() {
    let g = parse(MINIMAL).unwrap();
    assert_eq!((g.attribution.internal_batch_size.get(), g.attribution.perturbations_per_eval.get()), (256, 256));
    assert_eq!(g.attribution.word_aggregation, None);
    let text =
        MINIMAL.replace("[attribution]", "[attribution]\ninternal_batch_size = 64\nword_aggregation = \"first\"");
    let g = parse(&text).unwrap();
    assert_eq!(g.attribution.internal_batch_size.get(), 64);
    assert_eq!(g.attribution.word_aggregation, Some(grid_methods::metrics::WordAggregation::First));
    let e = error(&MINIMAL.replace("[attribution]", "[attribution]\nword_aggregation = \"median\""));
    assert!(e.starts_with("grids/test.toml:11:20: unknown variant `median`"), "{e}");
    let e = error(&MINIMAL.replace("[attribution]", "[attribution]\nperturbations_per_eval = 0"));
    assert!(e.starts_with("grids/test.toml:11:26: expected a whole number ≥ 1, got 0"), "{e}");
}

#[test]
fn metrics_seeds_erasure_and_agreement() {
    let with = |head: &str, tail: &str| format!("{head}\n{}\n[shortcuts]\n{tail}", MINIMAL.trim_start());
    // `diagnosticity` is diag-* of the erasure metrics listed, or of all four.
    let g = parse(&with(r#"metrics = ["precision", "ns", "diagnosticity"]"#, "")).unwrap();
    let names: Vec<&str> = g.metrics.iter().map(|m| m.name()).collect();
    assert_eq!(names, ["precision", "ns", "diag-ns"]);
    assert!(g.agreement.is_none());
    let g = parse(&with(r#"metrics = ["diagnosticity", "agreement"]"#, "[agreement]\ntop_k = 3")).unwrap();
    let names: Vec<&str> = g.metrics.iter().map(|m| m.name()).collect();
    assert_eq!(names, ["diag-ns", "diag-soft-ns", "diag-nc", "diag-soft-nc"]);
    assert_eq!(g.agreement.map(|a| a.top_k.get()), Some(3));
    assert_eq!(g.erasure.ratios.len(), 5);
    assert_eq!(g.seeds, None);

    let e = error(&with(r#"metrics = ["precision", "aopc"]"#, ""));
    assert!(e.starts_with("grids/test.toml:1:25: unknown metric `aopc`"), "{e}");
    let e = error(&with(r#"metrics = ["rank", "rank"]"#, ""));
    assert!(e.starts_with("grids/test.toml:1:20: metric `rank` is listed twice"), "{e}");
    let e = error(&with("metrics = []", ""));
    assert!(e.starts_with("grids/test.toml:1:11: `metrics` is empty"), "{e}");

    assert_eq!(parse(&with("seeds = [3, 1]", "")).unwrap().seeds, Some(vec![3, 1]));
    let e = error(&with("seeds = []", ""));
    assert!(e.starts_with("grids/test.toml:1:9: `seeds` is empty"), "{e}");
    let e = error(&with("seeds = [1, 2, 1]", ""));
    assert!(e.starts_with("grids/test.toml:1:9: seed 1 is listed twice"), "{e}");

    let g = parse(&with("", "[erasure]\nratios = [0.1, 0.5]\nsoft_samples = 3")).unwrap();
    assert_eq!(g.erasure.ratios.iter().map(|r| r.get()).collect::<Vec<_>>(), [0.1, 0.5]);
    assert_eq!(g.erasure.soft_samples.get(), 3);
    let e = error(&with("", "[erasure]\nratios = []"));
    assert!(e.starts_with("grids/test.toml:14:1: `erasure.ratios` must list shares in (0, 1]"), "{e}");
    let e = error(&with("", "[erasure]\nratios = [0.0, 0.5]"));
    assert!(e.contains("`erasure.ratios` must list shares in (0, 1]"), "{e}");
    let e = error(&with("", "[erasure]\nratios = [1.5]"));
    assert!(e.starts_with("grids/test.toml:15:10: expected a number in [0, 1], got 1.5"), "{e}");
    assert_eq!(g.erasure.convention, grid_methods::metrics::erasure::Convention::Paper);
    let g = parse(&with("", "[erasure]\nconvention = \"authors-code\"")).unwrap();
    assert_eq!(g.erasure.convention, grid_methods::metrics::erasure::Convention::AuthorsCode);
    let e = error(&with("", "[erasure]\nconvention = \"theirs\""));
    assert!(e.contains("unknown variant `theirs`") && e.contains("authors-code"), "{e}");
}

#[test]
fn cross_field_checks() {
    let e = error(
        &MINIMAL.replace("[attribution]", "[[models]]\nname = \"lstm\"\narchitecture = \"bilstm\"\n[attribution]"),
    );
    assert!(e.contains("model name `lstm` is used twice"), "{e}");
    let e =
        error(&MINIMAL.replace("generated = { train = 10, validation = 5, test = 5, seed = 1 }", "train = \"a.csv\""));
    assert!(e.starts_with("grids/test.toml:3:8: dataset `toy` needs `train` and `test` files"), "{e}");
    let e = error(&MINIMAL.replace("[[models]]", "[shortcuts]\nkinds = []\n[[models]]"));
    assert!(e.contains("`shortcuts.kinds` is empty"), "{e}");
    let e = error(&MINIMAL.replace("[[models]]", "[shortcuts]\nkinds = [\"xx\"]\n[[models]]"));
    assert!(e.contains("unknown variant `xx`"), "{e}");
}

#[test]
fn file_datasets() {
    let text = MINIMAL.replace(
        "generated = { train = 10, validation = 5, test = 5, seed = 1 }",
        "train = \"sst2/train.parquet\"\ntest = \"sst2/test.parquet\"\nlimits = { train = 100 }\nmax_length = 100",
    );
    let g = parse(&text).unwrap();
    let d = &g.datasets[0];
    assert!(matches!(&d.source, DatasetSource::Files { validation: None, text_column, .. } if text_column == "text"));
    assert_eq!(d.limits.train.map(|v| v.get()), Some(100));
    assert_eq!(d.max_length.get(), 100);
}

/// Classes come from `label_names`, `classes` or the generated table, and the
/// shortcut tokens follow: `#c` by default, `indicators` when listed.
#[test]
fn classes_and_their_indicators() {
    let files = |extra: &str| {
        MINIMAL.replace(
            "generated = { train = 10, validation = 5, test = 5, seed = 1 }",
            &format!("train = \"ag/train.csv\"\ntest = \"ag/test.csv\"\n{extra}"),
        )
    };
    assert_eq!(parse(&files("")).unwrap().datasets[0].classes(), 2);
    assert_eq!(parse(&files("classes = 4")).unwrap().datasets[0].classes(), 4);
    let named = parse(&files("label_names = [\"world\", \"sports\", \"business\"]")).unwrap();
    assert_eq!(named.datasets[0].classes(), 3);
    let e = error(&files("classes = 4\nlabel_names = [\"a\", \"b\"]"));
    assert!(e.contains("`classes = 4` but `label_names` lists 2 names"), "{e}");
    assert!(error(&files("classes = 1")).contains("needs at least 2"));
    let generated = MINIMAL.replace("seed = 1 }", "seed = 1, classes = 4 }");
    let g = parse(&format!("{generated}[shortcuts]\n")).unwrap();
    assert_eq!(g.datasets[0].classes(), 4);
    assert_eq!(g.shortcuts.unwrap().tokens.for_classes(4).all(), ["#0", "#1", "#2", "#3", "contoken"]);
    assert!(error(&MINIMAL.replace("seed = 1 }", "seed = 1, classes = 99 }")).contains("`generated.classes` must be"));
    // Binary names, or one indicator per class, not both; enough for every dataset.
    let tokens = |t: &str| format!("{generated}\n[shortcuts]\ntokens = {{ {t} }}\n");
    let g = parse(&tokens("zero = \"[NEG]\", context = \"[CTX]\"")).unwrap();
    assert_eq!(g.shortcuts.as_ref().unwrap().tokens.for_classes(2).all(), ["[NEG]", "#1", "[CTX]"]);
    assert_eq!(g.shortcuts.as_ref().unwrap().tokens.for_classes(3).all(), ["[NEG]", "#1", "#2", "[CTX]"]);
    let g = parse(&tokens("indicators = [\"w\", \"x\", \"y\", \"z\", \"v\"]")).unwrap();
    assert_eq!(g.shortcuts.as_ref().unwrap().tokens.for_classes(4).all(), ["w", "x", "y", "z", "contoken"]);
    let e = error(&tokens("indicators = [\"w\", \"x\", \"y\"]"));
    assert!(e.contains("has 3 entries, but dataset `toy` has 4 classes"), "{e}");
    let e = error(&tokens("indicators = [\"w\", \"x\", \"y\", \"z\"], one = \"o\""));
    assert!(e.contains("give `indicators` or `zero` / `one`, not both"), "{e}");
    let e = error(&format!("{generated}\n[shortcuts]\nkinds = [\"st\", \"articles\"]\n"));
    assert!(e.contains("but dataset `toy` has 4 classes"), "{e}");
}

#[test]
fn missing_file_is_a_read_error() {
    let e = Grid::load(Path::new("/nonexistent/grid.toml")).unwrap_err().to_string();
    assert!(e.starts_with("/nonexistent/grid.toml: cannot read grid file"), "{e}");
}

const BERT: &str = r#"
[[datasets]]
name = "toy"
generated = { train = 10, validation = 5, test = 5, seed = 1 }

[[models]]
name = "minilm"
architecture = "bert"
checkpoint = "hf://sentence-transformers/all-MiniLM-L6-v2"

[attribution]
methods = ["gradl-l2"]
"#;

#[test]
fn bert_gets_the_papers_fine_tuning_defaults() {
    let g = parse(BERT).unwrap();
    let m = &g.models[0];
    let ArchitectureSpec::Bert(bert) = &m.architecture else { panic!("{m:?}") };
    assert_eq!(
        bert.init,
        BertInit::Pretrained {
            checkpoint: "hf://sentence-transformers/all-MiniLM-L6-v2".into(),
            head: crate::spec::HeadInit::Fresh,
            fine_tune: true,
        }
    );
    assert_eq!(m.training.optimizer, Optimizer::Adamw);
    assert_eq!((m.training.learning_rate, m.training.batch_size.get()), (2e-5, 16));
    assert_eq!(m.training.schedule, Schedule::Linear { warmup_share: Share::new(0.1) });
    assert_eq!(m.training.max_grad_norm, Some(1.0));
}

#[test]
fn a_random_bert_takes_its_shape_from_the_grid() {
    let text = BERT.replace(
        "checkpoint = \"hf://sentence-transformers/all-MiniLM-L6-v2\"",
        "hidden_size = 64\nnum_hidden_layers = 2\nnum_attention_heads = 2\nintermediate_size = 128\nwordpiece_vocab_size = 500",
    );
    let g = parse(&text).unwrap();
    let ArchitectureSpec::Bert(BertSpec { init: BertInit::Random(shape), .. }) = &g.models[0].architecture else {
        panic!()
    };
    assert_eq!((shape.hidden_size.get(), shape.num_hidden_layers.get(), shape.vocab_size.get()), (64, 2, 500));
    assert_eq!(shape.positions, PositionInit::Normal);
    let sine = parse(
        &text.replace("wordpiece_vocab_size = 500", "wordpiece_vocab_size = 500\nposition_init = \"sinusoidal\""),
    )
    .unwrap();
    let ArchitectureSpec::Bert(BertSpec { init: BertInit::Random(shape), .. }) = &sine.models[0].architecture else {
        panic!()
    };
    assert_eq!(shape.positions, PositionInit::Sinusoidal);
    // A checkpoint brings its own positions.
    let e = error(&BERT.replace("architecture = \"bert\"", "architecture = \"bert\"\nposition_init = \"sinusoidal\""));
    assert!(e.contains("test.toml:9:17") && e.contains("comes from the checkpoint's config.json"), "{e}");
    let bad = text.replace("num_attention_heads = 2", "num_attention_heads = 3");
    assert!(
        error(&bad).contains("test.toml:11:23: model `minilm`: hidden_size 64 is not a multiple"),
        "{}",
        error(&bad)
    );
}

#[test]
fn keys_of_the_other_architecture_are_errors_at_their_line() {
    let e = error(&BERT.replace("architecture = \"bert\"", "architecture = \"bert\"\nembedding_dim = 300"));
    assert!(e.contains("test.toml:9:17: model `minilm`: `embedding_dim` is not a key of architecture `bert`"), "{e}");
    let e = error(&BERT.replace("architecture = \"bert\"", "architecture = \"bert\"\nhidden_size = 64"));
    assert!(e.contains("test.toml:9:15") && e.contains("comes from the checkpoint's config.json"), "{e}");
    let e = error(&MINIMAL.replace("architecture = \"bilstm\"", "architecture = \"bilstm\"\ncheckpoint = \"x\""));
    assert!(e.contains("`checkpoint` is not a key of architecture `bilstm`"), "{e}");
    let e = error(&BERT.replace("[attribution]", "[models.training]\nmomentum = 0.9\n\n[attribution]"));
    assert!(e.contains("`momentum` is an SGD setting"), "{e}");
    let e = error(&BERT.replace("all-MiniLM-L6-v2", "a/b/c"));
    assert!(e.contains("test.toml:9:14"), "{e}");
}

#[test]
fn keep_last_trains_every_step_and_refuses_a_patience() {
    let last = parse(&MINIMAL.replace("[attribution]", "[models.training]\nkeep = \"last\"\n\n[attribution]")).unwrap();
    assert_eq!(last.models[0].training.keep, Keep::Last);
    let best =
        parse(&MINIMAL.replace("[attribution]", "[models.training]\nkeep = \"best\"\npatience = 7\n\n[attribution]"))
            .unwrap();
    assert_eq!(best.models[0].training.keep, Keep::Best { patience: Positive::new(7), by: BestBy::Accuracy });
    let e =
        error(&MINIMAL.replace("[attribution]", "[models.training]\nkeep = \"last\"\npatience = 7\n\n[attribution]"));
    assert!(e.contains("`training.patience` stops early, but `keep = \"last\"`"), "{e}");
    let e = error(&MINIMAL.replace("[attribution]", "[models.training]\nkeep = \"first\"\n\n[attribution]"));
    assert!(e.contains("unknown variant `first`"), "{e}");
    // What `best` compares: accuracy unless told otherwise.
    let balanced = "[models.training]\nbest_by = \"balanced\"\npatience = 7\n\n[attribution]";
    let best = parse(&MINIMAL.replace("[attribution]", balanced)).unwrap();
    assert_eq!(best.models[0].training.keep, Keep::Best { patience: Positive::new(7), by: BestBy::Balanced });
    let e = error(
        &MINIMAL
            .replace("[attribution]", "[models.training]\nkeep = \"last\"\nbest_by = \"balanced\"\n\n[attribution]"),
    );
    assert!(e.contains(":12:11:") && e.contains("`training.best_by` picks the best evaluation"), "{e}");
    let e = error(&MINIMAL.replace("[attribution]", "[models.training]\nbest_by = \"loss\"\n\n[attribution]"));
    assert!(e.contains("unknown variant `loss`"), "{e}");
}

#[test]
fn a_dataset_batch_size_overrides_the_models() {
    let text = BERT.replace("seed = 1 }", "seed = 1 }\nbatch_size = 8");
    let g = parse(&text).unwrap();
    assert_eq!(g.models[0].for_dataset(&g.datasets[0]).training.batch_size.get(), 8);
    assert_eq!(g.models[0].training.batch_size.get(), 16);
}

#[test]
fn bilstm_vocab_table_and_sgd_keys_parse() {
    let text = MINIMAL.replace(
        "architecture = \"bilstm\"",
        "architecture = \"bilstm\"\nvocab = { max_size = 100, min_count = 2, lowercase = false }\n\n[models.training]\noptimizer = \"sgd\"\nmomentum = 0.5\nwarmup_share = 0.2\nmax_grad_norm = 0",
    );
    let g = parse(&text).unwrap();
    let ArchitectureSpec::Bilstm(lstm) = &g.models[0].architecture else { panic!() };
    assert_eq!((lstm.vocab.max_size.get(), lstm.vocab.min_count.get(), lstm.vocab.lowercase), (100, 2, false));
    let training = &g.models[0].training;
    assert_eq!(training.optimizer, Optimizer::Sgd { momentum: Share::new(0.5) });
    assert_eq!(training.schedule, Schedule::Linear { warmup_share: Share::new(0.2) });
    assert_eq!(training.max_grad_norm, None);
    let e = error(
        &MINIMAL
            .replace("architecture = \"bilstm\"", "architecture = \"bilstm\"\n[models.training]\nmax_grad_norm = -1"),
    );
    assert!(e.contains("test.toml:10:17: model `lstm`: `training.max_grad_norm` must be ≥ 0"), "{e}");
}

#[test]
fn article_manipulations() {
    let with = |head: &str, tail: &str| format!("{head}\n{}\n{tail}", MINIMAL.trim_start());
    let g = parse(&with(
        r#"metrics = ["attr", "attr-noncorr"]"#,
        "[shortcuts]\nkinds = [\"articles\", \"articles-cn\", \"articles-nc\"]\nkeep_probability = 0.7",
    ))
    .unwrap();
    let shortcuts = g.shortcuts.unwrap();
    assert_eq!(shortcuts.kinds, ShortcutKind::ALL[3..].to_vec());
    assert_eq!(shortcuts.keep_probability.get(), 0.7);
    assert_eq!(parse(&format!("{MINIMAL}[shortcuts]\n")).unwrap().shortcuts.unwrap().keep_probability.get(), 0.5);

    // Non-correlating articles exist only in CN and NC.
    let e = error(&with(r#"metrics = ["attr", "attr-noncorr"]"#, "[shortcuts]\nkinds = [\"articles\"]"));
    assert!(e.starts_with("grids/test.toml:1:20: metric `attr-noncorr` needs non-correlating articles"), "{e}");
    let e = error(&with("", "[shortcuts]\nkinds = [\"articles-cn\"]\nkeep_probability = 1.5"));
    assert!(e.starts_with("grids/test.toml:15:20: expected a number in [0, 1], got 1.5"), "{e}");
    let e = error(&with("", "[shortcuts]\nkinds = [\"article\"]"));
    assert!(e.contains("unknown variant `article`") && e.contains("articles-cn"), "{e}");
}

#[test]
fn pad_embedding_is_a_bilstm_key() {
    let zero =
        parse(&MINIMAL.replace("architecture = \"bilstm\"", "architecture = \"bilstm\"\npad_embedding = \"zero\""))
            .unwrap();
    let ArchitectureSpec::Bilstm(lstm) = &zero.models[0].architecture else { panic!() };
    assert_eq!(lstm.pad_embedding, PadEmbedding::Zero);
    let e =
        error(&MINIMAL.replace("architecture = \"bilstm\"", "architecture = \"bilstm\"\npad_embedding = \"trained\""));
    assert!(e.contains("test.toml:9:17") && e.contains("unknown variant `trained`"), "{e}");
    let e = error(&BERT.replace("architecture = \"bert\"", "architecture = \"bert\"\npad_embedding = \"zero\""));
    assert!(e.contains("test.toml:9:17") && e.contains("`pad_embedding` is not a key of architecture `bert`"), "{e}");
}

/// A value of the right type for every architecture key of `[[models]]`.
const MODEL_KEY_VALUES: &[(&str, &str)] = &[
    ("hidden_size", "8"),
    ("dropout", "0.1"),
    ("embedding_dim", "8"),
    ("attention_size", "8"),
    ("mlp_size", "8"),
    ("word_dropout", "0.1"),
    ("glove", "\"glove.txt\""),
    ("vocab", "{ max_size = 10 }"),
    ("pad_embedding", "\"zero\""),
    ("freeze_embeddings", "true"),
    ("checkpoint", "\"bert-dir\""),
    ("num_hidden_layers", "2"),
    ("num_attention_heads", "2"),
    ("intermediate_size", "8"),
    ("wordpiece_vocab_size", "100"),
    ("lowercase", "true"),
    ("position_init", "\"sinusoidal\""),
    ("head", "\"checkpoint\""),
    ("fine_tune", "false"),
    ("selector", "\"rl\""),
    ("selection_rate", "0.09"),
    ("lambda", "2.0"),
    ("rate_penalty", "\"each-review\""),
    ("predictor_input", "\"selected\""),
];

#[test]
fn every_key_of_one_architecture_is_refused_by_the_other_at_its_line() {
    let architectures = [Architecture::Bilstm, Architecture::Bert, Architecture::Rationale];
    for architecture in architectures {
        let family = crate::architectures::of(architecture);
        for other in architectures.map(crate::architectures::of) {
            for key in other.keys.iter().filter(|k| !family.keys.contains(k)) {
                let (_, value) = MODEL_KEY_VALUES.iter().find(|(k, _)| k == key).expect("a sample value for every key");
                let text = MINIMAL.replace(
                    "architecture = \"bilstm\"",
                    &format!("architecture = \"{architecture}\"\n{key} = {value}"),
                );
                let e = error(&text);
                let expected = (family.hint)(key)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("`{key}` is not a key of architecture `{architecture}`"));
                assert!(e.contains("test.toml:9:") && e.contains(&expected), "{architecture}: {key}: {e}");
            }
        }
    }
    // Every key of every family has a sample above, so a new key is tested here.
    for family in architectures.map(crate::architectures::of) {
        for key in family.keys {
            assert!(MODEL_KEY_VALUES.iter().any(|(k, _)| k == key), "no sample value for `{key}`");
        }
    }
}

#[test]
fn shortcut_tokens_go_within_max_length_words_unless_the_dataset_says_otherwise() {
    let g = parse(MINIMAL).unwrap();
    assert_eq!(g.datasets[0].insert_within(), g.datasets[0].max_length.get());
    let set = MINIMAL.replace("seed = 1 }", "seed = 1 }\nmax_length = 300\ninsert_within = 200");
    assert_eq!(parse(&set).unwrap().datasets[0].insert_within(), 200);
    let e = error(&MINIMAL.replace("seed = 1 }", "seed = 1 }\ninsert_within = 1"));
    assert!(e.contains("dataset `toy`: `insert_within = 1`") && e.contains("at least 2"), "{e}");
}

#[test]
fn a_grid_without_shortcuts_is_natural_and_refuses_ground_truth_metrics_at_their_line() {
    let g = parse(MINIMAL).unwrap();
    assert!(g.shortcuts.is_none());
    assert_eq!(g.attribution.test_set, TestSet::Original);
    let erasure: Vec<Metric> = ErasureMetric::ALL.iter().map(|&e| Metric::Erasure(e)).collect();
    assert!(erasure.iter().all(|m| g.metrics.contains(m)), "{:?}", g.metrics);
    assert!(g.metrics.iter().all(|m| !m.needs_ground_truth()), "{:?}", g.metrics);

    let with_metrics = |list: &str| format!("metrics = [{list}]\n{MINIMAL}");
    let g = parse(&with_metrics("\"ns\", \"agreement\"")).unwrap();
    assert!(g.agreement.is_some());
    for (list, name, column) in
        [("\"precision\"", "precision", 12), ("\"ns\", \"rank\"", "rank", 18), ("\"attr\"", "attr", 12)]
    {
        let e = error(&with_metrics(list));
        assert!(
            e.starts_with(&format!(
                "grids/test.toml:1:{column}: metric `{name}` needs the ground truth of a planted shortcut"
            )),
            "{e}"
        );
    }
    // The synthetic test sets belong to shortcut grids, the original one to natural grids.
    let e = error(&MINIMAL.replace("[attribution]\n", "[attribution]\ntest_set = \"flip\"\n"));
    assert!(e.contains("a grid without `[shortcuts]` explains the dataset's own test set"), "{e}");
    let e = error(&format!(
        "{}[shortcuts]\n",
        MINIMAL.replace("[attribution]\n", "[attribution]\ntest_set = \"original\"\n")
    ));
    assert!(e.contains("is what a grid without `[shortcuts]` explains"), "{e}");
}

#[test]
fn fine_tune_false_takes_a_classifier_checkpoint_with_its_head() {
    let with = |keys: &str| BERT.replace("checkpoint = ", &format!("{keys}\ncheckpoint = "));
    let g = parse(&with("fine_tune = false")).unwrap();
    let ArchitectureSpec::Bert(bert) = &g.models[0].architecture else { panic!() };
    assert!(matches!(
        bert.init,
        BertInit::Pretrained { head: crate::spec::HeadInit::Checkpoint, fine_tune: false, .. }
    ));
    let e = error(&with("fine_tune = false\nhead = \"fresh\""));
    assert!(e.contains("`fine_tune = false` takes the checkpoint as it is"), "{e}");
    let e = error(&MINIMAL.replace("architecture = \"bilstm\"", "architecture = \"bert\"\nfine_tune = false"));
    assert!(e.contains("`fine_tune = false` needs a fine-tuned classifier `checkpoint`"), "{e}");
}

#[test]
fn shipped_grids_that_extend_change_only_their_methods_or_training() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let Some(base) = text.lines().find_map(|l| l.strip_prefix("extends = \"")?.strip_suffix('"')) else {
            continue;
        };
        let (grid, base) = (Grid::load(&path).unwrap(), Grid::load(&dir.join(base)).unwrap());
        assert_ne!(grid.name, base.name, "{}", path.display());
        // An image grid built on another (images_scaled_figure4, _visibility)
        // takes its data, models, maps and bars word for word, so that its
        // corpus, synth steps and shared models are the base's cache entries;
        // it picks seeds, manipulations, levels or checkpoints, and how often
        // its models are evaluated (where its checkpoints fall).
        if let (Some(images), Some(base_images)) = (&grid.images, &base.images) {
            let mut models = images.models.clone();
            for (model, base_model) in models.iter_mut().zip(&base_images.models) {
                model.training.eval_every = base_model.training.eval_every;
            }
            assert_eq!(
                (images.side, images.seed, &images.datasets, &models, &images.verification),
                (
                    base_images.side,
                    base_images.seed,
                    &base_images.datasets,
                    &base_images.models,
                    &base_images.verification
                ),
                "{}",
                path.display()
            );
            let maps = |a: &crate::spec::images::ImageAttribution| (a.methods.clone(), a.sample, a.settings);
            assert_eq!(maps(&images.attribution), maps(&base_images.attribution), "{}", path.display());
            continue;
        }
        // What the training and verification keys are made of, but for the
        // models' training: a grid that cuts it (imdb_lstm_paper_4k) changes
        // nothing else, methods included.
        assert_eq!(grid.datasets, base.datasets, "{}", path.display());
        assert_eq!(grid.shortcuts, base.shortcuts, "{}", path.display());
        assert_eq!(grid.verification, base.verification, "{}", path.display());
        assert_eq!(grid.seeds, base.seeds, "{}", path.display());
        if grid.models != base.models {
            assert_eq!(grid.attribution.methods, base.attribution.methods, "{}", path.display());
            let architectures =
                |g: &Grid| g.models.iter().map(|m| (m.name.clone(), m.architecture.clone())).collect::<Vec<_>>();
            assert_eq!(architectures(&grid), architectures(&base), "{}", path.display());
            continue;
        }
        assert_ne!(grid.attribution.methods, base.attribution.methods, "{}", path.display());
        seen += 1;
    }
    assert!(seen >= 4, "the four IG / LIME grids extend their gradient grids; found {seen}");
}

#[test]
fn an_extending_grid_names_the_file_and_line_of_each_error() {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("base.toml");
    std::fs::write(&base, format!("name = \"base\"\n{MINIMAL}[shortcuts]\n")).unwrap();
    let child = dir.path().join("more.toml");
    let write_child = |text: &str| std::fs::write(&child, text).unwrap();

    write_child("extends = \"base.toml\"\n\n[attribution]\nsample = 20\n");
    let grid = Grid::load(&child).unwrap();
    assert_eq!((grid.name.as_str(), grid.attribution.sample.get()), ("more", 20));
    assert_eq!(grid.attribution.methods.len(), 5, "the base's methods");

    // The child's own line.
    write_child("extends = \"base.toml\"\n\n[attribution]\nsample = 0\n");
    let e = Grid::load(&child).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{}:4:10:", child.display())), "{e}");
    // A line of the base that the child makes wrong: an LSTM key once the
    // child turns the model into a BERT is named where it is written.
    let lstm = MINIMAL.replace("architecture = \"bilstm\"", "architecture = \"bilstm\"\nembedding_dim = 8");
    std::fs::write(&base, format!("name = \"base\"\n{lstm}[shortcuts]\n")).unwrap();
    write_child("extends = \"base.toml\"\n\n[[models]]\nname = \"lstm\"\narchitecture = \"bert\"\n");
    let e = Grid::load(&child).unwrap_err().to_string();
    let line = lstm.lines().position(|l| l.starts_with("embedding_dim")).unwrap() + 2;
    assert!(e.starts_with(&format!("{}:{line}:", base.display())), "{e}");
    // A line of the base, named in the base.
    std::fs::write(&base, format!("name = \"base\"\n{MINIMAL}[shortcuts]\nmix_share = 2.0\n")).unwrap();
    write_child("extends = \"base.toml\"\n\n[attribution]\nsample = 20\n");
    let e = Grid::load(&child).unwrap_err().to_string();
    let line = MINIMAL.lines().count() + 3;
    assert!(e.starts_with(&format!("{}:{line}:13:", base.display())), "{e}");
    // Through --set too: the override is named.
    std::fs::write(&base, format!("name = \"base\"\n{MINIMAL}[shortcuts]\n")).unwrap();
    let settings = vec!["attribution.sample=0".parse().unwrap()];
    let e = Grid::load_with(&child, &settings).unwrap_err().to_string();
    assert!(e.contains("--set attribution.sample=0"), "{e}");
    let settings = vec!["models.lstm.hidden_size=0".parse().unwrap()];
    let e = Grid::load_with(&child, &settings).unwrap_err().to_string();
    assert!(e.contains("--set models.lstm.hidden_size=0"), "{e}");
    // The chain is the file's: an override cannot start one.
    let settings = vec!["extends=other.toml".parse().unwrap()];
    let e = Grid::load_with(&child, &settings).unwrap_err().to_string();
    assert!(e.contains("--set extends=other.toml") && e.contains("write it in the file"), "{e}");
}

#[test]
fn a_rationale_model_needs_its_selector_and_rate_and_keeps_its_last_weights() {
    let rationale =
        |keys: &str| MINIMAL.replace("architecture = \"bilstm\"", &format!("architecture = \"rationale\"\n{keys}"));
    let g = parse(&rationale("selector = \"hardkuma\"\nselection_rate = 0.07")).unwrap();
    let m = &g.models[0];
    let ArchitectureSpec::Rationale(spec) = &m.architecture else { panic!("{m:?}") };
    assert_eq!(spec.selector, grid_core::model::rationale::SelectorKind::Hardkuma);
    assert_eq!((spec.selection_rate.get(), spec.lambda), (0.07, 2.0));
    assert_eq!(spec.predictor.hidden_size.get(), 256, "the BiLSTM's defaults");
    assert_eq!(m.training.keep, Keep::Last);
    assert_eq!(m.training.optimizer, Optimizer::Adamw);
    // `keep = "best"` is still the user's to choose.
    let best =
        parse(&rationale("selector = \"rl\"\nselection_rate = 0.07\n[models.training]\nkeep = \"best\"")).unwrap();
    assert!(matches!(best.models[0].training.keep, Keep::Best { .. }));
    // What is missing or wrong is named at the model's table or the value.
    let e = error(&rationale("selection_rate = 0.07"));
    assert!(e.contains("test.toml:7:") && e.contains("needs `selector = \"rl\"` or `\"hardkuma\"`"), "{e}");
    let e = error(&rationale("selector = \"rl\""));
    assert!(e.contains("test.toml:7:") && e.contains("needs `selection_rate`"), "{e}");
    let e = error(&rationale("selector = \"rl\"\nselection_rate = 0.07\nlambda = -1.0"));
    assert!(e.contains("test.toml:11:") && e.contains("`lambda` must be a finite number > 0"), "{e}");
    let zhou = parse(&rationale(
        "selector = \"rl\"\nselection_rate = 0.07\nrate_penalty = \"each-review\"\npredictor_input = \"selected\"",
    ))
    .unwrap();
    let ArchitectureSpec::Rationale(zhou) = &zhou.models[0].architecture else { panic!("{zhou:?}") };
    assert_eq!(zhou.rate_penalty, Some(grid_core::model::rationale::rate::RateScope::EachReview));
    assert_eq!(zhou.predictor_input, Some(grid_core::model::rationale::PredictorInput::Selected));
    let e = error(&rationale("selector = \"rl\"\nselection_rate = 0.07\nrate_penalty = \"review\""));
    assert!(e.contains("test.toml:11:") && e.contains("each-review"), "{e}");
    let e = error(&rationale("selector = \"gumbel\"\nselection_rate = 0.07"));
    assert!(e.contains("test.toml:9:") && e.contains("gumbel"), "{e}");
    let e = error(&rationale("selector = \"rl\"\nselection_rate = 0.07\n[models.training]\npatience = 5"));
    assert!(e.contains("keeps the last weights unless `keep = \"best\"`"), "{e}");
}

#[test]
fn rationale_metrics_need_a_rationale_model_and_method() {
    let with_metrics = |metrics: &str| {
        format!("{MINIMAL}[shortcuts]\nkinds = [\"articles\"]\n")
            .replace("[[datasets]]", &format!("metrics = {metrics}\n[[datasets]]"))
    };
    let e = error(&with_metrics("[\"sel-precision\"]"));
    assert!(e.contains("test.toml:2:") && e.contains("needs \"rationale\" in `attribution.methods`"), "{e}");
    let e = error(&with_metrics("[\"sel-noncorr\"]"));
    assert!(e.contains("test.toml:2:"), "{e}");
    let rationale = with_metrics("[\"sel-precision\", \"sel-rate\"]")
        .replace("architecture = \"bilstm\"", "architecture = \"rationale\"\nselector = \"rl\"\nselection_rate = 0.1")
        .replace("methods = [", "methods = [\"rationale\", ");
    let g = parse(&rationale).unwrap();
    assert_eq!(g.metrics, ["sel-precision".parse().unwrap(), "sel-rate".parse::<Metric>().unwrap()]);
    // Non-correlating selections need CN or NC data, as `attr-noncorr` does.
    let e = error(&rationale.replace("\"sel-rate\"", "\"sel-noncorr\""));
    assert!(e.contains("metric `sel-noncorr` needs non-correlating articles"), "{e}");
}

#[test]
fn the_local_data_fragment_gives_the_shipped_grids_the_datasets_they_named_before_the_hub_pins() {
    use crate::spec::overrides::from_fragment;
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments");
    let local = from_fragment(&dir.join("data/local.toml")).unwrap();
    let sst2 = Grid::load_with(&dir.join("sst2_lstm.toml"), &local).unwrap();
    assert_eq!(sst2.datasets.len(), 1, "imdb is left out of an SST-2 grid");
    let DatasetSource::Files { train, validation, test, text_column, .. } = &sst2.datasets[0].source else { panic!() };
    assert_eq!(
        (train, validation.as_ref(), test, text_column.as_str()),
        (
            &SplitFile::unpinned("sst2/train.parquet"),
            Some(&SplitFile::unpinned("sst2/validation.parquet")),
            &SplitFile::unpinned("sst2/test.parquet"),
            "text"
        )
    );
    assert_eq!(sst2.datasets[0].validation_share.get(), 0.1);
    let imdb = Grid::load_with(&dir.join("imdb_lstm.toml"), &local).unwrap();
    let DatasetSource::Files { train, validation, .. } = &imdb.datasets[0].source else { panic!() };
    assert_eq!((train, validation), (&SplitFile::unpinned("imdb/train.parquet"), &None));
    assert_eq!(imdb.datasets[0].validation_share.get(), 0.05);
    // Without the fragment, the grids read the pinned Hub files.
    let pinned = Grid::load(&dir.join("sst2_lstm.toml")).unwrap();
    let DatasetSource::Files { train, .. } = &pinned.datasets[0].source else { panic!() };
    assert!(train.hub_address().is_some() && train.pin.is_some());
}

#[test]
fn a_fragment_names_its_file_when_it_cannot_be_written_over_a_grid() {
    use crate::spec::overrides::from_fragment;
    let dir = tempfile::tempdir().unwrap();
    let fragment = dir.path().join("f.toml");
    std::fs::write(&fragment, "name = \"x\"\n").unwrap();
    assert!(from_fragment(&fragment).unwrap_err().contains("`name` belongs to the grid"));
    std::fs::write(&fragment, "[[datasets]]\ntrain = \"a.csv\"\n").unwrap();
    assert!(from_fragment(&fragment).unwrap_err().contains("names the grid's entry it changes with `name`"));
    let missing = from_fragment(&dir.path().join("nope.toml")).unwrap_err();
    assert!(missing.starts_with("--with ") && missing.contains("nope.toml"), "{missing}");
}
