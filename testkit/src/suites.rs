//! The macros that instantiate the suites as `#[test]`s, one per check, in a module named by the caller:
//! each target's `tests/suite.rs` invokes them once per kernel table it tests. The checks themselves are
//! functions of [`ops_f32`](crate::ops_f32), [`ops_int8`](crate::ops_int8) and
//! [`ops_typed`](crate::ops_typed); a macro only names them, with their proptest configuration.
//!
//! proptest keeps the seeds of failing cases next to the file that invokes a macro: a target's
//! `tests/suite.rs` has its `tests/suite.proptest-regressions`.

/// Instantiates the f32 suite ([`ops_f32`](crate::ops_f32)) for one kernel table:
/// `f32_suite!(reference, &ember_core::REFERENCE)` makes a module `reference` with one test per check.
/// The table is any expression of type `&'static ember_core::Kernels`.
#[macro_export]
macro_rules! f32_suite {
    ($name:ident, $table:expr) => {
        mod $name {
            use $crate::proptest::prelude::*;

            use $crate::ops_f32::{array, conv, conv_transpose, indexing, math, nn, pool, reduce};

            fn table() -> &'static ember_core::Kernels {
                $table
            }

            $crate::proptest::proptest! {
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

            $crate::proptest::proptest! {
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

/// Instantiates the int8 suite ([`ops_int8`](crate::ops_int8)) for one table of int8 kernels:
/// `int8_suite!(reference, &ember_testkit::ops_int8::REFERENCE)` makes a module `reference` with one
/// test per check. The table is any expression of type `&'static Int8Kernels`.
#[macro_export]
macro_rules! int8_suite {
    ($name:ident, $table:expr) => {
        mod $name {
            use $crate::proptest::prelude::*;

            use $crate::ops_int8::{conv, elementwise, pool, softmax, tflm, Int8Kernels};

            fn table() -> &'static Int8Kernels {
                $table
            }

            $crate::proptest::proptest! {
                #![proptest_config(ProptestConfig::with_cases(128))]
                #[test]
                fn conv2d_matches_definitions(case in conv::conv2d_case()) {
                    conv::check_conv2d(table(), &case)?;
                }
                #[test]
                fn fully_connected_matches_definitions(case in conv::fully_connected_case()) {
                    conv::check_fully_connected(table(), &case)?;
                }
                #[test]
                fn add_matches_definitions(case in elementwise::add_case()) {
                    elementwise::check_add(table(), &case)?;
                }
                #[test]
                fn mul_matches_definitions(case in elementwise::mul_case()) {
                    elementwise::check_mul(table(), &case)?;
                }
                #[test]
                fn requantize_matches_definitions(case in elementwise::requantize_case()) {
                    elementwise::check_requantize(table(), &case)?;
                }
                #[test]
                fn quantize_matches_definition(case in elementwise::quantize_case()) {
                    elementwise::check_quantize(table(), &case)?;
                }
                #[test]
                fn dequantize_matches_definition(case in elementwise::dequantize_case()) {
                    elementwise::check_dequantize(table(), &case)?;
                }
                #[test]
                fn pools_match_definitions(case in pool::pool_case()) {
                    pool::check_pools(table(), &case)?;
                }
                #[test]
                fn softmax_matches_definition(case in softmax::softmax_case()) {
                    softmax::check_softmax(table(), &case)?;
                }
            }

            $crate::proptest::proptest! {
                // Many odd cases are rejected; more of them leave enough accepted ones.
                #![proptest_config(ProptestConfig::with_cases(256))]
                #[test]
                fn conv2d_validate_guards_kernel(case in conv::conv2d_edge_case()) {
                    conv::check_conv2d_edge(table(), &case)?;
                }
                #[test]
                fn pool_validate_guards_kernel(case in pool::pool_edge_case()) {
                    pool::check_pool_edge(table(), &case)?;
                }
            }

            #[test]
            fn conv2d_known_answers() {
                conv::known_conv2d(table());
            }
            #[test]
            fn fully_connected_known_answers() {
                conv::known_fully_connected(table());
            }
            #[test]
            fn elementwise_known_answers() {
                elementwise::known_elementwise(table());
            }
            #[test]
            fn pool_known_answers() {
                pool::known_pools(table());
            }
            #[test]
            fn softmax_known_answers() {
                softmax::known_softmax(table());
            }
            #[test]
            fn matches_tflm_bit_for_bit() {
                tflm::check_tflm_golden(table());
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
        mod $name {
            use $crate::proptest::prelude::*;

            use $crate::ops_typed::{arg_reduce, arith, cast, compare, where_op};

            fn table() -> &'static ember_core::Kernels {
                $table
            }

            $crate::proptest::proptest! {
                #[test]
                fn compare_matches_definition(case in compare::compare_case()) {
                    compare::check_compare(table(), &case)?;
                }
                #[test]
                fn logical_matches_definition(case in compare::logical_case()) {
                    compare::check_logical(table(), &case)?;
                }
                #[test]
                fn not_matches_definition(case in compare::not_case()) {
                    compare::check_not(table(), &case)?;
                }
                #[test]
                fn where_matches_definition(case in where_op::where_case()) {
                    where_op::check_where(table(), &case)?;
                }
                #[test]
                fn cast_matches_definition(case in cast::cast_case()) {
                    cast::check_cast(table(), &case)?;
                }
                #[test]
                fn cast_wide_int_to_float_rounds_once(case in cast::wide_int_to_float_case()) {
                    cast::check_cast(table(), &case)?;
                }
                #[test]
                fn int_binary_matches_definition(case in arith::int_binary_case()) {
                    arith::check_binary(table(), &case)?;
                }
                #[test]
                fn int_pow_matches_definition(case in arith::int_pow_case()) {
                    arith::check_binary(table(), &case)?;
                }
                #[test]
                fn f64_binary_matches_definition(case in arith::f64_binary_case()) {
                    arith::check_binary(table(), &case)?;
                }
                #[test]
                fn int_unary_matches_definition(case in arith::int_unary_case()) {
                    arith::check_unary(table(), &case)?;
                }
                #[test]
                fn f64_unary_matches_definition(case in arith::f64_unary_case()) {
                    arith::check_unary(table(), &case)?;
                }
                #[test]
                fn arg_reduce_matches_definition(case in arg_reduce::arg_reduce_case()) {
                    arg_reduce::check_arg_reduce(table(), &case)?;
                }
            }

            #[test]
            fn compare_known_answers() {
                compare::known_compare(table());
            }
            #[test]
            fn logical_known_answers() {
                compare::known_logical(table());
            }
            #[test]
            fn where_known_answers() {
                where_op::known_where(table());
            }
            #[test]
            fn cast_known_answers() {
                cast::known_cast(table());
            }
            #[test]
            fn int_binary_known_answers() {
                arith::known_int_binary(table());
            }
            #[test]
            fn int_pow_known_answers() {
                arith::known_int_pow(table());
            }
            #[test]
            fn f64_binary_known_answers() {
                arith::known_f64_binary(table());
            }
            #[test]
            fn unary_known_answers() {
                arith::known_unary(table());
            }
            #[test]
            fn arg_reduce_known_answers() {
                arg_reduce::known_arg_reduce(table());
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
