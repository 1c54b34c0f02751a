use super::published::{
    DiagnosticityRow, PaperArch, PrecisionRankRow, Published, PublishedKind, ZhaoAttribution, ZhouAttrRow,
    ZhouAttribution, ZhouDataset, ZhouRegion, load, parse_published,
};
use super::render::{COLUMNS, columns, render_markdown};
use super::zhao::{DiagMetric, chosen_method};
use std::collections::HashSet;

use super::*;
use grid_methods::metrics::agreement::rank_correlation as spearman;
use grid_methods::shortcut::ShortcutKind;

fn reference(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../experiments/reference").join(name)
}

fn parse(text: &str) -> Result<Published, CompareError> {
    parse_published(Path::new("pub.csv"), text)
}

fn precision_rows(p: &Published) -> &[PrecisionRankRow] {
    match p {
        Published::PrecisionRank(rows) => rows,
        other => panic!("{other:?}"),
    }
}

#[test]
fn loads_bastings_precision_and_rank_with_brace_groups_expanded() {
    let p = load(&reference("bastings2022_precision_rank.csv")).unwrap();
    assert_eq!(p.kind(), PublishedKind::PrecisionRank);
    let rows = precision_rows(&p);
    // 360 lines; brace groups expand to 486 configs, 243 per architecture.
    assert_eq!(rows.len(), 486);
    assert_eq!(rows.iter().filter(|r| r.arch == PaperArch::Lstm).count(), 243);
    let find = |arch, method: &str, dataset: &str, shortcut: &str| {
        rows.iter()
            .find(|r| {
                r.arch == arch
                    && r.method.to_string() == method
                    && r.dataset == dataset
                    && r.shortcut.name() == shortcut
            })
            .unwrap_or_else(|| panic!("{method}"))
    };
    // lstm,"grad{p,l}-l1",sst2,st,0.96,1 is one number for both configs.
    for m in ["gradp-l1", "gradl-l1"] {
        let r = find(PaperArch::Lstm, m, "sst2", "st");
        assert_eq!((r.precision, r.rank, r.printed_as.as_str()), (Some(0.96), Some(1.0), "grad{p,l}-l1"));
    }
    // bert,"igl-zero-{100,1000}",sst2,st,0.29,16
    for m in ["igl-zero-100", "igl-zero-1000"] {
        let r = find(PaperArch::Bert, m, "sst2", "st");
        assert_eq!((r.precision, r.rank), (Some(0.29), Some(16.0)));
    }
    // lstm,"igp-pad-{100,1000}",toxicity,st,,1: the paper prints no precision there.
    let r = find(PaperArch::Lstm, "igp-pad-1000", "toxicity", "st");
    assert_eq!((r.line, r.precision, r.rank), (134, None, Some(1.0)));
    let first = &rows[0];
    assert_eq!((first.line, first.method, first.precision, first.rank), (2, Method::Random, Some(0.06), Some(11.0)));
}

#[test]
fn loads_zhao_diagnosticity_and_source_accuracy() {
    let Published::Diagnosticity(rows) = load(&reference("zhao2023_diagnosticity.csv")).unwrap() else {
        panic!("kind")
    };
    assert_eq!(rows.len(), 20);
    assert_eq!(
        rows[0],
        DiagnosticityRow {
            line: 2,
            dataset: "SST".into(),
            attribution: ZhaoAttribution::Attention,
            ns: 0.406,
            soft_ns: 0.496,
            nc: 0.349,
            soft_nc: 0.407
        }
    );
    assert_eq!(rows[1].attribution, ZhaoAttribution::ScaledAttention);

    let Published::SourceAccuracy(rows) = load(&reference("bastings2022_source_accuracy.csv")).unwrap() else {
        panic!("kind")
    };
    assert_eq!(rows.len(), 6);
    assert_eq!((rows[0].arch, rows[0].dataset.as_str()), (PaperArch::Lstm, "sst2"));
    assert_eq!((rows[0].original_test_accuracy_pct, rows[0].mean_drop_with_shortcut_pct), (87.8, 0.6));
}

#[test]
fn crowd_accuracy_has_no_counterpart() {
    let path = reference("lu2024_crowd_accuracy.csv");
    let err = load(&path).unwrap_err();
    assert!(matches!(err, CompareError::NoCounterpart { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.starts_with(&path.display().to_string()) && msg.contains("no counterpart"), "{msg}");
}

#[test]
fn malformed_files_name_file_line_and_column() {
    let bad_number =
        "arch,method,dataset,shortcut,precision,rank\nlstm,random,sst2,st,0.1,3\nlstm,gxip,sst2,st,0.x,1\n";
    let err = parse(bad_number).unwrap_err();
    assert_eq!(err.to_string(), "pub.csv:3: column `precision`: `0.x` is not a number");

    let out_of_range = "arch,method,dataset,shortcut,precision,rank\nlstm,gxip,sst2,st,1.5,1\n";
    assert_eq!(parse(out_of_range).unwrap_err().to_string(), "pub.csv:2: column `precision`: 1.5 is outside 0..=1");

    let err = parse("arch,method,dataset\nlstm,gxip,sst2\n").unwrap_err();
    assert!(matches!(err, CompareError::UnknownHeader { .. }));
    assert!(err.to_string().starts_with("pub.csv:1: unknown header `arch,method,dataset`"), "{err}");

    let err = parse("arch,method,dataset,shortcut,precision,rank\nlstm,gxip,sst2,st,1\n").unwrap_err();
    assert_eq!(err.to_string(), "pub.csv:2: 5 fields, but the header has 6");

    let err = parse("arch,method,dataset,shortcut,precision,rank\ncnn,gxip,sst2,st,1,1\n").unwrap_err();
    assert_eq!(err.to_string(), "pub.csv:2: column `arch`: `cnn` is neither `lstm` nor `bert`");

    let err = parse("arch,method,dataset,shortcut,precision,rank\nlstm,gxip,sst2,stt,1,1\n").unwrap_err();
    assert!(err.to_string().starts_with("pub.csv:2: column `shortcut`: "), "{err}");
    assert!(err.to_string().contains("stt"), "{err}");

    let err = parse("arch,method,dataset,shortcut,precision,rank\nlstm,\"grad{p,x}-l1\",sst2,st,1,1\n").unwrap_err();
    assert!(err.to_string().starts_with("pub.csv:2: column `method`: unknown salience method `gradx-l1`"), "{err}");

    // `gradl-l1` printed alone and inside a group.
    let dup =
        "arch,method,dataset,shortcut,precision,rank\nlstm,gradl-l1,sst2,st,1,1\nlstm,\"grad{p,l}-l1\",sst2,st,1,1\n";
    assert_eq!(
        parse(dup).unwrap_err().to_string(),
        "pub.csv:3: the same arch `lstm`, method `gradl-l1`, dataset `sst2`, shortcut `st` as line 2"
    );

    let err = parse("dataset,attribution,ns,soft_ns,nc,soft_nc\nSST,LRP,0.1,0.2,0.3,0.4\n").unwrap_err();
    assert!(err.to_string().starts_with("pub.csv:2: column `attribution`: unknown `LRP`"), "{err}");

    assert!(matches!(parse("\n\n").unwrap_err(), CompareError::Empty { .. }));
}

#[test]
fn spearman_averages_ties() {
    use grid_methods::metrics::agreement::average_ranks;
    assert_eq!(average_ranks(&[0.5, 0.1, 0.5, 0.9]), [2.5, 1.0, 2.5, 4.0]);
    // Ranks [1, 2.5, 2.5, 4] vs [1, 2, 3, 4]: cov 4.5, variances 4.5 and 5 → √0.9.
    let rho = spearman(&[1.0, 2.0, 2.0, 3.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
    assert!((rho - 0.9f64.sqrt()).abs() < 1e-12, "{rho}");
    assert_eq!(spearman(&[1.0, 2.0, 3.0], &[3.0, 2.0, 1.0]), Some(-1.0));
    assert_eq!(spearman(&[1.0, 1.0, 1.0], &[1.0, 2.0, 3.0]), None);
}

#[test]
fn aliases_parse() {
    assert_eq!(parse_alias("generated=sst2"), Ok(("generated".into(), "sst2".into())));
    assert_eq!(parse_alias(" sst2 = SST "), Ok(("sst2".into(), "SST".into())));
    assert!(parse_alias("sst2").is_err());
    assert!(parse_alias("=SST").is_err());
}

fn cell(model: &str, dataset: &str, shortcut: &str, method: &str, metric: &str, seed: u64, v: [f64; 3]) -> CellResult {
    use crate::testing::CellChanges;
    let cell = crate::testing::cell(model, shortcut, method, metric, v[0])
        .on(dataset)
        .seed(seed)
        .interval(v[1], v[2])
        .examples(100);
    // Two examples at the interval's ends: over seeds, the bootstrap
    // interval of their per-example means is the mean of the bounds.
    CellResult { values: vec![v[1], v[2]], ..cell }
}

const BASTINGS_SMALL: &str = "arch,method,dataset,shortcut,precision,rank\n\
    lstm,\"gxi{p,l}\",sst2,st,1.0,1\n\
    lstm,gradl-l2,sst2,st,0.5,4\n\
    lstm,lime-unk-100,sst2,st,0.3,6\n\
    lstm,random,sst2,st,0.1,20\n\
    lstm,igl-zero-100,sst2,st,0.05,25\n\
    lstm,gxil,sst2,op,0.9,2\n\
    lstm,gradl-l2,sst2,op,0.8,3\n\
    lstm,random,imdb,st,0.0,100\n";

/// Model `lstm` on our dataset `generated` (compared as sst2).
fn lstm_cells() -> Vec<CellResult> {
    let g = |sc, m, metric, seed, v| cell("lstm", "generated", sc, m, metric, seed, v);
    vec![
        // Two seeds: mean 0.85 [0.80, 0.90].
        g("st", "gxil", "precision", 1, [0.9, 0.85, 0.95]),
        g("st", "gxil", "precision", 2, [0.8, 0.75, 0.85]),
        g("st", "gxil", "rank", 1, [1.5, 1.0, 2.0]),
        g("st", "gradl-l2", "precision", 1, [0.97, 0.93, 1.0]),
        g("st", "lime-unk-100", "precision", 1, [0.35, 0.3, 0.4]),
        g("st", "random", "precision", 1, [0.05, 0.0, 0.1]),
        g("st", "igl-zero-100", "precision", 1, [0.3, 0.25, 0.35]),
        g("st", "attn", "precision", 1, [0.6, 0.5, 0.7]), // not in the paper's table
        g("st", "gxil", "ns", 1, [0.5, 0.4, 0.6]),        // a metric this file lacks: ignored
        g("op", "gxil", "precision", 1, [0.7, 0.6, 0.8]),
        g("op", "gradl-l2", "precision", 1, [0.75, 0.7, 0.8]),
    ]
}

fn aliases(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect()
}

fn finding<'a>(c: &'a Comparison, starts: &str) -> &'a Finding {
    c.findings.iter().find(|f| f.statement.starts_with(starts)).unwrap_or_else(|| panic!("{starts}: {:#?}", c.findings))
}

#[test]
fn precision_rank_cells_and_findings() {
    let published = parse(BASTINGS_SMALL).unwrap();
    let c = compare(&published, &lstm_cells(), &[], &[], &aliases(&[("generated", "sst2")])).unwrap();

    // 7 precision cells + 1 rank cell matched; `attn` has no published number.
    assert_eq!(c.cells.len(), 8);
    assert_eq!(c.unmatched_ours, 1);
    // gxip (we ran only gxil) and imdb random.
    assert_eq!(c.unmatched_published, 2);

    let gxil = &c.cells[0];
    assert_eq!(
        (gxil.method.map(|m| m.to_string()).as_deref(), gxil.published_method.as_deref()),
        (Some("gxil"), Some("gxi{p,l}"))
    );
    assert_eq!((gxil.dataset.as_str(), gxil.published_dataset.as_str(), gxil.runs), ("generated", "sst2", 2));
    assert!((gxil.ours - 0.85).abs() < 1e-12 && (gxil.difference() + 0.15).abs() < 1e-12);
    assert!((gxil.ci_low.unwrap() - 0.80).abs() < 1e-12 && (gxil.ci_high.unwrap() - 0.90).abs() < 1e-12);
    assert_eq!(gxil.within_interval(), Some(false));
    let rank = &c.cells[1];
    assert_eq!((rank.metric.name(), rank.published, rank.within_interval()), ("rank", 1.0, Some(true)));
    // `lime-unk-100` is canonicalised to the paper's `limeunk-100`; 0.3 is on the interval's edge.
    let lime = c.cells.iter().find(|x| x.method.is_some_and(|m| m.to_string() == "limeunk-100")).unwrap();
    assert_eq!(lime.within_interval(), Some(true));

    // st: the paper's best (gxil 1.0) is not ours (gradl-l2 0.97 [0.93, 1.00]),
    // and gxil's [0.80, 0.90] does not reach 0.93.
    let best = finding(&c, "lstm on generated:st (as sst2): the published best method (gxil, 1.00)");
    assert_eq!(best.holds, Some(false), "{best:?}");
    assert!(best.evidence.contains("our best is gradl-l2 0.97 [0.93, 1.00]; gxil 0.85 [0.80, 0.90]"), "{best:?}");
    // op: gxil [0.6, 0.8] overlaps gradl-l2 [0.7, 0.8]: tied, so the
    // difference is inside the intervals: undecided, never holds.
    let tied = finding(&c, "lstm on generated:op (as sst2): the published best method (gxil, 0.90)");
    assert_eq!(tied.holds, None, "{tied:?}");
    assert!(tied.evidence.contains("tied, undecided"), "{tied:?}");

    // Ascending ranks, paper: ig 1, random 2, lime 3, gradl 4, gxil 5; ours:
    // random 1, ig 2, lime 3, gxil 4, gradl 5 → Σd² = 4, ρ = 1 − 24/120 = 0.8.
    let rho = finding(&c, "lstm on generated:st (as sst2): our precision ranks the 5 common methods");
    assert_eq!((rho.holds, rho.evidence.as_str()), (Some(true), "ρ = 0.80 over 5 methods"));
    // op has two methods: no ρ.
    assert!(!c.findings.iter().any(|f| f.statement.starts_with("lstm on generated:op (as sst2): our precision")));

    // gxi: +0.90 published, +0.80 ours (the op cell has no random on either side).
    let gxi = finding(&c, "lstm (bilstm): gxi methods beat random on average");
    assert_eq!(gxi.holds, Some(true));
    assert!(gxi.evidence.starts_with("mean precision margin over random: published +0.90, ours +0.80, over 1 cell(s)"));
    // ig: the paper has it below random (0.05 < 0.1), ours above (0.30 > 0.05).
    let ig = finding(&c, "lstm (bilstm): ig methods do not beat random on average");
    assert_eq!(ig.holds, Some(false));
    assert_eq!(finding(&c, "lstm (bilstm): lime methods beat random").holds, Some(true));

    // |difference| ≤ 0.1: lime +0.05, random -0.05 (st) and gradl-l2 -0.05 (op), of 7.
    assert!(c.summary.iter().any(|l| l.starts_with("Precision: 3 of 7 cells (43%) within 0.10")), "{:?}", c.summary);

    assert_eq!(frame(&c).shape(), (8, COLUMNS.len()));
    assert_eq!(frame(&c).get_column_names(), COLUMNS);
}

#[test]
fn without_the_alias_nothing_matches() {
    let published = parse(BASTINGS_SMALL).unwrap();
    let c = compare(&published, &lstm_cells(), &[], &[], &[]).unwrap();
    assert!(c.cells.is_empty() && c.findings.is_empty());
    // Every precision/rank cell (seeds merged) is unmatched: 9; every published config too: 9.
    assert_eq!((c.unmatched_ours, c.unmatched_published), (9, 9));
    assert!(render_markdown(&c).contains("(no cell of ours matches a published number)"));
}

#[test]
fn beats_random_cannot_tell_without_the_papers_random() {
    let published = parse("arch,method,dataset,shortcut,precision,rank\nbert,gxil,sst2,st,0.2,9\n").unwrap();
    let cells = vec![
        cell("bert", "sst2", "st", "gxil", "precision", 1, [0.3, 0.2, 0.4]),
        cell("bert", "sst2", "st", "random", "precision", 1, [0.1, 0.0, 0.2]),
    ];
    let c = compare(&published, &cells, &[], &[], &[]).unwrap();
    let f = finding(&c, "bert (bert): gxi methods beat random as often as in the paper");
    assert_eq!(f.holds, None);
    assert_eq!(f.evidence, "the paper prints no `random` precision beside these 1 cell(s)");
    assert_eq!(c.unmatched_ours, 1); // our random
}

#[test]
fn a_number_the_paper_does_not_print_is_not_compared() {
    let published =
        parse("arch,method,dataset,shortcut,precision,rank\nlstm,\"igp-pad-{100,1000}\",toxicity,st,,1\n").unwrap();
    let cells = vec![
        cell("lstm", "toxicity", "st", "igp-pad-100", "precision", 1, [0.9, 0.8, 1.0]),
        cell("lstm", "toxicity", "st", "igp-pad-100", "rank", 1, [1.2, 1.0, 1.5]),
    ];
    let c = compare(&published, &cells, &[], &[], &[]).unwrap();
    assert_eq!(c.cells.len(), 1);
    assert_eq!((c.cells[0].metric.name(), c.cells[0].published), ("rank", 1.0));
    // Our precision has no published number; igp-pad-1000 has no cell of ours.
    assert_eq!((c.unmatched_ours, c.unmatched_published), (1, 1));
}

#[test]
fn diagnosticity_picks_methods_and_checks_directions() {
    let published = parse(
        "dataset,attribution,ns,soft_ns,nc,soft_nc\n\
         SST,Attention,0.406,0.496,0.349,0.407\n\
         SST,IG,0.437,0.489,0.535,0.395\n\
         SST,Deeplift,0.367,0.347,0.413,0.562\n",
    )
    .unwrap();
    let mut cells = Vec::new();
    for (method, values) in [
        ("attn-last", [0.3, 0.5, 0.4, 0.6]), // ns, soft-ns, nc, soft-nc
        ("attn-all", [0.9, 0.9, 0.9, 0.9]),
        ("igl-zero-1000", [0.36, 0.46, 0.5, 0.55]),
        ("igl-zero-100", [0.9, 0.9, 0.9, 0.9]),
    ] {
        for (metric, v) in DiagMetric::ALL.iter().zip(values) {
            cells.push(cell("bert", "sst2", "st", method, metric.ours().name(), 1, [v, v - 0.05, v + 0.05]));
        }
    }
    let c = compare(&published, &cells, &[], &[], &aliases(&[("sst2", "SST")])).unwrap();
    assert_eq!(c.cells.len(), 8);
    let methods: HashSet<String> = c.cells.iter().filter_map(|x| x.method.map(|m| m.to_string())).collect();
    assert_eq!(methods, HashSet::from(["attn-last".to_string(), "igl-zero-1000".to_string()]));
    assert_eq!(c.cells[0].published_method.as_deref(), Some("Attention"));
    assert_eq!((c.unmatched_ours, c.unmatched_published), (8, 1));

    // Paper: Soft-NS (0.496 + 0.489)/2 = 0.4925 > NS 0.4215; ours 0.48 > 0.33.
    let ns = finding(&c, "bert on sst2 (as SST): Soft-NS is more diagnostic than NS");
    assert_eq!(ns.holds, Some(true));
    assert!(ns.evidence.starts_with("published Soft-NS 0.49"), "{ns:?}");
    assert!(ns.evidence.contains("; ours 0.480 vs 0.330; over 2 attribution(s), 2 match(es)"), "{ns:?}");
    // Paper: NC 0.442 > Soft-NC 0.401; ours Soft-NC 0.575 > NC 0.45.
    let nc = finding(&c, "bert on sst2 (as SST): NC is more diagnostic than Soft-NC");
    assert_eq!(nc.holds, Some(false));
}

#[test]
fn a_printed_tie_claims_no_direction() {
    // Zhao & Aletras, SST, Gradients: NC = Soft-NC = 0.394.
    let published = parse(
        "dataset,attribution,ns,soft_ns,nc,soft_nc\n\
         SST,Gradients,0.324,0.495,0.394,0.394\n",
    )
    .unwrap();
    let cells: Vec<CellResult> = DiagMetric::ALL
        .iter()
        .zip([0.3, 0.5, 0.4, 0.6])
        .map(|(metric, v)| cell("bert", "sst2", "st", "gxil", metric.ours().name(), 1, [v, v - 0.05, v + 0.05]))
        .collect();
    let c = compare(&published, &cells, &[], &[], &aliases(&[("sst2", "SST")])).unwrap();
    let tie = finding(&c, "bert on sst2 (as SST): Soft-NC and NC are equally diagnostic in the paper");
    assert_eq!(tie.holds, None, "{tie:?}");
    assert_eq!(finding(&c, "bert on sst2 (as SST): Soft-NS is more diagnostic than NS").holds, Some(true));
}

#[test]
fn zhao_preferences() {
    let pick = |a, names: &[&'static str]| {
        chosen_method(a, names.iter().map(|n| n.parse::<Method>().unwrap())).map(|m| m.to_string())
    };
    assert_eq!(pick(ZhaoAttribution::Attention, &["attn-all", "attn-last"]).as_deref(), Some("attn-last"));
    assert_eq!(pick(ZhaoAttribution::Attention, &["attn-all", "gxil"]).as_deref(), Some("attn-all"));
    assert_eq!(pick(ZhaoAttribution::Attention, &["attn"]).as_deref(), Some("attn"));
    assert_eq!(pick(ZhaoAttribution::Gradients, &["gxip", "gxil", "gradl-l2"]).as_deref(), Some("gxil"));
    let ig = ["igp-zero-5000", "igl-zero-100", "igl-unk-5000", "igl-zero-1000"];
    assert_eq!(pick(ZhaoAttribution::IntegratedGradients, &ig).as_deref(), Some("igl-zero-1000"));
    assert_eq!(pick(ZhaoAttribution::DeepLift, &["deeplift-unk", "deeplift"]).as_deref(), Some("deeplift"));
    assert_eq!(pick(ZhaoAttribution::ScaledAttention, &["attn"]).as_deref(), None);
}

fn verification(model: &str, dataset: &str, shortcut: &str, original: f64, shortcut_acc: f64) -> VerificationRow {
    VerificationRow {
        key: crate::CellKey {
            model: model.into(),
            architecture: if model == "bert" {
                grid_core::model::Architecture::Bert
            } else {
                grid_core::model::Architecture::Bilstm
            },
            dataset: dataset.into(),
            shortcut: shortcut.parse().unwrap(),
            seed: 1,
        },
        verification: grid_methods::shortcut::verification::Verification {
            shortcut_model_on_synthetic: 1.0,
            original_model_on_synthetic: 0.5,
            shortcut_model_on_flip: 1.0,
            shortcut_model_on_original: shortcut_acc,
            original_model_on_original: original,
            shortcut_model_macro_f1: None,
            original_model_macro_f1: None,
            accuracy_without_shortcut: None,
            passed: true,
            close_calls: Vec::new(),
            failures: vec![],
            synthetic_examples: 0,
            synthetic_truncated: 0,
            original_examples: 0,
            shortcut_model_on_synthetic_interval: None,
            original_drop_interval: None,
        },
        min_synthetic_accuracy: None,
        max_original_drop: None,
    }
}

#[test]
fn source_accuracy() {
    let published = parse(
        "arch,dataset,original_test_accuracy_pct,mean_drop_with_shortcut_pct\n\
         lstm,sst2,87.8,0.6\nbert,imdb,93.5,0.2\nbert,toxicity,93.2,0.2\n",
    )
    .unwrap();
    let rows = vec![
        verification("lstm", "sst2", "st", 0.88, 0.875),
        verification("lstm", "sst2", "tic", 0.88, 0.86),
        {
            let mut second_seed = verification("lstm", "sst2", "tic", 0.88, 0.86);
            second_seed.key.seed = 2;
            second_seed
        },
        verification("bert", "imdb", "st", 0.80, 0.80),
        verification("bert", "yelp", "st", 0.80, 0.80),
    ];
    let c = compare(&published, &[], &rows, &[], &[]).unwrap();
    assert_eq!((c.unmatched_ours, c.unmatched_published), (1, 1));
    assert_eq!(c.cells.len(), 4);
    // lstm sst2: 88.0% vs 87.8; drop (0.5 + 2.0 + 2.0)/3 = 1.5 ≤ 0.6 + 1.0.
    let (acc, drop) = (&c.cells[0], &c.cells[1]);
    assert!((acc.ours - 88.0).abs() < 1e-9 && (drop.ours - 1.5).abs() < 1e-9);
    assert_eq!((drop.shortcut.to_string().as_str(), drop.runs, drop.metric.name()), ("st+tic", 3, DROP_METRIC));
    assert_eq!(c.findings[0].holds, Some(true));
    assert_eq!(c.findings[0].evidence, "ours 88.0% (+0.2 points)");
    assert_eq!(c.findings[1].holds, Some(true));
    // bert imdb: 80.0% vs 93.5.
    assert_eq!(c.findings[2].holds, Some(false));
    assert_eq!(c.findings[2].evidence, "ours 80.0% (-13.5 points)");

    // Article manipulations reassign the labels: their models are none of the
    // paper's shortcut models, and are left out of its accuracies.
    let articles = vec![verification("lstm", "imdb", "articles", 0.85, 0.48)];
    let c = compare(&published, &[], &articles, &[], &[]).unwrap();
    assert!(c.findings.is_empty() && c.cells.is_empty(), "{:?}", c.findings);
}

/// The findings-only files concern a grid only with rationale models or
/// image results; the tables, any grid.
#[test]
fn findings_only_files_concern_the_grids_that_have_their_models() {
    let rationale = parse("finding,section,statement\naccuracy_over_97,7.1,\"over 97% accuracy\"\n").unwrap();
    let images =
        parse("image_finding,section,statement\nno_method_near_one,5.1,\"None of the methods consistently scores\"\n")
            .unwrap();
    let bastings = parse(BASTINGS_SMALL).unwrap();
    assert!(!concerns(&rationale, &lstm_cells(), &[], &[]));
    assert!(!concerns(&images, &lstm_cells(), &[], &[]));
    assert!(concerns(&bastings, &[], &[], &[]));
}

#[test]
fn markdown_section() {
    let published = parse(BASTINGS_SMALL).unwrap();
    let c = compare(&published, &lstm_cells(), &[], &[], &aliases(&[("generated", "sst2")])).unwrap();
    let md = render_markdown(&c);
    assert!(md.starts_with("## Compared with Bastings et al. (2022): precision and mean rank"), "{md}");
    assert!(md.contains("\n- ✗ lstm on generated:st (as sst2): the published best method (gxil, 1.00)"), "{md}");
    assert!(md.contains("\n- ? lstm on generated:op (as sst2): the published best method"), "{md}");
    assert!(md.contains("### Cells\n\n| model | architecture | dataset   | published_dataset |"), "{md}");
    // Precision with 2 decimals, rank with 1.
    let cells_of = |l: &str| -> Vec<String> {
        let parts: Vec<&str> = l.split('|').collect();
        parts[1..parts.len() - 1].iter().map(|p| p.trim().to_string()).collect()
    };
    let gxil = md.lines().find(|l| l.contains("| gxil ") && l.contains("| precision ")).unwrap();
    assert_eq!(
        cells_of(gxil),
        ["lstm", "bilstm", "generated", "sst2", "st", "gxil", "gxi{p,l}", "precision", "2", "0.85", "0.80", "0.90"]
            .into_iter()
            .chain(["1.00", "-0.15", "no", "yes"])
            .collect::<Vec<_>>()
    );
    let rank = md.lines().find(|l| l.contains("| rank ")).unwrap();
    assert_eq!(
        cells_of(rank),
        ["lstm", "bilstm", "generated", "sst2", "st", "gxil", "gxi{p,l}", "rank", "1", "1.5", "1.0", "2.0"]
            .into_iter()
            .chain(["1.0", "+0.5", "yes", "yes"])
            .collect::<Vec<_>>()
    );

    let path = reference("zhao2023_diagnosticity.csv");
    let c = compare_file(&path, &[], &[], &[], &[]).unwrap();
    assert_eq!(c.unmatched_published, 20);
    assert!(render_markdown(&c).starts_with(&format!("## Compared with {}\n", path.display())));
}

// --- Zhou et al. ---------------------------------------------------------

const ZHOU_HEADER: &str = "arch,attribution,dataset,region,attr_pct,attr_sd_pct,frequency_pct\n";

/// An Attr% cell: `value` with a ±0.02 interval on `share` of the tokens.
#[allow(clippy::too_many_arguments)]
fn attr(
    model: &str,
    dataset: &str,
    shortcut: &str,
    method: &str,
    metric: &str,
    seed: u64,
    value: f64,
    share: Option<f64>,
) -> CellResult {
    CellResult {
        region_share: share,
        ..cell(model, dataset, shortcut, method, metric, seed, [value, value - 0.02, value + 0.02])
    }
}

fn zhou_rows(p: &Published) -> &[ZhouAttrRow] {
    match p {
        Published::ZhouAttr(rows) => rows,
        other => panic!("{other:?}"),
    }
}

#[test]
fn loads_zhou_table1() {
    let p = load(&reference("zhou2022_article_attention.csv")).unwrap();
    assert_eq!(p.kind(), PublishedKind::ZhouAttr);
    let rows = zhou_rows(&p);
    assert_eq!(rows.len(), 8, "Article has no non-correlating row");
    assert_eq!(
        rows[0],
        ZhouAttrRow {
            line: 2,
            arch: PaperArch::Lstm,
            attribution: ZhouAttribution::Attention,
            dataset: ZhouDataset::Article,
            region: ZhouRegion::Correlating,
            attr_pct: 10.3,
            attr_sd_pct: 2.4,
            frequency_pct: 7.9,
        }
    );
    let find = |d, r| rows.iter().find(|x| x.dataset == d && x.region == r).unwrap();
    let nc = find(ZhouDataset::Nc, ZhouRegion::NonCorrelating);
    assert_eq!((nc.attr_pct, nc.attr_sd_pct, nc.frequency_pct), (12.6, 9.3, 4.1));
    let cn = find(ZhouDataset::Cn, ZhouRegion::Other);
    assert_eq!((cn.attr_pct, cn.attr_sd_pct, cn.frequency_pct), (78.2, 24.7, 92.1));
    // Each manipulation's regions add up to 100% (the paper rounds to one decimal).
    for d in ZhouDataset::ALL {
        let of = rows.iter().filter(|r| r.dataset == d);
        let (attr, frequency) = of.fold((0.0, 0.0), |(a, f), r| (a + r.attr_pct, f + r.frequency_pct));
        assert!((attr - 100.0f64).abs() < 0.15 && (frequency - 100.0f64).abs() < 0.15, "{d:?}: {attr} {frequency}");
    }
    assert_eq!(ZhouDataset::Nc.shortcut(), ShortcutKind::ArticlesNc);
    assert_eq!(ZhouDataset::of_shortcut(Regime::Shortcut(ShortcutKind::ArticlesCn)), Some(ZhouDataset::Cn));
    assert_eq!(ZhouDataset::of_shortcut(Regime::Shortcut(ShortcutKind::St)), None);
    assert_eq!(ZhouDataset::of_shortcut(Regime::Natural), None);
}

#[test]
fn zhou_malformed_lines_name_file_and_line() {
    let line = |row: &str| parse(&format!("{ZHOU_HEADER}lstm,attention,article,correlating,10.3,2.4,7.9\n{row}\n"));
    let err = |row: &str| line(row).unwrap_err().to_string();
    assert_eq!(err("lstm,attention,cn,correlating,ten,2.4,4.1"), "pub.csv:3: column `attr_pct`: `ten` is not a number");
    assert_eq!(
        err("lstm,attention,cn,correlating,15.9,2.4,104.1"),
        "pub.csv:3: column `frequency_pct`: 104.1 is outside 0..=100"
    );
    assert_eq!(
        err("lstm,attention,beer,correlating,1,1,1"),
        "pub.csv:3: column `dataset`: unknown `beer`; known: article, cn, nc"
    );
    assert_eq!(
        err("lstm,attention,cn,distractors,1,1,1"),
        "pub.csv:3: column `region`: unknown `distractors`; known: correlating, non_correlating, other"
    );
    assert_eq!(
        err("lstm,gradient,cn,other,1,1,1"),
        "pub.csv:3: column `attribution`: unknown `gradient`; known: attention"
    );
    assert_eq!(
        err("lstm,attention,article,non_correlating,1,1,1"),
        "pub.csv:3: column `region`: `article` has no non-correlating articles (the paper prints NA)"
    );
    assert_eq!(
        err("lstm,attention,article,correlating,1,1,1"),
        "pub.csv:3: the same arch `lstm`, attribution `attention`, dataset `article`, region `correlating` as line 2"
    );
    assert_eq!(err("lstm,attention,cn,other,1,1"), "pub.csv:3: 6 fields, but the header has 7");
    assert!(line("bert,attention,cn,other,1,1,1").is_ok());
}

/// lstm on sst2 (the paper's way on every claim but "far from faithful" on CN)
/// and on imdb (the other way, or missing numbers).
fn zhou_cells() -> Vec<CellResult> {
    let s = |shortcut, method, metric, seed, value, share| {
        attr("lstm", "sst2", shortcut, method, metric, seed, value, share)
    };
    let i = |shortcut, method, metric, value, share| attr("lstm", "imdb", shortcut, method, metric, 1, value, share);
    vec![
        // Article: 0.10 / 0.14 on 8% of the tokens.
        s("articles", "attn", "attr", 1, 0.10, Some(0.08)),
        s("articles", "attn", "attr", 2, 0.14, Some(0.08)),
        s("articles", "gradl-l2", "attr", 1, 0.9, Some(0.08)), // not attention: unmatched
        // CN: attr over three seeds, attr-noncorr over two.
        s("articles-cn", "attn", "attr", 1, 0.6, Some(0.04)),
        s("articles-cn", "attn", "attr-noncorr", 1, 0.1, Some(0.04)),
        s("articles-cn", "attn", "attr", 2, 0.7, Some(0.04)),
        s("articles-cn", "attn", "attr-noncorr", 2, 0.2, Some(0.04)),
        s("articles-cn", "attn", "attr", 3, 0.8, Some(0.04)),
        s("articles-nc", "attn", "attr", 1, 0.2, Some(0.04)),
        s("articles-nc", "attn", "attr-noncorr", 1, 0.15, Some(0.04)),
        s("st", "attn", "attr", 1, 0.9, Some(0.05)), // Bastings' shortcut: not Zhou's
        CellResult { verified: false, ..i("articles", "attn", "attr", 0.05, Some(0.08)) },
        i("articles-cn", "attn", "attr", 0.3, None),
        i("articles-nc", "attn", "attr", 0.2, Some(0.04)),
        i("articles-nc", "attn", "attr-noncorr", 0.02, Some(0.04)),
    ]
}

fn zhou_verification() -> Vec<VerificationRow> {
    vec![verification("lstm", "sst2", "articles", 0.9, 0.9), verification("lstm", "imdb", "articles", 0.9, 0.9)]
        .into_iter()
        .zip([0.99, 0.90])
        .map(|(mut r, on_synthetic)| {
            r.verification.shortcut_model_on_synthetic = on_synthetic;
            r
        })
        .collect()
}

fn compared<'a>(c: &'a Comparison, dataset: &str, shortcut: &str, metric: &str) -> &'a ComparedCell {
    c.cells
        .iter()
        .find(|x| x.dataset == dataset && x.shortcut.to_string() == shortcut && x.metric.name() == metric)
        .unwrap_or_else(|| panic!("{dataset} {shortcut} {metric}: {:#?}", c.cells))
}

fn near(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn zhou_matches_regions_and_other_words() {
    let published = load(&reference("zhou2022_article_attention.csv")).unwrap();
    let c = compare(&published, &zhou_cells(), &zhou_verification(), &[], &[]).unwrap();
    // sst2: Article 2 + CN 3 + NC 3; imdb: Article 2 + CN 1 (no attr-noncorr) + NC 3.
    assert_eq!(c.cells.len(), 14, "{:#?}", c.cells);
    assert_eq!((c.unmatched_published, c.unmatched_ours), (0, 1), "gradl-l2 only; st is not Zhou's");

    // Article: attr (0.10 + 0.14)/2 in percent, the interval averaged.
    let a = compared(&c, "sst2", "articles", "attr");
    assert_eq!(
        (a.method.map(|m| m.to_string()).as_deref(), a.published_method.as_deref()),
        (Some("attn"), Some("attention"))
    );
    assert_eq!((a.published_dataset.as_str(), a.runs, a.published), ("article", 2, 10.3));
    assert!(near(a.ours, 12.0) && near(a.ci_low.unwrap(), 10.0) && near(a.ci_high.unwrap(), 14.0), "{a:?}");
    assert!(near(a.difference(), 1.7) && near(a.share.unwrap(), 8.0), "{a:?}");
    assert_eq!((a.published_sd, a.published_share), (Some(2.4), Some(7.9)));
    // Other words = 1 − attr: 88%, the interval mirrored, on 92% of the tokens.
    let o = compared(&c, "sst2", "articles", "attr-other");
    assert!(near(o.ours, 88.0) && near(o.ci_low.unwrap(), 86.0) && near(o.ci_high.unwrap(), 90.0), "{o:?}");
    assert!(near(o.share.unwrap(), 92.0) && o.published == 89.7, "{o:?}");

    // CN: attr over 3 seeds (70%), attr-noncorr over 2 (15%); other words from
    // the 2 seeds with both: (0.3 + 0.1)/2 = 20%, not 100 − 70 − 15.
    let cn = compared(&c, "sst2", "articles-cn", "attr");
    assert!(near(cn.ours, 70.0) && cn.runs == 3 && cn.published == 15.9);
    let non = compared(&c, "sst2", "articles-cn", "attr-noncorr");
    assert!(near(non.ours, 15.0) && non.runs == 2 && non.published == 5.9 && non.published_share == Some(3.8));
    let other = compared(&c, "sst2", "articles-cn", "attr-other");
    assert!(near(other.ours, 20.0) && other.runs == 2 && other.ci_low.is_none(), "{other:?}");
    assert!(near(other.share.unwrap(), 92.0) && other.published == 78.2);
    // Without attr-noncorr, CN's other words are not guessed.
    assert!(
        !c.cells
            .iter()
            .any(|x| x.dataset == "imdb" && x.shortcut.to_string() == "articles-cn" && x.metric.name() != "attr")
    );

    // Within one published sd: sst2 Article 2 (12.0 vs 10.3 ± 2.4, 88.0 vs 89.7), NC 3 (20 vs 12.0 ± 8.4,
    // 15 vs 12.6 ± 9.3, 65 vs 75.4 ± 16.7); imdb CN 1 (30 vs 15.9 ± 25.7), NC 2 (20, 78): 8 of 14.
    // Intervals: 11 cells have one (CN / NC other words have none); 10.3 and 89.7 fall inside.
    assert!(
        c.summary.contains(
            &"Attr%: 8 of 14 cells (57%) within one published standard deviation of the published mean; \
              published inside our 95% interval in 2 of 11."
                .to_string()
        ),
        "{:?}",
        c.summary
    );
    assert!(c.summary.iter().any(|l| l.contains("BeerAdvocate")), "{:?}", c.summary);
    assert_eq!(frame(&c).get_column_names(), columns(PublishedKind::ZhouAttr));
    assert_eq!(frame(&c).shape(), (14, COLUMNS.len() + 3));
}

#[test]
fn zhou_findings_both_ways() {
    let published = load(&reference("zhou2022_article_attention.csv")).unwrap();
    let c = compare(&published, &zhou_cells(), &zhou_verification(), &[], &[]).unwrap();
    let holds = |starts: &str| finding(&c, starts).holds;

    // Attention beats the word frequency: 12% on 8% ✓; imdb 5% on 8% ✗; no share ?.
    let f = finding(&c, "lstm on sst2, Article (articles), attn: attention puts more than the word frequency");
    assert_eq!(f.holds, Some(true));
    assert!(f.statement.ends_with("(published 10.3% on 7.9% of the words)"), "{f:?}");
    assert_eq!(f.evidence, "ours 12.0% on 8.0% of the tokens (+4.0 points) over 2 seed(s)");
    // On imdb the model failed verification: undecided, though the numbers alone say it fails.
    let f = finding(&c, "lstm on imdb, Article (articles), attn: attention puts more than the word frequency");
    assert_eq!(f.holds, None);
    assert!(
        f.evidence.ends_with("undecided: a model it rests on failed verification (on the numbers alone it would fail)"),
        "{f:?}"
    );
    assert_eq!(holds("lstm on imdb, CN (articles-cn), attn: attention puts more than the word frequency"), None);

    // Far from faithful (< 50%): Article 12% ✓; CN 70% ✗.
    let f = finding(&c, "lstm on sst2, Article (articles), attn: attention is far from a faithful attribution");
    assert_eq!(f.holds, Some(true));
    assert_eq!(f.evidence, "ours 12.0% over 2 seed(s); our models' accuracy on the manipulated test set is 99.0%");
    assert_eq!(holds("lstm on sst2, CN (articles-cn), attn: attention is far from a faithful"), Some(false));
    // imdb's Article model is 90% accurate (said beside the verdict) and
    // failed verification: undecided, though 5% alone would hold.
    let f = finding(&c, "lstm on imdb, Article (articles), attn: attention is far from a faithful attribution");
    assert_eq!(f.holds, None);
    assert!(f.evidence.contains("is 90.0%, below the paper's 97.0%"), "{f:?}");
    assert!(f.evidence.ends_with("(on the numbers alone it would hold)"), "{f:?}");
    let f = finding(&c, "lstm on imdb, CN (articles-cn), attn: attention is far from a faithful attribution");
    assert!(f.evidence.ends_with("no verification of ours gives the models' accuracy"), "{f:?}");

    // NC: non-correlating ≥ 0.5 × correlating: 15% vs 20% ✓; 2% vs 20% ✗. Not asked of CN.
    let f = finding(&c, "lstm on sst2, NC (articles-nc), attn: attention gives the non-correlating articles");
    assert_eq!(f.holds, Some(true));
    assert!(f.statement.ends_with("(published 12.6% vs 12.0%)"), "{f:?}");
    assert_eq!(f.evidence, "ours 15.0% vs 20.0% (ratio 0.75) over 1 seed(s)");
    assert_eq!(
        holds("lstm on imdb, NC (articles-nc), attn: attention gives the non-correlating articles"),
        Some(false)
    );
    assert!(!c.findings.iter().any(|f| f.statement.contains("CN (articles-cn), attn: attention gives")));

    // Per (model, dataset): sst2 first, Article, CN, NC; 3 × 2 + 1 findings each.
    assert_eq!(c.findings.len(), 14);
    assert!(c.findings[0].statement.starts_with("lstm on sst2, Article"), "{:#?}", c.findings);
    assert!(c.findings[6].statement.starts_with("lstm on sst2, NC (articles-nc), attn: attention gives"));
    assert!(c.findings[7].statement.starts_with("lstm on imdb, Article"));

    let md = render_markdown(&c);
    assert!(md.starts_with("## Compared with Zhou et al. (2022): attention Attr%"), "{md}");
    assert!(md.contains("\n- ✗ lstm on sst2, CN (articles-cn), attn: attention is far from a faithful"), "{md}");
    assert!(md.contains("\n- ? lstm on imdb, CN (articles-cn), attn: attention puts more"), "{md}");
    assert!(md.contains("| published_sd | region_share | published_frequency |"), "{md}");
    let row = md.lines().find(|l| l.contains("| sst2 ") && l.contains("| articles ") && l.contains("| attr ")).unwrap();
    let fields: Vec<&str> = row.split('|').map(str::trim).filter(|f| !f.is_empty()).collect();
    assert_eq!(fields[8..], ["2", "12.0", "10.0", "14.0", "10.3", "+1.7", "yes", "yes", "2.4", "8.0", "7.9"]);
}

#[test]
fn zhou_bert_rows_take_attn_last() {
    let published = parse(&format!(
        "{ZHOU_HEADER}bert,attention,article,correlating,20,1,7\nlstm,attention,article,correlating,10.3,2.4,7.9\n"
    ))
    .unwrap();
    let cells = vec![
        attr("bert", "sst2", "articles", "attn-all", "attr", 1, 0.3, Some(0.07)),
        attr("bert", "sst2", "articles", "attn-last", "attr", 1, 0.1, Some(0.07)),
    ];
    let c = compare(&published, &cells, &[], &[], &[]).unwrap();
    assert_eq!(c.cells.len(), 1);
    assert_eq!(
        (c.cells[0].method.map(|m| m.to_string()).as_deref(), c.cells[0].architecture.name()),
        (Some("attn-last"), "bert")
    );
    assert!(near(c.cells[0].ours, 10.0) && c.cells[0].published == 20.0);
    // The lstm row has no cell of ours; attn-all has no row.
    assert_eq!((c.unmatched_published, c.unmatched_ours), (1, 1));
    // Without attn-last, attn-all stands for attention.
    let c = compare(&published, &cells[..1], &[], &[], &[]).unwrap();
    assert_eq!(c.cells[0].method.map(|m| m.to_string()).as_deref(), Some("attn-all"));

    // Nothing of ours on the article manipulations: nothing matches.
    let c = compare(&published, &lstm_cells(), &[], &[], &[]).unwrap();
    assert!(c.cells.is_empty() && c.findings.is_empty());
    assert_eq!((c.unmatched_published, c.unmatched_ours), (2, 0));
    assert!(render_markdown(&c).contains("(no cell of ours matches a published number)"));
}

#[test]
fn a_cell_over_seeds_has_the_tables_interval() {
    let seed = |s: u64, values: Vec<f64>| CellResult {
        value: values.iter().sum::<f64>() / values.len() as f64,
        values,
        ..cell("lstm", "generated", "st", "gxil", "precision", s, [0.0, 0.0, 0.0])
    };
    let cells = vec![seed(1, vec![1.0, 0.5, 1.0, 0.0, 1.0]), seed(2, vec![0.5, 0.5, 1.0, 1.0, 0.0])];
    let published = parse(BASTINGS_SMALL).unwrap();
    let c = compare(&published, &cells, &[], &[], &aliases(&[("generated", "sst2")])).unwrap();
    let tables = crate::tables::over_seeds(&cells);
    let (ours, table) = (&c.cells[0], &tables[0].cell);
    assert_eq!((ours.runs, ours.ours), (2, table.value));
    assert_eq!((ours.ci_low, ours.ci_high), (table.ci_low, table.ci_high));
    assert!(ours.ci_low.is_some() && ours.ci_low != ours.ci_high, "{ours:?}");
}

#[test]
fn natural_cells_stand_for_a_model_in_the_zhao_comparison() {
    // Zhao & Aletras explain models that learnt the task: where a model has
    // natural cells, its shortcut cells are not compared.
    let published = parse(
        "dataset,attribution,ns,soft_ns,nc,soft_nc\n\
         SST,IG,0.437,0.489,0.535,0.395\n",
    )
    .unwrap();
    let mut cells = Vec::new();
    for (shortcut, v) in [("st", 0.9), ("natural", 0.4)] {
        for metric in DiagMetric::ALL {
            cells.push(cell(
                "bert",
                "sst2",
                shortcut,
                "igl-zero-100",
                metric.ours().name(),
                1,
                [v, v - 0.05, v + 0.05],
            ));
        }
    }
    let c = compare(&published, &cells, &[], &[], &aliases(&[("sst2", "SST")])).unwrap();
    assert_eq!(c.cells.len(), 4, "one site, four metrics");
    assert!(c.cells.iter().all(|x| (x.ours - 0.4).abs() < 1e-12), "the natural cells");
    assert_eq!(c.unmatched_ours, 4, "the st cells are left out");
    // Without natural cells the shortcut cells are compared, as before.
    let shortcut_only: Vec<CellResult> = cells.into_iter().filter(|c| c.key.shortcut.name() == "st").collect();
    let c = compare(&published, &shortcut_only, &[], &[], &aliases(&[("sst2", "SST")])).unwrap();
    assert_eq!(c.cells.len(), 4);
}

/// A compared cell's shortcut: one regime, or several averaged, each once
/// in order, written joined with `+`.
#[test]
fn regimes_are_one_or_several_each_once() {
    let [st, tic] = [ShortcutKind::St, ShortcutKind::Tic].map(Regime::Shortcut);
    assert_eq!(Regimes::one(st).single(), Some(st));
    assert_eq!(Regimes::one(Regime::Natural).to_string(), "natural");
    let averaged = Regimes::of(st, [st, tic, st, tic]);
    assert_eq!((averaged.to_string().as_str(), averaged.single()), ("st+tic", None));
}
