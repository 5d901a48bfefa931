#!/usr/bin/env python3
"""Build the `digits_qdq` test model for Ember: the float `digits` CNN (tests/models/digits/model.onnx)
quantized by onnxruntime's `quantize_static` into a QDQ model (int8 activations, per-tensor
asymmetric; int8 weights, per-channel symmetric), and onnxruntime's outputs on the held-out images.

Calibration uses the digits *training* images (the complement of the 360 test images of
tests/models/digits/make.py, same seed and split). Deterministic: fixed data, MinMax calibration,
single-threaded onnxruntime.

    target/venv/bin/python tests/models/digits_qdq/make.py

Outputs (next to this script):
    model.onnx   the QDQ model: input "input" [N,1,8,8] f32; outputs "probs" [N,10] f32 and
                 "logits_q" [N,10] int8 (the last quantized tensor, the int8 logits before the
                 float Softmax, exposed as an extra graph output)
 (the test images and labels are tests/models/digits/{x,labels}.npy, which this script checks)
    y.npy        f32 [360,10]      onnxruntime's "probs" on x.npy, one image at a time
    q.npy        i8  [360,10]      onnxruntime's "logits_q" on x.npy
"""

import sys
from pathlib import Path

# The shared steps of the model scripts (tests/models/common.py), imported before numpy: it makes BLAS
# single-threaded first, so that results do not depend on the core count.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402
import tempfile  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnxruntime.quantization import (  # noqa: E402
    CalibrationDataReader,
    CalibrationMethod,
    QuantFormat,
    QuantType,
    quantize_static,
)
from sklearn.datasets import load_digits  # noqa: E402

OUT = Path(__file__).resolve().parent
FLOAT = OUT.parent / "digits" / "model.onnx"
SEED = 0
N_TEST = 360
N_CALIB = 400


def load_data():
    """The split of tests/models/digits/make.py."""
    d = load_digits()
    x = (d.images / 16.0).astype(np.float64)[:, None, :, :]
    y = d.target.astype(np.int64)
    perm = np.random.default_rng(SEED).permutation(len(x))
    test, train = perm[:N_TEST], perm[N_TEST:]
    test = np.sort(test)
    return x[train].astype(np.float32), x[test].astype(np.float32), y[test]


class Reader(CalibrationDataReader):
    def __init__(self, images):
        self.it = iter([{"input": images[i : i + 1]} for i in range(len(images))])

    def get_next(self):
        return next(self.it, None)


def expose_last_quantized(path):
    """Adds the int8 input of the last DequantizeLinear before the Softmax as a graph output."""
    m = onnx.load(str(path))
    g = m.graph
    softmax = next(n for n in g.node if n.op_type == "Softmax")
    dq = next(n for n in g.node if n.output[0] == softmax.input[0])
    assert dq.op_type == "DequantizeLinear", dq.op_type
    q = dq.input[0]
    g.output.append(onnx.helper.make_tensor_value_info(q, onnx.TensorProto.INT8, ["N", 10]))
    onnx.save(m, str(path))
    return q


def run_ort(path, x):
    # Default graph optimizations (measured: every level, ORT_DISABLE_ALL to ORT_ENABLE_ALL, gives
    # the same outputs on this model).
    sess = common.session(path)
    probs, qs = [], []
    for i in range(len(x)):
        p, q = sess.run(None, {"input": x[i : i + 1]})
        probs.append(p)
        qs.append(q)
    return np.concatenate(probs), np.concatenate(qs)


def main():
    xtr, xte, yte = load_data()
    calib = xtr[:N_CALIB]
    with tempfile.TemporaryDirectory() as tmp:
        pre = Path(tmp) / "float.onnx"
        m = onnx.load(str(FLOAT))
        onnx.save(m, str(pre))
        quantize_static(
            str(pre),
            str(OUT / "model.onnx"),
            Reader(calib),
            quant_format=QuantFormat.QDQ,
            activation_type=QuantType.QInt8,
            weight_type=QuantType.QInt8,
            per_channel=True,
            calibrate_method=CalibrationMethod.MinMax,
        )
    q_name = expose_last_quantized(OUT / "model.onnx")
    y, q = run_ort(OUT / "model.onnx", xte)
    yf, _ = run_ort_float(xte)
    digits = OUT.parent / "digits"
    assert np.array_equal(np.load(digits / "x.npy"), xte), "tests/models/digits/x.npy differs"
    assert np.array_equal(np.load(digits / "labels.npy"), yte), "tests/models/digits/labels.npy differs"
    np.save(OUT / "y.npy", y.astype(np.float32))
    np.save(OUT / "q.npy", q.astype(np.int8))
    acc_q = (y.argmax(1) == yte).mean()
    acc_f = (yf.argmax(1) == yte).mean()
    agree = (y.argmax(1) == yf.argmax(1)).mean()
    ops = sorted({n.op_type for n in onnx.load(str(OUT / "model.onnx")).graph.node})
    print(f"ops: {ops}; last quantized tensor {q_name}")
    print(f"test accuracy: float {acc_f:.4f}, int8 (onnxruntime) {acc_q:.4f}; top-1 agreement {agree:.4f}")
    print(f"onnxruntime {ort.__version__}, onnx {onnx.__version__}, numpy {np.__version__}")


def run_ort_float(x):
    sess = common.session(FLOAT)
    return np.concatenate([sess.run(None, {"input": x[i : i + 1]})[0] for i in range(len(x))]), None


if __name__ == "__main__":
    main()
