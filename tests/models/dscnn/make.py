#!/usr/bin/env python3
"""Build the `dscnn` test model for Ember: a MobileNet-style depthwise-separable CNN on scikit-learn's
8x8 digits, with real BatchNormalization nodes and ReLU6 (Clip 0..6).

Trains in plain numpy (manual backprop), exports ONNX with onnx.helper and writes golden
inputs/outputs computed by onnxruntime. Deterministic: fixed seeds, single-threaded BLAS and
onnxruntime, so rerunning gives byte-identical files.

    target/venv/bin/python tests/models/dscnn/make.py

Network (NCHW, opset 13):
    Conv 3x3 1->16 (no bias) -> BN -> Clip(0,6)                                    stem, 8x8
    Conv 3x3 dw (group 16) -> BN -> Clip(0,6) -> Conv 1x1 16->32 -> BN -> Clip(0,6)   block 1, 8x8
    Conv 3x3 dw (group 32, stride 2) -> BN -> Clip(0,6) -> Conv 1x1 32->64 -> BN -> Clip(0,6)  block 2, 4x4
    GlobalAveragePool -> Flatten -> Gemm 64->10 -> Softmax

How the BatchNormalization nodes get their numbers: the network is trained with a per-channel bias
after every convolution instead of BN. At export each convolution loses its bias and is followed by
a BatchNormalization whose mean and var are the per-channel statistics of the bias-free convolution
output over the whole training set (inference-mode BN, epsilon 1e-5), with scale = sqrt(var + eps)
and B = mean + bias. So BN(conv(x)) equals the trained conv(x) + bias, and the ONNX graph carries
real, non-trivial mean/var/scale/B initializers that the converter must fold into the convolutions.

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
EPOCHS = 40
BATCH = 32
LR = 4e-3
BN_EPS = 1e-5

# (name, kind, in_ch, out_ch, stride); kind "full" = 3x3 conv, "dw" = 3x3 depthwise, "pw" = 1x1.
LAYERS = [
    ("stem", "full", 1, 16, 1),
    ("dw1", "dw", 16, 16, 1),
    ("pw1", "pw", 16, 32, 1),
    ("dw2", "dw", 32, 32, 2),
    ("pw2", "pw", 32, 64, 1),
]
N_FEAT = 64


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

def windows(x, stride):
    """x (N,C,H,W) -> 3x3 windows (N,C,Ho,Wo,3,3) with pad 1 and the given stride."""
    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))
    return win[:, :, ::stride, ::stride]


def unwindow(dwin, x_shape, stride):
    """Adjoint of `windows`: scatters window gradients (N,C,Ho,Wo,3,3) back to (N,C,H,W)."""
    n, c, h, w = x_shape
    ho, wo = dwin.shape[2], dwin.shape[3]
    dxp = np.zeros((n, c, h + 2, w + 2), dtype=dwin.dtype)
    for kh in range(3):
        for kw in range(3):
            dxp[:, :, kh:kh + stride * ho:stride, kw:kw + stride * wo:stride] += dwin[..., kh, kw]
    return dxp[:, :, 1:-1, 1:-1]


def conv_fwd(kind, x, w, stride):
    """Bias-free convolution; returns the output and what the backward pass needs."""
    if kind == "pw":
        return np.einsum("nchw,oc->nohw", x, w[:, :, 0, 0], optimize=True), None
    win = windows(x, stride)
    if kind == "dw":
        return np.einsum("nchwij,cij->nchw", win, w[:, 0], optimize=True), win
    return np.einsum("nchwij,ocij->nohw", win, w, optimize=True), win


def conv_bwd(kind, dout, x, win, w, stride):
    if kind == "pw":
        dw = np.einsum("nohw,nchw->oc", dout, x, optimize=True)[:, :, None, None]
        dx = np.einsum("nohw,oc->nchw", dout, w[:, :, 0, 0], optimize=True)
        return dx, dw
    if kind == "dw":
        dw = np.einsum("nchwij,nchw->cij", win, dout, optimize=True)[:, None]
        dwin = dout[..., None, None] * w[None, :, 0, None, None, :, :]
    else:
        dw = np.einsum("nchwij,nohw->ocij", win, dout, optimize=True)
        dwin = np.einsum("nohw,ocij->nchwij", dout, w, optimize=True)
    return unwindow(dwin, x.shape, stride), dw


# ---------------------------------------------------------------- model

def init_params(rng):
    p = {}
    for name, kind, cin, cout, _ in LAYERS:
        if kind == "full":
            shape, fan_in = (cout, cin, 3, 3), cin * 9
        elif kind == "dw":
            shape, fan_in = (cout, 1, 3, 3), 9
        else:
            shape, fan_in = (cout, cin, 1, 1), cin
        p[name + ".w"] = rng.normal(0.0, np.sqrt(2.0 / fan_in), size=shape)
        p[name + ".b"] = np.zeros(cout)
    p["fc.w"] = rng.normal(0.0, np.sqrt(1.0 / N_FEAT), size=(10, N_FEAT))
    p["fc.b"] = np.zeros(10)
    return p


def forward(p, x, keep=False):
    """Returns probs (and a cache); `convs` holds each layer's bias-free conv output."""
    cache = {"acts": [], "convs": []}
    h = x
    for name, kind, _, _, stride in LAYERS:
        z, win = conv_fwd(kind, h, p[name + ".w"], stride)
        cache["acts"].append((h, win))
        cache["convs"].append(z)
        z = z + p[name + ".b"][None, :, None, None]
        h = np.clip(z, 0.0, 6.0)
    f = h.mean(axis=(2, 3))                                   # GlobalAveragePool + Flatten
    cache["last"] = h
    cache["f"] = f
    probs = common.softmax(f @ p["fc.w"].T + p["fc.b"])
    return (probs, cache) if keep else probs


def backward(p, probs, cache, y):
    n = len(y)
    g = {}
    dz = probs.copy()
    dz[np.arange(n), y] -= 1.0
    dz /= n                                                   # mean cross-entropy
    g["fc.w"] = dz.T @ cache["f"]
    g["fc.b"] = dz.sum(0)
    df = dz @ p["fc.w"]
    last = cache["last"]
    dh = np.broadcast_to(df[:, :, None, None] / (last.shape[2] * last.shape[3]), last.shape)
    for i in reversed(range(len(LAYERS))):
        name, kind, _, _, stride = LAYERS[i]
        z = cache["convs"][i] + p[name + ".b"][None, :, None, None]
        dzl = dh * ((z > 0) & (z < 6))                        # ReLU6
        g[name + ".b"] = dzl.sum(axis=(0, 2, 3))
        x_in, win = cache["acts"][i]
        dh, g[name + ".w"] = conv_bwd(kind, dzl, x_in, win, p[name + ".w"], stride)
    return g


def train(x, y):
    rng = np.random.default_rng(SEED)
    return common.train_adam(init_params(rng), x, y, forward, backward, rng, EPOCHS, LR, BATCH)


def batch_norm_stats(p, x):
    """Per-channel mean and variance of each bias-free conv output over `x` (the training set)."""
    _, cache = forward(p, x, keep=True)
    return [(z.mean(axis=(0, 2, 3)), z.var(axis=(0, 2, 3))) for z in cache["convs"]]


# ---------------------------------------------------------------- ONNX export

def export(p, stats, path):
    inits = []

    def init(name, value):
        inits.append(numpy_helper.from_array(np.asarray(value, dtype=np.float32), name=name))
        return name

    nodes = []
    h = "input"
    for (name, kind, _, cout, stride), (mean, var) in zip(LAYERS, stats):
        k = 1 if kind == "pw" else 3
        pad = 0 if kind == "pw" else 1
        nodes.append(helper.make_node(
            "Conv", [h, init(name + ".w", p[name + ".w"])], [name], name=name,
            kernel_shape=[k, k], pads=[pad] * 4, strides=[stride, stride],
            group=cout if kind == "dw" else 1))
        scale = np.sqrt(var + BN_EPS)
        bias = mean + p[name + ".b"]
        nodes.append(helper.make_node(
            "BatchNormalization",
            [name, init(name + ".bn.scale", scale), init(name + ".bn.B", bias),
             init(name + ".bn.mean", mean), init(name + ".bn.var", var)],
            [name + ".bn"], name=name + ".bn", epsilon=BN_EPS))
        nodes.append(helper.make_node(
            "Clip", [name + ".bn", init(name + ".min", 0.0), init(name + ".max", 6.0)],
            [name + ".relu6"], name=name + ".relu6"))
        h = name + ".relu6"
    nodes += [
        helper.make_node("GlobalAveragePool", [h], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", init("fc.w", p["fc.w"]), init("fc.b", p["fc.b"])],
                         ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    doc = ("MobileNet-style depthwise-separable CNN (BatchNorm, ReLU6) on scikit-learn "
           "8x8 digits; see tests/models/dscnn/make.py")
    return common.save_model(nodes, inits, "digits_dscnn", ["N", 1, 8, 8], ["N", 10], doc, path)


# ---------------------------------------------------------------- main

def main():
    t0 = time.time()
    xtr, ytr, xte, yte = load_data()
    print(f"data: train {len(xtr)}, test {len(xte)}")
    p = train(xtr, ytr)
    print(f"training took {time.time() - t0:.1f} s")
    stats = batch_norm_stats(p, xtr)

    acc_train = (forward(p, xtr).argmax(1) == ytr).mean()
    x = xte.astype(np.float32)
    y_np = forward(p, xte)
    acc_np = (y_np.argmax(1) == yte).mean()

    model_path = OUT / "model.onnx"
    export(p, stats, model_path)
    y_ort = common.run_ort(model_path, x).astype(np.float32)
    acc_ort = (y_ort.argmax(1) == yte).mean()
    x1 = x[:1].copy()
    y1 = common.run_ort(model_path, x1).astype(np.float32)

    common.save_goldens(OUT, x, yte, y_ort, x1, y1)

    n_params = sum(v.size for v in p.values())
    print(f"parameters (trained)  {n_params}")
    for (name, *_), (mean, var) in zip(LAYERS, stats):
        print(f"  {name:5s} BN mean in [{mean.min():+.3f}, {mean.max():+.3f}], "
              f"var in [{var.min():.3f}, {var.max():.3f}]")
    print(f"train accuracy        {acc_train:.4f} ({len(xtr)} images)")
    print(f"test accuracy numpy   {acc_np:.4f} ({len(xte)} images)")
    print(f"test accuracy ORT     {acc_ort:.4f}")
    print(f"max |numpy(f64) - ORT| {np.abs(y_np - y_ort).max():.3e}")
    print(f"max |y1 - y[0]|       {np.abs(y1[0] - y_ort[0]).max():.3e}")
    common.print_versions_and_files(OUT, t0)


if __name__ == "__main__":
    main()
