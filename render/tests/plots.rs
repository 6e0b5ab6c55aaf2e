//! The bench plots, drawn from the committed `reports/bench.json`, are readable: no two tick
//! labels of one axis overlap, every panel has labelled ticks on both axes, and no text is
//! smaller than 12 px as a page shows the plot. plotters' SVG backend cannot measure text (it
//! has no fonts), so a label's width is estimated from its length: 0.6 of the font size per
//! character, more than DejaVu Sans needs for digits.

use listsync_render::bench::BenchFile;
use listsync_render::plot;
use std::path::Path;

/// A text element: position, anchor, font size (px), content.
struct Label {
    x: f64,
    y: f64,
    anchor: String,
    size: f64,
    text: String,
    rotated: bool,
}

fn labels(svg: &str) -> Vec<Label> {
    let doc = roxmltree::Document::parse(svg).expect("the plot is XML");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| Label {
            x: n.attribute("x").and_then(|v| v.parse().ok()).unwrap_or(0.0),
            y: n.attribute("y").and_then(|v| v.parse().ok()).unwrap_or(0.0),
            anchor: n.attribute("text-anchor").unwrap_or("start").to_owned(),
            size: n
                .attribute("font-size")
                .and_then(|v| v.parse().ok())
                .unwrap_or(0.0),
            text: n.text().unwrap_or("").trim().to_owned(),
            rotated: n.attribute("transform").is_some(),
        })
        .collect()
}

/// The horizontal extent of a label.
fn span(l: &Label) -> (f64, f64) {
    let w = l.text.chars().count() as f64 * l.size * 0.6;
    match l.anchor.as_str() {
        "middle" => (l.x - w / 2.0, l.x + w / 2.0),
        "end" => (l.x - w, l.x),
        _ => (l.x, l.x + w),
    }
}

/// Tick labels that overlap another of the same axis: x-axis labels share a baseline
/// (`middle`-anchored, one row), y-axis labels share a right edge (`end`-anchored, one column).
fn overlaps(svg: &str) -> Vec<String> {
    let ls = labels(svg);
    let mut out = Vec::new();
    for (i, a) in ls.iter().enumerate() {
        for b in &ls[i + 1..] {
            if a.rotated || b.rotated || a.text.is_empty() || b.text.is_empty() {
                continue;
            }
            let same_row = (a.y - b.y).abs() < 0.5 && a.anchor == "middle" && b.anchor == "middle";
            let same_col = (a.x - b.x).abs() < 0.5 && a.anchor == "end" && b.anchor == "end";
            let (a0, a1) = span(a);
            let (b0, b1) = span(b);
            if same_row && a0 < b1 && b0 < a1 {
                out.push(format!(
                    "x labels '{}' and '{}' at y {}",
                    a.text, b.text, a.y
                ));
            }
            if same_col && (a.y - b.y).abs() < a.size.max(b.size) {
                out.push(format!(
                    "y labels '{}' and '{}' at x {}",
                    a.text, b.text, a.x
                ));
            }
        }
    }
    out
}

fn committed() -> BenchFile {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/bench.json");
    BenchFile::read(&path).expect("the committed bench.json reads")
}

/// The width a page shows the plot at (GitHub's content column), over the plot's own.
fn shown_scale(svg: &str) -> f64 {
    let doc = roxmltree::Document::parse(svg).expect("XML");
    let width: f64 = doc
        .root_element()
        .attribute("width")
        .and_then(|w| w.parse().ok())
        .expect("a width");
    (1012.0 / width).min(1.0)
}

fn check(name: &str, svg: &str) {
    let bad = overlaps(svg);
    assert!(bad.is_empty(), "{name}: overlapping tick labels: {bad:?}");
    let scale = shown_scale(svg);
    for l in labels(svg) {
        assert!(
            l.size * scale >= 12.0,
            "{name}: '{}' is {:.1} px as shown",
            l.text,
            l.size * scale
        );
    }
}

#[test]
fn the_frontier_plot_has_ticks_on_every_panel_and_no_overlapping_labels() {
    let b = committed();
    let svg = plot::refresh_frontier(&b.refresh.expect("a refresh group").rows).expect("draws");
    check("refresh-frontier", &svg);
    // Every panel's x axis has at least two numeric tick labels: those above its axis
    // description ("ms to final list", centred under the panel), within the panel's width.
    let ls = labels(&svg);
    let descs: Vec<&Label> = ls.iter().filter(|l| l.text == "ms to final list").collect();
    assert!(descs.len() >= 10, "{} panels", descs.len());
    for d in descs {
        let ticks = ls
            .iter()
            .filter(|l| l.anchor == "middle" && !l.rotated && l.text.parse::<f64>().is_ok())
            .filter(|l| l.y < d.y && d.y - l.y < 40.0 && (l.x - d.x).abs() < 180.0)
            .count();
        assert!(
            ticks >= 2,
            "the panel at x {} y {} has {ticks} x tick labels",
            d.x,
            d.y
        );
    }
}

#[test]
fn the_read_latency_plot_is_not_flattened_by_the_maximum_and_its_labels_do_not_overlap() {
    let b = committed();
    let rows = b.churn.expect("a churn group").rows;
    let svg = plot::read_latency(&rows).expect("draws");
    check("read-latency", &svg);
    assert!(
        !labels(&svg).iter().any(|l| l.text == "max"),
        "the maximum is plotted"
    );
}

#[test]
fn the_overlap_check_sees_an_overlap() {
    let svg = r#"<svg xmlns="http://www.w3.org/2000/svg" width="100" height="50">
        <text x="10" y="20" text-anchor="end" font-size="14">10.0</text>
        <text x="10" y="26" text-anchor="end" font-size="14">9.00</text>
        <text x="40" y="40" text-anchor="middle" font-size="14">0.100</text>
        <text x="50" y="40" text-anchor="middle" font-size="14">0.200</text></svg>"#;
    assert_eq!(overlaps(svg).len(), 2, "{:?}", overlaps(svg));
}
