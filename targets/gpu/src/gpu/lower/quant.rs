//! Lowering of the int8 ops: their `params` tables (`kernels::quant::params`), requantization rows,
//! softmax exponential table and lookup tables, onto the int8 kernels.

use ember_core::ops::quant::quantize::Rounding;
use ember_core::ops::quant::requant::RequantRounding;
use ember_core::ops::quant::softmax;
use ember_core::OpKind;

use super::{
    add_table, binary_meta, conv_meta, fully_connected_meta, pool_meta, softmax_meta, u32s, Launch,
    LayerKernel, OpView, Table, Work,
};
use crate::kernels::quant::params as qp;

/// The [`params`] table of an int8 op's parameters `$p`, for the ops whose parameters name its fields
/// alike: a layer's (a convolution's or a fully connected layer's, input zero point `x_zero_point`),
/// or Add's and Mul's (`a_zero_point`, and `b_zero_point` as `B_ZP`).
macro_rules! op_params {
    (layer $p:expr) => {
        params(
            $p.x_zero_point,
            $p.y_zero_point,
            [$p.act_min, $p.act_max],
            $p.rounding,
        )
    };
    (binary $p:expr) => {{
        let mut params = params(
            $p.a_zero_point,
            $p.y_zero_point,
            [$p.act_min, $p.act_max],
            $p.rounding,
        );
        params[qp::B_ZP] = $p.b_zero_point.into();
        params
    }};
}

/// The launches of an int8 op, or `None` for any other op.
pub(super) fn lower(op: &OpView<'_>, tables: &mut Vec<Table>) -> Result<Option<Work>, String> {
    let mut table = |t: Table| add_table(tables, t);
    let (x, xd, yd) = (op.inputs[0], op.input_dims[0], op.output_dims);
    let input = |k: usize| op.inputs.get(k).copied();
    let launch = |l: Launch| Work::Launches(vec![l]);
    let work = match op.kind {
        OpKind::QuantConv2d(_) | OpKind::QuantFullyConnected(_) => {
            let (wd, has_bias) = (op.input_dims[1], input(3).is_some());
            let (kernel, meta, params) = match op.kind {
                OpKind::QuantConv2d(p) => (
                    LayerKernel::Conv2d,
                    conv_meta(xd, wd, yd, &p, has_bias),
                    op_params!(layer p),
                ),
                OpKind::QuantFullyConnected(p) => (
                    LayerKernel::FullyConnected,
                    fully_connected_meta(wd, has_bias).to_vec(),
                    op_params!(layer p),
                ),
                _ => unreachable!("matched above"),
            };
            launch(Launch::QuantLayer {
                kernel,
                x,
                w: op.inputs[1],
                b: input(3),
                rows: op.inputs[2],
                meta: table(Table::U32(u32s(meta)?)),
                params: table(Table::I32(params)),
            })
        }
        OpKind::QuantAdd(_) | OpKind::QuantMul(_) => {
            let meta = table(Table::U32(u32s(binary_meta(xd, op.input_dims[1], yd))?));
            let (params, op_code) = match op.kind {
                OpKind::QuantAdd(p) => {
                    let mut params = op_params!(binary p);
                    params[qp::M0] = p.a_multiplier;
                    params[qp::S0] = p.a_shift;
                    params[qp::M1] = p.b_multiplier;
                    params[qp::S1] = p.b_shift;
                    params[qp::M2] = p.y_multiplier;
                    params[qp::S2] = p.y_shift;
                    params[qp::LEFT_SHIFT] = p.left_shift.clamp(0, 31);
                    (params, 0)
                }
                OpKind::QuantMul(p) => {
                    let mut params = op_params!(binary p);
                    params[qp::M0] = p.multiplier;
                    params[qp::S0] = p.shift;
                    (params, 1)
                }
                _ => unreachable!("matched above"),
            };
            let params = table(Table::I32(params));
            launch(Launch::QuantBinary {
                a: x,
                b: op.inputs[1],
                meta,
                params,
                op: op_code,
            })
        }
        // Max pooling reads the clamp only; average pooling the zero point too (padding cells).
        OpKind::QuantMaxPool2d(p) => {
            let act = [p.act_min, p.act_max];
            let params = table(Table::I32(params(0, 0, act, RequantRounding::Double)));
            let meta = table(Table::U32(u32s(pool_meta(xd, yd, &p.window))?));
            launch(Launch::QuantPool {
                x,
                meta,
                params,
                avg: false,
            })
        }
        OpKind::QuantAvgPool2d(p) => {
            let act = [p.act_min, p.act_max];
            let params = params(p.zero_point, 0, act, RequantRounding::Double);
            let params = table(Table::I32(params));
            let meta = table(Table::U32(u32s(pool_meta(xd, yd, &p.window))?));
            launch(Launch::QuantPool {
                x,
                meta,
                params,
                avg: true,
            })
        }
        OpKind::Quantize(p) => launch(Launch::Quantize {
            x,
            scale: p.scale,
            zero_point: p.zero_point.into(),
            even: p.rounding == Rounding::HalfToEven,
        }),
        OpKind::Dequantize(p) => launch(Launch::Dequantize {
            x,
            scale: p.scale,
            zero_point: f32::from(p.zero_point),
        }),
        OpKind::Requantize(p) => {
            // The clamp is int8's whole range, which the kernel applies itself.
            let mut params = params(p.x_zero_point, p.y_zero_point, [0, 0], p.rounding);
            params[qp::M0] = p.multiplier;
            params[qp::S0] = p.shift;
            let params = table(Table::I32(params));
            launch(Launch::Requantize { x, params })
        }
        OpKind::QuantSoftmax(p) => {
            let meta = softmax_meta(xd, p.axis);
            let lanes = meta[2];
            let meta = table(Table::U32(u32s(meta)?));
            let exps = table(Table::I32(softmax::exp_table(&p).to_vec()));
            launch(Launch::QuantSoftmax {
                x,
                exps,
                meta,
                lanes,
            })
        }
        OpKind::QuantLut => launch(Launch::QuantLut {
            x,
            table: op.inputs[1],
        }),
        _ => return Ok(None),
    };
    Ok(Some(work))
}

/// A `params` table (`kernels::quant::params`) with the fields every int8 kernel reads: the input and
/// output zero points, the output clamp and the rounding; an op sets its own fields on top.
fn params(x_zero_point: i8, y_zero_point: i8, act: [i8; 2], rounding: RequantRounding) -> Vec<i32> {
    let mut params = vec![0i32; qp::LEN];
    params[qp::X_ZP] = x_zero_point.into();
    params[qp::Y_ZP] = y_zero_point.into();
    params[qp::ACT_MIN] = act[0].into();
    params[qp::ACT_MAX] = act[1].into();
    params[qp::ROUNDING] = match rounding {
        RequantRounding::Double => 0,
        RequantRounding::Single => 1,
    };
    params
}
