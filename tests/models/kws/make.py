#!/usr/bin/env python3
"""Build the `kws` test model for Ember: a tiny keyword-spotting-style 1-D CNN over synthetic
"audio feature" sequences (10 mel bins x 49 frames, the shape of a 1 s MFCC/log-mel window).

The data set is synthetic and seeded: each sample is one of 4 classes of time-frequency patterns
(rising sweep, falling sweep, two steady bands, a short broadband burst) placed at a random time
offset with random amplitude and width, on a noisy background. The model is trained in plain numpy
(manual backprop), exported with onnx.helper, and the golden outputs come from onnxruntime.
Deterministic: fixed seeds, single-threaded BLAS and onnxruntime, so rerunning gives byte-identical
files.

    target/venv/bin/python tests/models/kws/make.py

Network (opset 13, 1-D convolutions: ONNX Conv on [N, C, L] with 1-D kernels):
    Conv k=5 pads [2,2] 10->16 -> Relu                  [N,16,49]
    Conv k=3 stride 2 pads [0,1] 16->24 -> Relu         [N,24,24]   (asymmetric padding on purpose)
    Conv k=3 dilation 2 pads [2,2] 24->24 -> Relu       [N,24,24]
    GlobalAveragePool [N,24,1] -> Flatten -> Gemm 24->4 -> Softmax

Outputs (next to this script):
    model.onnx   opset 13, input "input" [N,10,49] f32, output "probs" [N,4] f32
    x.npy        f32 [N_GOLD,10,49]   the first N_GOLD test samples (kept small: 200 KB folder budget)
    labels.npy   i64 [N_GOLD]
    y.npy        f32 [N_GOLD,4]       onnxruntime output on x.npy
    x1.npy       f32 [1,10,49]        first test sample
    y1.npy       f32 [1,4]            onnxruntime output on x1.npy
Accuracy is measured on all N_TEST test samples; only the first N_GOLD are stored.
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

OUT = Path(__file__).resolve().parent
SEED = 0
MELS, FRAMES, CLASSES = 10, 49, 4
N_TRAIN, N_TEST, N_GOLD = 2000, 1000, 48
EPOCHS = 30
BATCH = 32
LR = 3e-3

# (name, in_ch, out_ch, kernel, stride, dilation, pad_begin, pad_end)
LAYERS = [
    ("conv1", MELS, 16, 5, 1, 1, 2, 2),
    ("conv2", 16, 24, 3, 2, 1, 0, 1),
    ("conv3", 24, 24, 3, 1, 2, 2, 2),
]
N_FEAT = LAYERS[-1][2]


# ---------------------------------------------------------------- data

def make_data(rng, n):
    """n samples [n, MELS, FRAMES] in float64 and labels [n]."""
    y = rng.integers(0, CLASSES, size=n)
    x = rng.normal(0.0, 0.8, size=(n, MELS, FRAMES))
    mel = np.arange(MELS)[:, None]
    for i in range(n):
        length = int(rng.integers(14, 26))                   # pattern duration in frames
        start = int(rng.integers(0, FRAMES - length + 1))
        t = np.arange(FRAMES)[None, :]
        u = (t - start) / max(length - 1, 1)                  # 0..1 inside the pattern
        inside = (t >= start) & (t < start + length)
        amp = rng.uniform(0.5, 1.2)
        width = rng.uniform(0.8, 1.5)
        c = y[i]
        if c == 0:                                            # rising sweep
            centre = 1 + u * (MELS - 3)
            pat = np.exp(-0.5 * ((mel - centre) / width) ** 2)
        elif c == 1:                                          # falling sweep
            centre = (MELS - 2) - u * (MELS - 3)
            pat = np.exp(-0.5 * ((mel - centre) / width) ** 2)
        elif c == 2:                                          # two steady bands
            lo, hi = rng.uniform(1.0, 3.0), rng.uniform(6.0, 8.5)
            pat = (np.exp(-0.5 * ((mel - lo) / width) ** 2)
                   + np.exp(-0.5 * ((mel - hi) / width) ** 2)) * np.ones_like(u)
        else:                                                 # short broadband burst
            length = int(rng.integers(4, 8))
            inside = (t >= start) & (t < start + length)
            pat = 0.9 * np.ones((MELS, 1)) * np.ones_like(u)
        x[i] += amp * pat * inside
    return x, y.astype(np.int64)


# ---------------------------------------------------------------- layers ([N, C, L])

def windows(x, k, stride, dil, p0, p1):
    """x (N,C,L) -> windows (N,C,Lo,k) of a 1-D conv with the given geometry."""
    xp = np.pad(x, ((0, 0), (0, 0), (p0, p1)))
    span = dil * (k - 1) + 1
    lo = (xp.shape[2] - span) // stride + 1
    idx = np.arange(lo)[:, None] * stride + np.arange(k)[None, :] * dil  # (Lo,k)
    return xp[:, :, idx], idx


def conv_fwd(x, w, b, geom):
    win, idx = windows(x, *geom)
    return np.einsum("nclk,ock->nol", win, w, optimize=True) + b[None, :, None], win, idx


def conv_bwd(dout, x, win, idx, w, geom):
    _, _, _, p0, p1 = geom
    dw = np.einsum("nclk,nol->ock", win, dout, optimize=True)
    db = dout.sum(axis=(0, 2))
    dwin = np.einsum("nol,ock->nclk", dout, w, optimize=True)
    n, c, length = x.shape
    dxp = np.zeros((n, c, length + p0 + p1))
    np.add.at(dxp, (slice(None), slice(None), idx), dwin)
    return dxp[:, :, p0:p0 + length], dw, db


# ---------------------------------------------------------------- model

def geom(layer):
    _, _, _, k, s, d, p0, p1 = layer
    return (k, s, d, p0, p1)


def init_params(rng):
    p = {}
    for name, cin, cout, k, *_ in LAYERS:
        p[name + ".w"] = rng.normal(0.0, np.sqrt(2.0 / (cin * k)), size=(cout, cin, k))
        p[name + ".b"] = np.zeros(cout)
    p["fc.w"] = rng.normal(0.0, np.sqrt(1.0 / N_FEAT), size=(CLASSES, N_FEAT))
    p["fc.b"] = np.zeros(CLASSES)
    return p


def forward(p, x, keep=False):
    cache = []
    h = x
    for layer in LAYERS:
        name = layer[0]
        z, win, idx = conv_fwd(h, p[name + ".w"], p[name + ".b"], geom(layer))
        cache.append((h, win, idx, z))
        h = np.maximum(z, 0.0)
    f = h.mean(axis=2)                                        # GlobalAveragePool + Flatten
    probs = common.softmax(f @ p["fc.w"].T + p["fc.b"])
    return (probs, (cache, h, f)) if keep else probs


def backward(p, probs, state, y):
    cache, last, f = state
    n = len(y)
    g = {}
    dz = probs.copy()
    dz[np.arange(n), y] -= 1.0
    dz /= n                                                   # mean cross-entropy
    g["fc.w"] = dz.T @ f
    g["fc.b"] = dz.sum(0)
    dh = np.broadcast_to((dz @ p["fc.w"])[:, :, None] / last.shape[2], last.shape)
    for layer, (x_in, win, idx, z) in zip(reversed(LAYERS), reversed(cache)):
        name = layer[0]
        dzl = dh * (z > 0)
        dh, g[name + ".w"], g[name + ".b"] = conv_bwd(dzl, x_in, win, idx, p[name + ".w"],
                                                      geom(layer))
    return g


def train(x, y):
    rng = np.random.default_rng(SEED + 1)
    return common.train_adam(init_params(rng), x, y, forward, backward, rng, EPOCHS, LR, BATCH)


# ---------------------------------------------------------------- ONNX export

def export(p, path):
    inits = [numpy_helper.from_array(v.astype(np.float32), name=k) for k, v in p.items()]
    nodes = []
    h = "input"
    for name, _, _, k, s, d, p0, p1 in LAYERS:
        nodes.append(helper.make_node(
            "Conv", [h, name + ".w", name + ".b"], [name], name=name,
            kernel_shape=[k], strides=[s], dilations=[d], pads=[p0, p1]))
        nodes.append(helper.make_node("Relu", [name], [name + ".relu"], name=name + ".relu"))
        h = name + ".relu"
    nodes += [
        helper.make_node("GlobalAveragePool", [h], ["gap"], name="gap"),
        helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1),
        helper.make_node("Gemm", ["flat", "fc.w", "fc.b"], ["logits"], name="fc", transB=1),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=1),
    ]
    doc = ("Tiny keyword-spotting-style 1-D CNN on synthetic 10x49 feature sequences; "
           "see tests/models/kws/make.py")
    return common.save_model(nodes, inits, "kws_conv1d", ["N", MELS, FRAMES], ["N", CLASSES], doc,
                             path)


# ---------------------------------------------------------------- main

def main():
    t0 = time.time()
    rng = np.random.default_rng(SEED)
    xtr, ytr = make_data(rng, N_TRAIN)
    xte, yte = make_data(rng, N_TEST)
    print(f"data: train {len(xtr)}, test {len(xte)}, classes {np.bincount(yte).tolist()}")
    p = train(xtr, ytr)
    print(f"training took {time.time() - t0:.1f} s")

    acc_train = (forward(p, xtr).argmax(1) == ytr).mean()
    x_all = xte.astype(np.float32)
    y_np = forward(p, x_all.astype(np.float64))
    acc_np = (y_np.argmax(1) == yte).mean()

    model_path = OUT / "model.onnx"
    export(p, model_path)
    y_all = common.run_ort(model_path, x_all).astype(np.float32)
    acc_ort = (y_all.argmax(1) == yte).mean()
    x = x_all[:N_GOLD].copy()
    y_ort = common.run_ort(model_path, x).astype(np.float32)
    x1 = x[:1].copy()
    y1 = common.run_ort(model_path, x1).astype(np.float32)

    common.save_goldens(OUT, x, yte[:N_GOLD], y_ort, x1, y1)

    n_params = sum(v.size for v in p.values())
    print(f"parameters            {n_params}")
    print(f"train accuracy        {acc_train:.4f} ({len(xtr)} samples)")
    print(f"test accuracy numpy   {acc_np:.4f} ({len(xte)} samples)")
    print(f"test accuracy ORT     {acc_ort:.4f}; on the {N_GOLD} stored: "
          f"{(y_ort.argmax(1) == yte[:N_GOLD]).mean():.4f}")
    print(f"max |numpy(f64) - ORT| {np.abs(y_np - y_all).max():.3e}")
    print(f"max |y1 - y[0]|       {np.abs(y1[0] - y_ort[0]).max():.3e}")
    common.print_versions_and_files(OUT, t0)


if __name__ == "__main__":
    main()
