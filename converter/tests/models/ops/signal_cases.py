"""Signal cases of make.py: STFT front ends (`stft_512`: one second at 16 kHz in frames of 512 samples
every 160, a Hann window, one-sided, as NeMo's front end; `stft_400`: Whisper's 400-sample frames,
whose length is 2^4 x 5^2, not a power of two), and `pad_negative` (Pad cropping with negative pads in
every mode). The STFT goldens are numpy's float64 FFT of each windowed frame (`numpy.fft.rfft`), an
independent implementation more accurate than onnxruntime's float32 STFT; the Pad golden is
onnxruntime's. Each case has its own seed. Run through make.py (`make.py stft_512 ...`), or alone:

    target/venv/bin/python converter/tests/models/ops/signal_cases.py

"""

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parent


def save(case, model, x, y):
    onnx.checker.check_model(model, full_check=True)
    (OUT / f"{case}.onnx").write_bytes(model.SerializeToString())
    np.save(OUT / f"{case}.x.npy", x)
    np.save(OUT / f"{case}.y.npy", y.astype(np.float32))
    print(f"{case:14s} x {list(x.shape)} -> y {list(y.shape)}")


def stft(case, seed, n_fft, hop):
    """STFT of a [1, 16000] signal (taken as real, as onnxruntime takes a rank-2 signal) with a
    periodic Hann window of `n_fft` computed in the graph (HannWindow)."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, size=(1, 16000)).astype(np.float32)
    frames = (x.shape[1] - n_fft) // hop + 1
    bins = n_fft // 2 + 1
    nodes = [
        helper.make_node("HannWindow", ["n_fft"], ["window"]),
        helper.make_node("STFT", ["x", "hop", "window", "n_fft"], ["y"], onesided=1),
    ]
    graph = helper.make_graph(
        nodes, case,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, frames, bins, 2])],
        initializer=[numpy_helper.from_array(np.array(hop, np.int64), "hop"),
                     numpy_helper.from_array(np.array(n_fft, np.int64), "n_fft")],
    )
    model = helper.make_model(graph, producer_name="ember-convert tests",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    window = 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n_fft) / n_fft)
    signal = x[0].astype(np.float64)
    spectrum = np.stack([np.fft.rfft(signal[f * hop:f * hop + n_fft] * window) for f in range(frames)])
    y = np.stack([spectrum.real, spectrum.imag], axis=-1)[np.newaxis]
    save(case, model, x, y)


def pad_negative():
    """Pad with negative pads (crops) next to positive ones, in every mode, on [2, 5, 6]: onnxruntime
    crops first and pads what is left."""
    rng = np.random.default_rng(23)
    x = rng.uniform(-1.0, 1.0, size=(2, 5, 6)).astype(np.float32)
    pads = {
        "constant": [0, -1, 2, 0, 1, -2],
        "reflect": [0, 2, -1, 0, -1, 2],
        "edge": [-1, 0, 1, 1, 0, -3],
        "wrap": [0, -2, 2, 0, 0, -1],
    }
    nodes, inits, prev = [], [numpy_helper.from_array(np.float32(0.5), "value")], "x"
    for k, (mode, p) in enumerate(pads.items()):
        out = "y" if k == len(pads) - 1 else f"t{k}"
        inits.append(numpy_helper.from_array(np.array(p, np.int64), f"pads_{mode}"))
        inputs = [prev, f"pads_{mode}"] + (["value"] if mode == "constant" else [])
        nodes.append(helper.make_node("Pad", inputs, [out], mode=mode))
        prev = out
    graph = helper.make_graph(
        nodes, "pad_negative",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        initializer=inits,
    )
    model = helper.make_model(graph, producer_name="ember-convert tests",
                              opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    y = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(
        None, {"x": x})[0]
    model.graph.output[0].CopyFrom(helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y.shape)))
    save("pad_negative", model, x, y)


CASES = {
    "stft_512": lambda: stft("stft_512", 31, 512, 160),
    "stft_400": lambda: stft("stft_400", 32, 400, 160),
    "pad_negative": pad_negative,
}


def main():
    for build in CASES.values():
        build()


if __name__ == "__main__":
    main()
