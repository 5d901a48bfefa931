//! Constant padding.

pub use crate::schema::PadParams;

use crate::ops::entry::{op_entry, out, shape_reason};
use crate::ops::shape::{
    check_dims, checked_sum3, ensure, for_each_offset, rank_to_walk, row_major_strides,
};
use crate::ops::{In, Out};
use crate::Error;

/// Checks `y[i] == before[i] + x[i] + after[i]` for every axis (entries past the rank are ignored).
pub fn validate(p: &PadParams, x: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(x)?;
    check_dims(y)?;
    ensure(y.len() == x.len(), "pad output rank differs from input")?;
    for (i, (&dx, &dy)) in x.iter().zip(y).enumerate() {
        let want = checked_sum3(dx, p.before[i] as usize, p.after[i] as usize)?;
        ensure(dy == want, "pad output dims are not before + input + after")?;
    }
    Ok(())
}

/// Copies `x` into the middle of `y` and fills the border with `value`.
pub fn pad(p: &PadParams, x: In<'_>, y: Out<'_>) {
    pad_with(p, p.value, x, y);
}

/// [`pad`] for any element type, filling with `value` (the caller converts `p.value`).
///
/// Fills all of `y`, then copies each row (last axis) of `x` to its place.
pub fn pad_with<T: Copy>(p: &PadParams, value: T, x: In<'_, T>, y: Out<'_, T>) {
    y.data.fill(value);
    let Some(rank) = rank_to_walk(x.dims, x.data.len(), x.data, y.data) else {
        return;
    };
    let y_strides = row_major_strides(y.dims);
    let corner: usize = (0..rank).map(|i| p.before[i] as usize * y_strides[i]).sum();
    let row_len = x.dims[rank - 1];
    let mut rows = x.data.chunks_exact(row_len);
    for_each_offset(&x.dims[..rank - 1], &[y_strides], |[offset]| {
        if let Some(row) = rows.next() {
            y.data[corner + offset..][..row_len].copy_from_slice(row);
        }
    });
}

/// Writes `src`, a row-major tensor of `shape` whose elements are `size` bytes each, into the start
/// of every axis of `dst`, a tensor of `dims` (at least `shape` on every axis, of the same rank), and
/// fills the rest with `fill` (one element's bytes): an input shorter than the shape planned for it,
/// padded at the end of each axis (`Session::write_input`). Allocates nothing.
pub fn pad_end_bytes(
    size: usize,
    fill: &[u8],
    src: &[u8],
    shape: &[u32],
    dst: &mut [u8],
    dims: &[u32],
) -> Result<(), Error> {
    let bad = |reason| Error::Shape { reason };
    if shape.len() != dims.len() || shape.len() > crate::schema::MAX_RANK {
        return Err(bad("the input's rank differs from the model's"));
    }
    let mut p = PadParams {
        before: [0; crate::schema::MAX_RANK],
        after: [0; crate::schema::MAX_RANK],
        value: 0.0,
    };
    for (i, (&s, &d)) in shape.iter().zip(dims).enumerate() {
        p.after[i] = d
            .checked_sub(s)
            .ok_or(bad("the input is larger than the model's shape on an axis"))?;
    }
    let x_dims = crate::model::UDims::of(shape);
    let y_dims = crate::model::UDims::of(dims);
    let count = |d: &[usize]| d.iter().try_fold(size, |n, &k| n.checked_mul(k));
    if count(x_dims.as_slice()) != Some(src.len()) || count(y_dims.as_slice()) != Some(dst.len()) {
        return Err(Error::WrongLength {
            expected: count(x_dims.as_slice()).unwrap_or(0),
            got: src.len(),
        });
    }
    fn go<const N: usize>(p: &PadParams, fill: &[u8], x: In<'_, u8>, y: Out<'_, u8>) {
        let value = fill.first_chunk::<N>().copied().unwrap_or([0; N]);
        let x = In {
            data: x.data.as_chunks::<N>().0,
            dims: x.dims,
        };
        let y = Out {
            data: y.data.as_chunks_mut::<N>().0,
            dims: y.dims,
        };
        pad_with(p, value, x, y);
    }
    let x = In {
        data: src,
        dims: x_dims.as_slice(),
    };
    let y = Out {
        data: dst,
        dims: y_dims.as_slice(),
    };
    match size {
        1 => go::<1>(&p, fill, x, y),
        2 => go::<2>(&p, fill, x, y),
        4 => go::<4>(&p, fill, x, y),
        8 => go::<8>(&p, fill, x, y),
        _ => return Err(bad("no element is this size")),
    }
    Ok(())
}

/// Signature of a pad kernel.
pub type PadFn = fn(&PadParams, In<'_>, Out<'_>);

op_entry! {
    /// The [`Kernels::pad`](crate::Kernels::pad) entry, which runs
    /// [`OpKind::Pad`](crate::OpKind::Pad).
    Pad: PadFn = pad, PadParams, Same;
    validate |p, o| shape_reason(validate(p, o.dims(0), o.out_dims()));
    run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
}
