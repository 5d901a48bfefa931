#!/usr/bin/env python3
"""Build `ptq_conv_bn.onnx`, a float CNN whose convolutions are each followed by a BatchNormalization,
for the post-training quantizer, with onnxruntime goldens:

    x [1, 3, 8, 8] -> Conv(3x3, bias) -> BatchNormalization -> Relu -> Conv(1x1, no bias)
      -> BatchNormalization -> y [1, 4, 8, 8]

The normalizations have non-trivial scale (some negative), B, mean and var (and a non-default epsilon on
the second), so folding them into the convolutions changes every weight and bias.
`ptq_conv_bn.calibration.npy` holds 32 calibration samples [32, 3, 8, 8], `ptq_conv_bn.x.npy` the first
and `ptq_conv_bn.y.npy` onnxruntime's float output of the original (unfolded, unquantized) model on it
(CPU, one thread, graph optimizations off, so the normalizations run as written).

`ptq_gemm_bn.onnx` (and its `.calibration.npy` [32, 2, 6], `.x.npy`, `.y.npy` likewise) does the same for fully
connected layers, with the output channels on either axis of the weights:

    x [2, 6] -> Gemm(B [6, 5], C [5]) -> BatchNormalization -> Relu -> Gemm(B [3, 5], transB=1)
      -> BatchNormalization -> y [2, 3]

    target/venv/bin/python converter/tests/models/ops/ptq_bn_cases.py
"""

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parent


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name=name)


def bn_inits(prefix, rng, channels):
    gamma = rng.uniform(0.5, 2.0, channels) * rng.choice([-1.0, 1.0], channels)
    return [
        init(f"{prefix}_scale", gamma.astype(np.float32)),
        init(f"{prefix}_bias", rng.uniform(-0.5, 0.5, channels).astype(np.float32)),
        init(f"{prefix}_mean", rng.uniform(-0.3, 0.3, channels).astype(np.float32)),
        init(f"{prefix}_var", rng.uniform(0.2, 3.0, channels).astype(np.float32)),
    ]


def save(model, name, x, shape):
    """Checks and writes `model` as `<name>.onnx` with its calibration samples `x` (`[32, ...]`), the
    first of them (as the input `shape`) and onnxruntime's float output on it."""
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    path = OUT / f"{name}.onnx"
    path.write_bytes(model.SerializeToString())
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    first = x[:1].reshape(shape)
    y = sess.run(["y"], {"x": first})[0].astype(np.float32)
    np.save(OUT / f"{name}.calibration.npy", x)
    np.save(OUT / f"{name}.x.npy", first)
    np.save(OUT / f"{name}.y.npy", y)
    print(f"{name:16s} x {list(x.shape)} -> y {list(y.shape)}, y in [{y.min():.3f}, {y.max():.3f}]")


def conv_bn():
    rng = np.random.default_rng(23)
    n = helper.make_node
    inits = [
        init("w1", rng.uniform(-0.5, 0.5, (8, 3, 3, 3)).astype(np.float32)),
        init("b1", rng.uniform(-0.2, 0.2, 8).astype(np.float32)),
        *bn_inits("bn1", rng, 8),
        init("w2", rng.uniform(-0.4, 0.4, (4, 8, 1, 1)).astype(np.float32)),
        *bn_inits("bn2", rng, 4),
    ]
    bn = lambda p: [f"{p}_scale", f"{p}_bias", f"{p}_mean", f"{p}_var"]
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        n("BatchNormalization", ["c1", *bn("bn1")], ["n1"], name="bn1"),
        n("Relu", ["n1"], ["r1"], name="relu1"),
        n("Conv", ["r1", "w2"], ["c2"], name="conv2"),
        n("BatchNormalization", ["c2", *bn("bn2")], ["y"], name="bn2", epsilon=1e-3),
    ]
    graph = helper.make_graph(
        nodes, "ptq_conv_bn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        initializer=inits,
    )
    model = helper.make_model(graph, producer_name="ember-convert tests",
                              opset_imports=[helper.make_opsetid("", 14)])
    x = rng.uniform(-1.0, 1.0, (32, 3, 8, 8)).astype(np.float32)
    save(model, "ptq_conv_bn", x, [1, 3, 8, 8])


def gemm_bn():
    rng = np.random.default_rng(29)
    n = helper.make_node
    inits = [
        init("w1", rng.uniform(-0.6, 0.6, (6, 5)).astype(np.float32)),
        init("b1", rng.uniform(-0.2, 0.2, 5).astype(np.float32)),
        *bn_inits("bn1", rng, 5),
        init("w2", rng.uniform(-0.6, 0.6, (3, 5)).astype(np.float32)),
        *bn_inits("bn2", rng, 3),
    ]
    bn = lambda p: [f"{p}_scale", f"{p}_bias", f"{p}_mean", f"{p}_var"]
    nodes = [
        n("Gemm", ["x", "w1", "b1"], ["g1"], name="gemm1"),
        n("BatchNormalization", ["g1", *bn("bn1")], ["n1"], name="bn1"),
        n("Relu", ["n1"], ["r1"], name="relu1"),
        n("Gemm", ["r1", "w2"], ["g2"], name="gemm2", transB=1),
        n("BatchNormalization", ["g2", *bn("bn2")], ["y"], name="bn2"),
    ]
    graph = helper.make_graph(
        nodes, "ptq_gemm_bn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
        initializer=inits,
    )
    model = helper.make_model(graph, producer_name="ember-convert tests",
                              opset_imports=[helper.make_opsetid("", 14)])
    x = rng.uniform(-1.0, 1.0, (32, 2, 6)).astype(np.float32)
    save(model, "ptq_gemm_bn", x, [2, 6])


def main():
    conv_bn()
    gemm_bn()
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}")


if __name__ == "__main__":
    main()
