//! `rationale_<dataset>_<manipulation>`: Zhou et al.'s Figures 10 and 11 —
//! a rationale's precision and recall (and, with non-correlating articles,
//! the share of them it selects) against the realised selection rate, one
//! marker per model (RL blue, CR orange, hollow where verification failed),
//! with the best any selection reaches at each rate: solid green with the
//! rate enforced over the test set, dashed green with it enforced per review.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::{Drawn, FONT, LABEL_PT, LegendEntry, MARGIN, Mark, PALETTE, TITLE_PT, X_AXIS_PX, draw_legend, label_style};
use super::{legend_width, marker};
use crate::rationale::{RationaleRow, rows};
use crate::tables::first_appearance;
use crate::{CellResult, VerificationRow};
use grid_methods::metrics::rationale::Optimal;
use grid_methods::shortcut::Regime;

const GREEN: RGBColor = RGBColor(44, 160, 44);
const PANEL_W: u32 = 330;
const PANEL_H: u32 = 360;

/// One panel's quantity.
#[derive(Clone, Copy, PartialEq)]
enum Quantity {
    Precision,
    Recall,
    NonCorrelating,
}

impl Quantity {
    fn title(self) -> &'static str {
        match self {
            Quantity::Precision => "precision",
            Quantity::Recall => "recall",
            Quantity::NonCorrelating => "non-corr. articles selected",
        }
    }

    fn of(self, row: &RationaleRow) -> Option<f64> {
        match self {
            Quantity::Precision => row.precision,
            Quantity::Recall => row.recall,
            Quantity::NonCorrelating => row.non_correlating,
        }
    }

    /// The optimum's coordinate for this panel (none for non-correlating).
    fn optimal(self, pair: (f64, f64)) -> Option<f64> {
        match self {
            Quantity::Precision => Some(pair.0),
            Quantity::Recall => Some(pair.1),
            Quantity::NonCorrelating => None,
        }
    }
}

/// One dataset and manipulation: its models' points and the optimal curves.
pub(super) struct RationaleChart {
    pub(super) title: String,
    panels: Vec<Quantity>,
    /// One per model with a realised rate.
    points: Vec<RationaleRow>,
    curve: Vec<(f64, Optimal)>,
    max_rate: f64,
}

/// Every chart the cells hold, with its stem.
pub(super) fn charts(cells: &[CellResult], verification: &[VerificationRow]) -> Vec<(String, RationaleChart)> {
    let rows = rows(cells, verification);
    first_appearance(rows.iter().map(|r| (r.dataset.clone(), r.shortcut)))
        .into_iter()
        .filter_map(|(dataset, shortcut)| {
            let points: Vec<RationaleRow> = rows
                .iter()
                .filter(|r| r.dataset == dataset && r.shortcut == shortcut && r.rate.is_some())
                .cloned()
                .collect();
            if points.is_empty() {
                return None;
            }
            // The examples are one test sample for every model of the grid:
            // the first curve stands for all.
            let curve = cells
                .iter()
                .filter(|c| c.key.dataset == dataset && c.key.shortcut == shortcut)
                .filter_map(|c| c.rationale.as_ref())
                .map(|r| r.optimal_curve.clone())
                .find(|c| !c.is_empty())
                .unwrap_or_default();
            let max_rate = points.iter().filter_map(|r| r.rate).fold(0.0f64, f64::max).max(0.05) * 1.3;
            let mut panels = vec![Quantity::Precision, Quantity::Recall];
            if matches!(shortcut, Regime::Shortcut(kind) if kind.has_distractors()) {
                panels.push(Quantity::NonCorrelating);
            }
            let stem = format!("rationale_{}_{}", crate::file_safe(&dataset), crate::file_safe(&shortcut.to_string()));
            let title = format!("{dataset} · {shortcut}: rationales against the realised %Sel");
            Some((stem, RationaleChart { title, panels, points, curve, max_rate }))
        })
        .collect()
}

impl RationaleChart {
    fn color(selector: &str) -> RGBColor {
        if selector == "RL" { PALETTE[0] } else { PALETTE[1] }
    }

    fn legend(&self) -> Vec<LegendEntry> {
        let mut entries = Vec::new();
        for selector in ["RL", "CR"] {
            if self.points.iter().any(|p| p.selector == selector) {
                entries.push(LegendEntry { mark: Mark::Line(Self::color(selector)), text: selector.into() });
            }
        }
        if !self.curve.is_empty() {
            entries.push(LegendEntry { mark: Mark::Line(GREEN), text: "optimal, rate over the set".into() });
            entries.push(LegendEntry { mark: Mark::Dashed(GREEN), text: "optimal, rate per review".into() });
        }
        if self.points.iter().any(|p| !p.verified) {
            entries.push(LegendEntry { mark: Mark::HollowMarker(GREEN), text: super::FAILED_NOTE.into() });
        }
        entries
    }

    pub(super) fn size(&self) -> (u32, u32) {
        (PANEL_W * self.panels.len() as u32 + legend_width(&self.legend()), PANEL_H)
    }

    pub(super) fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        let legend = self.legend();
        let (width, _) = root.dim_in_pixel();
        let (plot_area, legend_area) = root.split_horizontally(width.saturating_sub(legend_width(&legend)));
        let plot_area = plot_area.titled(&self.title, (FONT, TITLE_PT))?;
        for (quantity, area) in self.panels.iter().zip(plot_area.split_evenly((1, self.panels.len()))) {
            self.draw_panel(&area, *quantity)?;
        }
        draw_legend(&legend_area, &legend)
    }

    fn draw_panel<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>, quantity: Quantity) -> Drawn<DB> {
        let mut ctx = ChartBuilder::on(area)
            .caption(quantity.title(), (FONT, LABEL_PT + 2))
            .margin(MARGIN)
            .x_label_area_size(X_AXIS_PX)
            .y_label_area_size(44)
            .build_cartesian_2d(0f64..self.max_rate, 0f64..1.02f64)?;
        ctx.configure_mesh()
            .x_labels(5)
            .max_light_lines(1)
            .x_label_formatter(&|x| format!("{x:.2}"))
            .y_label_formatter(&|y| format!("{y:.1}"))
            .x_desc("realised %Sel")
            .label_style(label_style(LABEL_PT - 2))
            .axis_desc_style(label_style(LABEL_PT - 2))
            .draw()?;
        let within = |(rate, _): &&(f64, Optimal)| *rate <= self.max_rate;
        let line = |pick: fn(&Optimal) -> (f64, f64)| -> Vec<(f64, f64)> {
            self.curve
                .iter()
                .filter(within)
                .filter_map(|(rate, o)| quantity.optimal(pick(o)).map(|v| (*rate, v.clamp(0.0, 1.0))))
                .collect()
        };
        let (set, review) = (line(|o| o.dataset), line(|o| o.per_review));
        if !set.is_empty() {
            ctx.draw_series(std::iter::once(PathElement::new(set, GREEN.stroke_width(2))))?;
            ctx.draw_series(std::iter::once(DashedPathElement::new(review, 6, 4, GREEN.stroke_width(2))))?;
        }
        for point in &self.points {
            let (Some(rate), Some(value)) = (point.rate, quantity.of(point)) else { continue };
            let color = Self::color(point.selector);
            ctx.draw_series(marker((rate, value.clamp(0.0, 1.0)), color, point.verified, 5))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RationaleResult;
    use grid_core::model::rationale::{RationaleSetting, SelectorKind};

    fn cell(model: &str, selector: SelectorKind, metric: &str, value: f64, shortcut: &str) -> CellResult {
        let optimal = Optimal { dataset: (1.0, 0.8), per_review: (0.9, 0.7) };
        use crate::testing::CellChanges;
        let cell = crate::testing::cell(model, shortcut, "rationale", metric, value)
            .on("gen")
            .architecture(grid_core::model::Architecture::Rationale);
        CellResult {
            rationale: Some(RationaleResult {
                setting: RationaleSetting { selector, selection_rate: 0.09 },
                pooled: Some(value),
                rate: Some(0.08),
                optimal: Some(optimal),
                optimal_curve: vec![(0.05, optimal), (0.1, optimal)],
            }),
            ..cell
        }
    }

    /// One chart per manipulation; CN / NC get the third panel.
    #[test]
    fn one_chart_per_manipulation_with_its_panels() {
        let mut cells = Vec::new();
        for shortcut in ["articles", "articles-nc"] {
            for (model, selector) in [("rl", SelectorKind::Rl), ("cr", SelectorKind::Hardkuma)] {
                for metric in ["sel-precision", "sel-recall", "sel-rate"] {
                    cells.push(cell(model, selector, metric, 0.8, shortcut));
                }
            }
        }
        cells.push(cell("rl", SelectorKind::Rl, "sel-noncorr", 0.2, "articles-nc"));
        let charts = charts(&cells, &[]);
        let stems: Vec<&str> = charts.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(stems, ["rationale_gen_articles", "rationale_gen_articles-nc"]);
        assert_eq!(charts[0].1.panels.len(), 2);
        assert_eq!(charts[1].1.panels.len(), 3);
        assert_eq!(charts[0].1.points.len(), 2);
        let entries: Vec<String> = charts[0].1.legend().into_iter().map(|e| e.text).collect();
        assert_eq!(entries, ["RL", "CR", "optimal, rate over the set", "optimal, rate per review"]);
    }
}
