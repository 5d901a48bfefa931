//! Checks of the lowered records, run on every conversion (they are cheap): every weight lies inside
//! the weights section and is aligned; no op's output bytes overlap the arena bytes of one of its
//! inputs, except a Reshape whose output aliases its input exactly; and every op passes the runtime
//! kernel's own `validate`, so a blob the converter writes is one `Model::parse` accepts.

use ember_core::format::{Storage, TensorRecord, ALIGN};
use ember_core::ops;
use ember_core::OpKind;

use super::Lowered;
use crate::ConvertError;

fn bytes(t: &TensorRecord) -> usize {
    t.dims.iter().map(|&d| d as usize).product::<usize>() * t.dtype.size()
}

/// Runs the checks; a failure is a converter bug, reported as [`ConvertError::Internal`].
pub fn check(l: &Lowered) -> Result<(), ConvertError> {
    for (i, t) in l.tensors.iter().enumerate() {
        if let Storage::Weights { offset } = t.storage {
            let (start, end) = (offset as usize, offset as usize + bytes(t));
            if !start.is_multiple_of(ALIGN) || end > l.weights.len() {
                return Err(ConvertError::internal(format!(
                    "weight tensor {i} ({}) at [{start}, {end}) is misaligned or outside the {} \
                     weight bytes",
                    l.tensor_names[i],
                    l.weights.len()
                )));
            }
        }
    }
    let range = |id: u32| match l.tensors[id as usize].storage {
        Storage::Arena { offset } => {
            let start = offset as usize;
            Some((start, start + bytes(&l.tensors[id as usize])))
        }
        Storage::Weights { .. } => None,
    };
    for (step, op) in l.ops.iter().enumerate() {
        validate_op(l, step)?;
        let Some((os, oe)) = range(op.output) else {
            return Err(ConvertError::internal(format!(
                "op {step} ({}) writes into the weights",
                l.op_names[step]
            )));
        };
        for &input in &op.inputs {
            let Some((is, ie)) = range(input) else {
                continue;
            };
            let alias = matches!(op.kind, OpKind::Reshape) && (is, ie) == (os, oe);
            if !alias && is < oe && os < ie {
                return Err(ConvertError::internal(format!(
                    "op {step} ({}) writes [{os}, {oe}) over its input {} at [{is}, {ie})",
                    l.op_names[step], l.tensor_names[input as usize]
                )));
            }
        }
    }
    Ok(())
}

/// Runs the kernel's shape check of op `step`.
fn validate_op(l: &Lowered, step: usize) -> Result<(), ConvertError> {
    let op = &l.ops[step];
    let dims = |id: u32| -> Vec<usize> {
        l.tensors[id as usize]
            .dims
            .iter()
            .map(|&d| d as usize)
            .collect()
    };
    let xs: Vec<Vec<usize>> = op.inputs.iter().map(|&i| dims(i)).collect();
    let y = dims(op.output);
    let (x, w, b) = (
        xs.first().map_or(&[][..], Vec::as_slice),
        xs.get(1).map_or(&[][..], Vec::as_slice),
        xs.get(2).map(Vec::as_slice),
    );
    let dt = |k: usize| {
        op.inputs
            .get(k)
            .map_or(ember_core::DType::F32, |&i| l.tensors[i as usize].dtype)
    };
    let typed = |k: usize| (xs.get(k).map_or(&[][..], Vec::as_slice), dt(k));
    let out_dtype = l.tensors[op.output as usize].dtype;
    let yt = (y.as_slice(), out_dtype);
    let not_f32 = out_dtype != ember_core::DType::F32
        || (0..xs.len()).any(|k| dt(k) != ember_core::DType::F32);
    let checked = match &op.kind {
        OpKind::Binary(p) if not_f32 => {
            ops::math::arith::validate_binary(p, typed(0), typed(1), yt)
        }
        OpKind::Unary(p) if not_f32 => ops::math::arith::validate_unary(p, typed(0), yt),
        OpKind::Compare(p) => ops::math::compare::validate(p, typed(0), typed(1), yt),
        OpKind::Logical(p) => ops::math::logical::validate(p, typed(0), typed(1), yt),
        OpKind::Not => ops::math::logical::validate_not(typed(0), yt),
        OpKind::Where => ops::math::where_op::validate(typed(0), typed(1), typed(2), yt),
        OpKind::Cast(p) => ops::math::cast::validate(p, typed(0), yt),
        OpKind::ArgReduce(p) => ops::nn::arg_reduce::validate(p, typed(0), yt),
        OpKind::QuantConv2d(p) => {
            ops::quant::conv::validate(p, x, w, xs.get(3).map(Vec::as_slice), b.unwrap_or(&[]), &y)
        }
        OpKind::QuantFullyConnected(p) => ops::quant::fully_connected::validate(
            p,
            x,
            w,
            xs.get(3).map(Vec::as_slice),
            b.unwrap_or(&[]),
            &y,
        ),
        OpKind::QuantAdd(p) => ops::quant::add::validate(p, x, w, &y),
        OpKind::QuantMul(p) => ops::quant::mul::validate(p, x, w, &y),
        OpKind::QuantAvgPool2d(p) => ops::quant::avg_pool::validate(p, x, &y),
        OpKind::QuantMaxPool2d(p) => ops::quant::max_pool::validate(p, x, &y),
        OpKind::QuantSoftmax(p) => ops::quant::softmax::validate(p, x, &y),
        OpKind::Quantize(p) => ops::quant::quantize::validate(p, x, &y),
        OpKind::Dequantize(p) => ops::quant::dequantize::validate(p, x, &y),
        OpKind::Requantize(p) => ops::quant::requantize::validate(p, x, &y),
        OpKind::Conv2d(p) => ops::nn::conv::validate(p, x, w, b, &y),
        OpKind::ConvTranspose2d(p) => ops::nn::conv_transpose::validate(p, x, w, b, &y),
        OpKind::FullyConnected(p) => ops::nn::fully_connected::validate(p, x, w, b, &y),
        OpKind::MatMul(p) => ops::nn::matmul::validate(p, x, w, &y),
        OpKind::Binary(p) => ops::math::binary::validate(p, x, w, &y),
        OpKind::Unary(p) => ops::math::unary::validate(p, x, &y),
        OpKind::Softmax(p) => ops::nn::softmax::validate(p, x, &y),
        OpKind::MaxPool2d(p) => ops::pool::max_pool::validate(p, x, &y),
        OpKind::AvgPool2d(p) => ops::pool::avg_pool::validate(p, x, &y),
        OpKind::GlobalAvgPool => ops::pool::global_avg_pool::validate(x, &y),
        OpKind::Concat(p) => {
            let all: Vec<&[usize]> = xs.iter().map(Vec::as_slice).collect();
            ops::array::concat::validate(p, &all, &y)
        }
        OpKind::Transpose(p) => ops::array::transpose::validate(p, x, &y),
        OpKind::Pad(p) => ops::array::pad::validate(p, x, &y),
        OpKind::Reshape => ops::array::reshape::validate(x, &y),
        OpKind::LogSoftmax(p) => ops::nn::softmax::validate(p, x, &y),
        OpKind::Reduce(p) => ops::nn::reduce::validate(p, x, &y),
        OpKind::LayerNorm(p) => ops::nn::layer_norm::validate(p, x, w, b, &y),
        OpKind::Slice(p) => ops::array::slice::validate(p, x, &y),
        OpKind::Gather(p) => ops::array::gather::validate(p, x, w, &y),
        OpKind::Broadcast => ops::array::broadcast::validate(x, &y),
        OpKind::Resize(p) => ops::array::resize::validate(p, x, &y),
        OpKind::FullyConnectedW8(p) => {
            use ember_core::DType::{F32, I8};
            let bias_f32 = xs.len() < 4 || dt(3) == F32;
            if (dt(0), dt(1), dt(2), out_dtype) != (F32, I8, F32, F32) || !bias_f32 {
                Err(ember_core::Error::Shape {
                    reason: "weight-only int8 fully connected: tensors of the wrong dtypes",
                })
            } else {
                let scales = b.unwrap_or(&[]);
                ops::nn::fully_connected_w8::validate(
                    p,
                    x,
                    w,
                    scales,
                    xs.get(3).map(Vec::as_slice),
                    &y,
                )
            }
        }
        OpKind::Embedding => {
            use ember_core::DType::{F32, I32, I64, I8};
            let table_ok = match dt(0) {
                F32 => xs.len() == 2,
                I8 => xs.len() == 3 && dt(2) == F32,
                _ => false,
            };
            if !table_ok || !matches!(dt(1), I32 | I64) || out_dtype != F32 {
                Err(ember_core::Error::Shape {
                    reason: "embedding: tensors of the wrong dtypes",
                })
            } else {
                ops::array::embedding::validate(x, w, b, &y)
            }
        }
    };

    checked.map_err(|e| {
        ConvertError::internal(format!(
            "op {step} ({}, {}) fails the runtime's shape check: {e}",
            l.op_names[step],
            op.kind.name()
        ))
    })
}
