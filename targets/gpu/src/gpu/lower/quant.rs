//! Lowering of the int8 ops: their `params` tables (`kernels::quant::params`), requantization rows and
//! softmax exponential table, onto the int8 kernels.

use ember_core::ops::quant::quantize::Rounding;
use ember_core::ops::quant::requant::RequantRounding;
use ember_core::ops::quant::softmax;
use ember_core::OpKind;

use super::{binary_meta, conv_meta, pool_meta, u32s, ConvWindow, Launch, OpView, Table, Work};
use crate::kernels::quant::params as qp;

/// The launches of an int8 op, or `None` for any other op.
pub(super) fn lower(op: &OpView<'_>, tables: &mut Vec<Table>) -> Result<Option<Work>, String> {
    let mut table = |t: Table| {
        tables.push(t);
        tables.len() - 1
    };
    let x = op.inputs[0];
    let xd = op.input_dims[0];
    let yd = op.output_dims;
    let input = |k: usize| op.inputs.get(k).copied();
    let launch = |l: Launch| Work::Launches(vec![l]);
    let work = match op.kind {
        OpKind::QuantConv2d(p) => {
            let window = ConvWindow {
                groups: p.groups,
                stride: (p.stride_h, p.stride_w),
                dilation: (p.dilation_h, p.dilation_w),
                pad: (p.pad_top, p.pad_left),
            };
            let meta = conv_meta(xd, op.input_dims[1], yd, &window, input(3).is_some());
            let meta = table(Table::U32(u32s(meta)?));
            let mut params = vec![0i32; qp::LEN];
            params[qp::X_ZP] = p.x_zero_point.into();
            params[qp::Y_ZP] = p.y_zero_point.into();
            params[qp::ACT_MIN] = p.act_min.into();
            params[qp::ACT_MAX] = p.act_max.into();
            params[qp::ROUNDING] = rounding_code(p.rounding);
            let params = table(Table::I32(params));
            launch(Launch::QuantConv2d {
                x,
                w: op.inputs[1],
                b: input(3),
                rows: op.inputs[2],
                meta,
                params,
            })
        }
        OpKind::QuantFullyConnected(p) => {
            let wd = op.input_dims[1];
            let meta = table(Table::U32(u32s([
                wd[1],
                wd[0],
                usize::from(input(3).is_some()),
            ])?));
            let mut params = vec![0i32; qp::LEN];
            params[qp::X_ZP] = p.x_zero_point.into();
            params[qp::Y_ZP] = p.y_zero_point.into();
            params[qp::ACT_MIN] = p.act_min.into();
            params[qp::ACT_MAX] = p.act_max.into();
            params[qp::ROUNDING] = rounding_code(p.rounding);
            let params = table(Table::I32(params));
            launch(Launch::QuantFullyConnected {
                x,
                w: op.inputs[1],
                b: input(3),
                rows: op.inputs[2],
                meta,
                params,
            })
        }
        OpKind::QuantAdd(_) | OpKind::QuantMul(_) => {
            let meta = table(Table::U32(u32s(binary_meta(xd, op.input_dims[1], yd))?));
            let mut params = vec![0i32; qp::LEN];
            let op_code = match op.kind {
                OpKind::QuantAdd(p) => {
                    params[qp::X_ZP] = p.a_zero_point.into();
                    params[qp::B_ZP] = p.b_zero_point.into();
                    params[qp::Y_ZP] = p.y_zero_point.into();
                    params[qp::ACT_MIN] = p.act_min.into();
                    params[qp::ACT_MAX] = p.act_max.into();
                    params[qp::ROUNDING] = rounding_code(p.rounding);
                    params[qp::M0] = p.a_multiplier;
                    params[qp::S0] = p.a_shift;
                    params[qp::M1] = p.b_multiplier;
                    params[qp::S1] = p.b_shift;
                    params[qp::M2] = p.y_multiplier;
                    params[qp::S2] = p.y_shift;
                    params[qp::LEFT_SHIFT] = p.left_shift.clamp(0, 31);
                    0
                }
                OpKind::QuantMul(p) => {
                    params[qp::X_ZP] = p.a_zero_point.into();
                    params[qp::B_ZP] = p.b_zero_point.into();
                    params[qp::Y_ZP] = p.y_zero_point.into();
                    params[qp::ACT_MIN] = p.act_min.into();
                    params[qp::ACT_MAX] = p.act_max.into();
                    params[qp::ROUNDING] = rounding_code(p.rounding);
                    params[qp::M0] = p.multiplier;
                    params[qp::S0] = p.shift;
                    1
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
        OpKind::QuantMaxPool2d(p) => {
            let meta = table(Table::U32(u32s(pool_meta(xd, yd, &p.window))?));
            let mut params = vec![0i32; qp::LEN];
            params[qp::ACT_MIN] = p.act_min.into();
            params[qp::ACT_MAX] = p.act_max.into();
            let params = table(Table::I32(params));
            launch(Launch::QuantPool {
                x,
                meta,
                params,
                avg: false,
            })
        }
        OpKind::QuantAvgPool2d(p) => {
            let meta = table(Table::U32(u32s(pool_meta(xd, yd, &p.window))?));
            let mut params = vec![0i32; qp::LEN];
            params[qp::X_ZP] = p.zero_point.into();
            params[qp::ACT_MIN] = p.act_min.into();
            params[qp::ACT_MAX] = p.act_max.into();
            let params = table(Table::I32(params));
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
            let mut params = vec![0i32; qp::LEN];
            params[qp::X_ZP] = p.x_zero_point.into();
            params[qp::Y_ZP] = p.y_zero_point.into();
            params[qp::ROUNDING] = rounding_code(p.rounding);
            params[qp::M0] = p.multiplier;
            params[qp::S0] = p.shift;
            let params = table(Table::I32(params));
            launch(Launch::Requantize { x, params })
        }
        OpKind::QuantSoftmax(p) => {
            let axis = usize::from(p.axis);
            let len = xd[axis];
            let inner: usize = xd[axis + 1..].iter().product();
            let total: usize = xd.iter().product();
            let lanes = total.checked_div(len).unwrap_or(0);
            let meta = table(Table::U32(u32s([len, inner, lanes])?));
            let exps = table(Table::I32(softmax::exp_table(&p).to_vec()));
            launch(Launch::QuantSoftmax {
                x,
                exps,
                meta,
                lanes,
            })
        }
        _ => return Ok(None),
    };
    Ok(Some(work))
}

/// The `rounding` value of the int8 kernels' `params`.
fn rounding_code(r: RequantRounding) -> i32 {
    match r {
        RequantRounding::Double => 0,
        RequantRounding::Single => 1,
    }
}
