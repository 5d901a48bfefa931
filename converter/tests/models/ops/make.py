#!/usr/bin/env python3
"""Build the small op-coverage models of ember-convert's tests, with onnxruntime goldens.

Each case is one ONNX model with one input `x` and one output `y`, plus `<case>.x.npy` and
`<case>.y.npy` (onnxruntime 1.32.0, CPU, one thread). Together they cover every importer path that
changes numbers: conv variants (stride, asymmetric pads, dilation, groups, depthwise, auto_pad),
pooling with padding, Gemm/MatMul variants, broadcasting with constants in NHWC, mixed layouts,
Concat/Transpose/Pad/Reshape, old-opset attribute forms (Clip, Pad, Softmax coercion), element-wise
math breadth (unary ops, Pow/PRelu/Mod, variadic Min/Max/Sum/Mean), the Reduce* family and
GlobalMaxPool (`reductions`), and BatchNormalization folding, Layer/InstanceNormalization and LogSoftmax
(`norms`), 1-D Conv and pooling on [N, C, L] (`conv1d`), an attention block written with Einsum
and LpNormalization (`attention_einsum`), and pooling with ceil_mode (`pool_ceil`) and dilations
(`pool_dilations`).
Deterministic: fixed seed, so rerunning gives byte-identical files.

    target/venv/bin/python converter/tests/models/ops/make.py [CASE ...]
"""

import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

import array_cases  # noqa: E402  (array and shape ops; next to this file)
import signal_cases  # noqa: E402  (STFT and negative Pad)
import control_cases  # noqa: E402  (Loop, Scan, If)

OUT = Path(__file__).resolve().parent
RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name=name)


def save(case, opset, nodes, x_shape, inits, x=None, y_shape=None, onnx_infers=True):
    graph = helper.make_graph(
        nodes, case,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        initializer=inits,
    )
    model = helper.make_model(graph, producer_name="ember-convert tests",
                              opset_imports=[helper.make_opsetid("", opset)])
    # Opset 19 and later need IR version 9.
    model.ir_version = 8 if opset <= 18 else 9
    # Let onnx infer the output's shape (most cases do not state it), then check the whole model;
    # `onnx_infers=False` for a case whose stated shape onnx's inference gets wrong.
    if onnx_infers:
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model, full_check=onnx_infers)
    path = OUT / f"{case}.onnx"
    path.write_bytes(model.SerializeToString())
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    if x is None:
        x = rand(*x_shape)
    y = sess.run(["y"], {"x": x})[0].astype(np.float32)
    np.save(OUT / f"{case}.x.npy", x)
    np.save(OUT / f"{case}.y.npy", y)
    print(f"{case:14s} x {list(x.shape)} -> y {list(y.shape)}")


def conv_variants():
    n = helper.make_node
    nodes = [
        # stride 2, asymmetric pads, bias
        n("Conv", ["x", "w1", "b1"], ["c1"], name="c1", strides=[2, 1], pads=[1, 0, 2, 1]),
        # dilation 2, SAME_UPPER is not allowed with dilation in ORT for all cases; explicit pads
        n("Conv", ["c1", "w2"], ["c2"], name="c2", dilations=[2, 2], pads=[2, 2, 2, 2]),
        # grouped (2 groups), SAME_UPPER, stride 2
        n("Conv", ["c2", "w3", "b3"], ["c3"], name="c3", group=2, auto_pad="SAME_UPPER", strides=[2, 2]),
        # depthwise, SAME_LOWER, fused Clip(0, 6)
        n("Conv", ["c3", "w4", "b4"], ["c4"], name="c4", group=8, auto_pad="SAME_LOWER", kernel_shape=[3, 3]),
        n("Clip", ["c4", "zero", "six"], ["c5"], name="relu6"),
        # 1x1, VALID, then a general Clip that is fused
        n("Conv", ["c5", "w5"], ["c6"], name="c6", auto_pad="VALID"),
        n("Clip", ["c6", "lo", "hi"], ["y"], name="clip"),
    ]
    inits = [
        init("w1", rand(6, 3, 3, 3)), init("b1", rand(6)),
        init("w2", rand(8, 6, 3, 3)),
        init("w3", rand(8, 4, 3, 3)), init("b3", rand(8)),
        init("w4", rand(8, 1, 3, 3)), init("b4", rand(8)),
        init("w5", rand(5, 8, 1, 1)),
        init("zero", np.float32(0.0)), init("six", np.float32(6.0)),
        init("lo", np.float32(-0.5)), init("hi", np.float32(0.75)),
    ]
    save("conv_variants", 13, nodes, [2, 3, 11, 9], inits)


def pools():
    n = helper.make_node
    nodes = [
        n("AveragePool", ["x"], ["a1"], name="avg_excl", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1]),
        n("AveragePool", ["x"], ["a2"], name="avg_incl", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
          count_include_pad=1),
        n("Sub", ["a1", "a2"], ["d"], name="diff"),
        n("MaxPool", ["x"], ["m1"], name="max_same", kernel_shape=[3, 2], strides=[2, 2], auto_pad="SAME_UPPER"),
        n("MaxPool", ["x"], ["m2"], name="max_pad", kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 1, 1],
          ceil_mode=1),
        n("Add", ["m1", "m2"], ["m"], name="sum"),
        n("Mul", ["m", "d"], ["p"], name="prod"),
        n("GlobalAveragePool", ["p"], ["g"], name="gap"),
        n("Flatten", ["g"], ["f"], name="flat"),
        n("Flatten", ["m1"], ["f2"], name="flat2", axis=1),
        n("Concat", ["f", "f2"], ["y"], name="cat", axis=1),
    ]
    save("pools", 13, nodes, [2, 3, 7, 7], [])


def gemm_variants():
    n = helper.make_node
    nodes = [
        n("Flatten", ["x"], ["f"], name="flat"),                                    # [2, 12]
        n("Gemm", ["f", "w1", "c1"], ["g1"], name="g1", alpha=0.5, beta=2.0),        # B [12, 7], C [7]
        n("Gemm", ["g1", "w2", "c2"], ["g2"], name="g2", transB=1, beta=0.5),        # B [5, 7], C [2, 5]
        n("Transpose", ["g2"], ["t"], name="t", perm=[1, 0]),                        # [5, 2]
        n("Gemm", ["t", "w3"], ["g3"], name="g3", transA=1),                         # [2, 4]
        n("MatMul", ["g3", "w4"], ["m1"], name="mm_const"),                          # FullyConnected, [2, 3]
        n("MatMul", ["g3", "v"], ["m2"], name="mm_vec"),                              # rank-1 B: [2]
        n("Gemm", ["m1", "g5"], ["g4"], name="g4", transB=1, alpha=2.0),             # non-constant B: [2, 2]
        n("Tanh", ["g4"], ["th"], name="tanh"),
        n("Reshape", ["th", "shape"], ["r"], name="rs"),                              # [2, 1, 2]
        n("Transpose", ["r"], ["r2"], name="t2", perm=[0, 2, 1]),                    # [2, 2, 1]
        n("MatMul", ["r", "r2"], ["mm3"], name="mm_batched"),                         # [2, 1, 1]
        n("Reshape", ["mm3", "shape2"], ["y0"], name="rs2"),                          # [2, 1]
        n("Add", ["y0", "m2"], ["y"], name="add_vec"),                                # [2, 2]
    ]
    # g4 multiplies m1 [2, 3] by g5^T where g5 = m1 * 0.5 + const: a non-constant B.
    nodes.insert(7, n("Add", ["m1", "k"], ["g5"], name="g5"))
    inits = [
        init("w1", rand(12, 7)), init("c1", rand(7)),
        init("w2", rand(5, 7)), init("c2", rand(2, 5)),
        init("w3", rand(5, 4)),
        init("w4", rand(4, 3)),
        init("v", rand(4)),
        init("k", rand(2, 3)),
        init("shape", np.array([2, 1, -1], dtype=np.int64)),
        init("shape2", np.array([0, -1], dtype=np.int64)),
    ]
    save("gemm_variants", 13, nodes, [2, 3, 2, 2], inits)


def layout_mix():
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1"], ["c1"], name="c1", pads=[1, 1, 1, 1]),
        n("Add", ["c1", "bias_c11"], ["a1"], name="add_c11"),            # constant [C,1,1] -> permuted
        n("Relu", ["a1"], ["r1"], name="r1"),
        n("Conv", ["r1", "w2", "b2"], ["c2"], name="c2", pads=[1, 1, 1, 1]),
        n("Add", ["c2", "r1"], ["res"], name="residual"),                 # both NHWC
        n("Sigmoid", ["res"], ["s"], name="sig"),
        n("Sub", ["one", "s"], ["om"], name="one_minus"),                 # constant first operand
        n("Div", ["om", "scale_w"], ["dw"], name="div_w"),                # constant [W]
        n("Mul", ["dw", "x"], ["mx"], name="mixed"),                      # NHWC * NCHW graph input
        n("Concat", ["mx", "c2"], ["cat"], name="cat", axis=1),
        n("Transpose", ["cat"], ["t"], name="t", perm=[0, 2, 3, 1]),
        n("Pad", ["t", "pads", "pv"], ["p"], name="pad"),
        n("Reshape", ["p", "shape"], ["rs"], name="rs"),
        n("Softmax", ["rs"], ["y"], name="sm", axis=1),
    ]
    inits = [
        init("w1", rand(4, 4, 3, 3)),
        init("bias_c11", rand(4, 1, 1)),
        init("w2", rand(4, 4, 3, 3)), init("b2", rand(4)),
        init("one", np.float32(1.0)),
        init("scale_w", (rand(5) + 2.0).astype(np.float32)),
        init("pads", np.array([0, 1, 0, 0, 0, 0, 2, 0], dtype=np.int64)),
        init("pv", np.float32(0.25)),
        init("shape", np.array([2, -1, 8], dtype=np.int64)),
    ]
    save("layout_mix", 13, nodes, [2, 4, 3, 5], inits)


def old_opset():
    n = helper.make_node
    nodes = [
        n("Clip", ["x"], ["c"], name="clip", min=-0.5, max=0.5),
        n("Pad", ["c"], ["p"], name="pad", pads=[0, 1, 0, 0, 1, 2], value=-1.0),
        n("Dropout", ["p"], ["d"], name="drop", ratio=0.3),
        n("Identity", ["d"], ["i"], name="ident"),
        n("Softmax", ["i"], ["s"], name="sm_coerced", axis=1),   # rank 3: flatten to [N, C*W]
        n("Softmax", ["s"], ["y"], name="sm_last", axis=2),
    ]
    save("old_opset", 10, nodes, [2, 3, 4], [])


def conv_output():
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w"], ["c"], name="c", strides=[2, 2]),
        n("Relu", ["c"], ["y"], name="relu"),
    ]
    save("conv_output", 13, nodes, [1, 2, 6, 6], [init("w", rand(3, 2, 2, 2))])


def math_breadth():
    """Every element-wise math importer: unary ops, Pow/PRelu/Mod, variadic Min/Max/Sum/Mean.

    Its own generator, so that adding cases elsewhere leaves its data alone. The input holds exact
    halves (Round ties to even) and feeds a Conv, so that PRelu's per-channel slope meets NHWC.
    """
    rng = np.random.default_rng(20)

    def r(*shape, lo=-1.0, hi=1.0):
        return rng.uniform(lo, hi, size=shape).astype(np.float32)

    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w"], ["c"], name="conv"),                               # NHWC from here
        n("PRelu", ["c", "slope_c11"], ["pr"], name="prelu_channel"),
        n("PRelu", ["x", "slope_w"], ["pw"], name="prelu_last"),
        n("Abs", ["x"], ["a"], name="abs"),
        n("Neg", ["x"], ["ng"], name="neg"),
        n("Sqrt", ["a"], ["sq"], name="sqrt"),
        n("Sin", ["x"], ["sn"], name="sin"),
        n("Exp", ["sn"], ["ex"], name="exp"),
        n("Add", ["a", "one"], ["a1"], name="a_plus_1"),
        n("Log", ["a1"], ["lg"], name="log"),
        n("Erf", ["x"], ["ef"], name="erf"),
        n("Gelu", ["pr"], ["g0"], name="gelu"),
        n("Gelu", ["x"], ["g1"], name="gelu_tanh", approximate="tanh"),
        n("Floor", ["x"], ["fl"], name="floor"),
        n("Ceil", ["x"], ["ce"], name="ceil"),
        n("Round", ["x"], ["rd"], name="round"),
        n("Add", ["a", "half"], ["ah"], name="a_plus_half"),
        n("Reciprocal", ["ah"], ["rc"], name="reciprocal"),
        n("LeakyRelu", ["x"], ["lr"], name="leaky", alpha=0.1),
        n("HardSigmoid", ["x"], ["hs"], name="hard_sigmoid", alpha=0.3, beta=0.4),
        n("HardSwish", ["pr"], ["hw"], name="hard_swish"),
        n("Elu", ["x"], ["el"], name="elu", alpha=0.7),
        n("Selu", ["x"], ["se"], name="selu"),
        n("Softplus", ["x"], ["sp"], name="softplus"),
        n("Softsign", ["x"], ["ss"], name="softsign"),
        n("Sign", ["x"], ["sg"], name="sign"),
        n("Cos", ["x"], ["cs"], name="cos"),
        n("Mul", ["x", "k03"], ["x03"], name="x_times_03"),
        n("Tan", ["x03"], ["tn"], name="tan"),
        n("Atan", ["x"], ["at"], name="atan"),
        n("Asin", ["ss"], ["as"], name="asin"),
        n("Acos", ["ss"], ["ac"], name="acos"),
        n("Atanh", ["ss"], ["ath"], name="atanh"),
        n("Sinh", ["x03"], ["sh"], name="sinh"),
        n("Cosh", ["x03"], ["ch"], name="cosh"),
        n("Asinh", ["x"], ["ash"], name="asinh"),
        n("Acosh", ["a1"], ["ach"], name="acosh"),
        n("Celu", ["x"], ["cl"], name="celu", alpha=1.5),
        n("ThresholdedRelu", ["x"], ["tr"], name="thresholded", alpha=0.5),
        n("Mish", ["x"], ["mi"], name="mish"),
        n("Shrink", ["x"], ["sk"], name="shrink", bias=0.2, lambd=0.6),
        n("Sigmoid", ["x"], ["sm"], name="sigmoid"),
        n("Tanh", ["x"], ["th"], name="tanh"),
        n("Relu", ["x"], ["rl"], name="relu"),
        n("Pow", ["ah", "expo_w"], ["pw1"], name="pow_w"),                      # exponent [5]
        n("Pow", ["x", "two"], ["pw2"], name="pow_2"),                          # becomes x * x
        n("Pow", ["a", "half"], ["pw3"], name="pow_half"),                      # becomes Sqrt
        n("Pow", ["x", "three_i64"], ["pw4"], name="pow_int"),                  # INT64 exponent
        n("Mod", ["x", "k07"], ["md"], name="fmod", fmod=1),
        # Variadic: 1 to 4 inputs, broadcasting, NHWC and ONNX layouts mixed.
        n("Min", ["sn", "ef", "ss"], ["v0"], name="min3"),
        n("Max", ["lr", "hw", "k_w"], ["v1"], name="max3_bcast"),
        n("Sum", ["g0", "g1", "fl", "ce"], ["v2"], name="sum4"),
        n("Mean", ["rd", "rc", "hs"], ["v3"], name="mean3"),
        n("Max", ["el"], ["v4"], name="max1"),
        n("Sum", ["se", "sp", "sg", "cs", "tn"], ["v5"], name="sum5"),
        n("Mean", ["at", "as", "ac", "ath", "sh", "ch"], ["v6"], name="mean6"),
        n("Min", ["ash", "ach", "cl"], ["v7"], name="min_b"),
        n("Sum", ["tr", "mi", "sk", "sm", "th", "rl"], ["v8"], name="sum6"),
        n("Sum", ["pw1", "pw2", "pw3", "pw4", "md"], ["v9"], name="pows"),
        n("Mean", ["ng", "sq", "ex", "lg", "pw"], ["v10"], name="mean5"),
        n("Concat", ["v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10"], ["y"],
          name="cat", axis=1),
    ]
    x = r(2, 3, 4, 5, lo=-3.0, hi=3.0)
    x[0, 0, 0, :] = [-2.5, -1.5, -0.5, 0.5, 2.5]
    x[1, 2, 3, :] = [1.5, 3.5, -3.5, 0.0, -0.0]
    inits = [
        init("w", r(3, 3, 1, 1)),
        init("slope_c11", r(3, 1, 1)),
        init("slope_w", r(5)),
        init("one", np.float32(1.0)),
        init("half", np.float32(0.5)),
        init("two", np.float32(2.0)),
        init("three_i64", np.int64(3)),
        init("k03", np.float32(0.3)),
        init("k07", np.float32(0.7)),
        init("expo_w", r(5, lo=0.5, hi=2.0)),
        init("k_w", r(5)),
    ]
    save("math_breadth", 20, nodes, [2, 3, 4, 5], inits, x=x)


def reductions():
    """The Reduce* family at opset 13 (axes attribute, ReduceSum's axes input) and 18 (axes input,
    noop_with_empty_axes), keepdims both ways, negative and repeated-free axes, and GlobalMaxPool on
    NHWC data (after a Conv) and on the graph input. Its own generator, like math_breadth."""
    rng = np.random.default_rng(31)

    def r(*shape):
        return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)

    n = helper.make_node
    flat = init("flat", np.array([1, -1], dtype=np.int64))

    def flattened(nodes, outs):
        names = []
        for o in outs:
            nodes.append(n("Reshape", [o, "flat"], [o + "_f"], name=o + "_flat"))
            names.append(o + "_f")
        nodes.append(n("Concat", names, ["y"], name="cat", axis=1))
        return nodes

    x = r(2, 3, 4, 5)
    nodes = [
        n("ReduceSum", ["x", "ax_last"], ["r1"], name="sum_last"),                      # [2, 3, 4, 1]
        n("ReduceMean", ["x"], ["r2"], name="mean_12", axes=[1, 2], keepdims=0),          # [2, 5]
        n("ReduceMax", ["x"], ["r3"], name="max_hw", axes=[2, 3]),                        # [2, 3, 1, 1]
        n("ReduceMin", ["x"], ["r4"], name="min_0", axes=[0], keepdims=0),                # [3, 4, 5]
        n("ReduceProd", ["x"], ["r5"], name="prod_w", axes=[-1]),                         # [2, 3, 4, 1]
        n("ReduceL1", ["x"], ["r6"], name="l1_c", axes=[1]),
        n("ReduceL2", ["x"], ["r7"], name="l2_h", axes=[-2], keepdims=0),
        n("ReduceLogSumExp", ["x"], ["r8"], name="lse_13", axes=[3, 1]),
        n("ReduceSumSquare", ["x"], ["r9"], name="sumsq_all", keepdims=0),                # []
        n("ReduceSum", ["x"], ["r10"], name="sum_all"),                                   # [1, 1, 1, 1]
        n("Conv", ["x", "w"], ["c"], name="conv"),
        n("GlobalMaxPool", ["c"], ["r11"], name="gmp_nhwc"),
        n("ReduceMean", ["c"], ["r12"], name="mean_nhwc", axes=[1, -1]),
        n("GlobalMaxPool", ["x"], ["r13"], name="gmp_input"),
        n("ReduceMean", ["c"], ["r14"], name="mean_hw_nhwc", axes=[2, 3], keepdims=0),    # [2, 4]
        n("ReduceSum", ["c", "ax_c"], ["r15"], name="sum_c_nhwc", keepdims=0),           # [2, 4, 5]
    ]
    outs = [f"r{i}" for i in range(1, 16)]
    inits = [flat, init("ax_last", np.array([-1], dtype=np.int64)), init("w", r(4, 3, 1, 1)),
             init("ax_c", np.array([1], dtype=np.int64))]
    save("reduce_v13", 13, flattened(nodes, outs), [2, 3, 4, 5], inits, x=x)

    nodes = [
        n("ReduceMean", ["x", "ax_hw"], ["s1"], name="mean_hw"),
        n("ReduceMax", ["x", "ax_neg"], ["s2"], name="max_neg", keepdims=0),
        n("ReduceMin", ["x", ""], ["s3"], name="min_all"),                                # no axes: all
        n("ReduceProd", ["x"], ["s4"], name="prod_noop", noop_with_empty_axes=1),         # identity
        n("ReduceSum", ["x", "ax_none"], ["s5"], name="sum_empty_axes", keepdims=0),       # all
        n("ReduceL2", ["x", "ax_c"], ["s6"], name="l2_c"),
        n("ReduceLogSumExp", ["x", "ax_c"], ["s7"], name="lse_c", keepdims=0),
        n("ReduceSumSquare", ["x", "ax_hw"], ["s8"], name="sumsq_hw"),
        n("ReduceL1", ["x", "ax_neg"], ["s9"], name="l1_neg"),
        n("ReduceLogSum", ["s8", "ax_c"], ["s10"], name="log_sum_c"),                   # of sums of squares
    ]
    outs = [f"s{i}" for i in range(1, 11)]
    inits = [
        flat,
        init("ax_hw", np.array([2, 3], dtype=np.int64)),
        init("ax_neg", np.array([-3, -1], dtype=np.int64)),
        init("ax_none", np.array([], dtype=np.int64)),
        init("ax_c", np.array([1], dtype=np.int64)),
    ]
    save("reduce_v18", 18, flattened(nodes, outs), [2, 3, 4, 5], inits, x=x)


def norms():
    """BatchNormalization folded into Conv and Gemm, and rewritten where it cannot be (after an
    activation, on the graph input, after a Conv whose output is read twice); LayerNormalization
    (last axis, several axes with a broadcast scale, no bias); InstanceNormalization; LogSoftmax, new
    and coerced. Its own generator, like math_breadth."""
    rng = np.random.default_rng(32)

    def r(*shape, lo=-1.0, hi=1.0):
        return rng.uniform(lo, hi, size=shape).astype(np.float32)

    def bn_params(prefix, c):
        return [init(f"{prefix}_s", r(c, lo=0.5, hi=1.5)), init(f"{prefix}_b", r(c)),
                init(f"{prefix}_m", r(c)), init(f"{prefix}_v", r(c, lo=0.1, hi=2.0))]

    def bn(name, x, out, prefix, **kw):
        return helper.make_node("BatchNormalization", [x] + [f"{prefix}_{k}" for k in "sbmv"], [out],
                                name=name, **kw)

    n = helper.make_node
    x = r(2, 4, 5, 6)
    nodes = [
        n("Conv", ["x", "w1", "cb1"], ["c1"], name="c1", pads=[1, 1, 1, 1]),
        bn("bn1", "c1", "b1", "bn1", epsilon=1e-3),                     # folds into c1
        n("Relu", ["b1"], ["r1"], name="relu1"),
        n("Conv", ["r1", "w2"], ["c2"], name="c2", pads=[1, 1, 1, 1]),  # no bias
        bn("bn2", "c2", "b2", "bn2"),                                   # folds, bias created
        n("Relu", ["b2"], ["r2"], name="relu2"),
        bn("bn3", "r2", "b3", "bn3"),                                   # after an activation: Mul+Add
        bn("bn4", "x", "b4", "bn4"),                                    # on the graph input
        n("Conv", ["x", "w3"], ["c3"], name="c3", pads=[1, 1, 1, 1]),
        bn("bn5", "c3", "b5", "bn5"),                                   # c3 is read twice: Mul+Add
        n("Add", ["b3", "b4"], ["a1"], name="add1"),
        n("Add", ["b5", "c3"], ["a2"], name="add2"),
        n("InstanceNormalization", ["a1", "in_s", "in_b"], ["i1"], name="inorm", epsilon=1e-4),
        n("LayerNormalization", ["a2", "ln1_s", "ln1_b"], ["l1"], name="lnorm_last"),
        n("LayerNormalization", ["i1", "ln2_s"], ["l2"], name="lnorm_chw", axis=1, epsilon=1e-3),
        n("LogSoftmax", ["l1"], ["ls"], name="log_softmax", axis=1),
        n("Add", ["l2", "ls"], ["a3"], name="add3"),
        n("Add", ["a3", "r1"], ["y"], name="add4"),
    ]
    inits = [
        init("w1", r(4, 4, 3, 3)), init("cb1", r(4)), init("w2", r(4, 4, 3, 3)),
        init("w3", r(4, 4, 3, 3)),
        init("in_s", r(4)), init("in_b", r(4)),
        init("ln1_s", r(6)), init("ln1_b", r(6)),
        init("ln2_s", r(5, 6)),                                         # broadcast to [4, 5, 6]
    ]
    for p in ["bn1", "bn2", "bn3", "bn4", "bn5"]:
        inits += bn_params(p, 4)
    save("norms", 17, nodes, [2, 4, 5, 6], inits, x=x)

    # A MobileNet-style block, Conv + BatchNormalization + Clip(0, 6) then depthwise Conv +
    # BatchNormalization + Relu: two Conv2d ops after folding and fusing.
    nodes = [
        n("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
        bn("bn", "c", "b", "bn", epsilon=1e-4),
        n("Clip", ["b", "zero", "six"], ["r"], name="relu6"),
        n("Conv", ["r", "w_dw", "b_dw"], ["d"], name="dw", group=3, pads=[1, 1, 1, 1]),
        bn("bn_dw", "d", "bd", "bn_dw"),
        n("Relu", ["bd"], ["y"], name="relu"),
    ]
    inits = [init("w", r(3, 4, 3, 3)), init("w_dw", r(3, 1, 3, 3)), init("b_dw", r(3)),
             init("zero", np.float32(0.0)), init("six", np.float32(6.0))]
    inits += bn_params("bn", 3) + bn_params("bn_dw", 3)
    save("conv_bn", 15, nodes, [2, 4, 5, 6], inits, x=x)

    # Gemm + BatchNormalization: one FullyConnected op.
    nodes = [
        n("Gemm", ["x", "w", "c"], ["g"], name="gemm", transB=1),
        bn("bn", "g", "y", "bn"),
    ]
    inits = [init("w", r(5, 6)), init("c", r(5))] + bn_params("bn", 5)
    save("gemm_bn", 15, nodes, [3, 6], inits, x=r(3, 6))

    # LogSoftmax before opset 13: axis 1 of rank 3 flattens to [N, C*W].
    nodes = [n("LogSoftmax", ["x"], ["y"], name="log_softmax", axis=1)]
    save("log_softmax_v11", 11, nodes, [2, 3, 4], [], x=r(2, 3, 4, lo=-5.0, hi=5.0))


def conv1d():
    """1-D Conv (stride, asymmetric pads, SAME_LOWER/SAME_UPPER, groups, depthwise, dilation, no bias,
    a Relu fused through the reshape back to 1-D), 1-D MaxPool/AveragePool (count_include_pad, end
    padding) and GlobalMaxPool/GlobalAveragePool of [N, C, L]. Own RNG: rebuilding only this case
    gives the same files as a full run."""
    rng = np.random.default_rng(11)

    def r(*shape):
        return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)

    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], name="c1", kernel_shape=[3], strides=[2], pads=[1, 2]),
        n("Conv", ["c1", "w2", "b2"], ["c2"], name="c2", group=2, auto_pad="SAME_LOWER"),
        n("Conv", ["c2", "w3", "b3"], ["c3"], name="c3", group=6, auto_pad="SAME_UPPER", kernel_shape=[5]),
        n("Relu", ["c3"], ["r3"], name="relu3"),
        n("Conv", ["r3", "w4"], ["c4"], name="c4", dilations=[2], pads=[2, 2]),
        n("Relu", ["c4"], ["r4"], name="relu4"),
        n("MaxPool", ["r4"], ["m"], name="max", kernel_shape=[3], strides=[2], pads=[1, 1]),
        n("AveragePool", ["r4"], ["a"], name="avg", kernel_shape=[2], strides=[2], pads=[0, 1],
          count_include_pad=1),
        n("Add", ["m", "a"], ["s"], name="sum"),
        n("GlobalMaxPool", ["s"], ["gm"], name="gmax"),
        n("GlobalAveragePool", ["s"], ["ga"], name="gavg"),
        n("Concat", ["gm", "ga"], ["g"], name="gcat", axis=2),
        n("Flatten", ["s"], ["fs"], name="flat_s"),
        n("Flatten", ["g"], ["fg"], name="flat_g"),
        n("Concat", ["fs", "fg"], ["y"], name="cat", axis=1),
    ]
    inits = [
        init("w1", r(6, 4, 3)), init("b1", r(6)),
        init("w2", r(6, 3, 3)), init("b2", r(6)),
        init("w3", r(6, 1, 5)), init("b3", r(6)),
        init("w4", r(8, 6, 3)),
    ]
    save("conv1d", 13, nodes, [2, 4, 20], inits, x=r(2, 4, 20))


def fold_affine():
    """Scales and shifts by constants around convolutions, and HardSwish written out, as PaddleOCR's
    PP-LCNetV3 exports them: Conv -> Mul(scalar) -> Add(scalar) -> x * clip(x + 3, 0, 6) / 6 ->
    Mul(scalar) -> Add(per channel) -> 1x1 Conv (folds forward) -> Sub(per channel) -> Div(scalar) ->
    Relu -> Mul(scalar) -> padded depthwise Conv (must not fold forward) -> x * HardSigmoid(x), and a
    Mul whose input has a second reader (must not fold). Own RNG."""
    rng = np.random.default_rng(13)

    def r(*shape):
        return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)

    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], name="c1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("Mul", ["c1", "a1"], ["m1"], name="scale1"),
        n("Add", ["m1", "t1"], ["s1"], name="shift1"),
        n("Add", ["s1", "three"], ["p3"], name="plus3"),
        n("Clip", ["p3", "zero", "six"], ["r6"], name="relu6"),
        n("Mul", ["s1", "r6"], ["xr"], name="times"),
        n("Div", ["xr", "six"], ["hs"], name="hswish"),
        n("Mul", ["hs", "a2"], ["m2"], name="scale2"),
        n("Add", ["m2", "t2"], ["s2"], name="shift2"),
        n("Conv", ["s2", "w2", "b2"], ["c2"], name="c2"),
        n("Sub", ["c2", "t3"], ["d3"], name="sub3"),
        n("Div", ["d3", "a3"], ["q3"], name="div3"),
        n("Relu", ["q3"], ["r3"], name="relu3"),
        n("Mul", ["r3", "a4"], ["m4"], name="scale4"),
        n("Conv", ["m4", "w4", "b4"], ["c4"], name="c4", group=6, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("HardSigmoid", ["c4"], ["hg"], name="hsig", alpha=1.0 / 6.0, beta=0.5),
        n("Mul", ["c4", "hg"], ["hs2"], name="hswish2"),
        n("Conv", ["hs2", "w5"], ["c5"], name="c5"),
        n("Mul", ["c5", "a5"], ["m5"], name="scale5"),
        n("Add", ["m5", "c5"], ["y"], name="residual"),
    ]
    inits = [
        init("w1", r(6, 3, 3, 3)), init("b1", r(6)),
        init("a1", np.array([1.7], dtype=np.float32)), init("t1", np.array([-0.3], dtype=np.float32)),
        init("three", np.array(3.0, dtype=np.float32)), init("zero", np.array(0.0, dtype=np.float32)),
        init("six", np.array(6.0, dtype=np.float32)),
        init("a2", np.array([0.8], dtype=np.float32)), init("t2", r(6, 1, 1)),
        init("w2", r(6, 6, 1, 1)), init("b2", r(6)),
        init("t3", r(1, 6, 1, 1)), init("a3", np.array([1.5], dtype=np.float32)),
        init("a4", np.array([2.0], dtype=np.float32)),
        init("w4", r(6, 1, 3, 3)), init("b4", r(6)),
        init("w5", r(4, 6, 1, 1)),
        init("a5", np.array([0.5], dtype=np.float32)),
    ]
    save("fold_affine", 13, nodes, [1, 3, 7, 9], inits, x=r(1, 3, 7, 9) * 3.0)


def scaled_hard_swish():
    """PP-LCNetV3's learnable affine block after each HardSwish, before padded convolutions (where
    fold_affine cannot take it): Conv -> HardSwish -> Mul(scalar, constant first) -> Add(scalar) ->
    padded depthwise Conv -> x * HardSigmoid(x) -> Mul(scalar) -> Sub(scalar) -> padded Conv ->
    HardSwish whose output has a second reader (the Mul after it must not fold). Own RNG."""
    rng = np.random.default_rng(17)

    def r(*shape):
        return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)

    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], name="c1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("HardSwish", ["c1"], ["h1"], name="hswish1"),
        n("Mul", ["a1", "h1"], ["m1"], name="scale1"),
        n("Add", ["m1", "t1"], ["s1"], name="shift1"),
        n("Conv", ["s1", "w2", "b2"], ["c2"], name="c2", group=6, kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("HardSigmoid", ["c2"], ["hg"], name="hsig", alpha=1.0 / 6.0, beta=0.5),
        n("Mul", ["c2", "hg"], ["h2"], name="hswish2"),
        n("Mul", ["h2", "a2"], ["m2"], name="scale2"),
        n("Sub", ["m2", "t2"], ["s2"], name="shift2"),
        n("Conv", ["s2", "w3", "b3"], ["c3"], name="c3", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        n("HardSwish", ["c3"], ["h3"], name="hswish3"),
        n("Mul", ["h3", "a3"], ["m3"], name="scale3"),
        n("Add", ["m3", "h3"], ["y"], name="residual"),
    ]
    inits = [
        init("w1", r(6, 3, 3, 3)), init("b1", r(6)),
        init("a1", np.array([1.3], dtype=np.float32)), init("t1", np.array([-0.2], dtype=np.float32)),
        init("w2", r(6, 1, 3, 3)), init("b2", r(6)),
        init("a2", np.array([0.7], dtype=np.float32)), init("t2", np.array([0.4], dtype=np.float32)),
        init("w3", r(4, 6, 3, 3)), init("b3", r(4)),
        init("a3", np.array([0.5], dtype=np.float32)),
    ]
    save("scaled_hard_swish", 14, nodes, [1, 3, 8, 10], inits, x=r(1, 3, 8, 10) * 4.0)


def group_norms():
    """GroupNormalization (opset 21: a scale and bias per channel) after a Conv, whose NHWC output
    it reads in the logical layout."""
    rng = np.random.default_rng(33)

    def r(*shape):
        return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)

    for opset, per in [(21, 6)]:
        nodes = [
            helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
            helper.make_node("GroupNormalization", ["c", "s", "b"], ["y"], name="gnorm",
                             num_groups=2, epsilon=1e-3),
        ]
        inits = [init("w", r(6, 3, 3, 3)), init("s", r(per) + 1.0), init("b", r(per))]
        # onnx's shape inference does not give GroupNormalization's output: the case states it.
        save(f"group_norm_v{opset}", opset, nodes, [2, 3, 5, 4], inits, x=r(2, 3, 5, 4),
             y_shape=[2, 6, 5, 4])


def attention_einsum():
    """An attention block written with Einsum, as exporters write it: per-head projections
    (`bsd,hde->bhse`, constant weights), scores `bhqd,bhkd->bhqk`, Softmax, `bhqk,bhkd->bhqd`, the
    output projection contracting heads and head dims (`bhqd,hde->bqe`), then LpNormalization
    (p=2) over the features and a p=1 one over the sequence axis."""
    rng = np.random.default_rng(41)

    def r(*shape):
        return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)

    b, s, d, h, e = 2, 5, 8, 2, 4
    n = helper.make_node
    nodes = [
        n("Einsum", ["x", "wq"], ["q"], name="q", equation="bsd,hde->bhse"),
        n("Einsum", ["x", "wk"], ["k"], name="k", equation="bsd,hde->bhse"),
        n("Einsum", ["x", "wv"], ["v"], name="v", equation="bsd,hde->bhse"),
        n("Einsum", ["q", "k"], ["scores"], name="scores", equation="bhqd,bhkd->bhqk"),
        n("Mul", ["scores", "scale"], ["scaled"], name="scale"),
        n("Softmax", ["scaled"], ["p"], name="softmax", axis=-1),
        n("Einsum", ["p", "v"], ["ctx"], name="ctx", equation="bhqk,bhkd->bhqd"),
        n("Einsum", ["ctx", "wo"], ["o"], name="out", equation="bhqd,hde->bqe"),
        n("LpNormalization", ["o"], ["l2"], name="l2", axis=-1, p=2),
        n("LpNormalization", ["l2"], ["y"], name="l1", axis=1, p=1),
    ]
    inits = [init("wq", r(h, d, e)), init("wk", r(h, d, e)), init("wv", r(h, d, e)),
             init("wo", r(h, e, d)), init("scale", np.array(1.0 / np.sqrt(e), dtype=np.float32))]
    save("attention_einsum", 13, nodes, [b, s, d], inits, x=r(b, s, d), y_shape=[b, s, d])


def pool_ceil():
    """MaxPool and AveragePool with ceil_mode=1 where rounding up gives a larger output than rounding
    down: max with and without pads, average with count_include_pad 0 and 1 (with explicit pads, none,
    and asymmetric ones: onnxruntime divides a clipped last window by its cells inside the input, or
    inside the input and its explicit pads), and a 1-D average. Own RNG."""
    rng = np.random.default_rng(23)
    n = helper.make_node
    pools = [
        ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2])),
        ("MaxPool", dict(kernel_shape=[2, 2], strides=[3, 3], pads=[0, 1, 1, 0])),
        ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
        ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)),
        ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], count_include_pad=1)),
        ("AveragePool", dict(kernel_shape=[3, 2], strides=[2, 3], pads=[2, 0, 0, 1], count_include_pad=1)),
    ]
    nodes, flat = [], []
    for i, (op, attrs) in enumerate(pools):
        nodes.append(n(op, ["x"], [f"p{i}"], name=f"pool{i}", ceil_mode=1, **attrs))
        nodes.append(n("Flatten", [f"p{i}"], [f"f{i}"], name=f"flat{i}"))
        flat.append(f"f{i}")
    # 1-D: [1, 2, 64], kernel 3, stride 2, pads 1 and 1: ceil gives 33 where floor gives 32.
    nodes += [
        n("Reshape", ["x", "shape_1d"], ["x1"], name="as_1d"),
        n("AveragePool", ["x1"], ["p1d"], name="avg_1d", kernel_shape=[3], strides=[2], pads=[1, 1],
          count_include_pad=1, ceil_mode=1),
        n("Flatten", ["p1d"], ["f1d"], name="flat_1d"),
        n("Concat", [*flat, "f1d"], ["y"], name="cat", axis=1),
    ]
    x = rng.uniform(-1.0, 1.0, size=(1, 2, 8, 8)).astype(np.float32)
    # onnx 1.22 shape inference does not drop a last window that starts in the end padding (302
    # values); onnxruntime does (278), so the output shape is stated.
    save("pool_ceil", 19, nodes, [1, 2, 8, 8], [init("shape_1d", np.array([1, 2, 64], np.int64))], x=x,
         y_shape=[1, 278], onnx_infers=False)


def pool_dilations():
    """MaxPool and AveragePool with dilations (run as strided slices, one per tap): with pads, strides,
    ceil_mode=1 where it rounds up, count_include_pad 0 and 1, and a 1-D one. Own RNG."""
    rng = np.random.default_rng(29)
    n = helper.make_node
    pools = [
        ("MaxPool", dict(kernel_shape=[2, 2], dilations=[2, 2])),
        ("MaxPool", dict(kernel_shape=[3, 2], dilations=[2, 3], strides=[2, 1], pads=[1, 1, 2, 0], ceil_mode=1)),
        ("AveragePool", dict(kernel_shape=[2, 2], dilations=[2, 2], pads=[1, 1, 1, 1])),
        ("AveragePool", dict(kernel_shape=[2, 3], dilations=[3, 2], strides=[2, 2], pads=[1, 1, 0, 1],
                             count_include_pad=1, ceil_mode=1)),
        ("AveragePool", dict(kernel_shape=[3, 3], dilations=[2, 2], strides=[2, 2], ceil_mode=1)),
    ]
    nodes, flat = [], []
    for i, (op, attrs) in enumerate(pools):
        nodes.append(n(op, ["x"], [f"p{i}"], name=f"pool{i}", **attrs))
        nodes.append(n("Flatten", [f"p{i}"], [f"f{i}"], name=f"flat{i}"))
        flat.append(f"f{i}")
    nodes += [
        n("Reshape", ["x", "shape_1d"], ["x1"], name="as_1d"),
        n("MaxPool", ["x1"], ["p1d"], name="max_1d", kernel_shape=[3], dilations=[4], strides=[3], pads=[2, 0],
          ceil_mode=1),
        n("Flatten", ["p1d"], ["f1d"], name="flat_1d"),
        n("Concat", [*flat, "f1d"], ["y"], name="cat", axis=1),
    ]
    x = rng.uniform(-1.0, 1.0, size=(1, 2, 9, 8)).astype(np.float32)
    sess = ort.InferenceSession(
        helper.make_model(
            helper.make_graph(nodes, "probe", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              initializer=[init("shape_1d", np.array([1, 2, 72], np.int64))]),
            opset_imports=[helper.make_opsetid("", 19)], ir_version=9).SerializeToString(),
        providers=["CPUExecutionProvider"])
    y_shape = list(sess.run(["y"], {"x": x})[0].shape)
    # onnx's shape inference and onnxruntime may disagree on ceil_mode sizes (see pool_ceil): the
    # shape onnxruntime gives is stated.
    save("pool_dilations", 19, nodes, [1, 2, 9, 8], [init("shape_1d", np.array([1, 2, 72], np.int64))], x=x,
         y_shape=y_shape, onnx_infers=False)


CASES = {
    "attention_einsum": attention_einsum,
    "group_norms": group_norms,
    "conv_variants": conv_variants,
    "pools": pools,
    "gemm_variants": gemm_variants,
    "layout_mix": layout_mix,
    "old_opset": old_opset,
    "conv_output": conv_output,
    "math_breadth": math_breadth,
    "reductions": reductions,
    "norms": norms,
    "conv1d": conv1d,
    "fold_affine": fold_affine,
    "scaled_hard_swish": scaled_hard_swish,
    "pool_ceil": pool_ceil,
    "pool_dilations": pool_dilations,
    **array_cases.CASES,
    **signal_cases.CASES,
    **control_cases.CASES,
}


def main():
    # `make.py CASE...` rebuilds only those cases.
    if len(sys.argv) > 1:
        for case in sys.argv[1:]:
            CASES[case]()
        print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}")
        return
    conv_variants()
    pools()
    gemm_variants()
    layout_mix()
    old_opset()
    conv_output()
    math_breadth()
    reductions()
    norms()
    array_cases.main()
    signal_cases.main()
    control_cases.main()
    conv1d()
    fold_affine()
    scaled_hard_swish()
    attention_einsum()
    pool_ceil()
    pool_dilations()
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}")


if __name__ == "__main__":
    main()
