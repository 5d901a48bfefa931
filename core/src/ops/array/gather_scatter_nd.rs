//! ONNX `GatherND` (opsets 11, 12, 13) and `ScatterND` (opsets 11, 13, 16, 18): one kind, by mode. The
//! last axis of the indices (`m` long) holds coordinates into the first `m` axes of `data` after the
//! `batch_dims` leading ones, which `data` and the indices share; each tuple picks an element or a
//! slice (the axes after them).
//!
//! - Gather: `y` is `indices.dims[..q-1] ++ data.dims[batch_dims + m..]`, each slice copied.
//! - Scatter (`batch_dims` 0): `y = data`, then each slice of `updates`
//!   (`indices.dims[..q-1] ++ data.dims[m..]`) written over (or combined with) the slice its tuple
//!   picks, in order (a later one wins with no reduction).
//!
//! Data of any dtype (a reduction: f32, int32 or int64), indices int32 or int64, negative from the end
//! of their axis; the kernel checks each one and fails with [`OUT_OF_RANGE`] on one outside its axis.

pub use crate::schema::array::gather_scatter::GatherScatterNdParams;

use super::gather_scatter::{
    is_index, reduces, resolved_index, Combine, GatherScatterMode, BAD_DTYPE, OUT_OF_RANGE,
};
use crate::ops::element::{AnyIn, AnyOut};
use crate::ops::entry::{DTypes, KernelEntry, OpArgs, OpEntry, Operands, OutDims, LEFT_OUT};
use crate::ops::shape::{dims_fit, require, row_major_strides, same_dims, Checked};
use crate::ops::In;
use crate::schema::DType;
use crate::Error;

/// The output's dims for `data` and `indices` dims, or why they do not fit: `batch_dims` below both
/// ranks and shared, the tuple length `m = indices.dims[q-1]` in `1..=rank - batch_dims`; a gather
/// gives `indices.dims[..q-1] ++ data.dims[batch_dims + m..]`, a scatter `data`'s dims.
pub fn out_dims(
    p: &GatherScatterNdParams,
    data: &[usize],
    indices: &[usize],
) -> Result<OutDims, &'static str> {
    let b = usize::from(p.batch_dims);
    let Some((&m, tuples)) = indices.split_last() else {
        return Err("gather/scatter nd indices have rank 0");
    };
    require(
        b < indices.len() && b <= data.len() && same_dims(&data[..b], &indices[..b]),
        "gather nd batch_dims is not below the indices' rank, or the batch axes differ",
    )?;
    require(
        m >= 1 && m <= data.len() - b,
        "gather/scatter nd index tuples are empty or longer than the data's rank after the batch axes",
    )?;
    let mut y = OutDims::new();
    match p.mode {
        GatherScatterMode::Gather => {
            for &d in tuples.iter().chain(&data[b + m..]) {
                y.push(d).map_err(|_| "gather nd output's rank is above the format's limit")?;
            }
        }
        GatherScatterMode::Scatter(_) => {
            require(b == 0, "scatter nd has no batch axes")?;
            y = OutDims::from_slice(data).map_err(|_| "the data's rank is above the format's limit")?;
        }
    }
    Ok(y)
}

/// Checks the shapes (see [`out_dims`]), and `updates` `indices.dims[..q-1] ++ data.dims[m..]` for a
/// scatter.
pub fn check(
    p: &GatherScatterNdParams,
    data: &[usize],
    indices: &[usize],
    updates: Option<&[usize]>,
    y: &[usize],
) -> Checked {
    dims_fit(data)?;
    dims_fit(indices)?;
    dims_fit(y)?;
    let want = out_dims(p, data, indices)?;
    require(same_dims(y, &want), "gather/scatter nd output dims do not follow from data and indices")?;
    match (p.mode, updates) {
        (GatherScatterMode::Gather, None) => Ok(()),
        (GatherScatterMode::Scatter(_), Some(u)) => {
            let q = indices.len();
            let m = indices[q - 1];
            require(
                u.len() == q - 1 + data.len() - m
                    && same_dims(&u[..q - 1], &indices[..q - 1])
                    && same_dims(&u[q - 1..], &data[m..]),
                "scatter nd updates are not indices.dims[..q-1] followed by data.dims[m..]",
            )
        }
        _ => Err("gather nd takes 2 inputs, scatter nd 3"),
    }
}

fn run_typed<T: Combine + bytemuck::Pod>(
    p: &GatherScatterNdParams,
    data: In<'_, T>,
    indices: &AnyIn<'_>,
    updates: Option<In<'_, T>>,
    y: &mut [T],
) -> Result<(), Error> {
    let b = usize::from(p.batch_dims);
    let q = indices.dims.len();
    let m = indices.dims[q - 1];
    let batches: usize = data.dims[..b].iter().product();
    let block: usize = data.dims[b..].iter().product();
    let per_batch: usize = indices.dims[b..q - 1].iter().product();
    let inner: usize = data.dims[b + m..].iter().product();
    let strides = row_major_strides(data.dims);
    // The offset in `data` of the slice tuple `t` (counted over every batch) picks.
    let slice_at = |t: usize| -> Result<usize, Error> {
        let mut at = (t / per_batch.max(1)) * block;
        for j in 0..m {
            at += resolved_index(indices, t * m + j, data.dims[b + j])? * strides[b + j];
        }
        Ok(at)
    };
    let count = batches * per_batch;
    match (p.mode, updates) {
        (GatherScatterMode::Gather, None) => {
            for t in 0..count {
                let at = slice_at(t)?;
                let src = data.data.get(at..at + inner).ok_or(OUT_OF_RANGE)?;
                let dst = y.get_mut(t * inner..(t + 1) * inner).ok_or(OUT_OF_RANGE)?;
                dst.copy_from_slice(src);
            }
        }
        (GatherScatterMode::Scatter(r), Some(u)) => {
            y.copy_from_slice(data.data);
            for t in 0..count {
                let at = slice_at(t)?;
                let src = u.data.get(t * inner..(t + 1) * inner).ok_or(OUT_OF_RANGE)?;
                let dst = y.get_mut(at..at + inner).ok_or(OUT_OF_RANGE)?;
                for (d, &s) in dst.iter_mut().zip(src) {
                    *d = d.combine(s, r);
                }
            }
        }
        _ => return Err(BAD_DTYPE),
    }
    Ok(())
}

/// Gathers or scatters (see the module doc); fails with [`OUT_OF_RANGE`] on an index outside its axis
/// (a scatter may then have written some updates).
pub fn gather_scatter_nd(
    p: &GatherScatterNdParams,
    data: AnyIn<'_>,
    indices: AnyIn<'_>,
    updates: Option<AnyIn<'_>>,
    y: AnyOut<'_>,
) -> Result<(), Error> {
    let dtype = y.dtype;
    crate::with_element!(dtype, T => {
        let data = data.typed::<T>().ok_or(BAD_DTYPE)?;
        let updates = match updates {
            Some(u) => Some(u.typed::<T>().ok_or(BAD_DTYPE)?),
            None => None,
        };
        let y = y.typed::<T>().ok_or(BAD_DTYPE)?;
        run_typed::<T>(p, data, &indices, updates, y.data)
    })
}

/// Signature of a gather/scatter nd kernel (`data, indices, updates, y`).
pub type GatherScatterNdFn = fn(
    &GatherScatterNdParams,
    AnyIn<'_>,
    AnyIn<'_>,
    Option<AnyIn<'_>>,
    AnyOut<'_>,
) -> Result<(), Error>;

/// The [`Kernels::gather_scatter_nd`](crate::Kernels::gather_scatter_nd) entry, which runs
/// [`OpKind::GatherScatterNd`](crate::OpKind::GatherScatterNd).
pub struct GatherScatterNd;

impl KernelEntry for GatherScatterNd {
    type Kernel = GatherScatterNdFn;
    const REFERENCE: GatherScatterNdFn = gather_scatter_nd;
    const STUB: GatherScatterNdFn = |_, _, _, _, _| Err(LEFT_OUT);
}

impl OpEntry for GatherScatterNd {
    type Params = GatherScatterNdParams;
    const DTYPES: DTypes = DTypes::Own;

    fn validate(p: &GatherScatterNdParams, o: &impl Operands) -> Checked {
        let data = o.dtype(0);
        let reduction_ok = match p.mode {
            GatherScatterMode::Gather => true,
            GatherScatterMode::Scatter(r) => o.dtype(2) == data && reduces(r, data),
        };
        require(
            o.out_dtype() == data && is_index(o.dtype(1)) && reduction_ok,
            "gather/scatter nd needs int32 or int64 indices, updates and output of the data's dtype, \
             and f32, int32 or int64 data to reduce",
        )?;
        check(p, o.dims(0), o.dims(1), o.opt(2), o.out_dims())
    }

    fn infer(p: &GatherScatterNdParams, x: &[&[usize]]) -> Result<OutDims, &'static str> {
        match x {
            [data, indices, ..] => out_dims(p, data, indices),
            _ => Err("gather/scatter nd takes data and indices"),
        }
    }

    fn infer_dtype(_p: &GatherScatterNdParams, x: &[DType]) -> Result<DType, &'static str> {
        x.first().copied().ok_or("the op has no input")
    }

    #[inline(always)]
    fn run(
        kernel: GatherScatterNdFn,
        p: &GatherScatterNdParams,
        a: OpArgs<'_, '_>,
    ) -> Result<(), Error> {
        let updates = (a.n > 2).then(|| a.any(2));
        kernel(p, a.any(0), a.any(1), updates, a.y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::array::gather_scatter::ScatterReduction;
    use alloc::vec;
    use alloc::vec::Vec;

    /// Runs the kernel on int32 data `[2, 2, 2]` = 0..8 and int64 indices.
    fn run(
        p: GatherScatterNdParams,
        idx: &[i64],
        idims: &[usize],
        updates: Option<(&[i32], &[usize])>,
        ydims: &[usize],
    ) -> Result<Vec<i32>, Error> {
        let data: Vec<i32> = (0..8).collect();
        let ib: Vec<u8> = idx.iter().flat_map(|i| i.to_le_bytes()).collect();
        let mut y = vec![-1i32; ydims.iter().product()];
        gather_scatter_nd(
            &p,
            AnyIn { dtype: DType::I32, bytes: bytemuck::cast_slice(&data), dims: &[2, 2, 2] },
            AnyIn { dtype: DType::I64, bytes: &ib, dims: idims },
            updates.map(|(u, d)| AnyIn { dtype: DType::I32, bytes: bytemuck::cast_slice(u), dims: d }),
            AnyOut { dtype: DType::I32, bytes: bytemuck::cast_slice_mut(&mut y), dims: ydims },
        )?;
        Ok(y)
    }

    fn p(batch_dims: u8, mode: GatherScatterMode) -> GatherScatterNdParams {
        GatherScatterNdParams { batch_dims, mode }
    }

    #[test]
    fn gathers_elements_slices_and_batches() {
        let g = p(0, GatherScatterMode::Gather);
        // Full tuples: data[1,0,1] = 5, data[0,1,-1] = data[0,1,1] = 3.
        assert_eq!(run(g, &[1, 0, 1, 0, 1, -1], &[2, 3], None, &[2]), Ok(vec![5, 3]));
        // One coordinate: slices data[1] and data[0].
        assert_eq!(run(g, &[1, 0], &[2, 1], None, &[2, 2, 2]), Ok(vec![4, 5, 6, 7, 0, 1, 2, 3]));
        // batch_dims 1: batch 0 takes row 1 ([2,3]), batch 1 takes row 0 ([4,5]).
        let b = p(1, GatherScatterMode::Gather);
        assert_eq!(run(b, &[1, 0], &[2, 1], None, &[2, 2]), Ok(vec![2, 3, 4, 5]));
        assert_eq!(out_dims(&b, &[2, 2, 2], &[2, 1]).unwrap().as_slice(), &[2, 2]);
    }

    #[test]
    fn scatters_slices_with_reductions() {
        // Slices data[1] and again data[1]: none keeps the last, add sums both.
        let upd = [10, 20, 30, 40, 1, 2, 3, 4];
        let u = Some((&upd[..], &[2usize, 2, 2][..]));
        let s = |r| run(p(0, GatherScatterMode::Scatter(r)), &[1, 1], &[2, 1], u, &[2, 2, 2]);
        assert_eq!(s(ScatterReduction::None), Ok(vec![0, 1, 2, 3, 1, 2, 3, 4]));
        assert_eq!(s(ScatterReduction::Add), Ok(vec![0, 1, 2, 3, 15, 27, 39, 51]));
        assert_eq!(s(ScatterReduction::Mul), Ok(vec![0, 1, 2, 3, 40, 200, 540, 1120]));
        assert_eq!(s(ScatterReduction::Max), Ok(vec![0, 1, 2, 3, 10, 20, 30, 40]));
        assert_eq!(s(ScatterReduction::Min), Ok(vec![0, 1, 2, 3, 1, 2, 3, 4]));
    }

    #[test]
    fn an_index_outside_its_axis_is_an_error() {
        let g = p(0, GatherScatterMode::Gather);
        assert_eq!(run(g, &[0, 2, 0], &[1, 3], None, &[1]), Err(OUT_OF_RANGE));
        assert_eq!(run(g, &[-3], &[1, 1], None, &[1, 2, 2]), Err(OUT_OF_RANGE));
        let s = p(0, GatherScatterMode::Scatter(ScatterReduction::None));
        let u = [9, 9, 9, 9];
        assert_eq!(run(s, &[5], &[1, 1], Some((&u, &[1, 2, 2])), &[2, 2, 2]), Err(OUT_OF_RANGE));
    }

    #[test]
    fn shapes_are_checked() {
        let g = p(0, GatherScatterMode::Gather);
        assert!(out_dims(&g, &[2, 2], &[1, 3]).is_err());
        assert!(out_dims(&p(1, GatherScatterMode::Gather), &[2, 2], &[3, 1]).is_err());
        let s = p(0, GatherScatterMode::Scatter(ScatterReduction::None));
        assert!(check(&s, &[2, 2], &[3, 1], Some(&[3, 2]), &[2, 2]).is_ok());
        assert!(check(&s, &[2, 2], &[3, 1], Some(&[3, 1]), &[2, 2]).is_err());
    }
}
