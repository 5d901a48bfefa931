//! The DSP kernels against the reference kernels, byte for byte, on shapes the shared int8 suite does not
//! reach: many input channels per group (the per-tap path of grouped and dilated convolutions), long
//! kernel rows, odd channel counts (the unpaired last channel), long fully connected rows (the four-wide
//! steps and their tails), receptive fields too large for the gather buffer. Parameters are anything
//! the reference's `validate` accepts.

use ember_core::ops::quant::conv::{self as ref_conv, QuantConv2dParams};
use ember_core::ops::quant::fully_connected::{self as ref_fc, QuantFullyConnectedParams};
use ember_core::ops::{In, Out};
use ember_cortex_m::ops::quant::{conv, fully_connected};
use ember_testkit::layer::{conv_output_len, conv_window, Layer};
use ember_testkit::ops_int8::rounding;
use proptest::prelude::*;

/// An int8 convolution kernel as both crates write it (without the table's `Workspace`).
type ConvFn = fn(&QuantConv2dParams, In<'_, i8>, In<'_, i8>, Option<&[i32]>, &[i32], Out<'_, i8>);
/// An int8 fully connected kernel as both crates write it.
type FcFn =
    fn(&QuantFullyConnectedParams, In<'_, i8>, In<'_, i8>, Option<&[i32]>, &[i32], Out<'_, i8>);

/// `channels` requantization rows (or one), valid: multiplier in `[2^30, 2^31)`, shift in `-12..=2`.
fn requant(channels: usize) -> impl Strategy<Value = Vec<i32>> {
    (
        prop::bool::weighted(0.2),
        prop::collection::vec(((1i32 << 30)..=i32::MAX, -12i32..=2), channels),
    )
        .prop_map(|(per_tensor, rows)| {
            let n = if per_tensor { 1 } else { rows.len() };
            rows[..n].iter().flat_map(|&(m, s)| [m, s]).collect()
        })
}

fn bytes(n: usize) -> impl Strategy<Value = Vec<i8>> {
    prop::collection::vec(any::<i8>(), n)
}

/// An int8 convolution; `q` holds its `[rows, 2]` requantization.
type ConvCase = Layer<QuantConv2dParams, i8, i32, Vec<i32>>;

/// An int8 fully connected layer; `q` holds its `[rows, 2]` requantization.
type FcCase = Layer<QuantFullyConnectedParams, i8, i32, Vec<i32>, [usize; 2], [usize; 2]>;

fn conv_case() -> impl Strategy<Value = ConvCase> {
    conv_case_with((1u16..=3, 1usize..=12, 1usize..=9))
}

/// Receptive fields (`KH * KW * IC`) around and over the kernel's 1 KiB gather buffer.
fn wide_conv_case() -> impl Strategy<Value = ConvCase> {
    conv_case_with((Just(1u16), 100usize..=140, 1usize..=3))
}

/// A convolution with `groups`, input channels per group and output channels per group from `channels`.
fn conv_case_with(
    channels: (
        impl Strategy<Value = u16>,
        impl Strategy<Value = usize>,
        impl Strategy<Value = usize>,
    ),
) -> impl Strategy<Value = ConvCase> {
    (
        (1usize..=2, channels.0, channels.1, channels.2),
        conv_window(4),
        (0u16..=2, 0u16..=2, 0u16..=2, 0u16..=2),
        (0usize..=4, 0usize..=4),
        (any::<i8>(), any::<i8>(), any::<i8>(), any::<i8>()),
        rounding(),
    )
        .prop_flat_map(
            |((n, groups, icg, ocg), (kh, kw, sh, sw, dh, dw), pads, extra, zps, rounding)| {
                let g = usize::from(groups);
                let h = (usize::from(dh) * (kh - 1) + 1 + extra.0).max(1);
                let w = (usize::from(dw) * (kw - 1) + 1 + extra.1).max(1);
                let p = QuantConv2dParams {
                    stride_h: sh,
                    stride_w: sw,
                    dilation_h: dh,
                    dilation_w: dw,
                    pad_top: pads.0,
                    pad_left: pads.1,
                    pad_bottom: pads.2,
                    pad_right: pads.3,
                    groups,
                    x_zero_point: zps.0,
                    y_zero_point: zps.1,
                    act_min: zps.2.min(zps.3),
                    act_max: zps.2.max(zps.3),
                    rounding,
                };
                let oh = conv_output_len(h, kh, sh, dh, (pads.0, pads.2)).unwrap_or(0);
                let ow = conv_output_len(w, kw, sw, dw, (pads.1, pads.3)).unwrap_or(0);
                let x_dims = [n, h, w, g * icg];
                let w_dims = [g * ocg, kh, kw, icg];
                let y_dims = [n, oh, ow, g * ocg];
                (
                    bytes(x_dims.iter().product()),
                    bytes(w_dims.iter().product()),
                    prop::option::of(prop::collection::vec(-100_000i32..100_000, g * ocg)),
                    requant(g * ocg),
                )
                    .prop_map(move |(x, wv, b, q)| ConvCase {
                        p,
                        x_dims,
                        w_dims,
                        y_dims,
                        x,
                        w: wv,
                        b,
                        q,
                    })
            },
        )
}

fn run_conv(f: ConvFn, c: &ConvCase) -> Vec<i8> {
    c.run(0, |x, w, b, y| f(&c.p, x, w, b, &c.q, y))
}

fn fc_case() -> impl Strategy<Value = FcCase> {
    (
        1usize..=3,
        1usize..=70,
        1usize..=9,
        any::<(i8, i8, i8, i8)>(),
        rounding(),
    )
        .prop_flat_map(|(rows, inputs, outputs, zps, rounding)| {
            let p = QuantFullyConnectedParams {
                x_zero_point: zps.0,
                y_zero_point: zps.1,
                act_min: zps.2.min(zps.3),
                act_max: zps.2.max(zps.3),
                rounding,
            };
            (
                bytes(rows * inputs),
                bytes(outputs * inputs),
                prop::option::of(prop::collection::vec(-100_000i32..100_000, outputs)),
                requant(outputs),
            )
                .prop_map(move |(x, w, b, q)| FcCase {
                    p,
                    x_dims: [rows, inputs],
                    w_dims: [outputs, inputs],
                    y_dims: [rows, outputs],
                    x,
                    w,
                    b,
                    q,
                })
        })
}

fn run_fc(f: FcFn, c: &FcCase) -> Vec<i8> {
    c.run(0, |x, w, b, y| f(&c.p, x, w, b, &c.q, y))
}

proptest! {
    // A few cases under Miri (`cargo xtask miri`), which checks the DSP emulation's unsafe code.
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 512 }))]

    #[test]
    fn conv2d_gives_the_reference_bytes(c in conv_case()) {
        let requant_dims = [c.q.len() / 2, 2];
        let b_dims = c.b_dims();
        prop_assume!(ref_conv::validate(
            &c.p, &c.x_dims, &c.w_dims, b_dims.as_ref().map(|d| &d[..]), &requant_dims, &c.y_dims
        ).is_ok());
        prop_assert_eq!(run_conv(conv::conv2d, &c), run_conv(ref_conv::conv2d, &c));
    }

    #[test]
    fn conv2d_over_wide_fields_gives_the_reference_bytes(c in wide_conv_case()) {
        prop_assert_eq!(run_conv(conv::conv2d, &c), run_conv(ref_conv::conv2d, &c));
    }

    #[test]
    fn fully_connected_gives_the_reference_bytes(c in fc_case()) {
        prop_assert_eq!(
            run_fc(fully_connected::fully_connected, &c),
            run_fc(ref_fc::fully_connected, &c)
        );
    }
}
