//! Renders the benchmark harness's results CSV as a PNG bar chart.
//!
//! Usage: `bench-chart RESULTS.csv OUT.png [FONT.ttf]`. The CSV has the header
//! `scenario,server,rps,cpu_us,rps_ratio,cpu_ratio`; one row per server per scenario, in the
//! order they should appear. Each scenario becomes one row of two panels: requests per second
//! (higher is better) and server CPU time per request in µs (lower is better), with the
//! ratio to the C pong reference written after each bar.

use std::error::Error;
use std::fs;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{register_font, FontStyle};

/// One measured server in one scenario (medians over the rounds).
struct Row {
    scenario: String,
    server: String,
    rps: Option<f64>,
    cpu_us: Option<f64>,
    rps_ratio: Option<f64>,
    cpu_ratio: Option<f64>,
}

fn parse_opt(s: &str) -> Option<f64> {
    s.trim().parse::<f64>().ok().filter(|v| v.is_finite())
}

fn read_rows(path: &str) -> Result<Vec<Row>, Box<dyn Error>> {
    let text = fs::read_to_string(path)?;
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if i == 0 || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 6 {
            return Err(format!("{path}:{}: expected 6 fields", i + 1).into());
        }
        // A server that failed every round has no figures: leave it out of the chart.
        if parse_opt(f[2]).is_none() {
            continue;
        }
        rows.push(Row {
            scenario: f[0].to_string(),
            server: f[1].to_string(),
            rps: parse_opt(f[2]),
            cpu_us: parse_opt(f[3]),
            rps_ratio: parse_opt(f[4]),
            cpu_ratio: parse_opt(f[5]),
        });
    }
    Ok(rows)
}

/// Scenarios in first-seen order, each with its rows.
fn group(rows: &[Row]) -> Vec<(String, Vec<&Row>)> {
    let mut out: Vec<(String, Vec<&Row>)> = Vec::new();
    for r in rows {
        match out.iter_mut().find(|(s, _)| *s == r.scenario) {
            Some((_, v)) => v.push(r),
            None => out.push((r.scenario.clone(), vec![r])),
        }
    }
    out
}

fn load_font(explicit: Option<&str>) -> Result<(), Box<dyn Error>> {
    let candidates = [
        "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
        "/usr/share/fonts/TTF/DejaVuSans.ttf",
        "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    ];
    let path = explicit
        .map(str::to_string)
        .or_else(|| {
            candidates
                .iter()
                .find(|p| fs::metadata(p).is_ok())
                .map(|p| p.to_string())
        })
        .ok_or("no TTF font found (install fonts-dejavu-core or pass a font path)")?;
    let bytes: &'static [u8] = Box::leak(fs::read(&path)?.into_boxed_slice());
    register_font("sans-serif", FontStyle::Normal, bytes).map_err(|_| "invalid font file")?;
    Ok(())
}

/// Which figure a panel shows.
#[derive(Clone, Copy)]
enum Metric {
    Rps,
    Cpu,
}

fn draw_panel(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    title: &str,
    rows: &[&Row],
    metric: Metric,
) -> Result<(), Box<dyn Error>> {
    let values: Vec<Option<f64>> = rows
        .iter()
        .map(|r| match metric {
            Metric::Rps => r.rps.map(|v| v / 1000.0),
            Metric::Cpu => r.cpu_us,
        })
        .collect();
    let ratios: Vec<Option<f64>> = rows
        .iter()
        .map(|r| match metric {
            Metric::Rps => r.rps_ratio,
            Metric::Cpu => r.cpu_ratio,
        })
        .collect();
    let max = values.iter().flatten().cloned().fold(0.0_f64, f64::max);
    let xmax = if max > 0.0 { max * 1.35 } else { 1.0 };
    let n = rows.len();
    // Segment 0 is drawn at the bottom: put the first row (pong, the reference) on top.
    let slot = |i: usize| n - 1 - i;
    let names: Vec<String> = rows.iter().rev().map(|r| r.server.clone()).collect();
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 20))
        .margin(8)
        .x_label_area_size(28)
        .y_label_area_size(110)
        .build_cartesian_2d(0.0..xmax, (0..n).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .max_light_lines(1)
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => names.get(*i).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .x_label_formatter(&|x| format!("{x:.0}"))
        .label_style(("sans-serif", 15))
        .draw()?;
    let color = match metric {
        Metric::Rps => RGBColor(52, 120, 196),
        Metric::Cpu => RGBColor(214, 120, 40),
    };
    for (i, (v, ratio)) in values.iter().zip(&ratios).enumerate() {
        let Some(v) = *v else { continue };
        let is_ref = rows[i].server == "pong";
        let fill = if is_ref {
            RGBColor(120, 120, 120)
        } else {
            color
        };
        let mut bar = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(slot(i))),
                (v, SegmentValue::Exact(slot(i) + 1)),
            ],
            fill.filled(),
        );
        bar.set_margin(3, 3, 0, 0);
        chart.draw_series(std::iter::once(bar))?;
        let label = match ratio {
            Some(r) => format!(" {v:.1} ({r:.2}×)"),
            None => format!(" {v:.1}"),
        };
        chart.draw_series(std::iter::once(Text::new(
            label,
            (v, SegmentValue::CenterOf(slot(i))),
            TextStyle::from(("sans-serif", 14).into_font()).pos(Pos::new(HPos::Left, VPos::Center)),
        )))?;
    }
    Ok(())
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: bench-chart RESULTS.csv OUT.png [FONT.ttf]");
        std::process::exit(2);
    }
    load_font(args.get(3).map(String::as_str))?;
    let rows = read_rows(&args[1])?;
    let groups = group(&rows);
    if groups.is_empty() {
        return Err("no results in CSV".into());
    }
    let row_h: u32 = groups
        .iter()
        .map(|(_, r)| 90 + 30 * r.len() as u32)
        .max()
        .unwrap_or(300);
    let height = row_h * groups.len() as u32;
    let root = BitMapBackend::new(&args[2], (1400, height)).into_drawing_area();
    root.fill(&WHITE)?;
    let rows_areas = root.split_evenly((groups.len(), 2));
    for (gi, (scenario, rs)) in groups.iter().enumerate() {
        draw_panel(
            &rows_areas[gi * 2],
            &format!("{scenario}: thousand req/s (higher is better)"),
            rs,
            Metric::Rps,
        )?;
        draw_panel(
            &rows_areas[gi * 2 + 1],
            &format!("{scenario}: server CPU µs/request (lower is better)"),
            rs,
            Metric::Cpu,
        )?;
    }
    root.present()?;
    Ok(())
}
