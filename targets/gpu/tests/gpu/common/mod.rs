//! Shared by the GPU tests: finding a Vulkan device (or skipping), a small random generator, and the
//! comparison against the CPU reference of single-op blobs (written by `ember_testkit::model`).

#![allow(dead_code)]

use ember_core::format::DType;
use ember_core::ops::pool::Pool2dParams;
use ember_core::OpKind;
use ember_gpu::{Device, DeviceSession};
use ember_testkit::model::{single_op_blob, Operand};

/// `Device::Vulkan(0)`, or `None` (with the reason printed) when this machine has no Vulkan device.
/// With `EMBER_REQUIRE_GPU=1` a missing device fails the test instead.
pub fn vulkan() -> Option<Device> {
    if !ember_gpu::vulkan_devices().is_empty() {
        return Some(Device::Vulkan(0));
    }
    let reason = "no Vulkan device on this machine (for a software one: apt-get install \
                  mesa-vulkan-drivers libvulkan1)";
    if std::env::var("EMBER_REQUIRE_GPU").as_deref() == Ok("1") {
        panic!("EMBER_REQUIRE_GPU=1 but {reason}");
    }
    eprintln!("skipping GPU test: {reason}; set EMBER_REQUIRE_GPU=1 to fail instead");
    None
}

/// A small deterministic generator (xorshift64*), seeded by proptest.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng((seed ^ 0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in `lo..=hi`.
    pub fn int(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }

    /// Uniform in `[lo, hi)`.
    pub fn float(&mut self, lo: f32, hi: f32) -> f32 {
        let unit = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * unit
    }

    pub fn floats(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        (0..n).map(|_| self.float(lo, hi)).collect()
    }

    pub fn bool(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }

    pub fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.int(0, items.len() - 1)]
    }
}

/// A convolution's geometry, drawn in this order: strides and dilations 1 or 2, paddings 0 to 2, as
/// `[stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, pad_bottom, pad_right]`.
pub fn conv_geometry(rng: &mut Rng) -> [u16; 8] {
    [
        rng.int(1, 2),
        rng.int(1, 2),
        rng.int(1, 2),
        rng.int(1, 2),
        rng.int(0, 2),
        rng.int(0, 2),
        rng.int(0, 2),
        rng.int(0, 2),
    ]
    .map(|v| v as u16)
}

/// The geometry `g` (as [`conv_geometry`] orders it) as `ember_testkit::layer`'s parameter helpers
/// take it: `(strides, dilations, pads)`.
pub fn conv_window(g: [u16; 8]) -> ((u16, u16), (u16, u16), [u16; 4]) {
    let [sh, sw, dh, dw, pt, pl, pb, pr] = g;
    ((sh, sw), (dh, dw), [pt, pl, pb, pr])
}

/// The NHWC output dims of a convolution of `x` by the OHWI weights `w` with geometry `g` (as
/// [`conv_geometry`] orders it), or `None` where the dilated kernel does not fit the padded input.
pub fn conv_output(x: &[usize], w: &[usize], g: [u16; 8]) -> Option<[usize; 4]> {
    let [sh, sw, dh, dw, pt, pl, pb, pr] = g.map(usize::from);
    let span = |k: usize, d: usize| (k - 1) * d + 1;
    let (ph, pw) = (x[1] + pt + pb, x[2] + pl + pr);
    if ph < span(w[1], dh) || pw < span(w[2], dw) {
        return None;
    }
    Some([
        x[0],
        (ph - span(w[1], dh)) / sh + 1,
        (pw - span(w[2], dw)) / sw + 1,
        w[0],
    ])
}

/// A pooling window of `kh` by `kw` with strides 1 or 2, paddings below the window and either
/// averaging rule, drawn in this order.
pub fn pool_window(rng: &mut Rng, (kh, kw): (usize, usize)) -> Pool2dParams {
    Pool2dParams {
        kernel_h: kh as u16,
        kernel_w: kw as u16,
        stride_h: rng.int(1, 2) as u16,
        stride_w: rng.int(1, 2) as u16,
        pad_top: rng.int(0, kh - 1) as u16,
        pad_left: rng.int(0, kw - 1) as u16,
        pad_bottom: rng.int(0, kh - 1) as u16,
        pad_right: rng.int(0, kw - 1) as u16,
        count_include_pad: rng.bool(),
    }
}

/// Runs the model on `device` with the graph inputs in order; returns output 0.
pub fn run_on(blob: &[u8], device: Device, inputs: &[&[f32]]) -> Vec<f32> {
    let mut session = DeviceSession::new(blob, device)
        .unwrap_or_else(|e| panic!("opening the session on {device}: {e}"));
    for (i, values) in inputs.iter().enumerate() {
        session.input(i).unwrap().write_f32(values).unwrap();
    }
    session
        .run()
        .unwrap_or_else(|e| panic!("running on {device}: {e}"));
    session.output(0).unwrap().into_vec()
}

/// Relative error within `1e-4`, measured against `max(|expected|, 1)` (an absolute 1e-4 near zero);
/// NaN matches NaN and infinities match by sign.
pub fn assert_close(what: &str, gpu: &[f32], cpu: &[f32]) {
    assert_eq!(gpu.len(), cpu.len(), "{what}: output lengths differ");
    for (i, (&g, &c)) in gpu.iter().zip(cpu).enumerate() {
        let ok = (g.is_nan() && c.is_nan()) || g == c || (g - c).abs() <= 1e-4 * c.abs().max(1.0);
        assert!(ok, "{what}: element {i}: GPU {g}, CPU reference {c}");
    }
}

/// Builds the single-op model with an output of `out_dtype` and runs it on `gpu` and on the CPU
/// reference kernels: `(gpu's output, the reference's)`.
pub fn run_both(
    gpu: Device,
    kind: OpKind,
    operands: &[Operand],
    out_dims: &[usize],
    out_dtype: DType,
) -> (Vec<f32>, Vec<f32>) {
    let blob = single_op_blob(kind, operands, out_dims, out_dtype);
    let inputs: Vec<&[f32]> = operands
        .iter()
        .filter(|o| !o.weight)
        .map(|o| o.values.as_slice())
        .collect();
    let cpu = run_on(blob.as_bytes(), Device::Cpu, &inputs);
    (run_on(blob.as_bytes(), gpu, &inputs), cpu)
}

/// Builds the single-op model, runs it on the CPU reference kernels and on `gpu`, and compares.
pub fn check_op(gpu: Device, kind: OpKind, operands: &[Operand], out_dims: &[usize]) {
    let (got, cpu) = run_both(gpu, kind, operands, out_dims, DType::F32);
    let dims: Vec<_> = operands.iter().map(|o| o.dims.clone()).collect();
    assert_close(&format!("{kind:?} on {dims:?}"), &got, &cpu);
}
