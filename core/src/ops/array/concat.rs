//! Concatenation along one axis.

pub use crate::schema::ConcatParams;

use crate::ops::entry::{out, shape_reason, DTypes, KernelEntry, OpArgs, OpEntry, Operands};
use crate::ops::shape::{check_dims, ensure, Checked};
use crate::ops::{In, Out};
use crate::schema::MAX_OP_INPUTS;
use crate::Error;

/// Checks that every input has `y`'s rank and dims except along `axis`, and that the sizes along `axis`
/// add up to `y`'s. At least one input.
pub fn validate(p: &ConcatParams, xs: &[&[usize]], y: &[usize]) -> Result<(), Error> {
    check_dims(y)?;
    ensure(!xs.is_empty(), "concat has no inputs")?;
    let axis = usize::from(p.axis);
    ensure(axis < y.len(), "concat axis is not below the rank")?;
    let mut total = 0usize;
    for x in xs {
        ensure(x.len() == y.len(), "concat input rank differs from output")?;
        let off_axis_equal = x
            .iter()
            .zip(y)
            .enumerate()
            .all(|(i, (dx, dy))| i == axis || dx == dy);
        ensure(
            off_axis_equal,
            "concat input dims differ from output's off the axis",
        )?;
        total = total.checked_add(x[axis]).ok_or(Error::Shape {
            reason: "concat sizes along the axis overflow usize",
        })?;
    }
    ensure(
        total == y[axis],
        "concat input sizes along the axis do not add up to the output's",
    )
}

/// Writes the inputs one after the other along `axis`.
///
/// Seen as `[outer, size_i * inner]`, each input contributes one contiguous run per outer index.
pub fn concat<T: Copy>(p: &ConcatParams, xs: &[In<'_, T>], y: Out<'_, T>) {
    let axis = usize::from(p.axis);
    if y.data.is_empty() {
        return;
    }
    let inner: usize = y.dims[axis + 1..].iter().product();
    let outer: usize = y.dims[..axis].iter().product();
    let mut dst = 0;
    for o in 0..outer {
        for x in xs {
            let run = x.dims[axis] * inner;
            y.data[dst..][..run].copy_from_slice(&x.data[o * run..][..run]);
            dst += run;
        }
    }
}

/// Signature of a concatenation kernel.
pub type ConcatFn = fn(&ConcatParams, &[In<'_>], Out<'_>);

/// The [`Kernels::concat`](crate::Kernels::concat) entry, which runs
/// [`OpKind::Concat`](crate::OpKind::Concat).
pub struct Concat;

impl KernelEntry for Concat {
    type Kernel = ConcatFn;
    const REFERENCE: ConcatFn = concat;
    const STUB: ConcatFn = |_, _, _| {};
}

impl OpEntry for Concat {
    type Params = ConcatParams;
    const DTYPES: DTypes = DTypes::Same;

    fn validate(p: &ConcatParams, o: &impl Operands) -> Checked {
        let mut xs: heapless::Vec<&[usize], MAX_OP_INPUTS> = heapless::Vec::new();
        for k in 0..o.count().min(MAX_OP_INPUTS) {
            let _ = xs.push(o.dims(k));
        }
        shape_reason(validate(p, &xs, o.out_dims()))
    }

    #[inline(always)]
    fn run(kernel: ConcatFn, p: &ConcatParams, a: OpArgs<'_, '_>) -> Result<(), Error> {
        let mut xs: heapless::Vec<In<'_>, MAX_OP_INPUTS> = heapless::Vec::new();
        for k in 0..a.n {
            xs.push(a.x(k)?).map_err(|_| Error::Unsupported {
                reason: "too many inputs",
            })?;
        }
        kernel(p, &xs, out(a.y)?);
        Ok(())
    }
}
