#!/usr/bin/env python3
"""The post-processing cases of ember-convert's op tests, with onnxruntime goldens.

`post_processing`: a detector's
scores `x` [2, 10] ranked by TopK (k 4), and the boxes' data (a constant [2, 10]) picked by the
indices through GatherElements and GatherND (batch_dims 1); the top scores also scattered back into
zeros with ScatterElements (reduction add) and ScatterND. `y` is all of them concatenated, [2, 32].
Ties among the scores (row 1's two largest are equal) check the order onnxruntime gives them: lower
index first.

`detect_post`: one class's scores `x` [1, 1, 8] ranked by TopK (k 5, the pre-NMS top-k), the boxes
of those five (a constant [8, 4], gathered at the indices), then NonMaxSuppression (3 per class, IoU
0.5, score 0.2) on them; `y` is the selected rows [n, 3] as float. Its output count depends on the
data: the test converts it with `--max-count selected=N` for an N above n.

Deterministic (fixed seed).

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


def run_ort(path, x):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    return sess.run(["y"], {"x": x})[0].astype(np.float32)


def detect_post():
    case = "detect_post"
    # Corners [y1, x1, y2, x2]: boxes 0 and 1 overlap (IoU 0.68), 2 and 3 are apart, 4 overlaps 2.
    boxes = np.array([
        [0.0, 0.0, 1.0, 1.0], [0.0, 0.1, 1.0, 1.1], [2.0, 2.0, 3.0, 3.0], [5.0, 5.0, 6.0, 6.0],
        [2.1, 2.0, 3.1, 3.0], [8.0, 8.0, 9.0, 9.0], [0.0, 4.0, 1.0, 5.0], [4.0, 0.0, 5.0, 1.0],
    ], dtype=np.float32)
    x = np.array([[[0.9, 0.85, 0.3, 0.15, 0.8, 0.05, 0.1, 0.25]]], dtype=np.float32)
    nodes = [
        helper.make_node("TopK", ["x", "k"], ["values", "idx"], axis=2),
        helper.make_node("Reshape", ["idx", "flat"], ["idx1"]),
        helper.make_node("Gather", ["boxes", "idx1"], ["top_boxes2"], axis=0),
        helper.make_node("Unsqueeze", ["top_boxes2", "zero"], ["top_boxes"]),
        helper.make_node("NonMaxSuppression",
                         ["top_boxes", "values", "per_class", "iou", "score"], ["selected"]),
        helper.make_node("Cast", ["selected"], ["y"], to=TensorProto.FLOAT),
    ]
    inits = [
        init("k", np.array([5], dtype=np.int64)),
        init("flat", np.array([-1], dtype=np.int64)),
        init("zero", np.array([0], dtype=np.int64)),
        init("boxes", boxes),
        init("per_class", np.array([3], dtype=np.int64)),
        init("iou", np.array([0.5], dtype=np.float32)),
        init("score", np.array([0.2], dtype=np.float32)),
    ]
    graph = helper.make_graph(
        nodes, case,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["selected", 3])],
        initializer=inits,
    )
    model = helper.make_model(graph, producer_name="ember-convert tests",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    path = OUT / f"{case}.onnx"
    path.write_bytes(model.SerializeToString())
    y = run_ort(path, x)
    np.save(OUT / f"{case}.x.npy", x)
    np.save(OUT / f"{case}.y.npy", y)
    print(f"{case} x {list(x.shape)} -> y {list(y.shape)}: {y.tolist()}")


def main():
    detect_post()
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
