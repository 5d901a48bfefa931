//! `ember inspect --plot plan.svg`: the activation arena over time, as a hand-written SVG. Op index
//! runs along the x axis and arena offset up the y axis; each arena tensor is a rectangle from its
//! first to its last use and from its offset to its offset plus size, so the peak shows as the
//! highest stack. Dashed lines mark the lower bound and the planned total. (Tensors that alias,
//! like a Reshape's input and output, share their bytes and so draw over each other.) A blob with shape
//! variants gets one lane per variant, one above the other, on the same byte scale: the arena is sized
//! for the largest lane, and the space above a smaller one is what `Session::spare_mut` offers.

use std::fmt::Write as _;

use ember_core::format::Storage;
use ember_core::Model;

/// Plot area, in SVG user units.
const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 480.0;
const LEFT: f64 = 80.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const RIGHT: f64 = 150.0;

/// One arena tensor to draw.
struct Block {
    name: String,
    offset: usize,
    bytes: usize,
    first: usize,
    /// Last step, inclusive.
    last: usize,
    /// True for graph outputs, which live to the end.
    to_end: bool,
    shape: String,
}

/// The SVG text of `model`'s arena plan: one lane, or one per shape variant.
pub fn arena_svg(model: &Model<'_>) -> String {
    let lanes: Vec<(String, Model<'_>)> = match model.variant_count() {
        1 => vec![(String::new(), model.clone())],
        n => (0..n)
            .filter_map(|i| {
                let name = crate::cmd::common::variant_name(model, i);
                Some((format!(" of variant {name}"), model.variant(i).ok()?))
            })
            .collect(),
    };
    let blocks: Vec<Vec<Block>> = lanes.iter().map(|(_, m)| blocks(m)).collect();
    // One byte scale for every lane, so that they compare.
    let top_bytes = lanes
        .iter()
        .zip(&blocks)
        .map(|((_, m), b)| lane_top(m, b))
        .max()
        .unwrap_or(1);
    let lane_height = TOP + HEIGHT + BOTTOM;
    let (w, h) = (LEFT + WIDTH + RIGHT, lane_height * lanes.len() as f64);
    let mut s = String::new();
    // `write!` into a `String` cannot fail.
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="10">"#
    );
    for (k, ((title, m), b)) in lanes.iter().zip(&blocks).enumerate() {
        if lanes.len() > 1 {
            let _ = writeln!(
                s,
                r#"<g class="variant" transform="translate(0 {})">"#,
                lane_height * k as f64
            );
        }
        lane(&mut s, m, b, top_bytes, title);
        if lanes.len() > 1 {
            s.push_str("</g>\n");
        }
    }
    s.push_str("</svg>\n");
    s
}

/// The arena tensors of `model`'s plan.
fn blocks(model: &Model<'_>) -> Vec<Block> {
    let steps = model.op_count().max(1);
    (0..model.tensor_count())
        .filter_map(|i| {
            let t = model.tensor(i)?;
            let Storage::Arena { offset } = t.storage else {
                return None;
            };
            let numel: usize = t.dims.iter().map(|&d| d as usize).product();
            Some(Block {
                name: model
                    .tensor_name(i)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("t{i}")),
                offset: offset as usize,
                bytes: numel * t.dtype.size(),
                first: (t.first_use as usize).min(steps - 1),
                // Graph outputs (`u32::MAX`) live to the end.
                last: (t.last_use as usize).min(steps - 1),
                to_end: t.last_use == u32::MAX,
                shape: crate::cmd::common::shape_str(&t.dims),
            })
        })
        .collect()
}

/// The highest byte a lane draws: its tensors, its plan and its lower bound.
fn lane_top(model: &Model<'_>, blocks: &[Block]) -> usize {
    let plan = model.plan();
    blocks
        .iter()
        .map(|b| b.offset + b.bytes)
        .chain([
            plan.activation_bytes as usize,
            plan.lower_bound_bytes as usize,
            1,
        ])
        .max()
        .unwrap_or(1)
}

/// Draws one plan into `s`: its title (`title` after "Activation arena"), axes, a rectangle per
/// tensor, and its lower bound and total, on a scale whose top is `top_bytes`.
fn lane(s: &mut String, model: &Model<'_>, blocks: &[Block], top_bytes: usize, title: &str) {
    let steps = model.op_count().max(1);
    let plan = model.plan();
    let lower_bound = plan.lower_bound_bytes as usize;
    let total = plan.activation_bytes as usize;
    let x = |step: usize| LEFT + WIDTH * step as f64 / steps as f64;
    let y = |bytes: usize| TOP + HEIGHT * (1.0 - bytes as f64 / top_bytes as f64);

    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="20" font-size="14">Activation arena{title}: {total} bytes planned, lower bound {lower_bound} bytes, {} tensors, {} ops</text>"#,
        blocks.len(),
        model.op_count()
    );
    // Axes, with a tick per op (or fewer, for long graphs) and five offset ticks.
    let _ = writeln!(
        s,
        r##"<path d="M{LEFT} {TOP} V{} H{}" fill="none" stroke="#333"/>"##,
        TOP + HEIGHT,
        LEFT + WIDTH
    );
    let every = steps.div_ceil(30).max(1);
    for step in (0..steps).step_by(every) {
        let cx = (x(step) + x(step + 1)) / 2.0;
        let _ = writeln!(
            s,
            r#"<text x="{cx:.1}" y="{:.1}" text-anchor="middle">{step}</text>"#,
            TOP + HEIGHT + 14.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">op index</text>"#,
        LEFT + WIDTH / 2.0,
        TOP + HEIGHT + 34.0
    );
    for k in 0..=4 {
        let bytes = top_bytes * k / 4;
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{bytes}</text>"#,
            LEFT - 6.0,
            y(bytes) + 3.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="16" y="{:.1}" transform="rotate(-90 16 {:.1})" text-anchor="middle">arena offset (bytes)</text>"#,
        TOP + HEIGHT / 2.0,
        TOP + HEIGHT / 2.0
    );
    // One rectangle per arena tensor.
    for (i, b) in blocks.iter().enumerate() {
        let (x0, x1) = (x(b.first), x(b.last + 1));
        let (y0, y1) = (y(b.offset + b.bytes), y(b.offset));
        let hue = (i * 137) % 360;
        let _ = writeln!(
            s,
            r##"<rect class="tensor" x="{x0:.1}" y="{y0:.1}" width="{:.1}" height="{:.1}" fill="hsl({hue},60%,70%)" fill-opacity="0.8" stroke="#333" stroke-width="0.5"><title>{} {} {} bytes @{} ops {}..{}</title></rect>"##,
            x1 - x0,
            (y1 - y0).max(0.5),
            escape(&b.name),
            b.shape,
            b.bytes,
            b.offset,
            b.first,
            if b.to_end {
                "end".to_string()
            } else {
                b.last.to_string()
            }
        );
        // A label where it fits (about 6 units per character, 11 of height).
        if (x1 - x0) >= 6.0 * b.name.chars().count() as f64 + 4.0 && (y1 - y0) >= 11.0 {
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                (x0 + x1) / 2.0,
                (y0 + y1) / 2.0 + 3.5,
                escape(&b.name)
            );
        }
    }
    // The lower bound and the total.
    for (bytes, what, colour, dash) in [
        (lower_bound, "lower bound", "#c00", "6 3"),
        (total, "planned", "#00c", "2 2"),
    ] {
        let _ = writeln!(
            s,
            r#"<line class="{}" x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{colour}" stroke-dasharray="{dash}"/>"#,
            what.replace(' ', "-"),
            y(bytes),
            LEFT + WIDTH,
            y(bytes)
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" fill="{colour}">{what} {bytes}</text>"#,
            LEFT + WIDTH + 6.0,
            y(bytes) + if what == "planned" { -4.0 } else { 10.0 }
        );
    }
}

/// `text` with XML's special characters escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}
