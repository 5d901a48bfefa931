//! Data movement on tensors of any dtype but f32 (which has its own table entries): the generic
//! reference kernels, instantiated by element size only (they copy elements, so i32 and u32 share one
//! instance), behind one kernel-table entry so that a firmware without such tensors links none of them.

use crate::ops::element::{scalar_bytes, AnyIn, AnyOut};
use crate::ops::entry::{KernelEntry, LEFT_OUT};
use crate::ops::{array, In, Out};
use crate::schema::{DType, OpKind, MAX_OP_INPUTS};
use crate::Error;

fn typed<T: bytemuck::Pod>(x: AnyIn<'_>) -> Result<In<'_, T>, Error> {
    x.typed().ok_or(Error::Unsupported {
        reason: "tensor bytes are not aligned for their dtype",
    })
}

/// Runs data-movement op `kind` (Concat, Transpose, Pad, Reshape, Slice, Gather, Broadcast) on `xs`
/// into `y`, whose dtype all data inputs share (checked by `Model::parse`), whatever its element size.
pub fn movement(kind: &OpKind, xs: &[AnyIn<'_>], y: AnyOut<'_>) -> Result<(), Error> {
    match y.dtype.size() {
        1 => movement8(kind, xs, y),
        2 => movement16(kind, xs, y),
        4 => movement32(kind, xs, y),
        _ => movement64(kind, xs, y),
    }
}

/// [`movement`] of tensors with 1-byte elements (int8, uint8, bool).
pub fn movement8(kind: &OpKind, xs: &[AnyIn<'_>], y: AnyOut<'_>) -> Result<(), Error> {
    by_size::<u8>(kind, xs, y)
}

/// [`movement`] of tensors with 2-byte elements.
pub fn movement16(kind: &OpKind, xs: &[AnyIn<'_>], y: AnyOut<'_>) -> Result<(), Error> {
    by_size::<u16>(kind, xs, y)
}

/// [`movement`] of tensors with 4-byte elements.
pub fn movement32(kind: &OpKind, xs: &[AnyIn<'_>], y: AnyOut<'_>) -> Result<(), Error> {
    by_size::<u32>(kind, xs, y)
}

/// [`movement`] of tensors with 8-byte elements.
pub fn movement64(kind: &OpKind, xs: &[AnyIn<'_>], y: AnyOut<'_>) -> Result<(), Error> {
    by_size::<u64>(kind, xs, y)
}

fn by_size<T: bytemuck::Pod + Default>(
    kind: &OpKind,
    xs: &[AnyIn<'_>],
    y: AnyOut<'_>,
) -> Result<(), Error> {
    let dtype = y.dtype;
    let missing = Error::Unsupported {
        reason: "missing input",
    };
    let x = |i: usize| -> Result<In<'_, T>, Error> { typed(*xs.get(i).ok_or(missing)?) };
    let y: Out<'_, T> = y.typed().ok_or(Error::Unsupported {
        reason: "tensor bytes are not aligned for their dtype",
    })?;
    match kind {
        OpKind::Concat(p) => {
            let mut ins: heapless::Vec<In<'_, T>, MAX_OP_INPUTS> = heapless::Vec::new();
            for j in 0..xs.len() {
                ins.push(x(j)?).map_err(|_| Error::Unsupported {
                    reason: "too many inputs",
                })?;
            }
            array::concat::concat(p, &ins, y)
        }
        OpKind::Transpose(p) => array::transpose::transpose(p, x(0)?, y),
        OpKind::Pad(p) => {
            let value: T = fill_value(dtype, p.value);
            array::pad::pad_with(p, value, x(0)?, y)
        }
        OpKind::Reshape => array::reshape::reshape(x(0)?, y),
        OpKind::Slice(p) => array::slice::slice(p, x(0)?, y),
        OpKind::Gather(p) => {
            let idx: In<'_, f32> = typed(*xs.get(1).ok_or(missing)?)?;
            array::gather::gather(p, x(0)?, idx, y)
        }
        OpKind::Broadcast => array::broadcast::broadcast(x(0)?, y),
        _ => {
            return Err(Error::Unsupported {
                reason: "this op runs on f32 tensors only",
            })
        }
    }
    Ok(())
}

/// Pad's f32 fill value as an element of `dtype`, stored in `T` (the dtype's size).
fn fill_value<T: bytemuck::Pod + Default>(dtype: DType, value: f32) -> T {
    let bytes = scalar_bytes(dtype, f64::from(value));
    bytemuck::try_pod_read_unaligned(&bytes[..core::mem::size_of::<T>()]).unwrap_or_default()
}

/// Signature of data movement on tensors other than f32 (`kind` is Concat, Transpose, Pad, Reshape,
/// Slice, Gather or Broadcast).
pub type MovementFn = fn(&OpKind, &[AnyIn<'_>], AnyOut<'_>) -> Result<(), Error>;

/// Declares the `movementN` entries, one unit type per element size, each running `movementN`.
macro_rules! movement_entries {
    ($($name:ident = $kernel:ident),*) => {$(
        #[doc = concat!(
            "The [`Kernels::", stringify!($kernel), "`](crate::Kernels::", stringify!($kernel),
            ") entry: [`", stringify!($kernel), "`]."
        )]
        pub struct $name;

        impl KernelEntry for $name {
            type Kernel = MovementFn;
            const REFERENCE: MovementFn = $kernel;
            const STUB: MovementFn = |_, _, _| Err(LEFT_OUT);
        }
    )*};
}

movement_entries!(
    Movement8 = movement8,
    Movement16 = movement16,
    Movement32 = movement32,
    Movement64 = movement64
);
