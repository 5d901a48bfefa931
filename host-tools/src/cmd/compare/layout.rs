//! Which of a blob's tensors hold their bytes in NHWC order, and how to read them in ONNX's order.
//!
//! The blob does not record layouts; the kernels define them. Convolutions and pools read and write
//! NHWC. An op that reads an NHWC tensor without a Transpose in front works on it as it is (the
//! converter's layout pass inserts a Transpose wherever an op needs ONNX's order): a Reshape keeps
//! the byte order (a Flatten whose Transpose the converter folded into the next layer's weights), and
//! so does an element-wise op of one input (a Dequantize of that Flatten), a 4-D result of anything
//! else is NHWC, and a result of lower rank (a reduction over H and W) is in
//! ONNX's order. A Transpose `[0, 3, 1, 2]` of an NHWC tensor goes back to ONNX's order, and one
//! `[0, 2, 3, 1]` of an ONNX-ordered 4-D tensor makes an NHWC one.

use std::collections::HashMap;

use ember_core::{Model, OpKind};

/// For each tensor whose bytes are NHWC: the logical NCHW dims of those bytes.
pub struct Layouts {
    nhwc: HashMap<u32, [usize; 4]>,
}

impl Layouts {
    /// Walks the ops of `model` in order.
    pub fn of(model: &Model<'_>) -> Self {
        let mut nhwc: HashMap<u32, [usize; 4]> = HashMap::new();
        let dims = |id: u32| -> Vec<usize> {
            model
                .tensor(id as usize)
                .map(|t| t.dims.iter().map(|&d| d as usize).collect())
                .unwrap_or_default()
        };
        let nchw_of = |d: &[usize]| -> Option<[usize; 4]> {
            match d {
                [n, h, w, c] => Some([*n, *c, *h, *w]),
                _ => None,
            }
        };
        for i in 0..model.op_count() {
            let Some(op) = model.op(i) else { continue };
            let out = dims(op.output);
            let input = op.inputs.first().and_then(|x| nhwc.get(x).copied());
            let logical = match &op.kind {
                OpKind::Conv2d(_)
                | OpKind::ConvTranspose2d(_)
                | OpKind::MaxPool2d(_)
                | OpKind::AvgPool2d(_)
                | OpKind::GlobalAvgPool
                | OpKind::QuantConv2d(_)
                | OpKind::QuantMaxPool2d(_)
                | OpKind::QuantAvgPool2d(_) => nchw_of(&out),
                // Same elements in the same order: the input's layout, whatever the dims.
                OpKind::Reshape
                | OpKind::Unary(_)
                | OpKind::Cast(_)
                | OpKind::Quantize(_)
                | OpKind::Dequantize(_)
                | OpKind::Requantize(_)
                    if input.is_some_and(|l| {
                        l.iter().product::<usize>() == out.iter().product::<usize>()
                    }) =>
                {
                    input
                }
                OpKind::Reshape => None,
                OpKind::Transpose(p) => {
                    let perm: Vec<usize> = p.perm[..out.len().min(p.perm.len())]
                        .iter()
                        .map(|&a| usize::from(a))
                        .collect();
                    match (input, perm.as_slice()) {
                        (Some(_), [0, 3, 1, 2]) => None,
                        (None, [0, 2, 3, 1]) => nchw_of(&out),
                        _ => None,
                    }
                }
                _ => {
                    let any_nhwc = op.inputs.iter().any(|x| nhwc.contains_key(x));
                    if any_nhwc {
                        nchw_of(&out)
                    } else {
                        None
                    }
                }
            };
            if let Some(l) = logical {
                nhwc.insert(op.output, l);
            }
        }
        Layouts { nhwc }
    }

    /// `values` of tensor `id` (in its stored order) in ONNX's order: unchanged unless the tensor is
    /// NHWC, whose `[N, H, W, C]` elements are then read as `[N, C, H, W]`.
    pub fn to_onnx_order(&self, id: u32, values: Vec<f64>) -> Vec<f64> {
        let Some(&[n, c, h, w]) = self.nhwc.get(&id) else {
            return values;
        };
        if n * c * h * w != values.len() {
            return values;
        }
        let mut out = vec![0.0; values.len()];
        for b in 0..n {
            for y in 0..h {
                for x in 0..w {
                    for ch in 0..c {
                        out[((b * c + ch) * h + y) * w + x] =
                            values[((b * h + y) * w + x) * c + ch];
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nhwc_values_are_read_in_nchw_order() {
        // One image, 2 channels, 1x2 pixels: NHWC bytes [p0c0, p0c1, p1c0, p1c1].
        let mut nhwc = HashMap::new();
        nhwc.insert(7, [1, 2, 1, 2]);
        let l = Layouts { nhwc };
        assert_eq!(
            l.to_onnx_order(7, vec![1.0, 2.0, 3.0, 4.0]),
            vec![1.0, 3.0, 2.0, 4.0]
        );
        // A tensor in ONNX's order is left as it is.
        assert_eq!(l.to_onnx_order(8, vec![1.0, 2.0]), vec![1.0, 2.0]);
    }
}
