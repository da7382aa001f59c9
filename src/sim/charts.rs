//! `gridspool-sim --charts DIR`, SVG charts drawn by the `plotters` crate: the distribution of
//! waits under each configuration (`DIR/waits.svg`: for every wait on the x axis, the share of
//! jobs that waited at most that long, one line per configuration), and for each
//! configuration the shares over time (`DIR/shares-<configuration>.svg`: each entity's share
//! of the slot-seconds per interval, its promised share dashed).
//!
//! A chart says what it leaves out and never hides a line: past [`MAX_LINES`] entities the
//! rest are drawn as one line, their mean, and a note under the caption says so; the y axis is scaled
//! to the data (fifty users near 2% each would otherwise be one flat band at the bottom of
//! 0–1); lines that coincide are drawn as nested bands (the first widest) and their legend
//! entries name the line they repeat.

use super::replay::Replay;
use plotters::prelude::*;

/// Entities drawn one by one in a shares chart; the others are drawn summed.
pub const MAX_LINES: usize = 6;

const COLOURS: [RGBColor; MAX_LINES] = [
    RGBColor(0x44, 0x77, 0xaa),
    RGBColor(0x44, 0xaa, 0x77),
    RGBColor(0xaa, 0x77, 0x44),
    RGBColor(0xaa, 0x44, 0x77),
    RGBColor(0x77, 0xaa, 0x44),
    RGBColor(0x77, 0x44, 0xaa),
];
/// The summed rest.
const OTHERS: RGBColor = RGBColor(0x88, 0x88, 0x88);

/// One line of a chart, and its promised level (drawn dashed) if any.
struct Line {
    /// What it is (an entity, a configuration), and its legend entry.
    id: String,
    name: String,
    points: Vec<(f64, f64)>,
    level: Option<f64>,
    colour: RGBColor,
}

/// What a chart shows besides its lines.
struct Frame<'a> {
    caption: &'a str,
    /// A line under the caption (what was left out), if any.
    note: Option<String>,
    x_desc: &'a str,
    y_desc: &'a str,
    x_max: f64,
    y_max: f64,
}

/// The top of a y axis for values up to `max`: a round number a little above it (1, 1.5, 2,
/// 2.5, 3, 4, 5, 6 or 8 times a power of ten), at most 1 (shares), 1 when nothing is above 0.
fn axis_top(max: f64) -> f64 {
    if max.is_nan() || max <= 0.0 {
        return 1.0;
    }
    let want = (max * 1.1).min(1.0);
    let power = 10f64.powf(want.log10().floor());
    [1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|top| *top >= want - 1e-12)
        .unwrap_or(1.0)
        .min(1.0)
}

/// For each line, the earlier line it coincides with (the same points to within a pixel of
/// an axis `y_max` high), and the stroke width that keeps every line of such a group
/// visible: the first drawn widest, each later one narrower on top of it.
fn coincidences(lines: &[Line], y_max: f64) -> Vec<(Option<usize>, u32)> {
    let close = |a: &Line, b: &Line| {
        a.points.len() == b.points.len()
            && a.points
                .iter()
                .zip(&b.points)
                .all(|(p, q)| p.0 == q.0 && (p.1 - q.1).abs() <= y_max / 400.0)
    };
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let first = lines.iter().position(|l| close(l, line)).filter(|f| *f < i);
            let after = lines[i + 1..].iter().filter(|l| close(l, line)).count();
            (first, 2 + 2 * after as u32)
        })
        .collect()
}

/// A chart of lines over x in 0..`x_max` and y in 0..`y_max`, with a legend.
fn draw_lines(path: &std::path::Path, frame: Frame, lines: Vec<Line>) -> Result<(), String> {
    let root = SVGBackend::new(path, (800, 480)).into_drawing_area();
    let draw = |e: &dyn std::fmt::Display| e.to_string();
    root.fill(&WHITE).map_err(|e| draw(&e))?;
    let area = root
        .titled(frame.caption, ("sans-serif", 20))
        .map_err(|e| draw(&e))?;
    let area = match &frame.note {
        Some(note) => {
            let (top, rest) = area.split_vertically(20);
            top.draw(&Text::new(note.clone(), (12, 2), ("sans-serif", 14)))
                .map_err(|e| draw(&e))?;
            rest
        }
        None => area,
    };
    let x_max = frame.x_max.max(1.0 / 60.0);
    let mut chart = ChartBuilder::on(&area)
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..x_max, 0.0..frame.y_max)
        .map_err(|e| draw(&e))?;
    chart
        .configure_mesh()
        .x_desc(frame.x_desc)
        .y_desc(frame.y_desc)
        .draw()
        .map_err(|e| draw(&e))?;
    let same = coincidences(&lines, frame.y_max);
    let ids: Vec<String> = lines.iter().map(|l| l.id.clone()).collect();
    for (line, (first, width)) in lines.into_iter().zip(same) {
        let colour = line.colour;
        let label = match first {
            Some(f) => format!("{} (same as {})", line.name, ids[f]),
            None => line.name,
        };
        chart
            .draw_series(LineSeries::new(line.points, colour.stroke_width(width)))
            .map_err(|e| draw(&e))?
            .label(label)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(width))
            });
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
        .enumerate()
        .map(|(i, (name, r))| {
            let mut waits: Vec<i64> = r.runs.iter().map(|j| j.wait()).collect();
            waits.sort_unstable();
            let n = waits.len().max(1) as f64;
            let points = waits
                .iter()
                .enumerate()
                .map(|(i, w)| (*w as f64 / 3600.0, (i + 1) as f64 / n))
                .collect();
            Line {
                id: name.clone(),
                name: name.clone(),
                points,
                level: None,
                colour: COLOURS[i % COLOURS.len()],
            }
        })
        .collect();
    let max_hours = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|(x, _)| *x))
        .fold(0.0f64, f64::max);
    draw_lines(
        path,
        Frame {
            caption: "Jobs that waited at most",
            note: None,
            x_desc: "wait (hours)",
            y_desc: "share of jobs",
            x_max: max_hours,
            y_max: 1.0,
        },
        lines,
    )
}

/// `entity` in the plural (`queue`, `share tree node`, `user`…).
fn plural(entity: &str, n: usize) -> String {
    if n == 1 {
        entity.to_string()
    } else {
        format!("{entity}s")
    }
}

/// Draws the shares over time of one replay: the [`MAX_LINES`] entities that got the most
/// slot-seconds one by one, the others as one line, their mean (named, with how many they
/// are, in the legend and under the caption).
pub fn shares(
    path: &std::path::Path,
    name: &str,
    shares: &super::shares::Shares,
) -> Result<(), String> {
    let mut entities: Vec<(&String, &super::shares::EntityShare)> =
        shares.by_entity.iter().collect();
    entities.sort_by(|a, b| b.1.achieved.total_cmp(&a.1.achieved).then(a.0.cmp(b.0)));
    let total = entities.len();
    let rest = if total > MAX_LINES {
        entities.split_off(MAX_LINES)
    } else {
        Vec::new()
    };
    let hours = shares.interval as f64 / 3600.0;
    // Each interval at its middle; intervals in which nothing ran are left out.
    let points = |over_time: &[f64]| -> Vec<(f64, f64)> {
        over_time
            .iter()
            .zip(&shares.used)
            .enumerate()
            .filter(|(_, (_, used))| **used > 0.0)
            .map(|(b, (s, _))| ((b as f64 + 0.5) * hours, *s))
            .collect()
    };
    let percent = |f: f64| format!("{:.1}%", f * 100.0);
    let label = |name: &str, achieved: f64, promised: Option<f64>| match promised {
        Some(p) => format!("{name}: {} (promised {})", percent(achieved), percent(p)),
        None => format!("{name}: {}", percent(achieved)),
    };
    let mut lines: Vec<Line> = entities
        .iter()
        .enumerate()
        .map(|(i, (entity, e))| Line {
            id: entity.to_string(),
            name: label(entity, e.achieved, e.configured),
            points: points(&e.over_time),
            level: e.configured,
            colour: COLOURS[i % COLOURS.len()],
        })
        .collect();
    let mut note = None;
    if !rest.is_empty() {
        // Their mean, not their sum: a line comparable with the entities drawn one by one
        // (fifty users' sum would dwarf them and take the axis back to 0–1).
        let n = rest.len() as f64;
        let mut over_time = vec![0.0; shares.used.len()];
        for (_, e) in &rest {
            for (sum, s) in over_time.iter_mut().zip(&e.over_time) {
                *sum += s / n;
            }
        }
        // Their mean promise, when every one of them has one.
        let promised = rest
            .iter()
            .map(|(_, e)| e.configured)
            .sum::<Option<f64>>()
            .map(|p| p / n);
        let others = format!("the other {}", rest.len());
        lines.push(Line {
            id: others.clone(),
            name: label(
                &format!("{others}, each on average"),
                rest.iter().map(|(_, e)| e.achieved).sum::<f64>() / n,
                promised,
            ),
            points: points(&over_time),
            level: promised,
            colour: OTHERS,
        });
        note = Some(format!(
            "the {MAX_LINES} largest of {total} {} by slot-seconds; {others} as one line, their mean",
            plural(&shares.entity, total),
        ));
    }
    let max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|(_, y)| *y).chain(l.level))
        .fold(0.0f64, f64::max);
    draw_lines(
        path,
        Frame {
            caption: &format!(
                "{name}: share of the slot-seconds used, by {}",
                shares.entity
            ),
            note,
            x_desc: "time (hours)",
            y_desc: "share (dashed: promised)",
            x_max: hours * shares.used.len() as f64,
            y_max: axis_top(max),
        },
        lines,
    )
}

#[cfg(test)]
mod tests {
    use super::super::shares::{EntityShare, Shares};
    use std::collections::BTreeMap;

    /// `users` users, each with `share` of every interval and promised as much.
    fn equal_users(users: usize, share: f64) -> Shares {
        let by_entity: BTreeMap<String, EntityShare> = (0..users)
            .map(|i| {
                (
                    format!("user{i:02}"),
                    EntityShare {
                        configured: Some(share),
                        achieved: share,
                        over_time: vec![share; super::super::shares::BUCKETS],
                    },
                )
            })
            .collect();
        Shares {
            entity: "user".into(),
            interval: 3600,
            used: vec![10.0; super::super::shares::BUCKETS],
            by_entity,
        }
    }

    fn draw(shares: &Shares) -> String {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("shares.svg");
        super::shares(&path, "c.yaml", shares).expect("chart");
        std::fs::read_to_string(&path).expect("svg")
    }

    /// The chart's texts whose opening tag has `attribute`.
    fn texts(svg: &str, attribute: &str) -> Vec<String> {
        let flat = svg.replace('\n', "");
        flat.split("<text ")
            .skip(1)
            .filter_map(|t| {
                let (tag, rest) = t.split_once('>')?;
                tag.contains(attribute).then(|| {
                    rest.split("</text>")
                        .next()
                        .unwrap_or("")
                        .trim()
                        .to_string()
                })
            })
            .collect()
    }

    /// The data lines (more than two points: not ticks, dashes or legend samples) as
    /// (points, stroke width).
    fn data_lines(svg: &str) -> Vec<(String, String)> {
        svg.lines()
            .filter(|l| l.starts_with("<polyline"))
            .filter_map(|l| {
                let attr = |name: &str| {
                    let start = l.find(&format!(" {name}=\""))? + name.len() + 3;
                    Some(l[start..].split('"').next()?.to_string())
                };
                let points = attr("points")?;
                let width = attr("stroke-width")?;
                (points.split_whitespace().count() > 2).then_some((points, width))
            })
            .collect()
    }

    #[test]
    fn fifty_users_are_drawn_to_scale_with_what_is_left_out_said() {
        let svg = draw(&equal_users(50, 0.02));
        let all = texts(&svg, "font-family");
        assert!(
            all.iter().any(|t| t
                == "the 6 largest of 50 users by slot-seconds; the other 44 as one line, their mean"),
            "{all:?}"
        );
        assert!(
            all.iter().any(
                |t| t == "the other 44, each on average: 2.0% (promised 2.0%) (same as user00)"
            ),
            "{all:?}"
        );
        // The y axis (its labels are right-aligned) ends a little above 2%, not at 1.
        let y: Vec<f64> = texts(&svg, "text-anchor=\"end\"")
            .iter()
            .filter_map(|t| t.parse().ok())
            .collect();
        let top = y.iter().copied().fold(0.0, f64::max);
        assert!(top > 0.02 && top <= 0.03, "y labels {y:?}");
    }

    #[test]
    fn lines_that_coincide_stay_visible_and_are_named() {
        let svg = draw(&equal_users(2, 0.5));
        let lines = data_lines(&svg);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert_eq!(lines[0].0, lines[1].0);
        // The first is drawn wider, under the second.
        assert_eq!((lines[0].1.as_str(), lines[1].1.as_str()), ("4", "2"));
        let legend = texts(&svg, "text-anchor=\"start\"");
        assert!(
            legend.contains(&"user01: 50.0% (promised 50.0%) (same as user00)".to_string()),
            "{legend:?}"
        );
    }

    #[test]
    fn the_axis_top_is_a_round_number_just_above_the_data() {
        assert_eq!(super::axis_top(0.02), 0.025);
        assert_eq!(super::axis_top(0.72), 0.8);
        assert_eq!(super::axis_top(0.95), 1.0);
        assert_eq!(super::axis_top(0.0), 1.0);
    }
}
