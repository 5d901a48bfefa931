//! Quantized ONNX on small hand-built models: uint8 QuantizeLinear/DequantizeLinear through the int8
//! path (values and zero point moved by 128), a QDQ Add fused into QuantAdd, and the rejections.
//! Expected values come from ONNX's definitions, computed here.

use crate::common;

use common::*;
use ember_convert::onnx::proto::{data_type, NodeProto, TensorProto, TypeValue, ValueInfoProto};
use ember_convert::{convert, ConvertOptions, Converted};
use ember_core::{AlignedBuf, DType, Model, Session};

fn typed(name: &str, dims: &[i64], t: i32, data: &[i32]) -> TensorProto {
    TensorProto {
        name: name.into(),
        dims: dims.to_vec(),
        data_type: t,
        int32_data: data.to_vec(),
        ..TensorProto::default()
    }
}

fn of_type(mut vi: ValueInfoProto, elem: i32) -> ValueInfoProto {
    if let Some(TypeValue::TensorType(t)) = vi.r#type.as_mut().and_then(|t| t.value.as_mut()) {
        t.elem_type = elem;
    }
    vi
}

fn uint8_input(name: &str, dims: &[i64]) -> ValueInfoProto {
    of_type(fixed(name, dims), data_type::UINT8)
}

/// QuantizeLinear `q<tag>` of `x` to `q` and DequantizeLinear `dq<tag>` of `q` to `dq`, both with
/// the scale and zero point named `[s, z]`.
fn qdq(tag: &str, [x, q, dq]: [&str; 3], [s, z]: [&str; 2]) -> [NodeProto; 2] {
    [
        node1("QuantizeLinear", &format!("q{tag}"), &[x, s, z], q),
        node1("DequantizeLinear", &format!("dq{tag}"), &[q, s, z], dq),
    ]
}

/// A scale named `s` and a zero point named `z` of element type `t`, both scalars.
fn qparams(s: (&str, f32), z: (&str, i32), t: i32) -> [TensorProto; 2] {
    [floats(s.0, &[], &[s.1]), typed(z.0, &[], t, &[z.1])]
}

/// Converts `onnx` with default options; returns it with the names of its ops.
fn convert_ops(onnx: &[u8]) -> (Converted, Vec<String>) {
    let c = convert(onnx, &ConvertOptions::default()).expect("converts");
    let ops = op_names(&c);
    (c, ops)
}

fn op_names(c: &Converted) -> Vec<String> {
    let blob = AlignedBuf::from_bytes(&c.blob);
    let m = Model::parse(blob.as_bytes()).expect("the blob parses");
    (0..m.op_count())
        .map(|i| m.op(i).expect("op decodes").kind.name().to_string())
        .collect()
}

/// Runs `c` on one f32 input; returns each output's dtype and bytes.
fn run(c: &Converted, x: &[f32]) -> Vec<(DType, Vec<u8>)> {
    let blob = AlignedBuf::from_bytes(&c.blob);
    let m = Model::parse(blob.as_bytes()).expect("the blob parses");
    let mut arena = AlignedBuf::zeroed(m.arena_bytes());
    let mut s = Session::new(&m, arena.as_mut_bytes()).expect("session opens");
    s.input(0).unwrap().write_f32(x).unwrap();
    s.run().expect("runs");
    (0..c.report.outputs.len())
        .map(|k| {
            let o = s.output(k).unwrap();
            (o.dtype(), o.bytes().to_vec())
        })
        .collect()
}

#[test]
fn uint8_quantize_dequantize_run_as_int8_and_match_onnx() {
    let (scale, zp) = (0.5f32, 128i32);
    let onnx = model(
        13,
        qdq("", ["x", "y", "r"], ["s", "z"]).to_vec(),
        vec![fixed("x", &[1, 8])],
        vec![of_type(unshaped("y"), data_type::UINT8), unshaped("r")],
        qparams(("s", scale), ("z", zp), data_type::UINT8).to_vec(),
    );
    let (c, ops) = convert_ops(&onnx);
    assert!(ops.contains(&"Quantize".to_string()), "{ops:?}");
    assert!(ops.contains(&"Dequantize".to_string()), "{ops:?}");
    let x = [-70.0f32, -64.25, -0.25, 0.25, 0.75, 1.25, 63.5, 100.0];
    let out = run(&c, &x);
    // ONNX: y = saturate(rint(x / scale) + zp) as uint8 (ties to even); r = (y - zp) * scale.
    let want: Vec<u8> = x
        .iter()
        .map(|&v| ((v / scale).round_ties_even() + zp as f32).clamp(0.0, 255.0) as u8)
        .collect();
    assert_eq!(out[0].0, DType::U8);
    assert_eq!(out[0].1, want);
    let r: Vec<f32> = out[1]
        .1
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    let want_r: Vec<f32> = want
        .iter()
        .map(|&q| (q as f32 - zp as f32) * scale)
        .collect();
    assert_eq!(r, want_r);
}

#[test]
fn qdq_add_becomes_quant_add_within_one_step() {
    let (sa, sb, sy) = (0.05f32, 0.03f32, 0.07f32);
    let onnx = model(
        13,
        [
            &qdq("a", ["x", "a8", "a"], ["sa", "za"])[..],
            &qdq("b", ["x", "b8", "b"], ["sb", "zb"]),
            &[
                node1("Add", "add", &["a", "b"], "sum"),
                node1("QuantizeLinear", "qy", &["sum", "sy", "zy"], "y"),
            ],
        ]
        .concat(),
        vec![fixed("x", &[1, 16])],
        vec![of_type(unshaped("y"), data_type::INT8)],
        [
            qparams(("sa", sa), ("za", 3), data_type::INT8),
            qparams(("sb", sb), ("zb", -5), data_type::INT8),
            qparams(("sy", sy), ("zy", 1), data_type::INT8),
        ]
        .concat(),
    );
    let (c, ops) = convert_ops(&onnx);
    assert!(ops.contains(&"QuantAdd".to_string()), "{ops:?}");
    assert!(!ops.contains(&"Binary".to_string()), "{ops:?}");
    let fused = c
        .report
        .passes
        .iter()
        .filter(|p| p.name == "qdq")
        .flat_map(|p| &p.changes)
        .any(|l| l.contains("add + qy -> add+qy"));
    assert!(fused, "{:?}", c.report.passes);
    let x: Vec<f32> = pseudo_random(16, 7).iter().map(|v| v * 4.0).collect();
    let y = &run(&c, &x)[0];
    assert_eq!(y.0, DType::I8);
    let q = |v: f32, s: f32, z: i32| ((v / s).round_ties_even() as i32 + z).clamp(-128, 127);
    for (i, &v) in x.iter().enumerate() {
        let real = (q(v, sa, 3) - 3) as f32 * sa + (q(v, sb, -5) + 5) as f32 * sb;
        let want = q(real, sy, 1);
        let got = i32::from(y.1[i] as i8);
        assert!((got - want).abs() <= 1, "element {i}: {got} vs {want}");
    }
}

#[test]
fn blocked_quantization_is_rejected_with_the_node_named() {
    let onnx = one_node_model(
        21,
        node(
            "DequantizeLinear",
            "blocked",
            &["x8", "s"],
            &["y"],
            vec![attr_i("axis", 1), attr_i("block_size", 2)],
        ),
        vec![fixed("x", &[1, 4])],
        vec![
            typed("x8", &[1, 4], data_type::INT8, &[1, 2, 3, 4]),
            floats("s", &[1, 2], &[0.5, 0.25]),
        ],
    );
    let e = convert(&onnx, &ConvertOptions::default())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("blocked") && e.contains("DequantizeLinear") && e.contains("block_size"),
        "{e}"
    );
}

#[test]
fn conv_integer_beyond_exact_float_range_is_rejected() {
    // 3 x 3 x 300 taps of weights up to 127 with uint8 inputs can sum past 2^24.
    let w = vec![127; 9 * 300];
    let onnx = one_node_model(
        10,
        node1("ConvInteger", "ci", &["x", "w"], "y"),
        vec![uint8_input("x", &[1, 300, 3, 3])],
        vec![typed("w", &[1, 300, 3, 3], data_type::INT8, &w)],
    );
    let e = convert(&onnx, &ConvertOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("ConvInteger") && e.contains("2^24"), "{e}");
}

/// The ONNX node-test folder in `target/venv`, if the venv is installed.
fn node_dir() -> Option<std::path::PathBuf> {
    let lib = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/venv/lib");
    std::fs::read_dir(lib)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("site-packages/onnx/backend/test/data/node"))
        .find(|p| p.is_dir())
}

/// Runs node-test `case` as a deployed model has it: input 0 at run time, every other input folded
/// into the model as an initializer (so scales, zero points and weights are constants). Returns the
/// blob's op names and whether the output matches `output_0.pb` exactly.
fn deployed_case(dir: &std::path::Path, case: &str) -> (Vec<String>, bool, Vec<String>) {
    use ember_convert::onnx::proto::ModelProto;
    use prost::Message;
    let read = |p: std::path::PathBuf| std::fs::read(&p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
    let mut m = ModelProto::decode(&read(dir.join(case).join("model.onnx"))[..]).unwrap();
    let g = m.graph.as_mut().unwrap();
    let data = dir.join(case).join("test_data_set_0");
    let mut x0 = None;
    for (i, vi) in g.input.clone().iter().enumerate() {
        let mut t = TensorProto::decode(&read(data.join(format!("input_{i}.pb")))[..]).unwrap();
        t.name = vi.name.clone();
        if i == 0 {
            x0 = Some(t);
        } else {
            g.initializer.push(t);
        }
    }
    g.input.truncate(1);
    let x0 = x0.unwrap();
    let want = TensorProto::decode(&read(data.join("output_0.pb"))[..]).unwrap();
    let c = convert(&m.encode_to_vec(), &ConvertOptions::default())
        .unwrap_or_else(|e| panic!("{case}: {e}"));
    let blob = AlignedBuf::from_bytes(&c.blob);
    let model = Model::parse(blob.as_bytes()).unwrap();
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut s = Session::new(&model, arena.as_mut_bytes()).unwrap();
    let bytes: Vec<u8> = if x0.raw_data.is_empty() {
        match x0.data_type {
            data_type::FLOAT => x0.float_data.iter().flat_map(|v| v.to_le_bytes()).collect(),
            _ => x0.int32_data.iter().map(|&v| v as u8).collect(),
        }
    } else {
        x0.raw_data.clone()
    };
    s.input(0).unwrap().bytes_mut().copy_from_slice(&bytes);
    s.run().unwrap();
    let want_bytes: Vec<u8> = if want.raw_data.is_empty() {
        match want.data_type {
            data_type::FLOAT => want
                .float_data
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect(),
            _ => want.int32_data.iter().map(|&v| v as u8).collect(),
        }
    } else {
        want.raw_data.clone()
    };
    (
        op_names(&c),
        s.output(0).unwrap().bytes() == want_bytes.as_slice(),
        c.report.notices.clone(),
    )
}

#[test]
fn node_tests_with_constant_parameters_take_the_int8_path() {
    let Some(dir) = node_dir() else {
        eprintln!("skipped: no target/venv with onnx 1.22.0 (cargo xtask venv)");
        return;
    };
    // (case, an op the blob must have)
    let cases = [
        ("test_quantizelinear", "Quantize"),
        ("test_dequantizelinear", "Dequantize"),
        ("test_qlinearmatmul_2D_uint8_float32", "Quantize"),
        ("test_qlinearmatmul_2D_int8_float32", "Quantize"),
        ("test_qlinearconv", "Quantize"),
    ];
    for (case, op) in cases {
        let (ops, exact, notices) = deployed_case(&dir, case);
        if case == "test_qlinearconv" {
            // uint8 weights with zero point 255: reported, and run in float.
            assert!(
                notices.iter().any(|n| n.contains("not symmetric int8")),
                "{notices:?}"
            );
            assert!(ops.iter().any(|o| o == "Conv2d"), "{ops:?}");
        }
        println!("{case}: exact {exact}, ops {ops:?}");
        assert!(ops.iter().any(|o| o == op), "{case}: {ops:?}");
        assert!(exact, "{case}: output differs from ONNX's");
    }
}

#[test]
fn qdq_global_average_pool_becomes_int8_pool_and_requantize() {
    let (sx, sy) = (0.04f32, 0.01f32);
    let onnx = model(
        13,
        [
            &qdq("x", ["x", "x8", "xd"], ["sx", "zx"])[..],
            &[
                node1("GlobalAveragePool", "gap", &["xd"], "m"),
                node1("QuantizeLinear", "qy", &["m", "sy", "zy"], "y"),
            ],
        ]
        .concat(),
        vec![fixed("x", &[1, 2, 3, 3])],
        vec![of_type(unshaped("y"), data_type::INT8)],
        [
            qparams(("sx", sx), ("zx", -10), data_type::INT8),
            qparams(("sy", sy), ("zy", 4), data_type::INT8),
        ]
        .concat(),
    );
    let (c, ops) = convert_ops(&onnx);
    assert!(ops.contains(&"QuantAvgPool2d".to_string()), "{ops:?}");
    assert!(ops.contains(&"Requantize".to_string()), "{ops:?}");
    let x = pseudo_random(18, 3);
    let y = &run(&c, &x)[0];
    let q = |v: f32, s: f32, z: i32| ((v / s).round_ties_even() as i32 + z).clamp(-128, 127);
    for ch in 0..2 {
        let mean: f32 = x[ch * 9..][..9]
            .iter()
            .map(|&v| (q(v, sx, -10) + 10) as f32 * sx)
            .sum::<f32>()
            / 9.0;
        let want = q(mean, sy, 4);
        let got = i32::from(y.1[ch] as i8);
        assert!((got - want).abs() <= 1, "channel {ch}: {got} vs {want}");
    }
}

#[test]
fn uint8_qdq_chain_runs_in_int8_without_conversions_between_ops() {
    let (s, z) = (0.02f32, 120i32);
    let onnx = model(
        13,
        [
            &qdq("x", ["x", "x8", "xd"], ["s", "z"])[..],
            &[node(
                "MaxPool",
                "pool",
                &["xd"],
                &["p"],
                vec![
                    attr_ints("kernel_shape", &[2, 2]),
                    attr_ints("strides", &[2, 2]),
                ],
            )],
            &qdq("p", ["p", "p8", "y"], ["s", "z"]),
        ]
        .concat(),
        vec![fixed("x", &[1, 1, 4, 4])],
        vec![unshaped("y")],
        qparams(("s", s), ("z", z), data_type::UINT8).to_vec(),
    );
    let (c, ops) = convert_ops(&onnx);
    // The layout's NCHW <-> NHWC moves of a 1-channel image are free Reshapes.
    let work: Vec<&String> = ops.iter().filter(|o| *o != "Reshape").collect();
    assert_eq!(
        work,
        ["Quantize", "QuantMaxPool2d", "Dequantize"],
        "{ops:?}"
    );
    let x: Vec<f32> = pseudo_random(16, 11).iter().map(|v| v * 3.0).collect();
    let y = &run(&c, &x)[0];
    let q = |v: f32| ((v / s).round_ties_even() as i32 + z).clamp(0, 255);
    for (k, out) in y.1.chunks_exact(4).enumerate() {
        let (oy, ox) = (k / 2, k % 2);
        let m = (0..4)
            .map(|t| q(x[(oy * 2 + t / 2) * 4 + ox * 2 + t % 2]))
            .max()
            .unwrap_or(0);
        let want = (m - z) as f32 * s;
        let got = f32::from_le_bytes([out[0], out[1], out[2], out[3]]);
        assert_eq!(got, want, "element {k}");
    }
}

/// `x` (one 6x6 channel) dequantized, pooled by a `k`x`k` window with stride 2 and `pad` cells of
/// zeros on every side counted as cells, with ONNX's ceil_mode output size (`out` per axis):
/// `max` or the mean of the cells clipped to the padded input.
fn pool_ceil_reference(xd: &[f32], k: usize, pad: usize, out: usize, max: bool) -> Vec<f32> {
    let padded = 6 + 2 * pad;
    let at = |r: usize, c: usize| {
        let inside = (pad..pad + 6).contains(&r) && (pad..pad + 6).contains(&c);
        if inside {
            xd[(r - pad) * 6 + c - pad]
        } else {
            0.0
        }
    };
    let mut y = Vec::new();
    for oy in 0..out {
        for ox in 0..out {
            let rows = oy * 2..(oy * 2 + k).min(padded);
            let cols = ox * 2..(ox * 2 + k).min(padded);
            let cells: Vec<f32> = rows
                .flat_map(|r| cols.clone().map(move |c| (r, c)))
                .map(|(r, c)| at(r, c))
                .collect();
            y.push(if max {
                cells.iter().copied().fold(f32::NEG_INFINITY, f32::max)
            } else {
                cells.iter().sum::<f32>() / cells.len() as f32
            });
        }
    }
    y
}

#[test]
fn qdq_pools_with_ceil_mode_run_in_int8() {
    let (s, z) = (0.02f32, -3i32);
    let pool = |op: &str, name: &str, out: &str, extra: Vec<_>| {
        let mut attrs = vec![
            attr_ints("kernel_shape", &[3, 3]),
            attr_ints("strides", &[2, 2]),
            attr_i("ceil_mode", 1),
        ];
        attrs.extend(extra);
        node(op, name, &["xd"], &[out], attrs)
    };
    let onnx = model(
        13,
        [
            &qdq("x", ["x", "x8", "xd"], ["s", "z"])[..],
            &[
                // 6 wide, window 3, stride 2: ceil 3 where floor gives 2.
                pool("MaxPool", "max", "m", vec![]),
                pool("AveragePool", "avg", "a", vec![]),
                // Padded to 8: ceil 4 where floor gives 3; the pads count, the ceil cells do not.
                pool(
                    "AveragePool",
                    "avg_incl",
                    "b",
                    vec![attr_ints("pads", &[1; 4]), attr_i("count_include_pad", 1)],
                ),
            ],
            &qdq("m", ["m", "m8", "y1"], ["s", "z"]),
            &qdq("a", ["a", "a8", "y2"], ["s", "z"]),
            &qdq("b", ["b", "b8", "y3"], ["s", "z"]),
        ]
        .concat(),
        vec![fixed("x", &[1, 1, 6, 6])],
        vec![unshaped("y1"), unshaped("y2"), unshaped("y3")],
        qparams(("s", s), ("z", z), data_type::INT8).to_vec(),
    );
    let (c, ops) = convert_ops(&onnx);
    assert!(ops.contains(&"QuantMaxPool2d".to_string()), "{ops:?}");
    assert_eq!(
        ops.iter().filter(|o| *o == "QuantAvgPool2d").count(),
        2,
        "{ops:?}"
    );
    assert!(
        !ops.iter().any(|o| o == "MaxPool2d" || o == "AvgPool2d"),
        "{ops:?}"
    );
    let x: Vec<f32> = pseudo_random(36, 5).iter().map(|v| v * 2.0).collect();
    let q = |v: f32| ((v / s).round_ties_even() as i32 + z).clamp(-128, 127);
    let xd: Vec<f32> = x.iter().map(|&v| (q(v) - z) as f32 * s).collect();
    let outputs = run(&c, &x);
    let cases = [
        (pool_ceil_reference(&xd, 3, 0, 3, true), 0),
        (pool_ceil_reference(&xd, 3, 0, 3, false), 1),
        (pool_ceil_reference(&xd, 3, 1, 4, false), 1),
    ];
    for (k, ((want, lsb), (dtype, bytes))) in cases.iter().zip(&outputs).enumerate() {
        assert_eq!(*dtype, DType::F32, "output {k}");
        let got: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect();
        assert_eq!(got.len(), want.len(), "output {k}");
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            let steps = (q(*g) - q(*w)).abs();
            assert!(steps <= *lsb, "output {k} element {i}: {g} vs {w}");
        }
    }
}

/// A QDQ Softmax on `x [1, n]`: input scale 0.05, zero point 0; output TFLite's 1/256 and -128.
fn qdq_softmax(n: i64) -> Vec<u8> {
    model(
        13,
        [
            &qdq("x", ["x", "x8", "xd"], ["sx", "zx"])[..],
            &[
                node1("Softmax", "softmax", &["xd"], "p"),
                node1("QuantizeLinear", "qy", &["p", "sy", "zy"], "y"),
            ],
        ]
        .concat(),
        vec![fixed("x", &[1, n])],
        vec![of_type(unshaped("y"), data_type::INT8)],
        [
            qparams(("sx", 0.05), ("zx", 0), data_type::INT8),
            qparams(("sy", 1.0 / 256.0), ("zy", -128), data_type::INT8),
        ]
        .concat(),
    )
}

/// The int8 softmax sums a lane in fixed point with room for 4,095 terms: a longer axis (PP-OCR's
/// recognizer has 6,625 characters) stays a float Softmax between its Dequantize and Quantize instead of
/// becoming a QuantSoftmax the runtime refuses, and still computes ONNX's values.
#[test]
fn qdq_softmax_longer_than_the_int8_kernel_stays_float() {
    let (_, short) = convert_ops(&qdq_softmax(16));
    assert!(short.contains(&"QuantSoftmax".to_string()), "{short:?}");
    let n = 4096;
    let (c, ops) = convert_ops(&qdq_softmax(n as i64));
    assert!(!ops.contains(&"QuantSoftmax".to_string()), "{ops:?}");
    assert!(ops.contains(&"Softmax".to_string()), "{ops:?}");
    let x: Vec<f32> = pseudo_random(n, 3).iter().map(|v| v * 6.0).collect();
    let y = &run(&c, &x)[0];
    assert_eq!(y.0, DType::I8);
    // ONNX: xd = clamp(rint(x / 0.05)) * 0.05; y = clamp(rint(softmax(xd) * 256) - 128).
    let xd: Vec<f64> = x
        .iter()
        .map(|&v| f64::from((v / 0.05).round_ties_even().clamp(-128.0, 127.0)) * 0.05)
        .collect();
    let max = xd.iter().cloned().fold(f64::MIN, f64::max);
    let sum: f64 = xd.iter().map(|v| (v - max).exp()).sum();
    for (i, v) in xd.iter().enumerate() {
        let want = (((v - max).exp() / sum * 256.0).round() as i32 - 128).clamp(-128, 127);
        let got = i32::from(y.1[i] as i8);
        assert!((got - want).abs() <= 1, "element {i}: {got} vs {want}");
    }
}

/// A QDQ model `y = Q(op(DQ(Q(x)), c))` with the constant `c` as op's second input (first when
/// `constant_first`), x's parameters `(0.05, 3)` and y's `ys`.
fn qdq_with_constant(op: &str, c: f32, constant_first: bool, ys: (f32, i32)) -> Vec<u8> {
    let inputs: [&str; 2] = if constant_first {
        ["c", "a"]
    } else {
        ["a", "c"]
    };
    model(
        13,
        [
            &qdq("a", ["x", "a8", "a"], ["sa", "za"])[..],
            &[
                node1(op, "op", &inputs, "r"),
                node1("QuantizeLinear", "qy", &["r", "sy", "zy"], "y"),
            ],
        ]
        .concat(),
        vec![fixed("x", &[1, 24])],
        vec![of_type(unshaped("y"), data_type::INT8)],
        [
            &qparams(("sa", 0.05), ("za", 3), data_type::INT8)[..],
            &qparams(("sy", ys.0), ("zy", ys.1), data_type::INT8),
            &[floats("c", &[], &[c])],
        ]
        .concat(),
    )
}

/// Add, Sub, Mul and Div with a constant, and Max and Min with one, run on int8 data (QuantAdd,
/// QuantMul, QuantLut; no float op left), within 1 LSB of ONNX's definition computed here (the
/// constant is quantized per tensor for the arithmetic ones; the bounds are exact).
#[test]
fn qdq_ops_with_a_constant_operand_run_in_int8() {
    let q = |v: f32, s: f32, z: i32| ((v / s).round_ties_even() as i32 + z).clamp(-128, 127);
    let x: Vec<f32> = pseudo_random(24, 11).iter().map(|v| v * 6.0).collect();
    // (op, constant, constant first, int8 kind, the real function, LSB allowed)
    type Case = (
        &'static str,
        f32,
        bool,
        &'static str,
        fn(f32, f32) -> f32,
        i32,
    );
    let cases: [Case; 8] = [
        ("Add", 3.0, false, "QuantAdd", |a, c| a + c, 1),
        ("Add", 3.0, true, "QuantAdd", |a, c| a + c, 1),
        ("Sub", 0.75, false, "QuantAdd", |a, c| a - c, 1),
        ("Mul", 0.2, true, "QuantMul", |a, c| a * c, 1),
        ("Div", 6.0, false, "QuantMul", |a, c| a / c, 1),
        ("Max", 0.0, false, "QuantLut", |a: f32, c| a.max(c), 0),
        ("Min", 1.5, true, "QuantLut", |a: f32, c| a.min(c), 0),
        ("Max", -0.5, true, "QuantLut", |a: f32, c| a.max(c), 0),
    ];
    for (op, c, first, kind, f, lsb) in cases {
        let ys = (0.04, -2);
        let (conv, ops) = convert_ops(&qdq_with_constant(op, c, first, ys));
        assert!(ops.contains(&kind.to_string()), "{op}: {ops:?}");
        assert!(!ops.contains(&"Binary".to_string()), "{op}: {ops:?}");
        let y = &run(&conv, &x)[0];
        for (i, &v) in x.iter().enumerate() {
            let a = (q(v, 0.05, 3) - 3) as f32 * 0.05;
            let want = q(f(a, c), ys.0, ys.1);
            let got = i32::from(y.1[i] as i8);
            assert!(
                (got - want).abs() <= lsb,
                "{op} {c}: element {i}: {got} vs {want}"
            );
        }
    }
}

/// HardSwish written out, `x * relu6(x + 3) / 6` with a Q/DQ pair on x and on the sum only: the
/// product and the division become one QuantMul (the division in its output scale), within 1 LSB of
/// the definition.
#[test]
fn a_product_divided_by_a_constant_is_one_quant_mul() {
    let (sx, ss, sy) = (0.05f32, 0.03f32, 0.04f32);
    let onnx = model(
        13,
        [
            &qdq("x", ["x", "x8", "a"], ["sx", "zx"])[..],
            &[node1("Add", "add", &["a", "three"], "sum")],
            &qdq("s", ["sum", "s8", "b"], ["ss", "zs"]),
            &[
                node1("Mul", "mul", &["a", "b"], "prod"),
                node1("Div", "div", &["prod", "six"], "r"),
                node1("QuantizeLinear", "qy", &["r", "sy", "zy"], "y"),
            ],
        ]
        .concat(),
        vec![fixed("x", &[1, 24])],
        vec![of_type(unshaped("y"), data_type::INT8)],
        [
            &qparams(("sx", sx), ("zx", 0), data_type::INT8)[..],
            &qparams(("ss", ss), ("zs", -128), data_type::INT8),
            &qparams(("sy", sy), ("zy", 0), data_type::INT8),
            &[floats("three", &[], &[3.0]), floats("six", &[], &[6.0])],
        ]
        .concat(),
    );
    let (c, ops) = convert_ops(&onnx);
    assert_eq!(
        ops.iter().filter(|o| *o == "QuantMul").count(),
        1,
        "{ops:?}"
    );
    assert!(!ops.contains(&"Binary".to_string()), "{ops:?}");
    let q = |v: f32, s: f32, z: i32| ((v / s).round_ties_even() as i32 + z).clamp(-128, 127);
    let x: Vec<f32> = pseudo_random(24, 5).iter().map(|v| v * 5.0).collect();
    let y = &run(&c, &x)[0];
    for (i, &v) in x.iter().enumerate() {
        let a = q(v, sx, 0) as f32 * sx;
        let b = (q(a + 3.0, ss, -128) + 128) as f32 * ss;
        let want = q(a * b / 6.0, sy, 0);
        let got = i32::from(y.1[i] as i8);
        assert!((got - want).abs() <= 1, "element {i}: {got} vs {want}");
    }
}
