//! ONNX `ConvTranspose` through the converter and an ember-core `Session`, compared with a naive
//! definition written here in ONNX's own terms (NCHW, `W [C, M/group, KH, KW]`, scatter form, f64),
//! over the cases the ONNX node tests leave out: several output channels per group, output padding
//! with cropping pads, `output_shape`, `SAME_LOWER`, a bias and a fused Relu. Errors name the node,
//! op and reason for what is not supported.

use crate::common;

use common::{
    assert_close, attr_i, attr_ints, attr_s, fixed, floats, model, node, node1, one_node_model,
    pseudo_random, unshaped,
};
use ember_convert::onnx::proto::AttributeProto;
use ember_convert::{convert, ConvertError, ConvertOptions};
use ember_testkit::model::run_with_dims;

/// One spatial axis of the definition.
#[derive(Clone, Copy)]
struct Axis {
    stride: usize,
    dilation: usize,
    pad_begin: usize,
    out: usize,
}

/// `ConvTranspose` by its definition: `y[n, g*Mg + m, o...] = B[g*Mg + m] + sum over c, i..., k... of
/// x[n, g*Cg + c, i...] * W[g*Cg + c, m, k...]` where `o = i * stride + k * dilation - pad_begin` on
/// every axis (1 or 2 of them).
fn definition(
    x: &[f32],
    x_dims: &[usize],
    w: &[f32],
    w_dims: &[usize],
    b: Option<&[f32]>,
    groups: usize,
    axes: &[Axis],
) -> Vec<f64> {
    let (n, c) = (x_dims[0], x_dims[1]);
    let (cg, mg) = (c / groups, w_dims[1]);
    let m = mg * groups;
    // Treat 1-D as 2-D with a unit H axis.
    let unit = Axis {
        stride: 1,
        dilation: 1,
        pad_begin: 0,
        out: 1,
    };
    let (ah, aw) = if axes.len() == 1 {
        (unit, axes[0])
    } else {
        (axes[0], axes[1])
    };
    let (h, wd) = if axes.len() == 1 {
        (1, x_dims[2])
    } else {
        (x_dims[2], x_dims[3])
    };
    let (kh, kw) = if axes.len() == 1 {
        (1, w_dims[2])
    } else {
        (w_dims[2], w_dims[3])
    };
    let (oh, ow) = (ah.out, aw.out);
    let mut y = vec![0.0f64; n * m * oh * ow];
    for bi in 0..n {
        for o in 0..m {
            for p in 0..oh * ow {
                y[(bi * m + o) * oh * ow + p] = b.map_or(0.0, |b| f64::from(b[o]));
            }
        }
        for ci in 0..c {
            let g = ci / cg;
            for iy in 0..h {
                for ix in 0..wd {
                    let xv = f64::from(x[((bi * c + ci) * h + iy) * wd + ix]);
                    for mi in 0..mg {
                        let o = g * mg + mi;
                        for ky in 0..kh {
                            for kx in 0..kw {
                                let oy = (iy * ah.stride + ky * ah.dilation) as i64
                                    - ah.pad_begin as i64;
                                let ox = (ix * aw.stride + kx * aw.dilation) as i64
                                    - aw.pad_begin as i64;
                                if oy < 0 || ox < 0 || oy >= oh as i64 || ox >= ow as i64 {
                                    continue;
                                }
                                let wv = f64::from(w[((ci * mg + mi) * kh + ky) * kw + kx]);
                                y[((bi * m + o) * oh + oy as usize) * ow + ox as usize] += xv * wv;
                            }
                        }
                    }
                }
            }
        }
    }
    y
}

/// A model `x -> ConvTranspose(attrs) [-> Relu] -> y` with constant weights (and bias).
fn model_of(
    x_dims: &[usize],
    w: &[f32],
    w_dims: &[usize],
    b: Option<&[f32]>,
    attrs: Vec<AttributeProto>,
    relu: bool,
) -> Vec<u8> {
    let dims = |d: &[usize]| d.iter().map(|&v| v as i64).collect::<Vec<_>>();
    let mut inits = vec![floats("w", &dims(w_dims), w)];
    let mut inputs = vec!["x", "w"];
    if let Some(b) = b {
        inits.push(floats("b", &[b.len() as i64], b));
        inputs.push("b");
    }
    let mut nodes = vec![node(
        "ConvTranspose",
        "deconv",
        &inputs,
        &[if relu { "t" } else { "y" }],
        attrs,
    )];
    if relu {
        nodes.push(node1("Relu", "relu", &["t"], "y"));
    }
    model(
        17,
        nodes,
        vec![fixed("x", &dims(x_dims))],
        vec![unshaped("y")],
        inits,
    )
}

/// Converts and runs `bytes` on `x`; returns the output and its dims.
fn run(bytes: &[u8], x: &[f32]) -> (Vec<f32>, Vec<usize>) {
    let c = convert(bytes, &ConvertOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    run_with_dims(&c.blob, x)
}

/// One case: shapes, attributes, and the axes the attributes should resolve to.
struct Case {
    x_dims: Vec<usize>,
    w_dims: Vec<usize>,
    bias: bool,
    relu: bool,
    groups: usize,
    attrs: Vec<AttributeProto>,
    axes: Vec<Axis>,
}

fn check(case: Case) {
    let numel = |d: &[usize]| d.iter().product::<usize>();
    let x = pseudo_random(numel(&case.x_dims), 1);
    let w = pseudo_random(numel(&case.w_dims), 2);
    let m = case.w_dims[1] * case.groups;
    let b = case.bias.then(|| pseudo_random(m, 3));
    let mut attrs = case.attrs;
    attrs.push(attr_i("group", case.groups as i64));
    let bytes = model_of(
        &case.x_dims,
        &w,
        &case.w_dims,
        b.as_deref(),
        attrs,
        case.relu,
    );
    let (got, dims) = run(&bytes, &x);
    let mut want = definition(
        &x,
        &case.x_dims,
        &w,
        &case.w_dims,
        b.as_deref(),
        case.groups,
        &case.axes,
    );
    if case.relu {
        want.iter_mut().for_each(|v| *v = v.max(0.0));
    }
    let mut want_dims = vec![case.x_dims[0], m];
    want_dims.extend(case.axes.iter().map(|a| a.out));
    assert_eq!(dims, want_dims);
    assert_close(&got, &want);
}

fn axis(stride: usize, dilation: usize, pad_begin: usize, out: usize) -> Axis {
    Axis {
        stride,
        dilation,
        pad_begin,
        out,
    }
}

#[test]
fn grouped_with_pads_output_padding_bias_and_relu() {
    // x [2, 4, 3, 2], W [4, 3, 2, 3] (groups 2: C/g = 2, M/g = 3), strides [2, 3], dilations [1, 2],
    // pads [1, 0, 0, 2], output_padding [1, 2].
    // H: 2 * 2 + 1 + 1 * 1 + 1 - 1 - 0 = 6; W: 3 * 1 + 2 + 2 * 2 + 1 - 0 - 2 = 8.
    check(Case {
        x_dims: vec![2, 4, 3, 2],
        w_dims: vec![4, 3, 2, 3],
        bias: true,
        relu: true,
        groups: 2,
        attrs: vec![
            attr_ints("strides", &[2, 3]),
            attr_ints("dilations", &[1, 2]),
            attr_ints("pads", &[1, 0, 0, 2]),
            attr_ints("output_padding", &[1, 2]),
        ],
        axes: vec![axis(2, 1, 1, 6), axis(3, 2, 0, 8)],
    });
}

#[test]
fn output_shape_sets_the_padding() {
    // Full H: 2 * 3 + 3 = 9 and W: 1 * 3 + 3 = 6. output_shape [7, 8]: H crops 2 (1 at each end,
    // NOTSET puts the odd cell first: here even), W grows by 2 at the end.
    check(Case {
        x_dims: vec![1, 2, 4, 4],
        w_dims: vec![2, 2, 3, 3],
        bias: false,
        relu: false,
        groups: 1,
        attrs: vec![
            attr_ints("strides", &[2, 1]),
            attr_ints("output_shape", &[7, 8]),
        ],
        axes: vec![axis(2, 1, 1, 7), axis(1, 1, 0, 8)],
    });
}

#[test]
fn same_lower_puts_the_odd_cell_first() {
    // in 3, stride 2, kernel 4: full 2 * 2 + 4 = 8, wanted 3 * 2 = 6: total 2, one at each end;
    // kernel 3 on W: full 7, total 1, SAME_LOWER crops it at the beginning.
    check(Case {
        x_dims: vec![1, 1, 3, 3],
        w_dims: vec![1, 2, 4, 3],
        bias: true,
        relu: false,
        groups: 1,
        attrs: vec![
            attr_ints("strides", &[2, 2]),
            attr_s("auto_pad", "SAME_LOWER"),
        ],
        axes: vec![axis(2, 1, 1, 6), axis(2, 1, 1, 6)],
    });
}

#[test]
fn one_d_runs_as_two_d() {
    // L: 3 * 4 + 1 + 2 * 2 + 1 - 2 - 1 = 15.
    check(Case {
        x_dims: vec![1, 3, 5],
        w_dims: vec![3, 2, 3],
        bias: true,
        relu: false,
        groups: 1,
        attrs: vec![
            attr_ints("strides", &[3]),
            attr_ints("dilations", &[2]),
            attr_ints("pads", &[2, 1]),
            attr_ints("output_padding", &[1]),
        ],
        axes: vec![axis(3, 2, 2, 15)],
    });
}

/// The conversion error of a 2-D `ConvTranspose` over `x [1, 2, 3, 3]` with `W [2, 1, 2, 2]` and
/// `attrs`.
fn error_of(attrs: Vec<AttributeProto>) -> String {
    let w = vec![1.0; 8];
    let bytes = model_of(&[1, 2, 3, 3], &w, &[2, 1, 2, 2], None, attrs, false);
    let e = convert(&bytes, &ConvertOptions::default()).expect_err("conversion must fail");
    assert!(
        matches!(&e, ConvertError::Node { node, op, .. } if node == "deconv" && op == "ConvTranspose"),
        "{e:?}"
    );
    e.to_string()
}

#[test]
fn unsupported_attributes_are_clear_errors() {
    let cases: Vec<(Vec<AttributeProto>, &str)> = vec![
        (
            vec![
                attr_ints("pads", &[1, 1, 1, 1]),
                attr_ints("output_shape", &[4, 4]),
            ],
            "pads and output_shape",
        ),
        (
            vec![
                attr_ints("strides", &[3, 3]),
                attr_s("auto_pad", "SAME_UPPER"),
            ],
            "negative padding",
        ),
        (
            vec![
                attr_ints("pads", &[1, 1, 1, 1]),
                attr_s("auto_pad", "VALID"),
            ],
            "cannot be combined",
        ),
        (vec![attr_s("auto_pad", "FULL")], "auto_pad=FULL"),
        (vec![attr_ints("strides", &[2])], "one per spatial axis"),
        (vec![attr_ints("pads", &[3, 3, 3, 3])], "crop more"),
        (vec![attr_ints("kernel_shape", &[3, 3])], "kernel_shape"),
        (vec![attr_i("group", 0)], "group=0"),
        (vec![attr_i("group", 4)], "expected [C, M/group, KH, KW]"),
        (vec![attr_ints("output_shape", &[4])], "output_shape=[4]"),
    ];
    for (attrs, want) in cases {
        let msg = error_of(attrs);
        assert!(msg.contains(want), "{want:?} not in {msg:?}");
    }
}

#[test]
fn computed_weights_are_rejected() {
    let bytes = one_node_model(
        17,
        node1("ConvTranspose", "deconv", &["x", "w"], "y"),
        vec![fixed("x", &[1, 2, 3, 3]), fixed("w", &[2, 1, 2, 2])],
        vec![],
    );
    let e = convert(&bytes, &ConvertOptions::default()).expect_err("conversion must fail");
    assert!(e.to_string().contains("must be a FLOAT initializer"), "{e}");
}

#[test]
fn three_d_is_rejected() {
    let w = vec![1.0; 8];
    let bytes = one_node_model(
        17,
        node1("ConvTranspose", "deconv", &["x", "w"], "y"),
        vec![fixed("x", &[1, 1, 2, 2, 2])],
        vec![floats("w", &[1, 1, 2, 2, 2], &w)],
    );
    let e = convert(&bytes, &ConvertOptions::default()).expect_err("conversion must fail");
    assert!(
        e.to_string()
            .contains("only 1-D and 2-D transposed convolution"),
        "{e}"
    );
}
