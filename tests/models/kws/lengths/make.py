#!/usr/bin/env python3
"""The `kws` model with its frame count left open, and onnxruntime's answers at three lengths: the test
data of shape variants on a microcontroller (issue 30; `cargo xtask` runs the firmware in
`firmware-examples/qemu-kws-lengths` with them).

`../model.onnx` fixes its input at [N, 10, 49]. Every op after the input works for any frame count (1-D
convolutions, then a global average over time), so this script copies the graph with the input's last
dimension renamed `T` and nothing else changed (the same initializers, byte for byte), then runs it in
onnxruntime on three test utterances of 25, 49 and 97 frames (0.5, 1 and 2 s of 20 ms hops):

    x25.npy  f32 [1,10,25]   the first 25 frames of test sample 0 (`../x.npy`)
    x49.npy  f32 [1,10,49]   test sample 1 as it is
    x97.npy  f32 [1,10,97]   test sample 2 followed by the first 48 frames of test sample 3
    yT.npy   f32 [1,4]       onnxruntime's probabilities for xT.npy (CPU, one thread)
    model.onnx               input "input" f32 [N, 10, T], output "probs" f32 [N, 4]

Deterministic (no training, no randomness): a rerun gives byte-identical files.

    target/venv/bin/python tests/models/kws/lengths/make.py
"""

import sys
from pathlib import Path

# The shared steps of the model scripts, imported before numpy (single-threaded BLAS).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
import common  # noqa: E402

import numpy as np  # noqa: E402
import onnx  # noqa: E402

HERE = Path(__file__).resolve().parent
KWS = HERE.parent


def main():
    model = onnx.load(KWS / "model.onnx")
    frames = model.graph.input[0].type.tensor_type.shape.dim[2]
    assert frames.dim_value == 49, frames
    frames.Clear()
    frames.dim_param = "T"
    # Shapes inferred for the fixed length would contradict the open one.
    del model.graph.value_info[:]
    onnx.checker.check_model(model, full_check=True)
    (HERE / "model.onnx").write_bytes(model.SerializeToString())

    x = np.load(KWS / "x.npy")
    inputs = {
        25: x[0:1, :, :25],
        49: x[1:2],
        97: np.concatenate([x[2:3], x[3:4, :, :48]], axis=2),
    }
    for t, xt in inputs.items():
        xt = np.ascontiguousarray(xt, dtype=np.float32)
        assert xt.shape == (1, 10, t), xt.shape
        y = common.run_ort(HERE / "model.onnx", xt).astype(np.float32)
        np.save(HERE / f"x{t}.npy", xt)
        np.save(HERE / f"y{t}.npy", y)
        print(f"T={t:3d}: probs {y[0]}")
    # At 49 frames the open model is the fixed one: the same answers as `../model.onnx`'s.
    fixed = common.run_ort(KWS / "model.onnx", inputs[49].astype(np.float32))
    assert np.array_equal(fixed, np.load(HERE / "y49.npy")), "the open model differs at 49 frames"
    for f in sorted(HERE.glob("*.onnx")) + sorted(HERE.glob("*.npy")):
        print(f"  {f.name:11s} {f.stat().st_size:7d} bytes")


if __name__ == "__main__":
    main()
