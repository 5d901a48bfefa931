//! Ops a GPU session runs on the host: an op the device has no kernel for, or one that reads or
//! writes a tensor the device does not hold (int32/int64/bool/u8... activations: shape arithmetic,
//! masks, ids), runs through `ember_core::eval::eval_op` (the reference kernels, the converter's
//! folding path) inside the same session, so that a model never fails to open on a GPU because of an
//! op the CPU runs. The session says which ops these are ([`crate::DeviceSession::host_ops`], the
//! profile's `host` rows).
//!
//! Tensors of the dtypes the device holds (f32, and int8 as f32 integer values) stay in device
//! buffers: a host op reads its device inputs back and writes a device output in place. Tensors of
//! other dtypes live on the host, in byte buffers the session allocates when it opens; a graph input
//! of such a type is written there and a graph output read from there.

use ember_core::format::DType;
use ember_core::ops::control::Flow;
use ember_core::ops::element::{AnyIn, AnyOut};
use ember_core::{AlignedBuf, OpKind};

/// Whether the device holds tensors of `dtype` (as f32 values).
pub(crate) fn on_device(dtype: DType) -> bool {
    matches!(dtype, DType::F32 | DType::I8)
}

/// One input of a host op.
#[derive(Clone, Debug)]
pub(crate) struct HostIn {
    pub id: usize,
    pub dtype: DType,
    pub dims: Vec<usize>,
    /// A weight's bytes, from the blob (read in place by the kernel, so kept aligned).
    pub weight: Option<AlignedBuf>,
}

/// An op run on the host, and why it is not on the device.
#[derive(Clone, Debug)]
pub(crate) struct HostOp {
    pub kind: OpKind,
    pub inputs: Vec<HostIn>,
    pub out_dtype: DType,
    pub out_dims: Vec<usize>,
    pub why: String,
}

/// f32 values read from the device as the bytes of a tensor of `dtype` (f32, or int8 held as f32).
pub(crate) fn from_device(dtype: DType, f32_bytes: &[u8], len: usize) -> Vec<u8> {
    let values = f32_bytes
        .chunks_exact(4)
        .take(len)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    match dtype {
        DType::I8 => values.map(|v| v as i8 as u8).collect(),
        _ => values.flat_map(f32::to_le_bytes).collect(),
    }
}

/// The bytes of a tensor of `dtype` (f32 or int8) as the device holds them: f32 values.
pub(crate) fn to_device(dtype: DType, bytes: &[u8]) -> Vec<u8> {
    match dtype {
        DType::I8 => bytes
            .iter()
            .flat_map(|&b| f32::from(b as i8).to_le_bytes())
            .collect(),
        _ => bytes.to_vec(),
    }
}

/// Runs `op` (op `index` of the model) on `inputs` (each its tensor's bytes, in order), over the
/// output's `initial` bytes (or zeros), returning the output's bytes and the op that runs next (after
/// a control op, as `flow` says).
pub(crate) fn run(
    op: &HostOp,
    inputs: &[AlignedBuf],
    initial: Option<AlignedBuf>,
    index: usize,
    flow: &mut Flow,
) -> Result<(AlignedBuf, usize), ember_core::Error> {
    let ins: Vec<AnyIn<'_>> = op
        .inputs
        .iter()
        .zip(inputs)
        .map(|(x, bytes)| AnyIn {
            dtype: x.dtype,
            bytes: bytes.as_bytes(),
            dims: &x.dims,
        })
        .collect();
    let len = op.out_dims.iter().product::<usize>() * op.out_dtype.size();
    let mut out = initial
        .filter(|b| b.as_bytes().len() == len)
        .unwrap_or_else(|| AlignedBuf::zeroed(len));
    ember_core::eval_op(
        &op.kind,
        &ins,
        AnyOut {
            dtype: op.out_dtype,
            bytes: out.as_mut_bytes(),
            dims: &op.out_dims,
        },
    )?;
    let next = match &op.kind {
        OpKind::Control(p) => flow.next(p, index, &ins, out.as_mut_bytes())?,
        _ => index + 1,
    };
    Ok((out, next))
}

/// A tensor's bytes as f32 values (a graph output the host holds, read back as the device's are).
pub(crate) fn as_f32(dtype: DType, bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(dtype.size())
        .map(|c| ember_core::ops::element::scalar_value(dtype, c) as f32)
        .collect()
}

/// f32 values written to a graph input the host holds, as the bytes of `dtype`: each must be a value
/// of the type (an integer in its range, 0 or 1 for bool), or the error says which is not.
pub(crate) fn from_f32(dtype: DType, values: &[f32]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(values.len() * dtype.size());
    for &v in values {
        let x = f64::from(v);
        let fits = match dtype {
            DType::F64 | DType::F16 => true,
            DType::Bool => v == 0.0 || v == 1.0,
            DType::I8 => x.fract() == 0.0 && (-128.0..=127.0).contains(&x),
            DType::U8 => x.fract() == 0.0 && (0.0..=255.0).contains(&x),
            DType::I16 => x.fract() == 0.0 && (-32768.0..=32767.0).contains(&x),
            DType::U16 => x.fract() == 0.0 && (0.0..=65535.0).contains(&x),
            DType::I32 => x.fract() == 0.0 && (-2147483648.0..=2147483647.0).contains(&x),
            DType::U32 => x.fract() == 0.0 && (0.0..=4294967295.0).contains(&x),
            DType::U64 => x.fract() == 0.0 && x >= 0.0,
            _ => x.fract() == 0.0,
        };
        if !fits {
            return Err(format!("{v} is not a {} value", dtype.name()));
        }
        let bytes = ember_core::ops::element::scalar_bytes(dtype, x);
        out.extend_from_slice(&bytes[..dtype.size()]);
    }
    Ok(out)
}
