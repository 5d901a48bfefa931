//! Constant folding's one evaluator: an op whose inputs are all constants is run at conversion time
//! by `ember-core`'s reference kernels ([`ember_core::eval_op`]), on the op as the blob would hold it
//! ([`lower_op`]), so that the folded value is exactly what the runtime would have computed. No blob is
//! written and no session opened.
//!
//! It serves the import (`emit::add_node`: shape subgraphs such as `Shape -> Gather -> Div(2) ->
//! Concat -> Reshape`, whose values later importers read), the `fold_constants` pass, and the layout
//! pass's permuted copies of constants. It covers every op that lowers without a layout: element-wise
//! math (integer shape arithmetic included), comparisons, casts, reductions, data movement. Ops whose
//! lowering needs a layout are not folded.

use ember_core::ops::element::{AnyIn, AnyOut};
use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::AlignedBuf;

use super::quant::Quant;
use super::shape::numel;
use super::{ConstData, DType, Graph, Node, Op, TensorId};
use crate::lower::ops::lower_op;

/// Largest output (elements) of a computing op that is folded; bigger constants stay runtime ops.
/// Data movement (a Reshape, Transpose, Slice, Broadcast, Concat, Gather or Where of constants) and
/// Cast are folded up to the size of their inputs, whatever it is: their values are the constants'
/// own, copied or converted, and the importers always folded them (a float16 weight cast to float is
/// a float weight). What would grow past both bounds (a Broadcast or Gather repeating a constant into
/// billions of elements, from a few bytes of model) stays a runtime op, so the converter's memory is
/// bounded by its input's size plus this.
pub const MAX_FOLDED: usize = 1 << 20;

/// A constant input of [`eval`]: dims, values, dtype.
pub type ConstInput<'a> = (&'a [usize], &'a ConstData, DType);

/// A folded tensor: its values and, for a Reshape of a quantized constant, the quantization it keeps.
#[derive(Clone, Debug, PartialEq)]
pub struct Folded {
    /// The values (f32, or i64 for integer and bool dtypes).
    pub data: ConstData,
    /// See [`super::Tensor::quant`].
    pub quant: Option<Quant>,
}

/// The value of `op` on the tensors `inputs` of `g`, giving a tensor of `shape` and `dtype` (what the
/// op infers), when every input is a constant that [`eval`] folds. A Reshape that keeps the leading
/// dim keeps the per-channel (axis 0) quantization of its input, and any Reshape a per-tensor one.
pub fn fold(
    g: &Graph,
    op: &Op,
    inputs: &[TensorId],
    shape: &[usize],
    dtype: DType,
) -> Result<Option<Folded>, String> {
    let Some(consts) = inputs
        .iter()
        .map(|&i| {
            let t = g.tensor(i);
            t.data.as_ref().map(|d| (t.shape.as_slice(), d, t.dtype))
        })
        .collect::<Option<Vec<ConstInput<'_>>>>()
    else {
        return Ok(None);
    };
    let Some(data) = eval(op, &consts, shape, dtype)? else {
        return Ok(None);
    };
    let quant = match (op, inputs) {
        (Op::Reshape { .. }, &[x]) => {
            let t = g.tensor(x);
            t.quant.clone().filter(|q| {
                q.scales.len() == 1 || (q.axis == 0 && shape.first() == t.shape.first())
            })
        }
        _ => None,
    };
    Ok(Some(Folded { data, quant }))
}

/// The value of `op` on constant `inputs`, a tensor of `out_dims` and `out_dtype` (empty without
/// running anything if `out_dims` has a 0); `None` when the op does not lower on its own, the runtime's validation refuses it, or its output is too big
/// ([`MAX_FOLDED`]). `Err` for an int64 division by zero (shape arithmetic that cannot mean anything;
/// the runtime's kernel would give 0).
pub fn eval(
    op: &Op,
    inputs: &[ConstInput<'_>],
    out_dims: &[usize],
    out_dtype: DType,
) -> Result<Option<ConstData>, String> {
    let Ok(out_len) = numel(out_dims) else {
        return Ok(None);
    };
    let copies = matches!(
        op,
        Op::Reshape { .. }
            | Op::Transpose { .. }
            | Op::Slice(_)
            | Op::Broadcast { .. }
            | Op::Concat { .. }
            | Op::Gather { .. }
            | Op::Where
            | Op::Cast { .. }
    );
    let in_len: usize = inputs
        .iter()
        .map(|(dims, ..)| dims.iter().product::<usize>())
        .sum();
    let limit = if copies {
        MAX_FOLDED.max(in_len)
    } else {
        MAX_FOLDED
    };
    if inputs.is_empty() || out_len > limit {
        return Ok(None);
    }
    let node = Node {
        name: "constant".into(),
        onnx_op: String::new(),
        op: op.clone(),
        inputs: (0..inputs.len()).map(TensorId).collect(),
        output: TensorId(inputs.len()),
    };
    let Ok(kind) = lower_op(&node) else {
        return Ok(None);
    };
    if out_len == 0 {
        // No values to compute.
        return Ok(Some(read_elements(&[], out_dtype)));
    }
    check_int64_division(op, inputs)?;
    let mut buffers = Vec::with_capacity(inputs.len());
    for (_, data, dtype) in inputs {
        let mut bytes = Vec::new();
        crate::lower::write_elements(&mut bytes, data, *dtype)?;
        buffers.push(AlignedBuf::from_bytes(&bytes));
    }
    let tensors: Vec<AnyIn<'_>> = inputs
        .iter()
        .zip(&buffers)
        .map(|(&(dims, _, dtype), b)| AnyIn {
            dtype,
            bytes: b.as_bytes(),
            dims,
        })
        .collect();
    let Some(out_bytes) = out_len.checked_mul(out_dtype.size()) else {
        return Ok(None);
    };
    let mut out = AlignedBuf::zeroed(out_bytes);
    let y = AnyOut {
        dtype: out_dtype,
        bytes: out.as_mut_bytes(),
        dims: out_dims,
    };
    if ember_core::eval_op(&kind, &tensors, y).is_err() {
        return Ok(None);
    }
    Ok(Some(read_elements(out.as_bytes(), out_dtype)))
}

/// Refuses an int64 `Div` by zero: in shape arithmetic (`Shape -> Gather -> Div`) it is a broken
/// model, which the converter reports rather than folding the runtime's 0.
fn check_int64_division(op: &Op, inputs: &[ConstInput<'_>]) -> Result<(), String> {
    let div = matches!(
        op,
        Op::Binary {
            op: BinaryOp::Div,
            act: Activation::None,
        }
    );
    match inputs {
        [(_, _, DType::I64), (_, ConstData::I64(b), DType::I64)] if div && b.contains(&0) => {
            Err("integer division by zero".to_string())
        }
        _ => Ok(()),
    }
}

/// Little-endian elements of `dtype` as constant data (floats as f32, integers and bools as i64).
fn read_elements(b: &[u8], dtype: DType) -> ConstData {
    use ember_core::half::f16;
    fn each<const N: usize, T>(b: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
        b.chunks_exact(N)
            // `chunks_exact` gives N bytes each: the conversion cannot fail.
            .map(|c| f(c.try_into().unwrap_or([0; N])))
            .collect()
    }
    match dtype {
        DType::F32 => ConstData::F32(each(b, f32::from_le_bytes)),
        DType::F64 => ConstData::F32(each(b, |c| f64::from_le_bytes(c) as f32)),
        DType::F16 => ConstData::F32(each(b, |c| f16::from_le_bytes(c).to_f32())),
        DType::I8 => ConstData::I64(each(b, |c| i8::from_le_bytes(c).into())),
        DType::I16 => ConstData::I64(each(b, |c| i16::from_le_bytes(c).into())),
        DType::I32 => ConstData::I64(each(b, |c| i32::from_le_bytes(c).into())),
        DType::I64 => ConstData::I64(each(b, i64::from_le_bytes)),
        DType::U8 | DType::Bool => ConstData::I64(each(b, |c| u8::from_le_bytes(c).into())),
        DType::U16 => ConstData::I64(each(b, |c| u16::from_le_bytes(c).into())),
        DType::U32 => ConstData::I64(each(b, |c| u32::from_le_bytes(c).into())),
        DType::U64 => ConstData::I64(each(b, |c| u64::from_le_bytes(c) as i64)),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A binary op without a fused activation (also for the tests of the `fold_constants` pass).
    pub(crate) fn binary(op: BinaryOp) -> Op {
        Op::Binary {
            op,
            act: Activation::None,
        }
    }

    /// A Reshape of a per-channel quantized constant keeps its quantization while the channels stay
    /// the leading dim; a per-tensor one always.
    #[test]
    fn reshape_keeps_quantization_of_the_leading_dim() {
        let mut g = Graph::new(13);
        let w = g.add_constant(
            "w",
            vec![4, 2],
            ConstData::F32((0..8).map(|v| v as f32).collect()),
        );
        let per_channel = Quant {
            scales: vec![0.5; 4],
            zero_points: vec![0; 4],
            axis: 0,
            dtype: DType::I8,
        };
        g.tensor_mut(w).quant = Some(per_channel.clone());
        let reshape = |shape: &[usize]| Op::Reshape {
            shape: shape.to_vec(),
        };
        let kept = fold(&g, &reshape(&[4, 1, 2]), &[w], &[4, 1, 2], DType::F32).unwrap();
        assert_eq!(kept.and_then(|f| f.quant), Some(per_channel));
        let flat = fold(&g, &reshape(&[8]), &[w], &[8], DType::F32).unwrap();
        assert_eq!(flat.as_ref().map(|f| &f.data), g.tensor(w).data.as_ref());
        assert_eq!(flat.and_then(|f| f.quant), None);
        let per_tensor = Quant::per_tensor(0.25, 3);
        g.tensor_mut(w).quant = Some(per_tensor.clone());
        let flat = fold(&g, &reshape(&[8]), &[w], &[8], DType::F32).unwrap();
        assert_eq!(flat.and_then(|f| f.quant), Some(per_tensor));
    }

    /// Integer division truncates toward zero, as ONNX says and the runtime does; an int64 division
    /// by zero is an error, while other integer types fold the runtime's 0.
    #[test]
    fn integer_division() {
        let (a, b) = (
            ConstData::I64(vec![7, -7, 7]),
            ConstData::I64(vec![2, 2, -2]),
        );
        let div = binary(BinaryOp::Div);
        let quotient =
            |dtype, b: &ConstData| eval(&div, &[(&[3], &a, dtype), (&[3], b, dtype)], &[3], dtype);
        assert_eq!(
            quotient(DType::I64, &b),
            Ok(Some(ConstData::I64(vec![3, -3, -3])))
        );
        let zero = ConstData::I64(vec![2, 0, 2]);
        assert!(quotient(DType::I64, &zero).is_err());
        assert_eq!(
            quotient(DType::I32, &zero),
            Ok(Some(ConstData::I64(vec![3, 0, 3])))
        );
    }

    /// A computing op folds up to `MAX_FOLDED` elements; data movement whatever its size.
    #[test]
    fn only_data_movement_folds_past_the_size_limit() {
        let n = MAX_FOLDED + 1;
        let x = ConstData::F32(vec![1.0; n]);
        let input = [(&[n][..], &x, DType::F32)];
        let neg = Op::Unary(ember_core::ops::math::unary::UnaryOp::Neg);
        assert_eq!(eval(&neg, &input, &[n], DType::F32), Ok(None));
        let reshape = Op::Reshape { shape: vec![1, n] };
        assert_eq!(
            eval(&reshape, &input, &[1, n], DType::F32),
            Ok(Some(x.clone()))
        );
    }
}
