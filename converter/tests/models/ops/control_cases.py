"""Control-flow cases of make.py, each with onnxruntime's output as its golden:

- `loop_conv`: a Loop of 3 iterations (a constant trip count) whose body holds a 3x3 convolution and a
  ReLU over a carried [1, 4, 8, 8] map, and stacks each iteration's channel means; y is the final map
  times the sum of the stacked means (so both kinds of loop output are checked).
- `loop_dynamic`: a Loop whose trip count is computed from the input at run time (ceil of its sum,
  1 to 6 here) and whose body also computes a condition (iteration < 4): converted with
  `--max-trip loop=8`.
- `loop_nested`: a Loop of 2 iterations around a Loop of 3, each carrying a value.
- `scan_both_ways`: a Scan over [2, 5, 3] along axis 1 reading its input forwards and backwards,
  carrying a sum and stacking it forwards along axis 1 and backwards along axis 2.
- `if_then`, `if_else`: an If on the sign of the input's sum (known at run time only), a convolution
  in one branch and a scaled channel slice in the other; one model, inputs of either sign.
- `if_const`: an If on a dim of the input, a constant once shapes are static: the branch taken is
  imported in place.

Each case has its own seed. Run through make.py (`make.py loop_conv ...`), or alone:

    target/venv/bin/python converter/tests/models/ops/control_cases.py

"""

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parent
F = TensorProto.FLOAT


def run_ort(model, x):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(None, {"x": x})[0]


def save(case, model, x):
    y = run_ort(model, x)
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", F, list(y.shape)))
    onnx.checker.check_model(model, full_check=True)
    (OUT / f"{case}.onnx").write_bytes(model.SerializeToString())
    np.save(OUT / f"{case}.x.npy", x)
    np.save(OUT / f"{case}.y.npy", y.astype(np.float32))
    print(f"{case:14s} x {list(x.shape)} -> y {list(y.shape)}")


def model_of(case, nodes, x_shape, inits, opset=17):
    graph = helper.make_graph(
        nodes, case, [helper.make_tensor_value_info("x", F, list(x_shape))],
        [helper.make_tensor_value_info("y", F, None)], initializer=inits)
    model = helper.make_model(graph, producer_name="ember-convert tests",
                              opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    return model


def scalar(name, dtype):
    return helper.make_tensor_value_info(name, dtype, [])


def loop_conv():
    rng = np.random.default_rng(41)
    x = rng.uniform(-1.0, 1.0, size=(1, 4, 8, 8)).astype(np.float32)
    w = (rng.standard_normal((4, 4, 3, 3)) * 0.3).astype(np.float32)
    b = (rng.standard_normal(4) * 0.1).astype(np.float32)
    body = helper.make_graph(
        [
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
            helper.make_node("Conv", ["h_in", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c"], ["h_out"]),
            helper.make_node("ReduceMean", ["h_out"], ["m"], axes=[2, 3], keepdims=0),
        ],
        "body",
        [scalar("i", TensorProto.INT64), scalar("cond_in", TensorProto.BOOL),
         helper.make_tensor_value_info("h_in", F, [1, 4, 8, 8])],
        [scalar("cond_out", TensorProto.BOOL),
         helper.make_tensor_value_info("h_out", F, [1, 4, 8, 8]),
         helper.make_tensor_value_info("m", F, [1, 4])],
    )
    nodes = [
        helper.make_node("Loop", ["trip", "yes", "x"], ["h", "means"], body=body, name="loop"),
        helper.make_node("ReduceSum", ["means"], ["s"], keepdims=0),
        helper.make_node("Mul", ["h", "s"], ["y"]),
    ]
    inits = [numpy_helper.from_array(np.array(3, np.int64), "trip"),
             numpy_helper.from_array(np.array(True), "yes"),
             numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    save("loop_conv", model_of("loop_conv", nodes, x.shape, inits), x)
    # Its two halves as models of their own, for the arena test: the body (one iteration), and the
    # graph around the loop with the loop's values made without one.
    weights = [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")]
    half = helper.make_graph(
        [node for node in body.node if node.op_type != "Identity"], "loop_conv_body",
        [helper.make_tensor_value_info("h_in", F, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("h_out", F, [1, 4, 8, 8]),
         helper.make_tensor_value_info("m", F, [1, 4])], initializer=weights)
    save_model("loop_conv_body", half)
    around = helper.make_graph(
        [
            helper.make_node("Relu", ["x"], ["h"]),
            helper.make_node("ReduceMean", ["x"], ["m"], axes=[2, 3], keepdims=0),
            helper.make_node("Expand", ["m", "stack"], ["means"]),
            helper.make_node("ReduceSum", ["means"], ["s"], keepdims=0),
            helper.make_node("Mul", ["h", "s"], ["y"]),
        ],
        "loop_conv_outer", [helper.make_tensor_value_info("x", F, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", F, [1, 4, 8, 8])],
        initializer=[numpy_helper.from_array(np.array([3, 1, 4], np.int64), "stack")])
    save_model("loop_conv_outer", around)


def save_model(case, graph):
    model = helper.make_model(graph, producer_name="ember-convert tests",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    (OUT / f"{case}.onnx").write_bytes(model.SerializeToString())


def loop_dynamic():
    rng = np.random.default_rng(42)
    x = rng.uniform(0.3, 0.9, size=(1, 6)).astype(np.float32)
    body = helper.make_graph(
        [
            helper.make_node("Less", ["i", "four"], ["cond_out"]),
            helper.make_node("Mul", ["s_in", "half"], ["h"]),
            helper.make_node("Add", ["h", "x"], ["s_out"]),
        ],
        "body",
        [scalar("i", TensorProto.INT64), scalar("cond_in", TensorProto.BOOL),
         helper.make_tensor_value_info("s_in", F, [1, 6])],
        [scalar("cond_out", TensorProto.BOOL), helper.make_tensor_value_info("s_out", F, [1, 6])],
        initializer=[numpy_helper.from_array(np.array(4, np.int64), "four"),
                     numpy_helper.from_array(np.float32(0.5), "half")],
    )
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["sum"], keepdims=0),
        helper.make_node("Ceil", ["sum"], ["up"]),
        helper.make_node("Cast", ["up"], ["trip"], to=TensorProto.INT64),
        helper.make_node("Loop", ["trip", "", "zeros"], ["y"], body=body, name="loop"),
    ]
    inits = [numpy_helper.from_array(np.zeros((1, 6), np.float32), "zeros")]
    save("loop_dynamic", model_of("loop_dynamic", nodes, x.shape, inits), x)


def loop_nested():
    rng = np.random.default_rng(43)
    x = rng.uniform(-1.0, 1.0, size=(2, 3)).astype(np.float32)
    inner = helper.make_graph(
        [
            helper.make_node("Identity", ["c_in"], ["c_out"]),
            helper.make_node("Cast", ["j"], ["jf"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["a_in", "x"], ["ax"]),
            helper.make_node("Add", ["ax", "jf"], ["a_out"]),
        ],
        "inner",
        [scalar("j", TensorProto.INT64), scalar("c_in", TensorProto.BOOL),
         helper.make_tensor_value_info("a_in", F, [2, 3])],
        [scalar("c_out", TensorProto.BOOL), helper.make_tensor_value_info("a_out", F, [2, 3])],
    )
    outer = helper.make_graph(
        [
            helper.make_node("Identity", ["k_in"], ["k_out"]),
            helper.make_node("Loop", ["three", "", "b_in"], ["b_loop"], body=inner),
            helper.make_node("Tanh", ["b_loop"], ["b_out"]),
        ],
        "outer",
        [scalar("i", TensorProto.INT64), scalar("k_in", TensorProto.BOOL),
         helper.make_tensor_value_info("b_in", F, [2, 3])],
        [scalar("k_out", TensorProto.BOOL), helper.make_tensor_value_info("b_out", F, [2, 3])],
    )
    nodes = [helper.make_node("Loop", ["two", "", "x"], ["y"], body=outer, name="outer")]
    inits = [numpy_helper.from_array(np.array(2, np.int64), "two"),
             numpy_helper.from_array(np.array(3, np.int64), "three")]
    save("loop_nested", model_of("loop_nested", nodes, x.shape, inits), x)


def scan_both_ways():
    rng = np.random.default_rng(44)
    x = rng.uniform(-1.0, 1.0, size=(2, 5, 3)).astype(np.float32)
    body = helper.make_graph(
        [
            helper.make_node("Mul", ["xf", "xb"], ["p"]),
            helper.make_node("Add", ["acc_in", "p"], ["acc_out"]),
            helper.make_node("Tanh", ["acc_out"], ["t"]),
        ],
        "body",
        [helper.make_tensor_value_info("acc_in", F, [2, 3]),
         helper.make_tensor_value_info("xf", F, [2, 3]),
         helper.make_tensor_value_info("xb", F, [2, 3])],
        [helper.make_tensor_value_info("acc_out", F, [2, 3]),
         helper.make_tensor_value_info("acc_out_s", F, [2, 3]),
         helper.make_tensor_value_info("t", F, [2, 3])],
    )
    body.node.append(helper.make_node("Identity", ["acc_out"], ["acc_out_s"]))
    nodes = [
        helper.make_node("Scan", ["zeros", "x", "x"], ["acc", "fwd", "bwd"], body=body,
                         num_scan_inputs=2, scan_input_axes=[1, 1], scan_input_directions=[0, 1],
                         scan_output_axes=[1, 2], scan_output_directions=[0, 1], name="scan"),
        helper.make_node("Transpose", ["bwd"], ["bwd_t"], perm=[0, 2, 1]),
        helper.make_node("Add", ["fwd", "bwd_t"], ["y0"]),
        helper.make_node("Unsqueeze", ["acc", "one"], ["acc1"]),
        helper.make_node("Add", ["y0", "acc1"], ["y"]),
    ]
    inits = [numpy_helper.from_array(np.zeros((2, 3), np.float32), "zeros"),
             numpy_helper.from_array(np.array([1], np.int64), "one")]
    save("scan_both_ways", model_of("scan_both_ways", nodes, x.shape, inits), x)


def if_model():
    rng = np.random.default_rng(45)
    w = (rng.standard_normal((2, 3, 3, 3)) * 0.3).astype(np.float32)
    then = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["t"], pads=[1, 1, 1, 1])], "then", [],
        [helper.make_tensor_value_info("t", F, [1, 2, 4, 4])])
    els = helper.make_graph(
        [
            helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["sl"]),
            helper.make_node("Mul", ["sl", "minus"], ["e"]),
        ],
        "else", [], [helper.make_tensor_value_info("e", F, [1, 2, 4, 4])],
        initializer=[numpy_helper.from_array(np.array([0], np.int64), "starts"),
                     numpy_helper.from_array(np.array([2], np.int64), "ends"),
                     numpy_helper.from_array(np.array([1], np.int64), "axes"),
                     numpy_helper.from_array(np.float32(-2.0), "minus")])
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["sum"], keepdims=0),
        helper.make_node("Greater", ["sum", "zero"], ["positive"]),
        helper.make_node("If", ["positive"], ["y"], then_branch=then, else_branch=els, name="if"),
    ]
    inits = [numpy_helper.from_array(np.float32(0.0), "zero"), numpy_helper.from_array(w, "w")]
    return model_of("if_branch", nodes, (1, 3, 4, 4), inits)


def if_then():
    x = np.random.default_rng(46).uniform(0.0, 1.0, size=(1, 3, 4, 4)).astype(np.float32)
    save("if_then", if_model(), x)


def if_else():
    x = np.random.default_rng(47).uniform(-1.0, 0.0, size=(1, 3, 4, 4)).astype(np.float32)
    save("if_else", if_model(), x)


def if_const():
    x = np.random.default_rng(48).uniform(-1.0, 1.0, size=(1, 3, 4)).astype(np.float32)
    then = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", F, [1, 3, 4])])
    els = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                            [helper.make_tensor_value_info("e", F, [1, 3, 4])])
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["channels"]),
        helper.make_node("Equal", ["channels", "three"], ["is3"]),
        helper.make_node("If", ["is3"], ["y"], then_branch=then, else_branch=els, name="if"),
    ]
    inits = [numpy_helper.from_array(np.array(1, np.int64), "one"),
             numpy_helper.from_array(np.array(3, np.int64), "three")]
    save("if_const", model_of("if_const", nodes, x.shape, inits), x)


CASES = {
    "loop_conv": loop_conv,
    "loop_dynamic": loop_dynamic,
    "loop_nested": loop_nested,
    "scan_both_ways": scan_both_ways,
    "if_then": if_then,
    "if_else": if_else,
    "if_const": if_const,
}


def main():
    for build in CASES.values():
        build()


if __name__ == "__main__":
    main()
