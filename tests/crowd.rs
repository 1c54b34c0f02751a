//! Lu et al.'s crowd study end to end on a natural grid: `grid crowd export`
//! writes the study from the cached attributions, answers come back as a
//! platform's CSV, and `grid crowd import` scores them — computed once, then
//! served from the cache.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use grid_pipeline::crowd::study::{Study, TaskKind};

use crate::util::GridTest;

fn exported() -> (GridTest, Study) {
    let t = GridTest::new(&crate::natural::natural());
    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    let out = t.grid(&[
        "crowd",
        "export",
        "grid.toml",
        "--methods",
        "gxil,random",
        "--k",
        "4,2",
        "--examples",
        "6",
        "--answers",
        "3",
        "--checks",
        "1",
        "--seed",
        "9",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let dir = t.reports().join("tiny/crowd/study");
    for file in ["study.json", "questionnaire.html", "tasks.csv"] {
        assert!(dir.join(file).is_file(), "{file} missing");
    }
    let study: Study = serde_json::from_slice(&std::fs::read(dir.join("study.json")).unwrap()).unwrap();
    (t, study)
}

/// Every batch answered by `rounds` workers: gxil's tasks with the true label,
/// random's with the wrong one; worker `w0` fails its attention check.
fn answers(study: &Study) -> String {
    let mut csv = "worker,batch,task,answer,seconds\n".to_string();
    for (b, batch) in study.batches.iter().enumerate() {
        let worker = format!("w{b}");
        for id in batch {
            let task = study.task(id).unwrap();
            let answer = match &task.kind {
                TaskKind::Salience { method, .. } if method == "gxil" => task.label,
                TaskKind::Salience { .. } => 1 - task.label,
                TaskKind::AttentionCheck if b == 0 => 1 - task.label,
                TaskKind::AttentionCheck => task.label,
            };
            writeln!(csv, "{worker},{b},{id},{answer},2.5").unwrap();
        }
    }
    csv
}

#[test]
fn export_then_import_scores_lus_numbers_and_caches_the_import() {
    let (t, study) = exported();
    assert_eq!(study.ks, [2, 4]);
    assert_eq!(study.labels, ["negative", "positive"], "the generated corpus's labels");
    // 6 examples × 2 methods × 2 ks, each dealt 3 times; one example per batch.
    assert_eq!(study.salience_tasks().count(), 24);
    assert_eq!(study.batches.len(), 3 * 4);
    let mut labels: BTreeMap<u32, usize> = BTreeMap::new();
    for task in study.salience_tasks() {
        if let TaskKind::Salience { method, k: 2, .. } = &task.kind
            && method == "gxil"
        {
            *labels.entry(task.label).or_default() += 1;
        }
    }
    assert_eq!(labels.values().copied().collect::<Vec<_>>(), [3, 3], "balanced over the labels: {labels:?}");

    std::fs::write(t.path().join("answers.csv"), answers(&study)).unwrap();
    let out = t.grid(&["crowd", "import", "grid.toml", "answers.csv"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    // gxil right everywhere (p = 100 at both k), random never: w_k = 2 / (4 · 1),
    // s_gxil = 0.5 · 100 + 0.5 · 100; random flips nothing and every example is
    // "aided" (neither flipping nor always right).
    assert!(stdout.contains("| gxil | 100 (1) | 100 (1) | 100.0 (1) | 0 | 0 | 6 |"), "{stdout}");
    assert!(stdout.contains("| random | 0 (2) | 0 (2) | 0.0 (2) | 0 | 6 | 6 |"), "{stdout}");
    assert!(stdout.contains("| w0 | 6 | 1 / 1 | no |"), "one task of each example in a batch: {stdout}");
    assert!(!stderr.contains("cached"), "{stderr}");
    let examples = std::fs::read_to_string(t.reports().join("tiny/crowd/crowd_examples_gen_natural_lstm.md")).unwrap();
    assert_eq!(
        examples.matches("| words shown | recognised |").count(),
        3,
        "three examples as Lu's Table 6: {examples}"
    );
    let table = t.reports().join("tiny/crowd/crowd_accuracy_gen_natural_lstm.csv");
    let csv = std::fs::read_to_string(&table).unwrap();
    assert!(csv.contains("gen/natural/lstm,gxil,100.0000,100.0000,100.0000,0,0,6"), "{csv}");

    // The same file again: served from the cache, same tables.
    let again = t.grid(&["crowd", "import", "grid.toml", "answers.csv"]);
    assert!(String::from_utf8_lossy(&again.stderr).contains("cached"), "{}", String::from_utf8_lossy(&again.stderr));
    assert_eq!(String::from_utf8_lossy(&again.stdout), stdout);

    // Leaving out w0 (failed its check) leaves its tasks with 2 answers.
    let strict = t.grid(&["crowd", "import", "grid.toml", "answers.csv", "--exclude-failed-checks"]);
    let stderr = String::from_utf8_lossy(&strict.stderr);
    assert!(strict.status.success(), "{stderr}");
    assert!(stderr.contains("1 workers failed an attention check"), "{stderr}");
    assert!(stderr.contains("fewer than the 3 answers"), "{stderr}");
}

#[test]
fn answers_for_another_study_are_refused_at_their_line() {
    let (t, _) = exported();
    std::fs::write(t.path().join("answers.csv"), "worker,task,answer\nw1,check0,0\nw1,t000000000000,1\n").unwrap();
    let out = t.grid(&["crowd", "import", "grid.toml", "answers.csv"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("answers.csv:3") && stderr.contains("not in this study"), "{stderr}");
}

/// A person's pass through the questionnaire in headless Chromium, with real
/// mouse clicks: start batch 0 as worker `w1`, answer "positive" to every
/// salience task and "I don't know" to the attention check (reloading the tab
/// after two answers: it resumes), take the CSV the page downloads, and
/// import it: the scores are what those answers give.
#[cfg(unix)]
#[test]
fn a_person_answers_the_questionnaire_in_headless_chromium() {
    use std::time::Duration;
    let Some(browser) = crate::browser::browser_or_skip() else { return };
    let (t, study) = exported();
    let downloads = t.path().join("downloads");
    std::fs::create_dir_all(&downloads).unwrap();
    let page = t.reports().join("tiny/crowd/study/questionnaire.html").canonicalize().unwrap();
    let mut chromium = crate::cdp::Chromium::launch(&browser, t.path(), &downloads);
    chromium.navigate(&format!("file://{}?worker=w1&batch=0", page.display()));
    chromium.wait_for("document.body && document.body.dataset.ready === 'yes'", Duration::from_secs(20));
    assert_eq!(chromium.eval("document.getElementById('worker').value"), "w1");
    chromium.click("#begin");

    let batch = &study.batches[0];
    let mut shown = Vec::new();
    let answer_one = |chromium: &mut crate::cdp::Chromium, shown: &mut Vec<String>| {
        let text = chromium.eval("document.getElementById('text').textContent").as_str().unwrap().to_string();
        let answer = if text.contains("attention check") { "dont_know" } else { "1" };
        chromium.click(&format!("#answers button[data-answer='{answer}']"));
        shown.push(text);
    };
    // Two answers, then the tab reloads: the page resumes at the third task.
    answer_one(&mut chromium, &mut shown);
    answer_one(&mut chromium, &mut shown);
    chromium.navigate(&format!("file://{}?worker=w1&batch=0", page.display()));
    chromium.wait_for("document.body && document.body.dataset.ready === 'yes'", Duration::from_secs(20));
    chromium.click("#begin");
    for n in 2..batch.len() {
        let progress = chromium.eval("document.getElementById('progress').textContent");
        assert_eq!(progress, format!("Task {} of {}", n + 1, batch.len()));
        answer_one(&mut chromium, &mut shown);
    }
    chromium.wait_for("document.body.dataset.finished === 'yes'", Duration::from_secs(10));
    // Every task of the batch was shown once, whatever the worker's order.
    let mut expected: Vec<String> = batch.iter().map(|id| study.task(id).unwrap().text.clone()).collect();
    expected.sort();
    shown.sort();
    assert_eq!(shown, expected);

    let file = downloads.join("answers-w1-batch0.csv");
    let start = std::time::Instant::now();
    while !file.is_file() {
        assert!(start.elapsed() < Duration::from_secs(20), "no download in {}", downloads.display());
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = t.grid(&["crowd", "import", "grid.toml", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("| w1 | 6 | 1 / 1 | no |"), "the check answered \"don't know\" failed: {stdout}");

    // By hand: one answer per task of batch 0, "positive"; every other task
    // has none. A task is right iff it is in batch 0 and its label is positive.
    let csv = std::fs::read_to_string(t.reports().join("tiny/crowd/crowd_accuracy_gen_natural_lstm.csv")).unwrap();
    for method in ["gxil", "random"] {
        let mut expected_row = format!("gen/natural/lstm,{method}");
        for &k in &study.ks {
            let tasks: Vec<_> = study
                .salience_tasks()
                .filter(|t| matches!(&t.kind, TaskKind::Salience { method: m, k: kk, .. } if m == method && *kk == k))
                .collect();
            let right = tasks.iter().filter(|t| batch.contains(&t.id) && t.label == 1).count();
            write!(expected_row, ",{:.4}", 100.0 * right as f64 / tasks.len() as f64).unwrap();
        }
        assert!(csv.contains(&expected_row), "{expected_row} not in\n{csv}");
    }
}

/// The simulated annotator answers every task its N times, reproducibly, and
/// the import says the answers are simulated.
#[test]
fn simulated_workers_answer_the_study_and_are_labelled_so() {
    let (t, study) = exported();
    let run = |out: &str| {
        let o = t.grid(&["crowd", "simulate", "grid.toml", "--out", out, "--seed", "4"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        std::fs::read_to_string(t.path().join(out)).unwrap()
    };
    let answers = run("sim1.csv");
    assert_eq!(answers, run("sim2.csv"), "same seed, same answers");
    let rows = answers.lines().count() - 1;
    assert_eq!(rows, study.batches.iter().map(Vec::len).sum::<usize>());
    let out = t.grid(&["crowd", "import", "grid.toml", "sim1.csv"]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    assert!(stdout.contains("accuracy of simulated annotators"), "{stdout}");
    assert!(!stderr.contains("warning"), "every task has its answers: {stderr}");
    // A simulated worker reads the attention check and passes it.
    assert!(stdout.contains("| simulated-0 | 6 | 0 / 1 | no |"), "{stdout}");

    // Beside Lu et al.'s numbers, the generated corpus standing in for IMDB.
    let reference =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("experiments/reference/lu2024_crowd_accuracy.csv");
    let out = t.grid(&[
        "crowd",
        "import",
        "grid.toml",
        "sim1.csv",
        "--compare",
        reference.to_str().unwrap(),
        "--compare-as",
        "gen=imdb",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("### gen/natural/lstm (simulated annotators) vs the paper's imdb"), "{stdout}");
    assert!(stdout.contains("| inputxgrad | gxil |") && stdout.contains("| random | random |"), "{stdout}");
    assert!(t.reports().join("tiny/crowd/compare_lu2024.md").is_file());

    // The ledger lists the same findings under Lu et al., beside the others.
    let lu_file = reference.to_str().unwrap();
    let out = t.grid(&["ledger", "grid.toml", "--crowd", "sim1.csv", "--compare", lu_file, "--compare-as", "gen=imdb"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lu = stdout.find("## Lu et al. (2024)").unwrap_or_else(|| panic!("{stdout}"));
    let section = &stdout[lu..];
    assert!(section.contains("| tiny (gen/natural/lstm, simulated annotators, vs imdb) |"), "{stdout}");
    assert!(section.contains("mean accuracy over methods"), "{stdout}");
    assert!(!stdout.contains("lu2024_crowd_accuracy.csv: "), "no longer a file left out:\n{stdout}");
    // Without answers it is a file left out, with the way to bring it in.
    let out = t.grid(&["ledger", "grid.toml", "--compare", lu_file, "--compare-as", "gen=imdb"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("## Lu et al.") && stdout.contains("lu2024_crowd_accuracy.csv: "), "{stdout}");
    assert!(stdout.contains("grid ledger … --crowd ANSWERS"), "{stdout}");
}
