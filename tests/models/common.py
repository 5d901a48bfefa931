"""What the model scripts in the folders next to this file share: the softmax, the Adam training loop
with cosine learning-rate decay, wrapping and checking an ONNX graph as a model file, single-threaded
onnxruntime sessions, and writing and listing the golden arrays.

Each `make.py` puts this folder on `sys.path` and imports it before numpy. The steps are the ones each
script ran on its own before, in the same order, so a rerun still gives byte-identical files.
"""

import os

# Single-threaded BLAS before numpy loads: results then do not depend on the core count.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import time  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper  # noqa: E402

# The golden files each float model's script writes next to its `model.onnx`.
GOLDEN_FILES = ("model.onnx", "x.npy", "labels.npy", "y.npy", "x1.npy", "y1.npy")


def softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def train_adam(p, x, y, forward, backward, rng, epochs, lr, batch):
    """Trains the parameters `p` in place with Adam (beta 0.9/0.999) on mini-batches of `batch` drawn
    by `rng`, the learning rate `lr` decaying on a cosine over `epochs`; `forward(p, x, keep=True)`
    returns the probabilities and what `backward(p, probs, state, y)` needs for the gradients."""
    m = {k: np.zeros_like(v) for k, v in p.items()}
    v = {k: np.zeros_like(v) for k, v in p.items()}
    b1, b2, eps, t = 0.9, 0.999, 1e-8, 0
    for epoch in range(epochs):
        rate = lr * (0.5 * (1 + np.cos(np.pi * epoch / epochs)))  # cosine decay
        order = rng.permutation(len(x))
        loss = 0.0
        for s in range(0, len(x), batch):
            idx = order[s:s + batch]
            probs, state = forward(p, x[idx], keep=True)
            loss += -np.log(probs[np.arange(len(idx)), y[idx]] + 1e-12).sum()
            g = backward(p, probs, state, y[idx])
            t += 1
            for k in p:
                m[k] = b1 * m[k] + (1 - b1) * g[k]
                v[k] = b2 * v[k] + (1 - b2) * g[k] ** 2
                mh = m[k] / (1 - b1 ** t)
                vh = v[k] / (1 - b2 ** t)
                p[k] -= rate * mh / (np.sqrt(vh) + eps)
        if epoch % 5 == 4 or epoch == epochs - 1:
            print(f"  epoch {epoch + 1:2d}  loss {loss / len(x):.4f}")
    return p


def save_model(nodes, inits, name, input_dims, output_dims, doc, path):
    """Writes the graph of `nodes` (f32 "input" of `input_dims`, f32 "probs" of `output_dims`) as an
    opset-13, IR-8 model with the docstring `doc` to `path`, after ONNX's full check; returns it."""
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, input_dims)],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, output_dims)],
        initializer=inits,
    )
    model = helper.make_model(graph, producer_name="ember-tests", producer_version="1",
                              opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    model.doc_string = doc
    onnx.checker.check_model(model, full_check=True)
    path.write_bytes(model.SerializeToString())
    return model


def session(path):
    """An onnxruntime CPU session on the model at `path`, single-threaded, default optimizations."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def run_ort(path, x):
    """onnxruntime's "probs" for the batch `x`."""
    return session(path).run(["probs"], {"input": x})[0]


def save_goldens(out, x, labels, y, x1, y1):
    """Writes the test inputs, their labels (as int64) and outputs, and the first input and output."""
    np.save(out / "x.npy", x)
    np.save(out / "labels.npy", labels.astype(np.int64))
    np.save(out / "y.npy", y)
    np.save(out / "x1.npy", x1)
    np.save(out / "y1.npy", y1)


def print_versions_and_files(out, t0):
    """Prints the package versions, the size of each golden file and the time since `t0`."""
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}")
    for name in GOLDEN_FILES:
        print(f"  {name:11s} {(out / name).stat().st_size:7d} bytes")
    print(f"total {time.time() - t0:.1f} s")
