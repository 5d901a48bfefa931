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

/// The changes to the parameters of a convolution of type `$ty` that its `validate` must reject on a
/// case with no padding, one group and weights of more than one input channel: a zero stride, dilation
/// or group count, two groups, a padding: as `[fn(&mut $ty); 7]`.
macro_rules! conv_geometry_mistakes {
    ($ty:ty) => {{
        let mistakes: [fn(&mut $ty); 7] = [
            |p| p.stride_h = 0,
            |p| p.stride_w = 0,
            |p| p.dilation_h = 0,
            |p| p.dilation_w = 0,
            |p| p.groups = 0,
            |p| p.groups = 2, // w's last dim would have to be 1
            |p| p.pad_top = 1,
        ];
        mistakes
    }};
}

pub mod array;
pub mod conv;
pub mod conv_transpose;
pub mod indexing;
pub mod math;
pub mod nn;
pub mod pool;
pub mod reduce;

use core::fmt::Debug;

use ember_core::kernels::with_scratch;
use ember_core::ops::math::activation::Activation;
use ember_core::ops::{In, Out};
use ember_core::{Error, Kernels, OpKind, Workspace};
use proptest::prelude::*;

use crate::layer::{maybe_bias, Layer};

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

    /// Adds one term.
    pub fn add(&mut self, term: f64) {
        self.value += term;
        self.magnitude += term.abs();
    }
}

/// The starting point of a layer's outputs of dims `y_dims` (channels innermost): each output its
/// channel's bias, or 0 without one.
pub fn bias_per_channel(b: Option<&[f32]>, y_dims: &[usize]) -> Vec<Want> {
    let channels = y_dims.last().copied().unwrap_or(1);
    (0..numel(y_dims))
        .map(|i| Want::exact(b.map_or(0.0, |b| f64::from(b[i % channels]))))
        .collect()
}

impl<P, D: AsRef<[usize]>, WD: AsRef<[usize]>> Layer<P, f32, f32, (), D, WD> {
    /// Runs a table's f32 layer `kernel` on the case, with the scratch the table asks for `op`, into
    /// an output of NaNs (so that elements it skips show).
    pub fn run_with_scratch(&self, k: &Kernels, op: OpKind, kernel: LayerFn<P>) -> Vec<f32> {
        let ins = [self.x_dims.as_ref(), self.w_dims.as_ref()];
        with_scratch(k, &op, &ins, self.y_dims.as_ref(), |ws| {
            self.run(f32::NAN, |x, w, b, y| kernel(&self.p, x, w, b, y, ws))
        })
    }
}

/// An f32 layer kernel of a table: parameters, input, weights, bias, output and scratch.
pub type LayerFn<P> = fn(&P, In<'_>, In<'_>, Option<&[f32]>, Out<'_>, Option<&mut Workspace<'_>>);

/// Input, weight, optional bias and output dims of a layer's `validate` call.
pub type Shapes<'a> = (&'a [usize], &'a [usize], Option<&'a [usize]>, &'a [usize]);

/// Asserts that a layer's `validate` (of the dims of x, w, b and y) rejects each of `shapes` with a
/// shape error.
#[track_caller]
pub fn assert_rejects_shapes(
    shapes: &[Shapes<'_>],
    validate: impl Fn(&[usize], &[usize], Option<&[usize]>, &[usize]) -> Result<(), Error>,
) {
    for &(x, w, b, y) in shapes {
        assert!(
            matches!(validate(x, w, b, y), Err(Error::Shape { .. })),
            "{x:?} {w:?} {b:?} {y:?}"
        );
    }
}

/// Asserts that a convolution's `validate` (of the dims of x, w, b and y) rejects, with a shape error,
/// each mistake that any layer can make in the dims of a case it accepts (`x`, `w`, `y` and a bias of
/// `w[0]`): an input, weights or output one rank short, weights of one more input channel, a bias of
/// the wrong length or rank, an output of another batch, one channel fewer or one row more; and an
/// input so large that its output's size overflows.
#[track_caller]
pub fn assert_rejects_layer_mistakes(
    (x, w, y): ([usize; 4], [usize; 4], [usize; 4]),
    validate: impl Fn(&[usize], &[usize], Option<&[usize]>, &[usize]) -> Result<(), Error>,
) {
    let changed = |mut dims: [usize; 4], axis: usize, by: isize| {
        dims[axis] = dims[axis].wrapping_add_signed(by);
        dims
    };
    let (w_ic, y_batch) = (changed(w, 3, 1), changed(y, 0, 1));
    let (y_oc, y_oh) = (changed(y, 3, -1), changed(y, 1, 1));
    let mistakes: [Shapes; 9] = [
        (&x[1..], &w, None, &y),
        (&x, &w[..3], None, &y),
        (&x, &w, None, &y[1..]),
        (&x, &w_ic, None, &y),
        (&x, &w, Some(&[w[0] - 1]), &y),
        (&x, &w, Some(&[w[0], 1]), &y),
        (&x, &w, None, &y_batch),
        (&x, &w, None, &y_oc),
        (&x, &w, None, &y_oh),
    ];
    assert_rejects_shapes(&mistakes, &validate);
    let huge = usize::MAX / 2;
    let verdict = validate(
        &[1, huge, huge, 1],
        &[1, 1, 1, 1],
        None,
        &[1, huge, huge, 1],
    );
    assert!(verdict.is_err(), "a huge input is accepted");
}

/// Asserts that `validate` rejects, with a shape error, the parameters `ok` as each of `changes`
/// leaves them.
#[track_caller]
pub fn assert_rejects_changes<P: Copy + Debug>(
    ok: P,
    changes: &[fn(&mut P)],
    validate: impl Fn(&P) -> Result<(), Error>,
) {
    for change in changes {
        let mut p = ok;
        change(&mut p);
        assert!(matches!(validate(&p), Err(Error::Shape { .. })), "{p:?}");
    }
}

/// A layer case of these dims, with values drawn for its input, its weights and, when `bias` is set,
/// one bias per output channel (`w_dims[0]`).
pub fn layer_with_values<P, D, WD>(
    p: P,
    x_dims: D,
    w_dims: WD,
    y_dims: D,
    bias: bool,
) -> impl Strategy<Value = Layer<P, f32, f32, (), D, WD>>
where
    P: Clone + Debug,
    D: AsRef<[usize]> + Clone + Debug,
    WD: AsRef<[usize]> + Clone + Debug,
{
    let (x_len, w_len) = (numel(x_dims.as_ref()), numel(w_dims.as_ref()));
    let b = maybe_bias(bias, values(w_dims.as_ref()[0]));
    (values(x_len), values(w_len), b).prop_map(move |(x, w, b)| Layer {
        p: p.clone(),
        x_dims: x_dims.clone(),
        w_dims: w_dims.clone(),
        y_dims: y_dims.clone(),
        x,
        w,
        b,
        q: (),
    })
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
