//! `gridspool-sim --charts DIR`, SVG charts drawn by the `plotters` crate: the distribution of
//! waits under each configuration (`DIR/waits.svg`: for every wait on the x axis, the share of
//! jobs that waited at most that long, one line per configuration), and for each
//! configuration the shares over time (`DIR/shares-<configuration>.svg`: each entity's share
//! of the slot-seconds per interval, its promised share dashed).

use super::replay::Replay;
use plotters::prelude::*;

const COLOURS: [RGBColor; 6] = [
    RGBColor(0x44, 0x77, 0xaa),
    RGBColor(0x44, 0xaa, 0x77),
    RGBColor(0xaa, 0x77, 0x44),
    RGBColor(0xaa, 0x44, 0x77),
    RGBColor(0x77, 0xaa, 0x44),
    RGBColor(0x77, 0x44, 0xaa),
];

/// One line of a chart, and its promised level (drawn dashed) if any.
struct Line {
    name: String,
    points: Vec<(f64, f64)>,
    level: Option<f64>,
}

/// A chart of lines over x in 0..`x_max` and y in 0..1, with a legend.
fn draw_lines(
    path: &std::path::Path,
    caption: &str,
    (x_desc, y_desc): (&str, &str),
    x_max: f64,
    lines: Vec<Line>,
) -> Result<(), String> {
    let root = SVGBackend::new(path, (800, 480)).into_drawing_area();
    let draw = |e: &dyn std::fmt::Display| e.to_string();
    root.fill(&WHITE).map_err(|e| draw(&e))?;
    let x_max = x_max.max(1.0 / 60.0);
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..x_max, 0.0..1.0)
        .map_err(|e| draw(&e))?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()
        .map_err(|e| draw(&e))?;
    for (i, line) in lines.into_iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        chart
            .draw_series(LineSeries::new(line.points, colour.stroke_width(2)))
            .map_err(|e| draw(&e))?
            .label(line.name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
        if let Some(level) = line.level {
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.0, level), (x_max, level)],
                    6,
                    4,
                    colour.stroke_width(1),
                ))
                .map_err(|e| draw(&e))?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| draw(&e))?;
    root.present().map_err(|e| draw(&e))
}

/// Draws `DIR/waits.svg` for the replays, named as given.
pub fn waits(path: &std::path::Path, replays: &[(String, &Replay)]) -> Result<(), String> {
    let lines: Vec<Line> = replays
        .iter()
        .map(|(name, r)| {
            let mut waits: Vec<i64> = r.runs.iter().map(|j| j.wait()).collect();
            waits.sort_unstable();
            let n = waits.len().max(1) as f64;
            let points = waits
                .iter()
                .enumerate()
                .map(|(i, w)| (*w as f64 / 3600.0, (i + 1) as f64 / n))
                .collect();
            Line {
                name: name.clone(),
                points,
                level: None,
            }
        })
        .collect();
    let max_hours = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|(x, _)| *x))
        .fold(0.0f64, f64::max);
    draw_lines(
        path,
        "Jobs that waited at most",
        ("wait (hours)", "share of jobs"),
        max_hours,
        lines,
    )
}

/// Draws the shares over time of one replay (the six largest entities).
pub fn shares(
    path: &std::path::Path,
    name: &str,
    shares: &super::shares::Shares,
) -> Result<(), String> {
    let mut entities: Vec<(&String, &super::shares::EntityShare)> =
        shares.by_entity.iter().collect();
    entities.sort_by(|a, b| b.1.achieved.total_cmp(&a.1.achieved));
    entities.truncate(COLOURS.len());
    let hours = shares.interval as f64 / 3600.0;
    let lines = entities
        .into_iter()
        .map(|(entity, e)| Line {
            name: entity.clone(),
            // Each interval at its middle; intervals in which nothing ran are left out.
            points: e
                .over_time
                .iter()
                .zip(&shares.used)
                .enumerate()
                .filter(|(_, (_, used))| **used > 0.0)
                .map(|(b, (s, _))| ((b as f64 + 0.5) * hours, *s))
                .collect(),
            level: e.configured,
        })
        .collect();
    draw_lines(
        path,
        &format!(
            "{name}: share of the slot-seconds used, by {}",
            shares.entity
        ),
        ("time (hours)", "share (dashed: promised)"),
        hours * shares.used.len() as f64,
        lines,
    )
}
