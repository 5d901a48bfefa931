//! ember-gpu's integration tests in one test binary, a module per area: each test binary links CubeCL,
//! wgpu and Vulkan's loader again (110 MB each), and CI builds them cold (as 6 binaries: 14 s of
//! compile and link; as one: 2.5 s, on the 2-core CI machine).

mod common;

mod conformance;
mod int8;
mod models;
mod ops;
mod resize_golden;
mod rnn;
mod switch_device;
mod variants;
