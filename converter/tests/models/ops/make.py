#!/usr/bin/env python3
"""Build the small op-coverage models of ember-convert's tests, with onnxruntime goldens.

Each case is one ONNX model with one input `x` and one output `y`, plus `<case>.x.npy` and
`<case>.y.npy` (onnxruntime 1.32.0, CPU, one thread). Together they cover every importer path that
changes numbers: conv variants (stride, asymmetric pads, dilation, groups, depthwise, auto_pad),
pooling with padding, Gemm/MatMul variants, broadcasting with constants in NHWC, mixed layouts,
Concat/Transpose/Pad/Reshape, old-opset attribute forms (Clip, Pad, Softmax coercion).
Deterministic: fixed seed, so rerunning gives byte-identical files.

    target/venv/bin/python converter/tests/models/ops/make.py
"""

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parent
RNG = np.random.default_rng(7)


def rand(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name=name)


def save(case, opset, nodes, x_shape, inits, x=None):
    graph = helper.make_graph(
        nodes, case,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=inits,
    )
    model = helper.make_model(graph, producer_name="ember-convert tests",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    # Let onnx infer the output's shape (the cases do not state it), then check the whole model.
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
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


def main():
    conv_variants()
    pools()
    gemm_variants()
    layout_mix()
    old_opset()
    conv_output()
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}")


if __name__ == "__main__":
    main()
