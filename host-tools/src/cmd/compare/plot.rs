//! `ember compare --plot`: the error of every layer along the graph, as an SVG drawn by hand.
//!
//! One point per compared layer (x: its place in the graph), y: the mean absolute error on a log
//! axis (decades), a second line for the largest error, and a red mark on the first layer over the
//! threshold. Layer names label the x axis.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use super::Row;

const W: f64 = 900.0;
const H: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 140.0;

/// Writes the plot of `rows` to `path`.
pub fn write(path: &Path, rows: &[Row], first: Option<usize>) -> Result<()> {
    crate::emit::write(path, svg(rows, first).as_bytes())
}

/// The SVG text.
fn svg(rows: &[Row], first: Option<usize>) -> String {
    // Errors of exactly zero sit on the bottom of the axis.
    let floor = 1e-12;
    let logs = |f: fn(&Row) -> f64| -> Vec<f64> {
        rows.iter()
            .map(|r| f(r).max(floor).min(1e30).log10())
            .collect()
    };
    let (mean, max) = (logs(|r| r.mean_err), logs(|r| r.max_err));
    let lo = mean
        .iter()
        .chain(&max)
        .copied()
        .fold(f64::INFINITY, f64::min)
        .floor();
    let hi = mean
        .iter()
        .chain(&max)
        .copied()
        .fold(f64::NEG_INFINITY, f64::max)
        .ceil();
    let (lo, hi) = if hi > lo {
        (lo, hi)
    } else {
        (lo - 1.0, lo + 1.0)
    };
    let plot_w = W - LEFT - RIGHT;
    let plot_h = H - TOP - BOTTOM;
    let x = |i: usize| LEFT + plot_w * (i as f64 + 0.5) / rows.len().max(1) as f64;
    let y = |v: f64| TOP + plot_h * (hi - v) / (hi - lo);

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="18" font-size="13">error per layer against onnxruntime (log scale)</text>"#
    );
    for d in (lo as i64)..=(hi as i64) {
        let yy = y(d as f64);
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#ddd"/><text x="{:.1}" y="{:.1}" text-anchor="end">1e{d}</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            yy + 4.0
        );
    }
    for (i, r) in rows.iter().enumerate() {
        let xx = x(i);
        let _ = writeln!(
            s,
            r#"<text transform="translate({xx:.1},{:.1}) rotate(60)">{}</text>"#,
            H - BOTTOM + 12.0,
            escape(&r.layer)
        );
    }
    for (values, color, label, ly) in [
        (&max, "#d62728", "max |err|", 0.0),
        (&mean, "#1f77b4", "mean |err|", 14.0),
    ] {
        let points: Vec<String> = values
            .iter()
            .enumerate()
            .map(|(i, &v)| format!("{:.1},{:.1}", x(i), y(v)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="1.5"/>"#,
            points.join(" ")
        );
        for (i, &v) in values.iter().enumerate() {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{color}"/>"#,
                x(i),
                y(v)
            );
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" fill="{color}">{label}</text>"#,
            W - RIGHT - 80.0,
            TOP + 10.0 + ly
        );
    }
    if let Some(i) = first {
        let _ = writeln!(
            s,
            r#"<line x1="{0:.1}" y1="{TOP}" x2="{0:.1}" y2="{1:.1}" stroke="red" stroke-dasharray="4 3"/><text x="{2:.1}" y="{3:.1}" fill="red">first over the threshold</text>"#,
            x(i),
            H - BOTTOM,
            x(i) + 4.0,
            TOP + 10.0
        );
    }
    let _ = writeln!(
        s,
        r#"<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" stroke="black"/>"#
    );
    s.push_str("</svg>\n");
    s
}

/// `text` with XML's special characters escaped.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
