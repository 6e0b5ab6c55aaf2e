//! Bench plots as SVG, drawn with plotters: list round trips and walks per burst against K per
//! strategy, convergence time against K, and read-latency percentiles per store.

use crate::bench::{ChurnRow, RefreshRow};
use anyhow::{Result, anyhow};
use plotters::prelude::*;

/// A colour per series, in order; distinguishable and printable.
const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 95, 191),
    RGBColor(211, 72, 15),
    RGBColor(46, 125, 50),
    RGBColor(123, 63, 176),
    RGBColor(120, 120, 120),
    RGBColor(0, 140, 150),
];

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

/// One panel per page count (readers = 0): `metric(row)` against K, log–log, one line per
/// strategy. `floor` replaces values below it (log axes have no zero).
fn refresh_panels(
    rows: &[RefreshRow],
    title: &str,
    y_desc: &str,
    metric: &dyn Fn(&RefreshRow) -> Option<f64>,
    target: Option<f64>,
) -> Result<String> {
    let mut pages: Vec<u32> = rows.iter().map(|r| r.pages).collect();
    pages.sort_unstable();
    pages.dedup();
    let names = strategies(rows);
    let values: Vec<f64> = rows
        .iter()
        .filter(|r| !r.served_during_burst)
        .filter_map(metric)
        .filter(|v| *v > 0.0)
        .collect();
    let floor = values
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min)
        .min(0.5)
        / 2.0;
    let top = values.iter().copied().fold(1.0, f64::max) * 3.0;
    let mut buf = String::new();
    {
        let width = 520 * pages.len().max(1) as u32;
        let root = SVGBackend::with_string(&mut buf, (width, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (head, body) = root.split_vertically(34);
        head.draw(&Text::new(
            title.to_owned(),
            (12, 10),
            ("sans-serif", 18).into_font().style(FontStyle::Bold),
        ))
        .map_err(err)?;
        let panels = body.split_evenly((1, pages.len().max(1)));
        for (panel, p) in panels.iter().zip(&pages) {
            let mut chart = ChartBuilder::on(panel)
                .caption(
                    format!(
                        "{p} page{} per list, no readers",
                        if *p == 1 { "" } else { "s" }
                    ),
                    ("sans-serif", 15),
                )
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d((0.7f64..1500f64).log_scale(), (floor..top).log_scale())
                .map_err(err)?;
            chart
                .configure_mesh()
                .x_desc("K, notifications in the burst")
                .y_desc(y_desc)
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_label_formatter(&|y| {
                    if *y >= 1.0 {
                        format!("{y:.0}")
                    } else {
                        format!("{y:.2}")
                    }
                })
                .light_line_style(RGBColor(235, 235, 235))
                .draw()
                .map_err(err)?;
            if let Some(t) = target {
                chart
                    .draw_series(LineSeries::new(
                        [(0.7, t), (1500.0, t)],
                        RGBColor(200, 0, 0).stroke_width(1),
                    ))
                    .map_err(err)?
                    .label(format!("target ≤ {t}"))
                    .legend(|(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], RGBColor(200, 0, 0))
                    });
            }
            for (i, name) in names.iter().enumerate() {
                let color = PALETTE[i % PALETTE.len()];
                let mut pts: Vec<(f64, f64)> = rows
                    .iter()
                    .filter(|r| {
                        r.strategy == *name
                            && r.pages == *p
                            && r.readers == 0
                            && !r.served_during_burst
                    })
                    .filter_map(|r| metric(r).map(|v| (f64::from(r.k), v.max(floor))))
                    .collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                // Offset each strategy a little along x so coinciding points stay visible.
                let nudge = 1.0 + (i as f64 - names.len() as f64 / 2.0) * 0.03;
                let pts: Vec<(f64, f64)> = pts.into_iter().map(|(x, y)| (x * nudge, y)).collect();
                chart
                    .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(err)?
                    .label(name.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                    });
                chart
                    .draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))
                    .map_err(err)?;
            }
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(RGBColor(180, 180, 180))
                .label_font(("sans-serif", 13))
                .draw()
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// List round trips (page requests) per burst against K.
pub fn refresh_round_trips(rows: &[RefreshRow]) -> Result<String> {
    refresh_panels(
        rows,
        "List round trips per burst (mean; every page request)",
        "round trips per burst",
        &|r| Some(r.requests.mean),
        None,
    )
}

/// Walks (first-page list requests) per burst against K.
pub fn refresh_walks(rows: &[RefreshRow]) -> Result<String> {
    refresh_panels(
        rows,
        "List walks per burst (mean; first-page list requests)",
        "walks per burst",
        &|r| Some(r.walks.mean),
        Some(2.0),
    )
}

/// Convergence time against K.
pub fn refresh_converge(rows: &[RefreshRow]) -> Result<String> {
    refresh_panels(
        rows,
        "Last mutation to final list published (median, ms)",
        "ms",
        &|r| (r.converged > 0).then_some(r.converge_ms.p50),
        None,
    )
}

/// Read-latency percentiles per store, one panel per reader count.
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
    let labels = ["p50", "p90", "p99", "p99.9", "max"];
    let pick = |r: &ChurnRow| {
        [
            r.read_ns.p50,
            r.read_ns.p90,
            r.read_ns.p99,
            r.read_ns.p999,
            r.read_ns.max,
        ]
    };
    let all: Vec<f64> = rows.iter().flat_map(pick).filter(|v| *v > 0.0).collect();
    let lo = all.iter().copied().fold(f64::INFINITY, f64::min).max(1.0) / 2.0;
    let hi = all.iter().copied().fold(10.0, f64::max) * 3.0;
    let mut buf = String::new();
    {
        let width = 520 * readers.len().max(1) as u32;
        let root = SVGBackend::with_string(&mut buf, (width, 420)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let (head, body) = root.split_vertically(34);
        head.draw(&Text::new(
            "Snapshot read latency while a writer publishes continuously (ns, log scale)",
            (12, 10),
            ("sans-serif", 18).into_font().style(FontStyle::Bold),
        ))
        .map_err(err)?;
        let panels = body.split_evenly((1, readers.len().max(1)));
        for (panel, m) in panels.iter().zip(&readers) {
            let mut chart = ChartBuilder::on(panel)
                .caption(
                    format!(
                        "{m} reader thread{} + 1 writer",
                        if *m == 1 { "" } else { "s" }
                    ),
                    ("sans-serif", 15),
                )
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(70)
                .build_cartesian_2d(-0.3f64..4.3f64, (lo..hi).log_scale())
                .map_err(err)?;
            chart
                .configure_mesh()
                .x_labels(5)
                .x_label_formatter(&|x| {
                    let i = x.round();
                    if (x - i).abs() < 0.01 && (0.0..5.0).contains(&i) {
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
                .label_font(("sans-serif", 13))
                .draw()
                .map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    Ok(buf)
}
