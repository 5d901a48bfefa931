//! Kernels no device runs, for the tests of how a session fails when CubeCL or the driver refuses one
//! of its kernels (a driver that lacks a feature, a device with less shared memory than a kernel asks).

use cubecl::prelude::*;

/// [`too_much_shared`]: CubeCL refuses it when it compiles the kernel for the device.
pub(crate) const TOO_MUCH_SHARED_MEMORY: u32 = 0;
/// [`rejected`]: CubeCL's compilation fails with a validation error, as it does for an operation the
/// runtime does not support.
pub(crate) const INVALID: u32 = 1;

/// The elements of the oversized shared array: 4 MiB of f32 (devices have 16 to 228 KiB per cube).
const SHARED: usize = 1 << 20;

#[cube(launch)]
pub(crate) fn too_much_shared(y: &mut [f32]) {
    let mut shared = Shared::new_slice(SHARED);
    shared[UNIT_POS as usize] = 1.0f32;
    sync_cube();
    if ABSOLUTE_POS < y.len() {
        y[ABSOLUTE_POS] = shared[(UNIT_POS as usize + 1) % SHARED];
    }
}

#[cube(launch)]
pub(crate) fn rejected(y: &mut [f32], #[comptime] reason: String) {
    push_validation_error(reason);
    if ABSOLUTE_POS < y.len() {
        y[ABSOLUTE_POS] = 0.0f32;
    }
}
