//! ONNX `Add`, `Sub`, `Mul`, `Div`, `Pow`, `PRelu` and `Mod` (numpy broadcasting) to [`Op::Binary`]. A
//! constant operand stays a constant and is stored with the weights. `Pow` by a constant 2 becomes
//! `x * x`, by 0.5 `Sqrt`; an integer constant exponent is converted to FLOAT. `Mod` of FLOAT
//! operands needs `fmod=1` (C `fmod`); integer operands take either (`fmod=0` is Python's `%`).

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::math::unary::UnaryOp;

use crate::ir::shape::broadcasts_to;
use crate::ir::{ConstData, DType, Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Add`, `Sub`, `Mul`, `Div`, `Pow`, `PRelu` or `Mod`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let op = match ctx.node.op_type.as_str() {
        "Add" => BinaryOp::Add,
        "Sub" => BinaryOp::Sub,
        "Mul" => BinaryOp::Mul,
        "Div" => BinaryOp::Div,
        "Pow" => BinaryOp::Pow,
        "PRelu" => BinaryOp::PRelu,
        "Mod" => BinaryOp::Mod,
        other => return Err(ctx.err(format!("{other} is not a binary op"))),
    };
    let (a, b) = match op {
        BinaryOp::PRelu => (ctx.input(0, "X")?, ctx.input(1, "slope")?),
        BinaryOp::Pow => (ctx.input(0, "X")?, ctx.input(1, "Y")?),
        _ => (ctx.input(0, "A")?, ctx.input(1, "B")?),
    };
    let act = Activation::None;
    match op {
        BinaryOp::Pow => return pow(ctx, a, b),
        BinaryOp::PRelu => check_prelu_slope(ctx, a, b)?,
        BinaryOp::Mod => {
            let fmod = ctx.attr_int("fmod")?.unwrap_or(0);
            let float = matches!(
                ctx.graph().tensor(a).dtype,
                crate::ir::DType::F32 | crate::ir::DType::F64
            );
            if fmod == 0 && !float {
                // Integer Mod without fmod takes the divisor's sign (Python's %).
                ctx.emit(
                    Op::Binary {
                        op: BinaryOp::FloorMod,
                        act,
                    },
                    vec![a, b],
                )?;
                return Ok(());
            }
            if fmod != 1 {
                return Err(ctx.err(format!(
                    "fmod={fmod} is not supported: FLOAT operands need fmod=1 (C fmod)"
                )));
            }
        }
        _ => {}
    }
    ctx.emit(Op::Binary { op, act }, vec![a, b])?;
    Ok(())
}

/// `x ^ y`, with the cheaper forms for a constant scalar exponent of 2 or 0.5.
fn pow(ctx: &mut NodeCtx<'_>, x: TensorId, y: TensorId) -> Result<(), ConvertError> {
    let act = Activation::None;
    let x_shape = ctx.shape(x);
    // ONNX allows an exponent of another type (T2); Ember raises to the base's type.
    let (x_type, y_type) = (ctx.graph().tensor(x).dtype, ctx.graph().tensor(y).dtype);
    let y = match ctx.graph().tensor(y).data.clone() {
        Some(d) if y_type != x_type => {
            let float = matches!(x_type, DType::F32 | DType::F64);
            let data = match (d, float) {
                (ConstData::I64(v), true) => ConstData::F32(v.iter().map(|&e| e as f32).collect()),
                (ConstData::F32(v), false) => ConstData::I64(v.iter().map(|&e| e as i64).collect()),
                (d, _) => d,
            };
            let shape = ctx.shape(y);
            let name = format!("{}.exponent", ctx.name);
            ctx.imp.graph.add_constant_of(&name, shape, data, x_type)
        }
        None if y_type != x_type => ctx.emit_tmp("exponent", Op::Cast { to: x_type }, vec![y])?,
        _ => y,
    };
    // The output keeps x's shape when the scalar exponent broadcasts into it (rank no higher).
    let scalar = match ctx.const_f32(y) {
        Some([e]) if ctx.shape(y).len() <= x_shape.len() => Some(*e),
        _ => None,
    };
    match scalar {
        Some(2.0) => ctx.emit(
            Op::Binary {
                op: BinaryOp::Mul,
                act,
            },
            vec![x, x],
        )?,
        Some(0.5) => ctx.emit(Op::Unary(UnaryOp::Sqrt), vec![x])?,
        _ => ctx.emit(
            Op::Binary {
                op: BinaryOp::Pow,
                act,
            },
            vec![x, y],
        )?,
    };
    Ok(())
}

/// PRelu's slope must broadcast to X's shape without growing it (ONNX's unidirectional broadcasting).
fn check_prelu_slope(ctx: &NodeCtx<'_>, x: TensorId, slope: TensorId) -> Result<(), ConvertError> {
    let (xs, ss) = (ctx.shape(x), ctx.shape(slope));
    if !broadcasts_to(&ss, &xs) {
        return Err(ctx.err(format!(
            "slope {ss:?} does not broadcast to input {xs:?} (unidirectional broadcasting)"
        )));
    }
    Ok(())
}
