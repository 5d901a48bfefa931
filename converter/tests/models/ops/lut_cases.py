#!/usr/bin/env python3
"""Build the int8 lookup-table cases of ember-convert's tests, with onnxruntime goldens.

Each `lut_<fn>.onnx` is a QDQ model of one element-wise function between int8 tensors:

    x (f32) -> QuantizeLinear(s_in, z_in) -> DequantizeLinear -> <fn> -> QuantizeLinear(s_out, z_out)
      -> DequantizeLinear -> y (f32)

and `lut_<fn>.x.npy` holds the 256 values `s_in * (q - z_in)` for every int8 `q` (shape [1, 4, 8, 8]),
so the case reads every entry of the table Ember builds for the middle three nodes. `lut_<fn>.y.npy` is
onnxruntime's output (CPU, one thread, graph optimizations off, so it runs the float op and then
QuantizeLinear, the definition; ONNX's QuantizeLinear rounds half to even). `y` is the int8 result
dequantized, `s_out * (q_out - z_out)`, which Ember gives exactly when its int8 values are the same.

For HardSwish, HardSigmoid, Sigmoid and LeakyRelu (non-default alpha) the script also computes
`quantize(f(dequantize(q)))` in numpy, independently of onnxruntime, and checks that the two agree on
every value, so the golden does not rest on one implementation alone.

`lut_ptq.onnx` is a float CNN with activations between its convolutions, for the post-training
quantizer (see `ptq`).

    target/venv/bin/python converter/tests/models/ops/lut_cases.py
"""

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parent
SHAPE = [1, 4, 8, 8]


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name=name)


def quantize(v, scale, zero_point):
    """ONNX QuantizeLinear in float32: round half to even, saturate to int8."""
    q = np.rint(np.float32(v) / np.float32(scale)) + zero_point
    return np.clip(q, -128, 127).astype(np.int8)


def dequantize(q, scale, zero_point):
    return ((q.astype(np.int32) - zero_point).astype(np.float32) * np.float32(scale)).astype(np.float32)


# Numpy definitions (ONNX's formulas, in float32) of the functions checked independently.
def np_hard_sigmoid(x, alpha, beta):
    return np.clip(np.float32(alpha) * x + np.float32(beta), 0, 1).astype(np.float32)


NUMPY = {
    "hard_swish": lambda x: (x * np_hard_sigmoid(x, 1 / 6, 0.5)).astype(np.float32),
    "hard_sigmoid": lambda x: np_hard_sigmoid(x, 0.25, 0.4),
    "sigmoid": lambda x: (1 / (1 + np.exp(-x.astype(np.float64)))).astype(np.float32),
    "leaky_relu": lambda x: np.where(x < 0, np.float32(0.2) * x, x).astype(np.float32),
}

# case: (op, attributes, opset, input (scale, zero point), output (scale, zero point))
CASES = {
    "hard_swish": ("HardSwish", {}, 14, (0.05, -20), (0.04, -95)),
    "hard_sigmoid": ("HardSigmoid", {"alpha": 0.25, "beta": 0.4}, 13, (0.06, 5), (1 / 255, -128)),
    "sigmoid": ("Sigmoid", {}, 13, (0.07, 0), (1 / 256, -128)),
    "tanh": ("Tanh", {}, 13, (0.03, 10), (1 / 128, 0)),
    "leaky_relu": ("LeakyRelu", {"alpha": 0.2}, 13, (0.05, 30), (0.03, -10)),
    "elu": ("Elu", {"alpha": 0.7}, 13, (0.05, 0), (0.04, -60)),
    "gelu": ("Gelu", {}, 20, (0.04, 0), (0.03, -40)),
    "swish": ("Swish", {"alpha": 1.0}, 24, (0.05, 0), (0.035, -60)),
    "mish": ("Mish", {}, 18, (0.05, 0), (0.04, -60)),
    "softplus": ("Softplus", {}, 13, (0.05, 0), (0.025, -128)),
    "exp": ("Exp", {}, 13, (0.02, 0), (0.05, -128)),
}


def make(case):
    op, attrs, opset, (s_in, z_in), (s_out, z_out) = CASES[case]
    n = helper.make_node
    inits = [
        init("s_in", np.float32(s_in)),
        init("z_in", np.int8(z_in)),
        init("s_out", np.float32(s_out)),
        init("z_out", np.int8(z_out)),
    ]
    nodes = [
        n("QuantizeLinear", ["x", "s_in", "z_in"], ["xq"], name="q_in"),
        n("DequantizeLinear", ["xq", "s_in", "z_in"], ["xd"], name="dq_in"),
        n(op, ["xd"], ["f"], name="f", **attrs),
        n("QuantizeLinear", ["f", "s_out", "z_out"], ["yq"], name="q_out"),
        n("DequantizeLinear", ["yq", "s_out", "z_out"], ["y"], name="dq_out"),
    ]
    graph = helper.make_graph(
        nodes, f"lut_{case}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, SHAPE)],
        initializer=inits,
    )
    model = helper.make_model(graph, producer_name="ember-convert tests",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8 if opset <= 18 else 10
    onnx.checker.check_model(model, full_check=True)
    path = OUT / f"lut_{case}.onnx"
    path.write_bytes(model.SerializeToString())

    q = np.arange(-128, 128, dtype=np.int32).astype(np.int8)
    x = dequantize(q, s_in, z_in).reshape(SHAPE)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    y = sess.run(["y"], {"x": x})[0].astype(np.float32)
    # Every input value comes back as its own int8 value: the table is read at all 256 entries.
    assert np.array_equal(quantize(x, s_in, z_in).ravel(), q), case
    if case in NUMPY:
        want = dequantize(quantize(NUMPY[case](x), s_out, z_out), s_out, z_out)
        diff = np.flatnonzero(want != y)
        assert diff.size == 0, f"{case}: numpy and onnxruntime differ at {x.ravel()[diff]}"
    np.save(OUT / f"lut_{case}.x.npy", x)
    np.save(OUT / f"lut_{case}.y.npy", y)
    distinct = len(np.unique(y))
    print(f"lut_{case:12s} {op}: {distinct} distinct outputs")


def ptq():
    """`lut_ptq.onnx`, a float CNN for the post-training quantizer: Conv -> HardSwish -> Conv -> Sigmoid
    -> Conv -> LeakyRelu(0.1) on x [1, 3, 8, 8]; `lut_ptq.calibration.npy` holds 32 calibration samples
    [32, 3, 8, 8], `lut_ptq.x.npy` the first and `lut_ptq.y.npy` onnxruntime's float output on it (checked
    by tests/models/check_goldens.py like every case)."""
    rng = np.random.default_rng(11)
    n = helper.make_node
    inits = [
        init("w1", rng.uniform(-0.5, 0.5, (8, 3, 3, 3)).astype(np.float32)),
        init("b1", rng.uniform(-0.2, 0.2, 8).astype(np.float32)),
        init("w2", rng.uniform(-0.3, 0.3, (8, 8, 3, 3)).astype(np.float32)),
        init("b2", rng.uniform(-0.2, 0.2, 8).astype(np.float32)),
        init("w3", rng.uniform(-0.5, 0.5, (4, 8, 1, 1)).astype(np.float32)),
        init("b3", rng.uniform(-0.2, 0.2, 4).astype(np.float32)),
    ]
    nodes = [
        n("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        n("HardSwish", ["c1"], ["h1"], name="hard_swish"),
        n("Conv", ["h1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
        n("Sigmoid", ["c2"], ["s2"], name="sigmoid"),
        n("Conv", ["s2", "w3", "b3"], ["c3"], name="conv3"),
        n("LeakyRelu", ["c3"], ["y"], name="leaky_relu", alpha=0.1),
    ]
    graph = helper.make_graph(
        nodes, "lut_ptq",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8, 8])],
        initializer=inits,
    )
    model = helper.make_model(graph, producer_name="ember-convert tests",
                              opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    path = OUT / "lut_ptq.onnx"
    path.write_bytes(model.SerializeToString())
    x = rng.uniform(-1.0, 1.0, (32, 3, 8, 8)).astype(np.float32)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    y = sess.run(["y"], {"x": x[:1]})[0].astype(np.float32)
    np.save(OUT / "lut_ptq.calibration.npy", x)
    np.save(OUT / "lut_ptq.x.npy", x[:1])
    np.save(OUT / "lut_ptq.y.npy", y)
    print(f"lut_ptq          x {list(x.shape)} -> y {list(y.shape)}")


def main():
    for case in CASES:
        make(case)
    ptq()
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}")


if __name__ == "__main__":
    main()
