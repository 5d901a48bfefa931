"""Times onnxruntime on one model and input, the way `ember bench` times Ember: warm-up runs, then the median
of N timed runs of one inference. Prints one JSON object. Used by `cargo xtask bench`.

usage: ort_bench.py MODEL.onnx X.npy [--repeat N] [--warmup N]
"""
import argparse
import json
import time

import numpy as np
import onnxruntime as ort


def median_us(sess, feed, repeat, warmup):
    for _ in range(warmup):
        sess.run(None, feed)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        sess.run(None, feed)
        times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2] * 1e6, times[0] * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("x")
    ap.add_argument("--repeat", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    a = ap.parse_args()
    x = np.load(a.x)
    out = {"model": a.model, "onnxruntime": ort.__version__}
    for label, threads in (("single", 1), ("default", 0)):
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        sess = ort.InferenceSession(a.model, opts, providers=["CPUExecutionProvider"])
        feed = {sess.get_inputs()[0].name: x}
        med, best = median_us(sess, feed, a.repeat, a.warmup)
        out[f"{label}_median_us"] = med
        out[f"{label}_min_us"] = best
    print(json.dumps(out))


if __name__ == "__main__":
    main()
