"""Every intermediate value of an ONNX model, computed by onnxruntime, for `ember compare`.

Usage: python onnx_values.py MODEL.onnx OUT_DIR NAME=x.npy [NAME=x.npy ...]

Makes every node output of the main graph a graph output, runs the model once on the given inputs
(onnxruntime on the CPU, graph optimizations off, one thread, so each value is the node's own result),
and writes OUT_DIR/v<k>.npy for the k-th value plus OUT_DIR/values.json: the nodes in graph order
(name, op type, inputs, outputs, and whether it computes from initializers alone) and the values
written (name, file).
Exit status 3 when onnx, onnxruntime or numpy cannot be imported (the message names the module).
"""

import json
import os
import sys

try:
    import numpy as np
    import onnx
    import onnxruntime as ort
except ImportError as e:  # the caller turns this into advice
    print(f"missing Python module: {e.name}", file=sys.stderr)
    sys.exit(3)


def main():
    model_path, out_dir = sys.argv[1], sys.argv[2]
    feeds = {}
    for arg in sys.argv[3:]:
        name, path = arg.split("=", 1)
        feeds[name] = np.load(path)
    model = onnx.load(model_path)
    graph = model.graph
    declared = {o.name for o in graph.output}
    # Values computed from initializers alone (weights dequantized, shapes): a converter folds them.
    constant = {t.name for t in graph.initializer}
    nodes = []
    for n in graph.node:
        inputs = [i for i in n.input if i]
        is_constant = n.op_type == "Constant" or (
            bool(inputs) and all(i in constant for i in inputs)
        )
        if is_constant:
            constant.update(o for o in n.output if o)
        nodes.append(
            {
                "name": n.name,
                "op": n.op_type,
                "inputs": list(n.input),
                "outputs": [o for o in n.output if o],
                "constant": is_constant,
            }
        )
        for o in n.output:
            if o and o not in declared:
                graph.output.append(onnx.ValueInfoProto(name=o))
                declared.add(o)
    opts = ort.SessionOptions()
    opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    opts.intra_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(), opts, providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in session.get_outputs()]
    results = session.run(names, feeds)
    values = []
    for k, (name, value) in enumerate(zip(names, results)):
        if not isinstance(value, np.ndarray):
            continue  # sequences and maps are not compared
        file = f"v{k}.npy"
        np.save(os.path.join(out_dir, file), np.ascontiguousarray(value))
        values.append({"name": name, "file": file})
    with open(os.path.join(out_dir, "values.json"), "w") as f:
        json.dump({"nodes": nodes, "values": values}, f)


if __name__ == "__main__":
    main()
