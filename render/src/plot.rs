//! Bench plots as SVG, drawn with plotters: the refresh-contention frontier (round trips per
//! burst against time to the final list, per strategy, per cell) and read-latency percentiles
//! per store.

use crate::bench::{ChurnRow, RefreshRow};
use anyhow::{Result, anyhow};
use plotters::prelude::*;

/// A colour per series, in order; distinguishable and printable.
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 95, 191),
    RGBColor(211, 72, 15),
    RGBColor(46, 125, 50),
    RGBColor(123, 63, 176),
    RGBColor(120, 120, 120),
    RGBColor(0, 140, 150),
    RGBColor(190, 150, 0),
    RGBColor(200, 40, 120),
];

/// Font sizes as plotters takes them. Its SVG backend writes a size S as S / 1.24 px, and a
/// page shows the frontier plot scaled to about 0.9 of its width: these keep every text at
/// 12 px or more as shown (tick labels the smallest: 17 / 1.24 · 0.89 ≈ 12.2 px).
const TICK: u32 = 17;
const CAPTION: u32 = 18;
const TITLE: u32 = 20;

/// Ticks per axis: few enough that labels never touch (see the plot tests).
const TICKS: usize = 4;

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plot: {e:?}")
}

fn strategies(rows: &[RefreshRow]) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in rows {
        if !v.contains(&r.strategy) {
            v.push(r.strategy.clone());
        }
    }
    v
}

/// An axis range around `lo..hi` from a power of ten to a higher one (at least a decade), so
/// that a log axis always has at least two labelled ticks.
fn decades(lo: f64, hi: f64) -> std::ops::Range<f64> {
    let a = 10f64.powf((lo / 1.2).log10().floor());
    let b = 10f64.powf((hi * 1.2).log10().ceil()).max(a * 10.0);
    // Just outside the powers of ten, so that their ticks are inside the range.
    a * 0.98..b * 1.02
}

/// The coalescing frontier: one panel per cell (rows: parked and served × P; columns: K),
/// each strategy one point at (median ms to the final list, mean list round trips per burst),
/// log–log.
pub fn refresh_frontier(rows: &[RefreshRow]) -> Result<String> {
    let cells = crate::bench_refresh::cells(rows);
    let names = strategies(rows);
    let mut ks: Vec<u32> = cells.iter().map(|c| c.k).collect();
    ks.sort_unstable();
    ks.dedup();
    let mut lines: Vec<(u32, bool, bool, u32)> = cells
        .iter()
        .map(|c| (c.spacing_ms, c.served, c.quiet, c.pages))
        .collect();
    lines.sort_unstable();
    lines.dedup();
    let (cols, nrows) = (ks.len().max(1), lines.len().max(1));
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (380 * cols as u32, 300 * nrows as u32 + 110))
            .into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (head, body) = root.split_vertically(34);
        head.draw(&Text::new(
            "Round trips per burst (mean) against ms to the final list (median)",
            (12, 8),
            ("sans-serif", TITLE).into_font().style(FontStyle::Bold),
        ))
        .map_err(err)?;
        let (grid, legend) = body.split_vertically(300 * nrows as u32);
        let panels = grid.split_evenly((nrows, cols));
        for (i, panel) in panels.iter().enumerate() {
            let (spacing, served, quiet, pages) = lines[i / cols];
            let k = ks[i % cols];
            let Some(cell) = cells.iter().find(|c| {
                c.spacing_ms == spacing
                    && c.served == served
                    && c.quiet == quiet
                    && c.pages == pages
                    && c.k == k
            }) else {
                continue;
            };
            let pts: Vec<(usize, f64, f64)> = cell
                .rows
                .iter()
                .filter(|r| r.converged > 0 && r.requests.mean > 0.0)
                .filter_map(|r| {
                    let at = names.iter().position(|n| *n == r.strategy)?;
                    Some((at, r.converge_ms.p50.max(1e-3), r.requests.mean))
                })
                .collect();
            let (x0, x1) = pts.iter().fold((f64::INFINITY, 0f64), |(lo, hi), p| {
                (lo.min(p.1), hi.max(p.1))
            });
            let (y0, y1) = pts.iter().fold((f64::INFINITY, 0f64), |(lo, hi), p| {
                (lo.min(p.2), hi.max(p.2))
            });
            if pts.is_empty() {
                continue;
            }
            // How the reference fares against the debounce points, in the caption.
            let mark = match cell.undominated() {
                Some(u) if !u.is_empty() => " · loses",
                Some(_) if !cell.tied().is_empty() => " · ties",
                Some(_) => " · wins",
                None => "",
            };
            let (xr, yr) = (decades(x0, x1), decades(y0, y1));
            let mut chart = ChartBuilder::on(panel)
                .caption(
                    format!(
                        "{}{}, P = {pages}, K = {k}{mark}",
                        match (spacing, served) {
                            (0, false) => "parked".to_owned(),
                            (0, true) => "served".to_owned(),
                            (ms, _) => format!("spaced {ms} ms"),
                        },
                        if quiet { " (quiet)" } else { "" }
                    ),
                    ("sans-serif", CAPTION),
                )
                .margin(12)
                .margin_right(30)
                .x_label_area_size(44)
                .y_label_area_size(58)
                .build_cartesian_2d(xr.log_scale(), yr.log_scale())
                .map_err(err)?;
            chart
                .configure_mesh()
                .x_labels(TICKS)
                .y_labels(TICKS)
                .x_desc("ms to final list")
                .y_desc("round trips")
                .label_style(("sans-serif", TICK))
                .axis_desc_style(("sans-serif", TICK))
                .x_label_formatter(&|x| crate::md::num(*x))
                .y_label_formatter(&|y| crate::md::num(*y))
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
                .map_err(err)?;
            // The reference last and as a ring, so that points on top of it leave it visible.
            let mut pts = pts;
            pts.sort_by_key(|(at, _, _)| names[*at] == crate::bench_refresh::REFERENCE);
            for (at, x, y) in pts {
                let color = PALETTE[at % PALETTE.len()];
                if names[at] == crate::bench_refresh::REFERENCE {
                    chart
                        .draw_series(std::iter::once(Circle::new(
                            (x, y),
                            9,
                            color.stroke_width(3),
                        )))
                        .map_err(err)?;
                } else {
                    chart
                        .draw_series(std::iter::once(Circle::new((x, y), 5, color.filled())))
                        .map_err(err)?;
                }
            }
        }
        // One legend for every panel.
        let per_row = 4usize;
        for (i, name) in names.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let x = 20 + (i % per_row) as i32 * 280;
            let y = 16 + (i / per_row) as i32 * 28;
            if name == crate::bench_refresh::REFERENCE {
                legend
                    .draw(&Circle::new((x, y), 8, color.stroke_width(3)))
                    .map_err(err)?;
            } else {
                legend
                    .draw(&Circle::new((x, y), 5, color.filled()))
                    .map_err(err)?;
            }
            legend
                .draw(&Text::new(
                    name.clone(),
                    (x + 14, y - 9),
                    ("sans-serif", TICK),
                ))
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// Read-latency percentiles per store, one panel per reader count, stacked. The maximum is left
/// out (it is in the page's table): a single read descheduled for milliseconds would flatten
/// every percentile below it.
pub fn read_latency(rows: &[ChurnRow]) -> Result<String> {
    let mut readers: Vec<u32> = rows
        .iter()
        .filter(|r| r.store != "timer only")
        .map(|r| r.readers)
        .collect();
    readers.sort_unstable();
    readers.dedup();
    let mut stores: Vec<String> = Vec::new();
    for r in rows {
        if !stores.contains(&r.store) {
            stores.push(r.store.clone());
        }
    }
    let labels = ["p50", "p90", "p99", "p99.9"];
    let pick = |r: &ChurnRow| [r.read_ns.p50, r.read_ns.p90, r.read_ns.p99, r.read_ns.p999];
    let all: Vec<f64> = rows.iter().flat_map(pick).filter(|v| *v > 0.0).collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min).max(1.0) / 2.0;
    let hi = all.iter().copied().fold(10.0, f64::max) * 3.0;
    let mut buf = String::new();
    {
        let height = 340 * readers.len().max(1) as u32 + 40;
        let root = SVGBackend::with_string(&mut buf, (900, height)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (head, body) = root.split_vertically(40);
        head.draw(&Text::new(
            "Snapshot read latency, a writer publishing meanwhile (ns, log scale)",
            (12, 10),
            ("sans-serif", TITLE).into_font().style(FontStyle::Bold),
        ))
        .map_err(err)?;
        let panels = body.split_evenly((readers.len().max(1), 1));
        for (panel, m) in panels.iter().zip(&readers) {
            let mut chart = ChartBuilder::on(panel)
                .caption(
                    format!(
                        "{m} reader thread{} + 1 writer",
                        if *m == 1 { "" } else { "s" }
                    ),
                    ("sans-serif", CAPTION),
                )
                .margin(12)
                .x_label_area_size(36)
                .y_label_area_size(70)
                .build_cartesian_2d(-0.3f64..3.3f64, (lo..hi).log_scale())
                .map_err(err)?;
            chart
                .configure_mesh()
                .x_labels(4)
                .y_labels(TICKS)
                .label_style(("sans-serif", TICK))
                .axis_desc_style(("sans-serif", TICK))
                .x_label_formatter(&|x| {
                    let i = x.round();
                    if (x - i).abs() < 0.01 && (0.0..4.0).contains(&i) {
                        labels[i as usize].to_owned()
                    } else {
                        String::new()
                    }
                })
                .y_desc("ns per read")
                .y_label_formatter(&|y| format!("{y:.0}"))
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
                .map_err(err)?;
            for (i, store) in stores.iter().enumerate() {
                let row = rows
                    .iter()
                    .find(|r| r.store == *store && (r.readers == *m || r.store == "timer only"));
                let Some(row) = row else { continue };
                let color = PALETTE[i % PALETTE.len()];
                let pts: Vec<(f64, f64)> = pick(row)
                    .iter()
                    .enumerate()
                    .map(|(x, y)| (x as f64, y.max(lo)))
                    .collect();
                let style = if store == "timer only" {
                    PALETTE[4].stroke_width(1)
                } else {
                    color.stroke_width(2)
                };
                chart
                    .draw_series(LineSeries::new(pts.clone(), style))
                    .map_err(err)?
                    .label(store.clone())
                    .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
                chart
                    .draw_series(pts.iter().map(|p| Circle::new(*p, 3, style.color.filled())))
                    .map_err(err)?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(180, 180, 180))
                .label_font(("sans-serif", TICK))
                .draw()
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
}
