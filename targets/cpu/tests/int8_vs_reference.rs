//! The int8 Conv2d and FullyConnected kernels of every SIMD level this CPU runs, against
//! `ember-core`'s reference kernels: the output bytes must be identical.
//!
//! The cases reach where the SIMD kernels differ from the reference's loop: channels that are not a
//! multiple of any vector width, 1x1 (read in place), 3x3 and 5x5 (im2col) kernels, strides,
//! dilations, padding, groups, depthwise layers with and without channel multipliers, input zero points
//! over the whole int8 range, weights of -128, both rounding modes, per-tensor and per-channel
//! requantization with extreme multipliers and shifts (and now and then an invalid row, which the
//! vector output stages leave to the scalar one), biases that make the int32 accumulator wrap, and
//! fully connected layers of 0 to 6 rows (the matrix-vector and GEMM paths). Each case runs on 1, 2 and
//! 3 workers (large cases are split over them), without a workspace and with too little scratch (both
//! run the reference).

mod common;

use std::sync::LazyLock;

use common::{Entry, Reference};
use ember_core::kernels::entry;
use ember_core::ops::quant::conv::{self, QuantConv2dParams};
use ember_core::ops::quant::fully_connected::{self, QuantFullyConnectedParams};
use ember_core::ops::quant::requant::RequantRounding;
use ember_core::{AlignedBuf, Error, Kernels, OpKind, Parallel, Workspace};
use ember_cpu::{accelerated, table, variant, Isa, ThreadPool};
use ember_testkit::layer::{conv_output_len, fitting_len, quant_conv2d_params, Layer};
use proptest::prelude::*;

/// Pools of 2 and 3 workers, shared by the tests.
static POOLS: LazyLock<[ThreadPool; 2]> =
    LazyLock::new(|| [ThreadPool::new(2).unwrap(), ThreadPool::new(3).unwrap()]);

/// The SIMD levels this CPU runs.
fn levels() -> impl Iterator<Item = Isa> {
    Isa::supported().filter(|&isa| isa != Isa::Scalar)
}

/// How a kernel is called: its workers, and how much of the scratch it asks for it gets.
#[derive(Clone, Copy, Debug)]
enum Call {
    Workers(usize),
    NoWorkspace,
    ShortScratch,
}

const CALLS: [Call; 5] = [
    Call::Workers(1),
    Call::Workers(2),
    Call::Workers(3),
    Call::NoWorkspace,
    Call::ShortScratch,
];

/// Runs `f` with the workspace `call` describes for an op of `kind` on these dims at level `isa`.
fn with_workspace(
    isa: Isa,
    call: Call,
    kind: &OpKind,
    inputs: &[&[usize]],
    output: &[usize],
    f: impl FnOnce(Option<&mut Workspace<'_>>),
) {
    let parallel: Option<&dyn Parallel> = match call {
        Call::Workers(2) => Some(&POOLS[0]),
        Call::Workers(3) => Some(&POOLS[1]),
        _ => None,
    };
    let workers = parallel.map_or(1, |p| p.workers());
    let scratch = table(isa)
        .scratch
        .map_or(0, |s| s(kind, inputs, output, workers));
    let bytes = match call {
        Call::ShortScratch => scratch / 2,
        _ => scratch,
    };
    // Not zeroed: the kernels must not rely on the scratch's content.
    let mut buf = AlignedBuf::zeroed(bytes);
    buf.as_mut_bytes().fill(0xA5);
    match call {
        Call::NoWorkspace => f(None),
        _ => f(Some(&mut Workspace::new(buf.as_mut_bytes(), parallel))),
    }
}

/// A requantization row: usually a typical multiplier and shift, now and then an extreme or invalid
/// one.
fn requant_row() -> impl Strategy<Value = [i32; 2]> {
    let multiplier = prop_oneof![
        8 => (1i32 << 30)..i32::MAX,
        1 => Just(i32::MAX),
        1 => Just(1i32 << 30),
        1 => Just(0i32),
        1 => 0i32..(1 << 30),
    ];
    let shift = prop_oneof![
        8 => -14i32..=0,
        2 => -31i32..=30,
        1 => Just(-31i32),
        1 => Just(30i32),
    ];
    prop_oneof![
        40 => (multiplier, shift).prop_map(|(m, s)| [m, s]),
        1 => (i32::MIN..0, -31i32..=30).prop_map(|(m, s)| [m, s]),
        1 => ((1i32 << 30)..i32::MAX, prop_oneof![-62i32..-31, 31i32..40]).prop_map(|(m, s)| [m, s]),
    ]
}

/// `[rows, 2]` requantization rows for `channels` channels: one row (per-tensor) or one per channel.
fn requant(channels: usize) -> impl Strategy<Value = Vec<i32>> {
    prop_oneof![
        1 => requant_row().prop_map(|r| r.to_vec()),
        3 => proptest::collection::vec(requant_row(), channels).prop_map(|rows| rows.concat()),
    ]
}

/// A bias: none, typical, or anything (the accumulator then wraps).
fn bias(channels: usize) -> impl Strategy<Value = Option<Vec<i32>>> {
    prop_oneof![
        1 => Just(None),
        2 => proptest::collection::vec(-50_000i32..50_000, channels).prop_map(Some),
        1 => proptest::collection::vec(any::<i32>(), channels).prop_map(Some),
    ]
}

/// Output zero point, fused activation bounds (now and then crossed) and rounding.
fn output_stage() -> impl Strategy<Value = (i8, i8, i8, RequantRounding)> {
    let rounding = prop_oneof![Just(RequantRounding::Double), Just(RequantRounding::Single)];
    let act = prop_oneof![
        3 => Just((i8::MIN, i8::MAX)),
        2 => any::<i8>().prop_map(|lo| (lo, i8::MAX)),
        2 => (any::<i8>(), any::<i8>()).prop_map(|(a, b)| (a.min(b), a.max(b))),
        1 => (any::<i8>(), any::<i8>()),
    ];
    (any::<i8>(), act, rounding).prop_map(|(zp, (lo, hi), r)| (zp, lo, hi, r))
}

/// An int8 convolution; `q` holds its `[rows, 2]` requantization.
type ConvCase = Layer<QuantConv2dParams, i8, i32, Vec<i32>>;

/// An int8 fully connected layer; `q` holds its `[rows, 2]` requantization.
type FcCase = Layer<QuantFullyConnectedParams, i8, i32, Vec<i32>, Vec<usize>, [usize; 2]>;

/// A valid layer `c` of `kind` (`verdict` is its `validate`) through the kernel `entry` of every SIMD
/// level's table, under every call, gives the reference kernel's bytes.
fn check_layer<P, D: AsRef<[usize]>, WD: AsRef<[usize]>>(
    c: &Layer<P, i8, i32, Vec<i32>, D, WD>,
    (kind, verdict): (OpKind, Result<(), Error>),
    reference: Reference<P>,
    entry: fn(&Kernels) -> Entry<P>,
) -> Result<(), TestCaseError> {
    prop_assert_eq!(verdict, Ok(()));
    let rq = &c.q[..];
    let want = c.run(0x55, |x, w, b, y| reference(&c.p, x, w, b, rq, y));
    let rq_dims = [rq.len() / 2, 2];
    let b_dims = c.b_dims();
    let mut inputs: Vec<&[usize]> = vec![c.x_dims.as_ref(), c.w_dims.as_ref(), &rq_dims];
    inputs.extend(b_dims.as_ref().map(|d| &d[..]));
    for isa in levels() {
        let kernel = entry(table(isa));
        for call in CALLS {
            let mut got = Vec::new();
            with_workspace(isa, call, &kind, &inputs, c.y_dims.as_ref(), |ws| {
                got = c.run(0x55, |x, w, b, y| kernel(&c.p, x, w, b, rq, y, ws));
            });
            prop_assert!(got == want, "{isa} {call:?}: got {got:?}\nwant {want:?}");
        }
    }
    Ok(())
}

/// [`check_layer`] for a convolution.
fn check_conv(c: &ConvCase) -> Result<(), TestCaseError> {
    let (b_dims, rq_dims) = (c.b_dims(), [c.q.len() / 2, 2]);
    let b_dims = b_dims.as_ref().map(|d| &d[..]);
    let verdict = conv::validate(&c.p, &c.x_dims, &c.w_dims, b_dims, &rq_dims, &c.y_dims);
    let kind = (OpKind::QuantConv2d(c.p), verdict);
    check_layer(c, kind, conv::conv2d, |k| k.quant_conv2d)
}

/// [`check_layer`] for a fully connected layer.
fn check_fc(c: &FcCase) -> Result<(), TestCaseError> {
    let (b_dims, rq_dims) = (c.b_dims(), [c.q.len() / 2, 2]);
    let b_dims = b_dims.as_ref().map(|d| &d[..]);
    let verdict =
        fully_connected::validate(&c.p, &c.x_dims, &c.w_dims, b_dims, &rq_dims, &c.y_dims);
    let kind = (OpKind::QuantFullyConnected(c.p), verdict);
    check_layer(c, kind, fully_connected::fully_connected, |k| {
        k.quant_fully_connected
    })
}

/// The kind of convolution.
#[derive(Clone, Copy, Debug)]
enum Layout {
    /// `groups` groups of `icg` inputs and `ocg` outputs.
    Grouped {
        groups: usize,
        icg: usize,
        ocg: usize,
    },
    /// `c` channels, `multiplier` outputs each.
    Depthwise { c: usize, multiplier: usize },
}

fn layout(scale: usize) -> impl Strategy<Value = Layout> {
    let ch = move |max: usize| 1..=max * scale;
    prop_oneof![
        4 => (ch(20), ch(40)).prop_map(|(icg, ocg)| Layout::Grouped { groups: 1, icg, ocg }),
        1 => (2usize..=3, ch(8), ch(20)).prop_map(|(groups, icg, ocg)| Layout::Grouped { groups, icg, ocg }),
        3 => ch(40).prop_map(|c| Layout::Depthwise { c, multiplier: 1 }),
        1 => (ch(12), 2usize..=3).prop_map(|(c, multiplier)| Layout::Depthwise { c, multiplier }),
    ]
}

/// A valid convolution; `scale` multiplies the channel counts and the input size.
fn conv_case(scale: usize) -> impl Strategy<Value = ConvCase> {
    let kernel =
        prop_oneof![4 => Just(1usize), 4 => Just(3usize), 2 => Just(5usize), 1 => 1usize..=7];
    let geometry = (
        1usize..=2,
        (kernel.clone(), kernel),
        (1u16..=3, 1u16..=3),
        (
            prop_oneof![3 => Just(1u16), 1 => 2u16..=3],
            prop_oneof![3 => Just(1u16), 1 => 2u16..=3],
        ),
        prop::array::uniform4(prop_oneof![2 => Just(0u16), 2 => 1u16..=2, 1 => 3u16..=4]),
        (0..=6 * scale, 0..=6 * scale),
    );
    (layout(scale), geometry, output_stage(), any::<i8>()).prop_flat_map(
        move |(layout, (n, (kh, kw), (sh, sw), (dh, dw), pads, (eh, ew)), stage, x_zp)| {
            let (groups, icg, oc) = match layout {
                Layout::Grouped { groups, icg, ocg } => (groups, icg, groups * ocg),
                Layout::Depthwise { c, multiplier } => (c, 1, c * multiplier),
            };
            let [pt, pl, pb, pr] = pads;
            let h = fitting_len(kh, dh, pt + pb) + eh;
            let w = fitting_len(kw, dw, pl + pr) + ew;
            let fits = "the input fits the kernel";
            let oh = conv_output_len(h, kh, sh, dh, (pt, pb)).expect(fits);
            let ow = conv_output_len(w, kw, sw, dw, (pl, pr)).expect(fits);
            let (zp, act_min, act_max, rounding) = stage;
            let p = QuantConv2dParams {
                x_zero_point: x_zp,
                y_zero_point: zp,
                act_min,
                act_max,
                rounding,
                ..quant_conv2d_params((sh, sw), (dh, dw), pads, groups as u16)
            };
            let x_dims = [n, h, w, groups * icg];
            let w_dims = [oc, kh, kw, icg];
            let y_dims = [n, oh, ow, oc];
            (
                proptest::collection::vec(any::<i8>(), x_dims.iter().product::<usize>()),
                proptest::collection::vec(any::<i8>(), w_dims.iter().product::<usize>()),
                bias(oc),
                requant(oc),
            )
                .prop_map(move |(x, w, b, q)| ConvCase {
                    p,
                    x_dims,
                    w_dims,
                    y_dims,
                    x,
                    w,
                    b,
                    q,
                })
        },
    )
}

/// A valid fully connected layer: `rows` rows (as `[rows, IN]`, or `[IN]` for one), `inputs` inputs
/// and `outputs` outputs at most.
fn fc_case(rows: usize, inputs: usize, outputs: usize) -> impl Strategy<Value = FcCase> {
    (
        0..=rows,
        0..=inputs,
        1..=outputs,
        any::<bool>(),
        output_stage(),
        any::<i8>(),
    )
        .prop_flat_map(
            |(rows, inputs, outputs, flat, (zp, act_min, act_max, rounding), x_zp)| {
                let (x_dims, y_dims) = if flat && rows == 1 {
                    (vec![inputs], vec![outputs])
                } else {
                    (vec![rows, inputs], vec![rows, outputs])
                };
                let p = QuantFullyConnectedParams {
                    x_zero_point: x_zp,
                    y_zero_point: zp,
                    act_min,
                    act_max,
                    rounding,
                };
                (
                    proptest::collection::vec(any::<i8>(), rows * inputs),
                    proptest::collection::vec(any::<i8>(), inputs * outputs),
                    bias(outputs),
                    requant(outputs),
                )
                    .prop_map(move |(x, w, b, q)| FcCase {
                        p,
                        x_dims: x_dims.clone(),
                        w_dims: [outputs, inputs],
                        y_dims: y_dims.clone(),
                        x,
                        w,
                        b,
                        q,
                    })
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]
    #[test]
    fn conv2d_matches_reference(case in conv_case(1)) {
        check_conv(&case)?;
    }
    #[test]
    fn fully_connected_matches_reference(case in fc_case(6, 70, 40)) {
        check_fc(&case)?;
    }
}

proptest! {
    // Layers large enough to be split over 2 and 3 workers.
    #![proptest_config(ProptestConfig::with_cases(6))]
    #[test]
    fn large_conv2d_matches_reference(case in conv_case(3)) {
        check_conv(&case)?;
    }
    #[test]
    fn large_fully_connected_matches_reference(case in fc_case(12, 600, 400)) {
        check_fc(&case)?;
    }
}

/// Fixed layers the benchmark measures, and a few more, large enough for every worker count.
#[test]
fn typical_layers_match_reference() {
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let rq = |c: usize| {
        (0..c as i32)
            .flat_map(|i| [(1 << 30) + (i * 654_321) % (1 << 30), -9 - i % 3])
            .collect::<Vec<i32>>()
    };
    let data = |n: usize, runner: &mut proptest::test_runner::TestRunner| {
        use proptest::strategy::ValueTree;
        proptest::collection::vec(any::<i8>(), n)
            .new_tree(runner)
            .unwrap()
            .current()
    };
    let geometry = |k: usize, groups: usize, stride: u16, x_zero_point: i8| QuantConv2dParams {
        x_zero_point,
        y_zero_point: -3,
        ..quant_conv2d_params((stride, stride), (1, 1), [(k / 2) as u16; 4], groups as u16)
    };
    // (size, IC, OC, kernel, groups, stride)
    let layers = [
        (40, 48, 48, 1, 1, 1),
        (20, 96, 96, 3, 1, 1),
        (40, 48, 48, 3, 48, 1),
        (21, 35, 35, 5, 35, 2),
        (17, 24, 40, 3, 1, 2),
    ];
    for (i, &(size, ic, oc, k, groups, stride)) in layers.iter().enumerate() {
        let mut p = geometry(k, groups, stride, [-128, 5, 127, 0, -7][i]);
        p.rounding = [RequantRounding::Double, RequantRounding::Single][i % 2];
        let out = (size + 2 * (k / 2) - k) / usize::from(stride) + 1;
        let x_dims = [1, size, size, ic];
        let w_dims = [oc, k, k, ic / groups];
        let case = ConvCase {
            p,
            x_dims,
            w_dims,
            y_dims: [1, out, out, oc],
            x: data(x_dims.iter().product(), &mut runner),
            w: data(w_dims.iter().product(), &mut runner),
            b: Some((0..oc as i32).map(|i| i * 1000 - 20_000).collect()),
            q: rq(oc),
        };
        check_conv(&case).unwrap();
    }
    let fc = FcCase {
        p: QuantFullyConnectedParams {
            x_zero_point: -100,
            y_zero_point: 7,
            act_min: -128,
            act_max: 127,
            rounding: RequantRounding::Single,
        },
        x_dims: vec![1, 1024],
        w_dims: [1024, 1024],
        y_dims: vec![1, 1024],
        x: data(1024, &mut runner),
        w: data(1024 * 1024, &mut runner),
        b: None,
        q: rq(1024),
    };
    check_fc(&fc).unwrap();
}

/// Inputs and weights at the ends of the int8 range, where 16-bit pair sums would overflow: two
/// products of `-128 * -128` are 32768.
#[test]
fn extreme_values_match_reference() {
    for (xv, wv, x_zero_point) in [
        (-128i8, -128i8, 0i8),
        (-128, -128, 127),
        (127, 127, -128),
        (-128, 127, 5),
    ] {
        for (k, ic, oc, groups) in [
            (1, 64, 24, 1),
            (3, 40, 17, 1),
            (3, 24, 24, 24),
            (1, 300, 5, 1),
        ] {
            let x_dims = [1, 6, 7, ic];
            let w_dims = [oc, k, k, ic / groups];
            let pad = (k / 2) as u16;
            let case = ConvCase {
                p: QuantConv2dParams {
                    x_zero_point,
                    ..quant_conv2d_params((1, 1), (1, 1), [pad; 4], groups as u16)
                },
                x_dims,
                w_dims,
                y_dims: [1, 6, 7, oc],
                x: vec![xv; x_dims.iter().product()],
                w: vec![wv; w_dims.iter().product()],
                b: None,
                // Scaled down enough that the sums show in the output.
                q: vec![1 << 30, -20],
            };
            check_conv(&case).unwrap();
        }
    }
}

/// Each level's table holds its own int8 Conv2d and FullyConnected kernels exactly where `accelerated`
/// and `variant` say so: the SIMD levels of this architecture.
#[test]
fn tables_hold_the_int8_kernels_they_report() {
    let conv = OpKind::QuantConv2d(quant_conv2d_params((1, 1), (1, 1), [0; 4], 1));
    let simd_here = |isa: Isa| match isa {
        Isa::Sse2 | Isa::Avx2 | Isa::Avx512 => cfg!(target_arch = "x86_64"),
        Isa::Neon | Isa::NeonDotprod => cfg!(target_arch = "aarch64"),
        Isa::Scalar => false,
    };
    let reference = &ember_core::REFERENCE;
    for isa in Isa::ALL {
        let k = table(isa);
        let own_conv = !std::ptr::fn_addr_eq(k.quant_conv2d, reference.quant_conv2d);
        let own_fc =
            !std::ptr::fn_addr_eq(k.quant_fully_connected, reference.quant_fully_connected);
        let bits = accelerated(isa) & (entry::QUANT_CONV2D | entry::QUANT_FULLY_CONNECTED);
        assert_eq!(
            (own_conv, own_fc),
            (simd_here(isa), simd_here(isa)),
            "{isa}"
        );
        assert_eq!(bits != 0, simd_here(isa), "{isa}");
        assert_eq!(variant(isa, &conv) != "reference", simd_here(isa), "{isa}");
    }
}
