//! The drivers take each level's SIMD path, never the reference fallback, when the workspace holds the
//! scratch the level's table asks for (on 1 and 2 workers), for every kind of layer; and fall back
//! without a workspace. (That the outputs are the reference's is `tests/int8_vs_reference.rs`'s job;
//! they are compared here too.)

extern crate std;

use std::vec;
use std::vec::Vec;

use ember_core::ops::quant::conv::QuantConv2dParams;
use ember_core::ops::quant::fully_connected::QuantFullyConnectedParams;
use ember_core::ops::quant::requant::RequantRounding;
use ember_core::ops::{In, Out};
use ember_core::{AlignedBuf, OpKind, Parallel, Workspace};
use ember_testkit::layer::quant_conv2d_params;

use super::{conv, fully_connected, scratch_of, Level, Tensors};
use crate::{Isa, ThreadPool};

fn data(n: usize, seed: u32) -> Vec<i8> {
    let mut s = seed;
    (0..n)
        .map(|_| {
            s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (s >> 24) as i8
        })
        .collect()
}

/// `data` with dims `dims`, as a kernel's input.
fn tensor<'a>(data: &'a [i8], dims: &'a [usize]) -> In<'a, i8> {
    In { data, dims }
}

fn conv_params(k: usize, stride: u16, dilation: u16, groups: u16) -> QuantConv2dParams {
    let pad = (k / 2) as u16 * dilation;
    QuantConv2dParams {
        x_zero_point: -7,
        y_zero_point: 2,
        act_min: -100,
        act_max: 120,
        rounding: RequantRounding::Single,
        ..quant_conv2d_params((stride, stride), (dilation, dilation), [pad; 4], groups)
    }
}

/// Runs `f` with no workspace, then with the scratch `L` asks for on 1 and 2 workers.
fn workspaces<L: Level>(
    kind: &OpKind,
    inputs: &[&[usize]],
    output: &[usize],
    mut f: impl FnMut(Option<&mut Workspace<'_>>, &str),
) {
    f(None, "no workspace");
    let pool = ThreadPool::new(2).unwrap();
    for parallel in [None, Some(&pool as &dyn Parallel)] {
        let workers = parallel.map_or(1, |p| p.workers());
        let mut buf = AlignedBuf::zeroed(scratch_of::<L>(kind, inputs, output, workers));
        f(
            Some(&mut Workspace::new(buf.as_mut_bytes(), parallel)),
            if workers == 1 {
                "1 worker"
            } else {
                "2 workers"
            },
        );
    }
}

fn check_level<L: Level>() {
    // (size, IC, OC, kernel, stride, dilation, groups)
    let convs = [
        (9, 24, 40, 1, 1, 1, 1),   // 1x1 on the input in place
        (9, 24, 40, 1, 2, 1, 1),   // strided 1x1, still in place
        (11, 13, 19, 3, 2, 1, 1),  // im2col
        (12, 8, 6, 5, 1, 2, 1),    // dilated
        (10, 12, 18, 3, 1, 1, 3),  // grouped
        (14, 20, 20, 3, 1, 1, 20), // depthwise
        (14, 5, 10, 3, 1, 1, 5),   // depthwise with a channel multiplier: grouped GEMM
        (10, 4, 4, 11, 1, 1, 4),   // depthwise with 121 taps: grouped GEMM
    ];
    for (size, ic, oc, k, stride, dilation, groups) in convs {
        let p = conv_params(k, stride, dilation, groups as u16);
        let out = (size + 2 * usize::from(p.pad_top) - usize::from(dilation) * (k - 1) - 1)
            / usize::from(stride)
            + 1;
        let (x_dims, w_dims, y_dims) = (
            [2, size, size, ic],
            [oc, k, k, ic / groups],
            [2, out, out, oc],
        );
        let (x, w) = (
            data(x_dims.iter().product(), 1),
            data(w_dims.iter().product(), 2),
        );
        let b: Vec<i32> = (0..oc as i32).map(|i| i * 321 - 3000).collect();
        let rq: Vec<i32> = (0..oc as i32)
            .flat_map(|i| [(1 << 30) + i * 4_567, -7 - i % 2])
            .collect();
        let (x, w) = (tensor(&x, &x_dims), tensor(&w, &w_dims));
        let mut want = vec![0i8; y_dims.iter().product()];
        let y = Out {
            data: &mut want,
            dims: &y_dims,
        };
        ember_core::ops::quant::conv::conv2d(&p, x, w, Some(&b), &rq, y);
        let tensors = Tensors {
            x,
            w,
            b: Some(&b),
            requant: &rq,
        };
        let inputs: [&[usize]; 4] = [&x_dims, &w_dims, &[oc, 2], &[oc]];
        workspaces::<L>(&OpKind::QuantConv2d(p), &inputs, &y_dims, |ws, how| {
            let mut y = vec![0i8; want.len()];
            let fallback = ws.is_none();
            let ran = conv::run::<L>(&p, tensors, &mut y, &y_dims, ws);
            assert_eq!(
                ran,
                !fallback,
                "{} conv {x_dims:?} * {w_dims:?}, {how}",
                L::GEMM_NAME
            );
            assert!(
                !ran || y == want,
                "{} conv {x_dims:?} * {w_dims:?}, {how}",
                L::GEMM_NAME
            );
        });
    }
    for rows in [1, 2, 7] {
        let (n, k) = (37, 45);
        let p = QuantFullyConnectedParams {
            x_zero_point: 3,
            y_zero_point: -2,
            act_min: -128,
            act_max: 127,
            rounding: RequantRounding::Double,
        };
        let (x_dims, w_dims, y_dims) = ([rows, k], [n, k], [rows, n]);
        let (x, w) = (data(rows * k, 3), data(n * k, 4));
        let rq = [1 << 30, -6];
        let (x, w) = (tensor(&x, &x_dims), tensor(&w, &w_dims));
        let mut want = vec![0i8; rows * n];
        let y = Out {
            data: &mut want,
            dims: &y_dims,
        };
        ember_core::ops::quant::fully_connected::fully_connected(&p, x, w, None, &rq, y);
        let tensors = Tensors {
            x,
            w,
            b: None,
            requant: &rq,
        };
        let inputs: [&[usize]; 3] = [&x_dims, &w_dims, &[1, 2]];
        workspaces::<L>(
            &OpKind::QuantFullyConnected(p),
            &inputs,
            &y_dims,
            |ws, how| {
                let mut y = vec![0i8; want.len()];
                let fallback = ws.is_none();
                let ran = fully_connected::run::<L>(&p, tensors, &mut y, ws);
                assert_eq!(ran, !fallback, "{} fc {rows} rows, {how}", L::GEMM_NAME);
                assert!(!ran || y == want, "{} fc {rows} rows, {how}", L::GEMM_NAME);
            },
        );
    }
}

#[test]
fn every_level_runs_its_own_kernels_given_the_scratch_it_asks_for() {
    #[cfg(target_arch = "x86_64")]
    let levels: [(Isa, fn()); 2] = [
        (Isa::Sse2, check_level::<super::x86::Sse2>),
        (Isa::Avx2, check_level::<super::x86::Avx2>),
    ];
    #[cfg(target_arch = "aarch64")]
    let levels: [(Isa, fn()); 2] = [
        (Isa::Neon, check_level::<super::arm::Neon>),
        (Isa::NeonDotprod, check_level::<super::arm::NeonDotprod>),
    ];
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let levels: [(Isa, fn()); 0] = [];
    let mut ran = 0;
    for (isa, check) in levels {
        if isa.is_supported() {
            check();
            ran += 1;
        }
    }
    // AVX-512's table runs AVX2's int8 kernels (checked above when AVX2 is here).
    let own = |i: Isa| i != Isa::Scalar && i != Isa::Avx512;
    assert_eq!(ran, Isa::supported().filter(|&i| own(i)).count());
}
