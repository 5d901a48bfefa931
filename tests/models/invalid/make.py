"""Small invalid or unsupported ONNX models for the converter's error tests.

Rerun with: target/venv/bin/python tests/models/invalid/make.py
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))


def save(model, name):
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(HERE, name))


# A Relu followed by an op outside Ember's set (Det): conversion must fail naming node and op.
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 3])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])
graph = helper.make_graph(
    [
        helper.make_node("Relu", ["x"], ["r"], name="relu0"),
        helper.make_node("Det", ["r"], ["y"], name="the_det"),
    ],
    "unsupported_op",
    [x],
    [y],
)
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), "unsupported_op.onnx")

# A dynamic dimension that is not the leading batch: conversion must fail naming the input unless --shape.
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "L"])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "L"])
graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu0")], "dynamic_dim", [x], [y])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), "dynamic_dim.onnx")

# A Conv with an attribute value Ember does not support (auto_pad=SAME_LOWER is supported; use a 3-D conv).
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4, 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1, 4, 4, 4])
w = numpy_helper.from_array(np.ones((1, 1, 1, 1, 1), np.float32), "w")
graph = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv3d")], "conv3d", [x], [y], [w])
save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8), "conv3d.onnx")
print("wrote unsupported_op.onnx, dynamic_dim.onnx, conv3d.onnx")
