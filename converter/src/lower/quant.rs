//! Lowering of the IR's int8 ops ([`QuantOp`]) to the blob's `Quant*` op kinds: the window fields
//! narrowed to the blob's widths; every other parameter was computed by the QDQ pass or the importers.

use ember_core::ops::quant::{
    avg_pool::QuantAvgPoolParams, conv::QuantConv2dParams, max_pool::QuantMaxPoolParams,
    requant::RequantRounding,
};
use std::collections::HashMap;

use ember_core::format::QuantParams;
use ember_core::{DType, OpKind};

use crate::ir::quant::QuantOp;
use crate::ir::{Graph, Node, Op, TensorId};
use crate::lower::narrow::{self, conv_params};
use crate::ConvertError;

/// The blob op of int8 node `n` (in Ember's layout).
pub fn lower(n: &Node, q: &QuantOp) -> Result<OpKind, ConvertError> {
    Ok(match q {
        QuantOp::Quantize(p) => OpKind::Quantize(*p),
        QuantOp::Dequantize(p) => OpKind::Dequantize(*p),
        QuantOp::Requantize(p) => OpKind::Requantize(*p),
        QuantOp::Conv2d {
            conv: c,
            x_zero_point,
            y_zero_point,
            act_min,
            act_max,
        } => OpKind::QuantConv2d(conv_params!(QuantConv2dParams, n, c, {
            x_zero_point: *x_zero_point,
            y_zero_point: *y_zero_point,
            act_min: *act_min,
            act_max: *act_max,
            rounding: RequantRounding::Double,
        })),
        QuantOp::FullyConnected(p) => OpKind::QuantFullyConnected(*p),
        QuantOp::Add(p) => OpKind::QuantAdd(*p),
        QuantOp::Mul(p) => OpKind::QuantMul(*p),
        QuantOp::MaxPool {
            pool,
            act_min,
            act_max,
        } => OpKind::QuantMaxPool2d(QuantMaxPoolParams {
            window: narrow::pool(n, pool)?,
            act_min: *act_min,
            act_max: *act_max,
        }),
        QuantOp::AvgPool {
            pool,
            zero_point,
            act_min,
            act_max,
        } => OpKind::QuantAvgPool2d(QuantAvgPoolParams {
            window: narrow::pool(n, pool)?,
            zero_point: *zero_point,
            act_min: *act_min,
            act_max: *act_max,
        }),
        QuantOp::Softmax(p) => OpKind::QuantSoftmax(*p),
        QuantOp::Lut { .. } => OpKind::QuantLut,
    })
}

/// Sets the rounding mode of an int8 op that requantizes (Conv2d, FullyConnected, Add, Mul,
/// Requantize); other ops have none.
pub fn set_rounding(kind: &mut OpKind, rounding: RequantRounding) {
    match kind {
        OpKind::QuantConv2d(p) => p.rounding = rounding,
        OpKind::QuantFullyConnected(p) => p.rounding = rounding,
        OpKind::QuantAdd(p) => p.rounding = rounding,
        OpKind::QuantMul(p) => p.rounding = rounding,
        OpKind::Requantize(p) => p.rounding = rounding,
        _ => {}
    }
}

/// The blob's `(scale, zero_point)` of every I8 tensor that has per-tensor parameters: its own, or,
/// for the output of a data-movement op (inserted by the layout pass, say), its input's.
pub fn records(g: &Graph) -> HashMap<TensorId, QuantParams> {
    let mut m = HashMap::new();
    for (i, t) in g.tensors.iter().enumerate() {
        let scalar = t.quant.as_ref().and_then(|q| q.int8_scalar());
        if let (DType::I8, Some((scale, zp))) = (t.dtype, scalar) {
            m.insert(
                TensorId(i),
                QuantParams {
                    scale,
                    zero_point: zp.into(),
                },
            );
        }
    }
    for n in &g.nodes {
        let moves = matches!(
            n.op,
            Op::Reshape { .. }
                | Op::Transpose { .. }
                | Op::Slice(_)
                | Op::Pad { .. }
                | Op::Broadcast { .. }
                | Op::Gather { .. }
                | Op::Concat { .. }
        );
        if moves && g.tensor(n.output).dtype == DType::I8 && !m.contains_key(&n.output) {
            if let Some(&q) = n.inputs.first().and_then(|i| m.get(i)) {
                m.insert(n.output, q);
            }
        }
    }
    m
}
