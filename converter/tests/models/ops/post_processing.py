#!/usr/bin/env python3
"""The post-processing case of ember-convert's op tests, with onnxruntime goldens: a detector's
scores `x` [2, 10] ranked by TopK (k 4), and the boxes' data (a constant [2, 10]) picked by the
indices through GatherElements and GatherND (batch_dims 1); the top scores also scattered back into
zeros with ScatterElements (reduction add) and ScatterND. `y` is all of them concatenated, [2, 32].
Ties among the scores (row 1's two largest are equal) check the order onnxruntime gives them: lower
index first. Deterministic (fixed seed).

    target/venv/bin/python converter/tests/models/ops/post_processing.py
"""

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parent
RNG = np.random.default_rng(23)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name=name)


def main():
    case = "post_processing"
    data = RNG.uniform(-1.0, 1.0, size=(2, 10)).astype(np.float32)
    x = RNG.uniform(0.0, 1.0, size=(2, 10)).astype(np.float32)
    x[0, 7] = x[0, 2]  # a tie: index 2 comes first
    x[1, 9] = x[1, 1] = x[1].max()  # a tie for the top
    nodes = [
        helper.make_node("TopK", ["x", "k"], ["values", "idx"], axis=1, largest=1, sorted=1),
        helper.make_node("GatherElements", ["data", "idx"], ["picked"], axis=1),
        helper.make_node("Unsqueeze", ["idx", "last"], ["idx3"]),
        helper.make_node("GatherND", ["data", "idx3"], ["picked_nd"], batch_dims=1),
        helper.make_node("ScatterElements", ["zeros", "idx", "values"], ["scattered"], axis=1,
                         reduction="add"),
        helper.make_node("Concat", ["row", "idx3"], ["pairs"], axis=2),
        helper.make_node("ScatterND", ["zeros", "pairs", "picked"], ["scattered_nd"]),
        helper.make_node("Concat", ["values", "picked", "picked_nd", "scattered", "scattered_nd"],
                         ["cat"], axis=1),
        helper.make_node("Identity", ["cat"], ["y"]),
    ]
    inits = [
        init("k", np.array([4], dtype=np.int64)),
        init("data", data),
        init("last", np.array([-1], dtype=np.int64)),
        init("zeros", np.zeros((2, 10), dtype=np.float32)),
        init("row", np.repeat(np.arange(2, dtype=np.int64).reshape(2, 1, 1), 4, axis=1)),
    ]
    graph = helper.make_graph(
        nodes, case,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=inits,
    )
    model = helper.make_model(graph, producer_name="ember-convert tests",
                              opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    path = OUT / f"{case}.onnx"
    path.write_bytes(model.SerializeToString())
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    y = sess.run(["y"], {"x": x})[0].astype(np.float32)
    np.save(OUT / f"{case}.x.npy", x)
    np.save(OUT / f"{case}.y.npy", y)
    print(f"{case} x {list(x.shape)} -> y {list(y.shape)}")
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}")


if __name__ == "__main__":
    main()
