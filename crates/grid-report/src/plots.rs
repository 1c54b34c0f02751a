//! Charts of a grid's results, drawn with plotters as SVG (kept as text, for
//! inlining into the HTML report) and PNG.
//!
//! | stem | chart |
//! |---|---|
//! | `precision_<model>_<dataset>` | precision@k per method: one group of horizontal bars per method (its paper spelling), one bar per shortcut, bootstrap 95% whiskers, the `random` method's value as a dashed line per shortcut |
//! | `budget_<model>_<dataset>` | precision@k against the budget (IG steps m; LIME, KernelSHAP and SmoothGrad samples n) on a log axis: one panel per shortcut, one line per config that appears with at least two budgets |
//! | `verification` | per (model, dataset, shortcut): the shortcut and original models' accuracies on the synthetic and original test sets, with chance (0.5) and the grid's synthetic-accuracy threshold |
//! | `rationale_<dataset>_<manipulation>` | Zhou et al.'s Figures 10–11: rationale precision and recall against the realised %Sel with the optimal lines ([`rationale`]) |
//! | `zhou_images_attr_er` | Zhou et al.'s Figures 3 and 13: Attr% against %ER per method and image manipulation, with the ideal and even-map lines ([`images`]) |
//!
//! A chart without data is not drawn. Only the `precision` metric is plotted.
//! Bars of a model that failed verification are lighter and hatched (budget
//! points hollow), and the legend says so.
//!
//! Seeds: cells that differ only by `seed` are drawn as their mean, with the
//! interval the tables and `--compare` show for it
//! (`tables::interval_over_seeds`); the mean counts as failed when any seed's
//! model failed verification.
//!
//! Text is drawn with the bundled DejaVu Sans, registered once as `sans-serif`,
//! so PNGs need no system fonts. Order is first appearance in the input and
//! nothing depends on hash order: the same input gives the same bytes. Each file
//! is written beside its target and renamed into place.

mod image_sweep;
mod image_training;
mod images;
mod rationale;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Once;

use super::tables::first_appearance;
use plotters::coord::Shift;
use plotters::coord::combinators::WithKeyPoints;
use plotters::coord::types::{RangedCoordf64, RangedCoordi32};
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontStyle, register_font};

use super::{CellResult, Plot, ReportError, VerificationRow};
use grid_methods::salience::Method;
use grid_methods::shortcut::{Regime, ShortcutKind};

/// The family every text uses; [`register_fonts`] binds it to DejaVu Sans.
const FONT: &str = "sans-serif";
const TITLE_PT: u32 = 20;
const LABEL_PT: u32 = 14;
const MARGIN: u32 = 12;
/// Height of one bar, and the gap between two groups of bars.
const BAR_PX: u32 = 16;
const GROUP_GAP_PX: u32 = 14;
/// Width of a bar chart's plotting area, and of one budget panel.
const PLOT_W: u32 = 560;
const PANEL_W: u32 = 320;
const PANEL_H: u32 = 420;
const CAPTION_PX: u32 = 40;
const X_AXIS_PX: u32 = 50;
/// One legend line: the mark's width, the line's height.
const LEGEND_MARK_W: i32 = 28;
const LEGEND_ROW_PX: i32 = 22;
const HATCH_PX: i32 = 6;

const PRECISION: &str = "precision";
const FAILED_NOTE: &str = "model failed verification";

/// Tableau 10: distinct, and readable on white.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
const GREY: RGBColor = RGBColor(110, 110, 110);
const DARK_RED: RGBColor = RGBColor(180, 20, 20);

/// Writes every chart the inputs have data for into `dir` (which must exist), as
/// `<stem>.svg` and `<stem>.png`, and returns them in writing order: per (model,
/// dataset) in input order its precision and budget charts, then the
/// verification chart.
///
/// Two charts whose file-safe stems coincide (models `a/b` and `a_b`) are a
/// [`ReportError::NameCollision`], reported before anything is written.
pub fn write_plots(
    dir: &Path,
    cells: &[CellResult],
    verification: &[VerificationRow],
    images: &[crate::images::ImageAttrRow],
) -> Result<Vec<Plot>, ReportError> {
    register_fonts();
    let means = mean_over_seeds(cells);
    let mut planned: Vec<(String, AnyChart)> = Vec::new();
    for (model, dataset) in first_appearance(means.iter().map(|m| (m.model, m.dataset))) {
        let precision: Vec<&Mean> =
            means.iter().filter(|m| m.model == model && m.dataset == dataset && m.metric == PRECISION).collect();
        let suffix = format!("{}_{}", super::file_safe(model), super::file_safe(dataset));
        if let Some(chart) = precision_chart(&precision) {
            planned.push((format!("precision_{suffix}"), AnyChart::Bars(chart)));
        }
        if let Some(chart) = budget_chart(&precision) {
            planned.push((format!("budget_{suffix}"), AnyChart::Budget(chart)));
        }
    }
    if let Some(chart) = verification_chart(verification) {
        planned.push(("verification".to_string(), AnyChart::Bars(chart)));
    }
    for (stem, chart) in rationale::charts(cells, verification) {
        planned.push((stem, AnyChart::Rationale(chart)));
    }
    if let Some((stem, chart)) = images::chart(&crate::images::trained(images)) {
        planned.push((stem, AnyChart::Images(chart)));
    }
    if let Some((stem, chart)) = image_training::chart(images) {
        planned.push((stem, AnyChart::ImageTraining(chart)));
    }
    for (stem, chart) in image_sweep::charts(images) {
        planned.push((stem, AnyChart::ImageSweep(chart)));
    }
    check_unique_stems(dir, &planned)?;
    planned.iter().map(|(stem, chart)| write_chart(dir, stem, chart)).collect()
}

/// Binds [`FONT`] to the bundled DejaVu Sans, once per process.
fn register_fonts() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // Bundled, valid TrueType files: a failure here is a broken build.
        assert!(register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_ok(), "DejaVu Sans");
        assert!(register_font(FONT, FontStyle::Bold, dejavu::sans::bold()).is_ok(), "DejaVu Sans Bold");
    });
}

fn check_unique_stems(dir: &Path, planned: &[(String, AnyChart)]) -> Result<(), ReportError> {
    let mut owners: HashMap<&str, &str> = HashMap::new();
    for (stem, chart) in planned {
        if let Some(first) = owners.insert(stem, chart.title()) {
            return Err(ReportError::NameCollision {
                path: dir.join(stem),
                first: first.to_string(),
                second: chart.title().to_string(),
            });
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Data: seed means, budgets, paper names.

/// One cell averaged over its seeds.
#[derive(Debug, Clone, PartialEq)]
struct Mean<'a> {
    model: &'a str,
    architecture: &'a str,
    dataset: &'a str,
    shortcut: Regime,
    method: Method,
    metric: &'a str,
    value: f64,
    /// The whisker (see the module doc for several seeds).
    interval: Option<(f64, f64)>,
    /// Some seed's model failed verification.
    failed: bool,
}

/// Cells that differ only by `seed` become one [`Mean`], in first-appearance order.
fn mean_over_seeds(cells: &[CellResult]) -> Vec<Mean<'_>> {
    super::tables::seed_groups(cells).iter().map(|s| mean_of(s)).collect()
}

/// `seeds` is non-empty and shares everything but the seed.
fn mean_of<'a>(seeds: &[&'a CellResult]) -> Mean<'a> {
    let first = seeds[0];
    let value = seeds.iter().map(|c| c.value).sum::<f64>() / seeds.len() as f64;
    let interval = super::tables::interval_over_seeds(seeds).map(|[low, high]| (low, high));
    Mean {
        model: &first.key.model,
        architecture: first.key.architecture.name(),
        dataset: &first.key.dataset,
        shortcut: first.key.shortcut,
        method: first.method,
        metric: first.metric.name(),
        value,
        interval,
        failed: seeds.iter().any(|c| !c.verified),
    }
}

/// A method's budget and its config with the number replaced by `m` (IG steps)
/// or `n` (samples): `igl-zero-100` → (`igl-zero-m`, 100), `lime-unk-100` →
/// (`limeunk-n`, 100). `None` for methods without a budget.
fn budget_of(method: Method) -> Option<(String, u32)> {
    use grid_methods::salience::GradientMethod::{Gradient, GradientTimesInput, IntegratedGradients};
    let (letter, budget) = match method {
        Method::Gradient(IntegratedGradients { steps, .. }) => ("m", steps),
        Method::Lime { samples, .. } | Method::KernelShap { samples, .. } => ("n", samples),
        Method::SmoothGrad { inner, samples, sigma } => {
            // The samples are not the last field: σ follows them.
            return Some((format!("smooth-{inner}-n-{}", sigma.get()), samples));
        }
        Method::Gradient(Gradient { .. } | GradientTimesInput { .. })
        | Method::Occlusion { .. }
        | Method::Attention(_)
        | Method::ScaledAttention
        | Method::DeepLift { .. }
        | Method::Rationale
        | Method::Random => return None,
    };
    let name = method.to_string();
    let (config, _) = name.rsplit_once('-')?;
    Some((format!("{config}-{letter}"), budget))
}

// ---------------------------------------------------------------------------
// Colours.

/// The papers' three shortcuts have fixed colours, so every chart agrees; any
/// other shortcut takes the rest of the palette in order of appearance.
fn shortcut_colors(shortcuts: &[Regime]) -> Vec<RGBColor> {
    let mut next_extra = 3;
    shortcuts
        .iter()
        .map(|s| match s {
            Regime::Shortcut(ShortcutKind::St) => PALETTE[0],
            Regime::Shortcut(ShortcutKind::Tic) => PALETTE[1],
            Regime::Shortcut(ShortcutKind::Op) => PALETTE[2],
            _ => {
                next_extra += 1;
                PALETTE[(next_extra - 1) % PALETTE.len()]
            }
        })
        .collect()
}

/// `color` mixed with 65% white: the fill of a bar whose model failed verification.
fn lighter(color: RGBColor) -> RGBColor {
    let mix = |c: u8| 255 - ((255 - c as u32) * 35 / 100) as u8;
    RGBColor(mix(color.0), mix(color.1), mix(color.2))
}

// ---------------------------------------------------------------------------
// Chart descriptions: what to draw, built from the data, no drawing yet.

struct Series {
    name: String,
    color: RGBColor,
}

struct Bar {
    /// Index into the chart's series; also the bar's slot in its group.
    series: usize,
    value: f64,
    interval: Option<(f64, f64)>,
    failed: bool,
}

struct Group {
    label: String,
    bars: Vec<Bar>,
}

/// A vertical dashed line across the whole chart.
struct RefLine {
    x: f64,
    color: RGBColor,
    label: String,
}

/// Grouped horizontal bars on an x axis 0..1, groups top to bottom.
struct BarChart {
    title: String,
    x_desc: String,
    series: Vec<Series>,
    groups: Vec<Group>,
    ref_lines: Vec<RefLine>,
}

#[derive(Clone, Copy)]
struct BudgetPoint {
    budget: u32,
    value: f64,
    interval: Option<(f64, f64)>,
    failed: bool,
}

struct BudgetLine {
    /// Index into the chart's configs.
    config: usize,
    /// Sorted by budget, at least two.
    points: Vec<BudgetPoint>,
}

struct Panel {
    shortcut: String,
    lines: Vec<BudgetLine>,
}

/// Precision against budget, one panel per shortcut.
struct BudgetChart {
    title: String,
    configs: Vec<Series>,
    panels: Vec<Panel>,
}

enum AnyChart {
    Bars(BarChart),
    Budget(BudgetChart),
    Rationale(rationale::RationaleChart),
    Images(images::ImageChart),
    ImageTraining(image_training::TrainingChart),
    ImageSweep(image_sweep::SweepChart),
}

impl AnyChart {
    fn title(&self) -> &str {
        match self {
            AnyChart::Bars(c) => &c.title,
            AnyChart::Budget(c) => &c.title,
            AnyChart::Rationale(c) => &c.title,
            AnyChart::Images(c) => &c.title,
            AnyChart::ImageTraining(c) => &c.title,
            AnyChart::ImageSweep(c) => &c.title,
        }
    }
}

/// `lstm (bilstm) · sst2: <what>`; the architecture only when it adds something.
fn chart_title(first: &Mean, what: &str) -> String {
    let model = if first.model == first.architecture {
        first.model.to_string()
    } else {
        format!("{} ({})", first.model, first.architecture)
    };
    format!("{model} · {}: {what}", first.dataset)
}

/// The precision chart of one (model, dataset): `points` are its precision means.
fn precision_chart(points: &[&Mean]) -> Option<BarChart> {
    let first = points.first()?;
    let shortcuts = first_appearance(points.iter().map(|p| p.shortcut));
    let colors = shortcut_colors(&shortcuts);
    let series: Vec<Series> =
        shortcuts.iter().zip(&colors).map(|(s, &color)| Series { name: s.to_string(), color }).collect();
    let slot = |shortcut: Regime| shortcuts.iter().position(|&s| s == shortcut).unwrap_or(0);
    // A method's name is how the papers print it (`lime-unk-100` → `limeunk-100`).
    let groups = first_appearance(points.iter().map(|p| p.method))
        .into_iter()
        .map(|method| Group {
            label: method.to_string(),
            bars: points
                .iter()
                .filter(|p| p.method == method)
                .map(|p| Bar { series: slot(p.shortcut), value: p.value, interval: p.interval, failed: p.failed })
                .collect(),
        })
        .collect();
    let ref_lines = points
        .iter()
        .filter(|p| p.method == Method::Random)
        .map(|p| RefLine {
            x: p.value,
            color: colors[slot(p.shortcut)],
            label: format!("random · {}: {:.2}", p.shortcut, p.value),
        })
        .collect();
    Some(BarChart {
        title: chart_title(first, "precision@k"),
        x_desc: "precision@k (95% interval)".to_string(),
        series,
        groups,
        ref_lines,
    })
}

/// The budget chart of one (model, dataset), if some config has two budgets.
fn budget_chart(points: &[&Mean]) -> Option<BudgetChart> {
    let first = points.first()?;
    // (shortcut, config) → points, in first-appearance order.
    let mut lines: Vec<(Regime, String, Vec<BudgetPoint>)> = Vec::new();
    for p in points {
        let Some((config, budget)) = budget_of(p.method) else { continue };
        let point = BudgetPoint { budget, value: p.value, interval: p.interval, failed: p.failed };
        match lines.iter_mut().find(|(s, c, _)| *s == p.shortcut && *c == config) {
            // Two cells of one budget (the first wins).
            Some((_, _, pts)) if pts.iter().any(|q| q.budget == budget) => {}
            Some((_, _, pts)) => pts.push(point),
            None => lines.push((p.shortcut, config, vec![point])),
        }
    }
    lines.retain(|(_, _, pts)| pts.len() >= 2);
    if lines.is_empty() {
        return None;
    }
    let configs = first_appearance(lines.iter().map(|(_, c, _)| c.as_str()));
    let config_series =
        configs.iter().enumerate().map(|(i, c)| Series { name: c.to_string(), color: PALETTE[i % PALETTE.len()] });
    let panels = first_appearance(lines.iter().map(|(s, _, _)| *s))
        .into_iter()
        .map(|shortcut| Panel {
            shortcut: shortcut.to_string(),
            lines: lines
                .iter()
                .filter(|(s, _, _)| *s == shortcut)
                .map(|(_, config, pts)| BudgetLine {
                    config: configs.iter().position(|c| c == config).unwrap_or(0),
                    points: sorted_by_budget(pts),
                })
                .collect(),
        })
        .collect();
    Some(BudgetChart { title: chart_title(first, "precision@k by budget"), configs: config_series.collect(), panels })
}

fn sorted_by_budget(points: &[BudgetPoint]) -> Vec<BudgetPoint> {
    let mut out = points.to_vec();
    out.sort_by_key(|p| p.budget);
    out
}

/// Name, field: the accuracies the verification chart shows.
type Accuracy = (&'static str, fn(&VerificationRow) -> f64);

const VERIFICATION_BARS: [Accuracy; 4] = [
    ("shortcut model, synthetic", |r| r.verification.shortcut_model_on_synthetic),
    ("original model, synthetic", |r| r.verification.original_model_on_synthetic),
    ("shortcut model, original", |r| r.verification.shortcut_model_on_original),
    ("original model, original", |r| r.verification.original_model_on_original),
];

fn verification_chart(rows: &[VerificationRow]) -> Option<BarChart> {
    if rows.is_empty() {
        return None;
    }
    let colors = [PALETTE[4], PALETTE[5], PALETTE[6], PALETTE[9]];
    let series = VERIFICATION_BARS
        .iter()
        .zip(colors)
        .map(|((name, _), color)| Series { name: name.to_string(), color })
        .collect();
    // One group per row: each seed's models pass or fail on their own.
    let several_seeds = first_appearance(rows.iter().map(|r| r.key.seed)).len() > 1;
    let groups = rows
        .iter()
        .map(|r| Group {
            label: verification_label(r, several_seeds),
            bars: VERIFICATION_BARS
                .iter()
                .enumerate()
                .map(|(i, (_, get))| Bar { series: i, value: get(r), interval: None, failed: !r.verification.passed })
                .collect(),
        })
        .collect();
    // The thresholds the rows were judged against (one per grid); rows read
    // from an older report carry none and get the papers' default.
    let default = grid_methods::shortcut::MIN_SYNTHETIC_ACCURACY;
    let thresholds = first_appearance(rows.iter().map(|r| r.min_synthetic_accuracy.unwrap_or(default).to_bits()));
    // Chance is 1/C for C classes (0.5 when binary, where rows carry none).
    let chances =
        first_appearance(rows.iter().map(|r| r.verification.accuracy_without_shortcut.unwrap_or(0.5).to_bits()));
    let mut ref_lines: Vec<RefLine> = chances
        .into_iter()
        .map(f64::from_bits)
        .map(|x| RefLine { x, color: GREY, label: format!("chance: {}", (x * 1000.0).round() / 1000.0) })
        .collect();
    ref_lines.extend(thresholds.into_iter().map(f64::from_bits).map(|threshold| RefLine {
        x: threshold,
        color: DARK_RED,
        label: format!("synthetic threshold: {threshold}"),
    }));
    Some(BarChart {
        title: "Verification: accuracies of the shortcut and original models".to_string(),
        x_desc: "accuracy".to_string(),
        series,
        groups,
        ref_lines,
    })
}

fn verification_label(row: &VerificationRow, with_seed: bool) -> String {
    let label = format!("{} · {} · {}", row.key.model, row.key.dataset, row.key.shortcut);
    if with_seed { format!("{label} · seed {}", row.key.seed) } else { label }
}

// ---------------------------------------------------------------------------
// Legends and sizes.

enum Mark {
    Bar(RGBColor),
    FailedBar(RGBColor),
    Dashed(RGBColor),
    Line(RGBColor),
    HollowMarker(RGBColor),
}

struct LegendEntry {
    mark: Mark,
    text: String,
}

impl BarChart {
    fn any_failed(&self) -> bool {
        self.groups.iter().flat_map(|g| &g.bars).any(|b| b.failed)
    }

    fn legend(&self) -> Vec<LegendEntry> {
        let mut entries: Vec<LegendEntry> =
            self.series.iter().map(|s| LegendEntry { mark: Mark::Bar(s.color), text: s.name.clone() }).collect();
        entries
            .extend(self.ref_lines.iter().map(|r| LegendEntry { mark: Mark::Dashed(r.color), text: r.label.clone() }));
        if self.any_failed() {
            entries.push(LegendEntry { mark: Mark::FailedBar(GREY), text: FAILED_NOTE.to_string() });
        }
        entries
    }

    fn label_width(&self) -> u32 {
        self.groups.iter().map(|g| text_width(&g.label, LABEL_PT)).max().unwrap_or(0) + 16
    }

    /// Height grows with the rows: one bar slot per series in every group.
    fn size(&self) -> (u32, u32) {
        let rows = self.groups.len() as u32 * self.group_px();
        let plot_h = CAPTION_PX + rows + X_AXIS_PX + 2 * MARGIN;
        let width = 2 * MARGIN + self.label_width() + PLOT_W + legend_width(&self.legend());
        (width, plot_h.max(legend_height(&self.legend())))
    }

    fn group_px(&self) -> u32 {
        self.series.len().max(1) as u32 * BAR_PX + GROUP_GAP_PX
    }
}

impl BudgetChart {
    fn any_failed(&self) -> bool {
        self.panels.iter().flat_map(|p| &p.lines).flat_map(|l| &l.points).any(|p| p.failed)
    }

    fn legend(&self) -> Vec<LegendEntry> {
        let mut entries: Vec<LegendEntry> =
            self.configs.iter().map(|c| LegendEntry { mark: Mark::Line(c.color), text: c.name.clone() }).collect();
        if self.any_failed() {
            entries.push(LegendEntry { mark: Mark::HollowMarker(GREY), text: FAILED_NOTE.to_string() });
        }
        entries
    }

    fn size(&self) -> (u32, u32) {
        let width = 2 * MARGIN + self.panels.len() as u32 * PANEL_W + legend_width(&self.legend());
        (width, PANEL_H.max(legend_height(&self.legend())))
    }

    /// The budgets' range, widened so the end points are not on the frame.
    fn x_range(&self) -> std::ops::Range<f64> {
        let budgets = || self.panels.iter().flat_map(|p| &p.lines).flat_map(|l| &l.points).map(|p| p.budget as f64);
        let low = budgets().fold(f64::INFINITY, f64::min).max(1.0);
        let high = budgets().fold(0.0, f64::max).max(low);
        (low / 1.5)..(high * 1.5)
    }
}

/// Width of `text` in DejaVu Sans at `pt`, for laying out before drawing.
fn text_width(text: &str, pt: u32) -> u32 {
    register_fonts();
    let font = FontDesc::new(FontFamily::Name(FONT), pt as f64, FontStyle::Normal);
    font.box_size(text).map(|(w, _)| w).unwrap_or(text.chars().count() as u32 * pt * 2 / 3)
}

fn legend_width(entries: &[LegendEntry]) -> u32 {
    let text = entries.iter().map(|e| text_width(&e.text, LABEL_PT)).max().unwrap_or(0);
    text + LEGEND_MARK_W as u32 + 3 * MARGIN
}

fn legend_height(entries: &[LegendEntry]) -> u32 {
    CAPTION_PX + 2 * MARGIN + entries.len() as u32 * LEGEND_ROW_PX as u32
}

// ---------------------------------------------------------------------------
// Drawing, for any backend.

type Drawn<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn label_style(pt: u32) -> TextStyle<'static> {
    TextStyle::from((FONT, pt).into_font()).color(&BLACK)
}

impl AnyChart {
    fn size(&self) -> (u32, u32) {
        match self {
            AnyChart::Bars(c) => c.size(),
            AnyChart::Budget(c) => c.size(),
            AnyChart::Rationale(c) => c.size(),
            AnyChart::Images(c) => c.size(),
            AnyChart::ImageTraining(c) => c.size(),
            AnyChart::ImageSweep(c) => c.size(),
        }
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        root.fill(&WHITE)?;
        match self {
            AnyChart::Bars(c) => draw_bar_chart(root, c),
            AnyChart::Budget(c) => draw_budget_chart(root, c),
            AnyChart::Rationale(c) => c.draw(root),
            AnyChart::Images(c) => c.draw(root),
            AnyChart::ImageTraining(c) => c.draw(root),
            AnyChart::ImageSweep(c) => c.draw(root),
        }
    }
}

/// A bar's extent in chart coordinates: x from 0 to the value, y within its group.
struct BarBox {
    right: f64,
    top: i32,
    bottom: i32,
}

/// The y axis counts pixels of the layout: group `i` of `n` spans
/// `[(n−i−1)·g, (n−i)·g]` for the group height `g` (first group on top), and its
/// bars fill `BAR_PX` slots in series order, with half a gap above and below.
fn bar_box(chart: &BarChart, group: usize, bar: &Bar) -> BarBox {
    let group_px = chart.group_px() as i32;
    let top =
        (chart.groups.len() - group) as i32 * group_px - GROUP_GAP_PX as i32 / 2 - bar.series as i32 * BAR_PX as i32;
    BarBox { right: bar.value.clamp(0.0, 1.0), top: top - 1, bottom: top - BAR_PX as i32 + 1 }
}

/// The y extent of a bar chart and its group centres (where the labels go).
fn bar_axis(chart: &BarChart) -> (i32, Vec<i32>) {
    let group_px = chart.group_px() as i32;
    let total = chart.groups.len() as i32 * group_px;
    (total, (0..chart.groups.len() as i32).map(|i| total - i * group_px - group_px / 2).collect())
}

fn draw_bar_chart<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &BarChart) -> Drawn<DB> {
    let legend = chart.legend();
    let (width, _) = root.dim_in_pixel();
    let (plot_area, legend_area) = root.split_horizontally(width.saturating_sub(legend_width(&legend)));
    let (total, centres) = bar_axis(chart);
    let mut ctx = ChartBuilder::on(&plot_area)
        .caption(&chart.title, (FONT, TITLE_PT))
        .margin(MARGIN)
        .x_label_area_size(X_AXIS_PX)
        .y_label_area_size(chart.label_width())
        .build_cartesian_2d(0f64..1f64, (0..total).with_key_points(centres))?;
    // Key points sit on the group centres, so each label names its group.
    let group_px = chart.group_px() as i32;
    let group_label = |y: &i32| {
        let i = ((total - y) / group_px) as usize;
        chart.groups.get(i).map(|g| g.label.clone()).unwrap_or_default()
    };
    ctx.configure_mesh()
        .disable_y_mesh()
        .x_labels(6)
        .max_light_lines(1)
        .x_label_formatter(&|x| format!("{x:.1}"))
        .y_label_formatter(&group_label)
        .x_desc(chart.x_desc.as_str())
        .label_style(label_style(LABEL_PT))
        .axis_desc_style(label_style(LABEL_PT))
        .draw()?;

    for (i, group) in chart.groups.iter().enumerate() {
        for bar in &group.bars {
            draw_bar(root, &mut ctx, chart, i, bar)?;
        }
    }
    for line in &chart.ref_lines {
        let x = line.x.clamp(0.0, 1.0);
        ctx.draw_series(std::iter::once(DashedPathElement::new(
            vec![(x, 0), (x, total)],
            6,
            4,
            line.color.stroke_width(2),
        )))?;
    }
    draw_legend(&legend_area, &legend)
}

type BarContext<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, WithKeyPoints<RangedCoordi32>>>;

fn draw_bar<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    ctx: &mut BarContext<'_, DB>,
    chart: &BarChart,
    group: usize,
    bar: &Bar,
) -> Drawn<DB> {
    let color = chart.series[bar.series].color;
    let b = bar_box(chart, group, bar);
    let corners = [(0.0, b.bottom), (b.right, b.top)];
    let fill = if bar.failed { lighter(color) } else { color };
    ctx.draw_series(std::iter::once(Rectangle::new(corners, fill.filled())))?;
    if bar.failed {
        // Hatching survives greyscale printing, where the lighter fill may not.
        let pixels = (ctx.backend_coord(&corners[0]), ctx.backend_coord(&corners[1]));
        draw_hatch(root, pixels, color)?;
        ctx.draw_series(std::iter::once(Rectangle::new(corners, color.stroke_width(1))))?;
    }
    if let Some((low, high)) = bar.interval {
        let (low, high) = (low.clamp(0.0, 1.0), high.clamp(0.0, 1.0));
        let mid = (b.top + b.bottom) / 2;
        let cap = BAR_PX as i32 / 4;
        let whisker = [
            vec![(low, mid), (high, mid)],
            vec![(low, mid - cap), (low, mid + cap)],
            vec![(high, mid - cap), (high, mid + cap)],
        ];
        ctx.draw_series(whisker.into_iter().map(|p| PathElement::new(p, BLACK.stroke_width(1))))?;
    }
    Ok(())
}

/// `/` lines `HATCH_PX` apart inside the pixel rectangle spanned by two corners.
fn hatch_lines(a: (i32, i32), b: (i32, i32)) -> Vec<[(i32, i32); 2]> {
    let (left, right) = (a.0.min(b.0), a.0.max(b.0));
    let (top, bottom) = (a.1.min(b.1), a.1.max(b.1));
    // Each line is x + y = c; clip it to the rectangle.
    (left + top + HATCH_PX..right + bottom)
        .step_by(HATCH_PX as usize)
        .filter_map(|c| {
            let x0 = left.max(c - bottom);
            let x1 = right.min(c - top);
            (x0 < x1).then_some([(x0, c - x0), (x1, c - x1)])
        })
        .collect()
}

fn draw_hatch<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    (a, b): ((i32, i32), (i32, i32)),
    color: RGBColor,
) -> Drawn<DB> {
    for [p, q] in hatch_lines(a, b) {
        root.draw(&PathElement::new(vec![p, q], color.stroke_width(1)))?;
    }
    Ok(())
}

fn draw_budget_chart<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &BudgetChart) -> Drawn<DB> {
    let legend = chart.legend();
    let (width, _) = root.dim_in_pixel();
    let (plot_area, legend_area) = root.split_horizontally(width.saturating_sub(legend_width(&legend)));
    let plot_area = plot_area.titled(&chart.title, (FONT, TITLE_PT))?;
    let panel_areas = plot_area.split_evenly((1, chart.panels.len()));
    for (panel, area) in chart.panels.iter().zip(&panel_areas) {
        draw_panel(area, chart, panel)?;
    }
    draw_legend(&legend_area, &legend)
}

fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, chart: &BudgetChart, panel: &Panel) -> Drawn<DB> {
    let mut ctx = ChartBuilder::on(area)
        .caption(format!("shortcut {}", panel.shortcut), (FONT, LABEL_PT + 2))
        .margin(MARGIN)
        .x_label_area_size(X_AXIS_PX)
        .y_label_area_size(48)
        .build_cartesian_2d(chart.x_range().log_scale(), 0f64..1f64)?;
    ctx.configure_mesh()
        .x_labels(6)
        .max_light_lines(1)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.1}"))
        .x_desc("budget (IG steps m / samples n)")
        .y_desc("precision@k")
        .label_style(label_style(LABEL_PT - 2))
        .axis_desc_style(label_style(LABEL_PT - 2))
        .draw()?;
    for line in &panel.lines {
        let color = chart.configs[line.config].color;
        let xy = |p: &BudgetPoint| (p.budget as f64, p.value.clamp(0.0, 1.0));
        ctx.draw_series(LineSeries::new(line.points.iter().map(xy), color.stroke_width(2)))?;
        let whiskers = line.points.iter().filter_map(|p| {
            let (low, high) = p.interval?;
            let x = p.budget as f64;
            Some(PathElement::new(vec![(x, low.clamp(0.0, 1.0)), (x, high.clamp(0.0, 1.0))], color.stroke_width(1)))
        });
        ctx.draw_series(whiskers)?;
        ctx.draw_series(line.points.iter().map(|p| {
            let style = if p.failed { WHITE.filled() } else { color.filled() };
            Circle::new(xy(p), 4, style)
        }))?;
        // A failed point is a hollow ring: white inside, the line's colour around.
        ctx.draw_series(line.points.iter().filter(|p| p.failed).map(|p| Circle::new(xy(p), 4, color.stroke_width(2))))?;
    }
    Ok(())
}

fn draw_legend<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, entries: &[LegendEntry]) -> Drawn<DB> {
    let left = MARGIN as i32;
    let text_style = label_style(LABEL_PT).pos(Pos::new(HPos::Left, VPos::Center));
    for (k, entry) in entries.iter().enumerate() {
        let y = (CAPTION_PX + MARGIN) as i32 + k as i32 * LEGEND_ROW_PX;
        draw_mark(area, &entry.mark, left, y)?;
        area.draw(&Text::new(entry.text.clone(), (left + LEGEND_MARK_W + 8, y), text_style.clone()))?;
    }
    Ok(())
}

/// A legend mark `LEGEND_MARK_W` wide, centred on row `y`.
fn draw_mark<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, mark: &Mark, left: i32, y: i32) -> Drawn<DB> {
    let right = left + LEGEND_MARK_W;
    let (top, bottom) = (y - 7, y + 7);
    match *mark {
        Mark::Bar(c) => area.draw(&Rectangle::new([(left, top), (right, bottom)], c.filled())),
        Mark::FailedBar(c) => {
            area.draw(&Rectangle::new([(left, top), (right, bottom)], lighter(c).filled()))?;
            for [p, q] in hatch_lines((left, top), (right, bottom)) {
                area.draw(&PathElement::new(vec![p, q], c.stroke_width(1)))?;
            }
            area.draw(&Rectangle::new([(left, top), (right, bottom)], c.stroke_width(1)))
        }
        Mark::Dashed(c) => area.draw(&DashedPathElement::new(vec![(left, y), (right, y)], 6, 4, c.stroke_width(2))),
        Mark::Line(c) => {
            area.draw(&PathElement::new(vec![(left, y), (right, y)], c.stroke_width(2)))?;
            area.draw(&Circle::new(((left + right) / 2, y), 4, c.filled()))
        }
        Mark::HollowMarker(c) => {
            area.draw(&Circle::new(((left + right) / 2, y), 4, WHITE.filled()))?;
            area.draw(&Circle::new(((left + right) / 2, y), 4, c.stroke_width(2)))
        }
    }
}

// ---------------------------------------------------------------------------
// Files.

/// A point of a scatter: filled where its model passed verification,
/// hollow where it failed, ringed in `color`.
fn marker(xy: (f64, f64), color: RGBColor, verified: bool, radius: i32) -> [Circle<(f64, f64), i32>; 2] {
    let fill = if verified { color.filled() } else { WHITE.filled() };
    [Circle::new(xy, radius, fill), Circle::new(xy, radius, color.stroke_width(2))]
}

fn plot_error(path: PathBuf, what: impl std::fmt::Display) -> ReportError {
    ReportError::Io { path, source: std::io::Error::other(what.to_string()) }
}

fn write_chart(dir: &Path, stem: &str, chart: &AnyChart) -> Result<Plot, ReportError> {
    let svg_name = format!("{stem}.svg");
    let svg = render_svg(chart).map_err(|e| plot_error(dir.join(&svg_name), e))?;
    super::write_text(dir, &svg_name, &svg)?;
    write_png(dir, &format!("{stem}.png"), chart)?;
    Ok(Plot { stem: stem.to_string(), title: chart.title().to_string(), svg })
}

fn render_svg(chart: &AnyChart) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, chart.size()).into_drawing_area();
        chart.draw(&root).and_then(|()| root.present()).map_err(|e| e.to_string())?;
    }
    Ok(svg)
}

/// The bitmap backend saves by path (the format from the extension), so it
/// draws into a temporary `.png` in `dir` that is then renamed into place.
fn write_png(dir: &Path, name: &str, chart: &AnyChart) -> Result<PathBuf, ReportError> {
    let path = dir.join(name);
    let io_err = |source| ReportError::Io { path: path.clone(), source };
    let tmp = tempfile::Builder::new().prefix(&format!(".{name}.")).suffix(".png").tempfile_in(dir).map_err(io_err)?;
    {
        let root = BitMapBackend::new(tmp.path(), chart.size()).into_drawing_area();
        chart.draw(&root).and_then(|()| root.present()).map_err(|e| plot_error(path.clone(), e))?;
    }
    tmp.persist(&path).map_err(|e| io_err(e.error))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(model: &str, shortcut: &str, method: &str, value: f64) -> CellResult {
        use crate::testing::CellChanges;
        crate::testing::cell(model, shortcut, method, PRECISION, value)
            .interval((value - 0.05).max(0.0), (value + 0.05).min(1.0))
            .examples(500)
    }

    const METHODS: [&str; 6] = ["gradl-l1", "random", "igl-zero-100", "igl-zero-1000", "lime-unk-100", "limeunk-1000"];

    /// lstm and bert on sst2, shortcuts st/tic/op; bert's op model failed
    /// verification. Rank cells are there to be ignored.
    fn sample_cells() -> Vec<CellResult> {
        let mut cells = Vec::new();
        for model in ["lstm", "bert"] {
            for (s, shortcut) in ["st", "tic", "op"].into_iter().enumerate() {
                for (m, method) in METHODS.into_iter().enumerate() {
                    let value = if method == "random" { 0.05 } else { 0.3 + 0.1 * m as f64 - 0.05 * s as f64 };
                    let mut c = cell(model, shortcut, method, value);
                    c.verified = !(model == "bert" && shortcut == "op");
                    cells.push(c.clone());
                    c.metric = grid_methods::metrics::Metric::Rank;
                    c.value = 3.0;
                    cells.push(c);
                }
            }
        }
        cells
    }

    fn ver(model: &str, shortcut: &str, passed: bool) -> VerificationRow {
        VerificationRow {
            key: crate::CellKey {
                model: model.into(),
                architecture: grid_core::model::Architecture::Bilstm,
                dataset: "sst2".into(),
                shortcut: shortcut.parse().unwrap(),
                seed: 1,
            },
            verification: grid_methods::shortcut::verification::Verification {
                shortcut_model_on_synthetic: if passed { 0.997 } else { 0.81 },
                original_model_on_synthetic: 0.52,
                shortcut_model_on_flip: 0.99,
                shortcut_model_on_original: 0.86,
                original_model_on_original: 0.87,
                shortcut_model_macro_f1: None,
                original_model_macro_f1: None,
                accuracy_without_shortcut: None,
                passed,
                close_calls: Vec::new(),
                failures: if passed { vec![] } else { vec!["synthetic accuracy 81.0% < 99%".into()] },
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

    fn stems(plots: &[Plot]) -> Vec<&str> {
        plots.iter().map(|p| p.stem.as_str()).collect()
    }

    fn svg_of<'a>(plots: &'a [Plot], stem: &str) -> &'a str {
        &plots.iter().find(|p| p.stem == stem).unwrap_or_else(|| panic!("no plot {stem}")).svg
    }

    /// plotters writes a text element's content on a line of its own.
    fn has_text(svg: &str, text: &str) -> bool {
        svg.contains(&format!(">\n{text}\n</text>"))
    }

    fn svg_hex(c: RGBColor) -> String {
        format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
    }

    /// `(width, height)` from a PNG's IHDR, after checking the signature and the end chunk.
    fn png_size(bytes: &[u8]) -> (u32, u32) {
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
        assert_eq!(&bytes[12..16], b"IHDR");
        assert_eq!(&bytes[bytes.len() - 8..bytes.len() - 4], b"IEND");
        let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
        (be(16), be(20))
    }

    /// `width="…" height="…"` of the root `<svg>` element.
    fn svg_size(svg: &str) -> (u32, u32) {
        let attr = |name: &str| -> u32 {
            let start = svg.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
            svg[start..].split('"').next().unwrap().parse().unwrap()
        };
        (attr("width"), attr("height"))
    }

    #[test]
    fn writes_every_chart_as_svg_and_png() {
        let tmp = tempfile::tempdir().unwrap();
        let plots = write_plots(tmp.path(), &sample_cells(), &[ver("lstm", "st", true), ver("bert", "op", false)], &[])
            .unwrap();
        assert_eq!(
            stems(&plots),
            ["precision_lstm_sst2", "budget_lstm_sst2", "precision_bert_sst2", "budget_bert_sst2", "verification"]
        );
        for plot in &plots {
            let svg = std::fs::read_to_string(tmp.path().join(format!("{}.svg", plot.stem))).unwrap();
            assert_eq!(svg, plot.svg);
            assert!(svg.contains("viewBox=\"0 0 "), "{}", plot.stem);
            let png = std::fs::read(tmp.path().join(format!("{}.png", plot.stem))).unwrap();
            // The PNG has the SVG's size, and is more than a blank page.
            assert_eq!(png_size(&png), svg_size(&svg), "{}", plot.stem);
            assert!(png.len() > 5_000, "{}: {} bytes", plot.stem, png.len());
        }
        // Only the charts, no temporary files left behind.
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 2 * plots.len());
        assert_eq!(plots[0].title, "lstm (bilstm) · sst2: precision@k");
        assert_eq!(plots[2].title, "bert · sst2: precision@k");
    }

    #[test]
    fn precision_chart_names_methods_shortcuts_and_random() {
        let tmp = tempfile::tempdir().unwrap();
        let plots = write_plots(tmp.path(), &sample_cells(), &[], &[]).unwrap();
        let svg = svg_of(&plots, "precision_lstm_sst2");
        // Methods in the paper's spelling (`lime-unk-100` was given).
        for method in ["gradl-l1", "random", "igl-zero-100", "igl-zero-1000", "limeunk-100", "limeunk-1000"] {
            assert!(has_text(svg, method), "{method}");
        }
        assert!(!svg.contains("lime-unk"));
        for shortcut in ["st", "tic", "op"] {
            assert!(has_text(svg, shortcut), "{shortcut}");
        }
        assert!(has_text(svg, "random · st: 0.05"));
        // The shortcuts' colours fill the bars; no failure in lstm.
        for color in &PALETTE[..3] {
            assert!(svg.contains(&format!("fill=\"{}\"", svg_hex(*color))));
        }
        assert!(!svg.contains(FAILED_NOTE));
        // Rank cells are not plotted anywhere.
        assert!(!plots.iter().any(|p| p.stem.contains("rank")));
    }

    #[test]
    fn failed_verification_is_drawn_lighter_with_a_note() {
        let tmp = tempfile::tempdir().unwrap();
        let plots = write_plots(tmp.path(), &sample_cells(), &[], &[]).unwrap();
        let light_op = format!("fill=\"{}\"", svg_hex(lighter(PALETTE[2])));
        let bert = svg_of(&plots, "precision_bert_sst2");
        assert!(bert.contains(&light_op));
        assert!(has_text(bert, FAILED_NOTE));
        // bert's st and tic passed: their bars keep the full colour only.
        assert!(!bert.contains(&format!("fill=\"{}\"", svg_hex(lighter(PALETTE[0])))));
        let lstm = svg_of(&plots, "precision_lstm_sst2");
        assert!(!lstm.contains(&light_op));
        assert!(svg_of(&plots, "budget_bert_sst2").contains(FAILED_NOTE));
        assert!(!svg_of(&plots, "budget_lstm_sst2").contains(FAILED_NOTE));
    }

    #[test]
    fn budget_chart_needs_two_budgets() {
        let tmp = tempfile::tempdir().unwrap();
        let plots = write_plots(tmp.path(), &sample_cells(), &[], &[]).unwrap();
        let svg = svg_of(&plots, "budget_lstm_sst2");
        assert!(has_text(svg, "igl-zero-m"));
        assert!(has_text(svg, "limeunk-n"));
        assert!(has_text(svg, "shortcut tic"));
        // gradl-l1 and random have no budget.
        assert!(!svg.contains("gradl-l1") && !svg.contains(">random"));

        let one_budget: Vec<CellResult> =
            sample_cells().into_iter().filter(|c| !c.method.to_string().ends_with("-1000")).collect();
        let dir = tempfile::tempdir().unwrap();
        let plots = write_plots(dir.path(), &one_budget, &[], &[]).unwrap();
        assert_eq!(stems(&plots), ["precision_lstm_sst2", "precision_bert_sst2"]);
    }

    #[test]
    fn verification_chart_shows_accuracies_and_thresholds() {
        let tmp = tempfile::tempdir().unwrap();
        let plots = write_plots(tmp.path(), &[], &[ver("lstm", "st", true), ver("lstm", "op", false)], &[]).unwrap();
        assert_eq!(stems(&plots), ["verification"]);
        let svg = &plots[0].svg;
        assert!(has_text(svg, "lstm · sst2 · st") && has_text(svg, "lstm · sst2 · op"));
        for (name, _) in VERIFICATION_BARS {
            assert!(has_text(svg, name), "{name}");
        }
        assert!(has_text(svg, "chance: 0.5") && has_text(svg, "synthetic threshold: 0.99"));
        assert!(svg.contains(FAILED_NOTE));
        assert!(svg.contains(&format!("fill=\"{}\"", svg_hex(lighter(PALETTE[4])))));

        // Several seeds: one group per seed, named.
        let mut second = ver("lstm", "st", true);
        second.key.seed = 2;
        let plots = write_plots(tmp.path(), &[], &[ver("lstm", "st", true), second], &[]).unwrap();
        let svg = &plots[0].svg;
        assert!(has_text(svg, "lstm · sst2 · st · seed 1") && has_text(svg, "lstm · sst2 · st · seed 2"));
        assert!(!svg.contains(FAILED_NOTE));

        // The grid's own threshold replaces the default.
        let mut lowered = ver("lstm", "articles", true);
        lowered.min_synthetic_accuracy = Some(0.97);
        let plots = write_plots(tmp.path(), &[], &[lowered], &[]).unwrap();
        let svg = &plots[0].svg;
        assert!(has_text(svg, "synthetic threshold: 0.97") && !has_text(svg, "synthetic threshold: 0.99"));
    }

    #[test]
    fn empty_input_writes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        assert!(write_plots(tmp.path(), &[], &[], &[]).unwrap().is_empty());
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[test]
    fn output_is_byte_identical() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let cells = sample_cells();
        let rows = [ver("lstm", "st", true)];
        let pa = write_plots(a.path(), &cells, &rows, &[]).unwrap();
        let pb = write_plots(b.path(), &cells, &rows, &[]).unwrap();
        assert_eq!(stems(&pa), stems(&pb));
        for p in &pa {
            for ext in ["svg", "png"] {
                let name = format!("{}.{ext}", p.stem);
                assert_eq!(std::fs::read(a.path().join(&name)).unwrap(), std::fs::read(b.path().join(&name)).unwrap());
            }
        }
    }

    #[test]
    fn height_grows_with_methods() {
        let few: Vec<CellResult> = sample_cells().into_iter().filter(|c| c.key.model == "lstm").collect();
        let fewer: Vec<CellResult> = few.iter().filter(|c| c.method.to_string() != "gradl-l1").cloned().collect();
        let height = |cells: &[CellResult]| {
            let means = mean_over_seeds(cells);
            let points: Vec<&Mean> = means.iter().filter(|m| m.metric == PRECISION).collect();
            precision_chart(&points).unwrap().size().1
        };
        assert_eq!(height(&few) - height(&fewer), 3 * BAR_PX + GROUP_GAP_PX);
    }

    #[test]
    fn seeds_are_averaged_with_the_tables_interval() {
        let mut a = cell("lstm", "st", "gradl-l1", 0.25);
        a.values = vec![0.0, 0.5, 0.0, 0.5];
        let mut b = cell("lstm", "st", "gradl-l1", 0.5);
        b.values = vec![1.0, 0.0, 1.0, 0.0];
        b.key.seed = 2;
        b.verified = false;
        let other = cell("lstm", "op", "gradl-l1", 0.9);
        let cells = [a.clone(), other, b.clone()];
        let means = mean_over_seeds(&cells);
        assert_eq!(means.len(), 2);
        assert!((means[0].value - 0.375).abs() < 1e-12);
        assert!(means[0].failed);
        assert_eq!(means[1].shortcut.name(), "op");
        // The whisker is the interval the tables (and --compare) show for the cell.
        let table = super::super::tables::over_seeds(&cells);
        let summary = &table[0].cell;
        assert_eq!(means[0].interval, summary.ci_low.zip(summary.ci_high));
        let (low, high) = means[0].interval.expect("two seeds with per-example values");
        assert!(low < 0.375 && 0.375 < high && low >= 0.25 && high <= 0.5, "{low}..{high}");

        // One seed keeps its own interval, or none; seeds without per-example values have none.
        a.ci_low = None;
        assert_eq!(mean_over_seeds(std::slice::from_ref(&a))[0].interval, None);
        a.values.clear();
        b.values.clear();
        assert_eq!(mean_over_seeds(&[a, b])[0].interval, None);
    }

    #[test]
    fn budgets_and_paper_names() {
        let budget = |name: &str| budget_of(name.parse().expect("a method"));
        assert_eq!(budget("igl-zero-100"), Some(("igl-zero-m".into(), 100)));
        assert_eq!(budget("igp-mask-7"), Some(("igp-mask-m".into(), 7)));
        assert_eq!(budget("lime-unk-100"), Some(("limeunk-n".into(), 100)));
        assert_eq!(budget("kernelshap-200"), Some(("kernelshap-unk-n".into(), 200)));
        assert_eq!(budget("smooth-gradl-l2-50-0.1"), Some(("smooth-gradl-l2-n-0.1".into(), 50)));
        assert_eq!(budget("gradl-l1"), None);
        assert_eq!(budget("random"), None);
        assert_eq!("lime-unk-100".parse::<Method>().map(|m| m.to_string()), Ok("limeunk-100".to_string()));
    }

    #[test]
    fn hatch_stays_inside_its_rectangle() {
        let lines = hatch_lines((40, 30), (10, 10));
        assert!(lines.len() >= 5, "{lines:?}");
        for [p, q] in &lines {
            for (x, y) in [p, q] {
                assert!((10..=40).contains(x) && (10..=30).contains(y), "{lines:?}");
            }
            // `/`: up and to the right.
            assert!(q.0 > p.0 && q.1 < p.1);
        }
        assert!(hatch_lines((5, 5), (5, 20)).is_empty());
    }

    #[test]
    fn colliding_stems_are_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let cells = [cell("a/b", "st", "gradl-l1", 0.5), cell("a_b", "st", "gradl-l1", 0.5)];
        let err = write_plots(tmp.path(), &cells, &[], &[]).unwrap_err();
        assert!(matches!(err, ReportError::NameCollision { .. }), "{err}");
        assert!(err.to_string().contains("precision_a_b_sst2"), "{err}");
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }
}
