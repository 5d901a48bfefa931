"""The peer engines of `cargo xtask bench`: onnxruntime (one thread, and its default threads) and tract, timed
from Python the way `ember bench` times Ember in Rust (warm-up calls, then the median of timed calls).

One process serves the whole benchmark, so that each engine loads once per model and the Rust side can
alternate between Ember and the peers round by round. It reads one JSON request per line on stdin and
answers each with one JSON line on stdout (nothing else is printed there):

    {"cmd": "baseline", "onnx": PATH, "input": X.npy}
        -> as "load", for the one-op model that measures each engine's per-call cost (kept loaded)
    {"cmd": "load", "onnx": PATH, "input": X.npy}
        -> {"input": NAME, "engines": [...], "errors": {ENGINE: MESSAGE}, "versions": {...}}
    {"cmd": "time", "engine": "ort-1" | "ort-default" | "tract", "budget_s": S, "max_runs": N, "warmup": W}
        -> {"median_us": .., "min_us": .., "runs": .., "baseline_us": ..}
           (at least 3 runs, at most N, about S seconds; then the same engine on the baseline model right
           after, so that the per-call cost is measured under the same load as the model)
    {"cmd": "compare", "ember_output": Y.npy | null}
        -> {ENGINE: max |engine - onnxruntime| / max(1, max |onnxruntime|)}  (first output; null if absent)

Any request that fails is answered {"error": MESSAGE}; the process keeps serving. An engine that cannot load
a model (tract missing, or refusing an op) is left out of "engines" with its reason in "errors".

tract's Python API (0.23) has no thread setting: it runs on the calling thread.
"""
import gc
import json
import sys
import time
import traceback

import numpy as np
import onnxruntime as ort

try:
    import tract
except ImportError as e:  # the bench reports it in tract's column
    tract = None
    TRACT_MISSING = f"tract is not installed ({e})"

# Fewest timed calls, whatever the budget: a median of fewer says little.
MIN_RUNS = 3


class Loaded:
    """The engines of one model, each as a call that runs one inference on the fixed input."""

    def __init__(self, onnx, x_path):
        x = np.load(x_path)
        self.errors = {}
        self.runs = {}
        self.outputs = {}
        for label, threads in (("ort-1", 1), ("ort-default", 0)):
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            if threads == 1:
                opts.inter_op_num_threads = 1
            sess = ort.InferenceSession(onnx, opts, providers=["CPUExecutionProvider"])
            self.input = sess.get_inputs()[0].name
            feed = {self.input: x}
            self.runs[label] = lambda sess=sess, feed=feed: sess.run(None, feed)
        self.outputs["ort-1"] = self.runs["ort-1"]()[0]
        self.outputs["ort-default"] = self.runs["ort-default"]()[0]
        if tract is None:
            self.errors["tract"] = TRACT_MISSING
        else:
            try:
                runnable = tract_runnable(onnx, x)
                # One state and one input tensor for every call, as onnxruntime keeps its session and
                # Ember its arena: a call times the inference, not the setup.
                state = runnable.spawn_state()
                tensor = tract.Tensor.from_numpy(x)
                self.runs["tract"] = lambda: state.run([tensor])
                self.outputs["tract"] = self.runs["tract"]()[0].to_numpy()
            except Exception as e:  # tract refused the model: report why
                self.errors["tract"] = one_line(e)


def tract_runnable(onnx, x):
    """tract's optimized model for input `x`: with the input's shape fixed to x's; or, where tract cannot
    unify that with the model's symbolic dims (a batch `N` declared inside the graph too), with the
    model's own input fact and its symbols set from x's shape."""
    dims = ",".join(str(d) for d in x.shape)
    model = tract.onnx().load(onnx)
    model.set_input_fact(0, f"{dims},{tract_dtype(x.dtype)}")
    try:
        return model.into_model().into_runnable()
    except Exception as first:
        model = tract.onnx().load(onnx)
        declared = str(model.input_fact(0)).split(",")[:-1]
        symbols = {d: n for d, n in zip(declared, x.shape) if not d.isdigit()}
        if len(declared) != x.ndim or not symbols:
            raise first
        typed = model.into_model()
        typed.transform(tract.SetSymbols(symbols))
        return typed.into_runnable()


def tract_dtype(dtype):
    return {np.dtype("float32"): "f32", np.dtype("int8"): "i8", np.dtype("uint8"): "u8",
            np.dtype("int64"): "i64", np.dtype("int32"): "i32"}[np.dtype(dtype)]


def one_line(e):
    # tract appends a Rust backtrace to its errors: keep the message.
    text = str(e).split("Stack backtrace:")[0].strip() or type(e).__name__
    return " ".join(text.split())


def median_us(run, budget_s, max_runs, warmup):
    for _ in range(warmup):
        run()
    times = []
    # The garbage collector would add its pauses to whichever call it interrupts (as timeit does).
    gc.disable()
    try:
        deadline = time.perf_counter() + budget_s
        while len(times) < max(max_runs, MIN_RUNS) and (
            len(times) < MIN_RUNS or time.perf_counter() < deadline
        ):
            t = time.perf_counter()
            run()
            times.append(time.perf_counter() - t)
    finally:
        gc.enable()
    times.sort()
    return {"median_us": times[len(times) // 2] * 1e6, "min_us": times[0] * 1e6, "runs": len(times)}


def scaled_diff(got, want):
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        if got.size != want.size:
            return None
        got = got.reshape(want.shape)
    return float(np.max(np.abs(got - want)) / max(1.0, float(np.max(np.abs(want)))))


# Most calls of the baseline model per measurement (it takes microseconds: a few ms in all).
BASELINE_RUNS = 200


def handle(req, state):
    cmd = req.get("cmd")
    if cmd in ("load", "baseline"):
        slot = "model" if cmd == "load" else "baseline"
        state[slot] = None  # free the previous model's sessions first
        m = Loaded(req["onnx"], req["input"])
        state[slot] = m
        return {
            "input": m.input,
            "engines": sorted(m.runs),
            "errors": m.errors,
            "versions": {
                "onnxruntime": ort.__version__,
                "tract": tract.version() if tract is not None else None,
                "python": sys.version.split()[0],
            },
        }
    m = state.get("model")
    if m is None:
        raise RuntimeError("no model loaded")
    if cmd == "time":
        engine = req["engine"]
        if engine not in m.runs:
            raise RuntimeError(m.errors.get(engine, f"no engine {engine!r}"))
        out = median_us(m.runs[engine], req.get("budget_s", 0.5), req.get("max_runs", 200), req.get("warmup", 5))
        base = state.get("baseline")
        if base is None or engine not in base.runs:
            raise RuntimeError(f"no baseline for {engine}: load the one-op model with 'baseline' first")
        out["baseline_us"] = median_us(base.runs[engine], 0.05, BASELINE_RUNS, 5)["median_us"]
        return out
    if cmd == "compare":
        want = m.outputs["ort-1"]
        out = {engine: scaled_diff(y, want) for engine, y in m.outputs.items() if engine != "ort-1"}
        path = req.get("ember_output")
        out["ember"] = scaled_diff(np.load(path), want) if path else None
        return out
    raise RuntimeError(f"unknown request {cmd!r}")


def main():
    state = {}
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            reply = handle(json.loads(line), state)
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            reply = {"error": one_line(e)}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
