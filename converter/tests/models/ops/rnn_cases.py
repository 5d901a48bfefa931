#!/usr/bin/env python3
"""Build the recurrent-layer case of ember-convert's op tests, with onnxruntime goldens.

`rnn.onnx`: x [5, 2, 3] through a bidirectional LSTM (hidden 4, bias, initial_h and initial_c given)
and a reverse GRU with linear_before_reset=1 (hidden 3, bias, initial_h given); every output of both
(LSTM Y, Y_h, Y_c; GRU Y, Y_h) is flattened and concatenated into y, so one golden checks them all.
Writes `rnn.onnx`, `rnn.x.npy`, `rnn.y.npy` (onnxruntime, CPU, one thread). Deterministic: fixed seed.

    target/venv/bin/python converter/tests/models/ops/rnn_cases.py
"""

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parent
RNG = np.random.default_rng(15)
SEQ, BATCH, INPUT = 5, 2, 3


def rand(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name=name)


def main():
    n = helper.make_node
    lstm_h, gru_h = 4, 3
    inits = [
        init("lw", rand(2, 4 * lstm_h, INPUT)),
        init("lr", rand(2, 4 * lstm_h, lstm_h)),
        init("lb", rand(2, 8 * lstm_h)),
        init("lh0", rand(2, BATCH, lstm_h)),
        init("lc0", rand(2, BATCH, lstm_h)),
        init("gw", rand(1, 3 * gru_h, INPUT)),
        init("gr", rand(1, 3 * gru_h, gru_h)),
        init("gb", rand(1, 6 * gru_h)),
        init("gh0", rand(1, BATCH, gru_h)),
        init("flat", np.array([-1], dtype=np.int64)),
    ]
    nodes = [
        n("LSTM", ["x", "lw", "lr", "lb", "", "lh0", "lc0"], ["ly", "lyh", "lyc"],
          name="lstm", hidden_size=lstm_h, direction="bidirectional"),
        n("GRU", ["x", "gw", "gr", "gb", "", "gh0"], ["gy", "gyh"], name="gru",
          hidden_size=gru_h, direction="reverse", linear_before_reset=1),
    ]
    parts = ["ly", "lyh", "lyc", "gy", "gyh"]
    for p in parts:
        nodes.append(n("Reshape", [p, "flat"], [f"{p}_flat"], name=f"{p}_flat"))
    nodes.append(n("Concat", [f"{p}_flat" for p in parts], ["y"], name="all", axis=0))
    graph = helper.make_graph(
        nodes, "rnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [SEQ, BATCH, INPUT])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=inits,
    )
    model = helper.make_model(graph, producer_name="ember-convert tests",
                              opset_imports=[helper.make_opsetid("", 14)])
    model.ir_version = 8
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    path = OUT / "rnn.onnx"
    path.write_bytes(model.SerializeToString())
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    x = rand(SEQ, BATCH, INPUT)
    y = sess.run(["y"], {"x": x})[0].astype(np.float32)
    np.save(OUT / "rnn.x.npy", x)
    np.save(OUT / "rnn.y.npy", y)
    print(f"rnn x {list(x.shape)} -> y {list(y.shape)}; onnxruntime {ort.__version__}, "
          f"onnx {onnx.__version__}, numpy {np.__version__}")


if __name__ == "__main__":
    main()
