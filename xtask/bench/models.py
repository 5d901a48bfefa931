"""Models of `cargo xtask bench` that are not in the repository, made under OUT (`target/bench/`):

- `one_op.onnx`: one Add of a constant to a 1-element input, made with the onnx package. Timing it through
  an engine's Python API measures what a call costs besides the model's compute (the binding, the
  engine's fixed work per run): the bench subtracts it from the peers' figures.
- with --zoo (instead of the one-op model), real public models of 100+ ops: PaddleOCR's PP-OCR networks as shipped in the PyPI wheel
  `rapidocr-onnxruntime==1.4.4` (Apache-2.0; see tests/models/zoo.md). The wheel is fetched with pip,
  checked against the SHA-256 below, and the .onnx files are unpacked into OUT/models/. Nothing is
  committed.

Every model gets a fixed input OUT/inputs/<name>.x.npy (float32, seeded, uniform in [-1, 1)). Prints one
JSON list: [{"name", "onnx", "input", "source"}].

usage: models.py OUT [--zoo]
"""
import argparse
import hashlib
import json
import os
import subprocess
import sys
import zipfile

import numpy as np

WHEEL = "rapidocr_onnxruntime-1.4.4-py3-none-any.whl"
WHEEL_REQUIREMENT = "rapidocr-onnxruntime==1.4.4"
WHEEL_SHA256 = "971d7d5f223a7a808662229df1ef69893809d8457d834e6373d3854bc1782cbf"

# (name in the report, file in the wheel, input shape for the bench)
ZOO = [
    ("ppocr-v4-det", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", (1, 3, 160, 160)),
    ("ppocr-v4-rec", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", (1, 3, 48, 320)),
    ("ppocr-mobile-v2-cls", "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx", (1, 3, 48, 192)),
]

SEED = 20250117


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def wheel_tag_args(wheel):
    """pip's options that select the platform wheel named `wheel` whatever this machine's Python and CPU: a
    wheel file is `name-version[-build]-python-abi-platform.whl`, each tag possibly a dotted set, so
    `mediapipe-0.10.21-cp311-cp311-manylinux_2_28_x86_64.whl` gives --implementation cp, --python-version
    3.11, --abi cp311, --platform manylinux_2_28_x86_64. No options for a pure-Python (`any`) wheel."""
    python, abi, platform = wheel[: -len(".whl")].split("-")[-3:]
    if platform == "any":
        return []
    python = python.split(".")[0]
    implementation, version = python[:2], python[2:]
    args = ["--implementation", implementation, "--python-version", f"{version[0]}.{version[1:]}".rstrip(".")]
    for a in abi.split("."):
        args += ["--abi", a]
    for p in platform.split("."):
        args += ["--platform", p]
    return args


def fetch_wheel(out, requirement=WHEEL_REQUIREMENT, wheel=WHEEL, expected=WHEEL_SHA256):
    """The wheel `wheel` of `requirement` (`name==version`) in OUT, fetched with pip unless it is there
    already; refused (and removed) unless its SHA-256 is `expected`. A platform wheel is asked for by its
    own tags (`wheel_tag_args`), so that pip fetches that file on any machine. Shared with
    xtask/zoo/zoo.py."""
    path = os.path.join(out, wheel)
    if not os.path.exists(path) or sha256(path) != expected:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check", "--no-deps",
             "--only-binary", ":all:", *wheel_tag_args(wheel), "--dest", out, requirement],
            check=True, stdout=sys.stderr,
        )
    if not os.path.exists(path):
        sys.exit(f"models.py: pip did not fetch {wheel} for {requirement} (found {sorted(os.listdir(out))})")
    got = sha256(path)
    if got != expected:
        os.remove(path)
        sys.exit(f"models.py: {wheel} has SHA-256 {got}, expected {expected}: removed it, not using it")
    return path


def seeded_input(shape, seed=SEED):
    """The fixed input of every model: float32, uniform in [-1, 1), from `seed`."""
    return np.random.default_rng(seed).uniform(-1.0, 1.0, size=shape).astype(np.float32)


def write_input(out, name, shape):
    path = os.path.join(out, "inputs", f"{name}.x.npy")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    np.save(path, seeded_input(shape))
    return path


def one_op(out):
    import onnx
    from onnx import TensorProto, helper

    path = os.path.join(out, "models", "one_op.onnx")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    graph = helper.make_graph(
        [helper.make_node("Add", ["x", "one"], ["y"])],
        "one_op",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
        [helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="ember-bench")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, path)
    return {"name": "one-op", "onnx": path, "input": write_input(out, "one-op", (1,)),
            "source": "made by xtask/bench/models.py"}


def zoo(out):
    wheel = fetch_wheel(out)
    models = os.path.join(out, "models")
    os.makedirs(models, exist_ok=True)
    cases = []
    with zipfile.ZipFile(wheel) as z:
        for name, member, shape in ZOO:
            path = os.path.join(models, os.path.basename(member))
            with z.open(member) as src, open(path, "wb") as dst:
                dst.write(src.read())
            cases.append({"name": name, "onnx": path, "input": write_input(out, name, shape),
                          "source": f"{WHEEL_REQUIREMENT} (PyPI), {member}"})
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--zoo", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    print(json.dumps(zoo(a.out) if a.zoo else [one_op(a.out)]))


if __name__ == "__main__":
    main()
