//! Constant folding by running the op: a node whose inputs are all constants is evaluated at conversion
//! time with `ember-core`'s reference kernels, through a one-op blob, so the folded value is exactly what
//! the runtime would have computed. Covers every op that lowers without a layout (element-wise math,
//! comparisons, casts, reductions, data movement), which is what shape subgraphs are made of.

use ember_core::format::write::{write_blob, BlobParts};
use ember_core::format::{ArenaPlan, Dims, ModelInfo, OpRecord, Storage, TensorRecord, ALIGN};
use ember_core::{AlignedBuf, DType, Model, Session};

use super::{ConstData, Node, Op, TensorId};

/// Largest output (elements) folded; bigger constants stay runtime ops.
const MAX_FOLDED: usize = 1 << 20;

/// `op` applied to constant inputs (dims, data, dtype), giving a tensor of `out_dims` and `out_dtype`;
/// `None` when the op does not lower on its own or the blob would be refused.
pub fn eval(
    op: &Op,
    inputs: &[(&[usize], &ConstData, DType)],
    out_dims: &[usize],
    out_dtype: DType,
) -> Option<ConstData> {
    let out_len: usize = out_dims.iter().product();
    if inputs.is_empty() || out_len == 0 || out_len > MAX_FOLDED {
        return None;
    }
    let node = Node {
        name: "constant".into(),
        onnx_op: String::new(),
        op: op.clone(),
        inputs: (0..inputs.len()).map(TensorId).collect(),
        output: TensorId(inputs.len()),
    };
    let kind = crate::lower::ops::lower_op(&node).ok()?;
    let dims_of = |d: &[usize]| -> Option<Dims> {
        let mut v = Dims::new();
        for &x in d {
            v.push(u32::try_from(x).ok()?).ok()?;
        }
        Some(v)
    };
    let mut weights = Vec::new();
    let mut tensors = Vec::with_capacity(inputs.len() + 1);
    for (dims, data, dtype) in inputs {
        let offset = u32::try_from(weights.len()).ok()?;
        crate::lower::write_elements(&mut weights, data, *dtype).ok()?;
        weights.resize(weights.len().next_multiple_of(ALIGN), 0);
        tensors.push(TensorRecord {
            dtype: *dtype,
            dims: dims_of(dims)?,
            storage: Storage::Weights { offset },
            quant: None,
            first_use: 0,
            last_use: 0,
        });
    }
    let out_bytes = out_len.checked_mul(out_dtype.size())?;
    tensors.push(TensorRecord {
        dtype: out_dtype,
        dims: dims_of(out_dims)?,
        storage: Storage::Arena { offset: 0 },
        quant: None,
        first_use: 0,
        last_use: u32::MAX,
    });
    let out_id = u32::try_from(inputs.len()).ok()?;
    let mut op_inputs = heapless::Vec::new();
    for i in 0..out_id {
        op_inputs.push(i).ok()?;
    }
    let ops = [OpRecord {
        kind,
        inputs: op_inputs,
        output: out_id,
    }];
    let activation_bytes = u32::try_from(out_bytes.next_multiple_of(ALIGN)).ok()?;
    let mut outputs = heapless::Vec::new();
    outputs.push(out_id).ok()?;
    let info = ModelInfo {
        producer: crate::PRODUCER.as_bytes(),
        source_hash: 0,
        tensor_count: out_id + 1,
        op_count: 1,
        inputs: heapless::Vec::new(),
        outputs,
        arena: ArenaPlan {
            persistent_bytes: 0,
            activation_bytes,
            scratch_bytes: 0,
            lower_bound_bytes: activation_bytes,
        },
    };
    let blob = write_blob(&BlobParts {
        info: &info,
        tensors: &tensors,
        ops: &ops,
        weights: &weights,
        names: None,
    })
    .ok()?;
    let blob = AlignedBuf::from_bytes(&blob);
    let model = Model::parse(blob.as_bytes()).ok()?;
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut session = Session::new(&model, arena.as_mut_bytes()).ok()?;
    session.run().ok()?;
    let out = session.output(0).ok()?;
    read_elements(out.bytes(), out_dtype)
}

/// Little-endian elements of `dtype` as constant data (floats as f32, integers and bools as i64).
fn read_elements(b: &[u8], dtype: DType) -> Option<ConstData> {
    use ember_core::half::f16;
    let n = dtype.size();
    let chunks = b.chunks_exact(n);
    Some(match dtype {
        DType::F32 => ConstData::F32(
            chunks
                .map(|c| f32::from_le_bytes(c.try_into().unwrap_or([0; 4])))
                .collect(),
        ),
        DType::F64 => ConstData::F32(
            chunks
                .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as f32)
                .collect(),
        ),
        DType::F16 => ConstData::F32(
            chunks
                .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
        ),
        DType::U64 => ConstData::I64(
            chunks
                .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as i64)
                .collect(),
        ),
        DType::I8 | DType::I16 | DType::I32 | DType::I64 => ConstData::I64(
            chunks
                .map(|c| {
                    // Sign-extend from the element's width.
                    let mut a = if c[n - 1] & 0x80 != 0 {
                        [0xff; 8]
                    } else {
                        [0; 8]
                    };
                    a[..n].copy_from_slice(c);
                    i64::from_le_bytes(a)
                })
                .collect(),
        ),
        DType::U8 | DType::U16 | DType::U32 | DType::Bool => ConstData::I64(
            chunks
                .map(|c| {
                    let mut a = [0u8; 8];
                    a[..n].copy_from_slice(c);
                    i64::from_le_bytes(a)
                })
                .collect(),
        ),
    })
}
