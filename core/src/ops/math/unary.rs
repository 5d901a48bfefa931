//! Element-wise unary ops: activations (Relu, Sigmoid, Gelu, Elu, ...), rounding, and the elementary
//! functions (Sqrt, Exp, Log, Erf, trigonometric and hyperbolic functions), in f32 through `libm`.
//!
//! NaN passes through every op (as in ONNX and onnxruntime), and each op follows ONNX's definition at
//! the edges: `Round` rounds half to even, `Sign(0)` is 0, `Clip` with `min > max` gives `max`.

pub use crate::schema::{UnaryOp, UnaryParams};

use crate::ops::entry::{out, shape_reason, DTypes, KernelEntry, OpArgs, OpEntry, Operands};
use crate::ops::math::activation::{clip, relu};
use crate::ops::shape::{check_dims, ensure, Checked};
use crate::ops::{In, Out};
use crate::workspace::split_rows;
use crate::Error;

/// Checks that `y` has the shape of `x`. Any parameter values are accepted: every function is defined
/// for all of them (`Clip` with `min > max` gives `max`, as in ONNX; `Celu` with `alpha = 0` gives NaN
/// below 0, as its formula does).
pub fn validate(_p: &UnaryParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    ensure(x == y, "unary output shape differs from input")
}

/// `y = op(x)` element-wise.
pub fn unary(p: &UnaryParams, x: In<'_>, y: Out<'_>) {
    let (x, y) = (x.data, y.data);
    match p.op {
        UnaryOp::Relu => map(x, y, relu),
        UnaryOp::Relu6 => map(x, y, |v| clip(v, 0.0, 6.0)),
        UnaryOp::Clip { min, max } => map(x, y, |v| clip(v, min, max)),
        UnaryOp::Sigmoid => map(x, y, |v| 1.0 / (1.0 + libm::expf(-v))),
        UnaryOp::Tanh => map(x, y, libm::tanhf),
        UnaryOp::Abs => map(x, y, libm::fabsf),
        UnaryOp::Neg => map(x, y, |v| -v),
        UnaryOp::Sqrt => map(x, y, libm::sqrtf),
        UnaryOp::Exp => map(x, y, libm::expf),
        UnaryOp::Log => map(x, y, libm::logf),
        UnaryOp::Erf => map(x, y, libm::erff),
        UnaryOp::Gelu => map(x, y, |v| {
            0.5 * v * (1.0 + libm::erff(v * core::f32::consts::FRAC_1_SQRT_2))
        }),
        UnaryOp::GeluTanh => map(x, y, gelu_tanh),
        UnaryOp::Floor => map(x, y, libm::floorf),
        UnaryOp::Ceil => map(x, y, libm::ceilf),
        // `rintf` rounds to nearest, ties to even, in the default rounding mode (the only one in Rust).
        UnaryOp::Round => map(x, y, libm::rintf),
        UnaryOp::Reciprocal => map(x, y, |v| 1.0 / v),
        UnaryOp::LeakyRelu { alpha } => map(x, y, |v| if v < 0.0 { alpha * v } else { v }),
        UnaryOp::HardSigmoid { alpha, beta } => map(x, y, |v| clip(alpha * v + beta, 0.0, 1.0)),
        UnaryOp::HardSwish => map(x, y, |v| v * clip(v / 6.0 + 0.5, 0.0, 1.0)),
        UnaryOp::Elu { alpha } => map(x, y, |v| if v < 0.0 { alpha * libm::expm1f(v) } else { v }),
        UnaryOp::Selu { alpha, gamma } => map(x, y, |v| {
            if v <= 0.0 {
                gamma * alpha * libm::expm1f(v)
            } else {
                gamma * v
            }
        }),
        UnaryOp::Softplus => map(x, y, softplus),
        UnaryOp::Softsign => map(x, y, |v| v / (1.0 + libm::fabsf(v))),
        // 0, -0 and NaN are their own sign.
        UnaryOp::Sign => map(x, y, |v| {
            if v > 0.0 {
                1.0
            } else if v < 0.0 {
                -1.0
            } else {
                v
            }
        }),
        UnaryOp::Sin => map(x, y, libm::sinf),
        UnaryOp::Cos => map(x, y, libm::cosf),
        UnaryOp::Tan => map(x, y, libm::tanf),
        UnaryOp::Asin => map(x, y, libm::asinf),
        UnaryOp::Acos => map(x, y, libm::acosf),
        UnaryOp::Atan => map(x, y, libm::atanf),
        UnaryOp::Sinh => map(x, y, libm::sinhf),
        UnaryOp::Cosh => map(x, y, libm::coshf),
        UnaryOp::Asinh => map(x, y, libm::asinhf),
        UnaryOp::Acosh => map(x, y, libm::acoshf),
        UnaryOp::Atanh => map(x, y, libm::atanhf),
        UnaryOp::Celu { alpha } => map(x, y, |v| {
            if v < 0.0 {
                alpha * libm::expm1f(v / alpha)
            } else {
                v
            }
        }),
        UnaryOp::ThresholdedRelu { alpha } => {
            map(x, y, |v| if v > alpha || v.is_nan() { v } else { 0.0 })
        }
        UnaryOp::Mish => map(x, y, |v| v * libm::tanhf(softplus(v))),
        UnaryOp::Shrink { bias, lambd } => map(x, y, |v| {
            if v < -lambd {
                v + bias
            } else if v > lambd {
                v - bias
            } else if v.is_nan() {
                v
            } else {
                0.0
            }
        }),
        UnaryOp::Swish { alpha } => map(x, y, |v| v / (1.0 + libm::expf(-alpha * v))),
        UnaryOp::ScaledHardSwish { scale, offset } => {
            map(x, y, |v| v * clip(v / 6.0 + 0.5, 0.0, 1.0) * scale + offset)
        }
    }
}

/// `ln(1 + e^x)` without overflow for large `x`.
#[inline(always)]
fn softplus(v: f32) -> f32 {
    if v > 0.0 {
        v + libm::log1pf(libm::expf(-v))
    } else {
        libm::log1pf(libm::expf(v))
    }
}

/// Gelu's tanh approximation.
#[inline(always)]
fn gelu_tanh(v: f32) -> f32 {
    // sqrt(2 / pi).
    const K: f32 = 0.797_884_6;
    0.5 * v * (1.0 + libm::tanhf(K * (v + 0.044_715 * v * v * v)))
}

/// `y[i] = f(x[i])`, with the op chosen once outside the loop.
#[inline(always)]
fn map(x: &[f32], y: &mut [f32], f: impl Fn(f32) -> f32) {
    for (out, &v) in y.iter_mut().zip(x) {
        *out = f(v);
    }
}

/// Signature of an element-wise unary kernel (`UnaryOp`: activations, rounding, elementary functions).
pub type UnaryFn = fn(&UnaryParams, In<'_>, Out<'_>);

/// The [`Kernels::unary`](crate::Kernels::unary) entry, which runs
/// [`OpKind::Unary`](crate::OpKind::Unary).
pub struct Unary;

impl KernelEntry for Unary {
    type Kernel = UnaryFn;
    const REFERENCE: UnaryFn = unary;
    const STUB: UnaryFn = |_, _, _| {};
}

impl OpEntry for Unary {
    type Params = UnaryParams;
    const DTYPES: DTypes = DTypes::F32;

    fn validate(p: &UnaryParams, o: &impl Operands) -> Checked {
        shape_reason(validate(p, o.dims(0), o.out_dims()))
    }

    #[inline(always)]
    fn run(kernel: UnaryFn, p: &UnaryParams, a: OpArgs<'_, '_>) -> Result<(), Error> {
        // In parts over the workers when large (`split_rows`).
        split_rows(a.parallel, [a.x(0)?], out(a.y)?, &|[x], y| kernel(p, x, y));
        Ok(())
    }
}
