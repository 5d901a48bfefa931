//! The convolution and fully connected ops of the IR ([`Op::Conv2d`](super::Op::Conv2d),
//! [`Op::FullyConnected`](super::Op::FullyConnected)) and their shape inference, which the int8 ops of
//! [`crate::ir::quant`] share; also the [`SpatialLayout`] every spatial op carries.

use ember_core::ops::math::activation::Activation;

use crate::ir::shape::window_out;

/// Data layout of a spatial op's 4-D input and output (and of a convolution's weights: OIHW for
/// `Nchw`, OHWI for `Nhwc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpatialLayout {
    /// ONNX's layout, as imported.
    Nchw,
    /// Ember's layout, after the layout pass.
    Nhwc,
}

/// A 2-D convolution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Conv2d {
    /// `[h, w]`.
    pub strides: [usize; 2],
    /// `[h, w]`.
    pub dilations: [usize; 2],
    /// `[top, left, bottom, right]`.
    pub pads: [usize; 4],
    /// Groups (input and output channels are multiples of it).
    pub groups: usize,
    /// Fused activation.
    pub act: Activation,
    /// Layout of input, weights and output.
    pub layout: SpatialLayout,
}

/// The output dims of a convolution with input `x`, weights `w` and bias `b`, or why they do not fit.
pub(crate) fn infer_conv(
    c: &Conv2d,
    x: &[usize],
    w: &[usize],
    b: Option<&[usize]>,
) -> Result<Vec<usize>, String> {
    conv_output(c.layout, c.groups, x, w, b, |axis, len, kernel| {
        let (begin, end) = (c.pads[axis], c.pads[axis + 2]);
        window_out(len, kernel, c.strides[axis], c.dilations[axis], begin, end)
    })
}

/// The output dims of a convolution (plain or transposed) in `layout` with `groups`, input `x`,
/// weights `w` (OIHW or OHWI) and bias `b`, its output lengths from `out_len(axis, input length,
/// kernel length)` (axis 0 is H), or why they do not fit.
pub(crate) fn conv_output(
    layout: SpatialLayout,
    groups: usize,
    x: &[usize],
    w: &[usize],
    b: Option<&[usize]>,
    out_len: impl Fn(usize, usize, usize) -> Result<usize, String>,
) -> Result<Vec<usize>, String> {
    let (n, ch, h, wd) = match (x, layout) {
        ([n, ch, h, wd], SpatialLayout::Nchw) => (*n, *ch, *h, *wd),
        ([n, h, wd, ch], SpatialLayout::Nhwc) => (*n, *ch, *h, *wd),
        _ => return Err(format!("input {x:?} must have rank 4")),
    };
    let (m, wc, kh, kw) = match (w, layout) {
        ([m, wc, kh, kw], SpatialLayout::Nchw) => (*m, *wc, *kh, *kw),
        ([m, kh, kw, wc], SpatialLayout::Nhwc) => (*m, *wc, *kh, *kw),
        _ => return Err(format!("weights {w:?} must have rank 4")),
    };
    let g = groups;
    if g == 0 || ch % g != 0 || m % g != 0 || ch / g != wc {
        return Err(format!(
            "input channels {ch}, output channels {m}, weight channels {wc} and group {g} do not fit \
             (need channels = weight channels x group, both channel counts multiples of group)"
        ));
    }
    if let Some(b) = b {
        if b != [m] {
            return Err(format!("bias {b:?} must be [{m}]"));
        }
    }
    let (oh, ow) = (out_len(0, h, kh)?, out_len(1, wd, kw)?);
    Ok(match layout {
        SpatialLayout::Nchw => vec![n, m, oh, ow],
        SpatialLayout::Nhwc => vec![n, oh, ow, m],
    })
}

/// The output dims of `x [..., IN] W^T` with weights `w [OUT, IN]` and bias `b [OUT]`, or why they
/// do not fit.
pub(crate) fn infer_fully_connected(
    xs: &[usize],
    w: &[usize],
    b: Option<&[usize]>,
) -> Result<Vec<usize>, String> {
    let inner = *xs.last().ok_or("the input must have rank >= 1")?;
    if w.len() != 2 || w[1] != inner {
        return Err(format!(
            "weights {w:?} do not fit input {xs:?} (expected [OUT, {inner}])"
        ));
    }
    if let Some(b) = b {
        if *b != [w[0]] {
            return Err(format!("bias {b:?} must be [{}]", w[0]));
        }
    }
    let mut y = xs.to_vec();
    *y.last_mut().ok_or("the input must have rank >= 1")? = w[0];
    Ok(y)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(layout: SpatialLayout, groups: usize) -> Conv2d {
        Conv2d {
            strides: [2, 1],
            dilations: [1, 2],
            pads: [1, 0, 1, 2],
            groups,
            act: Activation::None,
            layout,
        }
    }

    #[test]
    fn conv_output_dims_follow_the_layout() {
        let nchw = conv(SpatialLayout::Nchw, 1);
        let y = infer_conv(&nchw, &[1, 3, 9, 8], &[16, 3, 3, 3], Some(&[16]));
        assert_eq!(y, Ok(vec![1, 16, 5, 6]));
        let nhwc = conv(SpatialLayout::Nhwc, 1);
        let y = infer_conv(&nhwc, &[1, 9, 8, 3], &[16, 3, 3, 3], None);
        assert_eq!(y, Ok(vec![1, 5, 6, 16]));
    }

    #[test]
    fn conv_rejects_channels_that_do_not_fit_the_groups() {
        let depthwise = conv(SpatialLayout::Nchw, 4);
        assert!(infer_conv(&depthwise, &[1, 4, 9, 8], &[4, 1, 3, 3], None).is_ok());
        assert!(infer_conv(&depthwise, &[1, 4, 9, 8], &[4, 2, 3, 3], None).is_err());
        assert!(infer_conv(
            &conv(SpatialLayout::Nchw, 0),
            &[1, 4, 9, 8],
            &[4, 4, 3, 3],
            None
        )
        .is_err());
        assert!(infer_conv(&depthwise, &[1, 4, 9, 8], &[4, 1, 3, 3], Some(&[3])).is_err());
        assert!(infer_conv(&depthwise, &[4, 9, 8], &[4, 1, 3, 3], None).is_err());
    }

    #[test]
    fn fully_connected_replaces_the_last_dim() {
        assert_eq!(
            infer_fully_connected(&[2, 5, 8], &[3, 8], Some(&[3])),
            Ok(vec![2, 5, 3])
        );
        assert!(infer_fully_connected(&[2, 5, 8], &[3, 7], None).is_err());
        assert!(infer_fully_connected(&[2, 5, 8], &[3, 8], Some(&[8])).is_err());
        assert!(infer_fully_connected(&[], &[3, 8], None).is_err());
    }
}
