//! Convolution kernels: conv2d, plain, grouped and depthwise.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::nn::conv::{self, Conv2dParams};
use ember_core::ops::In;
use ember_core::{Error, Kernels, OpKind};
use proptest::prelude::*;

use crate::edge::validate_agrees;
use crate::layer::{
    conv2d_geometry_is_valid, conv2d_params, conv2d_terms, conv_output_len, conv_window,
    fitting_len, grouped_dims, odd_layer_mistakes, Layer,
};

use super::{
    activate, activation, assert_close, assert_known, assert_rejects_changes,
    assert_rejects_layer_mistakes, bias_per_channel, layer_with_values, mostly_positive,
    odd_padding, Want,
};

/// A convolution: NHWC input, OHWI weights, optional bias.
pub type ConvCase = Layer<Conv2dParams, f32, f32>;

/// `conv::validate` of a case.
fn validate(c: &ConvCase) -> Result<(), Error> {
    c.validate_with(|x, w, b, y| conv::validate(&c.p, x, w, b, y))
}

/// Runs the table's conv2d on a case, with the scratch the table asks for.
fn run(k: &Kernels, c: &ConvCase) -> Vec<f32> {
    c.run_with_scratch(k, OpKind::Conv2d(c.p), k.conv2d)
}

/// A valid convolution: groups 1 to 3 (with one input channel per group, depthwise, possibly with a
/// channel multiplier), kernels 1 to 4, strides 1 to 3, dilations 1 to 2, paddings 0 to 2, and an input
/// just large enough for the dilated kernel plus 0 to 3.
pub fn conv2d_case() -> impl Strategy<Value = ConvCase> {
    let channels = (1usize..=2, 1u16..=3, 1usize..=3, 1usize..=3); // batch, groups, IC/g, OC/g
    let kernel = conv_window(4);
    let padding = (prop::array::uniform4(0u16..=2), 0usize..4, 0usize..4);
    (channels, kernel, padding, any::<bool>(), activation()).prop_flat_map(
        |((n, groups, icg, ocg), (kh, kw, sh, sw, dh, dw), (pads, extra_h, extra_w), bias, act)| {
            let [pad_top, pad_left, pad_bottom, pad_right] = pads;
            let p = conv2d_params((sh, sw), (dh, dw), pads, groups, act);
            // Smallest input the dilated kernel fits in, plus some.
            let h = fitting_len(kh, dh, pad_top + pad_bottom) + extra_h;
            let w = fitting_len(kw, dw, pad_left + pad_right) + extra_w;
            let oh = conv_output_len(h, kh, sh, dh, (pad_top, pad_bottom)).unwrap_or(0);
            let ow = conv_output_len(w, kw, sw, dw, (pad_left, pad_right)).unwrap_or(0);
            let dims = (n, h, w, icg, ocg);
            let [x_dims, w_dims, y_dims] =
                grouped_dims(dims, (kh, kw), (oh, ow), groups, (None, false));
            layer_with_values(p, x_dims, w_dims, y_dims, bias)
        },
    )
}

/// Convolution by its definition: each output is the sum over the kernel window and the input channels
/// of its group, of input times weight, zero outside the input.
fn conv2d_definition(c: &ConvCase) -> Vec<Want> {
    let mut y = bias_per_channel(c.b.as_deref(), &c.y_dims);
    conv2d_terms(&c.p, c.x_dims, c.w_dims, c.y_dims, |y_at, x_at, w_at| {
        y[y_at].add(f64::from(c.x[x_at]) * f64::from(c.w[w_at]));
    });
    y.into_iter().map(|v| activate(c.p.act, v)).collect()
}

/// The table's conv2d kernel against the definition.
pub fn check_conv2d(k: &Kernels, c: &ConvCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(validate(c), Ok(()));
    assert_close(&run(k, c), &conv2d_definition(c))
}

/// Odd convolutions: any dim may be 0, stride, dilation and groups may be 0, paddings may exceed the
/// kernel (windows entirely in the padding), and one output dim may be off by one.
pub fn conv2d_edge_case() -> impl Strategy<Value = ConvCase> {
    let size = |max: u16| mostly_positive(max).prop_map(usize::from);
    let dims = (size(2), size(4), size(4), size(2), size(2)); // n, h, w, IC/g, OC/g
    let p = mostly_positive;
    let kernel = (size(3), size(3), p(2), p(2), p(2), p(2), p(3)); // kh, kw, sh, sw, dh, dw, groups
    let pads = prop::array::uniform4(odd_padding());
    (dims, kernel, pads, odd_layer_mistakes(), any::<bool>()).prop_flat_map(
        |(dims, (kh, kw, sh, sw, dh, dw, groups), pads, mistakes, bias)| {
            let (_, h, w, _, _) = dims;
            let [pad_top, pad_left, pad_bottom, pad_right] = pads;
            let p = conv2d_params((sh, sw), (dh, dw), pads, groups, Activation::None);
            let out_len = |size, k, s, d, pads| {
                if k == 0 || s == 0 {
                    1
                } else {
                    conv_output_len(size, k, s, d, pads).unwrap_or(1)
                }
            };
            let oh = out_len(h, kh, sh, dh, (pad_top, pad_bottom));
            let ow = out_len(w, kw, sw, dw, (pad_left, pad_right));
            let [x_dims, w_dims, y_dims] = grouped_dims(dims, (kh, kw), (oh, ow), groups, mistakes);
            layer_with_values(p, x_dims, w_dims, y_dims, bias)
        },
    )
}

/// Whether a convolution is well-formed, by the definition: every parameter usable, and the output the
/// shape the definition produces.
fn conv2d_is_valid(c: &ConvCase) -> bool {
    conv2d_geometry_is_valid(&c.p, c.x_dims, c.w_dims, c.y_dims)
        && c.b.as_ref().is_none_or(|b| b.len() == c.w_dims[0])
}

/// `validate` agrees with the definition on odd convolutions, and whatever it accepts runs without
/// panicking and matches the definition.
pub fn check_conv2d_edge(k: &Kernels, c: &ConvCase) -> Result<(), TestCaseError> {
    let verdict = validate(c);
    if validate_agrees(&verdict, conv2d_is_valid(c))? {
        assert_close(&run(k, c), &conv2d_definition(c))?;
    }
    Ok(())
}

fn conv_params(stride: u16, pad: u16, groups: u16) -> Conv2dParams {
    conv2d_params((stride, stride), (1, 1), [pad; 4], groups, Activation::None)
}

/// Runs the table's conv2d on a hand-written case, which `validate` must accept.
fn run_known(k: &Kernels, c: &ConvCase) -> Vec<f32> {
    assert_eq!(validate(c), Ok(()));
    run(k, c)
}

/// Hand-computed convolutions.
pub fn known_conv2d(k: &Kernels) {
    // x (3x3, one channel)   w (2x2)     y = x * w + 1 (valid, stride 1):
    //   1 2 3                  1 2         1*1 + 2*2 + 4*3 + 5*4 + 1 = 38   2 + 6 + 15 + 24 + 1 = 48
    //   4 5 6                  3 4         4 + 10 + 21 + 32 + 1 = 68        5 + 12 + 24 + 36 + 1 = 78
    //   7 8 9
    let image = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
    let x = In {
        data: &image,
        dims: &[1, 3, 3, 1],
    };
    let w = In {
        data: &[1.0, 2.0, 3.0, 4.0],
        dims: &[1, 2, 2, 1],
    };
    let y = run_known(
        k,
        &ConvCase::from_tensors(conv_params(1, 0, 1), x, w, Some(&[1.0]), &[1, 2, 2, 1]),
    );
    assert_known(&y, &[38.0, 48.0, 68.0, 78.0]);

    // Same x, 3x3 box of ones, padding 1, stride 2: windows centred on the corners.
    //   (0,0): 1+2+4+5 = 12   (0,2): 2+3+5+6 = 16   (2,0): 4+5+7+8 = 24   (2,2): 5+6+8+9 = 28
    let ones = [1.0; 9];
    let w = In {
        data: &ones,
        dims: &[1, 3, 3, 1],
    };
    let y = run_known(
        k,
        &ConvCase::from_tensors(conv_params(2, 1, 1), x, w, None, &[1, 2, 2, 1]),
    );
    assert_known(&y, &[12.0, 16.0, 24.0, 28.0]);

    // Depthwise (groups = channels = 2) 1x1: channel 0 times 2, channel 1 times -1, Relu.
    let x = In {
        data: &[1.0, 1.0, 3.0, -4.0],
        dims: &[1, 1, 2, 2],
    };
    let w = In {
        data: &[2.0, -1.0],
        dims: &[2, 1, 1, 1],
    };
    let mut p = conv_params(1, 0, 2);
    p.act = Activation::Relu;
    let y = run_known(k, &ConvCase::from_tensors(p, x, w, None, &[1, 1, 2, 2]));
    assert_known(&y, &[2.0, 0.0, 6.0, 4.0]);

    // Dilation 2 on a 1x5 row with a 1x2 kernel [1, 10]: y[i] = x[i] + 10 * x[i + 2].
    let x = In {
        data: &[1.0, 2.0, 3.0, 4.0, 5.0],
        dims: &[1, 1, 5, 1],
    };
    let w = In {
        data: &[1.0, 10.0],
        dims: &[1, 1, 2, 1],
    };
    let mut p = conv_params(1, 0, 1);
    p.dilation_w = 2;
    let y = run_known(k, &ConvCase::from_tensors(p, x, w, None, &[1, 1, 3, 1]));
    assert_known(&y, &[31.0, 42.0, 53.0]);
}

/// `validate` rejects wrong ranks, shapes and parameters.
pub fn conv2d_validate_rejects_bad_shapes() {
    let ok = conv_params(1, 0, 1);
    let (x, w, y) = ([1, 3, 3, 2], [4, 2, 2, 2], [1, 2, 2, 4]);
    assert_eq!(conv::validate(&ok, &x, &w, Some(&[4]), &y), Ok(()));
    let mut bad_params = conv_geometry_mistakes!(Conv2dParams).to_vec();
    bad_params.push(|p| p.dilation_w = 3); // dilated kernel 4 > 3
    assert_rejects_changes(ok, &bad_params, |p| conv::validate(p, &x, &w, None, &y));
    assert_rejects_layer_mistakes((x, w, y), |x, w, b, y| conv::validate(&ok, x, w, b, y));
    let empty_kernel = conv::validate(&ok, &x, &[4, 0, 2, 2], None, &[1, 4, 2, 4]);
    assert!(matches!(empty_kernel, Err(Error::Shape { .. })));
    // Groups must divide both channel counts.
    let g3 = conv_params(1, 0, 3);
    assert!(conv::validate(&g3, &[1, 3, 3, 6], &[4, 1, 1, 2], None, &[1, 3, 3, 4]).is_err());
    assert!(conv::validate(&g3, &[1, 3, 3, 6], &[6, 1, 1, 2], None, &[1, 3, 3, 6]).is_ok());
    // A huge dilated kernel overflows instead of wrapping.
    let huge = usize::MAX / 2;
    let mut wide = ok;
    wide.dilation_h = u16::MAX;
    assert!(conv::validate(&wide, &[1, 3, 3, 1], &[1, huge, 1, 1], None, &[1, 1, 3, 1]).is_err());
}
