//! MaxPool and AveragePool with `dilations` above 1, as existing kinds: the input padded (a Pad with
//! -inf for max, zeros for average: the explicit pads and `ceil_mode`'s extra end padding), then one
//! strided Slice per window tap (tap `(i, j)` reads rows `oy * stride_h + i * dilation_h`, likewise
//! columns, of the padded input), folded with Binary Max or Add; an average then multiplies by the
//! reciprocal of each output's count of cells, a constant worked out here: the taps inside the input
//! (`count_include_pad=0`), or inside the input and its explicit pads (`count_include_pad=1`; the
//! extra end padding of `ceil_mode` never counts, as in onnxruntime).
//!
//! `kernel_h * kernel_w` slices make this slower than a pooling kernel, and not int8 (it runs in
//! float between the Dequantize and Quantize of a QDQ model): dilated pooling is rare, and this way
//! every target runs it with the kernels it has.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;

use crate::ir::shape::window_out;
use crate::ir::op::Slice;
use crate::ir::{ConstData, Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::onnx::ops::pool::{emit_2d, PoolWindow};
use crate::ConvertError;

/// What a dilated window computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reduce {
    /// MaxPool.
    Max,
    /// AveragePool (`count_include_pad` from the window).
    Mean,
}

/// Emits the dilated pooling `w` of `x` (rank 3 or 4, NCHW) as the node's output.
pub(crate) fn emit(
    ctx: &mut NodeCtx<'_>,
    x: TensorId,
    w: &PoolWindow,
    reduce: Reduce,
) -> Result<(), ConvertError> {
    emit_2d(ctx, x, |ctx, x| emit_4d(ctx, x, w, reduce))
}

/// [`emit`] on rank-4 `x`; returns the output.
fn emit_4d(
    ctx: &mut NodeCtx<'_>,
    x: TensorId,
    w: &PoolWindow,
    reduce: Reduce,
) -> Result<TensorId, ConvertError> {
    let xs = ctx.shape(x);
    let [n, c, h, wd] = <[usize; 4]>::try_from(xs.as_slice())
        .map_err(|_| ctx.err(format!("input X has shape {xs:?}, expected rank 4")))?;
    let p = &w.pool;
    let [top, left, bottom, right] = p.pads;
    let (kernel, strides, dilations) = (p.kernel, p.strides, w.dilations);
    let out_h = window_out(h, kernel[0], strides[0], dilations[0], top, bottom);
    let out_w = window_out(wd, kernel[1], strides[1], dilations[1], left, right);
    let (out_h, out_w) = (out_h.map_err(|e| ctx.err(e))?, out_w.map_err(|e| ctx.err(e))?);
    let explicit = w.explicit_pads();
    let [pt, pl, pb, pr] = explicit;
    if pt >= kernel[0] || pb >= kernel[0] || pl >= kernel[1] || pr >= kernel[1] {
        return Err(ctx.err(format!(
            "pads {explicit:?} must be smaller than the window {kernel:?}"
        )));
    }
    // Which taps of each output row (column) read the input, and which its explicit pads.
    let rows = Axis {
        size: h,
        kernel: kernel[0],
        stride: strides[0],
        dilation: dilations[0],
        begin: top,
        end: explicit[2],
    };
    let cols = Axis {
        size: wd,
        kernel: kernel[1],
        stride: strides[1],
        dilation: dilations[1],
        begin: left,
        end: explicit[3],
    };
    let inside = |a: &Axis, out| (0..out).map(|o| a.taps(o, false)).collect::<Vec<_>>();
    let (rows_in, cols_in) = (inside(&rows, out_h), inside(&cols, out_w));
    if rows_in.contains(&0) || cols_in.contains(&0) {
        return Err(ctx.err(format!(
            "a pooling window (kernel {kernel:?}, dilations {dilations:?}) has all its taps in the \
             padding; nothing to pool"
        )));
    }

    let x = if p.pads == [0; 4] {
        x
    } else {
        let value = match reduce {
            Reduce::Max => f32::NEG_INFINITY,
            Reduce::Mean => 0.0,
        };
        let pad = Op::Pad {
            before: vec![0, 0, top, left],
            after: vec![0, 0, bottom, right],
            value,
        };
        ctx.emit_tmp("pad", pad, vec![x])?
    };
    let combine = match reduce {
        Reduce::Max => BinaryOp::Max,
        Reduce::Mean => BinaryOp::Add,
    };
    let mut acc: Option<TensorId> = None;
    for i in 0..kernel[0] {
        for j in 0..kernel[1] {
            let tap = Slice {
                start: vec![0, 0, i * dilations[0], j * dilations[1]],
                step: vec![1, 1, as_step(strides[0]), as_step(strides[1])],
                size: vec![n, c, out_h, out_w],
            };
            let t = ctx.emit_tmp(&format!("tap{i}_{j}"), Op::Slice(tap), vec![x])?;
            acc = Some(match acc {
                None => t,
                Some(a) => {
                    let op = Op::Binary {
                        op: combine,
                        act: Activation::None,
                    };
                    ctx.emit_tmp(&format!("sum{i}_{j}"), op, vec![a, t])?
                }
            });
        }
    }
    // A window has at least one tap: `window_out` checked the kernel is not empty.
    let Some(sum) = acc else {
        return Err(ctx.err("attribute kernel_shape is empty"));
    };
    if reduce == Reduce::Max {
        return Ok(sum);
    }
    let (rows_n, cols_n) = if p.count_include_pad {
        (
            (0..out_h).map(|o| rows.taps(o, true)).collect(),
            (0..out_w).map(|o| cols.taps(o, true)).collect(),
        )
    } else {
        (rows_in, cols_in)
    };
    let scale: Vec<f32> = rows_n
        .iter()
        .flat_map(|&r: &usize| cols_n.iter().map(move |&c| 1.0 / (r * c) as f32))
        .collect();
    let (shape, scale) = if scale.iter().all(|&s| s == scale[0]) {
        (vec![], vec![scale[0]])
    } else {
        (vec![1, 1, out_h, out_w], scale)
    };
    let scale = ctx.add_constant("count", shape, ConstData::F32(scale));
    let mul = Op::Binary {
        op: BinaryOp::Mul,
        act: Activation::None,
    };
    ctx.emit_tmp("mean", mul, vec![sum, scale])
}

/// A pooling window along one axis: `begin` and `end` are the explicit pads (without `ceil_mode`'s).
struct Axis {
    size: usize,
    kernel: usize,
    stride: usize,
    dilation: usize,
    begin: usize,
    end: usize,
}

impl Axis {
    /// How many taps of output `o`'s window read the input, or (`with_pads`) the input or its
    /// explicit pads.
    fn taps(&self, o: usize, with_pads: bool) -> usize {
        let (lo, hi) = if with_pads {
            (0, self.begin + self.size + self.end)
        } else {
            (self.begin, self.begin + self.size)
        };
        (0..self.kernel)
            .map(|k| o * self.stride + k * self.dilation)
            .filter(|at| (lo..hi).contains(at))
            .count()
    }
}

/// A stride as a slice step (strides are attribute values, far below `i64::MAX`).
fn as_step(stride: usize) -> i64 {
    i64::try_from(stride).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn taps_count_the_cells_inside() {
        // size 4, kernel 2, dilation 2, stride 1, begin pad 1, end pad 0: window 0 reads padded
        // cells 0 and 2 (pad, input), window 2 reads 2 and 4 (both input).
        let a = Axis {
            size: 4,
            kernel: 2,
            stride: 1,
            dilation: 2,
            begin: 1,
            end: 0,
        };
        assert_eq!(a.taps(0, false), 1);
        assert_eq!(a.taps(0, true), 2);
        assert_eq!(a.taps(2, false), 2);
        // Window 3 reads 3 and 5: 5 is past the input and its pads (a ceil_mode cell).
        assert_eq!(a.taps(3, false), 1);
        assert_eq!(a.taps(3, true), 1);
    }
}
