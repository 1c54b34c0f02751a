//! `zhou_images_attr_accuracy`: Zhou et al.'s Figure 4 — per method (a
//! panel), each model's `Attr%(φ∪)` on manipulated test images against its
//! test accuracy at the checkpoints met during training, a line per model
//! coloured by manipulation, in the order of the steps (filled where the
//! checkpoint passes verification). The paper finds that `Attr%` rises
//! with accuracy consistently only for SHAP on the watermark.

use grid_methods::salience::image::PixelMethod;
use grid_methods::shortcut::image::ManipulationKind;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::images::{XAxis, attr_axes};
use super::{Drawn, FONT, LegendEntry, Mark, PALETTE, TITLE_PT, draw_legend};
use super::{legend_width, marker};
use crate::images::{ImageAttrRow, ImageClass};
use crate::tables::first_appearance;

const PANEL_W: u32 = 260;
const PANEL_H: u32 = 240;
const CAPTION_PX: u32 = 44;

pub(super) struct TrainingChart {
    pub(super) title: String,
    methods: Vec<PixelMethod>,
    manipulations: Vec<ManipulationKind>,
    /// The checkpoints' rows on manipulated images.
    rows: Vec<ImageAttrRow>,
}

/// The chart, when the grid explained checkpoints.
pub(super) fn chart(rows: &[ImageAttrRow]) -> Option<(String, TrainingChart)> {
    let rows: Vec<ImageAttrRow> =
        rows.iter().filter(|r| r.checkpoint.is_some() && r.class == ImageClass::Manipulated).cloned().collect();
    if rows.is_empty() {
        return None;
    }
    let chart = TrainingChart {
        title: "Attr% against test accuracy during training (Zhou et al. Figure 4)".into(),
        methods: first_appearance(rows.iter().map(|r| r.method)),
        manipulations: first_appearance(rows.iter().map(|r| r.manipulation)),
        rows,
    };
    Some(("zhou_images_attr_accuracy".into(), chart))
}

impl TrainingChart {
    fn color(&self, manipulation: ManipulationKind) -> RGBColor {
        let i = self.manipulations.iter().position(|&m| m == manipulation).unwrap_or(0);
        PALETTE[i % PALETTE.len()]
    }

    fn legend(&self) -> Vec<LegendEntry> {
        self.manipulations
            .iter()
            .map(|m| LegendEntry { mark: Mark::Line(self.color(*m)), text: m.to_string() })
            .collect()
    }

    pub(super) fn size(&self) -> (u32, u32) {
        (PANEL_W * self.methods.len() as u32 + legend_width(&self.legend()), CAPTION_PX + PANEL_H)
    }

    pub(super) fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        let legend = self.legend();
        let (width, _) = root.dim_in_pixel();
        let (plot_area, legend_area) = root.split_horizontally(width.saturating_sub(legend_width(&legend)));
        let plot_area = plot_area.titled(&self.title, (FONT, TITLE_PT))?;
        let panels = plot_area.split_evenly((1, self.methods.len()));
        for (area, method) in panels.iter().zip(&self.methods) {
            self.draw_panel(area, *method)?;
        }
        draw_legend(&legend_area, &legend)
    }

    fn draw_panel<DB: DrawingBackend>(&self, area: &DrawingArea<DB, Shift>, method: PixelMethod) -> Drawn<DB> {
        let of_method: Vec<&ImageAttrRow> = self.rows.iter().filter(|r| r.method == method).collect();
        // Accuracy starts near chance: the axis from the lowest one seen.
        let low = of_method.iter().map(|r| r.accuracy).fold(1.0, f64::min).min(0.5);
        let x = XAxis { range: (low - 0.02)..1.02f64, labels: 4, decimals: 1, name: "test accuracy" };
        let mut ctx = attr_axes(area, method.name(), x, "Attr% (manipulated)")?;
        let series = first_appearance(of_method.iter().map(|r| (r.manipulation, r.model.clone(), r.seed)));
        for (manipulation, model, seed) in series {
            let mut points: Vec<&&ImageAttrRow> = of_method
                .iter()
                .filter(|r| r.manipulation == manipulation && r.model == model && r.seed == seed)
                .collect();
            points.sort_by_key(|r| r.checkpoint);
            let color = self.color(manipulation);
            let xy: Vec<(f64, f64)> = points.iter().map(|r| (r.accuracy, r.attr.clamp(0.0, 1.0))).collect();
            ctx.draw_series(std::iter::once(PathElement::new(xy.clone(), color.stroke_width(2))))?;
            for (point, row) in xy.into_iter().zip(&points) {
                ctx.draw_series(marker(point, color, row.verified, 4))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::tests::row;

    #[test]
    fn only_checkpoints_are_drawn_a_panel_per_method() {
        let mut rows = vec![row("gradient", "watermark", ImageClass::Manipulated, 0.5, true)];
        assert!(chart(&rows).is_none(), "a trained model alone is Figure 3's");
        for (method, step) in [("gradient", 100), ("gradient", 200), ("lime", 100)] {
            let mut r = row(method, "watermark", ImageClass::Manipulated, 0.4, false);
            r.checkpoint = Some(step);
            rows.push(r);
        }
        let (stem, chart) = chart(&rows).unwrap();
        assert_eq!(stem, "zhou_images_attr_accuracy");
        assert_eq!((chart.methods.len(), chart.rows.len()), (2, 3));
        assert_eq!(chart.size().1, CAPTION_PX + PANEL_H);
    }
}
