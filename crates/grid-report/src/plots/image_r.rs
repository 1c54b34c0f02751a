//! `zhou_images_attr_r`: Zhou et al.'s Figure 6 — per method (a row of
//! panels) and manipulation (a column), `Attr%(φ∪)` against the label
//! reassignment's `r`, the mean over a sweep's models, blue where the
//! manipulation is present and orange where absent (hollow where the
//! models failed verification: near `r = 1` the labels alone allow the
//! accuracy, so no luck test can pass), and in green the range the
//! normalised Shapley value of the manipulated features allows a perfect
//! classifier, `v̄(F_M) ≥ 1.5 − r` (the paper's Eq. 3 at p = 1).

use plotters::coord::Shift;
use plotters::prelude::*;

use super::images::{Panels, grid_size};
use super::{Drawn, FONT, LABEL_PT, LegendEntry, MARGIN, Mark, PALETTE, label_style, marker};
use crate::images::{ImageAttrRow, ImageClass};
use crate::tables::first_appearance;

const GREEN: RGBColor = RGBColor(44, 160, 44);
/// GREEN at 20% over white, as the band is drawn.
const PALE_GREEN: RGBColor = RGBColor(213, 236, 213);

pub(super) struct SweepChart {
    pub(super) title: String,
    methods: Vec<String>,
    manipulations: Vec<String>,
    rows: Vec<ImageAttrRow>,
}

/// The chart, when the grid sweeps `r` (trained models at two values or more).
pub(super) fn chart(rows: &[ImageAttrRow]) -> Option<(String, SweepChart)> {
    let rows: Vec<ImageAttrRow> = rows.iter().filter(|r| r.checkpoint.is_none()).cloned().collect();
    let mut rs: Vec<f64> = rows.iter().map(|r| r.keep_probability).collect();
    rs.sort_by(f64::total_cmp);
    rs.dedup();
    if rs.len() < 2 {
        return None;
    }
    let chart = SweepChart {
        title: "Attr% against r (Zhou et al. Figure 6)".into(),
        methods: first_appearance(rows.iter().map(|r| r.method.clone())),
        manipulations: first_appearance(rows.iter().map(|r| r.manipulation.clone())),
        rows,
    };
    Some(("zhou_images_attr_r".into(), chart))
}

impl SweepChart {
    fn color(class: ImageClass) -> RGBColor {
        match class {
            ImageClass::Manipulated => PALETTE[0],
            ImageClass::Untouched => PALETTE[1],
        }
    }

    fn legend(&self) -> Vec<LegendEntry> {
        let mut entries: Vec<LegendEntry> = ImageClass::BOTH
            .into_iter()
            .filter(|c| self.rows.iter().any(|r| r.class == *c))
            .map(|c| LegendEntry { mark: Mark::Line(Self::color(c)), text: format!("{} images", c.name()) })
            .collect();
        entries.push(LegendEntry { mark: Mark::Bar(PALE_GREEN), text: "Shapley range: ≥ 1.5 − r".into() });
        if self.rows.iter().any(|r| !r.verified) {
            entries.push(LegendEntry { mark: Mark::HollowMarker(GREEN), text: super::FAILED_NOTE.into() });
        }
        entries
    }

    pub(super) fn size(&self) -> (u32, u32) {
        grid_size(&self.methods, &self.manipulations, &self.legend())
    }

    pub(super) fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn<DB> {
        let panels = Panels { title: &self.title, methods: &self.methods, manipulations: &self.manipulations };
        panels.draw(root, &self.legend(), |area, method, manipulation| self.draw_panel(area, method, manipulation))
    }

    fn draw_panel<DB: DrawingBackend>(
        &self,
        area: &DrawingArea<DB, Shift>,
        method: &str,
        manipulation: &str,
    ) -> Drawn<DB> {
        let mut ctx = ChartBuilder::on(area)
            .caption(format!("{method} · {manipulation}"), (FONT, LABEL_PT))
            .margin(MARGIN / 2)
            .x_label_area_size(32)
            .y_label_area_size(36)
            .build_cartesian_2d(0.48f64..1.02f64, 0f64..1.02f64)?;
        ctx.configure_mesh()
            .x_labels(3)
            .y_labels(3)
            .max_light_lines(1)
            .x_label_formatter(&|x| format!("{x:.1}"))
            .y_label_formatter(&|y| format!("{y:.1}"))
            .x_desc("r")
            .y_desc("Attr%")
            .label_style(label_style(LABEL_PT - 3))
            .axis_desc_style(label_style(LABEL_PT - 3))
            .draw()?;
        ctx.draw_series(std::iter::once(Polygon::new(
            vec![(0.5, 1.0), (1.0, 0.5), (1.0, 1.0)],
            GREEN.mix(0.2).filled(),
        )))?;
        let of_cell: Vec<&ImageAttrRow> =
            self.rows.iter().filter(|r| r.method == method && r.manipulation == manipulation).collect();
        for class in ImageClass::BOTH {
            let mut rs: Vec<f64> = of_cell.iter().filter(|r| r.class == class).map(|r| r.keep_probability).collect();
            rs.sort_by(f64::total_cmp);
            rs.dedup();
            // At each r, the mean over its models; filled when all passed verification.
            let points: Vec<(f64, f64, bool)> = rs
                .iter()
                .map(|&r| {
                    let at: Vec<&&ImageAttrRow> =
                        of_cell.iter().filter(|x| x.class == class && x.keep_probability == r).collect();
                    let mean = at.iter().map(|x| x.attr).sum::<f64>() / at.len() as f64;
                    (r, mean.clamp(0.0, 1.0), at.iter().all(|x| x.verified))
                })
                .collect();
            let color = Self::color(class);
            ctx.draw_series(std::iter::once(PathElement::new(
                points.iter().map(|&(x, y, _)| (x, y)).collect::<Vec<_>>(),
                color.stroke_width(2),
            )))?;
            for (x, y, verified) in points {
                ctx.draw_series(marker((x, y), color, verified, 4))?;
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
    fn drawn_only_for_a_sweep_a_panel_per_method_and_manipulation() {
        let mut rows = vec![row("gradient", "watermark", ImageClass::Manipulated, 0.7, true)];
        assert!(chart(&rows).is_none(), "one r: no sweep");
        for r in [0.7, 0.9] {
            let mut x = row("gradient", "watermark", ImageClass::Manipulated, 0.6, r < 0.8);
            x.keep_probability = r;
            rows.push(x);
        }
        let (stem, chart) = chart(&rows).unwrap();
        assert_eq!(stem, "zhou_images_attr_r");
        assert_eq!((chart.methods.len(), chart.manipulations.len(), chart.rows.len()), (1, 1, 3));
        let legend: Vec<String> = chart.legend().into_iter().map(|e| e.text).collect();
        assert!(legend.iter().any(|t| t.contains("1.5 − r")), "{legend:?}");
    }
}
