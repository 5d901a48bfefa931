"""Checks that every committed golden output is what onnxruntime computes for the committed model.

For each tests/models/<name>/ with model.onnx, it runs onnxruntime on every x*.npy and compares with the
matching y*.npy; for converter/tests/models/ops/<case>.onnx, on <case>.x.npy against <case>.y.npy.
Run by `cargo xtask ci` in target/venv; exits non-zero on any difference.
"""
import glob
import os
import sys

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
failed = 0
checked = 0


def check(model, pairs):
    """Runs `model` on each (x, y) file pair and compares with the committed y."""
    global failed, checked
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(model, opts, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    for x_path, y_path in pairs:
        got = sess.run(None, {name: np.load(x_path)})[0]
        want = np.load(y_path)
        diff = float(np.max(np.abs(got - want))) if got.shape == want.shape else float("inf")
        ok = diff <= 1e-6
        checked += 1
        failed += not ok
        rel = os.path.relpath(y_path, os.path.dirname(os.path.dirname(HERE)))
        print(f"{rel}: shape {want.shape}, max |onnxruntime - golden| = {diff:.2e}: {'ok' if ok else 'DIFFERS'}")


for model in sorted(glob.glob(os.path.join(HERE, "*", "model.onnx"))):
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
