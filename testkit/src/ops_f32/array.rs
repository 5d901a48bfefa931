//! Data-movement kernels: concat, transpose, pad, reshape.

use ember_core::ops::array::concat::{self, ConcatParams};
use ember_core::ops::array::pad::{self, PadParams};
use ember_core::ops::array::reshape;
use ember_core::ops::array::transpose::{self, TransposeParams};
use ember_core::ops::{In, Out, MAX_RANK};
use ember_core::{Error, Kernels};
use proptest::collection::vec;
use proptest::prelude::*;

use crate::shape::run_into;

use super::{assert_close, assert_known, dim, flat, numel, unflat, values, Want};

/// Every element must come through exactly (data movement does no arithmetic).
fn exact(values: impl IntoIterator<Item = f32>) -> Vec<Want> {
    values
        .into_iter()
        .map(|v| Want::exact(f64::from(v)))
        .collect()
}

// --------------------------------------------------------------------------------------------- concat

/// Several inputs joined along one axis.
#[derive(Clone, Debug)]
pub struct ConcatCase {
    p: ConcatParams,
    x_dims: Vec<Vec<usize>>,
    y_dims: Vec<usize>,
    xs: Vec<Vec<f32>>,
}

impl ConcatCase {
    fn run(&self, k: &Kernels) -> Vec<f32> {
        let xs: Vec<In<'_>> = self
            .xs
            .iter()
            .zip(&self.x_dims)
            .map(|(data, dims)| In { data, dims })
            .collect();
        run_into(&self.y_dims, f32::NAN, |y| (k.concat)(&self.p, &xs, y))
    }
}

/// Rank 1 to 4, 1 to 4 inputs, each 0 to 3 long along the axis.
pub fn concat_case() -> impl Strategy<Value = ConcatCase> {
    (vec(1usize..=3, 1..=4), vec(0usize..=3, 1..=4))
        .prop_flat_map(|(base, sizes)| {
            let rank = base.len() as u8;
            (0..rank, Just(base), Just(sizes))
        })
        .prop_flat_map(|(axis, base, sizes)| {
            let a = usize::from(axis);
            let with_size = |size| {
                let mut dims = base.clone();
                dims[a] = size;
                dims
            };
            let x_dims: Vec<Vec<usize>> = sizes.iter().map(|&s| with_size(s)).collect();
            let y_dims = with_size(sizes.iter().sum());
            let xs: Vec<_> = x_dims.iter().map(|d| values(numel(d))).collect();
            (Just(ConcatParams { axis }), Just(x_dims), Just(y_dims), xs)
        })
        .prop_map(|(p, x_dims, y_dims, xs)| ConcatCase {
            p,
            x_dims,
            y_dims,
            xs,
        })
}

/// The table's concat against the definition: output index `j` along the axis comes from the input whose
/// range of the axis holds `j`, at `j` minus the sizes of the inputs before it.
pub fn check_concat(k: &Kernels, c: &ConcatCase) -> Result<(), TestCaseError> {
    let x_dims: Vec<&[usize]> = c.x_dims.iter().map(Vec::as_slice).collect();
    prop_assert_eq!(concat::validate(&c.p, &x_dims, &c.y_dims), Ok(()));
    let axis = usize::from(c.p.axis);
    let want = (0..numel(&c.y_dims)).map(|pos| {
        let mut index = unflat(pos, &c.y_dims);
        let mut input = 0;
        while index[axis] >= c.x_dims[input][axis] {
            index[axis] -= c.x_dims[input][axis];
            input += 1;
        }
        c.xs[input][flat(&index, &c.x_dims[input])]
    });
    assert_close(&c.run(k), &exact(want))
}

// ------------------------------------------------------------------------------------------ transpose

/// A data movement of one input: its parameters, the input's dims and values, the output's dims.
#[derive(Clone, Debug)]
pub struct MoveCase<P> {
    p: P,
    x_dims: Vec<usize>,
    y_dims: Vec<usize>,
    x: Vec<f32>,
}

impl<P> MoveCase<P> {
    /// Runs `kernel` on the case, as [`run_move`].
    fn run(&self, validate: MoveValidate<P>, kernel: fn(&P, In<'_>, Out<'_>)) -> Vec<f32> {
        let x = In {
            data: &self.x,
            dims: &self.x_dims,
        };
        run_move(&self.p, x, &self.y_dims, validate, kernel)
    }
}

/// The `validate` of a data movement of one input: parameters, the input's and the output's dims.
type MoveValidate<P> = fn(&P, &[usize], &[usize]) -> Result<(), Error>;

/// Runs the kernel of a data movement of one input on `x` into an output of `y_dims`, after checking
/// that its `validate` accepts them.
fn run_move<P>(
    p: &P,
    x: In<'_>,
    y_dims: &[usize],
    validate: MoveValidate<P>,
    kernel: fn(&P, In<'_>, Out<'_>),
) -> Vec<f32> {
    assert_eq!(validate(p, x.dims, y_dims), Ok(()));
    run_into(y_dims, f32::NAN, |y| kernel(p, x, y))
}

/// A permutation of the axes.
pub type TransposeCase = MoveCase<TransposeParams>;

/// Rank 0 to 5, any permutation; `perm` entries past the rank hold junk (they must be ignored).
pub fn transpose_case() -> impl Strategy<Value = TransposeCase> {
    vec(dim(), 0..=5)
        .prop_flat_map(|x_dims| {
            let order: Vec<u8> = (0..x_dims.len() as u8).collect();
            let n = numel(&x_dims);
            (Just(x_dims), Just(order).prop_shuffle(), values(n))
        })
        .prop_map(|(x_dims, order, x)| {
            let mut perm = [u8::MAX; MAX_RANK];
            perm[..order.len()].copy_from_slice(&order);
            let y_dims = order.iter().map(|&a| x_dims[usize::from(a)]).collect();
            TransposeCase {
                p: TransposeParams { perm },
                x_dims,
                y_dims,
                x,
            }
        })
}

/// The table's transpose against `y[i_0, ..., i_r] = x[j]` with `j[perm[a]] = i_a`.
pub fn check_transpose(k: &Kernels, c: &TransposeCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(transpose::validate(&c.p, &c.x_dims, &c.y_dims), Ok(()));
    let want = (0..numel(&c.y_dims)).map(|pos| {
        let y_index = unflat(pos, &c.y_dims);
        let mut x_index = vec![0; c.x_dims.len()];
        for (a, &i) in y_index.iter().enumerate() {
            x_index[usize::from(c.p.perm[a])] = i;
        }
        c.x[flat(&x_index, &c.x_dims)]
    });
    assert_close(&c.run(transpose::validate, k.transpose), &exact(want))
}

// ----------------------------------------------------------------------------------------------- pad

/// A constant pad.
pub type PadCase = MoveCase<PadParams>;

/// Rank 0 to 4, 0 to 2 added on each side; entries past the rank hold junk (they must be ignored).
pub fn pad_case() -> impl Strategy<Value = PadCase> {
    vec((dim(), 0u32..=2, 0u32..=2), 0..=4)
        .prop_flat_map(|axes| {
            let x_dims: Vec<usize> = axes.iter().map(|a| a.0).collect();
            let n = numel(&x_dims);
            (Just(axes), -10.0f32..10.0, values(n))
        })
        .prop_map(|(axes, value, x)| {
            let mut p = PadParams {
                before: [7; MAX_RANK],
                after: [9; MAX_RANK],
                value,
            };
            for (i, &(_, before, after)) in axes.iter().enumerate() {
                p.before[i] = before;
                p.after[i] = after;
            }
            let x_dims = axes.iter().map(|a| a.0).collect();
            let y_dims = axes
                .iter()
                .map(|&(d, b, a)| b as usize + d + a as usize)
                .collect();
            PadCase {
                p,
                x_dims,
                y_dims,
                x,
            }
        })
}

/// The table's pad against the definition: inside the copied box `y[i] = x[i - before]`, else `value`.
pub fn check_pad(k: &Kernels, c: &PadCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(pad::validate(&c.p, &c.x_dims, &c.y_dims), Ok(()));
    let want = (0..numel(&c.y_dims)).map(|pos| {
        let y_index = unflat(pos, &c.y_dims);
        let x_index: Option<Vec<usize>> = y_index
            .iter()
            .enumerate()
            .map(|(a, &i)| {
                let j = i.checked_sub(c.p.before[a] as usize)?;
                (j < c.x_dims[a]).then_some(j)
            })
            .collect();
        x_index.map_or(c.p.value, |j| c.x[flat(&j, &c.x_dims)])
    });
    assert_close(&c.run(pad::validate, k.pad), &exact(want))
}

// ------------------------------------------------------------------------------------------- reshape

/// A reshape: the same elements under other dims.
#[derive(Clone, Debug)]
pub struct ReshapeCase {
    x_dims: Vec<usize>,
    y_dims: Vec<usize>,
    x: Vec<f32>,
}

/// Rank 0 to 4, reshaped to the reversed dims or flattened.
pub fn reshape_case() -> impl Strategy<Value = ReshapeCase> {
    (vec(dim(), 0..=4), any::<bool>())
        .prop_flat_map(|(x_dims, flatten)| {
            let y_dims = if flatten {
                vec![numel(&x_dims)]
            } else {
                x_dims.iter().rev().copied().collect()
            };
            let n = numel(&x_dims);
            (Just(x_dims), Just(y_dims), values(n))
        })
        .prop_map(|(x_dims, y_dims, x)| ReshapeCase { x_dims, y_dims, x })
}

/// The table's reshape copies the elements in order.
pub fn check_reshape(k: &Kernels, c: &ReshapeCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(reshape::validate(&c.x_dims, &c.y_dims), Ok(()));
    let mut y = vec![f32::NAN; numel(&c.y_dims)];
    (k.reshape)(
        In {
            data: &c.x,
            dims: &c.x_dims,
        },
        Out {
            data: &mut y,
            dims: &c.y_dims,
        },
    );
    prop_assert_eq!(y, c.x.clone());
    Ok(())
}

// ------------------------------------------------------------------------------------ known answers

/// Hand-computed concat, transpose and pad.
pub fn known_array(k: &Kernels) {
    // [[1, 2], [3, 4]] joined with [[5], [6]] along axis 1: [[1, 2, 5], [3, 4, 6]].
    let c = ConcatCase {
        p: ConcatParams { axis: 1 },
        x_dims: vec![vec![2, 2], vec![2, 1]],
        y_dims: vec![2, 3],
        xs: vec![vec![1.0, 2.0, 3.0, 4.0], vec![5.0, 6.0]],
    };
    assert_known(&c.run(k), &[1.0, 2.0, 5.0, 3.0, 4.0, 6.0]);
    // Along axis 0 instead, with an empty input in the middle: the rows one after the other.
    let c = ConcatCase {
        p: ConcatParams { axis: 0 },
        x_dims: vec![vec![1, 2], vec![0, 2], vec![1, 2]],
        y_dims: vec![2, 2],
        xs: vec![vec![1.0, 2.0], vec![], vec![3.0, 4.0]],
    };
    assert_known(&c.run(k), &[1.0, 2.0, 3.0, 4.0]);

    // [[1, 2, 3], [4, 5, 6]] transposed: [[1, 4], [2, 5], [3, 6]].
    let p = TransposeParams {
        perm: [1, 0, 0, 0, 0, 0],
    };
    let x = In {
        data: &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        dims: &[2, 3],
    };
    assert_known(
        &run_move(&p, x, &[3, 2], transpose::validate, k.transpose),
        &[1.0, 4.0, 2.0, 5.0, 3.0, 6.0],
    );
    // NHWC [1, 2, 2, 2] to NCHW: channel planes (1, 3, 5, 7) and (2, 4, 6, 8).
    let p = TransposeParams {
        perm: [0, 3, 1, 2, 0, 0],
    };
    let x = In {
        data: &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0],
        dims: &[1, 2, 2, 2],
    };
    let y = run_move(&p, x, &[1, 2, 2, 2], transpose::validate, k.transpose);
    assert_known(&y, &[1.0, 3.0, 5.0, 7.0, 2.0, 4.0, 6.0, 8.0]);

    // [1, 2] with one 9 before and two after.
    let mut p = PadParams {
        before: [1, 0, 0, 0, 0, 0],
        after: [2, 0, 0, 0, 0, 0],
        value: 9.0,
    };
    let x = In {
        data: &[1.0, 2.0],
        dims: &[2],
    };
    assert_known(
        &run_move(&p, x, &[5], pad::validate, k.pad),
        &[9.0, 1.0, 2.0, 9.0, 9.0],
    );
    // A 1x1 image framed by zeros.
    p.before[..2].copy_from_slice(&[1, 1]);
    p.after[..2].copy_from_slice(&[1, 1]);
    p.value = 0.0;
    let x = In {
        data: &[5.0],
        dims: &[1, 1],
    };
    assert_known(
        &run_move(&p, x, &[3, 3], pad::validate, k.pad),
        &[0.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0],
    );
}

// --------------------------------------------------------------------------------------- validation

/// `validate` of concat, transpose and pad rejects inconsistent shapes and parameters.
pub fn array_validate_rejects_bad_shapes() {
    let axis = |axis| ConcatParams { axis };
    let good: [&[usize]; 2] = [&[2, 3], &[2, 1]];
    assert_eq!(concat::validate(&axis(1), &good, &[2, 4]), Ok(()));
    let is_shape_err = |r: Result<(), Error>| matches!(r, Err(Error::Shape { .. }));
    assert!(is_shape_err(concat::validate(&axis(0), &[], &[2])));
    assert!(is_shape_err(concat::validate(&axis(2), &good, &[2, 4])));
    assert!(is_shape_err(concat::validate(&axis(1), &good, &[2, 5])));
    assert!(is_shape_err(concat::validate(
        &axis(1),
        &[&[2, 3], &[3, 1]],
        &[2, 4]
    )));
    assert!(is_shape_err(concat::validate(
        &axis(1),
        &[&[2, 3], &[2]],
        &[2, 4]
    )));
    assert!(is_shape_err(concat::validate(
        &axis(0),
        &[&[usize::MAX], &[2]],
        &[1]
    )));

    let perm = |p: &[u8]| {
        let mut perm = [0; MAX_RANK];
        perm[..p.len()].copy_from_slice(p);
        TransposeParams { perm }
    };
    assert_eq!(
        transpose::validate(&perm(&[2, 0, 1]), &[2, 3, 4], &[4, 2, 3]),
        Ok(())
    );
    assert!(is_shape_err(transpose::validate(
        &perm(&[0, 0, 1]),
        &[2, 3, 4],
        &[2, 2, 3]
    )));
    assert!(is_shape_err(transpose::validate(
        &perm(&[0, 3, 1]),
        &[2, 3, 4],
        &[2, 4, 3]
    )));
    assert!(is_shape_err(transpose::validate(
        &perm(&[2, 0, 1]),
        &[2, 3, 4],
        &[4, 3, 2]
    )));
    assert!(is_shape_err(transpose::validate(
        &perm(&[1, 0]),
        &[2, 3],
        &[3, 2, 1]
    )));
    assert!(is_shape_err(transpose::validate(
        &perm(&[]),
        &[1; 7],
        &[1; 7]
    )));

    let mut p = PadParams {
        before: [1, 2, 0, 0, 0, 0],
        after: [0, 1, 0, 0, 0, 0],
        value: 0.0,
    };
    assert_eq!(pad::validate(&p, &[2, 3], &[3, 6]), Ok(()));
    assert!(is_shape_err(pad::validate(&p, &[2, 3], &[3, 5])));
    assert!(is_shape_err(pad::validate(&p, &[2, 3], &[3, 6, 1])));
    assert!(is_shape_err(pad::validate(&p, &[1; 7], &[1; 7])));
    p.after[0] = u32::MAX;
    assert!(is_shape_err(pad::validate(&p, &[usize::MAX - 1], &[0])));

    assert!(is_shape_err(reshape::validate(&[2, 3], &[5])));
    let huge = usize::MAX / 2;
    assert!(is_shape_err(reshape::validate(&[huge, 4], &[huge, 4])));
}
