//! Element-wise binary ops with numpy-style broadcasting: Add, Sub, Mul, Div, Pow, Min, Max, PRelu and
//! Mod, with a fused activation. Min and Max propagate NaN (numpy `minimum`/`maximum`, as ONNX does).

pub use crate::schema::{BinaryOp, BinaryParams};

use crate::ops::entry::{out, shape_reason, DTypes, KernelEntry, OpArgs, OpEntry, Operands};
use crate::ops::math::activation::{max_nan, min_nan};
use crate::ops::shape::{broadcast_zip, check_broadcast, check_dims, Checked};
use crate::ops::{In, Out};
use crate::workspace::split_rows;
use crate::Error;

/// Checks that `a` and `b` broadcast (numpy rules, right-aligned) to exactly `y`.
pub fn validate(_p: &BinaryParams, a: &[usize], b: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(a)?;
    check_dims(b)?;
    check_dims(y)?;
    check_broadcast(a, b, y)
}

/// `y = act(a op b)` with broadcasting.
pub fn binary(p: &BinaryParams, a: In<'_>, b: In<'_>, y: Out<'_>) {
    let act = p.act;
    match p.op {
        BinaryOp::Add => broadcast_zip(a, b, y, |u, v| act.apply(u + v)),
        BinaryOp::Sub => broadcast_zip(a, b, y, |u, v| act.apply(u - v)),
        BinaryOp::Mul => broadcast_zip(a, b, y, |u, v| act.apply(u * v)),
        BinaryOp::Div => broadcast_zip(a, b, y, |u, v| act.apply(u / v)),
        BinaryOp::Pow => broadcast_zip(a, b, y, |u, v| act.apply(libm::powf(u, v))),
        BinaryOp::Min => broadcast_zip(a, b, y, |u, v| act.apply(min_nan(u, v))),
        BinaryOp::Max => broadcast_zip(a, b, y, |u, v| act.apply(max_nan(u, v))),
        BinaryOp::PRelu => {
            broadcast_zip(a, b, y, |u, v| act.apply(if u < 0.0 { v * u } else { u }))
        }
        BinaryOp::Mod => broadcast_zip(a, b, y, |u, v| act.apply(libm::fmodf(u, v))),
        BinaryOp::FloorMod => broadcast_zip(a, b, y, |u, v| {
            let r = libm::fmodf(u, v);
            act.apply(if r != 0.0 && ((r < 0.0) != (v < 0.0)) {
                r + v
            } else {
                r
            })
        }),
    }
}

/// Signature of a broadcasting binary kernel (`BinaryOp`: Add, Sub, Mul, Div, Pow, Min, Max, PRelu, Mod).
pub type BinaryFn = fn(&BinaryParams, In<'_>, In<'_>, Out<'_>);

/// The [`Kernels::binary`](crate::Kernels::binary) entry, which runs
/// [`OpKind::Binary`](crate::OpKind::Binary).
pub struct Binary;

impl KernelEntry for Binary {
    type Kernel = BinaryFn;
    const REFERENCE: BinaryFn = binary;
    const STUB: BinaryFn = |_, _, _, _| {};
}

impl OpEntry for Binary {
    type Params = BinaryParams;
    const DTYPES: DTypes = DTypes::F32;

    fn validate(p: &BinaryParams, o: &impl Operands) -> Checked {
        shape_reason(validate(p, o.dims(0), o.dims(1), o.out_dims()))
    }

    #[inline(always)]
    fn run(kernel: BinaryFn, p: &BinaryParams, a: OpArgs<'_, '_>) -> Result<(), Error> {
        // In parts over the workers when large (`split_rows`).
        let f = |[x0, x1]: [In<'_>; 2], y: Out<'_>| kernel(p, x0, x1, y);
        split_rows(a.parallel, [a.x(0)?, a.x(1)?], out(a.y)?, &f);
        Ok(())
    }
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use alloc::vec::Vec;

    use super::*;
    use crate::ops::numel;
    use crate::schema::Activation;
    use crate::workspace::Parallel;

    /// Workers that run the tasks one after the other, last first (any order must give the same result).
    struct Backwards(usize);

    impl Parallel for Backwards {
        fn workers(&self) -> usize {
            self.0
        }
        fn run(&self, job: &(dyn Fn(usize) + Sync)) {
            (0..self.0).rev().for_each(job)
        }
        fn run_tasks(&self, workers: usize, tasks: usize, job: &(dyn Fn(usize, usize) + Sync)) {
            (0..tasks).rev().for_each(|t| job(t, t % workers))
        }
        fn run_parts(
            &self,
            _: usize,
            data: &mut [f32],
            part_len: usize,
            job: &(dyn Fn(usize, &mut [f32]) + Sync),
        ) {
            let parts: Vec<&mut [f32]> = data.chunks_mut(part_len).collect();
            for (i, part) in parts.into_iter().enumerate().rev() {
                job(i, part);
            }
        }
    }

    fn values(n: usize, seed: f32) -> Vec<f32> {
        (0..n).map(|i| (i as f32 * 0.37 + seed).sin()).collect()
    }

    /// Split binary ops ([`split_rows`], as the dispatch splits them over a host's workers) over every broadcast a binary op meets give the unsplit result bit for bit, and
    /// the parts do cover the output (an unwritten element keeps its NaN).
    #[test]
    fn split_rows_gives_the_whole_result_under_broadcasting() {
        let p = BinaryParams {
            op: BinaryOp::Sub,
            act: Activation::None,
        };
        let y_dims = [1, 37, 29, 64];
        let cases: [(&[usize], &[usize]); 6] = [
            (&[1, 37, 29, 64], &[1, 37, 29, 64]),
            (&[1, 37, 29, 64], &[64]),
            (&[1, 37, 1, 64], &[1, 37, 29, 1]),
            (&[37, 1, 1], &[1, 37, 29, 64]),
            (&[1, 1, 29, 64], &[1, 37, 29, 64]),
            (&[1], &[1, 37, 29, 64]),
        ];
        for (a_dims, b_dims) in cases {
            let a = values(numel(a_dims), 0.1);
            let b = values(numel(b_dims), 0.7);
            let (a, b) = (
                In {
                    data: &a,
                    dims: a_dims,
                },
                In {
                    data: &b,
                    dims: b_dims,
                },
            );
            let mut want = alloc::vec![f32::NAN; numel(&y_dims)];
            binary(
                &p,
                a,
                b,
                Out {
                    data: &mut want,
                    dims: &y_dims,
                },
            );
            for workers in [1, 2, 3, 8] {
                let par = Backwards(workers);
                let mut got = alloc::vec![f32::NAN; numel(&y_dims)];
                let y = Out {
                    data: &mut got,
                    dims: &y_dims,
                };
                split_rows(Some(&par), [a, b], y, &|[a, b], y| binary(&p, a, b, y));
                let same = want
                    .iter()
                    .zip(&got)
                    .all(|(w, g)| w.to_bits() == g.to_bits());
                assert!(same, "{a_dims:?} - {b_dims:?} on {workers} workers");
            }
        }
    }
}
