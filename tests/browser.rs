//! The HTML report in a real browser: headless Chromium loads a rendered page,
//! runs its inline script, dumps the DOM and takes a screenshot.
//!
//! The browser is `$GRID_CHROMIUM`, else the first of `chromium`,
//! `chromium-browser`, `google-chrome` on `PATH`. Without one the test is skipped,
//! except under CI (`CI` set), where it fails. The screenshot and the page go to
//! `$GRID_ARTIFACTS`, else `target/artifacts/` of the crate, for a person to look at.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use grid_report::html::{ExampleView, Page, render};
use grid_report::markdown::Align;
use grid_report::{DisplayTable, Plot};
use polars::prelude::*;

/// A browser that hangs (no display, a stuck profile) is killed after this.
const BROWSER_TIMEOUT: Duration = Duration::from_secs(60);
const SCREENSHOT: &str = "report_browser.png";
const EXAMPLES_SCREENSHOT: &str = "report_browser_examples.png";

/// The browser, or `None` (and a skip line) outside CI when there is none.
pub(crate) fn browser_or_skip() -> Option<PathBuf> {
    let browser = find_browser();
    if browser.is_none() {
        if std::env::var_os("CI").is_some() {
            panic!("no Chromium found (set GRID_CHROMIUM or install it: `apt-get install chromium`)");
        }
        eprintln!("skipped: no chromium, chromium-browser or google-chrome on PATH (set GRID_CHROMIUM)");
    }
    browser
}

/// The page a real grid run writes: its tables, charts and attributed examples
/// render in the browser.
#[test]
fn a_grid_runs_report_renders_in_headless_chromium() {
    let Some(browser) = browser_or_skip() else { return };
    let t = crate::util::GridTest::tiny_after_first_run();
    let outcome = t.run();
    assert!(outcome.succeeded(), "{:?}", outcome.failures().collect::<Vec<_>>());
    let page = t.reports().join("tiny/report.html");
    let dom = dump_dom(&browser, &page, t.path());
    assert!(dom.contains("data-rendered=\"yes\""), "the page's script did not run");
    for id in [
        "table-recommendation",
        "table-verification",
        "table-bastings_table3_grad",
        "table-lstm_precision",
        "plot-verification",
        "plot-precision_lstm_gen",
    ] {
        assert!(dom.contains(&format!("id=\"{id}\"")), "{id} missing");
    }
    // Three shortcut models, three examples each, every method a row.
    assert_eq!(dom.matches("class=\"example\"").count(), 9);
    assert_eq!(dom.matches("class=\"salience-row\"").count(), 27);
    assert!(count_shortcut_spans(&dom) >= 9 * 3, "every row marks its shortcut tokens");
    screenshot_checked(&browser, &page, &artifacts_dir().join("grid_report.png"), t.path());
}

#[test]
fn report_renders_in_headless_chromium() {
    let Some(browser) = browser_or_skip() else { return };
    let tmp = tempfile::tempdir().expect("temp dir");
    let page_path = tmp.path().join("report.html");
    let examples = examples();
    let html = render_report(&examples);
    std::fs::write(&page_path, &html).expect("write page");
    let artifacts = artifacts_dir();
    std::fs::write(artifacts.join("report_browser.html"), &html).expect("keep the page as an artifact");

    let dom = dump_dom(&browser, &page_path, tmp.path());
    assert_rendered(&dom, &examples);

    let shot = artifacts.join(SCREENSHOT);
    screenshot_checked(&browser, &page_path, &shot, tmp.path());
    // The token view sits below the fold of the full page; a page of the examples
    // alone shows it for a reviewer.
    let examples_page = tmp.path().join("examples.html");
    std::fs::write(&examples_page, render_examples_only(&examples)).expect("write examples page");
    screenshot_checked(&browser, &examples_page, &artifacts.join(EXAMPLES_SCREENSHOT), tmp.path());
}

/// Takes a screenshot of `page` into `png` and checks that it is a PNG with content.
fn screenshot_checked(browser: &Path, page: &Path, png: &Path, tmp: &Path) {
    let _ = std::fs::remove_file(png);
    take_screenshot(browser, page, png, tmp);
    let bytes = std::fs::read(png).unwrap_or_default();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "{} is not a PNG", png.display());
    // A blank 1280x1800 page compresses to a few KB; text and colour take far more.
    assert!(bytes.len() > 20_000, "screenshot {} is {} bytes: an empty page?", png.display(), bytes.len());
    eprintln!("screenshot: {}", png.display());
}

/// What the browser must have built from the page.
fn assert_rendered(dom: &str, examples: &[ExampleView]) {
    // Only a browser that ran the inline script sets this and builds the filter.
    assert!(dom.contains("data-rendered=\"yes\""), "the inline script did not run:\n{}", first_chars(dom, 2000));
    assert!(dom.contains("id=\"method-select\""), "method filter missing");
    for (method, _) in &examples[0].methods {
        assert!(dom.contains(&format!("<option value=\"{method}\">{method}</option>")), "no filter option {method}");
    }
    assert!(!dom.contains("id=\"method-filter\" hidden"), "filter still hidden");

    for id in ["toc", "summary", "tables", "plots", "examples", "legend"] {
        assert!(dom.contains(&format!("id=\"{id}\"")), "missing #{id}");
    }
    for id in ["table-verification", "table-lstm_precision", "table-tiny-bert_rank"] {
        assert!(dom.contains(&format!("<table class=\"result\" id=\"{id}\">")), "missing table {id}");
    }
    assert!(dom.contains("class=\"num failed\">1.9 †</td>"), "failed cell not marked");
    for id in ["plot-precision_by_method", "plot-rank_by_method"] {
        assert!(dom.contains(&format!("<figure class=\"plot\" id=\"{id}\">")), "missing figure {id}");
    }
    assert_eq!(dom.matches("<svg").count(), 2, "inline SVGs");

    assert_eq!(dom.matches("<div class=\"example\"").count(), examples.len());
    for n in 0..examples.len() {
        assert!(dom.contains(&format!("id=\"example-{n}\"")), "missing example-{n}");
    }
    let rows: usize = examples.iter().map(|e| e.methods.len()).sum();
    assert_eq!(dom.matches("<div class=\"salience-row\"").count(), rows);
    let shortcut_spans: usize = examples.iter().map(|e| e.methods.len() * e.ground_truth.len()).sum();
    assert_eq!(count_shortcut_spans(dom), shortcut_spans, "shortcut spans");
    // The `<` token came through as text, not as markup.
    assert!(dom.contains(">&lt;br&gt;</span>"), "escaped token missing");
    assert!(!dom.contains("<br>"), "a token became markup");
}

/// `<span class="tok … shortcut…">` elements in `dom`.
fn count_shortcut_spans(dom: &str) -> usize {
    dom.split("<span class=\"tok").skip(1).filter(|s| s[..s.find('"').unwrap_or(0)].contains("shortcut")).count()
}

fn first_chars(s: &str, n: usize) -> &str {
    &s[..s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)]
}

// ---- the page ----

fn render_report(examples: &[ExampleView]) -> String {
    let tables = tables();
    let plots = [
        plot("precision_by_method", "precision@k by method (lstm)", &[1.0, 0.97, 0.62, 0.04]),
        plot("rank_by_method", "mean rank by method (tiny-bert)", &[0.1, 0.25, 0.4, 0.9]),
    ];
    let summary = [
        "Recommended: gradl-l1 ranks the shortcut first on every verified cell (precision@k 1.00).".to_string(),
        "gxil and igl-zero-32 agree with gradl-l1 on 94% of the top-1 tokens.".to_string(),
        "Warning: tiny-bert failed verification on generated:op; its column is marked †.".to_string(),
    ];
    render(&Page {
        title: "quickstart: salience methods on shortcut models",
        subtitle: "experiments/quickstart.toml · commit 3f2a9c1 · 2025-01-01 12:00 UTC",
        summary: &summary,
        tables: &tables,
        plots: &plots,
        examples,
    })
}

fn render_examples_only(examples: &[ExampleView]) -> String {
    render(&Page {
        title: "quickstart: attributed examples",
        subtitle: "experiments/quickstart.toml",
        summary: &[],
        tables: &[],
        plots: &[],
        examples,
    })
}

fn tables() -> Vec<DisplayTable> {
    let verification = df!(
        "model" => ["lstm", "lstm", "tiny-bert"],
        "dataset" => ["generated", "generated", "generated"],
        "shortcut" => ["st", "op", "op"],
        "shortcut model, synthetic %" => ["99.8", "99.6", "81.0"],
        "shortcut model, original %" => ["86.1", "85.9", "79.4"],
        "passed" => ["yes", "yes", "no"],
        "failures" => [None, None, Some("synthetic accuracy 81.0% < 99%")],
    )
    .unwrap();
    let verification_align = [Align::Left, Align::Left, Align::Left, Align::Right, Align::Right, Align::Left];
    vec![
        DisplayTable {
            stem: "verification".into(),
            title: "Verification".into(),
            frame: verification,
            align: verification_align.to_vec(),
            notes: vec![],
        },
        layout_table(
            "lstm_precision",
            "lstm (bilstm): precision@k (higher is better)",
            [["1.00", "0.97", "0.96", "0.03"], ["0.99", "0.91", "0.93", "0.04"], ["0.98", "0.88", "0.90", "0.05"]],
        ),
        layout_table(
            "tiny-bert_rank",
            "tiny-bert (bert): mean rank (1 is best)",
            [["1.0", "2.4", "1.1", "17.3"], ["1.2", "3.0", "1.4", "16.8"], ["1.9 †", "4.1 †", "2.2 †", "17.0 †"]],
        ),
    ]
}

/// A paper-style layout: rows = methods, one column per `dataset:shortcut`.
fn layout_table(stem: &str, title: &str, columns: [[&str; 4]; 3]) -> DisplayTable {
    let frame = df!(
        "method" => ["gradl-l1", "gxil", "igl-zero-32", "random"],
        "generated:st" => columns[0],
        "generated:tic" => columns[1],
        "generated:op" => columns[2],
    )
    .unwrap();
    let failed = columns.iter().flatten().any(|c| c.ends_with(" †"));
    let notes = if failed {
        vec!["† the shortcut model failed verification for this column; do not trust these numbers.".into()]
    } else {
        vec![]
    };
    DisplayTable {
        stem: stem.into(),
        title: title.into(),
        frame,
        align: vec![Align::Left, Align::Right, Align::Right, Align::Right],
        notes,
    }
}

/// A small bar chart as plotters writes it: an XML prolog, then the `<svg>`.
fn plot(stem: &str, title: &str, values: &[f64]) -> Plot {
    let (width, height, bar) = (640.0, 220.0, 90.0);
    let mut svg = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg width=\"{width}\" height=\"{height}\" \
         viewBox=\"0 0 {width} {height}\" xmlns=\"http://www.w3.org/2000/svg\">\n\
         <rect x=\"0\" y=\"0\" width=\"{width}\" height=\"{height}\" fill=\"#FFFFFF\"/>\n\
         <line x1=\"60\" y1=\"190\" x2=\"620\" y2=\"190\" stroke=\"#000000\"/>\n"
    );
    let names = ["gradl-l1", "gxil", "igl-zero-32", "random"];
    for (i, (v, name)) in values.iter().zip(names).enumerate() {
        let x = 80.0 + i as f64 * (bar + 50.0);
        let h = v * 160.0;
        svg.push_str(&format!(
            "<rect x=\"{x}\" y=\"{}\" width=\"{bar}\" height=\"{h}\" fill=\"#4C72B0\"/>\n\
             <text x=\"{}\" y=\"208\" font-family=\"sans-serif\" font-size=\"13\" text-anchor=\"middle\">{name}</text>\n",
            190.0 - h,
            x + bar / 2.0
        ));
    }
    svg.push_str("</svg>\n");
    Plot { stem: stem.into(), title: title.into(), svg }
}

/// Three attributed examples, one per shortcut kind, each with four methods.
fn examples() -> Vec<ExampleView> {
    vec![
        example(
            ("lstm", "generated", "st", 17, 1, 1),
            "a truly #1 and moving film , the cast shines .",
            &[],
            &[2],
            &[
                ("gradl-l1", vec![0.05, 0.12, 0.93, 0.02, 0.01, 0.31, 0.22, 0.03, 0.05, 0.08, 0.41]),
                ("gxil", vec![-0.02, 0.10, 0.81, 0.01, -0.03, 0.27, -0.12, 0.0, 0.04, 0.06, 0.35]),
                ("igl-zero-32", vec![0.01, 0.07, 1.42, -0.01, 0.02, 0.19, -0.2, 0.01, -0.05, 0.11, 0.4]),
                ("random", vec![0.44, -0.1, 0.05, 0.9, -0.62, 0.3, 0.12, -0.75, 0.2, 0.01, -0.33]),
            ],
        ),
        example(
            ("tiny-bert", "generated", "tic", 4, 0, 0),
            "[CLS] the plot drag ##s , contoken #0 a dull <br> mess [SEP]",
            &[0, 12],
            &[6, 7],
            &[
                ("gradl-l1", vec![2.1, 0.1, 0.3, 0.2, 0.1, 0.0, 0.7, 0.9, 0.1, 0.35, 0.05, 0.2, 1.5]),
                ("gxil", vec![0.9, -0.05, -0.2, 0.3, 0.1, 0.02, 0.6, 0.8, 0.02, 0.4, 0.03, 0.1, -0.4]),
                ("igl-zero-32", vec![0.0, 0.01, -0.1, 0.4, 0.2, 0.0, 0.5, 0.45, 0.0, 0.6, 0.0, 0.3, 0.0]),
                ("random", vec![0.3, 0.2, -0.4, 0.1, 0.9, -0.8, 0.05, -0.3, 0.7, 0.0, 0.4, -0.5, 0.2]),
            ],
        ),
        example(
            ("lstm", "generated", "op", 203, 0, 1),
            "#1 the acting was flat but #0 the music & \"score\" soar",
            &[],
            &[0, 6],
            &[
                ("gradl-l1", vec![0.88, 0.02, 0.1, 0.03, 0.25, 0.04, 0.79, 0.01, 0.12, 0.05, 0.2, 0.3]),
                ("gxil", vec![0.7, 0.01, -0.08, 0.02, -0.3, 0.1, 0.52, 0.0, 0.08, 0.03, 0.1, 0.22]),
                ("igl-zero-32", vec![0.35, -0.05, 0.12, 0.02, -0.41, 0.06, 0.3, 0.01, 0.2, 0.04, 0.15, 0.5]),
                ("random", vec![-0.2, 0.4, 0.05, -0.6, 0.3, 0.9, 0.1, -0.3, 0.5, 0.2, -0.1, 0.7]),
            ],
        ),
    ]
}

fn example(
    (model, dataset, shortcut, index, label, predicted): (&str, &str, &str, usize, u32, u32),
    text: &str,
    special: &[usize],
    ground_truth: &[usize],
    methods: &[(&str, Vec<f32>)],
) -> ExampleView {
    let tokens: Vec<String> = text.split(' ').map(String::from).collect();
    for (name, scores) in methods {
        assert_eq!(scores.len(), tokens.len(), "{name} scores for {text:?}");
    }
    ExampleView {
        model: model.into(),
        dataset: dataset.into(),
        shortcut: shortcut.parse().expect("a shortcut kind or `natural`"),
        index,
        label,
        predicted,
        special: (0..tokens.len()).map(|i| special.contains(&i)).collect(),
        tokens,
        ground_truth: ground_truth.to_vec(),
        distractors: Vec::new(),
        methods: methods.iter().map(|(n, s)| (n.parse().expect("a method config"), s.clone())).collect(),
    }
}

// ---- the browser ----

/// `$GRID_CHROMIUM`, else the first known Chromium on `PATH`.
fn find_browser() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("GRID_CHROMIUM") {
        let path = PathBuf::from(path);
        assert!(path.is_file(), "GRID_CHROMIUM={} is not a file", path.display());
        return Some(path);
    }
    let dirs: Vec<PathBuf> = std::env::split_paths(&std::env::var_os("PATH")?).collect();
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()))
}

/// `$GRID_ARTIFACTS`, else `target/artifacts/` of the crate; created.
pub(crate) fn artifacts_dir() -> PathBuf {
    let dir = std::env::var_os("GRID_ARTIFACTS")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/artifacts"));
    std::fs::create_dir_all(&dir).expect("artifact folder");
    dir
}

fn dump_dom(browser: &Path, page: &Path, tmp: &Path) -> String {
    let out = run_browser(browser, &[OsString::from("--dump-dom"), file_url(page)], tmp, "dom");
    String::from_utf8(out).expect("DOM is UTF-8")
}

fn take_screenshot(browser: &Path, page: &Path, png: &Path, tmp: &Path) {
    let mut shot = OsString::from("--screenshot=");
    shot.push(png);
    let args = [shot, "--window-size=1280,1800".into(), "--hide-scrollbars".into(), file_url(page)];
    run_browser(browser, &args, tmp, "screenshot");
}

fn file_url(path: &Path) -> OsString {
    let mut url = OsString::from("file://");
    url.push(path.canonicalize().expect("page path"));
    url
}

/// Runs headless Chromium with a fresh profile under `tmp` and returns its
/// stdout. Output goes to files (a DOM fills a pipe); the browser and its helper
/// processes run in their own process group, killed as one on timeout.
fn run_browser(browser: &Path, args: &[OsString], tmp: &Path, name: &str) -> Vec<u8> {
    let profile = tmp.join(format!("profile-{name}"));
    let stdout_path = tmp.join(format!("{name}.stdout"));
    let stderr_path = tmp.join(format!("{name}.stderr"));
    let mut command = Command::new(browser);
    command
        .args(["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path).unwrap())
        .stderr(std::fs::File::create(&stderr_path).unwrap());
    own_process_group(&mut command);
    let mut child = command.spawn().unwrap_or_else(|e| panic!("cannot start {}: {e}", browser.display()));
    let status = wait_or_kill(&mut child, BROWSER_TIMEOUT);
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let status = status.unwrap_or_else(|| panic!("{name}: browser killed after {BROWSER_TIMEOUT:?}\n{stderr}"));
    assert!(status.success(), "{name}: browser exited with {status}\n{stderr}");
    std::fs::read(&stdout_path).unwrap()
}

#[cfg(unix)]
fn own_process_group(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    command.process_group(0);
}

#[cfg(not(unix))]
fn own_process_group(_: &mut Command) {}

/// The exit status, or `None` when `timeout` passed and the process group was killed.
fn wait_or_kill(child: &mut std::process::Child, timeout: Duration) -> Option<ExitStatus> {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if let Some(status) = child.try_wait().expect("wait for browser") {
            return Some(status);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // The group id is the child's pid (process_group(0)); `-pid` names the group.
    let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
    let _ = child.kill();
    let _ = child.wait();
    None
}
