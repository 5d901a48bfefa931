//! One op run on tensors the caller holds, without a blob or a session: what the converter folds
//! constants with, so that a folded value is exactly what a session over the reference kernels computes.
//!
//! [`eval_op`] runs the checks [`Model::parse`](crate::Model::parse) runs on an op (its arity, each
//! tensor's rank and byte size, then [`validate_op`]: the op's dtypes, shapes and weight values), then
//! the dispatch a [`Session`](crate::Session) runs, through [`REFERENCE`] with every entry and an empty
//! workspace (the scratch a session over a converter's blob plans for the reference kernels). The
//! inputs are read as a blob's weights: their values are known, as a constant's are.

use crate::kernels::{entry_in, family, LEFT_OUT, REFERENCE};
use crate::model::{byte_size, validate_op};
use crate::ops::element::{AnyIn, AnyOut};
use crate::ops::entry::{NotAWeight, OpArgs, Operands};
use crate::schema::{DType, OpKind, MAX_OP_INPUTS, MAX_RANK};
use crate::workspace::Workspace;
use crate::Error;

/// Runs `kind` on `inputs`, writing `output`, with the reference kernels.
///
/// Each tensor's bytes must be exactly its elements (`dtype.size()` bytes each, little-endian, row-major)
/// and start on a boundary of its element type's alignment, as they would in a blob: the kernels view
/// them in place. Bytes from a `Vec<u8>` need not be aligned; copy them into an
/// `AlignedBuf` (feature `alloc`) first.
///
/// Errors: [`Error::BadTensor`] for a tensor whose bytes do not fit its dims or are misaligned (tensors
/// numbered as a one-op blob would: the inputs in order, then the output), [`Error::BadOp`] (op 0) for
/// an op whose arity, dtypes or shapes its validation refuses, and what the kernel returns.
pub fn eval_op(kind: &OpKind, inputs: &[AnyIn<'_>], output: AnyOut<'_>) -> Result<(), Error> {
    let bad_op = |reason| Error::BadOp { op: 0, reason };
    let (min, max) = kind.arity();
    let n = inputs.len();
    if n < min || n > max || n > MAX_OP_INPUTS {
        return Err(bad_op("wrong number of inputs for this op"));
    }
    for (k, x) in inputs.iter().enumerate() {
        check_tensor(k, x.dtype, x.dims, x.bytes)?;
    }
    check_tensor(n, output.dtype, output.dims, output.bytes)?;
    let operands = HeldOperands {
        inputs,
        out_dims: output.dims,
        out_dtype: output.dtype,
    };
    validate_op(kind, &operands).map_err(bad_op)?;
    let all_f32 = operands.all_f32();
    if entry_in::<{ family::ALL }>(kind, all_f32, output.dtype.size()) == 0 {
        return Err(bad_op(LEFT_OUT));
    }
    let mut ins = [AnyIn {
        dtype: DType::F32,
        bytes: &[],
        dims: &[],
    }; MAX_OP_INPUTS];
    ins[..n].copy_from_slice(inputs);
    let args = OpArgs {
        ins: &ins,
        n,
        y: output,
        ws: Some(&mut Workspace::new(&mut [], None)),
        parallel: None,
    };
    REFERENCE.run::<{ family::ALL }>(kind, all_f32, false, args)
}

/// Checks tensor `k` as `Model::parse` checks a tensor record and a session slices its bytes: a rank
/// the blob holds, a byte size that fits `u32` and is exactly `bytes`, and bytes aligned for the dtype.
fn check_tensor(k: usize, dtype: DType, dims: &[usize], bytes: &[u8]) -> Result<(), Error> {
    let bad = |reason| Error::BadTensor {
        tensor: k as u32,
        reason,
    };
    if dims.len() > MAX_RANK {
        return Err(bad("rank above the blob's largest (MAX_RANK)"));
    }
    let mut dims32 = [0u32; MAX_RANK];
    for (d, &x) in dims32.iter_mut().zip(dims) {
        *d = u32::try_from(x).map_err(|_| bad("byte size overflows"))?;
    }
    let size = byte_size(dtype, &dims32[..dims.len()]).ok_or(bad("byte size overflows"))?;
    if bytes.len() != size as usize {
        return Err(bad(
            "bytes are not the tensor's elements (dims times dtype size)",
        ));
    }
    let align = crate::with_element!(dtype, T => core::mem::align_of::<T>());
    // (An empty tensor's bytes may sit anywhere: no elements to align.)
    if !bytes.is_empty() && !(bytes.as_ptr() as usize).is_multiple_of(align) {
        return Err(bad("bytes are not aligned for their dtype"));
    }
    Ok(())
}

/// The tensors of [`eval_op`] as validation reads them: every input is a weight (its bytes are known).
struct HeldOperands<'a, 'b> {
    inputs: &'a [AnyIn<'b>],
    out_dims: &'a [usize],
    out_dtype: DType,
}

impl Operands for HeldOperands<'_, '_> {
    fn count(&self) -> usize {
        self.inputs.len()
    }
    fn dims(&self, k: usize) -> &[usize] {
        self.inputs.get(k).map_or(&[], |x| x.dims)
    }
    fn dtype(&self, k: usize) -> DType {
        self.inputs.get(k).map_or(DType::F32, |x| x.dtype)
    }
    fn out_dims(&self) -> &[usize] {
        self.out_dims
    }
    fn out_dtype(&self) -> DType {
        self.out_dtype
    }
    fn all_f32(&self) -> bool {
        self.out_dtype == DType::F32 && self.inputs.iter().all(|x| x.dtype == DType::F32)
    }
    fn weight(&self, k: usize) -> Result<&[u8], NotAWeight> {
        self.inputs
            .get(k)
            .map(|x| x.bytes)
            .ok_or(NotAWeight::OutOfBounds)
    }
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;
    use crate::schema::{Activation, BinaryOp, BinaryParams, TransposeParams};
    use crate::AlignedBuf;
    use alloc::vec::Vec;

    /// `kind` on `inputs` (values and dims) of one element type `T` (`dtype`), into an output of
    /// `out_dims` holding `out_len` elements: its values, or the error.
    fn eval<T: bytemuck::Pod>(
        kind: &OpKind,
        dtype: DType,
        inputs: &[(&[T], &[usize])],
        out_dims: &[usize],
        out_len: usize,
    ) -> Result<Vec<T>, Error> {
        let buffers: Vec<AlignedBuf> = inputs
            .iter()
            .map(|(v, _)| AlignedBuf::from_bytes(bytemuck::cast_slice(v)))
            .collect();
        let tensors: Vec<AnyIn<'_>> = inputs
            .iter()
            .zip(&buffers)
            .map(|((_, dims), b)| AnyIn {
                dtype,
                bytes: b.as_bytes(),
                dims,
            })
            .collect();
        let mut y = AlignedBuf::zeroed(out_len * core::mem::size_of::<T>());
        let out = AnyOut {
            dtype,
            bytes: y.as_mut_bytes(),
            dims: out_dims,
        };
        eval_op(kind, &tensors, out)?;
        Ok(bytemuck::cast_slice(y.as_bytes()).to_vec())
    }

    const ADD: OpKind = OpKind::Binary(BinaryParams {
        op: BinaryOp::Add,
        act: Activation::None,
    });

    /// `[2, 3] + [3]`, broadcast over the rows.
    #[test]
    fn add_broadcasts_a_row() {
        let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let b = [10.0f32, 20.0, 30.0];
        let y = eval(&ADD, DType::F32, &[(&a, &[2, 3]), (&b, &[3])], &[2, 3], 6);
        assert_eq!(y, Ok(alloc::vec![11.0, 22.0, 33.0, 14.0, 25.0, 36.0]));
    }

    /// An int64 `[2, 3]` transposed to `[3, 2]` (data movement of 8-byte elements).
    #[test]
    fn transpose_of_int64() {
        let kind = OpKind::Transpose(TransposeParams {
            perm: [1, 0, 2, 3, 4, 5],
        });
        let x = [1i64, 2, 3, 4, 5, 6];
        let y = eval(&kind, DType::I64, &[(&x, &[2, 3])], &[3, 2], 6);
        assert_eq!(y, Ok(alloc::vec![1, 4, 2, 5, 3, 6]));
    }

    /// An output whose dims do not broadcast from the inputs' is refused by the op's validation,
    /// before any kernel runs; so are bytes that are not the dims' elements.
    #[test]
    fn bad_shapes_are_refused() {
        let a = [1.0f32, 2.0, 3.0];
        let inputs: [(&[f32], &[usize]); 2] = [(&a, &[3]), (&a, &[3])];
        assert!(matches!(
            eval(&ADD, DType::F32, &inputs, &[4], 4),
            Err(Error::BadOp { op: 0, .. })
        ));
        assert!(matches!(
            eval(&ADD, DType::F32, &inputs, &[3], 4),
            Err(Error::BadTensor { tensor: 2, .. })
        ));
    }
}
