#!/usr/bin/env python3
"""Build the TFLite importer's test models (`ember convert model.tflite`), with goldens from the real
interpreters.

Each case is one `.tflite` (one subgraph, NHWC, written with `tests/tflm/tflite_writer.py`: no TensorFlow),
its inputs `<case>.x.npy` (or `<case>.x0.npy`, `<case>.x1.npy`, ... in the subgraph's input order) and its
outputs `<case>.y.npy` (or `.y0.npy`, `.y1.npy`, ... in the subgraph's output order), each in its tensor's
own dtype. Float32 models (`float_cases.py`): goldens from LiteRT's reference kernels
(`OpResolverType.BUILTIN_REF`, no delegate); the default LiteRT interpreter (XNNPACK) is run too and its
largest difference printed. Int8 models (`int8_cases.py`): goldens from TFLM (`tflite_micro.runtime`); LiteRT
is run too and the values that differ from TFLM are counted and printed (not an error). Error models
(`unsupported_builtin`, `unsupported_custom`) have no goldens. `cases.txt` lists every case:
`<case> <float|int8> <golden source> <ops used, comma-separated> [key=value ...]`.

Every tensor's declared shape is checked against the shape LiteRT computes when it prepares the model, so
an importer may trust the shapes stored in the file. Each case has its own seed (from its name):
rebuilding or adding one leaves the others' files byte-identical. Rerun:

    target/venv/bin/pip install -r tests/requirements.txt
    target/venv/bin/python converter/tests/models/tflite/make.py [CASE ...]
"""

import sys
import zlib
from pathlib import Path

import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
from tflite_micro import runtime

OUT = Path(__file__).resolve().parent
sys.path.insert(0, str(OUT.parents[3] / "tests" / "tflm"))

import float_cases  # noqa: E402  (next to this file)
import int8_cases  # noqa: E402
from tflite_writer import op_name, tfl  # noqa: E402

NUMPY_TYPES = {
    tfl.TensorType.FLOAT32: np.float32,
    tfl.TensorType.INT8: np.int8,
    tfl.TensorType.INT32: np.int32,
}


def litert(data, xs, resolver=OpResolverType.BUILTIN_REF):
    """LiteRT's outputs on inputs `xs`, and the interpreter (prepared and invoked)."""
    it = Interpreter(model_content=data, experimental_op_resolver_type=resolver)
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), xs, strict=True):
        it.set_tensor(d["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()], it


def tflm(data, xs, outputs):
    it = runtime.Interpreter.from_bytes(data, arena_size=1 << 20)
    for i, x in enumerate(xs):
        it.set_input(x, i)
    it.invoke()
    return [np.array(it.get_output(i)) for i in range(outputs)]


def check_shapes(case, m, it):
    """Every tensor of the model has the shape LiteRT gives it after `allocate_tensors`."""
    for d in it.get_tensor_details():
        i = d["index"]
        if i < len(m.tensors) and list(d["shape"]) != m.shape(i):
            raise SystemExit(f"{case}: tensor {i} ({d['name']}) declared {m.shape(i)}, LiteRT says {list(d['shape'])}")


def lsb_diff(a, b):
    """(values differing, largest difference) of two integer arrays."""
    d = np.abs(a.astype(np.int64) - b.astype(np.int64))
    return int(np.count_nonzero(d)), int(d.max(initial=0))


def ops_used(m):
    return ",".join(op_name(c[0]) if c[1] is None else f"CUSTOM:{c[1]}" for c in m.codes)


def save_arrays(case, letter, arrays):
    if len(arrays) == 1:
        np.save(OUT / f"{case}.{letter}.npy", arrays[0])
    else:
        for i, a in enumerate(arrays):
            np.save(OUT / f"{case}.{letter}{i}.npy", a)


def check_dtypes(case, m, indices, arrays, what):
    for i, a in zip(indices, arrays, strict=True):
        want = NUMPY_TYPES[m.tensors[i].type]
        if a.dtype != want or list(a.shape) != m.shape(i):
            raise SystemExit(f"{case}: {what} {i} is {a.dtype} {list(a.shape)}, the model says {want} {m.shape(i)}")


def compare(ys, theirs, output_scale=None):
    """(values differing, values, largest difference in LSB) between int8 outputs `ys` and another
    interpreter's; float outputs (dequantized int8) are compared in units of `output_scale`."""
    if output_scale is not None:
        ys = [np.round(y / output_scale) for y in ys]
        theirs = [np.round(t / output_scale) for t in theirs]
    counts = [lsb_diff(a, b) for a, b in zip(ys, theirs, strict=True)]
    return sum(c[0] for c in counts), sum(y.size for y in ys), max(c[1] for c in counts)


def run_case(name, kind, build):
    """Builds, runs and saves one case; returns its cases.txt line and a summary."""
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    m, inputs, outputs, xs, extra = build(rng)
    private = {k: extra.pop(k) for k in list(extra) if k.startswith("_")}
    data = m.finish(inputs, outputs, description=f"ember converter test: {name}")
    (OUT / f"{name}.tflite").write_bytes(data)
    check_dtypes(name, m, inputs, xs, "input")
    if kind == "error":
        type_word, golden = private["_type"], "none"
        try:
            _, it = litert(data, xs)
            check_shapes(name, m, it)
            note = "LiteRT runs it (no goldens written)"
        except Exception as e:  # noqa: BLE001  (LiteRT's own error, shown as is)
            note = f"LiteRT refuses it: {str(e).strip().splitlines()[0][:100]}"
    else:
        ref, it = litert(data, xs)
        check_shapes(name, m, it)
        fast, _ = litert(data, xs, OpResolverType.AUTO)
        if kind == "float":
            type_word, golden, ys = "float", "litert", ref
            worst = max(float(np.max(np.abs(a - b), initial=0)) for a, b in zip(ys, fast, strict=True))
            note = f"LiteRT default (XNNPACK) vs reference kernels: max |diff| {worst:.3g}"
        else:
            type_word, golden = "int8", "tflm"
            ys = tflm(data, xs, len(outputs))
            notes = []
            for label, theirs in (("ref", ref), ("default", fast)):
                n, size, worst = compare(ys, theirs, private.get("_output_scale"))
                notes.append(f"LiteRT {label}: {n}/{size} values differ from TFLM, max {worst} LSB")
                if private.get("_record_litert"):
                    extra[f"litert_{label}_differs"] = f"{n}/{size}"
                    extra[f"litert_{label}_max_lsb"] = worst
            saturated = sum(int(np.count_nonzero((y == -128) | (y == 127))) for y in ys if y.dtype == np.int8)
            note = "; ".join(notes) + f"; TFLM outputs at -128 or 127: {saturated}"
        check_dtypes(name, m, outputs, ys, "output")
        save_arrays(name, "x", xs)
        save_arrays(name, "y", ys)
    fields = [name, type_word, golden, ops_used(m)] + [f"{k}={v}" for k, v in extra.items()]
    shapes = ", ".join(str(m.shape(i)) for i in inputs) + " -> " + ", ".join(str(m.shape(o)) for o in outputs)
    return " ".join(fields), f"{name} ({len(data)} B): {shapes}\n    {note}"


CASES = [(name, "float", build) for name, build in float_cases.CASES] + int8_cases.CASES


def main():
    wanted = set(sys.argv[1:])
    unknown = wanted - {name for name, _, _ in CASES}
    if unknown:
        raise SystemExit(f"unknown cases {sorted(unknown)}")
    lines, summary = {}, []
    cases_txt = OUT / "cases.txt"
    if cases_txt.exists():
        for line in cases_txt.read_text().splitlines():
            if line and not line.startswith("#"):
                lines[line.split()[0]] = line
    for name, kind, build in CASES:
        if wanted and name not in wanted:
            continue
        line, text = run_case(name, kind, build)
        lines[name] = line
        summary.append(text)
    order = [name for name, _, _ in CASES]
    cases_txt.write_text(
        "# The TFLite importer's test models; made by make.py (rerun it, don't edit).\n"
        "# <case> <float|int8> <golden source: litert (reference kernels) | tflm | none> <ops used> [key=value ...]\n"
        + "".join(lines[n] + "\n" for n in order if n in lines)
    )
    total = sum(p.stat().st_size for p in OUT.iterdir() if p.suffix in (".tflite", ".npy"))
    print("\n".join(summary))
    print(f"{len(summary)} cases; .tflite and .npy files in {OUT}: {total} bytes")


if __name__ == "__main__":
    main()
