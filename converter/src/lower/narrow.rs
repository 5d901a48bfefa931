//! Narrowing of IR window parameters (`usize`) to the blob's integer widths, shared by the float
//! and the int8 lowering, with errors that name the node.

use ember_core::ops::pool::Pool2dParams;

use crate::ir::{Node, Pool2d, SpatialLayout};
use crate::ConvertError;

/// The error for a value `v` of node `n` past Ember's maximum `max` for `what`.
pub(super) fn too_big(n: &Node, what: &str, v: usize, max: usize) -> ConvertError {
    ConvertError::limit(format!(
        "node \"{}\": {what} {v} exceeds Ember's maximum {max}",
        n.name
    ))
}

/// `v` as the blob's `u16`, or the error that names `what` of node `n`.
pub(super) fn u16_of(n: &Node, what: &str, v: usize) -> Result<u16, ConvertError> {
    u16::try_from(v).map_err(|_| too_big(n, what, v, u16::MAX.into()))
}

/// Checks that node `n` reached lowering in Ember's NHWC layout (the layout pass moves every
/// spatial op there).
pub(super) fn nhwc(n: &Node, layout: SpatialLayout) -> Result<(), ConvertError> {
    if layout == SpatialLayout::Nhwc {
        Ok(())
    } else {
        Err(ConvertError::internal(format!(
            "node \"{}\" reached lowering in NCHW layout",
            n.name
        )))
    }
}

/// Each of `v` as the blob's `u16`, or the error that names `what` of node `n`.
pub(super) fn u16s<const N: usize>(
    n: &Node,
    what: &str,
    v: [usize; N],
) -> Result<[u16; N], ConvertError> {
    let mut out = [0; N];
    for (o, &v) in out.iter_mut().zip(&v) {
        *o = u16_of(n, what, v)?;
    }
    Ok(out)
}

/// The blob's pooling window of node `n`'s pool `p`.
pub(super) fn pool(n: &Node, p: &Pool2d) -> Result<Pool2dParams, ConvertError> {
    nhwc(n, p.layout)?;
    let kernel_h = u16_of(n, "kernel height", p.kernel[0])?;
    let kernel_w = u16_of(n, "kernel width", p.kernel[1])?;
    let [stride_h, stride_w] = u16s(n, "stride", p.strides)?;
    let [pad_top, pad_left, pad_bottom, pad_right] = u16s(n, "padding", p.pads)?;
    Ok(Pool2dParams {
        kernel_h,
        kernel_w,
        stride_h,
        stride_w,
        pad_top,
        pad_left,
        pad_bottom,
        pad_right,
        count_include_pad: p.count_include_pad,
    })
}

/// The blob params `$params` of a convolution `$c` of node `$n` (checked to be NHWC): its strides,
/// dilations, pads and groups narrowed to `u16`, with the fields that differ between the float,
/// transposed and int8 convolutions given as `field: value`. Returns early with the error of a
/// value past `u16`.
macro_rules! conv_params {
    ($params:ident, $n:expr, $c:expr, { $($field:ident: $value:expr),* $(,)? }) => {{
        use crate::lower::narrow::{nhwc, u16_of, u16s};
        let (n, c) = ($n, $c);
        nhwc(n, c.layout)?;
        let [stride_h, stride_w] = u16s(n, "stride", c.strides)?;
        let [dilation_h, dilation_w] = u16s(n, "dilation", c.dilations)?;
        let [pad_top, pad_left, pad_bottom, pad_right] = u16s(n, "padding", c.pads)?;
        $(let $field = $value;)*
        let groups = u16_of(n, "group", c.groups)?;
        $params {
            stride_h, stride_w, dilation_h, dilation_w,
            pad_top, pad_left, pad_bottom, pad_right,
            groups, $($field),*
        }
    }};
}
pub(super) use conv_params;
