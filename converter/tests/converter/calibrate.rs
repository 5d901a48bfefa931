//! Calibration measures every quantized value of a model, however many: each op's output is observed
//! as the session writes it (`Session::run_observed`), with the values kept as tensors of their own
//! (`ConvertOptions::observe`), not exposed as graph outputs (a blob has at most 16). The expected
//! ranges follow from the model's arithmetic.

use crate::common;

use common::{fixed, floats, model, node1, unshaped};
use ember_convert::quantize::{calibrate, Calibration};
use ember_convert::ConvertOptions;

/// `n` blocks of a 1x1 convolution by 1 (`c1 ..`) then a Mul by 2 (`m1 ..`; the last is `y`) on
/// `x [1, 1, 1, 4]`: `2n` values to measure. The affine folding would fold each Mul into its
/// convolution, and the convolutions' outputs would not exist as tensors of their own.
fn conv_mul_chain(n: usize) -> Vec<u8> {
    let mut nodes = Vec::new();
    for k in 1..=n {
        let input = if k == 1 {
            "x".to_string()
        } else {
            format!("m{}", k - 1)
        };
        let output = if k == n {
            "y".to_string()
        } else {
            format!("m{k}")
        };
        nodes.push(node1(
            "Conv",
            &format!("conv{k}"),
            &[&input, "one"],
            &format!("c{k}"),
        ));
        nodes.push(node1(
            "Mul",
            &format!("mul{k}"),
            &[&format!("c{k}"), "two"],
            &output,
        ));
    }
    model(
        13,
        nodes,
        vec![fixed("x", &[1, 1, 1, 4])],
        vec![unshaped("y")],
        vec![
            floats("one", &[1, 1, 1, 1], &[1.0]),
            floats("two", &[], &[2.0]),
        ],
    )
}

#[test]
fn every_value_of_a_long_chain_is_measured() {
    let n = 12;
    let onnx = conv_mul_chain(n);
    let samples = vec![
        vec![vec![-1.0, 0.5, 0.25, 0.0]],
        vec![vec![0.75, -0.5, 1.5, -0.25]],
    ];
    let mut calls = Vec::new();
    let ranges = calibrate(
        &onnx,
        &ConvertOptions::default(),
        &samples,
        Calibration::MinMax,
        &mut |done, total| calls.push((done, total)),
    )
    .unwrap();
    assert_eq!(calls, [(1, 2), (2, 2)]);
    // Over both samples x spans [-1, 1.5]; convolution k gives x * 2^(k-1), its Mul x * 2^k (exact).
    for k in 1..=n {
        let mul = if k == n {
            "y".to_string()
        } else {
            format!("m{k}")
        };
        let scale = 2f32.powi(k as i32);
        assert_eq!(
            ranges.get(&format!("c{k}")),
            Some(&(-scale / 2.0, 0.75 * scale)),
            "c{k}"
        );
        assert_eq!(ranges.get(&mul), Some(&(-scale, 1.5 * scale)), "{mul}");
    }
    assert_eq!(ranges.get("x"), Some(&(-1.0, 1.5)));
}

/// A flatten written as shape arithmetic (paddle2onnx writes it so: `Shape`, `Slice` of the batch,
/// `Concat` with `-1`, `Reshape`): the `Concat` is an int64 value the converter folds, not a float
/// activation to measure. Calibration used to declare it a float graph output and fail with "has
/// element type FLOAT but Ember computes it as INT64".
#[test]
fn shape_arithmetic_is_not_measured() {
    let onnx = model(
        13,
        vec![
            node1("Shape", "shape", &["x"], "s"),
            node1("Slice", "batch", &["s", "zero", "one"], "b"),
            {
                let mut n = node1("Concat", "dims", &["b", "minus_one"], "dims");
                n.attribute.push(common::attr_i("axis", 0));
                n
            },
            node1("Reshape", "flatten", &["x", "dims"], "y"),
        ],
        vec![fixed("x", &[1, 2, 2])],
        vec![unshaped("y")],
        vec![
            common::ints("zero", &[0]),
            common::ints("one", &[1]),
            common::ints("minus_one", &[-1]),
        ],
    );
    let samples = vec![vec![vec![-1.0, 0.5, 0.25, 2.0]]];
    let ranges = common::golden::min_max_ranges(&onnx, &samples);
    assert_eq!(ranges.get("dims"), None);
    assert_eq!(ranges.get("x"), Some(&(-1.0, 2.0)));
}
