//! int8 Conv2d (`Kernels::quant_conv2d`), bit-identical to `ember_core::ops::quant::conv::conv2d`.
//!
//! - Depthwise convolutions (one input and one output channel per group, kernels of up to
//!   [`depthwise::MAX_TAPS`] taps) run [`depthwise`], vectorized over channels.
//! - Every other convolution is a GEMM per group ([`gemm`]): output pixels are rows, `KH * KW * IC /
//!   groups` inputs each (OHWI weights are already rows in that order). A 1x1 kernel reads its rows
//!   from the input itself; other kernels gather each pixel's receptive field into an im2col row in
//!   the worker's scratch, with the input zero point as padding (so padded taps add exactly 0, as the
//!   reference's skipped taps do).

use ember_core::ops::quant::conv::{self as reference, QuantConv2dParams};
use ember_core::ops::Out;
use ember_core::Workspace;

use super::gemm::{self, Operands, RowSource, Shape};
use super::geometry::Geometry;
use super::stage::StageParams;
use super::{depthwise, Level, Tensors};

/// What the driver asks of a convolution's geometry: that its tensors have the lengths of its dims, and
/// its GEMM (output pixels as rows).
impl Geometry {
    /// Whether the data lengths match the dims (a session's always do).
    fn fits(&self, x: usize, w: usize, b: Option<usize>, requant: usize, y: usize) -> bool {
        let k = self.taps() * self.group_in_c();
        x == self.batch * self.in_h * self.in_w * self.in_c
            && w == self.out_c * k
            && y == self.pixels() * self.out_c
            && b.is_none_or(|b| b == self.out_c)
            && (requant == 2 || requant == 2 * self.out_c)
            && self.in_c.is_multiple_of(self.groups)
            && self.out_c.is_multiple_of(self.groups)
    }

    fn shape(&self) -> Shape {
        Shape {
            m: self.pixels(),
            k: self.taps() * self.group_in_c(),
            groups: self.groups,
            n: self.group_out_c(),
            unit: self.out_w,
        }
    }
}

/// `y = clamp(requant(conv(x - x_zero_point, w) + b) + y_zero_point, act_min, act_max)`: the
/// reference's contract (see `ember_core::ops::quant::conv::conv2d`), at level `L`.
pub(crate) fn conv2d<L: Level>(
    p: &QuantConv2dParams,
    t: Tensors<'_>,
    y: Out<'_, i8>,
    ws: Option<&mut Workspace<'_>>,
) {
    if !run::<L>(p, t, y.data, y.dims, ws) {
        reference::conv2d(p, t.x, t.w, t.b, t.requant, y);
    }
}

/// [`conv2d`] without the fallback: `false`, having written nothing, where it would run the
/// reference (no workspace, too little scratch, data shorter than the dims).
pub(crate) fn run<L: Level>(
    p: &QuantConv2dParams,
    Tensors { x, w, b, requant }: Tensors<'_>,
    y: &mut [i8],
    y_dims: &[usize],
    ws: Option<&mut Workspace<'_>>,
) -> bool {
    if y.is_empty() {
        return true;
    }
    let Some(g) = Geometry::new(p, x.dims, w.dims, y_dims) else {
        return false;
    };
    let lens = (x.data.len(), w.data.len(), b.map(<[i32]>::len));
    if !g.fits(lens.0, lens.1, lens.2, requant.len(), y.len()) {
        return false;
    }
    let params = StageParams::from(p);
    if depthwise::applies(&g) {
        let op = depthwise::Operands {
            x: x.data,
            x_zero_point: p.x_zero_point,
            w: w.data,
            b,
            requant,
            params,
        };
        depthwise::run::<L>(&g, &op, y, ws)
    } else {
        let rows = ConvRows {
            g,
            x: x.data,
            x_zero_point: p.x_zero_point,
        };
        let op = Operands {
            rows: &rows,
            x_zero_point: p.x_zero_point,
            w: w.data,
            b,
            requant,
            params,
        };
        gemm::run::<L, _>(&g.shape(), &op, y, ws)
    }
}

/// Scratch bytes [`conv2d`] at level `L` asks for (`x`, `w`, `y` the tensors' dims).
pub(crate) fn scratch<L: Level>(
    p: &QuantConv2dParams,
    x: &[usize],
    w: &[usize],
    y: &[usize],
    workers: usize,
) -> usize {
    match Geometry::new(p, x, w, y) {
        Some(g) if depthwise::applies(&g) => depthwise::scratch::<L>(&g, workers),
        Some(g) => gemm::scratch::<L>(&g.shape(), workers),
        None => 0,
    }
}

/// The rows of a convolution's GEMM: output pixels, each with its receptive field in OHWI order.
struct ConvRows<'a> {
    g: Geometry,
    x: &'a [i8],
    x_zero_point: i8,
}

impl RowSource for ConvRows<'_> {
    fn row<'a>(&'a self, m: usize, group: usize, buf: &'a mut [i8]) -> &'a [i8] {
        let g = &self.g;
        let (n, oy, ox) = g.pixel(m);
        let group_in_c = g.group_in_c();
        let first = group * group_in_c;
        let pixel = |iy: usize, ix: usize| {
            let at = ((n * g.in_h + iy) * g.in_w + ix) * g.in_c + first;
            self.x.get(at..at + group_in_c)
        };
        if g.k_h == 1 && g.k_w == 1 {
            // A 1x1 kernel's row is the input pixel's channels (or padding, gathered below).
            let inside = g.input_y(oy, 0).zip(g.input_x(ox, 0));
            if let Some(xs) = inside.and_then(|(iy, ix)| pixel(iy, ix)) {
                return xs;
            }
        }
        let zp = self.x_zero_point;
        let row_len = g.k_w * group_in_c;
        for (ky, dst) in buf.chunks_exact_mut(row_len.max(1)).enumerate() {
            let Some(iy) = g.input_y(oy, ky) else {
                dst.fill(zp);
                continue;
            };
            if g.groups == 1 && g.dil_w == 1 {
                // The taps inside the input are one run of whole pixels: `kx_lo..kx_hi`.
                let left = ox * g.stride_w;
                let kx_lo = g.pad_left.saturating_sub(left).min(g.k_w);
                let kx_hi = g.k_w.min((g.in_w + g.pad_left).saturating_sub(left));
                let run = kx_lo..kx_hi.max(kx_lo);
                let src = (left + run.start)
                    .checked_sub(g.pad_left)
                    .and_then(|ix| {
                        let at = ((n * g.in_h + iy) * g.in_w + ix) * g.in_c;
                        self.x.get(at..at + run.len() * g.in_c)
                    })
                    .unwrap_or(&[]);
                let (head, rest) = dst.split_at_mut(run.start * group_in_c);
                head.fill(zp);
                let (mid, tail) = rest.split_at_mut(src.len().min(rest.len()));
                mid.copy_from_slice(&src[..mid.len()]);
                tail.fill(zp);
            } else {
                for (kx, tap) in dst.chunks_exact_mut(group_in_c.max(1)).enumerate() {
                    match g.input_x(ox, kx).and_then(|ix| pixel(iy, ix)) {
                        Some(xs) => tap.copy_from_slice(xs),
                        None => tap.fill(zp),
                    }
                }
            }
        }
        buf
    }
}
