//! Conformance suite for f32 kernel tables.
//!
//! Every kernel of a [`Kernels`] table is compared with a naive definition written independently here
//! (direct index formulas, f64 accumulation) over proptest-generated shapes, parameters and values, and
//! with a few answers computed by hand. The shape checks (`validate`) are tested as well: they accept every
//! generated case, reject wrong shapes and parameters, and guard the kernel: an odd case (zero dims,
//! windows in the padding, ...) that passes `validate` runs without panicking and matches the definition,
//! and one that fails it is one the definition calls invalid too.
//!
//! The checks are functions taking a `&Kernels`; `kernel_suite!(name, &TABLE)` instantiates all of them
//! as `#[test]`s for one table. Other targets (`ember-cpu`, `ember-cortex-m`) can run the same suite on
//! their tables by including this file (and its `ops_f32/` modules) with a `#[path]` module, or, once
//! more than one crate needs it, from a shared test-support crate.

#[path = "ops_f32/array.rs"]
mod array;
#[path = "ops_f32/conv.rs"]
mod conv;
#[path = "ops_f32/conv_transpose.rs"]
mod conv_transpose;
#[path = "ops_f32/indexing.rs"]
mod indexing;
#[path = "ops_f32/math.rs"]
mod math;
#[path = "ops_f32/nn.rs"]
mod nn;
#[path = "ops_f32/pool.rs"]
mod pool;
#[path = "ops_f32/reduce.rs"]
mod reduce;

use ember_core::ops::math::activation::Activation;
use proptest::prelude::*;

/// Instantiates the whole suite for one kernel table: `kernel_suite!(reference, &ember_core::REFERENCE)`
/// makes a module `reference` with one test per check.
macro_rules! kernel_suite {
    ($name:ident, $table:expr) => {
        mod $name {
            use proptest::prelude::*;

            use $crate::{array, conv, conv_transpose, indexing, math, nn, pool, reduce};

            fn table() -> &'static ember_core::Kernels {
                $table
            }

            proptest! {
                #[test]
                fn unary_matches_definition(case in math::unary_case()) {
                    math::check_unary(table(), &case)?;
                }
                #[test]
                fn unary_nan_passes_through(op in math::unary_op()) {
                    math::unary_nan_passes_through(table(), op)?;
                }
                #[test]
                fn binary_matches_definition(case in math::binary_case()) {
                    math::check_binary(table(), &case)?;
                }
                #[test]
                fn conv2d_matches_definition(case in conv::conv2d_case()) {
                    conv::check_conv2d(table(), &case)?;
                }
                #[test]
                fn conv_transpose2d_matches_definition(
                    case in conv_transpose::conv_transpose2d_case()
                ) {
                    conv_transpose::check_conv_transpose2d(table(), &case)?;
                }
                #[test]
                fn fully_connected_matches_definition(case in nn::fully_connected_case()) {
                    nn::check_fully_connected(table(), &case)?;
                }
                #[test]
                fn matmul_matches_definition(case in nn::matmul_case()) {
                    nn::check_matmul(table(), &case)?;
                }
                #[test]
                fn softmax_matches_definition(case in nn::softmax_case()) {
                    nn::check_softmax(table(), &case)?;
                }
                #[test]
                fn log_softmax_matches_definition(case in nn::softmax_case()) {
                    nn::check_log_softmax(table(), &case)?;
                }
                #[test]
                fn layer_norm_matches_definition(case in nn::layer_norm_case()) {
                    nn::check_layer_norm(table(), &case)?;
                }
                #[test]
                fn reduce_matches_definition(case in reduce::reduce_case()) {
                    reduce::check_reduce(table(), &case)?;
                }
                #[test]
                fn max_pool_matches_definition(case in pool::pool_case()) {
                    pool::check_max_pool(table(), &case)?;
                }
                #[test]
                fn avg_pool_matches_definition(case in pool::pool_case()) {
                    pool::check_avg_pool(table(), &case)?;
                }
                #[test]
                fn global_avg_pool_matches_definition(case in pool::global_avg_pool_case()) {
                    pool::check_global_avg_pool(table(), &case)?;
                }
                #[test]
                fn concat_matches_definition(case in array::concat_case()) {
                    array::check_concat(table(), &case)?;
                }
                #[test]
                fn transpose_matches_definition(case in array::transpose_case()) {
                    array::check_transpose(table(), &case)?;
                }
                #[test]
                fn pad_matches_definition(case in array::pad_case()) {
                    array::check_pad(table(), &case)?;
                }
                #[test]
                fn reshape_copies(case in array::reshape_case()) {
                    array::check_reshape(table(), &case)?;
                }
                #[test]
                fn slice_matches_definition(case in indexing::slice_case()) {
                    indexing::check_slice(table(), &case)?;
                }
                #[test]
                fn gather_matches_definition(case in indexing::gather_case()) {
                    indexing::check_gather(table(), &case)?;
                }
                #[test]
                fn broadcast_matches_definition(case in indexing::broadcast_case()) {
                    indexing::check_broadcast(table(), &case)?;
                }
                #[test]
                fn resize_matches_definition(case in indexing::resize_case()) {
                    indexing::check_resize(table(), &case)?;
                }
            }

            proptest! {
                // Most odd cases are rejected; more of them leave enough accepted ones.
                #![proptest_config(ProptestConfig::with_cases(1024))]
                #[test]
                fn conv2d_validate_guards_kernel(case in conv::conv2d_edge_case()) {
                    conv::check_conv2d_edge(table(), &case)?;
                }
                #[test]
                fn conv_transpose2d_validate_guards_kernel(
                    case in conv_transpose::conv_transpose2d_edge_case()
                ) {
                    conv_transpose::check_conv_transpose2d_edge(table(), &case)?;
                }
                #[test]
                fn pool_validate_guards_kernel(case in pool::pool_edge_case()) {
                    pool::check_pool_edge(table(), &case)?;
                }
            }

            #[test]
            fn unary_known_answers() {
                math::known_unary(table());
            }
            #[test]
            fn binary_known_answers() {
                math::known_binary(table());
            }
            #[test]
            fn conv2d_known_answers() {
                conv::known_conv2d(table());
            }
            #[test]
            fn conv_transpose2d_known_answers() {
                conv_transpose::known_conv_transpose2d(table());
            }
            #[test]
            fn fully_connected_known_answers() {
                nn::known_fully_connected(table());
            }
            #[test]
            fn matmul_known_answers() {
                nn::known_matmul(table());
            }
            #[test]
            fn softmax_known_answers() {
                nn::known_softmax(table());
            }
            #[test]
            fn log_softmax_known_answers() {
                nn::known_log_softmax(table());
            }
            #[test]
            fn layer_norm_known_answers() {
                nn::known_layer_norm(table());
            }
            #[test]
            fn reduce_known_answers() {
                reduce::known_reduce(table());
            }
            #[test]
            fn pool_known_answers() {
                pool::known_pools(table());
            }
            #[test]
            fn array_known_answers() {
                array::known_array(table());
            }
            #[test]
            fn indexing_known_answers() {
                indexing::known_indexing(table());
            }
        }
    };
}

kernel_suite!(reference, &ember_core::REFERENCE);

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

/// Number of elements of a shape.
pub fn numel(dims: &[usize]) -> usize {
    dims.iter().product()
}

/// Row-major flat position of `index` in `dims`.
pub fn flat(index: &[usize], dims: &[usize]) -> usize {
    index.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i)
}

/// Multi-index of row-major flat position `position` in `dims`.
pub fn unflat(mut position: usize, dims: &[usize]) -> Vec<usize> {
    let mut index = vec![0; dims.len()];
    for (i, &d) in dims.iter().enumerate().rev() {
        index[i] = position % d;
        position /= d;
    }
    index
}

/// `n` values in `-10..10`.
pub fn values(n: usize) -> impl Strategy<Value = Vec<f32>> {
    proptest::collection::vec(-10.0f32..10.0, n)
}

/// A small dim, now and then 0 (an empty tensor; ops must cope).
pub fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![12 => 1usize..=4, 1 => Just(0usize)]
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
