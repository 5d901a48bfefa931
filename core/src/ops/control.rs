//! Control flow: ONNX `Loop`, `Scan` and `If`, laid out in the op list by the converter.
//!
//! A loop's body is the ops between its `Loop` and `EndLoop` ops, planned once like any other ops;
//! the session runs that range once per iteration ([`Flow`]). Values carried from one iteration to
//! the next are `Select` ops at the head (the counter is 0: the initial value, else the body's last
//! one), a `Scan`'s inputs are read a slice per iteration (`ScanRead`) and its stacked outputs
//! written a slice per iteration into their final tensor (`ScanWrite`). An `If` runs one branch: a
//! `Branch` op skips the other, and `Select` ops on the condition pick the outputs. Nothing moves,
//! nothing is allocated; the converter extended the lifetime of every buffer that crosses an
//! iteration, so the arena holds the body's plan beside the values live around the loop.
//!
//! The kernel here moves the bytes (any dtype); the session moves the op counter.

pub use crate::schema::control::{ControlOp, LoopBound, Trip};

use core::ops::Range;

use crate::ops::element::{AnyIn, AnyOut};
use crate::ops::entry::{shape_reason, DTypes, KernelEntry, OpArgs, OpEntry, Operands};
use crate::ops::shape::{check_dims, ensure, Checked};
use crate::schema::{DType, MAX_OP_INPUTS};
use crate::Error;

/// The deepest nesting of loops a run follows.
pub const MAX_DEPTH: usize = 8;

/// A scalar that drives control flow: a trip count or counter (I64), or a condition (Bool).
fn is_scalar(dims: &[usize], dtype: DType, want: DType) -> bool {
    dtype == want && dims.iter().all(|&d| d == 1)
}

/// The number of `Loop`/`EndLoop` inputs its bound declares.
fn bound_inputs(b: &LoopBound) -> usize {
    usize::from(b.trip == Trip::Input) + usize::from(b.cond)
}

/// Checks one control op's tensors.
pub fn validate(p: &ControlOp, o: &impl Operands) -> Result<(), Error> {
    let n = o.count().min(MAX_OP_INPUTS);
    for k in 0..n {
        check_dims(o.dims(k))?;
    }
    check_dims(o.out_dims())?;
    let (y, ty) = (o.out_dims(), o.out_dtype());
    match p {
        ControlOp::Loop { bound, .. } | ControlOp::EndLoop { bound, .. } => {
            ensure(
                n == bound_inputs(bound),
                "loop: the inputs are not the trip count and condition its bound declares",
            )?;
            if bound.trip == Trip::Input {
                ensure(
                    is_scalar(o.dims(0), o.dtype(0), DType::I64),
                    "loop: the trip count is not an int64 scalar",
                )?;
            }
            if bound.cond {
                let k = usize::from(bound.trip == Trip::Input);
                ensure(
                    is_scalar(o.dims(k), o.dtype(k), DType::Bool),
                    "loop: the condition is not a bool scalar",
                )?;
            }
            ensure(
                is_scalar(y, ty, DType::I64),
                "loop: the counter is not an int64 scalar",
            )
        }
        ControlOp::Select => {
            ensure(n == 3, "select takes a scalar and two values")?;
            ensure(
                is_scalar(o.dims(0), o.dtype(0), DType::I64)
                    || is_scalar(o.dims(0), o.dtype(0), DType::Bool),
                "select: the selector is not an int64 or bool scalar",
            )?;
            ensure(
                (1..3).all(|k| o.dims(k) == y && o.dtype(k) == ty),
                "select: the two values and the output differ in shape or dtype",
            )
        }
        ControlOp::ScanRead { axis, .. } | ControlOp::ScanWrite { axis, .. } => {
            ensure(n == 2, "scan slice takes the counter and a tensor")?;
            ensure(
                is_scalar(o.dims(0), o.dtype(0), DType::I64),
                "scan slice: the counter is not an int64 scalar",
            )?;
            let (whole, part) = match p {
                ControlOp::ScanRead { .. } => (o.dims(1), y),
                _ => (y, o.dims(1)),
            };
            let a = usize::from(*axis);
            ensure(
                o.dtype(1) == ty && a < whole.len() && whole.len() == part.len() + 1,
                "scan slice: the slice is not the tensor without its scanned axis",
            )?;
            ensure(
                whole[..a] == part[..a] && whole[a + 1..] == part[a..],
                "scan slice: the slice is not the tensor without its scanned axis",
            )
        }
        ControlOp::Branch { .. } => {
            ensure(n == 1, "branch takes one condition")?;
            ensure(
                is_scalar(o.dims(0), o.dtype(0), DType::Bool) && is_scalar(y, ty, DType::Bool),
                "branch: the condition or its copy is not a bool scalar",
            )
        }
    }
}

/// The value of a scalar input (I64 or Bool), or 0 for bytes that are not one.
fn scalar(x: &AnyIn<'_>) -> i64 {
    match x.dtype {
        DType::I64 => x
            .bytes
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map_or(0, i64::from_le_bytes),
        _ => x.bytes.first().map_or(0, |&b| i64::from(b)),
    }
}

/// The rows of a scan's slice: for the slice the counter selects along `axis` of a tensor of `dims`
/// (elements of `size` bytes), each row's byte range in the whole tensor and in the slice.
fn slice_rows(
    dims: &[usize],
    axis: u8,
    reverse: bool,
    counter: i64,
    size: usize,
) -> Result<impl Iterator<Item = (Range<usize>, Range<usize>)>, Error> {
    let axis = usize::from(axis);
    let outer: usize = dims[..axis].iter().product();
    let row = dims[axis + 1..].iter().product::<usize>() * size;
    let len = dims[axis];
    let at = slot(counter, len, reverse)?;
    Ok((0..outer).map(move |o| {
        let w = (o * len + at) * row;
        (w..w + row, o * row..(o + 1) * row)
    }))
}

/// The slice a counter selects along an axis of length `len`.
fn slot(counter: i64, len: usize, reverse: bool) -> Result<usize, Error> {
    let i = usize::try_from(counter)
        .ok()
        .filter(|&i| i < len)
        .ok_or(Error::Shape {
            reason: "scan slice: the counter is past the scanned axis",
        })?;
    Ok(if reverse { len - 1 - i } else { i })
}

/// Moves the bytes of the data-moving control ops; `Loop` and `EndLoop` write their counter in the
/// session ([`Flow`]).
pub fn control(p: &ControlOp, x: &[AnyIn<'_>], y: AnyOut<'_>) -> Result<(), Error> {
    let size = y.dtype.size();
    match *p {
        ControlOp::Loop { .. } | ControlOp::EndLoop { .. } => {}
        ControlOp::Select => {
            let [s, a, b] = x else { return Ok(()) };
            let chosen = if scalar(s) != 0 { a } else { b };
            if let Some(src) = chosen.bytes.get(..y.bytes.len()) {
                y.bytes.copy_from_slice(src);
            }
        }
        ControlOp::ScanRead { axis, reverse } => {
            let [c, whole] = x else { return Ok(()) };
            for (w, s) in slice_rows(whole.dims, axis, reverse, scalar(c), size)? {
                if let (Some(d), Some(from)) = (y.bytes.get_mut(s), whole.bytes.get(w)) {
                    d.copy_from_slice(from);
                }
            }
        }
        ControlOp::ScanWrite { axis, reverse } => {
            let [c, part] = x else { return Ok(()) };
            for (w, s) in slice_rows(y.dims, axis, reverse, scalar(c), size)? {
                if let (Some(d), Some(from)) = (y.bytes.get_mut(w), part.bytes.get(s)) {
                    d.copy_from_slice(from);
                }
            }
        }
        ControlOp::Branch { .. } => {
            if let (Some(d), Some(&s)) =
                (y.bytes.first_mut(), x.first().and_then(|c| c.bytes.first()))
            {
                *d = s;
            }
        }
    }
    Ok(())
}

/// Signature of the control ops' kernel.
pub type ControlFn = fn(&ControlOp, &[AnyIn<'_>], AnyOut<'_>) -> Result<(), Error>;

/// The [`Kernels::control`](crate::Kernels::control) entry, which runs
/// [`OpKind::Control`](crate::OpKind::Control).
pub struct Control;

impl KernelEntry for Control {
    type Kernel = ControlFn;
    const REFERENCE: ControlFn = control;
    const STUB: ControlFn = |_, _, _| Err(crate::ops::entry::LEFT_OUT);
}

impl OpEntry for Control {
    type Params = ControlOp;
    const DTYPES: DTypes = DTypes::Own;

    fn validate(p: &ControlOp, o: &impl Operands) -> Checked {
        shape_reason(validate(p, o))
    }

    #[inline(always)]
    fn run(kernel: ControlFn, p: &ControlOp, a: OpArgs<'_, '_>) -> Result<(), Error> {
        kernel(p, a.ins.get(..a.n).unwrap_or(&[]), a.y)
    }
}

/// Where a run stands in its loops: the iteration of each loop it is inside, innermost last. The
/// session's own count, not the counter tensor in the arena, bounds every loop. A target that runs
/// the ops itself (the GPU's) keeps one per run and asks it after each control op.
#[derive(Debug, Default)]
pub struct Flow {
    counts: [u32; MAX_DEPTH],
    depth: usize,
}

impl Flow {
    /// After control op `i` ran (its inputs `x`, its output's bytes `y`): writes a loop's counter and
    /// returns the op that runs next.
    pub fn next(
        &mut self,
        p: &ControlOp,
        i: usize,
        x: &[AnyIn<'_>],
        y: &mut [u8],
    ) -> Result<usize, Error> {
        let bound_error = |bound: u32, reason| Error::LoopBound {
            op: i as u32,
            bound,
            reason,
        };
        // The trip count and condition of a loop's inputs.
        let inputs = |b: &LoopBound| -> (u32, bool) {
            let trip = match (b.trip, x.first()) {
                (Trip::Input, Some(t)) => u32::try_from(scalar(t).max(0)).unwrap_or(u32::MAX),
                _ => b.max_trip,
            };
            let cond = match (b.cond, x.get(usize::from(b.trip == Trip::Input))) {
                (true, Some(c)) => scalar(c) != 0,
                _ => true,
            };
            (trip, cond)
        };
        let write = |y: &mut [u8], count: u32| {
            if let Some(dst) = y.get_mut(..8) {
                dst.copy_from_slice(&i64::from(count).to_le_bytes());
            }
        };
        match *p {
            ControlOp::Loop { end, bound } => {
                let (trip, cond) = inputs(&bound);
                if trip > bound.max_trip {
                    return Err(bound_error(
                        bound.max_trip,
                        "a loop's trip count is above the bound it was converted for: convert it with a larger \
                         --max-trip",
                    ));
                }
                write(y, 0);
                if trip == 0 || !cond {
                    return Ok(end as usize + 1);
                }
                let slot = self.counts.get_mut(self.depth).ok_or(Error::Unsupported {
                    reason: "loops nested deeper than 8",
                })?;
                *slot = 0;
                self.depth += 1;
                Ok(i + 1)
            }
            ControlOp::EndLoop {
                start,
                bound,
                exact,
            } => {
                let count = self
                    .depth
                    .checked_sub(1)
                    .and_then(|d| self.counts.get_mut(d))
                    .ok_or(Error::BadOp {
                        op: i as u32,
                        reason: "loop end reached outside its loop",
                    })?;
                *count += 1;
                let done = *count;
                write(y, done);
                let (trip, cond) = inputs(&bound);
                if done < trip && cond {
                    return Ok(start as usize + 1);
                }
                self.depth -= 1;
                if cond && bound.trip == Trip::Unbounded && done >= bound.max_trip {
                    return Err(bound_error(
                        bound.max_trip,
                        "a loop's condition still holds after the most iterations it was \
                         converted for: convert it with a larger --max-trip",
                    ));
                }
                if exact && done < bound.max_trip {
                    return Err(bound_error(
                        bound.max_trip,
                        "a loop ended before the iterations its stacked outputs were planned \
                         for (--max-trip): their shapes are static",
                    ));
                }
                Ok(i + 1)
            }
            ControlOp::Branch { to, when } => {
                let flag = y.first().is_some_and(|&b| b != 0);
                Ok(if flag == when { to as usize } else { i + 1 })
            }
            ControlOp::Select | ControlOp::ScanRead { .. } | ControlOp::ScanWrite { .. } => {
                Ok(i + 1)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i64_in<'a>(v: &'a [u8; 8]) -> AnyIn<'a> {
        AnyIn {
            dtype: DType::I64,
            bytes: v,
            dims: &[],
        }
    }

    #[test]
    fn scan_read_and_write_move_the_counters_slice() {
        // x [2, 3, 2] (f32 as bytes), the axis-1 slice at 1 and, reversed, at 1 from the end (= 1).
        let x: [f32; 12] = core::array::from_fn(|k| k as f32);
        let xb: &[u8] = bytemuck::cast_slice(&x);
        let one = 1i64.to_le_bytes();
        let zero = 0i64.to_le_bytes();
        let whole = AnyIn {
            dtype: DType::F32,
            bytes: xb,
            dims: &[2, 3, 2],
        };
        for (counter, reverse, want) in [
            (&one, false, [2.0, 3.0, 8.0, 9.0]),
            (&zero, true, [4.0, 5.0, 10.0, 11.0]),
        ] {
            let mut y = [0f32; 4];
            let p = ControlOp::ScanRead { axis: 1, reverse };
            control(
                &p,
                &[i64_in(counter), whole],
                AnyOut {
                    dtype: DType::F32,
                    bytes: bytemuck::cast_slice_mut(&mut y),
                    dims: &[2, 2],
                },
            )
            .unwrap();
            assert_eq!(y, want);
            // Written back into a stacked tensor at the same slot, the slice lands where it was read.
            let mut stacked = [-1f32; 12];
            let p = ControlOp::ScanWrite { axis: 1, reverse };
            let part = AnyIn {
                dtype: DType::F32,
                bytes: bytemuck::cast_slice(&y),
                dims: &[2, 2],
            };
            control(
                &p,
                &[i64_in(counter), part],
                AnyOut {
                    dtype: DType::F32,
                    bytes: bytemuck::cast_slice_mut(&mut stacked),
                    dims: &[2, 3, 2],
                },
            )
            .unwrap();
            for (k, (&s, &v)) in stacked.iter().zip(&x).enumerate() {
                let in_slot = want.contains(&v);
                assert_eq!(s, if in_slot { v } else { -1.0 }, "element {k}");
            }
        }
        // A counter past the axis is an error, not a write out of place.
        let mut y = [0f32; 4];
        let three = 3i64.to_le_bytes();
        let r = control(
            &ControlOp::ScanRead {
                axis: 1,
                reverse: false,
            },
            &[i64_in(&three), whole],
            AnyOut {
                dtype: DType::F32,
                bytes: bytemuck::cast_slice_mut(&mut y),
                dims: &[2, 2],
            },
        );
        assert!(r.is_err());
    }

    #[test]
    fn a_loop_runs_its_trip_count_and_no_more_than_its_bound() {
        let bound = LoopBound {
            max_trip: 3,
            trip: Trip::Input,
            cond: false,
        };
        let head = ControlOp::Loop { end: 5, bound };
        let tail = ControlOp::EndLoop {
            start: 1,
            bound,
            exact: false,
        };
        let mut y = [0u8; 8];
        for (trip, iterations) in [(2i64, 2u32), (0, 0), (3, 3)] {
            let t = trip.to_le_bytes();
            let mut flow = Flow::default();
            let mut ran = 0;
            let mut pc = flow.next(&head, 1, &[i64_in(&t)], &mut y).unwrap();
            while pc == 2 {
                ran += 1;
                assert_eq!(
                    i64::from_le_bytes(y),
                    i64::from(ran - 1),
                    "the counter in the body"
                );
                pc = flow.next(&tail, 5, &[i64_in(&t)], &mut y).unwrap();
            }
            assert_eq!((ran, pc), (iterations, 6));
        }
        let four = 4i64.to_le_bytes();
        let mut flow = Flow::default();
        assert!(matches!(
            flow.next(&head, 1, &[i64_in(&four)], &mut y),
            Err(Error::LoopBound { bound: 3, .. })
        ));
        // With only a condition, a loop whose condition still holds at its bound is an error.
        let open = LoopBound {
            max_trip: 2,
            trip: Trip::Unbounded,
            cond: true,
        };
        let yes = [1u8];
        let cond = AnyIn {
            dtype: DType::Bool,
            bytes: &yes,
            dims: &[],
        };
        let mut flow = Flow::default();
        let head = ControlOp::Loop {
            end: 3,
            bound: open,
        };
        let tail = ControlOp::EndLoop {
            start: 0,
            bound: open,
            exact: false,
        };
        assert_eq!(flow.next(&head, 0, &[cond], &mut y), Ok(1));
        assert_eq!(flow.next(&tail, 3, &[cond], &mut y), Ok(1));
        assert!(matches!(
            flow.next(&tail, 3, &[cond], &mut y),
            Err(Error::LoopBound { bound: 2, .. })
        ));
    }
}
