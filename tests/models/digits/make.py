#!/usr/bin/env python3
"""Build the `digits` test model for Ember: a small CNN on scikit-learn's 8x8 digits.

Trains in plain numpy (manual backprop, im2col), exports ONNX with onnx.helper and writes
golden inputs/outputs computed by onnxruntime. Deterministic: fixed seeds, single-threaded
BLAS and onnxruntime, so rerunning gives byte-identical files.

    target/venv/bin/python tests/models/digits/make.py

Outputs (next to this script):
    model.onnx   opset 13, input "input" [N,1,8,8] f32, output "probs" [N,10] f32
    x.npy        f32 [n_test,1,8,8]   test images, pixels in [0,1]
    labels.npy   i64 [n_test]         true labels
    y.npy        f32 [n_test,10]      onnxruntime output on x.npy
    x1.npy       f32 [1,1,8,8]        first test image
    y1.npy       f32 [1,10]           onnxruntime output on x1.npy
"""

import sys
from pathlib import Path

# The shared steps of the model scripts (tests/models/common.py), imported before numpy: it makes BLAS
# single-threaded first, so that results do not depend on the core count.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import common  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402

OUT = Path(__file__).resolve().parent
SEED = 0
N_TEST = 360
EPOCHS = 30
BATCH = 32
LR = 5e-3


# ---------------------------------------------------------------- data

def load_data():
    d = load_digits()
    x = (d.images / 16.0).astype(np.float64)[:, None, :, :]  # (1797,1,8,8)
    y = d.target.astype(np.int64)
    perm = np.random.default_rng(SEED).permutation(len(x))
    test, train = perm[:N_TEST], perm[N_TEST:]
    test = np.sort(test)  # keep the data set's order in the golden files
    return x[train], y[train], x[test], y[test]


# ---------------------------------------------------------------- layers (NCHW)

def im2col3x3(x):
    """x (N,C,H,W) -> cols (N*H*W, C*9), pad 1, stride 1; column order (c, kh, kw)."""
    n, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # (N,C,H,W,3,3)
    return win.transpose(0, 2, 3, 1, 4, 5).reshape(n * h * w, c * 9)


def col2im3x3(dcols, shape):
    n, c, h, w = shape
    d = dcols.reshape(n, h, w, c, 3, 3)
    dxp = np.zeros((n, c, h + 2, w + 2), dtype=dcols.dtype)
    for kh in range(3):
        for kw in range(3):
            dxp[:, :, kh:kh + h, kw:kw + w] += d[:, :, :, :, kh, kw].transpose(0, 3, 1, 2)
    return dxp[:, :, 1:-1, 1:-1]


def conv_fwd(x, w, b):
    n, _, h, wd = x.shape
    o = w.shape[0]
    cols = im2col3x3(x)
    out = cols @ w.reshape(o, -1).T + b  # (N*H*W, O)
    return out.reshape(n, h, wd, o).transpose(0, 3, 1, 2), cols


def conv_bwd(dout, cols, x_shape, w):
    o = w.shape[0]
    d = dout.transpose(0, 2, 3, 1).reshape(-1, o)
    dw = (d.T @ cols).reshape(w.shape)
    db = d.sum(axis=0)
    dx = col2im3x3(d @ w.reshape(o, -1), x_shape)
    return dx, dw, db


def pool_fwd(x):
    n, c, h, w = x.shape
    win = x.reshape(n, c, h // 2, 2, w // 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(n, c, h // 2, w // 2, 4)
    idx = win.argmax(axis=-1)
    return np.take_along_axis(win, idx[..., None], axis=-1)[..., 0], idx


def pool_bwd(dout, idx, x_shape):
    n, c, h, w = x_shape
    dwin = np.zeros((n, c, h // 2, w // 2, 4), dtype=dout.dtype)
    np.put_along_axis(dwin, idx[..., None], dout[..., None], axis=-1)
    return dwin.reshape(n, c, h // 2, w // 2, 2, 2).transpose(0, 1, 2, 4, 3, 5).reshape(x_shape)


# ---------------------------------------------------------------- model

def init_params(rng):
    def he(shape, fan_in):
        return rng.normal(0.0, np.sqrt(2.0 / fan_in), size=shape)

    return {
        "conv1.w": he((8, 1, 3, 3), 9), "conv1.b": np.zeros(8),
        "conv2.w": he((16, 8, 3, 3), 72), "conv2.b": np.zeros(16),
        "fc1.w": he((32, 64), 64), "fc1.b": np.zeros(32),
        "fc2.w": he((10, 32), 32) * 0.5, "fc2.b": np.zeros(10),
    }


def forward(p, x, keep=False):
    c1, cols1 = conv_fwd(x, p["conv1.w"], p["conv1.b"])      # (N,8,8,8)
    r1 = np.maximum(c1, 0)
    m1, i1 = pool_fwd(r1)                                    # (N,8,4,4)
    c2, cols2 = conv_fwd(m1, p["conv2.w"], p["conv2.b"])     # (N,16,4,4)
    r2 = np.maximum(c2, 0)
    m2, i2 = pool_fwd(r2)                                    # (N,16,2,2)
    f = m2.reshape(len(x), -1)                               # (N,64)
    h = f @ p["fc1.w"].T + p["fc1.b"]                        # (N,32)
    hr = np.maximum(h, 0)
    z = hr @ p["fc2.w"].T + p["fc2.b"]                       # (N,10)
    probs = common.softmax(z)
    if not keep:
        return probs
    return probs, dict(x=x, c1=c1, cols1=cols1, r1=r1, i1=i1, m1=m1, c2=c2, cols2=cols2,
                       r2=r2, i2=i2, f=f, h=h, hr=hr)


def backward(p, probs, cache, y):
    n = len(y)
    g = {}
    dz = probs.copy()
    dz[np.arange(n), y] -= 1.0
    dz /= n                                                  # mean cross-entropy
    g["fc2.w"] = dz.T @ cache["hr"]
    g["fc2.b"] = dz.sum(0)
    dh = (dz @ p["fc2.w"]) * (cache["h"] > 0)
    g["fc1.w"] = dh.T @ cache["f"]
    g["fc1.b"] = dh.sum(0)
    dm2 = (dh @ p["fc1.w"]).reshape(cache["r2"].shape[0], 16, 2, 2)
    dr2 = pool_bwd(dm2, cache["i2"], cache["r2"].shape)
    dc2 = dr2 * (cache["c2"] > 0)
    dm1, g["conv2.w"], g["conv2.b"] = conv_bwd(dc2, cache["cols2"], cache["m1"].shape, p["conv2.w"])
    dr1 = pool_bwd(dm1, cache["i1"], cache["r1"].shape)
    dc1 = dr1 * (cache["c1"] > 0)
    _, g["conv1.w"], g["conv1.b"] = conv_bwd(dc1, cache["cols1"], cache["x"].shape, p["conv1.w"])
    return g


def train(x, y):
    rng = np.random.default_rng(SEED)
    return common.train_adam(init_params(rng), x, y, forward, backward, rng, EPOCHS, LR, BATCH)


# ---------------------------------------------------------------- ONNX export

def export(p, path):
    f32 = {k: v.astype(np.float32) for k, v in p.items()}
    inits = [numpy_helper.from_array(v, name=k) for k, v in f32.items()]
    nodes = [
        helper.make_node("Conv", ["input", "conv1.w", "conv1.b"], ["conv1"], name="conv1",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["conv1"], ["relu1"], name="relu1"),
        helper.make_node("MaxPool", ["relu1"], ["pool1"], name="pool1",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["pool1", "conv2.w", "conv2.b"], ["conv2"], name="conv2",
                         kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        helper.make_node("Relu", ["conv2"], ["relu2"], name="relu2"),
        helper.make_node("MaxPool", ["relu2"], ["pool2"], name="pool2",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["pool2"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc1.w", "fc1.b"], ["fc1"], name="fc1", transB=1),
        helper.make_node("Relu", ["fc1"], ["relu3"], name="relu3"),
        helper.make_node("Gemm", ["relu3", "fc2.w", "fc2.b"], ["logits"], name="fc2", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    doc = "Small CNN on scikit-learn 8x8 digits; see tests/models/digits/make.py"
    return common.save_model(nodes, inits, "digits_cnn", ["N", 1, 8, 8], ["N", 10], doc, path)


# ---------------------------------------------------------------- main

def main():
    t0 = time.time()
    xtr, ytr, xte, yte = load_data()
    print(f"data: train {len(xtr)}, test {len(xte)}")
    p = train(xtr, ytr)
    print(f"training took {time.time() - t0:.1f} s")

    p32 = {k: v.astype(np.float32) for k, v in p.items()}
    acc_train = (forward(p, xtr).argmax(1) == ytr).mean()
    x = xte.astype(np.float32)
    y_np = forward(p32, x).astype(np.float32)
    acc_np = (y_np.argmax(1) == yte).mean()

    model_path = OUT / "model.onnx"
    export(p, model_path)
    y_ort = common.run_ort(model_path, x).astype(np.float32)
    acc_ort = (y_ort.argmax(1) == yte).mean()
    x1 = x[:1].copy()
    y1 = common.run_ort(model_path, x1).astype(np.float32)

    common.save_goldens(OUT, x, yte, y_ort, x1, y1)

    print(f"train accuracy        {acc_train:.4f} ({len(xtr)} images)")
    print(f"test accuracy numpy   {acc_np:.4f} ({len(xte)} images)")
    print(f"test accuracy ORT     {acc_ort:.4f}")
    print(f"max |numpy - ORT|     {np.abs(y_np - y_ort).max():.3e}")
    print(f"max |y1 - y[0]|       {np.abs(y1[0] - y_ort[0]).max():.3e}")
    common.print_versions_and_files(OUT, t0)


if __name__ == "__main__":
    main()
