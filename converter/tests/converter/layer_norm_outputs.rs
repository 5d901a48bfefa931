//! LayerNormalization's optional `Mean` and `InvStdDev` outputs, converted and run through an
//! ember-core `Session`, against the ONNX definition computed here in f64: both reduced over the axes
//! from `axis` on with the dims kept, `InvStdDev = 1 / sqrt(Var + epsilon)`.

use crate::common;

use common::{assert_close, attr_f, attr_i, fixed, floats, model, node, pseudo_random, unshaped};
use ember_convert::{convert, ConvertOptions};
use ember_testkit::model::run_outputs;

/// The converted model's outputs (values and dims), in graph order, for input `x`.
fn run_all(bytes: &[u8], x: &[f32]) -> Vec<(Vec<f32>, Vec<usize>)> {
    let c = convert(bytes, &ConvertOptions::default()).unwrap_or_else(|e| panic!("{e}"));
    let outputs = run_outputs(&c.blob, x);
    assert_eq!(outputs.len(), c.report.outputs.len());
    outputs
}

/// `(Y, Mean, InvStdDev)` of `x` (dims `dims`) normalized from `axis` on, scale `s`, no bias.
fn definition(
    x: &[f32],
    dims: &[usize],
    axis: usize,
    s: &[f32],
    epsilon: f64,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let inner: usize = dims[axis..].iter().product();
    let (mut y, mut mean, mut inv) = (Vec::new(), Vec::new(), Vec::new());
    for row in x.chunks(inner) {
        let m = row.iter().map(|&v| f64::from(v)).sum::<f64>() / inner as f64;
        let var = row.iter().map(|&v| (f64::from(v) - m).powi(2)).sum::<f64>() / inner as f64;
        let i = 1.0 / (var + epsilon).sqrt();
        y.extend(
            row.iter()
                .zip(s)
                .map(|(&v, &s)| (f64::from(v) - m) * i * f64::from(s)),
        );
        mean.push(m);
        inv.push(i);
    }
    (y, mean, inv)
}

fn check(dims: &[usize], axis: i64, outputs: &[&str]) {
    let rank = dims.len() as i64;
    let first = usize::try_from(if axis < 0 { axis + rank } else { axis }).unwrap();
    let inner: usize = dims[first..].iter().product();
    let n: usize = dims.iter().product();
    let x: Vec<f32> = pseudo_random(n, 7).iter().map(|v| v * 3.0 + 0.5).collect();
    let s = pseudo_random(inner, 8);
    let epsilon = 1e-3;
    let dims_i: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
    let mut s_dims = dims_i[first..].to_vec();
    if s_dims.is_empty() {
        s_dims.push(1);
    }
    let bytes = model(
        17,
        vec![node(
            "LayerNormalization",
            "ln",
            &["x", "s"],
            outputs,
            vec![attr_i("axis", axis), attr_f("epsilon", epsilon as f32)],
        )],
        vec![fixed("x", &dims_i)],
        outputs
            .iter()
            .filter(|o| !o.is_empty())
            .map(|o| unshaped(o))
            .collect(),
        vec![floats("s", &s_dims, &s)],
    );
    let got = run_all(&bytes, &x);
    let (y, mean, inv) = definition(&x, dims, first, &s, epsilon);
    let mut stat_dims = dims[..first].to_vec();
    stat_dims.resize(dims.len(), 1);
    let mut got = got.into_iter();
    for (name, want) in outputs.iter().zip([y, mean, inv]) {
        if name.is_empty() {
            continue;
        }
        let (values, got_dims) = got.next().expect("one output per named output");
        let want_dims = if want.len() == n {
            dims.to_vec()
        } else {
            stat_dims.clone()
        };
        assert_eq!(got_dims, want_dims, "{name}");
        assert_close(&values, &want);
    }
}

#[test]
fn mean_and_inv_std_dev_over_the_last_axis() {
    check(&[2, 3, 5], -1, &["y", "mean", "inv_std_dev"]);
}

#[test]
fn mean_and_inv_std_dev_over_several_axes() {
    check(&[3, 2, 4], 1, &["y", "mean", "inv_std_dev"]);
    check(&[2, 3], 0, &["y", "mean", "inv_std_dev"]);
}

#[test]
fn inv_std_dev_alone() {
    check(&[4, 6], -1, &["y", "", "inv_std_dev"]);
    check(&[4, 6], 1, &["y", "mean"]);
}
