//! Data movement: one gather through a precomputed index map (transpose, slice, pad, broadcast,
//! concat, gather, nearest resize), bilinear resize through precomputed source rows and columns, and
//! filtered (bicubic, antialiased) resize through precomputed taps.

use cubecl::prelude::*;

/// Marks an output element that no input element lands on (padding).
pub(crate) const NO_SOURCE: u32 = u32::MAX;

/// `y[i] = x[map[i] - lo]` where `lo <= map[i] < hi`; elsewhere `fill` if `use_fill != 0`, else left
/// alone (concat writes each input's part with its own launch).
#[cube(launch)]
pub(crate) fn gather_map(
    x: &[f32],
    map: &[u32],
    y: &mut [f32],
    lo: u32,
    hi: u32,
    use_fill: u32,
    fill: f32,
) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        let m = map[pos];
        if m >= lo && m < hi {
            y[pos] = x[(m - lo) as usize];
        } else if use_fill != 0 {
            y[pos] = fill;
        }
    }
}

/// Bilinear resize. `rows` is `[h_in, w_in, h_out, w_out, c, y0 (h_out), y1 (h_out), x0 (w_out),
/// x1 (w_out)]`, `fracs` is `[fy (h_out), fx (w_out)]`.
#[cube(launch)]
pub(crate) fn resize_linear(x: &[f32], y: &mut [f32], rows: &[u32], fracs: &[f32]) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        let h_in = rows[0] as usize;
        let w_in = rows[1] as usize;
        let h_out = rows[2] as usize;
        let w_out = rows[3] as usize;
        let c = rows[4] as usize;
        let k = pos % c;
        let ox = (pos / c) % w_out;
        let oy = (pos / (c * w_out)) % h_out;
        let plane = pos / (c * w_out * h_out);
        let src = plane * h_in * w_in * c;
        let y0 = rows[5 + oy] as usize;
        let y1 = rows[5 + h_out + oy] as usize;
        let x0 = rows[5 + 2 * h_out + ox] as usize;
        let x1 = rows[5 + 2 * h_out + w_out + ox] as usize;
        let fy = fracs[oy];
        let fx = fracs[h_out + ox];
        let top = src + y0 * w_in * c;
        let bottom = src + y1 * w_in * c;
        let a = x[top + x0 * c + k];
        let b = x[top + x1 * c + k];
        let t = a + (b - a) * fx;
        let a2 = x[bottom + x0 * c + k];
        let b2 = x[bottom + x1 * c + k];
        let d = a2 + (b2 - a2) * fx;
        y[pos] = t + (d - t) * fy;
    }
}

/// Filtered resize (bicubic, antialiased). `rows` is `[h_in, w_in, h_out, w_out, c, kh, kw, iy
/// (h_out * kh), ix (w_out * kw)]`: the source row of each of an output row's `kh` taps, and the
/// source column of each of an output column's `kw` taps; `weights` is `[wy (h_out * kh), wx (w_out *
/// kw)]`. Each row's taps are summed along W, then those sums along H, as the reference does.
#[cube(launch)]
pub(crate) fn resize_filter(x: &[f32], y: &mut [f32], rows: &[u32], weights: &[f32]) {
    let pos = ABSOLUTE_POS;
    if pos < y.len() {
        let h_in = rows[0] as usize;
        let w_in = rows[1] as usize;
        let h_out = rows[2] as usize;
        let w_out = rows[3] as usize;
        let c = rows[4] as usize;
        let kh = rows[5] as usize;
        let kw = rows[6] as usize;
        let k = pos % c;
        let ox = (pos / c) % w_out;
        let oy = (pos / (c * w_out)) % h_out;
        let plane = pos / (c * w_out * h_out);
        let src = plane * h_in * w_in * c + k;
        let cols = 7 + h_out * kh;
        let col_weights = h_out * kh;
        let mut acc = 0.0f32;
        for ty in 0..kh {
            let line = src + (rows[7 + oy * kh + ty] as usize) * w_in * c;
            let mut row = 0.0f32;
            for tx in 0..kw {
                let ix = rows[cols + ox * kw + tx] as usize;
                row += weights[col_weights + ox * kw + tx] * x[line + ix * c];
            }
            acc += weights[oy * kh + ty] * row;
        }
        y[pos] = acc;
    }
}
