// SPDX-License-Identifier: MPL-2.0
//! `--plot FILE.png|FILE.svg`: per-frame curves, one panel per panel the registry gives the
//! fields (`Field::panel`: PSNR in dB, the SSIM family on its 0..1 scale, ...; fields without
//! one, MSE, are left out; a field unknown to it gets a panel of its own), each field's
//! mean as a dashed line of the same colour, axes labels and a legend beside the chart
//! (inside it, a legend hides the curves it explains). The x axis is the frame number
//! (the records' `frame`: 0, N, 2N with `--every N`). Drawn with plotters;
//! text needs a TrueType font, read at run time (pure Rust, no fontconfig): `GPUMETRICS_FONT`
//! or DejaVu Sans / Liberation Sans / FreeSans from their usual Debian paths.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::{Result, anyhow, bail};
use gstgpumetrics::message::{FrameScores, Summary};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::fields;

/// Environment variable naming a .ttf file for the plot's text.
pub const FONT_ENV: &str = "GPUMETRICS_FONT";

const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
];

const WIDTH: u32 = 1160;
/// Width of the legend column right of each chart.
const LEGEND_WIDTH: u32 = 230;

/// Line colours (the "tab10" palette: distinct, and readable on white).
const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];
const PANEL_HEIGHT: u32 = 240;

/// Registers a font as plotters' `sans-serif` once.
fn register_font() -> Result<()> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        let env = std::env::var(FONT_ENV).ok();
        let candidates = env
            .iter()
            .map(String::as_str)
            .chain(FONT_PATHS.iter().copied());
        for path in candidates {
            if let Ok(bytes) = std::fs::read(path) {
                // plotters keeps the font for the whole process.
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return Ok(());
                }
            }
        }
        Err(format!(
            "--plot needs a TrueType font for its text: install fonts-dejavu-core (Debian) or \
             set {FONT_ENV}=/path/to/font.ttf"
        ))
    })
    .clone()
    .map_err(|e| anyhow!(e))
}

/// One panel: a title with the unit and the fields drawn in it.
#[derive(Debug, PartialEq)]
pub struct Panel {
    pub title: String,
    /// The y axis is fixed to 0..1 (all its fields say so).
    pub unit_interval: bool,
    pub fields: Vec<String>,
}

/// Groups the fields into the registry's panels, in the order of their first field; fields
/// the registry does not plot are left out.
pub fn panels(fields: &[String]) -> Vec<Panel> {
    let mut out: Vec<Panel> = Vec::new();
    for f in fields {
        let Some((title, unit_interval)) = fields::panel(f) else {
            continue;
        };
        match out.iter_mut().find(|p| p.title == title) {
            Some(p) => {
                p.unit_interval &= unit_interval;
                p.fields.push(f.clone());
            }
            None => out.push(Panel {
                title,
                unit_interval,
                fields: vec![f.clone()],
            }),
        }
    }
    out
}

/// Runs of consecutive finite points (a PSNR of identical frames is +inf: a gap).
fn finite_runs(points: &[(f64, f64)]) -> Vec<Vec<(f64, f64)>> {
    let mut runs = vec![Vec::new()];
    for &(x, y) in points {
        if y.is_finite() {
            runs.last_mut().expect("never empty").push((x, y));
        } else if !runs.last().is_some_and(Vec::is_empty) {
            runs.push(Vec::new());
        }
    }
    runs.retain(|r| !r.is_empty());
    runs
}

/// The frames of one distorted input and their summary; `label` names the input when the
/// plot has several (then each panel has one field, and a line per input named by it).
pub struct Curves<'a> {
    pub label: Option<&'a str>,
    pub records: &'a [FrameScores],
    pub summary: &'a Summary,
}

/// A line: its field, the index of its input in the curves, its points.
type Series<'a> = (&'a str, usize, Vec<(f64, f64)>);

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    curves: &[Curves],
    panels: &[Panel],
    title: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| anyhow!("drawing the plot: {e}");
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 22)).map_err(err)?;
    let areas = root.split_evenly((panels.len(), 1));
    let frames = curves
        .iter()
        .flat_map(|c| c.records.iter().map(|r| r.frame as f64));
    let (x_min, x_max) = frames.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), x| {
        (lo.min(x), hi.max(x))
    });
    let x_min = if x_min.is_finite() { x_min } else { 0.0 };
    let x_max = x_max.max(x_min + 1.0);
    for (panel, area) in panels.iter().zip(areas) {
        let (area, legend) = area.split_horizontally(WIDTH - LEGEND_WIDTH);
        let mut series: Vec<Series> = Vec::new();
        for f in &panel.fields {
            for (c, curve) in curves.iter().enumerate() {
                let pts: Vec<(f64, f64)> = curve
                    .records
                    .iter()
                    .filter_map(|r| r.get(f).map(|v| (r.frame as f64, v)))
                    .collect();
                // `ssim` is `ssim-y` under its customary name: draw one line, not two on top.
                if !series.iter().any(|(_, sc, p)| *sc == c && *p == pts) {
                    series.push((f.as_str(), c, pts));
                }
            }
        }
        let finite = series
            .iter()
            .flat_map(|(_, _, p)| p.iter().map(|&(_, y)| y))
            .filter(|y| y.is_finite());
        let (lo, hi) = finite.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), y| {
            (lo.min(y), hi.max(y))
        });
        let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
        let pad = ((hi - lo) * 0.08).max(1e-3);
        let (mut y0, mut y1) = (lo - pad, hi + pad);
        if panel.unit_interval {
            y1 = y1.min(1.0);
            y0 = y0.max(0.0).min(y1 - 1e-3);
        }
        let mut chart = ChartBuilder::on(&area)
            .caption(&panel.title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(70)
            .build_cartesian_2d(x_min..x_max, y0..y1)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("frame")
            // No more labels than frame numbers, which are whole.
            .x_labels(((x_max - x_min) as usize + 1).clamp(2, 10))
            .x_label_formatter(&|x| format!("{x:.0}"))
            .y_desc(&panel.title)
            .label_style(("sans-serif", 14))
            .axis_desc_style(("sans-serif", 15))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(err)?;
        for (i, (field, c, pts)) in series.iter().enumerate() {
            let color = COLOURS[i % COLOURS.len()];
            let mean = curves[*c].summary.field(field).map(|s| s.mean);
            for run in finite_runs(pts) {
                chart
                    .draw_series(LineSeries::new(run, color.stroke_width(2)))
                    .map_err(err)?;
            }
            if let Some(m) = mean.filter(|m| m.is_finite() && (y0..=y1).contains(m)) {
                chart
                    .draw_series(DashedLineSeries::new(
                        [(x_min, m), (x_max, m)],
                        8,
                        5,
                        color.stroke_width(1),
                    ))
                    .map_err(err)?;
            }
            // The legend: a line of the colour, the field and its mean, one row each.
            // With several inputs a panel has one field: the line is the input's.
            let name = curves[*c].label.unwrap_or(field).to_string();
            let label = match mean {
                Some(m) => format!("{name}, mean {}", fields::format(field, m)),
                None => name,
            };
            let y = 40 + 22 * i as i32;
            legend
                .draw(&PathElement::new(
                    vec![(8, y), (32, y)],
                    color.stroke_width(2),
                ))
                .map_err(err)?;
            legend
                .draw(&Text::new(
                    label,
                    (40, y - 8),
                    ("sans-serif", 14).into_font().color(&BLACK),
                ))
                .map_err(err)?;
        }
    }
    root.present().map_err(err)?;
    Ok(())
}

/// Draws the plot of several inputs' frames into `path` (one line per input and field,
/// in the panels of the first input's fields).
pub fn write_curves(path: &Path, curves: &[Curves], title: &str) -> Result<()> {
    let Some(first) = curves.first() else {
        bail!("nothing to plot: no pair was compared");
    };
    let fields: Vec<String> = first
        .summary
        .fields
        .iter()
        .map(|(n, _)| n.clone())
        .filter(|n| curves.len() == 1 || !crate::output::repeats(first.summary, n))
        .collect();
    let mut panels = panels(&fields);
    if curves.len() > 1 {
        // A panel per field, with a line (a colour) per input: lines of several fields and
        // inputs in one panel would be more than a legend can tell apart.
        panels = panels
            .into_iter()
            .flat_map(|p| {
                p.fields.into_iter().map(move |f| Panel {
                    title: format!("{f}: {}", p.title),
                    unit_interval: p.unit_interval,
                    fields: vec![f],
                })
            })
            .collect();
    }
    if panels.is_empty() || curves.iter().all(|c| c.records.is_empty()) {
        bail!("nothing to plot: no pair was compared");
    }
    let size = (WIDTH, PANEL_HEIGHT * panels.len() as u32 + 40);
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("svg") => {
            register_font()?;
            draw(
                SVGBackend::new(path, size).into_drawing_area(),
                curves,
                &panels,
                title,
            )
        }
        Some("png") => {
            register_font()?;
            draw(
                BitMapBackend::new(path, size).into_drawing_area(),
                curves,
                &panels,
                title,
            )
        }
        _ => bail!(
            "--plot {}: the file name must end in .png or .svg",
            path.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panels_come_from_the_registry() {
        use gpumetrics_engine::metric;
        let f: Vec<String> = [
            "psnr-y",
            "psnr-avg",
            "mse-y",
            "ssim",
            "ms-ssim",
            "ssimulacra2",
            "butteraugli",
            "no-such-field",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let p = panels(&f);
        let title = |f: &str| metric::field(f).unwrap().panel.unwrap().title;
        let got: Vec<(&str, bool, Vec<&str>)> = p
            .iter()
            .map(|p| {
                let fields = p.fields.iter().map(String::as_str).collect();
                (p.title.as_str(), p.unit_interval, fields)
            })
            .collect();
        assert_eq!(
            got,
            [
                (title("psnr-y"), false, vec!["psnr-y", "psnr-avg"]),
                (title("ssim"), true, vec!["ssim", "ms-ssim"]),
                (title("ssimulacra2"), false, vec!["ssimulacra2"]),
                (title("butteraugli"), false, vec!["butteraugli"]),
                ("no-such-field", false, vec!["no-such-field"]),
            ],
            "{p:?}"
        );
        // Every registry field is in the panel it declares, or in none.
        let all: Vec<String> = metric::fields().map(|f| f.name.to_string()).collect();
        let p = panels(&all);
        for f in metric::fields() {
            let drawn_in: Vec<_> = p
                .iter()
                .filter(|p| p.fields.iter().any(|n| n == f.name))
                .collect();
            match f.panel {
                None => assert!(drawn_in.is_empty(), "{}", f.name),
                Some(panel) => {
                    assert_eq!(drawn_in.len(), 1, "{}", f.name);
                    assert_eq!(drawn_in[0].title, panel.title);
                    assert_eq!(drawn_in[0].unit_interval, panel.unit_interval, "{}", f.name);
                }
            }
        }
    }

    /// The legend is beside the chart, right of where the curves are drawn, and the x axis
    /// counts the records' frame numbers (0, 5, 10, 15 with `--every 5`).
    #[test]
    fn the_legend_is_beside_the_chart_and_x_is_the_frame_number() {
        use gstgpumetrics::message::FieldStats;
        if register_font().is_err() {
            eprintln!("no font: skipped");
            return;
        }
        let records: Vec<FrameScores> = (0..4)
            .map(|i| FrameScores {
                frame: 5 * i,
                pts: None,
                running_time: None,
                duration: None,
                scores: vec![(
                    gpumetrics_engine::metric::field("psnr-y").unwrap(),
                    30.0 + i as f64,
                )],
            })
            .collect();
        let stats = FieldStats {
            mean: 31.5,
            ..Default::default()
        };
        let summary = Summary {
            frames: 4,
            fields: vec![("psnr-y".into(), stats)],
            ..Default::default()
        };
        let panels = panels(&["psnr-y".to_string()]);
        let mut svg = String::new();
        draw(
            SVGBackend::with_string(&mut svg, (WIDTH, PANEL_HEIGHT + 40)).into_drawing_area(),
            &[Curves {
                label: None,
                records: &records,
                summary: &summary,
            }],
            &panels,
            "t",
        )
        .unwrap();
        // The legend's text: its x is past the chart's width.
        let at = svg.find("psnr-y, mean 31.500").expect(&svg);
        let tag = &svg[svg[..at].rfind("<text").unwrap()..at];
        let x: f64 = tag
            .split("x=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .and_then(|x| x.parse().ok())
            .unwrap_or_else(|| panic!("{tag}"));
        assert!(x >= f64::from(WIDTH - LEGEND_WIDTH), "{tag}");
        // The x axis runs to frame 15 (a tick at 10), not to the fourth record's index 3.
        assert!(svg.contains(">\n10\n</text>"), "{svg}");
    }

    #[test]
    fn infinite_scores_break_the_line() {
        let r = finite_runs(&[(0.0, 1.0), (1.0, f64::INFINITY), (2.0, 2.0), (3.0, 3.0)]);
        assert_eq!(r, vec![vec![(0.0, 1.0)], vec![(2.0, 2.0), (3.0, 3.0)]]);
    }
}
