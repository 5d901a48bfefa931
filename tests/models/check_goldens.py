"""Checks that every committed golden output is what onnxruntime computes for the committed model.

For each tests/models/<name>/ (or a folder inside it) with model.onnx, it runs onnxruntime on every x*.npy and compares with the
matching y*.npy; for converter/tests/models/ops/<case>.onnx, on <case>.x.npy against <case>.y.npy.
Run by `cargo xtask ci` in target/venv; exits non-zero on any difference beyond the tolerance below.

The tolerance. These goldens are float32 outputs, and onnxruntime's float kernels (MLAS) pick their code
path by CPU at run time: AVX-512, AVX2 with FMA, or SSE. Those paths sum in different orders and round
a*b+c once (FMA) or twice, so the same model moves in its last bits from one x86-64 CPU to another
(1.4e-6 on the digits CNN's softmax between an AVX-512 and an AVX2 EPYC). A float32 dot product of K
terms, summed in any order, is within K * 2^-24 * sum|a_i * b_i| of the exact value (Higham, "Accuracy and
Stability of Numerical Algorithms", 3.1), and in practice the error grows like sqrt(K) rather than K: for
these networks (K up to a few hundred, a few layers, outputs of order one) a few 1e-6 of the output's
scale, as measured. So an output matches when every element satisfies

    |onnxruntime - golden| <= RTOL * max(1, max |golden|)          (RTOL = 1e-5)

that is, within about 80 float32 steps of the output's largest value, measured against the scale of the
whole output rather than each element (a softmax entry of 1e-9 is not held to 1e-14). It is 7x the
largest cross-CPU difference seen, and over 1,000x below the smallest gap between the first and second
class of any image in the bundled test sets (0.013, dscnn), so it tolerates rounding and nothing else.
Integer outputs (int8 models) are compared exactly.
"""
import glob
import os
import sys

import numpy as np
import onnxruntime as ort

RTOL = 1e-5

# Goldens computed by numpy rather than onnxruntime (converter/tests/models/ops/signal_cases.py: each
# frame's float64 FFT), where onnxruntime's float32 STFT is the less accurate of the two: it reproduces
# them within this bound instead (measured 3.0e-5 of the output's largest value on stft_400's 400-point
# frames, 1e-6 on stft_512's, AMD EPYC).
NUMPY_GOLDENS = {"stft_400.y.npy": 1e-4, "stft_512.y.npy": 1e-4}

HERE = os.path.dirname(os.path.abspath(__file__))
failed = 0
checked = 0


def check(model, pairs):
    """Runs `model` on each (x, y) file pair and compares with the committed y (x is None for a model
    without inputs)."""
    global failed, checked
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    inputs = sess.get_inputs()
    # A model without inputs (tests/models/no_inputs) has its y.npy alone.
    y_alone = os.path.join(os.path.dirname(model), "y.npy")
    if not inputs and not pairs and os.path.exists(y_alone):
        pairs = [(None, y_alone)]
    for x_path, y_path in pairs:
        feeds = {} if x_path is None else {inputs[0].name: np.load(x_path)}
        got = sess.run(None, feeds)[0]
        want = np.load(y_path)
        if got.shape != want.shape:
            diff, bound = float("inf"), 0.0
        elif np.issubdtype(want.dtype, np.integer):
            diff, bound = float(np.max(np.abs(got.astype(np.int64) - want.astype(np.int64)))), 0.0
        else:
            diff = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
            rtol = NUMPY_GOLDENS.get(os.path.basename(y_path), RTOL)
            bound = rtol * max(1.0, float(np.max(np.abs(want))))
        ok = diff <= bound
        checked += 1
        failed += not ok
        rel = os.path.relpath(y_path, os.path.dirname(os.path.dirname(HERE)))
        print(f"{rel}: shape {want.shape}, max |onnxruntime - golden| = {diff:.2e} (bound {bound:.2e}): {'ok' if ok else 'DIFFERS'}")


# A model's folder, or a folder inside it (a variant of the model, such as kws/lengths/).
MODELS = glob.glob(os.path.join(HERE, "*", "model.onnx")) + glob.glob(os.path.join(HERE, "*", "*", "model.onnx"))
for model in sorted(MODELS):
    folder = os.path.dirname(model)
    pairs = []
    for x_path in sorted(glob.glob(os.path.join(folder, "x*.npy"))):
        y_path = os.path.join(folder, "y" + os.path.basename(x_path)[1:])
        if os.path.exists(y_path):
            pairs.append((x_path, y_path))
    check(model, pairs)

OPS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "converter", "tests", "models", "ops")
for model in sorted(glob.glob(os.path.join(OPS, "*.onnx"))):
    base = model[: -len(".onnx")]
    if os.path.exists(base + ".x.npy") and os.path.exists(base + ".y.npy"):
        check(model, [(base + ".x.npy", base + ".y.npy")])

print(f"{checked - failed} passed, {failed} failed")
sys.exit(1 if failed or not checked else 0)
