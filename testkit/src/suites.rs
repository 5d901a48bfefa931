//! The macros that instantiate the suites as `#[test]`s, one per check, in a module named by the caller:
//! each target's `tests/suite.rs` invokes them once per kernel table it tests. The checks themselves are
//! functions of [`ops_f32`](crate::ops_f32), [`ops_int8`](crate::ops_int8) and
//! [`ops_typed`](crate::ops_typed); a macro only names them, with their proptest configuration.
//!
//! proptest keeps the seeds of failing cases next to the file that invokes a macro: a target's
//! `tests/suite.rs` has its `tests/suite.proptest-regressions`.

use proptest::strategy::Strategy;
use proptest::test_runner::{
    contextualize_config, Config as ProptestConfig, TestCaseError, TestRunner,
};

/// Instantiates the f32 suite ([`ops_f32`](crate::ops_f32)) for one kernel table:
/// `f32_suite!(reference, &ember_core::REFERENCE)` makes a module `reference` with one test per check.
/// The table is any expression of type `&'static ember_core::Kernels`.
#[macro_export]
macro_rules! f32_suite {
    ($name:ident, $table:expr) => {
        $crate::__suite_module! {
            $name, $table, ember_core::Kernels,
            use $crate::ops_f32::{array, conv, conv_transpose, indexing, math, nn, pool, reduce};

            $crate::__case_checks! {
                ProptestConfig::default();
                unary_nan_passes_through: math::unary_op => unary_nan_passes_through,
                unary_matches_definition: math::unary_case => check_unary,
                binary_matches_definition: math::binary_case => check_binary,
                conv2d_matches_definition: conv::conv2d_case => check_conv2d,
                conv_transpose2d_matches_definition:
                    conv_transpose::conv_transpose2d_case => check_conv_transpose2d,
                fully_connected_matches_definition:
                    nn::fully_connected_case => check_fully_connected,
                matmul_matches_definition: nn::matmul_case => check_matmul,
                softmax_matches_definition: nn::softmax_case => check_softmax,
                log_softmax_matches_definition: nn::softmax_case => check_log_softmax,
                layer_norm_matches_definition: nn::layer_norm_case => check_layer_norm,
                reduce_matches_definition: reduce::reduce_case => check_reduce,
                max_pool_matches_definition: pool::pool_case => check_max_pool,
                avg_pool_matches_definition: pool::pool_case => check_avg_pool,
                global_avg_pool_matches_definition:
                    pool::global_avg_pool_case => check_global_avg_pool,
                concat_matches_definition: array::concat_case => check_concat,
                transpose_matches_definition: array::transpose_case => check_transpose,
                pad_matches_definition: array::pad_case => check_pad,
                reshape_copies: array::reshape_case => check_reshape,
                slice_matches_definition: indexing::slice_case => check_slice,
                gather_matches_definition: indexing::gather_case => check_gather,
                broadcast_matches_definition: indexing::broadcast_case => check_broadcast,
                resize_matches_definition: indexing::resize_case => check_resize,
            }

            // Most odd cases are rejected; more of them leave enough accepted ones.
            $crate::__case_checks! {
                ProptestConfig::with_cases(1024);
                conv2d_validate_guards_kernel: conv::conv2d_edge_case => check_conv2d_edge,
                conv_transpose2d_validate_guards_kernel:
                    conv_transpose::conv_transpose2d_edge_case => check_conv_transpose2d_edge,
                pool_validate_guards_kernel: pool::pool_edge_case => check_pool_edge,
            }

            $crate::__known_answers! {
                unary_known_answers: math::known_unary,
                binary_known_answers: math::known_binary,
                conv2d_known_answers: conv::known_conv2d,
                conv_transpose2d_known_answers: conv_transpose::known_conv_transpose2d,
                fully_connected_known_answers: nn::known_fully_connected,
                matmul_known_answers: nn::known_matmul,
                softmax_known_answers: nn::known_softmax,
                log_softmax_known_answers: nn::known_log_softmax,
                layer_norm_known_answers: nn::known_layer_norm,
                reduce_known_answers: reduce::known_reduce,
                pool_known_answers: pool::known_pools,
                array_known_answers: array::known_array,
                indexing_known_answers: indexing::known_indexing,
            }
        }
    };
}

/// Instantiates the int8 suite ([`ops_int8`](crate::ops_int8)) for one table of int8 kernels:
/// `int8_suite!(reference, &ember_testkit::ops_int8::REFERENCE)` makes a module `reference` with one
/// test per check. The table is any expression of type `&'static Int8Kernels`.
#[macro_export]
macro_rules! int8_suite {
    ($name:ident, $table:expr) => {
        $crate::__suite_module! {
            $name, $table, Int8Kernels,
            use $crate::ops_int8::{conv, elementwise, pool, softmax, tflm, Int8Kernels};

            $crate::__case_checks! {
                ProptestConfig::with_cases(128);
                conv2d_matches_definitions: conv::conv2d_case => check_conv2d,
                fully_connected_matches_definitions:
                    conv::fully_connected_case => check_fully_connected,
                add_matches_definitions: elementwise::add_case => check_add,
                mul_matches_definitions: elementwise::mul_case => check_mul,
                requantize_matches_definitions: elementwise::requantize_case => check_requantize,
                quantize_matches_definition: elementwise::quantize_case => check_quantize,
                dequantize_matches_definition: elementwise::dequantize_case => check_dequantize,
                pools_match_definitions: pool::pool_case => check_pools,
                softmax_matches_definition: softmax::softmax_case => check_softmax,
            }

            // Many odd cases are rejected; more of them leave enough accepted ones.
            $crate::__case_checks! {
                ProptestConfig::with_cases(256);
                conv2d_validate_guards_kernel: conv::conv2d_edge_case => check_conv2d_edge,
                pool_validate_guards_kernel: pool::pool_edge_case => check_pool_edge,
            }

            $crate::__known_answers! {
                conv2d_known_answers: conv::known_conv2d,
                fully_connected_known_answers: conv::known_fully_connected,
                elementwise_known_answers: elementwise::known_elementwise,
                pool_known_answers: pool::known_pools,
                softmax_known_answers: softmax::known_softmax,
                matches_tflm_bit_for_bit: tflm::check_tflm_golden,
            }
        }
    };
}

/// Instantiates the suite of the kernels of tensors other than f32 ([`ops_typed`](crate::ops_typed)) for
/// one kernel table: `typed_suite!(reference, &ember_core::REFERENCE)` makes a module `reference` with
/// one test per check.
#[macro_export]
macro_rules! typed_suite {
    ($name:ident, $table:expr) => {
        $crate::__suite_module! {
            $name, $table, ember_core::Kernels,
            use $crate::ops_typed::{arg_reduce, arith, cast, compare, where_op};

            $crate::__case_checks! {
                ProptestConfig::default();
                compare_matches_definition: compare::compare_case => check_compare,
                logical_matches_definition: compare::logical_case => check_logical,
                not_matches_definition: compare::not_case => check_not,
                where_matches_definition: where_op::where_case => check_where,
                cast_matches_definition: cast::cast_case => check_cast,
                cast_wide_int_to_float_rounds_once: cast::wide_int_to_float_case => check_cast,
                int_binary_matches_definition: arith::int_binary_case => check_binary,
                int_pow_matches_definition: arith::int_pow_case => check_binary,
                f64_binary_matches_definition: arith::f64_binary_case => check_binary,
                int_unary_matches_definition: arith::int_unary_case => check_unary,
                f64_unary_matches_definition: arith::f64_unary_case => check_unary,
                arg_reduce_matches_definition: arg_reduce::arg_reduce_case => check_arg_reduce,
            }

            $crate::__known_answers! {
                compare_known_answers: compare::known_compare,
                logical_known_answers: compare::known_logical,
                where_known_answers: where_op::known_where,
                cast_known_answers: cast::known_cast,
                int_binary_known_answers: arith::known_int_binary,
                int_pow_known_answers: arith::known_int_pow,
                f64_binary_known_answers: arith::known_f64_binary,
                unary_known_answers: arith::known_unary,
                arg_reduce_known_answers: arg_reduce::known_arg_reduce,
            }
        }
    };
}

/// Instantiates the checks that take no kernel table: each family's `validate` (wrong ranks, shapes and
/// parameters are rejected) and the parameter derivations of the int8 ops. They test `ember-core`'s own
/// functions, the same for every table, so only `ember-core`'s suite runs them:
/// `validate_suite!(validate)` makes a module `validate` with one test per check.
#[macro_export]
macro_rules! validate_suite {
    ($name:ident) => {
        mod $name {
            $crate::__table_free_tests!(ops_f32 {
                array: [array_validate_rejects_bad_shapes],
                conv: [conv2d_validate_rejects_bad_shapes],
                conv_transpose: [conv_transpose2d_validate_rejects_bad_shapes],
                math: [
                    unary_validate_rejects_bad_shapes,
                    binary_validate_rejects_bad_shapes
                ],
                nn: [
                    fully_connected_validate_rejects_bad_shapes,
                    matmul_validate_rejects_bad_shapes,
                    softmax_validate_rejects_bad_shapes,
                    layer_norm_validate_rejects_bad_shapes,
                ],
                pool: [pool_validate_rejects_bad_shapes],
                reduce: [reduce_validate_rejects_bad_shapes],
            });
            $crate::__table_free_tests!(ops_int8 {
                conv: [validate_rejects_bad_shapes],
                elementwise: [validate_rejects_bad_params],
                pool: [validate_rejects_bad_windows],
                softmax: [validate_rejects_bad_params, params_match_tflm_prepare],
            });
            $crate::__table_free_tests!(ops_typed {
                arg_reduce: [arg_reduce_validate_rejects],
                arith: [binary_validate_rejects, unary_validate_rejects],
                cast: [cast_validate_rejects, cast_to_and_from_float16],
                compare: [compare_validate_rejects, logical_validate_rejects],
                where_op: [where_validate_rejects],
            });
        }
    };
}

/// `#[test]`s calling the checks `$crate::$family::$module::$check`, in modules `$family::$module`.
#[doc(hidden)]
#[macro_export]
macro_rules! __table_free_tests {
    ($family:ident { $($module:ident: [$($check:ident),* $(,)?]),* $(,)? }) => {
        mod $family {
            $(
                mod $module {
                    $(
                        #[test]
                        fn $check() {
                            $crate::$family::$module::$check();
                        }
                    )*
                }
            )*
        }
    };
}

/// The module `$name` of a suite: proptest's prelude, the modules of checks that `$uses` imports,
/// `table()` returning `$table` (a `&'static $kernels`), then the tests.
#[doc(hidden)]
#[macro_export]
macro_rules! __suite_module {
    ($name:ident, $table:expr, $kernels:ty, $uses:item $($tests:tt)*) => {
        mod $name {
            use $crate::proptest::prelude::*;

            $uses

            fn table() -> &'static $kernels {
                $table
            }

            $($tests)*
        }
    };
}

/// A proptest `#[test]` per `$test: $module::$case => $check`, under `$config`: it draws cases from
/// `$module::$case()` and checks each one with `$module::$check(table(), &case)`, through [`run_cases`]
/// (proptest's own macro would compile the runner again for every test of every table).
#[doc(hidden)]
#[macro_export]
macro_rules! __case_checks {
    ($config:expr; $($test:ident: $module:ident::$case:ident => $check:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                $crate::suites::run_cases(
                    $config,
                    ::core::file!(),
                    ::core::concat!(::core::module_path!(), "::", ::core::stringify!($test)),
                    $module::$case(),
                    table(),
                    $module::$check,
                );
            }
        )*
    };
}

/// Runs `check(table, case)` on every case `cases` draws under `config`, as a test that `proptest!`
/// wrote would: the environment's settings (`PROPTEST_CASES`) apply, failing seeds are kept next to
/// `file` (the suite's invoking `tests/suite.rs`), and a failure panics with the shrunk case.
///
/// One function for every check, so that a test crate compiles the runner once per case strategy:
/// `proptest!` wraps each test's strategy in a closure of its own, which made every test of every
/// table a new copy of the runner and the strategy's code (`ember-cpu`'s suite, five tables, took 39 s
/// to compile for aarch64).
pub fn run_cases<K: ?Sized, S: Strategy>(
    config: ProptestConfig,
    file: &'static str,
    name: &'static str,
    cases: S,
    table: &K,
    check: fn(&K, &S::Value) -> Result<(), TestCaseError>,
) {
    let mut config = contextualize_config(config);
    config.source_file = Some(file);
    config.test_name = Some(name);
    let mut runner = TestRunner::new(config);
    if let Err(e) = runner.run(&cases, |case| check(table, &case)) {
        panic!("{e}\n{runner}");
    }
}

/// A `#[test]` per `$test: $module::$check`, calling `$module::$check(table())`: the answers computed
/// by hand.
#[doc(hidden)]
#[macro_export]
macro_rules! __known_answers {
    ($($test:ident: $module:ident::$check:ident),* $(,)?) => {
        $(
            #[test]
            fn $test() {
                $module::$check(table());
            }
        )*
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prop_assert;

    fn below_ten(_: &(), x: &u32) -> Result<(), TestCaseError> {
        prop_assert!(*x < 10, "{x} is not below 10");
        Ok(())
    }

    #[test]
    fn a_failing_check_panics_with_its_shrunk_case() {
        let config = ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::default()
        };
        let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run_cases(config.clone(), file!(), "t", 0u32..1000, &(), below_ten)
        }))
        .expect_err("cases up to 999 include one of 10 or more");
        let message = failed
            .downcast_ref::<String>()
            .expect("the runner panics with a message");
        // Shrinking stops at the smallest failing value.
        assert!(message.contains("10 is not below 10"), "{message}");
        run_cases(config, file!(), "t", 0u32..10, &(), below_ten);
    }
}
