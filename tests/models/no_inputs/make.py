"""A model without graph inputs: its output is computed from constants alone (as ONNX's
`test_constant` node test). `ember run` runs it with no --input; y.npy is onnxruntime's output.

Rerun with: target/venv/bin/python tests/models/no_inputs/make.py
"""
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))

values = np.linspace(-1.5, 1.5, 6, dtype=np.float32).reshape(2, 3)
const = helper.make_node("Constant", [], ["c"], value=numpy_helper.from_array(values, "value"))
relu = helper.make_node("Relu", ["c"], ["y"], name="relu")
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])
graph = helper.make_graph([const, relu], "no_inputs", [], [y])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)
onnx.checker.check_model(model)
path = os.path.join(HERE, "model.onnx")
onnx.save(model, path)
(out,) = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {})
np.save(os.path.join(HERE, "y.npy"), out)
print("wrote model.onnx and y.npy", out.tolist())
