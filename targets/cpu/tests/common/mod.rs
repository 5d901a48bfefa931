//! Helpers shared by the tests that compare this crate's kernels with `ember-core`'s reference
//! kernels: the levels to run, value generators with special values, the comparisons, and the
//! signatures of the int8 layer kernels.
#![allow(dead_code)]

use ember_core::ops::{In, Out};
use ember_core::{Kernels, Workspace};
use ember_cpu::{table, Isa};
use proptest::prelude::*;

/// An int8 layer kernel of the reference (`p, x, w, bias, requant, y`).
pub type Reference<P> = fn(&P, In<'_, i8>, In<'_, i8>, Option<&[i32]>, &[i32], Out<'_, i8>);

/// The same kernel as a table's entry, with a workspace.
pub type Entry<P> =
    fn(&P, In<'_, i8>, In<'_, i8>, Option<&[i32]>, &[i32], Out<'_, i8>, Option<&mut Workspace<'_>>);

/// Every level this CPU runs, with its table.
pub fn levels() -> impl Iterator<Item = (Isa, &'static Kernels)> {
    Isa::supported().map(|isa| (isa, table(isa)))
}

/// A value: mostly in `-range..range`, sometimes a special one (NaN, infinities, signed zeros, the
/// smallest normal and subnormal, the largest).
pub fn value(range: f32) -> impl Strategy<Value = f32> {
    prop_oneof![
        20 => -range..range,
        1 => proptest::sample::select(vec![
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            0.0,
            -0.0,
            f32::MIN_POSITIVE,
            -f32::MIN_POSITIVE,
            1e-40,
            f32::MAX,
            f32::MIN,
        ]),
    ]
}

/// `n` values from [`value`] but for the largest ones: sums of these never overflow, so adding them
/// in another order cannot turn an infinity into NaN or a finite value.
pub fn summable(n: usize, range: f32) -> impl Strategy<Value = Vec<f32>> {
    proptest::collection::vec(value(range), n).prop_map(|mut v| {
        for x in &mut v {
            if x.is_finite() && x.abs() > 1e30 {
                *x = x.signum() * 1e30;
            }
        }
        v
    })
}

/// `n` values in `-range..range`, no special ones.
pub fn plain(n: usize, range: f32) -> impl Strategy<Value = Vec<f32>> {
    proptest::collection::vec(-range..range, n)
}

/// `n` values from [`value`].
pub fn values(n: usize, range: f32) -> impl Strategy<Value = Vec<f32>> {
    proptest::collection::vec(value(range), n)
}

/// A length: mostly around the vector widths (so that tails of every size occur), sometimes long.
pub fn length() -> impl Strategy<Value = usize> {
    prop_oneof![8 => 0usize..=40, 2 => 41usize..=300, 1 => 1000usize..=1100]
}

/// The same bits, any NaN matching any NaN.
pub fn same_bits(got: f32, want: f32) -> bool {
    (got.is_nan() && want.is_nan()) || got.to_bits() == want.to_bits()
}

/// The same value (`-0 == 0`), any NaN matching any NaN.
pub fn same_value(got: f32, want: f32) -> bool {
    (got.is_nan() && want.is_nan()) || got == want
}

/// Within `tol * max(1, |want|, scale)`, or the same infinity, or both NaN.
pub fn close(got: f32, want: f32, tol: f32, scale: f32) -> bool {
    if !got.is_finite() || !want.is_finite() {
        return same_value(got, want);
    }
    (got - want).abs() <= tol * want.abs().max(scale).max(1.0)
}

/// Checks `got[i]` against `want[i]` with `ok`, naming the first mismatch.
pub fn check(
    what: &str,
    got: &[f32],
    want: &[f32],
    ok: impl Fn(usize, f32, f32) -> bool,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len());
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        prop_assert!(
            ok(i, g, w),
            "{}: element {}: got {:e}, want {:e}",
            what,
            i,
            g,
            w
        );
    }
    Ok(())
}

/// The output of a one-input kernel: `kernel(x, y)` with `x` of dims `x_dims` into a new `y` of dims
/// `y_dims`, which starts as `fill` everywhere.
pub fn run_one_input(
    x: &[f32],
    x_dims: &[usize],
    y_dims: &[usize],
    fill: f32,
    kernel: impl FnOnce(In<'_>, Out<'_>),
) -> Vec<f32> {
    let mut y = vec![fill; y_dims.iter().product()];
    let x = In {
        data: x,
        dims: x_dims,
    };
    kernel(
        x,
        Out {
            data: &mut y,
            dims: y_dims,
        },
    );
    y
}
