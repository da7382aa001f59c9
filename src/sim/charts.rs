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

/// Draws `DIR/waits.svg` for the replays, named as given.
pub fn waits(path: &std::path::Path, replays: &[(String, &Replay)]) -> Result<(), String> {
    let curves: Vec<(String, Vec<(f64, f64)>)> = replays
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
            (name.clone(), points)
        })
        .collect();
    let max_hours = curves
        .iter()
        .flat_map(|(_, p)| p.iter().map(|(x, _)| *x))
        .fold(0.0f64, f64::max)
        .max(1.0 / 60.0);
    let root = SVGBackend::new(path, (800, 480)).into_drawing_area();
    let draw = |e: &dyn std::fmt::Display| e.to_string();
    root.fill(&WHITE).map_err(|e| draw(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption("Jobs that waited at most", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..max_hours, 0.0..1.0)
        .map_err(|e| draw(&e))?;
    chart
        .configure_mesh()
        .x_desc("wait (hours)")
        .y_desc("share of jobs")
        .draw()
        .map_err(|e| draw(&e))?;
    for (i, (name, points)) in curves.into_iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        chart
            .draw_series(LineSeries::new(points, colour.stroke_width(2)))
            .map_err(|e| draw(&e))?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| draw(&e))?;
    root.present().map_err(|e| draw(&e))
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
    let span = hours * shares.used.len() as f64;
    let root = SVGBackend::new(path, (800, 480)).into_drawing_area();
    let draw = |e: &dyn std::fmt::Display| e.to_string();
    root.fill(&WHITE).map_err(|e| draw(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "{name}: share of the slot-seconds used, by {}",
                shares.entity
            ),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..span.max(1.0 / 60.0), 0.0..1.0)
        .map_err(|e| draw(&e))?;
    chart
        .configure_mesh()
        .x_desc("time (hours)")
        .y_desc("share (dashed: promised)")
        .draw()
        .map_err(|e| draw(&e))?;
    for (i, (entity, e)) in entities.into_iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        // Each interval at its middle; intervals in which nothing ran are left out.
        let points: Vec<(f64, f64)> = e
            .over_time
            .iter()
            .zip(&shares.used)
            .enumerate()
            .filter(|(_, (_, used))| **used > 0.0)
            .map(|(b, (s, _))| ((b as f64 + 0.5) * hours, *s))
            .collect();
        chart
            .draw_series(LineSeries::new(points, colour.stroke_width(2)))
            .map_err(|e| draw(&e))?
            .label(entity.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], colour));
        if let Some(c) = e.configured {
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.0, c), (span, c)],
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
