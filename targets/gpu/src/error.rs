//! The one error type of `ember-gpu`: every message names the device, op or tensor involved.

/// What can go wrong opening or running a [`DeviceSession`](crate::DeviceSession).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The requested device is not on this machine (or not in this build).
    #[error("{requested} is not available: {reason}; available devices: {available}")]
    DeviceUnavailable {
        /// The device asked for (`vulkan:1`, `metal`, ...).
        requested: String,
        /// Why not.
        reason: String,
        /// The devices this build can use on this machine, comma-separated.
        available: String,
    },
    /// `Device::Cuda` in a build without CUDA support.
    #[error(
        "this build of Ember has no CUDA support (build with ember-gpu's `cuda` feature, `cargo build \
         -p ember-cli --features gpu-cuda`, on a machine with network access: CubeCL 0.11's CUDA runtime \
         downloads a prebuilt LLVM while it builds; see the README's GPU section); available devices: \
         {available}"
    )]
    NoCuda {
        /// The devices this build can use on this machine, comma-separated.
        available: String,
    },
    /// An op (or one of its tensors) that the GPU path cannot run.
    #[error("op {index} ({op}) cannot run on {device}: {reason}")]
    UnsupportedOp {
        /// Op index in execution order.
        index: usize,
        /// Op name (`Conv2d`, `Add`, ...).
        op: &'static str,
        /// The device.
        device: String,
        /// What is missing.
        reason: String,
    },
    /// The model or a call on it was rejected by `ember-core` (bad blob, wrong input length, ...).
    #[error("{0}")]
    Model(#[from] ember_core::Error),
    /// The GPU runtime failed (device lost, out of memory, a panic inside CubeCL or the driver).
    #[error("GPU runtime on {device} failed: {reason}")]
    Backend {
        /// The device.
        device: String,
        /// What the runtime said.
        reason: String,
    },
}
