//! Zhou et al.'s sweeps, per method (a row of panels) and manipulation (a
//! column): `Attr%(φ∪)`, the mean over a sweep's models, blue where the
//! manipulation is present and orange where absent (hollow where the models
//! failed verification), against
//! - the manipulation's visibility level (`zhou_images_attr_visibility`,
//!   Figure 5, §5.3), at `r = 0.5`;
//! - the label reassignment's `r` (`zhou_images_attr_r`, Figure 6, §5.4),
//!   at the middle visibility, with in green the range the normalised
//!   Shapley value of the manipulated features allows a perfect classifier,
//!   `v̄(F_M) ≥ 1.5 − r` (the paper's Eq. 3 at p = 1). Near `r = 1` the
//!   labels alone allow the accuracy, so no luck test can pass.

use grid_methods::salience::image::PixelMethod;
use grid_methods::shortcut::image::ManipulationKind;
use grid_methods::shortcut::image::Visibility;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::images::{Panels, XAxis, attr_axes, grid_size};
use super::{Drawn, LegendEntry, Mark, PALETTE, marker};
use crate::images::{ImageAttrRow, ImageClass};
use crate::tables::first_appearance;

const GREEN: RGBColor = RGBColor(44, 160, 44);
/// GREEN at 20% over white, as the band is drawn.
const PALE_GREEN: RGBColor = RGBColor(213, 236, 213);

/// What a sweep varies: the chart's x axis.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Axis {
    Visibility,
    KeepProbability,
}

impl Axis {
    /// A trained model's place on the axis; `None` for a model this sweep
    /// does not hold (the other sweep's, away from its fixed value).
    fn of(self, row: &ImageAttrRow) -> Option<f64> {
        match self {
            Axis::Visibility => {
                (row.keep_probability == 0.5).then_some(row.visibility).flatten().map(|v| f64::from(v.get()))
            }
            Axis::KeepProbability => {
                matches!(row.visibility, None | Some(Visibility::MIDDLE)).then_some(row.keep_probability)
            }
        }
    }

    fn stem(self) -> &'static str {
        match self {
            Axis::Visibility => "zhou_images_attr_visibility",
            Axis::KeepProbability => "zhou_images_attr_r",
        }
    }

    fn title(self) -> &'static str {
        match self {
            Axis::Visibility => "Attr% against visibility (Zhou et al. Figure 5)",
            Axis::KeepProbability => "Attr% against r (Zhou et al. Figure 6)",
        }
    }

    fn range(self) -> std::ops::Range<f64> {
        match self {
            Axis::Visibility => 0.7..5.3,
            Axis::KeepProbability => 0.48..1.02,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Axis::Visibility => "visibility",
            Axis::KeepProbability => "r",
        }
    }
}

pub(super) struct SweepChart {
    pub(super) title: String,
    axis: Axis,
    methods: Vec<PixelMethod>,
    manipulations: Vec<ManipulationKind>,
    rows: Vec<ImageAttrRow>,
}

/// A chart per sweep the grid has (trained models at two values or more).
pub(super) fn charts(rows: &[ImageAttrRow]) -> Vec<(String, SweepChart)> {
    [Axis::Visibility, Axis::KeepProbability].into_iter().filter_map(|axis| chart(rows, axis)).collect()
}

fn chart(rows: &[ImageAttrRow], axis: Axis) -> Option<(String, SweepChart)> {
    let rows: Vec<ImageAttrRow> =
        rows.iter().filter(|r| r.checkpoint.is_none() && axis.of(r).is_some()).cloned().collect();
    let mut xs: Vec<f64> = rows.iter().filter_map(|r| axis.of(r)).collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    if xs.len() < 2 {
        return None;
    }
    let chart = SweepChart {
        title: axis.title().into(),
        axis,
        methods: first_appearance(rows.iter().map(|r| r.method)),
        manipulations: first_appearance(rows.iter().map(|r| r.manipulation)),
        rows,
    };
    Some((axis.stem().into(), chart))
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
        if self.axis == Axis::KeepProbability {
            entries.push(LegendEntry { mark: Mark::Bar(PALE_GREEN), text: "Shapley range: ≥ 1.5 − r".into() });
        }
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
        method: PixelMethod,
        manipulation: ManipulationKind,
    ) -> Drawn<DB> {
        let levels = self.axis == Axis::Visibility;
        let x = XAxis {
            range: self.axis.range(),
            labels: if levels { 5 } else { 3 },
            decimals: if levels { 0 } else { 1 },
            name: self.axis.describe(),
        };
        let mut ctx = attr_axes(area, &format!("{method} · {manipulation}"), x, "Attr%")?;
        if self.axis == Axis::KeepProbability {
            ctx.draw_series(std::iter::once(Polygon::new(
                vec![(0.5, 1.0), (1.0, 0.5), (1.0, 1.0)],
                GREEN.mix(0.2).filled(),
            )))?;
        }
        let of_cell: Vec<&ImageAttrRow> =
            self.rows.iter().filter(|r| r.method == method && r.manipulation == manipulation).collect();
        for class in ImageClass::BOTH {
            let mut xs: Vec<f64> =
                of_cell.iter().filter(|r| r.class == class).filter_map(|r| self.axis.of(r)).collect();
            xs.sort_by(f64::total_cmp);
            xs.dedup();
            // At each value, the mean over its models; filled when all passed verification.
            let points: Vec<(f64, f64, bool)> = xs
                .iter()
                .map(|&v| {
                    let at: Vec<&&ImageAttrRow> =
                        of_cell.iter().filter(|x| x.class == class && self.axis.of(x) == Some(v)).collect();
                    let mean = at.iter().map(|x| x.attr).sum::<f64>() / at.len() as f64;
                    (v, mean.clamp(0.0, 1.0), at.iter().all(|x| x.verified))
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
        assert!(charts(&rows).is_empty(), "one r: no sweep");
        for r in [0.7, 0.9] {
            let mut x = row("gradient", "watermark", ImageClass::Manipulated, 0.6, r < 0.8);
            x.keep_probability = r;
            rows.push(x);
        }
        let charts = charts(&rows);
        let [(stem, chart)] = &charts[..] else { panic!("one sweep: {}", charts.len()) };
        assert_eq!(stem, "zhou_images_attr_r");
        assert_eq!((chart.methods.len(), chart.manipulations.len(), chart.rows.len()), (1, 1, 3));
        let legend: Vec<String> = chart.legend().into_iter().map(|e| e.text).collect();
        assert!(legend.iter().any(|t| t.contains("1.5 − r")), "{legend:?}");
    }

    /// Both sweeps in one grid: each chart holds the other's variable at
    /// its fixed value (r = 0.5, the middle visibility).
    #[test]
    fn each_sweep_reads_the_other_at_its_fixed_value() {
        let at = |visibility: u8, r: f64| {
            let mut x = row("lime", "noise", ImageClass::Untouched, 0.4, true);
            (x.visibility, x.keep_probability) = (Some(Visibility::try_from(visibility).unwrap()), r);
            x
        };
        let rows = vec![at(1, 0.5), at(3, 0.5), at(5, 0.5), at(3, 0.9), at(5, 0.9)];
        let charts = charts(&rows);
        let stems: Vec<&str> = charts.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(stems, ["zhou_images_attr_visibility", "zhou_images_attr_r"]);
        let held = |c: &SweepChart| {
            c.rows.iter().map(|r| (r.visibility.unwrap().get(), r.keep_probability)).collect::<Vec<_>>()
        };
        assert_eq!(held(&charts[0].1), [(1, 0.5), (3, 0.5), (5, 0.5)]);
        assert_eq!(held(&charts[1].1), [(3, 0.5), (3, 0.9)]);
        let legend: Vec<String> = charts[0].1.legend().into_iter().map(|e| e.text).collect();
        assert!(!legend.iter().any(|t| t.contains("1.5 − r")), "no Shapley band against visibility: {legend:?}");
    }
}
