//! Each op of every level this CPU runs takes its own path (never the reference fallback) with exactly
//! the scratch its table asked for, on 1, 2 and 3 workers, and falls back without a workspace or with
//! too little scratch (the results themselves are checked in `tests/kernels_vs_reference.rs`).

use std::vec;
use std::vec::Vec;

use ember_core::ops::math::activation::Activation;
use ember_core::ops::nn::fully_connected::FullyConnectedParams;
use ember_core::ops::nn::matmul::MatMulParams;
use ember_core::ops::{In, Out};
use ember_core::{Kernels, OpKind, Workspace};
use ember_testkit::layer::{conv2d_params, conv_transpose2d_params};

use super::FALLBACKS;
use crate::gemm::tests::parallels;
use crate::Isa;

/// An op call: its kind, input dims (`x`, `w`), output dims.
struct Call {
    kind: OpKind,
    x: Vec<usize>,
    w: Vec<usize>,
    y: Vec<usize>,
}

impl Call {
    /// Runs the op with `kernels` and `scratch` bytes (`None`: no workspace); returns the fallbacks.
    fn fallbacks(&self, kernels: &Kernels, scratch: Option<usize>, workers: usize) -> usize {
        let len = |d: &[usize]| d.iter().product::<usize>();
        let (x, w) = (vec![0.5f32; len(&self.x)], vec![0.25f32; len(&self.w)]);
        let mut y = vec![0.0f32; len(&self.y)];
        let (x, w) = (
            In {
                data: &x,
                dims: &self.x,
            },
            In {
                data: &w,
                dims: &self.w,
            },
        );
        let y = Out {
            data: &mut y,
            dims: &self.y,
        };
        let par = parallels()[workers - 1];
        let mut bytes = vec![0u128; scratch.unwrap_or(0).div_ceil(16)];
        let bytes: &mut [u8] = &mut bytemuck::cast_slice_mut(&mut bytes)[..scratch.unwrap_or(0)];
        let mut ws = Workspace::new(bytes, par);
        let ws = scratch.map(|_| &mut ws);
        let before = FALLBACKS.with(|f| f.get());
        match self.kind {
            OpKind::Conv2d(p) => (kernels.conv2d)(&p, x, w, None, y, ws),
            OpKind::ConvTranspose2d(p) => (kernels.conv_transpose2d)(&p, x, w, None, y, ws),
            OpKind::FullyConnected(p) => (kernels.fully_connected)(&p, x, w, None, y, ws),
            OpKind::MatMul(p) => (kernels.matmul)(&p, x, w, y, ws),
            _ => unreachable!(),
        }
        FALLBACKS.with(|f| f.get()) - before
    }
}

fn conv(x: [usize; 4], w: [usize; 4], y: [usize; 4], stride: u16, pad: u16, groups: u16) -> Call {
    let p = conv2d_params((stride, stride), (1, 1), [pad; 4], groups, Activation::Relu);
    Call {
        kind: OpKind::Conv2d(p),
        x: x.to_vec(),
        w: w.to_vec(),
        y: y.to_vec(),
    }
}

fn calls() -> Vec<Call> {
    let fc = OpKind::FullyConnected(FullyConnectedParams {
        act: Activation::None,
    });
    let ct = conv_transpose2d_params((2, 2), (1, 1), [0; 4], (0, 0), 1, Activation::Relu);
    vec![
        // Pointwise, pointwise at one pixel (GEMV), im2col, depthwise, depthwise x2, grouped.
        conv([1, 20, 20, 16], [32, 1, 1, 16], [1, 20, 20, 32], 1, 0, 1),
        conv([1, 1, 1, 64], [16, 1, 1, 64], [1, 1, 1, 16], 1, 0, 1),
        conv([2, 30, 30, 8], [12, 3, 3, 8], [2, 15, 15, 12], 2, 1, 1),
        conv([1, 30, 30, 40], [40, 3, 3, 1], [1, 30, 30, 40], 1, 1, 40),
        conv([1, 9, 9, 5], [10, 3, 3, 1], [1, 9, 9, 10], 1, 1, 5),
        conv([1, 20, 20, 12], [12, 3, 3, 4], [1, 20, 20, 12], 1, 1, 3),
        Call {
            kind: fc,
            x: vec![1, 300],
            w: vec![200, 300],
            y: vec![1, 200],
        },
        Call {
            kind: fc,
            x: vec![40, 120],
            w: vec![300, 120],
            y: vec![40, 300],
        },
        Call {
            kind: OpKind::MatMul(MatMulParams {}),
            x: vec![3, 50, 60],
            w: vec![60, 70],
            y: vec![3, 50, 70],
        },
        Call {
            kind: OpKind::ConvTranspose2d(ct),
            x: vec![1, 20, 20, 24],
            w: vec![24, 2, 2, 24],
            y: vec![1, 40, 40, 24],
        },
    ]
}

#[test]
fn every_op_runs_its_own_kernel_with_the_scratch_it_asked_for() {
    for isa in Isa::supported() {
        let kernels = crate::table(isa);
        let ask = kernels
            .scratch
            .expect("every table of this crate asks for scratch");
        for call in calls() {
            let dims: [&[usize]; 2] = [&call.x, &call.w];
            // Under Miri one worker: a pool kept for the whole test binary is a thread still running
            // when Miri's main thread ends, and the pool's own tests cover its sharing.
            let most = if cfg!(miri) { 1 } else { 3 };
            for workers in 1..=most {
                let need = ask(&call.kind, &dims, &call.y, workers);
                assert_eq!(
                    call.fallbacks(kernels, Some(need), workers),
                    0,
                    "{isa} {:?} on {workers} workers",
                    call.kind
                );
            }
            assert_eq!(call.fallbacks(kernels, None, 1), 1, "{isa}: no workspace");
            let need = ask(&call.kind, &dims, &call.y, 1);
            if need > 0 {
                let short = call.fallbacks(kernels, Some(need - 4), 1);
                assert_eq!(short, 1, "{isa} {:?}: too little scratch", call.kind);
            }
        }
    }
}
