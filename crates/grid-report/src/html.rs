//! The self-contained HTML report of a grid: one file with inline CSS, inline SVG
//! charts and no external resource, so it can be mailed, archived or opened
//! offline and looks the same everywhere.
//!
//! Layout (ids and classes are stable; tests and readers may rely on them):
//!
//! | element | content |
//! |---|---|
//! | `nav#toc` | links to every section, table and plot |
//! | `section#summary` | the summary lines as a list (`li.warn` for warnings) |
//! | `section#tables` | one `table.result#table-<stem>` per [`DisplayTable`]; right-aligned columns get `num`, cells marked with [`FAILED_MARK`] get `failed`; notes as `p.note` |
//! | `section#plots` | one `figure.plot#plot-<stem>` per [`Plot`], the SVG inline |
//! | `section#examples` | a legend, then one `div.example` per [`ExampleView`]: a `div.salience-row` per method, tokens as `span.tok` coloured by score as LIT shows salience |
//!
//! Token colours: each row is normalised by its largest |score| over non-special
//! tokens; positive scores (towards the prediction) are orange, negative blue, the
//! strength linear in |score| / max. Special tokens are grey and unscored; shortcut
//! tokens (the ground truth) get a dark frame. The page needs no JavaScript; a small
//! inline script only adds a method filter and marks `body[data-rendered="yes"]`, so
//! a browser test can tell that the page really ran.

use std::fmt::Write as _;

use polars::prelude::*;

use super::markdown::Align;
use super::tables::FAILED_MARK;
use super::{DisplayTable, Plot};
use grid_methods::metrics;
use grid_methods::salience::Method;
use grid_methods::shortcut::Regime;

/// One attributed example as the report shows it: its tokens and, per salience
/// method, one score per token.
#[derive(Debug, Clone)]
pub struct ExampleView {
    pub model: String,
    pub dataset: String,
    pub shortcut: Regime,
    /// The example's index in its split.
    pub index: usize,
    pub label: u32,
    pub predicted: u32,
    pub tokens: Vec<String>,
    /// Per token: a special token ([CLS], [SEP], padding), never scored.
    pub special: Vec<bool>,
    /// Token positions of the shortcut tokens.
    pub ground_truth: Vec<usize>,
    /// Token positions of look-alikes that carry no label (Zhou et al.'s
    /// non-correlating articles); empty for the inserted shortcuts.
    pub distractors: Vec<usize>,
    /// Method config and one score per token (missing scores show unscored).
    pub methods: Vec<(Method, Vec<f32>)>,
}

/// Everything the HTML report shows.
pub struct Page<'a> {
    pub title: &'a str,
    /// One line under the title, e.g. grid file, commit, date.
    pub subtitle: &'a str,
    /// Lines like recommendations and warnings; a line starting with "warning" is
    /// highlighted.
    pub summary: &'a [String],
    pub tables: &'a [DisplayTable],
    pub plots: &'a [Plot],
    pub examples: &'a [ExampleView],
}

/// Full-strength background of a token with a positive (towards the prediction)
/// score; weaker scores blend towards white.
const POSITIVE_RGB: (u8, u8, u8) = (239, 104, 72);
/// Full-strength background of a negative score.
const NEGATIVE_RGB: (u8, u8, u8) = (66, 133, 244);

/// Renders the whole page as one HTML5 document.
pub fn render(page: &Page) -> String {
    let mut out = String::with_capacity(64 * 1024);
    push_head(&mut out, page.title);
    out.push_str("<body>\n");
    push_page_header(&mut out, page);
    out.push_str("<div class=\"layout\">\n");
    push_toc(&mut out, page);
    out.push_str("<main>\n");
    push_summary(&mut out, page.summary);
    push_tables(&mut out, page.tables);
    push_plots(&mut out, page.plots);
    push_examples(&mut out, page.examples);
    out.push_str("</main>\n</div>\n");
    push_script(&mut out);
    out.push_str("</body>\n</html>\n");
    out
}

fn push_head(out: &mut String, title: &str) {
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    let _ = writeln!(out, "<title>{}</title>", escape(title));
    out.push_str("<style>\n");
    out.push_str(STYLE);
    out.push_str("</style>\n</head>\n");
}

fn push_page_header(out: &mut String, page: &Page) {
    out.push_str("<header class=\"page\">\n");
    let _ = writeln!(out, "<h1>{}</h1>", escape(page.title));
    if !page.subtitle.is_empty() {
        let _ = writeln!(out, "<p class=\"subtitle\">{}</p>", escape(page.subtitle));
    }
    out.push_str("</header>\n");
}

/// The table of contents: sections, with every table and plot listed under its
/// section.
fn push_toc(out: &mut String, page: &Page) {
    out.push_str("<nav id=\"toc\">\n<h2>Contents</h2>\n<ol>\n");
    out.push_str("<li><a href=\"#summary\">Summary</a></li>\n");
    let tables = page.tables.iter().map(|t| (format!("table-{}", anchor(&t.stem)), t.title.as_str()));
    push_toc_entry(out, "tables", "Tables", tables);
    let plots = page.plots.iter().map(|p| (format!("plot-{}", anchor(&p.stem)), p.title.as_str()));
    push_toc_entry(out, "plots", "Plots", plots);
    let _ = writeln!(
        out,
        "<li><a href=\"#examples\">Examples</a> <span class=\"count\">{}</span></li>",
        page.examples.len()
    );
    out.push_str("</ol>\n</nav>\n");
}

fn push_toc_entry<'a>(out: &mut String, id: &str, name: &str, children: impl Iterator<Item = (String, &'a str)>) {
    let _ = write!(out, "<li><a href=\"#{id}\">{name}</a>");
    let mut children = children.peekable();
    if children.peek().is_some() {
        out.push_str("\n<ol>\n");
        for (child_id, title) in children {
            let _ = writeln!(out, "<li><a href=\"#{}\">{}</a></li>", escape(&child_id), escape(title));
        }
        out.push_str("</ol>\n");
    }
    out.push_str("</li>\n");
}

fn push_summary(out: &mut String, lines: &[String]) {
    out.push_str("<section id=\"summary\" class=\"summary\">\n<h2>Summary</h2>\n");
    if lines.is_empty() {
        out.push_str("<p class=\"empty\">Nothing to summarise.</p>\n");
    } else {
        out.push_str("<ul>\n");
        for line in lines {
            let class = if is_warning(line) { " class=\"warn\"" } else { "" };
            let _ = writeln!(out, "<li{class}>{}</li>", escape(line));
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
}

/// Warnings stand out in the summary: lines starting with "warning" (any case) or ⚠.
fn is_warning(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with('⚠') || line.get(..7).is_some_and(|head| head.eq_ignore_ascii_case("warning"))
}

fn push_tables(out: &mut String, tables: &[DisplayTable]) {
    out.push_str("<section id=\"tables\">\n<h2>Tables</h2>\n");
    if tables.is_empty() {
        out.push_str("<p class=\"empty\">No tables.</p>\n");
    }
    for table in tables {
        push_table(out, table);
    }
    out.push_str("</section>\n");
}

/// One result table, wrapped so a wide table scrolls instead of widening the page.
fn push_table(out: &mut String, table: &DisplayTable) {
    let columns = table.frame.columns();
    let numeric: Vec<bool> =
        (0..columns.len()).map(|i| table.align.get(i).is_some_and(|a| *a == Align::Right)).collect();
    out.push_str("<div class=\"table-wrap\">\n");
    let _ = writeln!(out, "<table class=\"result\" id=\"table-{}\">", escape(&anchor(&table.stem)));
    let _ = writeln!(out, "<caption>{}</caption>", escape(&table.title));
    out.push_str("<thead><tr>");
    for (column, &num) in columns.iter().zip(&numeric) {
        let _ = write!(out, "<th scope=\"col\"{}>{}</th>", class_attr(&[(num, "num")]), escape(column.name()));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    let cells: Vec<Vec<Option<String>>> = columns.iter().map(column_cells).collect();
    for row in 0..table.frame.height() {
        out.push_str("<tr>");
        for (column, &num) in cells.iter().zip(&numeric) {
            let text = column.get(row).and_then(Option::as_deref).unwrap_or("");
            let failed = text.ends_with(FAILED_MARK);
            let _ = write!(out, "<td{}>{}</td>", class_attr(&[(num, "num"), (failed, "failed")]), escape(text));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
    for note in &table.notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", escape(note));
    }
    out.push_str("</div>\n");
}

/// A column's cells as text, nulls as `None`. Frames should hold strings already;
/// anything else is printed through polars rather than dropped.
fn column_cells(column: &Column) -> Vec<Option<String>> {
    if let Ok(strings) = column.cast(&DataType::String)
        && let Ok(ca) = strings.str()
    {
        return ca.iter().map(|v| v.map(str::to_owned)).collect();
    }
    (0..column.len()).map(|i| column.get(i).ok().filter(|v| !v.is_null()).map(|v| v.to_string())).collect()
}

/// ` class="a b"` for the flags that are set, or nothing.
fn class_attr(flags: &[(bool, &str)]) -> String {
    let names: Vec<&str> = flags.iter().filter(|(on, _)| *on).map(|(_, name)| *name).collect();
    if names.is_empty() { String::new() } else { format!(" class=\"{}\"", names.join(" ")) }
}

fn push_plots(out: &mut String, plots: &[Plot]) {
    out.push_str("<section id=\"plots\">\n<h2>Plots</h2>\n");
    if plots.is_empty() {
        out.push_str("<p class=\"empty\">No plots.</p>\n");
    }
    for plot in plots {
        let _ = writeln!(out, "<figure class=\"plot\" id=\"plot-{}\">", escape(&anchor(&plot.stem)));
        let _ = writeln!(out, "<figcaption>{}</figcaption>", escape(&plot.title));
        out.push_str("<div class=\"svg-wrap\">\n");
        out.push_str(inline_svg(&plot.svg));
        out.push_str("\n</div>\n</figure>\n");
    }
    out.push_str("</section>\n");
}

/// The SVG element of an SVG document: an XML prolog, doctype or comment before
/// `<svg` is not allowed inside HTML, so everything before it goes. The SVG itself
/// is our own chart and is trusted as is.
fn inline_svg(svg: &str) -> &str {
    let start = svg.find("<svg").unwrap_or(0);
    svg[start..].trim_end()
}

fn push_examples(out: &mut String, examples: &[ExampleView]) {
    out.push_str("<section id=\"examples\">\n<h2>Examples</h2>\n");
    if examples.is_empty() {
        out.push_str("<p class=\"empty\">No examples.</p>\n");
    } else {
        push_legend(out);
        if examples.iter().any(|e| e.methods.iter().any(|(m, _)| *m == Method::Rationale)) {
            push_rationale_legend(out);
        }
        // Filled by the inline script; without JavaScript every method shows.
        out.push_str("<div id=\"method-filter\" hidden></div>\n");
    }
    for (n, example) in examples.iter().enumerate() {
        push_example(out, n, example);
    }
    out.push_str("</section>\n");
}

fn push_legend(out: &mut String) {
    let pos = blend(POSITIVE_RGB, 1.0);
    let neg = blend(NEGATIVE_RGB, 1.0);
    let _ = writeln!(
        out,
        "<div class=\"legend\" id=\"legend\">\
         <span class=\"swatch\" style=\"background-color:{pos}\">token</span> towards the prediction \
         <span class=\"swatch\" style=\"background-color:{neg}\">token</span> against it \
         <span class=\"swatch special\">[CLS]</span> special token, not scored \
         <span class=\"swatch shortcut\">#0</span> shortcut token (ground truth) \
         <span class=\"swatch distractor\">a</span> non-correlating article (CN/NC), should get nothing\
         <p>Colour strength is |score| divided by the largest |score| of the row; hover a token for its score \
         and rank. <b>p@k</b> is the share of the k shortcut tokens among the k best-ranked tokens, <b>rank</b> \
         the rank that covers them all (1 is best).</p></div>"
    );
}

fn push_rationale_legend(out: &mut String) {
    out.push_str(
        "<div class=\"legend\">A rationale model's own selection (Zhou et al.'s Figures 10–11): \
         <span class=\"swatch rationale-hit\">the</span> selected article \
         <span class=\"swatch rationale-missed\">a</span> missed article \
         <span class=\"swatch rationale-other\">word</span> other selected word \
         <span class=\"swatch rationale-noncorr\">an</span> selected non-correlating article (CN/NC)</div>\n",
    );
}

/// The `rationale` row: each token marked by whether it is selected (score
/// above 0) and whether it is an article, as the paper highlights its
/// rationales; then the row's precision and recall.
fn push_rationale_row(out: &mut String, ex: &ExampleView, scores: &[f32]) {
    let scores = padded_scores(scores, ex.tokens.len());
    let rationale = Method::Rationale;
    let _ = writeln!(out, "<div class=\"salience-row\" data-method=\"{rationale}\">");
    let _ = writeln!(out, "<div class=\"method\">{rationale}</div>");
    out.push_str("<div class=\"tokens\">");
    let (mut selected, mut hits) = (0usize, 0usize);
    for (i, token) in ex.tokens.iter().enumerate() {
        let special = ex.special.get(i).copied().unwrap_or(false);
        let chosen = !special && scores[i] > 0.0;
        let (article, distractor) = (ex.ground_truth.contains(&i), ex.distractors.contains(&i));
        selected += chosen as usize;
        hits += (chosen && article) as usize;
        let (class, title) = match (chosen, article, distractor) {
            _ if special => (" special", "special token"),
            (true, true, _) => (" rationale-hit", "selected article"),
            (false, true, _) => (" rationale-missed", "missed article"),
            (true, false, true) => (" rationale-noncorr", "selected non-correlating article"),
            (true, false, false) => (" rationale-other", "selected word"),
            (false, false, true) => (" distractor", "non-correlating article, not selected"),
            (false, false, false) => ("", "not selected"),
        };
        let _ = write!(out, "<span class=\"tok{class}\" title=\"{title}\">{}</span> ", escape(token));
    }
    out.push_str("</div>\n");
    let ratio = |top: usize, bottom: usize| {
        if bottom == 0 { "–".to_string() } else { format!("{:.2}", top as f64 / bottom as f64) }
    };
    let _ = writeln!(
        out,
        "<div class=\"row-metrics\">selected <b>{selected}</b> · precision <b>{}</b> · recall <b>{}</b></div>",
        ratio(hits, selected),
        ratio(hits, ex.ground_truth.len())
    );
    out.push_str("</div>\n");
}

fn push_example(out: &mut String, n: usize, ex: &ExampleView) {
    let _ = writeln!(
        out,
        "<div class=\"example\" id=\"example-{n}\" data-model=\"{}\" data-dataset=\"{}\" data-shortcut=\"{}\">",
        escape(&ex.model),
        escape(&ex.dataset),
        ex.shortcut.name()
    );
    push_example_header(out, ex);
    out.push_str("<div class=\"salience\">\n");
    for (method, scores) in &ex.methods {
        // A rationale model's row shows its selection, not a salience.
        if *method == Method::Rationale {
            push_rationale_row(out, ex, scores);
        } else {
            push_salience_row(out, ex, method, scores);
        }
    }
    out.push_str("</div>\n</div>\n");
}

fn push_example_header(out: &mut String, ex: &ExampleView) {
    let (verdict, class) = if ex.label == ex.predicted { ("correct", "badge") } else { ("wrong", "badge wrong") };
    let _ = writeln!(
        out,
        "<div class=\"example-head\"><h3><span class=\"model\">{}</span> · <span class=\"dataset\">{}</span> · \
         <span class=\"shortcut-kind\">{}</span></h3><span class=\"index\">example {}</span>\
         <span class=\"labels\">label <b>{}</b>, predicted <b>{}</b></span> <span class=\"{class}\">{verdict}</span></div>",
        escape(&ex.model),
        escape(&ex.dataset),
        ex.shortcut.name(),
        ex.index,
        ex.label,
        ex.predicted
    );
}

/// The scores of one method, one per token: `NaN` where the method gave none.
fn padded_scores(scores: &[f32], n_tokens: usize) -> Vec<f32> {
    (0..n_tokens).map(|i| scores.get(i).copied().unwrap_or(f32::NAN)).collect()
}

/// One method's row: its name, the tokens coloured by score, and how well the
/// method ranks the shortcut (the same precision@k and rank as the tables).
fn push_salience_row(out: &mut String, ex: &ExampleView, method: &Method, scores: &[f32]) {
    let scores = padded_scores(scores, ex.tokens.len());
    let is_special = |i: usize| ex.special.get(i).copied().unwrap_or(false);
    let scale = row_scale(&scores, is_special);
    let ranking = metrics::ranking(&scores, |i| !is_special(i));
    let mut rank_of = vec![None; ex.tokens.len()];
    for (r, &pos) in ranking.iter().enumerate() {
        rank_of[pos] = Some(r + 1);
    }

    let method = escape(&method.to_string());
    let _ = writeln!(out, "<div class=\"salience-row\" data-method=\"{method}\">");
    let _ = writeln!(out, "<div class=\"method\">{method}</div>");
    out.push_str("<div class=\"tokens\">");
    for (i, token) in ex.tokens.iter().enumerate() {
        let view = TokenView {
            text: token,
            score: (!is_special(i)).then_some(scores[i]),
            scale,
            rank: rank_of[i],
            of: ranking.len(),
            shortcut: ex.ground_truth.contains(&i),
            distractor: ex.distractors.contains(&i),
        };
        push_token(out, &view);
        out.push(' ');
    }
    out.push_str("</div>\n");
    push_row_metrics(out, &ranking, &ex.ground_truth);
    out.push_str("</div>\n");
}

/// A row's normalisation: the largest finite |score| over non-special tokens
/// (0 when there is none).
fn row_scale(scores: &[f32], is_special: impl Fn(usize) -> bool) -> f32 {
    scores
        .iter()
        .enumerate()
        .filter(|&(i, s)| !is_special(i) && s.is_finite())
        .map(|(_, s)| s.abs())
        .fold(0.0, f32::max)
}

/// Colour strength of a score in 0..=1: |score| / scale; 0 for a zero scale or a
/// score that is not finite.
fn intensity(score: f32, scale: f32) -> f32 {
    if scale > 0.0 && score.is_finite() { (score.abs() / scale).min(1.0) } else { 0.0 }
}

/// `rgb` at strength `weight` over white, as a CSS colour. Opaque rather than
/// alpha, so print and screenshots give the same colour on any background.
fn blend(rgb: (u8, u8, u8), weight: f32) -> String {
    let mix = |c: u8| (255.0 - (255.0 - c as f32) * weight.clamp(0.0, 1.0)).round() as u8;
    format!("rgb({},{},{})", mix(rgb.0), mix(rgb.1), mix(rgb.2))
}

/// Everything one token span shows.
struct TokenView<'a> {
    text: &'a str,
    /// `None` for a special token.
    score: Option<f32>,
    scale: f32,
    rank: Option<usize>,
    /// How many tokens the row ranks.
    of: usize,
    shortcut: bool,
    distractor: bool,
}

fn push_token(out: &mut String, t: &TokenView) {
    let text = escape(t.text);
    let shortcut = match (t.shortcut, t.distractor) {
        (true, _) => " shortcut",
        (false, true) => " distractor",
        (false, false) => "",
    };
    match t.score {
        None => {
            let _ =
                write!(out, "<span class=\"tok special{shortcut}\" title=\"special token, not scored\">{text}</span>");
        }
        Some(s) if s.is_nan() => {
            let _ = write!(out, "<span class=\"tok unscored{shortcut}\" title=\"no score\">{text}</span>");
        }
        Some(s) => {
            let (sign, rgb) = if s < 0.0 { ("neg", NEGATIVE_RGB) } else { ("pos", POSITIVE_RGB) };
            let colour = blend(rgb, intensity(s, t.scale));
            let mut title = format!("score {}", format_score(s));
            if let Some(rank) = t.rank {
                let _ = write!(title, ", rank {rank} of {}", t.of);
            }
            if t.shortcut {
                title.push_str(", shortcut token");
            } else if t.distractor {
                title.push_str(", non-correlating look-alike");
            }
            let _ = write!(
                out,
                "<span class=\"tok {sign}{shortcut}\" style=\"background-color:{colour}\" title=\"{}\">{text}</span>",
                escape(&title)
            );
        }
    }
}

/// A score with a sign and four significant-looking decimals; tiny and huge ones
/// in exponent form so they do not print as `+0.0000`.
fn format_score(s: f32) -> String {
    let a = s.abs();
    if a == 0.0 || (1e-3..1e4).contains(&a) { format!("{s:+.4}") } else { format!("{s:+.3e}") }
}

fn push_row_metrics(out: &mut String, ranking: &[usize], truth: &[usize]) {
    let precision = metrics::precision_at_k(ranking, truth).map_or("–".to_string(), |p| format!("{p:.2}"));
    let rank = metrics::rank_of_ground_truth(ranking, truth).map_or("–".to_string(), |r| r.to_string());
    let _ = writeln!(out, "<div class=\"row-metrics\">p@k <b>{precision}</b> · rank <b>{rank}</b></div>");
}

/// Adds the method filter and marks the body as rendered (what the browser test
/// checks to know that a browser ran the page).
fn push_script(out: &mut String) {
    out.push_str("<script>\n");
    out.push_str(SCRIPT);
    out.push_str("</script>\n");
}

/// An id fragment: whitespace (not allowed in ids) becomes `_`. Stems are file-safe
/// already, so this is normally the identity.
fn anchor(stem: &str) -> String {
    stem.chars().map(|c| if c.is_whitespace() { '_' } else { c }).collect()
}

/// Escapes text for HTML content and double- or single-quoted attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const SCRIPT: &str = r#"(function () {
  document.body.dataset.rendered = "yes";
  var rows = Array.prototype.slice.call(document.querySelectorAll(".salience-row"));
  var names = [];
  rows.forEach(function (r) { if (names.indexOf(r.dataset.method) < 0) names.push(r.dataset.method); });
  var box = document.getElementById("method-filter");
  if (!box || names.length < 2) return;
  var select = document.createElement("select");
  select.id = "method-select";
  [""].concat(names).forEach(function (m) {
    var o = document.createElement("option");
    o.value = m;
    o.textContent = m || "all methods";
    select.appendChild(o);
  });
  select.addEventListener("change", function () {
    rows.forEach(function (r) { r.hidden = select.value !== "" && r.dataset.method !== select.value; });
  });
  var label = document.createElement("label");
  label.textContent = "Show method ";
  label.appendChild(select);
  box.appendChild(label);
  box.hidden = false;
})();
"#;

const STYLE: &str = r#":root {
  --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --soft: #f6f8fa; --accent: #0969da;
}
* { box-sizing: border-box; }
[hidden] { display: none !important; }
html { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
body {
  margin: 0; color: var(--fg); background: #fff;
  font: 15px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Liberation Sans", "DejaVu Sans", Arial, sans-serif;
}
header.page { padding: 1.4rem 2rem 1.1rem; border-bottom: 1px solid var(--line); background: var(--soft); }
header.page h1 { margin: 0 0 .2rem; font-size: 1.65rem; line-height: 1.25; }
.subtitle { margin: 0; color: var(--muted); }
.layout {
  display: grid; grid-template-columns: 13rem minmax(0, 1fr); gap: 2.5rem;
  max-width: 84rem; margin: 0 auto; padding: 1.5rem 2rem 3rem;
}
nav#toc { position: sticky; top: 1rem; align-self: start; font-size: .9rem; }
nav#toc h2 { font-size: .8rem; text-transform: uppercase; letter-spacing: .06em; color: var(--muted); border: 0; margin: 0 0 .4rem; }
nav#toc ol { list-style: none; margin: 0; padding: 0; }
nav#toc ol ol { padding-left: .9rem; margin: .15rem 0 .4rem; border-left: 2px solid var(--line); }
nav#toc li { margin: .15rem 0; }
nav#toc a { color: var(--accent); text-decoration: none; }
nav#toc a:hover { text-decoration: underline; }
.count { color: var(--muted); font-size: .8rem; }
main { min-width: 0; }
section { margin-bottom: 2.5rem; }
h2 { font-size: 1.3rem; margin: 0 0 1rem; padding-bottom: .3rem; border-bottom: 1px solid var(--line); }
.empty { color: var(--muted); font-style: italic; }
.summary ul { margin: 0; padding-left: 1.2rem; }
.summary li { margin: .25rem 0; }
.summary li.warn { color: #9a3412; font-weight: 600; }
.table-wrap { overflow-x: auto; margin: 0 0 1.75rem; }
table.result { border-collapse: collapse; font-size: .9rem; font-variant-numeric: tabular-nums; }
table.result caption { caption-side: top; text-align: left; font-weight: 600; font-size: 1rem; padding: 0 0 .5rem; }
table.result th, table.result td { padding: .32rem .8rem; text-align: left; border-bottom: 1px solid var(--line); }
/* Numbers, names and keys never break; the last text column (ties, failures) and headers wrap. */
table.result td.num, table.result td:not(:last-child) { white-space: nowrap; }
table.result td { max-width: 32rem; }
table.result td:last-child:not(.num) { min-width: 18rem; }
table.result thead th { border-bottom: 2px solid var(--fg); vertical-align: bottom; font-weight: 600; }
table.result tbody tr:nth-child(even) { background: var(--soft); }
table.result tbody tr:hover { background: #eef4fb; }
table.result .num { text-align: right; }
table.result td.failed { color: #b42318; background: #fef3f2; }
p.note { margin: .45rem 0 0; font-size: .85rem; color: var(--muted); }
figure.plot { margin: 0 0 2rem; }
figure.plot figcaption { font-weight: 600; margin-bottom: .5rem; }
figure.plot .svg-wrap svg { display: block; max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; }
.legend { font-size: .88rem; color: var(--muted); padding: .6rem .8rem; margin-bottom: 1rem; background: var(--soft); border-radius: 6px; }
.legend p { margin: .4rem 0 0; }
.swatch { display: inline-block; padding: 0 .3rem; margin: 0 .2rem 0 .8rem; border-radius: 3px; color: var(--fg); }
.swatch:first-child { margin-left: 0; }
#method-filter { margin-bottom: 1rem; font-size: .9rem; }
#method-filter select { font: inherit; margin-left: .3rem; }
.example { border: 1px solid var(--line); border-radius: 8px; padding: .7rem 1rem .5rem; margin-bottom: 1.25rem; break-inside: avoid; }
.example-head { display: flex; flex-wrap: wrap; align-items: baseline; gap: .3rem 1rem; margin-bottom: .4rem; }
.example-head h3 { margin: 0; font-size: 1rem; }
.example-head .index, .example-head .labels { color: var(--muted); font-size: .88rem; }
.badge { font-size: .75rem; font-weight: 600; padding: .05rem .5rem; border-radius: 999px; background: #dafbe1; color: #116329; }
.badge.wrong { background: #ffebe9; color: #a40e26; }
.salience-row {
  display: grid; grid-template-columns: 9.5rem minmax(0, 1fr) 9rem; gap: .8rem; align-items: baseline;
  padding: .45rem 0; border-top: 1px solid #eaeef2;
}
.salience-row .method { font: 600 .82rem/1.5 ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace; overflow-wrap: anywhere; }
.salience-row .tokens { line-height: 1.95; }
.row-metrics { font-size: .8rem; color: var(--muted); text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.row-metrics b { color: var(--fg); }
.tok { display: inline-block; padding: 0 .22rem; margin: 1px 0; border-radius: 3px; line-height: 1.55; white-space: pre; }
.tok.special, .swatch.special { color: #8c959f; background: #eef0f2; font-size: .82em; }
.tok.unscored { color: var(--muted); background: repeating-linear-gradient(45deg, #fff, #fff 3px, #eef0f2 3px, #eef0f2 6px); }
.tok.shortcut, .swatch.shortcut { box-shadow: 0 0 0 2px var(--fg); font-weight: 700; }
.tok.distractor, .swatch.distractor { outline: 2px dashed var(--fg); outline-offset: 1px; }
.tok.rationale-hit, .swatch.rationale-hit { color: #1a7f37; font-weight: 700; background: #dafbe1; }
.tok.rationale-missed, .swatch.rationale-missed { color: #cf222e; font-style: italic; box-shadow: 0 0 0 1px #cf222e; }
.tok.rationale-other, .swatch.rationale-other { color: #bc4c00; font-weight: 700; font-style: italic; background: #fff1e5; }
.tok.rationale-noncorr, .swatch.rationale-noncorr { color: #8250df; font-weight: 700; outline: 2px dashed #8250df; outline-offset: 1px; }
@media (max-width: 900px) {
  .layout { grid-template-columns: 1fr; gap: 1rem; padding: 1rem; }
  nav#toc { position: static; }
  .salience-row { grid-template-columns: 1fr; gap: .2rem; }
  .row-metrics { text-align: left; }
}
@media print {
  nav#toc, #method-filter { display: none !important; }
  .layout { display: block; padding: 0; max-width: none; }
  header.page { background: none; padding: 0 0 .5rem; }
  .table-wrap { overflow: visible; }
  table.result, figure.plot { break-inside: avoid; }
  table.result tbody tr:hover { background: none; }
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    /// A rationale row marks each token by selection and article, as the
    /// paper's figures do, with its precision and recall.
    #[test]
    fn a_rationale_row_highlights_hits_misses_and_other_selections() {
        let ex = ExampleView {
            model: "rl".into(),
            dataset: "gen".into(),
            shortcut: "articles-nc".parse().unwrap(),
            index: 3,
            label: 1,
            predicted: 1,
            tokens: ["the", "cat", "saw", "the", "a", "dog"].map(String::from).to_vec(),
            special: vec![false; 6],
            ground_truth: vec![0, 3],
            distractors: vec![4],
            methods: vec![(Method::Rationale, vec![1.0, 0.0, 1.0, 0.0, 0.5, 0.0])],
        };
        let html = render(&Page { title: "t", subtitle: "", summary: &[], tables: &[], plots: &[], examples: &[ex] });
        for (class, token) in [
            ("rationale-hit", "the"),
            ("rationale-other", "saw"),
            ("rationale-missed", "the"),
            ("rationale-noncorr", "a"),
        ] {
            assert!(html.contains(&format!("<span class=\"tok {class}\"")), "{class}");
            assert!(
                html.contains(&format!("{class}\" title=")) && html.contains(&format!(">{token}</span>")),
                "{class}"
            );
        }
        assert!(html.contains("selected <b>3</b> · precision <b>0.33</b> · recall <b>0.50</b>"), "{html}");
        assert!(html.contains("A rationale model's own selection"), "the legend explains the marks");
    }

    fn example() -> ExampleView {
        ExampleView {
            model: "lstm".into(),
            dataset: "sst2".into(),
            shortcut: "st".parse().unwrap(),
            index: 17,
            label: 1,
            predicted: 1,
            tokens: ["[CLS]", "a", "#0", "<b>&\"", "film", "[SEP]"].map(String::from).to_vec(),
            special: vec![true, false, false, false, false, true],
            ground_truth: vec![2],
            distractors: vec![1],
            methods: vec![
                // The special [CLS] has the largest |score|; it must not set the scale.
                ("gradl-l1".parse().unwrap(), vec![9.0, 0.1, 0.8, 0.2, -0.4, 5.0]),
                (Method::Random, vec![0.0, -0.5, 0.1, 0.25, 0.0, 0.0]),
            ],
        }
    }

    fn table() -> DisplayTable {
        DisplayTable {
            stem: "lstm_precision".into(),
            title: "lstm: precision@k".into(),
            frame: df!(
                "method" => ["gradl-l1", "random"],
                "sst2:st" => [Some("1.00"), None],
                "sst2:op" => ["0.95 †", "0.03 †"],
            )
            .unwrap(),
            align: vec![Align::Left, Align::Right, Align::Right],
            notes: vec![FAILED_MARK.trim().to_string() + " failed verification"],
        }
    }

    const SVG: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg width=\"40\" height=\"20\" viewBox=\"0 0 40 20\" \
                       xmlns=\"http://www.w3.org/2000/svg\"><rect width=\"40\" height=\"20\" fill=\"#ccc\"/></svg>\n";

    fn render_sample() -> String {
        let tables = [table()];
        let plots = [Plot { stem: "precision_bars".into(), title: "Precision by method".into(), svg: SVG.into() }];
        let examples = [example(), example()];
        let summary = ["Use gradl-l1.".to_string(), "Warning: 1 model failed verification".to_string()];
        render(&Page {
            title: "Grid <tiny>",
            subtitle: "grid.toml · abc123",
            summary: &summary,
            tables: &tables,
            plots: &plots,
            examples: &examples,
        })
    }

    /// The `<span class="tok…">` elements of the salience row of `method`.
    fn token_spans<'a>(html: &'a str, method: &str) -> Vec<&'a str> {
        let row_start = html.find(&format!("data-method=\"{method}\"")).unwrap();
        let row = &html[row_start..];
        let row = &row[..row.find("<div class=\"row-metrics\"").unwrap()];
        row.split("<span class=\"tok").skip(1).map(|s| &s[..s.find("</span>").unwrap()]).collect()
    }

    #[test]
    fn tokens_are_escaped() {
        let html = render_sample();
        assert!(html.contains(">&lt;b&gt;&amp;&quot;</span>"), "escaped token missing");
        assert!(!html.contains("<b>&\""), "raw token leaked");
        assert!(html.contains("<title>Grid &lt;tiny&gt;</title>"));
    }

    #[test]
    fn shortcut_token_is_marked() {
        let html = render_sample();
        let spans = token_spans(&html, "gradl-l1");
        assert_eq!(spans.len(), 6);
        let shortcut: Vec<&&str> = spans.iter().filter(|s| s.starts_with(" pos shortcut\"")).collect();
        assert_eq!(shortcut.len(), 1, "{spans:?}");
        assert!(shortcut[0].ends_with(">#0"), "{shortcut:?}");
        assert!(shortcut[0].contains("rank 1 of 4, shortcut token"), "{shortcut:?}");
        // The article "a" is the sample's non-correlating look-alike.
        let distractor: Vec<&&str> = spans.iter().filter(|s| s.contains(" distractor\"")).collect();
        assert_eq!(distractor.len(), 1, "{spans:?}");
        assert!(
            distractor[0].ends_with(">a") && distractor[0].contains("non-correlating look-alike"),
            "{distractor:?}"
        );
    }

    #[test]
    fn top_token_gets_full_colour_and_negatives_the_other_hue() {
        let html = render_sample();
        let spans = token_spans(&html, "gradl-l1");
        // #0 (0.8) is the largest non-special score: full strength, whatever [CLS] has.
        let full = format!("background-color:{}", blend(POSITIVE_RGB, 1.0));
        assert_eq!(full, "background-color:rgb(239,104,72)");
        assert!(spans[2].contains(&full), "{}", spans[2]);
        assert_eq!(spans.iter().filter(|s| s.contains(&full)).count(), 1);
        // "film" is -0.4: half strength in the negative hue.
        assert!(spans[4].starts_with(" neg\""), "{}", spans[4]);
        assert!(spans[4].contains(&format!("background-color:{}", blend(NEGATIVE_RGB, 0.5))), "{}", spans[4]);
        assert!(spans[4].contains("score -0.4000, rank 4 of 4"), "{}", spans[4]);
        // In the second row -0.5 is the top |score|.
        let spans = token_spans(&html, "random");
        assert!(spans[1].contains(&format!("background-color:{}", blend(NEGATIVE_RGB, 1.0))), "{}", spans[1]);
    }

    #[test]
    fn intensity_is_linear_and_capped() {
        assert_eq!(intensity(0.8, 0.8), 1.0);
        assert_eq!(intensity(-0.4, 0.8), 0.5);
        assert_eq!(intensity(2.0, 0.8), 1.0);
        assert_eq!(intensity(0.3, 0.0), 0.0);
        assert_eq!(intensity(f32::NAN, 1.0), 0.0);
        assert_eq!(blend(POSITIVE_RGB, 0.0), "rgb(255,255,255)");
        let scores = [9.0, 0.1, f32::NAN, -0.7];
        assert_eq!(row_scale(&scores, |i| i == 0), 0.7);
    }

    #[test]
    fn special_tokens_have_no_score() {
        let html = render_sample();
        for method in ["gradl-l1", "random"] {
            let spans = token_spans(&html, method);
            for i in [0, 5] {
                assert!(spans[i].starts_with(" special\""), "{}", spans[i]);
                assert!(!spans[i].contains("style="), "{}", spans[i]);
                assert!(!spans[i].contains("score "), "{}", spans[i]);
            }
        }
    }

    #[test]
    fn missing_scores_show_unscored_and_metrics_match_the_crate() {
        let mut ex = example();
        ex.methods = vec![("gradp-l1".parse().unwrap(), vec![0.0, 0.5, 0.9])];
        let html = render(&Page { title: "t", subtitle: "", summary: &[], tables: &[], plots: &[], examples: &[ex] });
        let spans = token_spans(&html, "gradp-l1");
        assert!(spans[3].starts_with(" unscored\""), "{}", spans[3]);
        assert!(spans[4].starts_with(" unscored\""), "{}", spans[4]);
        // #0 ranks first of the 4 ordinary tokens (NaN sinks): p@k 1, rank 1.
        assert!(html.contains("p@k <b>1.00</b> · rank <b>1</b>"), "{html}");
    }

    #[test]
    fn no_external_resources() {
        let html = render_sample();
        let lower = html.to_ascii_lowercase();
        for attr in ["src=", "href=", "xlink:href=", "url(", "@import"] {
            for (at, _) in lower.match_indices(attr) {
                let value = lower[at + attr.len()..].trim_start_matches(['"', '\'', ' ']);
                let context: String = lower[at..].chars().take(60).collect();
                assert!(value.starts_with('#'), "external or unexpected reference: {context}");
            }
        }
        assert!(!lower.contains("<link"), "no stylesheets by link");
        assert!(!lower.contains("<img"), "no images");
        assert!(!lower.contains("<script src"), "no external scripts");
    }

    #[test]
    fn every_table_plot_and_example_has_its_element() {
        let html = render_sample();
        for id in ["toc", "summary", "tables", "plots", "examples", "legend"] {
            assert!(html.contains(&format!("id=\"{id}\"")), "missing #{id}");
        }
        assert!(html.contains("<table class=\"result\" id=\"table-lstm_precision\">"));
        assert!(html.contains("<caption>lstm: precision@k</caption>"));
        assert!(html.contains("<a href=\"#table-lstm_precision\">lstm: precision@k</a>"));
        assert!(html.contains("<figure class=\"plot\" id=\"plot-precision_bars\">"));
        assert!(html.contains("<figcaption>Precision by method</figcaption>"));
        assert!(!html.contains("<?xml"), "the SVG prolog must go");
        assert!(html.contains("<svg width=\"40\""));
        assert_eq!(html.matches("<div class=\"example\"").count(), 2);
        assert!(html.contains("id=\"example-0\"") && html.contains("id=\"example-1\""));
        assert_eq!(html.matches("<div class=\"salience-row\"").count(), 4);
        assert!(html.contains("<li class=\"warn\">Warning: 1 model failed verification</li>"));
    }

    #[test]
    fn table_cells_align_fail_and_null() {
        let html = render_sample();
        assert!(html.contains("<th scope=\"col\">method</th><th scope=\"col\" class=\"num\">sst2:st</th>"));
        assert!(
            html.contains("<tr><td>gradl-l1</td><td class=\"num\">1.00</td><td class=\"num failed\">0.95 †</td></tr>")
        );
        assert!(html.contains("<tr><td>random</td><td class=\"num\"></td><td class=\"num failed\">0.03 †</td></tr>"));
        assert!(html.contains("<p class=\"note\">† failed verification</p>"));
    }

    #[test]
    fn empty_page_still_has_every_section() {
        let html = render(&Page { title: "t", subtitle: "", summary: &[], tables: &[], plots: &[], examples: &[] });
        for id in ["summary", "tables", "plots", "examples"] {
            assert!(html.contains(&format!("<section id=\"{id}\"")), "missing {id}");
        }
        assert_eq!(html.matches("class=\"empty\"").count(), 4);
        assert!(html.starts_with("<!DOCTYPE html>") && html.ends_with("</html>\n"));
    }

    #[test]
    fn scores_format_readably() {
        assert_eq!(format_score(0.5), "+0.5000");
        assert_eq!(format_score(-0.4), "-0.4000");
        assert_eq!(format_score(0.0), "+0.0000");
        assert_eq!(format_score(2.5e-6), "+2.500e-6");
        assert!(is_warning("WARNING: x") && is_warning("⚠ x") && !is_warning("Use x"));
    }
}
