//! Depthwise int8 convolution (one input and one output channel per group: `groups == IC == OC`),
//! vectorized over channels; part of `Kernels::quant_conv2d` (see [`super::conv`]).
//!
//! NHWC keeps a pixel's channels contiguous, so for each output pixel the driver lists, per kernel tap,
//! the input pixel's channels (or, for taps in the padding, a row of zero points, which add exactly 0
//! once the zero point is subtracted), and the level multiplies them with its packed `[tap, channel]`
//! weights, accumulating in int32 across taps. The per-tap list is worked out once per pixel and shared
//! by every channel. Output rows are split over the workers.
//!
//! Depthwise layers with a channel multiplier (several output channels per input channel) take the
//! grouped GEMM path instead.

use ember_core::Workspace;

use super::geometry::Geometry;
use super::scratch::{bytes_for, take};
use super::split::{self, Parts};
use super::stage::{self, StageParams};
use super::{DwPixel, Level};

/// Most kernel taps this path takes (a 9x9 kernel); larger depthwise kernels take the grouped GEMM
/// path.
pub(crate) const MAX_TAPS: usize = 81;

/// Whether a convolution runs here.
pub(crate) fn applies(g: &Geometry) -> bool {
    g.groups == g.in_c && g.groups == g.out_c && g.taps() <= MAX_TAPS
}

/// Taps as handed to the level: a multiple of its step.
fn padded_taps<L: Level>(g: &Geometry) -> usize {
    g.taps().next_multiple_of(L::DW_TAP_STEP)
}

/// Element counts of the (shared) scratch regions: stage arrays (`i32`), packed weights (`i16`) and
/// the zero-point row (`i8`).
fn layout<L: Level>(g: &Geometry) -> (usize, usize, usize) {
    let c = g.out_c;
    (
        3 * c.next_multiple_of(L::NR),
        L::dw_packed_len(c, padded_taps::<L>(g)),
        c,
    )
}

/// Scratch bytes for a depthwise convolution of geometry `g` at level `L` (the workers need none of
/// their own).
pub(crate) fn scratch<L: Level>(g: &Geometry, _workers: usize) -> usize {
    let (stage, packed, zeros) = layout::<L>(g);
    bytes_for::<i32>(stage) + bytes_for::<i16>(packed) + bytes_for::<i8>(zeros)
}

/// A depthwise layer's tensors and parameters.
pub(crate) struct Operands<'a> {
    /// Input, NHWC.
    pub x: &'a [i8],
    /// Zero point of the input.
    pub x_zero_point: i8,
    /// Weights `[C, KH, KW, 1]`.
    pub w: &'a [i8],
    /// Bias per channel.
    pub b: Option<&'a [i32]>,
    /// `[C, 2]` or `[1, 2]` requantization rows.
    pub requant: &'a [i32],
    /// The rest of the output stage.
    pub params: StageParams,
}

/// Computes the depthwise convolution into `y`. Returns `false`, having written nothing, when the
/// workspace is missing or its scratch too short.
pub(crate) fn run<L: Level>(
    g: &Geometry,
    op: &Operands<'_>,
    y: &mut [i8],
    ws: Option<&mut Workspace<'_>>,
) -> bool {
    let Some(ws) = ws else { return false };
    let (stage_len, packed_len, zeros_len) = layout::<L>(g);
    let parallel = ws.parallel;
    let workers = ws.workers();
    let mut rest: &mut [u8] = ws.scratch;
    let (Some(arrays), Some(packed), Some(zeros)) = (
        take::<i32>(&mut rest, stage_len),
        take::<i16>(&mut rest, packed_len),
        take::<i8>(&mut rest, zeros_len),
    ) else {
        return false;
    };
    let c = g.out_c;
    let (taps_in, taps) = (g.taps(), padded_taps::<L>(g));
    let simd = stage::fill(arrays, 1, c, c, op.b, op.requant);
    let stage = stage::view(arrays, op.params, simd);
    L::dw_pack(op.w, c, taps_in, taps, packed);
    zeros.fill(op.x_zero_point);
    let (packed, zeros): (&[i16], &[i8]) = (packed, zeros);

    let rows = g.batch * g.out_h;
    let parts = split::parts(workers, rows, g.pixels() * c * taps_in);
    let out = Parts::new(y);
    let job = |i: usize| {
        let rows = split::range(rows, parts, i);
        let first = rows.start * g.out_w;
        // SAFETY: output rows `rows` belong to this job alone (the jobs' ranges are disjoint).
        let out = unsafe { out.part(first * c..rows.end * g.out_w * c) };
        let mut list: [&[i8]; MAX_TAPS + 1] = [&[]; MAX_TAPS + 1];
        for (row, out) in rows.zip(out.chunks_exact_mut(g.out_w * c)) {
            let (n, oy) = (row / g.out_h, row % g.out_h);
            for (ox, out) in out.chunks_exact_mut(c).enumerate() {
                // The tap list: the input pixel's channels, or zero points in the padding.
                let mut t = 0;
                for ky in 0..g.k_h {
                    let iy = g.input_y(oy, ky);
                    for kx in 0..g.k_w {
                        let at = iy
                            .zip(g.input_x(ox, kx))
                            .map(|(iy, ix)| ((n * g.in_h + iy) * g.in_w + ix) * c);
                        list[t] = at.and_then(|at| op.x.get(at..at + c)).unwrap_or(zeros);
                        t += 1;
                    }
                }
                list[t..taps].fill(zeros);
                L::depthwise(DwPixel {
                    taps: &list[..taps],
                    c,
                    x_zero_point: op.x_zero_point,
                    packed,
                    stage,
                    out,
                });
            }
        }
    };
    split::run(parallel, parts, &job);
    true
}
