//! Broadcasting binary ops: Add, Sub, Mul, Div, Min, Max and PRelu vectorized, with the fused
//! activation applied in the same pass; Pow vectorized for a square (`x^2`) and per element through
//! `libm` otherwise; Mod and FloorMod run the reference kernel.
//!
//! The shapes are first reduced to the fewest axes that walk the same way ([`Walk`]): axes of 1
//! dropped, neighbours merged where both operands are full along both or broadcast along the same one.
//! The output is then a sequence of rows along the last of those axes, and each operand is either a
//! contiguous run along a row or one value repeated: equal shapes and a scalar operand are one row, a
//! per-channel vector over NHWC is rows of C with the vector repeated, and a `[.., n, 1]` operand is one
//! value per row. A short row repeated over the whole output (the per-channel case) is first copied a
//! few times into a stack buffer, so that one pass covers many rows.
//!
//! Results are the reference's bits (IEEE arithmetic in the same order, no FMA; Min and Max propagate
//! NaN as the reference does), Pow's square included (`libm::powf(x, 2)` is `x * x`).

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::{self as reference, BinaryOp, BinaryParams};
use ember_core::ops::{In, Out, MAX_RANK};

use crate::ops::Odometer;
use crate::simd::{per_level, zip, Operand, Scalar, Simd};

per_level! {
    fn binary(p: &BinaryParams, a: In<'_>, b: In<'_>, y: Out<'_>) => binary_on;
}

/// Whether [`binary_on`] runs `op` with its own loops (else it calls the reference kernel).
pub(crate) fn is_vectorized(op: &BinaryOp) -> bool {
    !matches!(op, BinaryOp::Mod | BinaryOp::FloorMod)
}

/// `y = act(a op b)` with broadcasting, on level `s`.
#[inline(always)]
fn binary_on<S: Simd>(s: S, p: &BinaryParams, a: In<'_>, b: In<'_>, y: Out<'_>) {
    if !is_vectorized(&p.op) {
        return reference::binary(p, a, b, y);
    }
    // Every activation is a clip: Relu to [0, inf], which keeps NaN and -0 as the reference's Relu does.
    match p.act {
        Activation::None => with_op::<S, false>(s, p.op, a, b, y, 0.0, 0.0),
        Activation::Relu => with_op::<S, true>(s, p.op, a, b, y, 0.0, f32::INFINITY),
        Activation::Relu6 => with_op::<S, true>(s, p.op, a, b, y, 0.0, 6.0),
        Activation::Clip { min, max } => with_op::<S, true>(s, p.op, a, b, y, min, max),
    }
}

/// The op's element function with the activation (clip to `[lo, hi]` when `CLIP`) folded in.
#[inline(always)]
fn with_op<S: Simd, const CLIP: bool>(
    s: S,
    op: BinaryOp,
    a: In<'_>,
    b: In<'_>,
    y: Out<'_>,
    lo: f32,
    hi: f32,
) {
    let (lo_v, hi_v) = (s.splat(lo), s.splat(hi));
    // The reference's `clip`: the lower bound first (so `lo > hi` gives `hi`); NaN passes.
    let act = move |v| {
        if CLIP {
            s.min(hi_v, s.max(lo_v, v))
        } else {
            v
        }
    };
    let zero = s.splat(0.0);
    match op {
        BinaryOp::Add => walk(s, a, b, y, move |u, v| act(s.add(u, v))),
        BinaryOp::Sub => walk(s, a, b, y, move |u, v| act(s.sub(u, v))),
        BinaryOp::Mul => walk(s, a, b, y, move |u, v| act(s.mul(u, v))),
        BinaryOp::Div => walk(s, a, b, y, move |u, v| act(s.div(u, v))),
        // `u < v || u is NaN ? u : v`, and the mirror image: NaN from either side.
        BinaryOp::Min => walk(s, a, b, y, move |u, v| {
            act(s.select(s.or(s.lt(u, v), s.is_nan(u)), u, v))
        }),
        BinaryOp::Max => walk(s, a, b, y, move |u, v| {
            act(s.select(s.or(s.lt(v, u), s.is_nan(u)), u, v))
        }),
        BinaryOp::PRelu => walk(s, a, b, y, move |u, v| {
            act(s.select(s.lt(u, zero), s.mul(v, u), u))
        }),
        BinaryOp::Pow if is_two(b) => walk(s, a, b, y, move |u, _| act(s.mul(u, u))),
        BinaryOp::Pow => walk(Scalar, a, b, y, move |u, v| {
            let v = libm::powf(u, v);
            if CLIP {
                Scalar.min(hi, Scalar.max(lo, v))
            } else {
                v
            }
        }),
        // Not vectorized: `binary_on` sent them to the reference kernel.
        BinaryOp::Mod | BinaryOp::FloorMod => {}
    }
}

/// Whether `b` is the single value 2.0, for which `libm::powf(u, b)` returns `u * u`.
fn is_two(b: In<'_>) -> bool {
    matches!(b.data, [v] if v.to_bits() == 2.0f32.to_bits())
}

/// How a broadcasting op walks its operands (see the module documentation): `dims` (the merged axes,
/// outermost first) and each operand's strides along them, 0 where it is broadcast.
struct Walk {
    rank: usize,
    dims: [usize; MAX_RANK],
    a: [usize; MAX_RANK],
    b: [usize; MAX_RANK],
}

impl Walk {
    /// The walk of `a` and `b` broadcast to `y` (shapes as `validate` checked them, `y` non-empty).
    fn new(a: &[usize], b: &[usize], y: &[usize]) -> Walk {
        // Per merged axis: its length, and whether each operand runs along it (else it repeats).
        let mut dims = [1usize; MAX_RANK];
        let mut full = [(true, true); MAX_RANK];
        let mut rank = 0;
        let (a_pad, b_pad) = (y.len() - a.len(), y.len() - b.len());
        for (d, &len) in y.iter().enumerate() {
            if len == 1 {
                continue;
            }
            let along_a = d >= a_pad && a[d - a_pad] != 1;
            let along_b = d >= b_pad && b[d - b_pad] != 1;
            if rank > 0 && full[rank - 1] == (along_a, along_b) {
                dims[rank - 1] *= len;
            } else {
                dims[rank] = len;
                full[rank] = (along_a, along_b);
                rank += 1;
            }
        }
        // A single element: one row of one, both operands "running" along it.
        rank = rank.max(1);
        let mut walk = Walk {
            rank,
            dims,
            a: [0; MAX_RANK],
            b: [0; MAX_RANK],
        };
        let (mut step_a, mut step_b) = (1, 1);
        for d in (0..rank).rev() {
            let (along_a, along_b) = full[d];
            if along_a {
                walk.a[d] = step_a;
                step_a *= dims[d];
            }
            if along_b {
                walk.b[d] = step_b;
                step_b *= dims[d];
            }
        }
        walk
    }
}

/// Elements of the stack buffer that holds a repeated row (see [`walk`]).
const REPEATS: usize = 512;

/// `y = f(a, b)` with broadcasting, row by row (see [`Walk`]).
///
/// When one operand is a single short row that every output row repeats (a per-channel vector over
/// NHWC) and the other runs along the whole output, the row is first repeated into a stack buffer so
/// that each pass of the loop covers many rows instead of one.
#[inline(always)]
fn walk<S: Simd>(s: S, a: In<'_>, b: In<'_>, y: Out<'_>, f: impl Fn(S::V, S::V) -> S::V) {
    if y.data.is_empty() {
        return;
    }
    let w = Walk::new(a.dims, b.dims, y.dims);
    let last = w.rank - 1;
    let row = w.dims[last];
    // An operand runs along the whole output, or is one row (running along the rows) repeated.
    let whole = |x: &In<'_>| x.data.len() == y.data.len();
    let repeated =
        |x: &In<'_>, along: usize| along != 0 && x.data.len() == row && row <= REPEATS / 2;
    if w.rank > 1 && whole(&a) && repeated(&b, w.b[last]) {
        return repeated_row(s, a.data, b.data, y.data, f);
    }
    if w.rank > 1 && whole(&b) && repeated(&a, w.a[last]) {
        return repeated_row(s, b.data, a.data, y.data, |v, u| f(u, v));
    }
    let mut rows = y.data.chunks_exact_mut(row);
    for [at, bt] in Odometer::new(&w.dims[..last], [w.a, w.b]) {
        let Some(out) = rows.next() else { return };
        // Along the rows at least one operand runs: merged axes of length > 1 have one, and a
        // single element has both.
        let a_row = if w.a[last] != 0 {
            Operand::Run(&a.data[at..][..row])
        } else {
            Operand::Repeat(a.data[at])
        };
        let b_row = if w.b[last] != 0 {
            Operand::Run(&b.data[bt..][..row])
        } else {
            Operand::Repeat(b.data[bt])
        };
        zip(s, a_row, b_row, out, &f);
    }
}

/// `y = f(x, row)` with `row` repeated along `x` and `y` (`row` at most REPEATS / 2 long), many rows
/// per pass: the row repeated into a stack buffer as many times as fit.
#[inline(always)]
fn repeated_row<S: Simd>(
    s: S,
    x: &[f32],
    row: &[f32],
    y: &mut [f32],
    f: impl Fn(S::V, S::V) -> S::V,
) {
    let mut buf = [0.0f32; REPEATS];
    let n = REPEATS / row.len() * row.len();
    for chunk in buf[..n].chunks_exact_mut(row.len()) {
        chunk.copy_from_slice(row);
    }
    let rows = &buf[..n];
    for (out, xs) in y.chunks_mut(n).zip(x.chunks(n)) {
        zip(s, Operand::Run(xs), Operand::Run(rows), out, &f);
    }
}
