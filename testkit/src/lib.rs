//! Ember's test kit: the kernel conformance suites, written once and instantiated by every target, and
//! the helpers that test files of several crates share.
//!
//! - [`ops_f32`], [`ops_int8`], [`ops_typed`]: the suites. Each check is a function over a kernel table
//!   (`&Kernels`, or for int8 the [`Int8Kernels`](ops_int8::Int8Kernels) taken from one) comparing its
//!   kernels with definitions written independently here, over proptest-generated cases and with answers
//!   computed by hand. The macros [`f32_suite!`], [`int8_suite!`] and [`typed_suite!`] instantiate them
//!   as `#[test]`s in a target's `tests/suite.rs`: `ember-core` with `REFERENCE`, `ember-cpu` at each
//!   instruction-set level, `ember-cortex-m` on the host. [`validate_suite!`] holds the checks that take
//!   no table, which `ember-core` runs once.
//! - [`edge`]: the check that `validate` accepts exactly the odd cases the definition calls well-formed.
//! - [`shape`]: element counts, flat positions and numpy broadcasting.
//! - [`layer`]: the cases of layers with weights (convolutions, fully connected), f32 or int8.
//! - [`window`]: pooling windows, valid and odd, and the formulas that define them.
//! - [`model`]: running a blob on the reference kernels, `.npy` goldens, single-op blobs.
//!
//! It is a dev-dependency only (`publish = false`): it uses std, proptest and `ember-core` with `alloc`.

pub mod edge;
pub mod layer;
pub mod model;
pub mod ops_f32;
pub mod ops_int8;
pub mod ops_typed;
pub mod shape;
pub mod suites;
pub mod window;

/// The proptest the suite macros expand to, so that a target needs no proptest of its own for them.
pub use proptest;
