//! ONNX element-wise unary ops to [`Op::Unary`]: the activations (Relu, Sigmoid, Tanh, LeakyRelu,
//! HardSigmoid, HardSwish, Elu, Selu, Celu, ThresholdedRelu, Gelu, Mish, Swish, Softplus, Softsign, Shrink),
//! rounding (Floor, Ceil, Round, Sign) and the elementary functions (Abs, Neg, Sqrt, Exp, Log,
//! Reciprocal, Erf, trigonometric and hyperbolic functions). Attributes take ONNX's defaults when absent.

use ember_core::ops::math::unary::UnaryOp;

use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// ONNX `Selu`'s default `alpha`.
const SELU_ALPHA: f32 = 1.673_263_2;
/// ONNX `Selu`'s default `gamma`.
const SELU_GAMMA: f32 = 1.050_701;

/// Imports one of the unary ops listed in the module documentation.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let float = |ctx: &NodeCtx<'_>, name: &str, default: f32| -> Result<f32, ConvertError> {
        let v = ctx.attr_float(name)?.unwrap_or(default);
        if v.is_nan() {
            return Err(ctx.err(format!("attribute {name} must not be NaN")));
        }
        Ok(v)
    };
    let op = match ctx.node.op_type.as_str() {
        "Relu" => UnaryOp::Relu,
        "Sigmoid" => UnaryOp::Sigmoid,
        "Tanh" => UnaryOp::Tanh,
        "Abs" => UnaryOp::Abs,
        "Neg" => UnaryOp::Neg,
        "Sqrt" => UnaryOp::Sqrt,
        "Exp" => UnaryOp::Exp,
        "Log" => UnaryOp::Log,
        "Erf" => UnaryOp::Erf,
        "Gelu" => match ctx.attr_string("approximate")?.as_deref() {
            None | Some("none") => UnaryOp::Gelu,
            Some("tanh") => UnaryOp::GeluTanh,
            Some(other) => {
                return Err(ctx.err(format!(
                    "attribute approximate=\"{other}\" is not supported (\"none\" or \"tanh\")"
                )))
            }
        },
        "Floor" => UnaryOp::Floor,
        "Ceil" => UnaryOp::Ceil,
        "Round" => UnaryOp::Round,
        "Reciprocal" => UnaryOp::Reciprocal,
        "LeakyRelu" => UnaryOp::LeakyRelu {
            alpha: float(ctx, "alpha", 0.01)?,
        },
        "HardSigmoid" => UnaryOp::HardSigmoid {
            alpha: float(ctx, "alpha", 0.2)?,
            beta: float(ctx, "beta", 0.5)?,
        },
        "HardSwish" => UnaryOp::HardSwish,
        "Elu" => UnaryOp::Elu {
            alpha: float(ctx, "alpha", 1.0)?,
        },
        "Selu" => UnaryOp::Selu {
            alpha: float(ctx, "alpha", SELU_ALPHA)?,
            gamma: float(ctx, "gamma", SELU_GAMMA)?,
        },
        "Softplus" => UnaryOp::Softplus,
        "Softsign" => UnaryOp::Softsign,
        "Sign" => UnaryOp::Sign,
        "Sin" => UnaryOp::Sin,
        "Cos" => UnaryOp::Cos,
        "Tan" => UnaryOp::Tan,
        "Asin" => UnaryOp::Asin,
        "Acos" => UnaryOp::Acos,
        "Atan" => UnaryOp::Atan,
        "Sinh" => UnaryOp::Sinh,
        "Cosh" => UnaryOp::Cosh,
        "Asinh" => UnaryOp::Asinh,
        "Acosh" => UnaryOp::Acosh,
        "Atanh" => UnaryOp::Atanh,
        "Celu" => {
            let alpha = float(ctx, "alpha", 1.0)?;
            if alpha == 0.0 {
                return Err(ctx.err("attribute alpha must not be 0 (Celu divides by it)"));
            }
            UnaryOp::Celu { alpha }
        }
        "ThresholdedRelu" => UnaryOp::ThresholdedRelu {
            alpha: float(ctx, "alpha", 1.0)?,
        },
        "Mish" => UnaryOp::Mish,
        "Shrink" => UnaryOp::Shrink {
            bias: float(ctx, "bias", 0.0)?,
            lambd: float(ctx, "lambd", 0.5)?,
        },
        "Swish" => UnaryOp::Swish {
            alpha: float(ctx, "alpha", 1.0)?,
        },
        other => return Err(ctx.err(format!("{other} is not a unary op"))),
    };
    let x = ctx.input(0, "X")?;
    ctx.emit(Op::Unary(op), vec![x])?;
    Ok(())
}
