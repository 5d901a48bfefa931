//! `ember-core`'s reference kernels (`REFERENCE`) through the kernel suites of `ember-testkit`: f32
//! kernels against f64 definitions, int8 kernels against exact integer models, the real-valued ops and
//! TFLM's golden outputs, and the kernels of the other dtypes against numpy's semantics; the `validate`
//! checks that take no table. Each target runs the same suites on its own tables in its `tests/suite.rs`.
//! (The fixed-point primitives of `ops::quant::requant` are tested in `requant.rs`.)

ember_testkit::f32_suite!(ops_f32, &ember_core::REFERENCE);
ember_testkit::int8_suite!(ops_int8, &ember_testkit::ops_int8::REFERENCE);
ember_testkit::typed_suite!(ops_typed, &ember_core::REFERENCE);
ember_testkit::validate_suite!(validate);
