//! SVG plots of a bench (plotters): per store and scenario, time and bytes read per
//! algorithm and configuration (grouped bars on log axes, medians over repetitions);
//! per store, scenario and algorithm with three or more MRT values, time and
//! iterations against MRT — the shape of CLIP's Figure 5 (clip-atc17.md §5.3).

use crate::report::{median, Groups};
use crate::runner::RunRecord;
use crate::BenchError;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

const COLORS: [RGBColor; 6] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
];

fn perr<E: std::fmt::Display>(e: E) -> BenchError {
    BenchError::Output(format!("plot: {e}"))
}

/// One panel of grouped bars: `values[series][group]`, log-scaled y.
fn bar_panel(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    title: &str,
    y_desc: &str,
    groups: &[String],
    series: &[String],
    values: &[Vec<Option<f64>>],
) -> Result<(), BenchError> {
    let present: Vec<f64> = values
        .iter()
        .flatten()
        .flatten()
        .copied()
        .filter(|v| *v > 0.0)
        .collect();
    let (lo, hi) = match (
        present.iter().copied().reduce(f64::min),
        present.iter().copied().reduce(f64::max),
    ) {
        (Some(a), Some(b)) => (a / 2.0, b * 2.0),
        _ => (0.1, 10.0),
    };
    let n = groups.len().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(0f64..n, (lo..hi).log_scale())
        .map_err(perr)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .x_label_formatter(&|_| String::new())
        .y_desc(y_desc)
        .y_label_formatter(&|v| {
            if *v >= 1e9 {
                format!("{:.0}G", v / 1e9)
            } else if *v >= 1e6 {
                format!("{:.0}M", v / 1e6)
            } else if *v >= 1e3 {
                format!("{:.0}k", v / 1e3)
            } else if *v >= 1.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.2}")
            }
        })
        .draw()
        .map_err(perr)?;
    let width = 0.8 / series.len().max(1) as f64;
    for (s, name) in series.iter().enumerate() {
        let color = COLORS[s % COLORS.len()];
        let rects: Vec<_> = values[s]
            .iter()
            .enumerate()
            .filter_map(|(g, v)| {
                let v = (*v)?;
                let x0 = g as f64 + 0.1 + s as f64 * width;
                Some(Rectangle::new(
                    [(x0, lo), (x0 + width * 0.95, v.max(lo))],
                    color.filled(),
                ))
            })
            .collect();
        chart
            .draw_series(rects)
            .map_err(perr)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(perr)?;
    let style =
        TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
    // backend_coord is in the whole picture's pixels; `area` draws relative to its corner.
    let (bx, by) = area.get_base_pixel();
    for (g, name) in groups.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(g as f64 + 0.5, lo));
        area.draw(&Text::new(
            name.clone(),
            (px - bx, py - by + 6),
            style.clone(),
        ))
        .map_err(perr)?;
    }
    Ok(())
}

/// One panel of lines: `(series name, points)` against a linear x.
fn line_panel(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    title: &str,
    x_desc: &str,
    y_desc: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<(), BenchError> {
    let pts: Vec<(f64, f64)> = series.iter().flat_map(|(_, p)| p.iter().copied()).collect();
    let xmax = pts.iter().map(|p| p.0).fold(1.0, f64::max);
    let ymax = pts.iter().map(|p| p.1).fold(0.0, f64::max).max(1e-9);
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..xmax * 1.05, 0f64..ymax * 1.15)
        .map_err(perr)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()
        .map_err(perr)?;
    for (s, (name, p)) in series.iter().enumerate() {
        let color = COLORS[s % COLORS.len()];
        chart
            .draw_series(LineSeries::new(p.iter().copied(), color.stroke_width(2)))
            .map_err(perr)?
            .label(name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 14, y)], color.stroke_width(2))
            });
        chart
            .draw_series(
                p.iter()
                    .map(|&(x, y)| Circle::new((x, y), 3, color.filled())),
            )
            .map_err(perr)?;
    }
    if series.len() > 1 {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(perr)?;
    }
    Ok(())
}

/// Writes the plots of `records` into `dir`; returns `(title, file name)` of each.
pub fn render(records: &[RunRecord], dir: &Path) -> Result<Vec<(String, String)>, BenchError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| BenchError::Output(format!("{}: {e}", dir.display())))?;
    let g = Groups::new(records);
    let mut out = Vec::new();
    for store in &g.stores {
        for scenario in &g.scenarios {
            let algos = g.algorithms_in(store, scenario);
            if algos.is_empty() {
                continue;
            }
            let med = |a: &String, c: &String, f: &dyn Fn(&RunRecord) -> Option<f64>| {
                median(
                    g.runs(store, scenario, a, c)
                        .iter()
                        .filter(|r| r.ok())
                        .filter_map(|r| f(r)),
                )
            };
            let time: Vec<Vec<Option<f64>>> = g
                .configs
                .iter()
                .map(|c| {
                    algos
                        .iter()
                        .map(|a| med(a, c, &|r| Some(r.wall_s)))
                        .collect()
                })
                .collect();
            let bytes: Vec<Vec<Option<f64>>> = g
                .configs
                .iter()
                .map(|c| {
                    algos
                        .iter()
                        .map(|a| med(a, c, &|r| r.engine_read_bytes.map(|b| b as f64)))
                        .collect()
                })
                .collect();
            let file = format!("{store}-{scenario}.svg");
            let path = dir.join(&file);
            {
                let root = SVGBackend::new(&path, (1100, 420)).into_drawing_area();
                root.fill(&WHITE).map_err(perr)?;
                let (l, r) = root.split_horizontally(550);
                bar_panel(
                    &l,
                    &format!("{store}, {scenario}: time"),
                    "seconds (median)",
                    &algos,
                    &g.configs,
                    &time,
                )?;
                bar_panel(
                    &r,
                    &format!("{store}, {scenario}: bytes read"),
                    "bytes (engine)",
                    &algos,
                    &g.configs,
                    &bytes,
                )?;
                root.present().map_err(perr)?;
            }
            out.push((format!("{store}, {scenario}: time and bytes read"), file));
            // Time and iterations against MRT.
            for a in &algos {
                let mut pts: Vec<(f64, f64, f64)> = g
                    .configs
                    .iter()
                    .filter_map(|c| {
                        let runs = g.runs(store, scenario, a, c);
                        let mrt = runs.first()?.mrt? as f64;
                        let ok: Vec<&RunRecord> = runs.iter().copied().filter(|r| r.ok()).collect();
                        let t = median(ok.iter().map(|r| r.wall_s))?;
                        let it = median(ok.iter().filter_map(|r| r.iterations.map(|i| i as f64)))?;
                        Some((mrt, t, it))
                    })
                    .collect();
                pts.sort_by(|x, y| x.0.total_cmp(&y.0));
                pts.dedup_by(|x, y| x.0 == y.0);
                if pts.len() < 3 {
                    continue;
                }
                let file = format!("{store}-{scenario}-{a}-mrt.svg");
                let path = dir.join(&file);
                {
                    let root = SVGBackend::new(&path, (1100, 400)).into_drawing_area();
                    root.fill(&WHITE).map_err(perr)?;
                    let (l, r) = root.split_horizontally(550);
                    let t: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.1)).collect();
                    let it: Vec<(f64, f64)> = pts.iter().map(|p| (p.0, p.2)).collect();
                    line_panel(
                        &l,
                        &format!("{a} on {store}, {scenario}: time"),
                        "MRT",
                        "seconds (median)",
                        &[(a.clone(), t)],
                    )?;
                    line_panel(
                        &r,
                        &format!("{a} on {store}, {scenario}: iterations"),
                        "MRT",
                        "iterations",
                        &[(a.clone(), it)],
                    )?;
                    root.present().map_err(perr)?;
                }
                out.push((
                    format!("{a} on {store}, {scenario}: time and iterations against MRT"),
                    file,
                ));
            }
        }
    }
    Ok(out)
}
