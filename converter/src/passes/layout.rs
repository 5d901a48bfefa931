//! Moves the graph to Ember's layout: 4-D activations of spatial ops (Conv, pooling) are NHWC, and
//! convolution weights OHWI.
//!
//! Walking the nodes in order, the pass tracks whether each 4-D activation is held in ONNX's layout
//! (NCHW) or as NHWC:
//! - Conv2d, ConvTranspose2d, MaxPool, AvgPool and GlobalAvgPool read NHWC (a Transpose
//!   `[0, 2, 3, 1]` is inserted in front of an NCHW input) and write NHWC; weights are permuted
//!   OIHW -> OHWI at conversion time.
//! - The int8 ops (`ir::quant::QuantOp`) follow their float counterparts: QuantConv2d and the int8
//!   pools like Conv2d and pooling, QuantAdd/QuantMul like binary ops, per-tensor
//!   Quantize/Dequantize/Requantize and the lookup table (QuantLut) like unary ops; the others read
//!   ONNX's layout.
//! - Unary ops write the layout they read; so does Resize of an NHWC activation (or one with an NHWC
//!   copy), which runs channels-last, and a Slice of one (its parameters permuted).
//! - A reduction (also GlobalMaxPool) of an activation that is NHWC (or has an NHWC copy) runs on it,
//!   its axes renumbered, and writes NHWC if it keeps dims; without kept dims it does so when the
//!   remaining axes come out in ONNX's order (e.g. a mean over H and W gives `[N, C]`).
//! - A Concat of 4-D activations that are all NHWC (or have NHWC copies) runs on them, its axis
//!   renumbered, and writes NHWC (the FPN necks of detectors concatenate upsampled feature maps).
//! - A binary op of two NHWC activations stays NHWC (an operand that already has an NHWC copy counts
//!   as NHWC); one of an NHWC activation and a constant of rank <= 4 stays NHWC with the constant
//!   permuted (after padding its shape to rank 4).
//! - Every other op (Flatten, Reshape, Softmax, other Concats, Transpose, Pad, Gemm, MatMul, and binary ops
//!   of mixed layouts) reads ONNX's layout: a Transpose `[0, 3, 1, 2]` is inserted in front of an
//!   NHWC input.
//!
//! Not done here (a later step): pushing transposes through layout-sensitive ops into their weights,
//! e.g. permuting a Gemm's weight rows so that a Flatten after NHWC pooling needs no Transpose. Until
//! then such a Flatten costs one runtime Transpose back to NCHW.
//!
//! Graph inputs and outputs keep ONNX's layout and shape. Conversions are shared: each tensor is
//! transposed at most once per direction. The tidy-up passes later turn transposes of size-1 dims
//! into free reshapes and cancel back-to-back pairs.

use std::collections::HashMap;

use crate::ir::eval::eval;
use crate::ir::quant::QuantOp;
use crate::ir::{Graph, Node, Op, SpatialLayout, TensorId, TensorLayout};
use crate::ConvertError;

const TO_NHWC: [usize; 4] = [0, 2, 3, 1];
const TO_NCHW: [usize; 4] = [0, 3, 1, 2];

#[derive(Default)]
struct Conversions {
    nhwc: HashMap<TensorId, TensorId>,
    onnx: HashMap<TensorId, TensorId>,
}

/// Runs the pass once (it is not meant to be iterated).
pub fn run(g: &mut Graph) -> Result<bool, ConvertError> {
    if g.channels_last {
        return Ok(false);
    }
    let nodes = std::mem::take(&mut g.nodes);
    let mut conv = Conversions::default();
    for mut node in nodes {
        let layout = match &mut node.op {
            Op::Conv2d(c) => {
                c.layout = SpatialLayout::Nhwc;
                node.inputs[0] = conv.nhwc(g, node.inputs[0])?;
                node.inputs[1] = conv.nhwc(g, node.inputs[1])?;
                TensorLayout::Nhwc
            }
            Op::ConvTranspose2d(c) => {
                c.layout = SpatialLayout::Nhwc;
                node.inputs[0] = conv.nhwc(g, node.inputs[0])?;
                node.inputs[1] = conv.nhwc(g, node.inputs[1])?;
                TensorLayout::Nhwc
            }
            Op::MaxPool(p) | Op::AvgPool(p) => {
                p.layout = SpatialLayout::Nhwc;
                node.inputs[0] = conv.nhwc(g, node.inputs[0])?;
                TensorLayout::Nhwc
            }
            Op::GlobalAvgPool { layout } => {
                *layout = SpatialLayout::Nhwc;
                node.inputs[0] = conv.nhwc(g, node.inputs[0])?;
                TensorLayout::Nhwc
            }
            Op::Unary(_) => g.tensor(node.inputs[0]).layout,
            Op::Slice(s) if conv.has_nhwc(g, node.inputs[0]) => {
                // NHWC axis `i` is NCHW axis `TO_NHWC[i]`.
                s.start = TO_NHWC.iter().map(|&a| s.start[a]).collect();
                s.step = TO_NHWC.iter().map(|&a| s.step[a]).collect();
                s.size = TO_NHWC.iter().map(|&a| s.size[a]).collect();
                node.inputs[0] = conv.nhwc(g, node.inputs[0])?;
                TensorLayout::Nhwc
            }
            Op::Resize(r) if conv.has_nhwc(g, node.inputs[0]) => {
                r.params.channels_last = true;
                node.inputs[0] = conv.nhwc(g, node.inputs[0])?;
                TensorLayout::Nhwc
            }
            Op::Reduce { axes, keepdims, .. }
                if conv.has_nhwc(g, node.inputs[0]) && reduces_in_nhwc(axes, *keepdims) =>
            {
                // NCHW axis `a` is NHWC axis `TO_NCHW[a]`.
                let mut moved: Vec<usize> = axes.iter().map(|&a| TO_NCHW[a]).collect();
                moved.sort_unstable();
                *axes = moved;
                node.inputs[0] = conv.nhwc(g, node.inputs[0])?;
                if *keepdims {
                    TensorLayout::Nhwc
                } else {
                    TensorLayout::Onnx
                }
            }
            Op::Binary { .. } => binary(g, &mut conv, &mut node)?,
            Op::Concat { axis }
                if node
                    .inputs
                    .iter()
                    .all(|&t| conv.has_nhwc(g, t) && g.tensor(t).shape.len() == 4) =>
            {
                // NCHW axis `a` is NHWC axis `TO_NCHW[a]`.
                *axis = TO_NCHW[*axis];
                for i in 0..node.inputs.len() {
                    node.inputs[i] = conv.nhwc(g, node.inputs[i])?;
                }
                TensorLayout::Nhwc
            }
            Op::Quant(QuantOp::Conv2d { conv: c, .. }) => {
                c.layout = SpatialLayout::Nhwc;
                node.inputs[0] = conv.nhwc(g, node.inputs[0])?;
                node.inputs[1] = conv.nhwc(g, node.inputs[1])?;
                TensorLayout::Nhwc
            }
            Op::Quant(QuantOp::MaxPool { pool: p, .. } | QuantOp::AvgPool { pool: p, .. }) => {
                p.layout = SpatialLayout::Nhwc;
                node.inputs[0] = conv.nhwc(g, node.inputs[0])?;
                TensorLayout::Nhwc
            }
            // Per-tensor conversions and lookups are element-wise: they keep the layout they read
            // (a lookup's table is 1-D, in no layout).
            Op::Quant(
                QuantOp::Quantize(_)
                | QuantOp::Dequantize(_)
                | QuantOp::Requantize(_)
                | QuantOp::Lut { .. },
            ) => g.tensor(node.inputs[0]).layout,
            Op::Quant(QuantOp::Add(_) | QuantOp::Mul(_)) => binary(g, &mut conv, &mut node)?,
            _ => {
                for i in 0..node.inputs.len() {
                    node.inputs[i] = conv.onnx(g, node.inputs[i])?;
                }
                TensorLayout::Onnx
            }
        };
        let shapes: Vec<&[usize]> = node
            .inputs
            .iter()
            .map(|&i| g.tensor(i).shape.as_slice())
            .collect();
        let shape = node
            .op
            .infer(&shapes)
            .map_err(|e| ConvertError::internal(format!("layout of node {}: {e}", node.name)))?;
        let out = g.tensor_mut(node.output);
        out.shape = shape;
        out.layout = layout;
        g.nodes.push(node);
    }
    for i in 0..g.outputs.len() {
        let o = g.outputs[i];
        if g.tensor(o).layout == TensorLayout::Nhwc {
            let t = conv.onnx(g, o)?;
            let name = g.tensor(o).name.clone();
            g.swap_names(o, t);
            g.rename(o, &format!("{name}.nhwc"));
            g.outputs[i] = t;
        }
    }
    Ok(true)
}

/// True if a reduction over NCHW `axes` (of a rank-4 tensor) can run on its NHWC form: always when it
/// keeps dims (the output is NHWC), and otherwise when the axes it keeps come in the same order in
/// both layouts (then the NHWC output is the ONNX one: `mean(x, [2, 3])` of NCHW gives `[N, C]`).
fn reduces_in_nhwc(axes: &[usize], keepdims: bool) -> bool {
    let kept: Vec<usize> = (0..4)
        .filter(|a| !axes.contains(a))
        .map(|a| TO_NCHW[a])
        .collect();
    keepdims || kept.is_sorted()
}

/// Chooses the layout of a binary op and converts its inputs to it.
fn binary(
    g: &mut Graph,
    conv: &mut Conversions,
    node: &mut Node,
) -> Result<TensorLayout, ConvertError> {
    let (a, b) = (node.inputs[0], node.inputs[1]);
    // NHWC already, or available as NHWC without a new transpose.
    let nhwc = |t: TensorId| {
        !g.is_const(t) && (g.tensor(t).layout == TensorLayout::Nhwc || conv.nhwc.contains_key(&t))
    };
    let small_const = |t: TensorId| g.is_const(t) && g.tensor(t).shape.len() <= 4;
    let keep_nhwc =
        (nhwc(a) && nhwc(b)) || (nhwc(a) && small_const(b)) || (small_const(a) && nhwc(b));
    for i in 0..2 {
        node.inputs[i] = if keep_nhwc {
            conv.nhwc(g, node.inputs[i])?
        } else {
            conv.onnx(g, node.inputs[i])?
        };
    }
    Ok(if keep_nhwc {
        TensorLayout::Nhwc
    } else {
        TensorLayout::Onnx
    })
}

impl Conversions {
    /// True if activation `t` is NHWC, or has an NHWC copy already (then reading it as NHWC is free).
    fn has_nhwc(&self, g: &Graph, t: TensorId) -> bool {
        !g.is_const(t) && (g.tensor(t).layout == TensorLayout::Nhwc || self.nhwc.contains_key(&t))
    }

    /// `t` as NHWC: itself if it already is, a permuted copy for a constant (padded to rank 4 first),
    /// or the output of an inserted Transpose.
    fn nhwc(&mut self, g: &mut Graph, t: TensorId) -> Result<TensorId, ConvertError> {
        if g.tensor(t).layout == TensorLayout::Nhwc {
            return Ok(t);
        }
        if let Some(&done) = self.nhwc.get(&t) {
            return Ok(done);
        }
        let tensor = g.tensor(t).clone();
        let name = format!("{}.nhwc", tensor.name);
        let rank = tensor.shape.len();
        if rank > 4 {
            return Err(ConvertError::internal(format!(
                "tensor {} of rank {rank} cannot be NHWC",
                tensor.name
            )));
        }
        let mut dims = vec![1; 4 - rank];
        dims.extend(&tensor.shape);
        let shape: Vec<usize> = TO_NHWC.iter().map(|&p| dims[p]).collect();
        let id = match &tensor.data {
            Some(data) => {
                let perm = Op::Transpose {
                    perm: TO_NHWC.to_vec(),
                };
                let input = [(dims.as_slice(), data, tensor.dtype)];
                let data = eval(&perm, &input, &shape, tensor.dtype)
                    .ok()
                    .flatten()
                    .ok_or_else(|| {
                        ConvertError::internal(format!(
                            "constant {} does not transpose to NHWC",
                            tensor.name
                        ))
                    })?;
                let id = g.add_constant_of(&name, shape, data, tensor.dtype);
                g.tensor_mut(id).layout = TensorLayout::Nhwc;
                id
            }
            None if rank == 4 => {
                let id = g.add_activation_of(&name, shape, tensor.dtype);
                g.tensor_mut(id).layout = TensorLayout::Nhwc;
                g.nodes.push(Node {
                    name: format!("{}.to_nhwc", tensor.name),
                    onnx_op: "Transpose".into(),
                    op: Op::Transpose {
                        perm: TO_NHWC.to_vec(),
                    },
                    inputs: vec![t],
                    output: id,
                });
                id
            }
            None => {
                return Err(ConvertError::internal(format!(
                    "activation {} of rank {rank} cannot be NHWC",
                    tensor.name
                )))
            }
        };
        self.nhwc.insert(t, id);
        Ok(id)
    }

    /// `t` in ONNX's layout: itself if it already is, or the output of an inserted Transpose.
    fn onnx(&mut self, g: &mut Graph, t: TensorId) -> Result<TensorId, ConvertError> {
        if g.tensor(t).layout == TensorLayout::Onnx {
            return Ok(t);
        }
        if let Some(&done) = self.onnx.get(&t) {
            return Ok(done);
        }
        let tensor = g.tensor(t).clone();
        let shape: Vec<usize> = TO_NCHW.iter().map(|&p| tensor.shape[p]).collect();
        let id = g.add_activation_of(&format!("{}.nchw", tensor.name), shape, tensor.dtype);
        g.nodes.push(Node {
            name: format!("{}.to_nchw", tensor.name),
            onnx_op: "Transpose".into(),
            op: Op::Transpose {
                perm: TO_NCHW.to_vec(),
            },
            inputs: vec![t],
            output: id,
        });
        self.onnx.insert(t, id);
        Ok(id)
    }
}
