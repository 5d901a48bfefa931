//! ONNX `GatherElements` and `ScatterElements` (opsets 11, 16, 18): one kind, by mode. The indices
//! have the rank of `data` and pick, element by element, a position along one axis; every other
//! coordinate is the element's own.
//!
//! - Gather: `y[i0.., j, ..ir] = data[i0.., indices[i0.., j, ..ir], ..ir]`, `y` shaped like the indices.
//! - Scatter: `y = data`, then `y[i0.., indices[i0.., j, ..ir], ..ir] (op)= updates[i0.., j, ..ir]`
//!   in the order of the updates (a later one wins with no reduction).
//!
//! Data of any dtype (a reduction: f32, int32 or int64), indices int32 or int64, negative from the end
//! of the axis. Indices are data, so the kernel checks each one and fails with [`OUT_OF_RANGE`] on
//! one outside its axis.

pub use crate::schema::array::gather_scatter::GatherScatterElementsParams;

use super::gather_scatter::{
    is_index, reduces, resolved_index, Combine, GatherScatterMode, BAD_DTYPE, OUT_OF_RANGE,
};
use crate::ops::element::{AnyIn, AnyOut};
use crate::ops::entry::{dims_of_first, DTypes, KernelEntry, OpArgs, OpEntry, Operands, OutDims, LEFT_OUT};
use crate::ops::shape::{dims_fit, require, row_major_strides, same_dims, Checked};
use crate::ops::In;
use crate::schema::{DType, MAX_RANK};
use crate::Error;

/// Checks the shapes: `indices` (and `updates`, shaped like them) of the rank of `data`, no larger
/// than it on any axis but `axis`; `y` shaped like the indices (gather) or like `data` (scatter).
pub fn check(
    p: &GatherScatterElementsParams,
    data: &[usize],
    indices: &[usize],
    updates: Option<&[usize]>,
    y: &[usize],
) -> Checked {
    dims_fit(data)?;
    dims_fit(indices)?;
    dims_fit(y)?;
    let axis = usize::from(p.axis);
    require(axis < data.len(), "gather/scatter elements axis is not below the rank")?;
    require(
        indices.len() == data.len()
            && indices
                .iter()
                .zip(data)
                .enumerate()
                .all(|(d, (&i, &x))| d == axis || i <= x),
        "gather/scatter elements indices are not of the data's rank, or larger on an axis but the indexed one",
    )?;
    match (p.mode, updates) {
        (GatherScatterMode::Gather, None) => {
            require(same_dims(y, indices), "gather elements output is not shaped like the indices")
        }
        (GatherScatterMode::Scatter(_), Some(u)) => {
            require(same_dims(u, indices), "scatter elements updates are not shaped like the indices")?;
            require(same_dims(y, data), "scatter elements output is not shaped like the data")
        }
        _ => Err("gather elements takes 2 inputs, scatter elements 3"),
    }
}

/// The offset in a tensor of strides `strides` of the element at `coords`, with the coordinate on
/// `axis` replaced by `at`.
#[inline]
fn offset(coords: &[usize], strides: &[usize], axis: usize, at: usize) -> usize {
    coords
        .iter()
        .zip(strides)
        .enumerate()
        .map(|(d, (&c, &s))| if d == axis { at * s } else { c * s })
        .sum()
}

/// Steps `coords` to the next element of `dims`, row-major.
#[inline]
fn step(coords: &mut [usize], dims: &[usize]) {
    for (c, &d) in coords.iter_mut().zip(dims).rev() {
        *c += 1;
        if *c < d {
            return;
        }
        *c = 0;
    }
}

fn run_typed<T: Combine + bytemuck::Pod>(
    p: &GatherScatterElementsParams,
    data: In<'_, T>,
    indices: &AnyIn<'_>,
    updates: Option<In<'_, T>>,
    y: &mut [T],
) -> Result<(), Error> {
    let rank = data.dims.len();
    let axis = usize::from(p.axis);
    let len = data.dims[axis];
    let strides = row_major_strides(data.dims);
    let strides = &strides[..rank];
    let mut coords = [0usize; MAX_RANK];
    let coords = &mut coords[..rank];
    let count: usize = indices.dims.iter().product();
    match (p.mode, updates) {
        (GatherScatterMode::Gather, None) => {
            for (k, yk) in y.iter_mut().enumerate().take(count) {
                let at = resolved_index(indices, k, len)?;
                *yk = *data.data.get(offset(coords, strides, axis, at)).ok_or(OUT_OF_RANGE)?;
                step(coords, indices.dims);
            }
        }
        (GatherScatterMode::Scatter(r), Some(u)) => {
            y.copy_from_slice(data.data);
            for (k, &uk) in u.data.iter().enumerate().take(count) {
                let at = resolved_index(indices, k, len)?;
                let yk = y.get_mut(offset(coords, strides, axis, at)).ok_or(OUT_OF_RANGE)?;
                *yk = yk.combine(uk, r);
                step(coords, indices.dims);
            }
        }
        _ => return Err(BAD_DTYPE),
    }
    Ok(())
}

/// Gathers or scatters (see the module doc); fails with [`OUT_OF_RANGE`] on an index outside its axis
/// (a scatter may then have written some updates).
pub fn gather_scatter_elements(
    p: &GatherScatterElementsParams,
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

/// Signature of a gather/scatter elements kernel (`data, indices, updates, y`).
pub type GatherScatterElementsFn = fn(
    &GatherScatterElementsParams,
    AnyIn<'_>,
    AnyIn<'_>,
    Option<AnyIn<'_>>,
    AnyOut<'_>,
) -> Result<(), Error>;

/// The [`Kernels::gather_scatter_elements`](crate::Kernels::gather_scatter_elements) entry, which runs
/// [`OpKind::GatherScatterElements`](crate::OpKind::GatherScatterElements).
pub struct GatherScatterElements;

impl KernelEntry for GatherScatterElements {
    type Kernel = GatherScatterElementsFn;
    const REFERENCE: GatherScatterElementsFn = gather_scatter_elements;
    const STUB: GatherScatterElementsFn = |_, _, _, _, _| Err(LEFT_OUT);
}

impl OpEntry for GatherScatterElements {
    type Params = GatherScatterElementsParams;
    const DTYPES: DTypes = DTypes::Own;

    fn validate(p: &GatherScatterElementsParams, o: &impl Operands) -> Checked {
        let data = o.dtype(0);
        let reduction_ok = match p.mode {
            GatherScatterMode::Gather => true,
            GatherScatterMode::Scatter(r) => o.dtype(2) == data && reduces(r, data),
        };
        require(
            o.out_dtype() == data && is_index(o.dtype(1)) && reduction_ok,
            "gather/scatter elements needs int32 or int64 indices, updates and output of the data's \
             dtype, and f32, int32 or int64 data to reduce",
        )?;
        check(p, o.dims(0), o.dims(1), o.opt(2), o.out_dims())
    }

    fn infer(p: &GatherScatterElementsParams, x: &[&[usize]]) -> Result<OutDims, &'static str> {
        match p.mode {
            GatherScatterMode::Gather => dims_of_first(x.get(1..).unwrap_or(&[])),
            GatherScatterMode::Scatter(_) => dims_of_first(x),
        }
    }

    fn infer_dtype(_p: &GatherScatterElementsParams, x: &[DType]) -> Result<DType, &'static str> {
        x.first().copied().ok_or("the op has no input")
    }

    #[inline(always)]
    fn run(kernel: GatherScatterElementsFn, p: &GatherScatterElementsParams, a: OpArgs<'_, '_>) -> Result<(), Error> {
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

    fn p(axis: u8, mode: GatherScatterMode) -> GatherScatterElementsParams {
        GatherScatterElementsParams { axis, mode }
    }

    /// Runs the kernel on f32 data `[2, 3]` and int64 indices of `idims`.
    fn run(
        p: GatherScatterElementsParams,
        idx: &[i64],
        idims: &[usize],
        updates: Option<&[f32]>,
        ydims: &[usize],
    ) -> Result<Vec<f32>, Error> {
        let data = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
        let ib = idx.iter().flat_map(|i| i.to_le_bytes()).collect::<Vec<_>>();
        let mut y = vec![0.0f32; ydims.iter().product()];
        gather_scatter_elements(
            &p,
            AnyIn { dtype: DType::F32, bytes: bytemuck::cast_slice(&data), dims: &[2, 3] },
            AnyIn { dtype: DType::I64, bytes: &ib, dims: idims },
            updates.map(|u| AnyIn { dtype: DType::F32, bytes: bytemuck::cast_slice(u), dims: idims }),
            AnyOut { dtype: DType::F32, bytes: bytemuck::cast_slice_mut(&mut y), dims: ydims },
        )?;
        Ok(y)
    }

    #[test]
    fn gathers_along_either_axis_with_negative_indices() {
        // data [[1,2,3],[4,5,6]]; axis 1, indices [[2,0],[-1,1]] -> [[3,1],[6,5]].
        let g = p(1, GatherScatterMode::Gather);
        assert_eq!(run(g, &[2, 0, -1, 1], &[2, 2], None, &[2, 2]), Ok(vec![3.0, 1.0, 6.0, 5.0]));
        // axis 0, indices [[1,0,1]] -> [[4,2,6]].
        let g = p(0, GatherScatterMode::Gather);
        assert_eq!(run(g, &[1, 0, 1], &[1, 3], None, &[1, 3]), Ok(vec![4.0, 2.0, 6.0]));
    }

    #[test]
    fn scatters_with_every_reduction_in_update_order() {
        // axis 1, indices [[0,0],[2,2]], updates [[10,20],[30,40]].
        let idx = [0, 0, 2, 2];
        let upd = [10.0, 20.0, 30.0, 40.0];
        let s = |r| run(p(1, GatherScatterMode::Scatter(r)), &idx, &[2, 2], Some(&upd), &[2, 3]);
        assert_eq!(s(ScatterReduction::None), Ok(vec![20.0, 2.0, 3.0, 4.0, 5.0, 40.0]));
        assert_eq!(s(ScatterReduction::Add), Ok(vec![31.0, 2.0, 3.0, 4.0, 5.0, 76.0]));
        assert_eq!(s(ScatterReduction::Mul), Ok(vec![200.0, 2.0, 3.0, 4.0, 5.0, 7200.0]));
        assert_eq!(s(ScatterReduction::Max), Ok(vec![20.0, 2.0, 3.0, 4.0, 5.0, 40.0]));
        assert_eq!(s(ScatterReduction::Min), Ok(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]));
    }

    #[test]
    fn an_index_outside_its_axis_is_an_error() {
        let g = p(1, GatherScatterMode::Gather);
        assert_eq!(run(g, &[3, 0, 0, 0], &[2, 2], None, &[2, 2]), Err(OUT_OF_RANGE));
        assert_eq!(run(g, &[0, 0, -4, 0], &[2, 2], None, &[2, 2]), Err(OUT_OF_RANGE));
        let s = p(0, GatherScatterMode::Scatter(ScatterReduction::Add));
        assert_eq!(run(s, &[2, 0], &[1, 2], Some(&[1.0, 1.0]), &[2, 3]), Err(OUT_OF_RANGE));
    }

    #[test]
    fn shapes_are_checked() {
        let g = p(1, GatherScatterMode::Gather);
        assert!(check(&g, &[2, 3], &[2, 4], None, &[2, 4]).is_ok());
        assert!(check(&g, &[2, 3], &[3, 1], None, &[3, 1]).is_err());
        assert!(check(&g, &[2, 3], &[2], None, &[2]).is_err());
        let s = p(1, GatherScatterMode::Scatter(ScatterReduction::None));
        assert!(check(&s, &[2, 3], &[2, 2], Some(&[2, 2]), &[2, 3]).is_ok());
        assert!(check(&s, &[2, 3], &[2, 2], Some(&[2, 1]), &[2, 3]).is_err());
    }
}
