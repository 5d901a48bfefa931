//! Transposed convolution: conv_transpose2d, plain and grouped, against its scatter definition.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::nn::conv_transpose::{self, ConvTranspose2dParams};
use ember_core::ops::In;
use ember_core::{Error, Kernels, OpKind};
use proptest::prelude::*;

use crate::edge::validate_agrees;
use crate::layer::{
    conv_groups_are_valid, conv_transpose2d_params, grouped_dims, odd_layer_mistakes, tap, Layer,
};

use super::{
    activate, activation, assert_close, assert_known, assert_rejects_changes,
    assert_rejects_layer_mistakes, assert_rejects_shapes, bias_per_channel, flat,
    layer_with_values, mostly_positive, odd_padding, Shapes, Want,
};

/// A transposed convolution: NHWC input, `[OC, KH, KW, IC / groups]` weights, optional bias.
pub type ConvTransposeCase = Layer<ConvTranspose2dParams, f32, f32>;

/// `conv_transpose::validate` of a case.
fn validate(c: &ConvTransposeCase) -> Result<(), Error> {
    c.validate_with(|x, w, b, y| conv_transpose::validate(&c.p, x, w, b, y))
}

/// Runs the table's conv_transpose2d on a case, with the scratch the table asks for.
fn run_case(k: &Kernels, c: &ConvTransposeCase) -> Vec<f32> {
    c.run_with_scratch(k, OpKind::ConvTranspose2d(c.p), k.conv_transpose2d)
}

/// Output length of a transposed convolution along one axis, by ONNX's formula
/// `stride * (size - 1) + output_padding + dilation * (k - 1) + 1 - pad_begin - pad_end`; `None` when
/// the input or kernel is empty or the padding crops more than there is.
fn output_len(
    size: usize,
    k: usize,
    stride: u16,
    dilation: u16,
    pads: (u16, u16),
    output_pad: u16,
) -> Option<usize> {
    if size == 0 || k == 0 {
        return None;
    }
    let full = i64::from(stride) * (size as i64 - 1)
        + i64::from(output_pad)
        + i64::from(dilation) * (k as i64 - 1)
        + 1;
    let len = full - i64::from(pads.0) - i64::from(pads.1);
    usize::try_from(len).ok()
}

/// The output's height and width by [`output_len`] for `p` over an `h` x `w` input and a `kh` x `kw`
/// kernel.
fn output_hw(
    p: &ConvTranspose2dParams,
    (h, w): (usize, usize),
    (kh, kw): (usize, usize),
) -> (Option<usize>, Option<usize>) {
    let (top, left, bottom, right) = (p.pad_top, p.pad_left, p.pad_bottom, p.pad_right);
    (
        output_len(
            h,
            kh,
            p.stride_h,
            p.dilation_h,
            (top, bottom),
            p.output_pad_h,
        ),
        output_len(
            w,
            kw,
            p.stride_w,
            p.dilation_w,
            (left, right),
            p.output_pad_w,
        ),
    )
}

/// A valid transposed convolution: groups 1 to 3, 1 to 3 channels per group on each side, kernels 1
/// to 3, strides 1 to 3, dilations 1 to 2, output padding 0 to 2, inputs 1 to 4, and pads 0 to 2 when
/// the full output leaves room for them.
pub fn conv_transpose2d_case() -> impl Strategy<Value = ConvTransposeCase> {
    let channels = (1usize..=2, 1u16..=3, 1usize..=3, 1usize..=3); // batch, groups, IC/g, OC/g
    let window = (
        1usize..=3,
        1usize..=3,
        (1u16..=3, 1u16..=3),
        (1u16..=2, 1u16..=2),
        (0u16..=2, 0u16..=2),
    );
    let sizes = (1usize..=4, 1usize..=4, prop::array::uniform4(0u16..=2));
    (channels, window, sizes, any::<bool>(), activation()).prop_flat_map(
        |(
            (n, groups, icg, ocg),
            (kh, kw, strides, dilations, out_pads),
            (h, w, pads),
            bias,
            act,
        )| {
            // Pads that would crop everything are dropped.
            let full_h = output_len(h, kh, strides.0, dilations.0, (0, 0), out_pads.0).unwrap_or(0);
            let full_w = output_len(w, kw, strides.1, dilations.1, (0, 0), out_pads.1).unwrap_or(0);
            let [mut pt, mut pl, mut pb, mut pr] = pads;
            if usize::from(pt + pb) > full_h {
                (pt, pb) = (0, 0);
            }
            if usize::from(pl + pr) > full_w {
                (pl, pr) = (0, 0);
            }
            let p = conv_transpose2d_params(
                strides,
                dilations,
                [pt, pl, pb, pr],
                out_pads,
                groups,
                act,
            );
            let oh = full_h - usize::from(pt + pb);
            let ow = full_w - usize::from(pl + pr);
            let dims = (n, h, w, icg, ocg);
            let [x_dims, w_dims, y_dims] =
                grouped_dims(dims, (kh, kw), (oh, ow), groups, (None, false));
            layer_with_values(p, x_dims, w_dims, y_dims, bias)
        },
    )
}

/// The definition, as a scatter: every input value times every weight of its group is added to the
/// output pixel `(iy * stride + ky * dilation - pad_begin)` (per axis) when that lies inside the
/// output; every output starts from the bias.
fn conv_transpose2d_definition(c: &ConvTransposeCase) -> Vec<Want> {
    let [n, h, w, ic] = c.x_dims;
    let [oc, kh, kw, icg] = c.w_dims;
    let [_, oh, ow, _] = c.y_dims;
    let p = &c.p;
    let ocg = oc / usize::from(p.groups);
    let mut y = bias_per_channel(c.b.as_deref(), &c.y_dims);
    for b in 0..n {
        for iy in 0..h {
            for ix in 0..w {
                for ci in 0..ic {
                    let group = ci / icg;
                    let xv = f64::from(c.x[flat(&[b, iy, ix, ci], &c.x_dims)]);
                    for ky in 0..kh {
                        for kx in 0..kw {
                            let oy = tap(iy, ky, p.stride_h, p.dilation_h, p.pad_top);
                            let ox = tap(ix, kx, p.stride_w, p.dilation_w, p.pad_left);
                            if oy < 0 || ox < 0 || oy >= oh as i64 || ox >= ow as i64 {
                                continue;
                            }
                            for m in 0..ocg {
                                let o = group * ocg + m;
                                let wv = f64::from(c.w[flat(&[o, ky, kx, ci % icg], &c.w_dims)]);
                                y[flat(&[b, oy as usize, ox as usize, o], &c.y_dims)].add(xv * wv);
                            }
                        }
                    }
                }
            }
        }
    }
    y.into_iter().map(|v| activate(p.act, v)).collect()
}

/// The table's conv_transpose2d kernel against the definition.
pub fn check_conv_transpose2d(k: &Kernels, c: &ConvTransposeCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(validate(c), Ok(()));
    assert_close(&run_case(k, c), &conv_transpose2d_definition(c))
}

/// Odd transposed convolutions: any dim may be 0, stride, dilation and groups may be 0, pads may crop
/// the whole output, and one output dim may be off by one.
pub fn conv_transpose2d_edge_case() -> impl Strategy<Value = ConvTransposeCase> {
    let size = |max: u16| mostly_positive(max).prop_map(usize::from);
    let dims = (size(2), size(3), size(3), size(2), size(2)); // n, h, w, IC/g, OC/g
    let p = mostly_positive;
    let window = (size(3), size(3), (p(2), p(2)), (p(2), p(2)), p(3)); // kh, kw, s, d, groups
    let pads = (prop::array::uniform4(odd_padding()), (0u16..=2, 0u16..=2));
    (dims, window, pads, odd_layer_mistakes(), any::<bool>()).prop_flat_map(
        |(dims, (kh, kw, strides, dilations, groups), (pads, out_pads), mistakes, bias)| {
            let (_, h, w, _, _) = dims;
            let p = conv_transpose2d_params(
                strides,
                dilations,
                pads,
                out_pads,
                groups,
                Activation::None,
            );
            let (oh, ow) = output_hw(&p, (h, w), (kh, kw));
            let (oh, ow) = (oh.unwrap_or(1), ow.unwrap_or(1));
            let [x_dims, w_dims, y_dims] = grouped_dims(dims, (kh, kw), (oh, ow), groups, mistakes);
            layer_with_values(p, x_dims, w_dims, y_dims, bias)
        },
    )
}

/// Whether a transposed convolution is well-formed, by the definition.
fn conv_transpose2d_is_valid(c: &ConvTransposeCase) -> bool {
    let p = &c.p;
    let [n, h, w, _] = c.x_dims;
    let [oc, kh, kw, _] = c.w_dims;
    if !conv_groups_are_valid(p, c.x_dims, c.w_dims) {
        return false;
    }
    if c.b.as_ref().is_some_and(|b| b.len() != oc) {
        return false;
    }
    let (oh, ow) = output_hw(p, (h, w), (kh, kw));
    matches!((oh, ow), (Some(oh), Some(ow)) if c.y_dims == [n, oh, ow, oc])
}

/// `validate` agrees with the definition on odd cases, and whatever it accepts runs without panicking
/// and matches the definition.
pub fn check_conv_transpose2d_edge(
    k: &Kernels,
    c: &ConvTransposeCase,
) -> Result<(), TestCaseError> {
    let verdict = validate(c);
    if validate_agrees(&verdict, conv_transpose2d_is_valid(c))? {
        assert_close(&run_case(k, c), &conv_transpose2d_definition(c))?;
    }
    Ok(())
}

/// Runs the table's conv_transpose2d on a hand-written case, which `validate` must accept.
fn run_known(k: &Kernels, c: &ConvTransposeCase) -> Vec<f32> {
    assert_eq!(validate(c), Ok(()));
    run_case(k, c)
}

/// Hand-computed transposed convolutions.
pub fn known_conv_transpose2d(k: &Kernels) {
    let plain = conv_transpose2d_params((1, 1), (1, 1), [0; 4], (0, 0), 1, Activation::None);
    // ONNX's `test_convtranspose`: x = 0..9 as 3x3, a 3x3 kernel of ones. Each output counts the
    // inputs whose 3x3 footprint covers it: y[i][j] = sum of x over rows i-2..=i, columns j-2..=j.
    let image: Vec<f32> = (0..9).map(|v| v as f32).collect();
    let x = In {
        data: &image,
        dims: &[1, 3, 3, 1],
    };
    let ones = [1.0; 9];
    let w = In {
        data: &ones,
        dims: &[1, 3, 3, 1],
    };
    let y = run_known(
        k,
        &ConvTransposeCase::from_tensors(plain, x, w, None, &[1, 5, 5, 1]),
    );
    #[rustfmt::skip]
    let want = [
        0.0, 1.0, 3.0, 3.0, 2.0,
        3.0, 8.0, 15.0, 12.0, 7.0,
        9.0, 21.0, 36.0, 27.0, 15.0,
        9.0, 20.0, 33.0, 24.0, 13.0,
        6.0, 13.0, 21.0, 15.0, 8.0,
    ];
    assert_known(&y, &want);

    // Stride 2 on a 1x2 row with a 1x2 kernel [1, 10], bias 0.5, output padding 1: the copies do not
    // overlap, and the padded last column sees only the bias.
    //   x = [1, 2] -> [1, 10, 2, 20] + 0.5, then 0.5.
    let x = In {
        data: &[1.0, 2.0],
        dims: &[1, 1, 2, 1],
    };
    let w = In {
        data: &[1.0, 10.0],
        dims: &[1, 1, 2, 1],
    };
    let p = conv_transpose2d_params((1, 2), (1, 1), [0; 4], (0, 1), 1, Activation::None);
    let y = run_known(
        k,
        &ConvTransposeCase::from_tensors(p, x, w, Some(&[0.5]), &[1, 1, 5, 1]),
    );
    assert_known(&y, &[1.5, 10.5, 2.5, 20.5, 0.5]);

    // Same with the first and last columns cropped (pads left 1, right 1, no output padding).
    let p = conv_transpose2d_params((1, 2), (1, 1), [0, 1, 0, 1], (0, 0), 1, Activation::None);
    let y = run_known(
        k,
        &ConvTransposeCase::from_tensors(p, x, w, None, &[1, 1, 2, 1]),
    );
    assert_known(&y, &[10.0, 2.0]);

    // Groups 2, one channel each: channel 0 scaled by 2, channel 1 by -1, then Relu. 1x1 kernel,
    // stride 2 in both directions on a 1x1 image: a 2x2 output with zeros where no input lands.
    let x = In {
        data: &[3.0, 4.0],
        dims: &[1, 1, 1, 2],
    };
    let w = In {
        data: &[2.0, -1.0],
        dims: &[2, 1, 1, 1],
    };
    let p = conv_transpose2d_params((2, 2), (1, 1), [0; 4], (1, 1), 2, Activation::Relu);
    let y = run_known(
        k,
        &ConvTransposeCase::from_tensors(p, x, w, None, &[1, 2, 2, 2]),
    );
    assert_known(&y, &[6.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]);
}

/// `validate` rejects wrong ranks, shapes and parameters.
pub fn conv_transpose2d_validate_rejects_bad_shapes() {
    let ok = conv_transpose2d_params((2, 2), (1, 1), [0; 4], (0, 0), 1, Activation::None);
    // 3x3 input, 2x2 kernel, stride 2: 2 * 2 + 1 + 1 = 6.
    let (x, w, y) = ([1, 3, 3, 2], [4, 2, 2, 2], [1, 6, 6, 4]);
    assert_eq!(
        conv_transpose::validate(&ok, &x, &w, Some(&[4]), &y),
        Ok(())
    );
    let mut bad_params = conv_geometry_mistakes!(ConvTranspose2dParams).to_vec();
    bad_params.extend::<[fn(&mut ConvTranspose2dParams); 2]>([
        |p| p.output_pad_w = 1,
        |p| {
            // Crops more than the 6 rows there are.
            p.pad_top = 4;
            p.pad_bottom = 3;
        },
    ]);
    assert_rejects_changes(ok, &bad_params, |p| {
        conv_transpose::validate(p, &x, &w, None, &y)
    });
    assert_rejects_layer_mistakes((x, w, y), |x, w, b, y| {
        conv_transpose::validate(&ok, x, w, b, y)
    });
    let empty: [Shapes; 2] = [
        (&x, &[4, 0, 2, 2], None, &[1, 5, 6, 4]), // empty kernel
        (&[1, 0, 3, 2], &w, None, &[1, 0, 6, 4]), // empty input rows
    ];
    assert_rejects_shapes(&empty, |x, w, b, y| {
        conv_transpose::validate(&ok, x, w, b, y)
    });
    // A huge dilated kernel overflows instead of wrapping.
    let huge = usize::MAX / 2;
    let mut wide = ok;
    wide.dilation_h = u16::MAX;
    assert!(
        conv_transpose::validate(&wide, &[1, 3, 3, 1], &[1, huge, 1, 1], None, &[1, 1, 6, 1])
            .is_err()
    );
}
