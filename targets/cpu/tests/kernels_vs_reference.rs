//! This crate's kernels against `ember-core`'s reference kernels, at every level this CPU runs, on shapes
//! that reach what the shared suite's small cases do not: edge tiles of the GEMM, packing transposes,
//! im2col tiles, depthwise borders and channel blocks, channel multipliers, groups, strides, dilations,
//! padding, fully connected at batch 1 and more, matmul batch broadcasting, transposed convolutions.
//!
//! Each case runs on 1, 2 and 3 workers (a [`ThreadPool`]), which must agree bit for bit, and within
//! `1e-5 * max(1, |reference|, magnitude)` of the reference, where the magnitude is the sum of the absolute
//! values of the terms (the reference run on `|x|`, `|w|`, `|b|`): f32 rounding grows with it, not with
//! a result that cancels. Without a workspace the tables run the reference kernel (bit for bit), and
//! with less scratch than they asked for they still give the right answer.

use std::sync::LazyLock;

use ember_core::ops::math::activation::Activation;
use ember_core::ops::nn::conv::{self, Conv2dParams};
use ember_core::ops::nn::conv_transpose::{self, ConvTranspose2dParams};
use ember_core::ops::nn::fully_connected::{self, FullyConnectedParams};
use ember_core::ops::nn::matmul::{self, MatMulParams};
use ember_core::ops::{In, Out};
use ember_core::{AlignedBuf, Kernels, OpKind, Parallel, Workspace, REFERENCE};
use ember_cpu::{Isa, ThreadPool};
use ember_testkit::layer::{
    conv2d_params, conv_output_len, conv_transpose2d_params, conv_window, fitting_len,
};
use proptest::prelude::*;

/// An op with its parameters.
#[derive(Clone, Copy, Debug)]
enum Op {
    Conv(Conv2dParams),
    ConvTranspose(ConvTranspose2dParams),
    FullyConnected(FullyConnectedParams),
    MatMul,
}

/// One call: the op, its input dims and values (`x`, `w`, and a bias for the layers), the output dims.
#[derive(Clone, Debug)]
struct Case {
    op: Op,
    dims: Vec<Vec<usize>>,
    data: Vec<Vec<f32>>,
    y: Vec<usize>,
}

impl Case {
    fn kind(&self) -> OpKind {
        match self.op {
            Op::Conv(p) => OpKind::Conv2d(p),
            Op::ConvTranspose(p) => OpKind::ConvTranspose2d(p),
            Op::FullyConnected(p) => OpKind::FullyConnected(p),
            Op::MatMul => OpKind::MatMul(MatMulParams {}),
        }
    }

    /// The same op without its activation, on the absolute values: the sum of the terms' magnitudes.
    fn magnitude(&self) -> Case {
        let op = match self.op {
            Op::Conv(p) => Op::Conv(Conv2dParams {
                act: Activation::None,
                ..p
            }),
            Op::ConvTranspose(p) => Op::ConvTranspose(ConvTranspose2dParams {
                act: Activation::None,
                ..p
            }),
            Op::FullyConnected(_) => Op::FullyConnected(FullyConnectedParams {
                act: Activation::None,
            }),
            Op::MatMul => Op::MatMul,
        };
        let data = self
            .data
            .iter()
            .map(|d| d.iter().map(|v| v.abs()).collect())
            .collect();
        Case {
            op,
            data,
            ..self.clone()
        }
    }

    fn validate(&self) -> Result<(), ember_core::Error> {
        let (x, w, y) = (&self.dims[0][..], &self.dims[1][..], &self.y[..]);
        let b = self.dims.get(2).map(|b| &b[..]);
        match self.op {
            Op::Conv(p) => conv::validate(&p, x, w, b, y),
            Op::ConvTranspose(p) => conv_transpose::validate(&p, x, w, b, y),
            Op::FullyConnected(p) => fully_connected::validate(&p, x, w, b, y),
            Op::MatMul => matmul::validate(&MatMulParams {}, x, w, y),
        }
    }

    /// Runs the op with `kernels` and `ws`.
    fn run(&self, kernels: &Kernels, ws: Option<&mut Workspace<'_>>) -> Vec<f32> {
        let mut y = vec![f32::NAN; self.y.iter().product()];
        let input = |i: usize| In {
            data: &self.data[i],
            dims: &self.dims[i],
        };
        let b = self.data.get(2).map(|b| &b[..]);
        let out = Out {
            data: &mut y,
            dims: &self.y,
        };
        match self.op {
            Op::Conv(p) => (kernels.conv2d)(&p, input(0), input(1), b, out, ws),
            Op::ConvTranspose(p) => (kernels.conv_transpose2d)(&p, input(0), input(1), b, out, ws),
            Op::FullyConnected(p) => (kernels.fully_connected)(&p, input(0), input(1), b, out, ws),
            Op::MatMul => (kernels.matmul)(&MatMulParams {}, input(0), input(1), out, ws),
        }
        y
    }

    /// Scratch bytes `kernels` asks for with `workers` workers.
    fn scratch(&self, kernels: &Kernels, workers: usize) -> usize {
        let dims: Vec<&[usize]> = self.dims.iter().map(|d| &d[..]).collect();
        kernels
            .scratch
            .map_or(0, |f| f(&self.kind(), &dims, &self.y, workers))
    }
}

static POOLS: LazyLock<[ThreadPool; 2]> =
    LazyLock::new(|| [ThreadPool::new(2).unwrap(), ThreadPool::new(3).unwrap()]);

/// Runs `case` on every level's table, as the module documentation says.
fn check(case: &Case) -> Result<(), TestCaseError> {
    prop_assert!(case.validate().is_ok(), "{:?}", case.validate());
    let want = case.run(&REFERENCE, None);
    let magnitude = case.magnitude().run(&REFERENCE, None);
    let [two, three] = &*POOLS;
    for isa in Isa::supported() {
        let kernels = ember_cpu::table(isa);
        let mut first: Option<Vec<f32>> = None;
        for par in [None, Some(two as &dyn Parallel), Some(three)] {
            let workers = par.map_or(1, |p| p.workers());
            let mut scratch = AlignedBuf::zeroed(case.scratch(kernels, workers));
            let got = case.run(
                kernels,
                Some(&mut Workspace::new(scratch.as_mut_bytes(), par)),
            );
            close(&got, &want, &magnitude, isa, workers)?;
            match &first {
                None => first = Some(got),
                Some(f) => prop_assert!(
                    f.iter().zip(&got).all(|(a, b)| a.to_bits() == b.to_bits()),
                    "{isa}: {workers} workers differ from one"
                ),
            }
        }
        // No workspace: the reference kernel.
        let got = case.run(kernels, None);
        prop_assert!(
            got.iter()
                .zip(&want)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "{isa}: no workspace"
        );
        // Less scratch than asked for (sized for one worker, used with three).
        let need = case.scratch(kernels, 1);
        for len in [need.saturating_sub(4), need / 2] {
            let mut scratch = AlignedBuf::zeroed(len);
            let ws = Workspace::new(scratch.as_mut_bytes(), Some(three as &dyn Parallel));
            let got = case.run(kernels, Some(&mut { ws }));
            close(&got, &want, &magnitude, isa, 3)?;
        }
    }
    Ok(())
}

fn close(
    got: &[f32],
    want: &[f32],
    magnitude: &[f32],
    isa: Isa,
    workers: usize,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len());
    for (i, ((&g, &w), &m)) in got.iter().zip(want).zip(magnitude).enumerate() {
        let tol = 1e-5 * w.abs().max(m).max(1.0);
        prop_assert!(
            (g - w).abs() <= tol,
            "{} on {} workers: output {}: got {}, want {} (tolerance {})",
            isa,
            workers,
            i,
            g,
            w,
            tol
        );
    }
    Ok(())
}

/// Values in -1..1.
fn values(n: usize) -> impl Strategy<Value = Vec<f32>> {
    proptest::collection::vec(-1.0f32..1.0, n)
}

fn activation() -> impl Strategy<Value = Activation> {
    prop_oneof![
        Just(Activation::None),
        Just(Activation::Relu),
        Just(Activation::Relu6),
        (-1.0f32..0.0, 0.0f32..1.0).prop_map(|(min, max)| Activation::Clip { min, max }),
    ]
}

/// Values for `dims` (and a bias of `bias` values when given).
fn with_values(op: Op, dims: Vec<Vec<usize>>, y: Vec<usize>) -> impl Strategy<Value = Case> {
    let data: Vec<_> = dims.iter().map(|d| values(d.iter().product())).collect();
    data.prop_map(move |data| Case {
        op,
        dims: dims.clone(),
        data,
        y: y.clone(),
    })
}

/// Output length of a convolution along one axis, if the dilated kernel fits.
/// Channels: plain (groups 1), depthwise with a multiplier, or grouped: `(groups, IC / g, OC / g)`.
fn channels() -> impl Strategy<Value = (u16, usize, usize)> {
    prop_oneof![
        3 => (1usize..=40, 1usize..=40).prop_map(|(ic, oc)| (1u16, ic, oc)),
        2 => (1u16..=40, 1usize..=3).prop_map(|(c, m)| (c, 1, m)),
        1 => (2u16..=3, 1usize..=6, 1usize..=6),
    ]
}

fn conv_case() -> impl Strategy<Value = Case> {
    let kernel = conv_window(5);
    let pads = prop_oneof![1 => Just([0u16; 4]), 3 => prop::array::uniform4(0u16..=2)];
    (
        1usize..=2,
        channels(),
        kernel,
        pads,
        0usize..=8,
        0usize..=8,
        any::<bool>(),
        activation(),
    )
        .prop_filter_map(
            "the dilated kernel fits",
            |(n, (groups, icg, ocg), (kh, kw, sh, sw, dh, dw), pads, eh, ew, bias, act)| {
                let [pt, pl, pb, pr] = pads;
                let g = usize::from(groups);
                let h = fitting_len(kh, dh, pt + pb) + eh;
                let w = fitting_len(kw, dw, pl + pr) + ew;
                let oh = conv_output_len(h, kh, sh, dh, (pt, pb))?;
                let ow = conv_output_len(w, kw, sw, dw, (pl, pr))?;
                let p = conv2d_params((sh, sw), (dh, dw), pads, groups, act);
                let mut dims = vec![vec![n, h, w, g * icg], vec![g * ocg, kh, kw, icg]];
                if bias {
                    dims.push(vec![g * ocg]);
                }
                Some((Op::Conv(p), dims, vec![n, oh, ow, g * ocg]))
            },
        )
        .prop_flat_map(|(op, dims, y)| with_values(op, dims, y))
}

/// Convolutions with few output channels, strides and dilations 1 (`ember-cpu`'s row-vector path):
/// rows of 1 to 70 pixels (whole vectors and one off), 1 to 8 output channels (one or two passes of
/// four), bands of 1 to 4 rows at a time.
fn narrow_conv_case() -> impl Strategy<Value = Case> {
    (
        1usize..=2,
        (1usize..=6, 1usize..=8),
        (1usize..=5, 1usize..=5),
        prop::array::uniform4(0u16..=2),
        (0usize..=12, 0usize..=70),
        any::<bool>(),
        activation(),
    )
        .prop_filter_map(
            "the kernel fits",
            |(n, (ic, oc), (kh, kw), pads, (eh, ew), bias, act)| {
                let [pt, pl, pb, pr] = pads;
                let h = fitting_len(kh, 1, pt + pb) + eh;
                let w = fitting_len(kw, 1, pl + pr) + ew;
                let oh = conv_output_len(h, kh, 1, 1, (pt, pb))?;
                let ow = conv_output_len(w, kw, 1, 1, (pl, pr))?;
                let p = conv2d_params((1, 1), (1, 1), pads, 1, act);
                let mut dims = vec![vec![n, h, w, ic], vec![oc, kh, kw, ic]];
                if bias {
                    dims.push(vec![oc]);
                }
                Some((Op::Conv(p), dims, vec![n, oh, ow, oc]))
            },
        )
        .prop_flat_map(|(op, dims, y)| with_values(op, dims, y))
}

fn fully_connected_case() -> impl Strategy<Value = Case> {
    let rows = prop_oneof![
        Just(vec![1usize]),
        Just(vec![]),
        (1usize..=3, 1usize..=30).prop_map(|(a, b)| vec![a, b])
    ];
    (
        rows,
        1usize..=100,
        1usize..=100,
        any::<bool>(),
        activation(),
    )
        .prop_flat_map(|(lead, k, n, bias, act)| {
            let x: Vec<usize> = lead.iter().copied().chain([k]).collect();
            let y: Vec<usize> = lead.iter().copied().chain([n]).collect();
            let mut dims = vec![x, vec![n, k]];
            if bias {
                dims.push(vec![n]);
            }
            with_values(Op::FullyConnected(FullyConnectedParams { act }), dims, y)
        })
}

fn matmul_case() -> impl Strategy<Value = Case> {
    // Per batch axis: its size and which operand broadcasts it (0: none, 1: a, 2: b); `b` may lack the
    // leading axes.
    let batch = proptest::collection::vec((1usize..=3, 0u8..3), 0..=3);
    (batch, 0usize..=3, 1usize..=40, 1usize..=40, 1usize..=40).prop_flat_map(
        |(batch, missing, m, k, n)| {
            let missing = missing.min(batch.len());
            let (mut a, mut b, mut y) = (vec![], vec![], vec![]);
            for (i, &(d, how)) in batch.iter().enumerate() {
                let in_b = i >= missing;
                a.push(if how == 1 && in_b { 1 } else { d });
                if in_b {
                    b.push(if how == 2 { 1 } else { d });
                }
                y.push(d);
            }
            a.extend([m, k]);
            b.extend([k, n]);
            y.extend([m, n]);
            with_values(Op::MatMul, vec![a, b], y)
        },
    )
}

fn conv_transpose_case() -> impl Strategy<Value = Case> {
    let kernel = conv_window(4);
    let channels = (1u16..=2, 1usize..=12, 1usize..=12);
    let pads = (prop::array::uniform4(0u16..=1), 0u16..=1, 0u16..=1);
    (
        1usize..=2,
        1usize..=6,
        1usize..=6,
        channels,
        kernel,
        pads,
        any::<bool>(),
        activation(),
    )
        .prop_filter_map(
            "the output is not empty",
            |(
                n,
                h,
                w,
                (groups, icg, ocg),
                (kh, kw, sh, sw, dh, dw),
                ([pt, pl, pb, pr], oph, opw),
                bias,
                act,
            )| {
                let full = |size: usize, k: usize, s: u16, d: u16, op: u16| {
                    usize::from(s) * (size - 1) + usize::from(op) + usize::from(d) * (k - 1) + 1
                };
                let oh = full(h, kh, sh, dh, oph)
                    .checked_sub(usize::from(pt + pb))
                    .filter(|&v| v > 0)?;
                let ow = full(w, kw, sw, dw, opw)
                    .checked_sub(usize::from(pl + pr))
                    .filter(|&v| v > 0)?;
                let g = usize::from(groups);
                let pads = [pt, pl, pb, pr];
                let p = conv_transpose2d_params((sh, sw), (dh, dw), pads, (oph, opw), groups, act);
                let mut dims = vec![vec![n, h, w, g * icg], vec![g * ocg, kh, kw, icg]];
                if bias {
                    dims.push(vec![g * ocg]);
                }
                Some((Op::ConvTranspose(p), dims, vec![n, oh, ow, g * ocg]))
            },
        )
        .prop_flat_map(|(op, dims, y)| with_values(op, dims, y))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn conv2d_matches_reference(case in conv_case()) {
        check(&case)?;
    }
    #[test]
    fn conv2d_with_few_output_channels_matches_reference(case in narrow_conv_case()) {
        check(&case)?;
    }
    #[test]
    fn fully_connected_matches_reference(case in fully_connected_case()) {
        check(&case)?;
    }
    #[test]
    fn matmul_matches_reference(case in matmul_case()) {
        check(&case)?;
    }
    #[test]
    fn conv_transpose2d_matches_reference(case in conv_transpose_case()) {
        check(&case)?;
    }
}

/// A convolution with deterministic values.
/// Deterministic values in [-1, 1) for tensors of these dims.
fn fixed_values(dims: &[Vec<usize>]) -> Vec<Vec<f32>> {
    dims.iter()
        .enumerate()
        .map(|(i, d)| {
            (0..d.iter().product::<usize>())
                .map(|j| (((j * 7919 + i * 104_729) % 2003) as f32 / 1001.5) - 1.0)
                .collect()
        })
        .collect()
}

fn conv_fixed(x: [usize; 4], w: [usize; 4], p: Conv2dParams) -> Case {
    let (h, wd) = (x[1], x[2]);
    let oh = conv_output_len(h, w[1], p.stride_h, p.dilation_h, (p.pad_top, p.pad_bottom)).unwrap();
    let ow = conv_output_len(
        wd,
        w[2],
        p.stride_w,
        p.dilation_w,
        (p.pad_left, p.pad_right),
    )
    .unwrap();
    let dims = vec![x.to_vec(), w.to_vec(), vec![w[0]]];
    let data = fixed_values(&dims);
    Case {
        op: Op::Conv(p),
        dims,
        data,
        y: vec![x[0], oh, ow, w[0]],
    }
}

#[test]
fn model_layer_shapes_match_reference() {
    // Shapes of PP-OCRv4's layers (smaller spatially): large channel counts, 5x5 depthwise, 1x3 kernels,
    // a stride-2 stem with 3 input channels.
    let same = |k: u16, s: u16, groups: u16| {
        conv2d_params((s, s), (1, 1), [k / 2; 4], groups, Activation::Relu6)
    };
    let cases = [
        conv_fixed([1, 16, 20, 3], [16, 3, 3, 3], same(3, 2, 1)),
        conv_fixed([1, 10, 10, 96], [24, 3, 3, 96], same(3, 1, 1)),
        conv_fixed([1, 6, 20, 240], [240, 1, 1, 240], same(1, 1, 1)),
        conv_fixed([1, 6, 20, 240], [240, 5, 5, 1], same(5, 1, 240)),
        conv_fixed([1, 5, 9, 480], [480, 5, 5, 1], same(5, 2, 480)),
        conv_fixed(
            [1, 1, 12, 960],
            [60, 1, 3, 960],
            Conv2dParams {
                pad_top: 0,
                pad_bottom: 0,
                ..same(3, 1, 1)
            },
        ),
        conv_fixed([1, 1, 1, 384], [96, 1, 1, 384], same(1, 1, 1)),
        // Few output channels (the row-vector path): several bands of rows (64 channels of 66
        // values a row), split over the workers, and a second pass of channels.
        conv_fixed([1, 48, 64, 64], [2, 3, 3, 64], same(3, 1, 1)),
        conv_fixed([2, 30, 33, 5], [7, 3, 3, 5], same(3, 1, 1)),
    ];
    for case in &cases {
        check(case).unwrap();
    }
    // The detector head's transposed convolutions (2x2, stride 2; smaller spatially), large enough
    // that the scatter and the activation pass split over the workers, with a bias and a ReLU.
    for (x, oc) in [([1, 16, 16, 32], 32), ([1, 45, 37, 16], 3)] {
        let p = conv_transpose2d_params((2, 2), (1, 1), [0; 4], (0, 0), 1, Activation::Relu);
        let dims = vec![x.to_vec(), vec![oc, 2, 2, x[3]], vec![oc]];
        let case = Case {
            op: Op::ConvTranspose(p),
            data: fixed_values(&dims),
            dims,
            y: vec![1, 2 * x[1], 2 * x[2], oc],
        };
        check(&case).unwrap();
    }
}
