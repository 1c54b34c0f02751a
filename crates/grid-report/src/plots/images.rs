//! `zhou_images_attr_er`: Zhou et al.'s Figures 3 and 13 — per method (a
//! row of panels) and manipulation (a column), each model's `Attr%(φ∪)`
//! against `%ER`, blue on the manipulated test images and orange on the
//! untouched ones (hollow where the model failed verification), with the
//! ideal `Attr% = 1` (green) and a map spread evenly, `Attr% = %ER` (red).

use grid_methods::salience::image::PixelMethod;
use grid_methods::shortcut::image::ManipulationKind;
use std::ops::Range;

use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

use super::{
    Drawn, FAILED_NOTE, FONT, LABEL_PT, LegendEntry, MARGIN, Mark, PALETTE, TITLE_PT, draw_legend, label_style,
};
use super::{legend_width, marker};
use crate::images::{ImageAttrRow, ImageClass};
use crate::tables::first_appearance;

const GREEN: RGBColor = RGBColor(44, 160, 44);
const RED: RGBColor = RGBColor(214, 39, 40);
const PANEL_W: u32 = 220;
const PANEL_H: u32 = 200;
const CAPTION_PX: u32 = 44;

/// The chart of a grid's image rows.
pub(super) struct ImageChart {
    pub(super) title: String,
    methods: Vec<PixelMethod>,
    manipulations: Vec<ManipulationKind>,
    rows: Vec<ImageAttrRow>,
}

/// The chart, when there are image rows.
pub(super) fn chart(rows: &[ImageAttrRow]) -> Option<(String, ImageChart)> {
    if rows.is_empty() {
        return None;
    }
    let chart = ImageChart {
        title: "Attr% against %ER (Zhou et al. Figures 3 and 13)".into(),
        methods: first_appearance(rows.iter().map(|r| r.method)),
        manipulations: first_appearance(rows.iter().map(|r| r.manipulation)),
        rows: rows.to_vec(),
    };
    Some(("zhou_images_attr_er".into(), chart))
}

/// A chart of a panel per method (rows) and manipulation (columns), with a
/// legend on the right: Figures 3 and 6.
pub(super) struct Panels<'a> {
    pub(super) title: &'a str,
    pub(super) methods: &'a [PixelMethod],
    pub(super) manipulations: &'a [ManipulationKind],
}

/// The size of [`Panels`] of `methods` × `manipulations` beside `legend`.
pub(super) fn grid_size(
    methods: &[PixelMethod],
    manipulations: &[ManipulationKind],
    legend: &[LegendEntry],
) -> (u32, u32) {
    let width = PANEL_W * manipulations.len() as u32 + legend_width(legend);
    (width, CAPTION_PX + PANEL_H * methods.len() as u32)
}

impl Panels<'_> {
    pub(super) fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        legend: &[LegendEntry],
        panel: impl Fn(&DrawingArea<DB, Shift>, PixelMethod, ManipulationKind) -> Drawn<DB>,
    ) -> Drawn<DB> {
        // The title spans the legend too: over one column of panels alone it
        // would not fit.
        let body = root.titled(self.title, (FONT, TITLE_PT))?;
        let (width, _) = body.dim_in_pixel();
        let (plot_area, legend_area) = body.split_horizontally(width.saturating_sub(legend_width(legend)));
        let columns = self.manipulations.len();
        for (i, area) in plot_area.split_evenly((self.methods.len(), columns)).iter().enumerate() {
            panel(area, self.methods[i / columns], self.manipulations[i % columns])?;
        }
        draw_legend(&legend_area, legend)
    }
}

/// The x axis of an image figure's panel.
pub(super) struct XAxis<'a> {
    pub(super) range: Range<f64>,
    /// Tick labels along it, and their decimals.
    pub(super) labels: usize,
    pub(super) decimals: usize,
    pub(super) name: &'a str,
}

/// A panel of an image figure, Attr% against a quantity on the x axis.
pub(super) type AttrPanel<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// A panel's axes as every image figure draws them (Figures 3 to 6):
/// `caption` above, `x` along the bottom, Attr% from 0 to 1 up the side,
/// named `y_name`.
pub(super) fn attr_axes<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    caption: &str,
    x: XAxis,
    y_name: &str,
) -> Result<AttrPanel<'a, DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut ctx = ChartBuilder::on(area)
        .caption(caption, (FONT, LABEL_PT))
        .margin(MARGIN / 2)
        .x_label_area_size(32)
        .y_label_area_size(36)
        .build_cartesian_2d(x.range, 0f64..1.02f64)?;
    let decimals = x.decimals;
    ctx.configure_mesh()
        .x_labels(x.labels)
        .y_labels(3)
        .max_light_lines(1)
        .x_label_formatter(&|v| format!("{v:.decimals$}"))
        .y_label_formatter(&|y| format!("{y:.1}"))
        .x_desc(x.name)
        .y_desc(y_name)
        .label_style(label_style(LABEL_PT - 3))
        .axis_desc_style(label_style(LABEL_PT - 3))
        .draw()?;
    Ok(ctx)
}

impl ImageChart {
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
        entries.push(LegendEntry { mark: Mark::Line(GREEN), text: "ideal: Attr% = 1".into() });
        entries.push(LegendEntry { mark: Mark::Dashed(RED), text: "even map: Attr% = %ER".into() });
        if self.rows.iter().any(|r| !r.verified) {
            entries.push(LegendEntry { mark: Mark::HollowMarker(GREEN), text: FAILED_NOTE.into() });
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
        method: PixelMethod,
        manipulation: ManipulationKind,
    ) -> Drawn<DB> {
        let x = XAxis { range: 0f64..1f64, labels: 3, decimals: 1, name: "%ER" };
        let mut ctx = attr_axes(area, &format!("{method} · {manipulation}"), x, "Attr%")?;
        ctx.draw_series(std::iter::once(PathElement::new(vec![(0.0, 1.0), (1.0, 1.0)], GREEN.stroke_width(2))))?;
        ctx.draw_series(std::iter::once(DashedPathElement::new(
            vec![(0.0, 0.0), (1.0, 1.0)],
            6,
            4,
            RED.stroke_width(2),
        )))?;
        for row in self.rows.iter().filter(|r| r.method == method && r.manipulation == manipulation) {
            let xy = (row.region_share.clamp(0.0, 1.0), row.attr.clamp(0.0, 1.0));
            ctx.draw_series(marker(xy, Self::color(row.class), row.verified, 4))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::ImageClass::{Manipulated, Untouched};
    use crate::images::tests::row;

    #[test]
    fn one_panel_per_method_and_manipulation_and_a_legend_for_what_is_drawn() {
        let rows = vec![
            row("gradient", "watermark", Manipulated, 0.5, true),
            row("gradient", "watermark", Untouched, 0.3, true),
            row("lime", "blur", Manipulated, 0.2, false),
        ];
        let (stem, chart) = chart(&rows).unwrap();
        assert_eq!(stem, "zhou_images_attr_er");
        assert_eq!((chart.methods.len(), chart.manipulations.len()), (2, 2));
        let legend: Vec<String> = chart.legend().into_iter().map(|e| e.text).collect();
        assert_eq!(
            legend,
            ["manipulated images", "untouched images", "ideal: Attr% = 1", "even map: Attr% = %ER", FAILED_NOTE]
        );
        let (w, h) = chart.size();
        assert!(w > 2 * PANEL_W && h == CAPTION_PX + 2 * PANEL_H, "{w}×{h}");
        assert!(super::chart(&[]).is_none());
    }

    #[test]
    fn it_is_drawn_as_svg_and_png() {
        let rows =
            vec![row("gradient", "watermark", Manipulated, 0.5, true), row("lime", "watermark", Untouched, 0.3, false)];
        let dir = tempfile::tempdir().unwrap();
        let plots = crate::plots::write_plots(dir.path(), &[], &[], &rows).unwrap();
        assert_eq!(plots.len(), 1);
        assert!(plots[0].svg.contains("gradient · watermark") && plots[0].svg.contains("%ER"));
        assert!(dir.path().join("zhou_images_attr_er.png").is_file());
    }
}
