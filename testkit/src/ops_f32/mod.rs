//! Conformance suite for f32 kernel tables.
//!
//! Every kernel of a [`Kernels`] table is compared with a naive definition written independently here
//! (direct index formulas, f64 accumulation) over proptest-generated shapes, parameters and values, and
//! with a few answers computed by hand. The shape checks (`validate`) are tested as well: they accept every
//! generated case, reject wrong shapes and parameters, and guard the kernel: an odd case (zero dims,
//! windows in the padding, ...) that passes `validate` runs without panicking and matches the definition,
//! and one that fails it is one the definition calls invalid too.
//!
//! The checks are functions taking a `&Kernels`; [`f32_suite!`](crate::f32_suite) instantiates all of
//! them as `#[test]`s for one table, in each target's `tests/suite.rs`. The `validate` checks that take no
//! table run once, in `ember-core`'s (see [`validate_suite!`](crate::validate_suite)).

pub mod array;
pub mod conv;
pub mod conv_transpose;
pub mod indexing;
pub mod math;
pub mod nn;
pub mod pool;
pub mod reduce;

use ember_core::ops::math::activation::Activation;
use proptest::prelude::*;

pub use crate::shape::{dim, flat, numel, unflat};

/// One expected output: its exact value, and the sum of the magnitudes of the terms it is made of. An f32
/// kernel's rounding error grows with the latter, not with the (possibly cancelled) value.
#[derive(Clone, Copy, Debug)]
pub struct Want {
    /// The exact value (computed in f64).
    pub value: f64,
    /// Sum of `|term|` over the terms that were added to get `value`.
    pub magnitude: f64,
}

impl Want {
    /// A value computed without cancellation (one term).
    pub fn exact(value: f64) -> Self {
        Want {
            value,
            magnitude: value.abs(),
        }
    }
}

/// Relative and absolute tolerance of every comparison.
const TOLERANCE: f64 = 1e-4;

/// Checks `got[i]` against `want[i]` within `TOLERANCE * max(1, |value|, magnitude)`. Infinite and NaN
/// expectations (e.g. `x / 0`) must be matched exactly (after rounding to f32).
pub fn assert_close(got: &[f32], want: &[Want]) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len(), "output length");
    for (i, (&g, w)) in got.iter().zip(want).enumerate() {
        let w32 = w.value as f32;
        if !w32.is_finite() || !g.is_finite() {
            prop_assert!(
                g == w32 || (g.is_nan() && w32.is_nan()),
                "output {}: got {}, want {}",
                i,
                g,
                w.value
            );
            continue;
        }
        let tol = TOLERANCE * w.value.abs().max(w.magnitude).max(1.0);
        prop_assert!(
            (f64::from(g) - w.value).abs() <= tol,
            "output {}: got {}, want {} (tolerance {})",
            i,
            g,
            w.value,
            tol
        );
    }
    Ok(())
}

/// `assert_close` for hand-computed answers, panicking on mismatch.
#[track_caller]
pub fn assert_known(got: &[f32], want: &[f32]) {
    let want: Vec<Want> = want.iter().map(|&v| Want::exact(f64::from(v))).collect();
    if let Err(e) = assert_close(got, &want) {
        panic!("{e}\n got: {got:?}");
    }
}

/// `n` values in `-10..10`.
pub fn values(n: usize) -> impl Strategy<Value = Vec<f32>> {
    proptest::collection::vec(-10.0f32..10.0, n)
}

/// A small size or parameter for the odd-case generators: usually `1..=max`, now and then 0.
pub fn mostly_positive(max: u16) -> impl Strategy<Value = u16> {
    prop_oneof![16 => 1..=max, 1 => Just(0u16)]
}

/// A padding for the odd-case generators: usually 0 or 1, sometimes as large as a window.
pub fn odd_padding() -> impl Strategy<Value = u16> {
    prop_oneof![4 => 0u16..=1, 1 => 2u16..=3]
}

/// Any fused activation, Clip bounds possibly crossed.
pub fn activation() -> impl Strategy<Value = Activation> {
    prop_oneof![
        Just(Activation::None),
        Just(Activation::Relu),
        Just(Activation::Relu6),
        (-5.0f32..5.0, -5.0f32..5.0).prop_map(|(min, max)| Activation::Clip { min, max }),
    ]
}

/// The definition of a fused activation, written out.
pub fn activation_definition(act: Activation, v: f64) -> f64 {
    let clip = |v: f64, min: f64, max: f64| {
        // ONNX Clip: the lower bound first, then the upper one (so min > max gives max).
        let lower = if v < min { min } else { v };
        if lower > max {
            max
        } else {
            lower
        }
    };
    match act {
        Activation::None => v,
        Activation::Relu => clip(v, 0.0, f64::INFINITY),
        Activation::Relu6 => clip(v, 0.0, 6.0),
        Activation::Clip { min, max } => clip(v, f64::from(min), f64::from(max)),
    }
}

/// Applies an activation to an expected value (activations are 1-Lipschitz: the magnitude carries over).
pub fn activate(act: Activation, w: Want) -> Want {
    Want {
        value: activation_definition(act, w.value),
        magnitude: w.magnitude,
    }
}
