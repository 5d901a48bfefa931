#!/usr/bin/env python3
"""The int8 digits CNN in TFLM: the same network Ember runs, built as a full-int8 `.tflite` and run by TFLM.

Reads the QDQ ONNX model that `ember convert --quantize int8 --save-qdq` writes (per-tensor int8
activations, per-channel symmetric int8 weights, int32 biases, softmax output 1/256 and -128; every scale,
zero point and integer weight is an initializer) and builds the same integer network as a `.tflite` with
the flatbuffer object API that the `tflite-micro` package ships (no TensorFlow): int8 input and output,
NHWC activations, OHWI conv weights, per-channel conv and fully connected weights, int32 biases, Relu
fused into the Conv or Gemm it follows. No value is re-quantized: the integers and scales are copied.
Then it runs the model with TFLM's Python interpreter on the 360 test images of
`tests/models/digits/x.npy` (each float input quantized with the input's scale and zero point, rounding
half to even like ONNX QuantizeLinear) and writes, to `--out`:

- `digits_int8.tflite`, the model;
- `tflm_q.npy`, TFLM's raw int8 outputs `[360, 10]` (softmax, scale 1/256, zero point -128);
- `tflm.json`: top-1 accuracy against `labels.npy`, the `.tflite` bytes, TFLM's arena total (the
  "Arena allocation total" line of `print_allocations()`, with its head and tail parts), and, with
  `--ember-output`, how Ember's outputs on the same images agree with TFLM's.

`--ember-output FILE.npy` takes Ember's outputs for the 360 images: int8 (raw), or float32 (dequantized,
turned back into int8 as round(p * 256) - 128, exact for softmax outputs of scale 1/256).

`--ember EXE` also converts the same `.tflite` with Ember (`ember convert digits_int8.tflite`, no other
option: TFLite's double rounding is its default for a `.tflite`), runs each test image through it (int8 in,
int8 out, as the file declares them) and reports its arena, blob bytes and agreement with TFLM under
`ember_tflite`; the quantized images go to `x_q.npy` next to `tflm_q.npy`.

Rerun:

    python3 -m venv target/venv-tflm
    target/venv-tflm/bin/pip install -r tests/tflm/requirements.txt
    cargo run -p ember-cli -- convert tests/models/digits/model.onnx -o target/digits_int8.ember \
        --quantize int8 --calibrate tests/models/digits/calib.npy --save-qdq target/digits_qdq.onnx
    target/venv-tflm/bin/python tests/tflm/digits.py target/digits_qdq.onnx --out target/tflm

Prints the JSON object as its last line (`cargo xtask bench` reads it).
"""

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper
from tflite_micro import runtime
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as tfl

from tflite_writer import Model, f32

HERE = pathlib.Path(__file__).resolve().parent
DIGITS = HERE.parent / "models" / "digits"


class QdqGraph:
    """The QDQ model read back: integer constants, activation quantization, and the float ops in order.

    An activation is named by the float value a QuantizeLinear reads; the DequantizeLinear after it is an
    alias of that value, so the int8 tensor between the pair is one TFLite tensor.
    """

    def __init__(self, path):
        m = onnx.load(str(path))
        g = m.graph
        self.inits = {t.name: numpy_helper.to_array(t) for t in g.initializer}
        self.consts = {}  # DequantizeLinear output -> (integers, scales, zero points, axis)
        self.qparams = {}  # activation -> (scale, zero point)
        self.alias = {}  # DequantizeLinear output -> activation it dequantizes
        self.quantized_by = quantized_by = {}  # QuantizeLinear output -> its float input
        self.ops = []
        for n in g.node:
            if n.op_type == "QuantizeLinear":
                scale, zp = self.inits[n.input[1]], self.inits[n.input[2]]
                if scale.size != 1 or zp.dtype != np.int8:
                    raise SystemExit(f"{n.name}: expected a per-tensor int8 QuantizeLinear")
                self.qparams[n.input[0]] = (f32(scale.reshape(-1)[0]), int(zp.reshape(-1)[0]))
                quantized_by[n.output[0]] = n.input[0]
            elif n.op_type == "DequantizeLinear":
                src = n.input[0]
                if src in self.inits:
                    axis = next((a.i for a in n.attribute if a.name == "axis"), 1)
                    scales = self.inits[n.input[1]].reshape(-1).astype(np.float32)
                    zps = self.inits[n.input[2]].reshape(-1)
                    self.consts[n.output[0]] = (self.inits[src], scales, zps, axis)
                elif src in quantized_by:
                    self.alias[n.output[0]] = quantized_by[src]
                else:
                    raise SystemExit(f"{n.name}: dequantizes {src!r}, which no QuantizeLinear writes")
            else:
                self.ops.append(n)
        self.readers = {}
        for n in self.ops:
            for i in n.input:
                self.readers.setdefault(self.canon(i), []).append(n)
        self.inputs = [self.canon(v.name) for v in g.input if v.name not in self.inits]
        self.input_dims = [
            [d.dim_value if d.dim_value > 0 else 1 for d in v.type.tensor_type.shape.dim]
            for v in g.input
            if v.name not in self.inits
        ]
        self.outputs = [self.canon(v.name) for v in g.output]

    def canon(self, name):
        return self.alias.get(name, self.quantized_by.get(name, name))


def attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def same_or_valid(size, k, stride, pads):
    """TFLite padding equal to ONNX `pads` (before, after) along one axis, and the output size."""
    out_same = -(-size // stride)
    total = max((out_same - 1) * stride + k - size, 0)
    if tuple(pads) == (total // 2, total - total // 2):
        return tfl.Padding.SAME, out_same
    if tuple(pads) == (0, 0):
        return tfl.Padding.VALID, (size - k) // stride + 1
    raise SystemExit(f"pads {pads} (kernel {k}, stride {stride}) are neither SAME nor VALID")


def to_tflite(q):
    """The TFLite flatbuffer of the QDQ graph `q`, and the input's (scale, zero point)."""
    b = Model()
    tensor_of = {}  # activation -> TFLite tensor index
    chw_of = {}  # flattened activation -> (C, H, W) it came from, for the next Gemm's columns

    def activation(name, shape):
        if name not in tensor_of:
            if name not in q.qparams:
                raise SystemExit(f"activation {name!r} has no QuantizeLinear: not a full-int8 model")
            s, z = q.qparams[name]
            tensor_of[name] = b.tensor(shape, tfl.TensorType.INT8, scales=[s], zero_points=[z], name=name)
        return tensor_of[name]

    def const(name, what):
        if name not in q.consts:
            raise SystemExit(f"{what} {name!r} is not an integer initializer behind a DequantizeLinear")
        return q.consts[name]

    def fused_output(node):
        """The value a Conv or Gemm writes, with a Relu that alone reads its output fused in."""
        out = node.output[0]
        readers = q.readers.get(out, [])
        if len(readers) == 1 and readers[0].op_type == "Relu" and out not in q.qparams:
            fused.add(id(readers[0]))
            return q.canon(readers[0].output[0]), tfl.ActivationFunctionType.RELU
        return q.canon(out), tfl.ActivationFunctionType.NONE

    for name, dims in zip(q.inputs, q.input_dims):
        n, c, h, w = dims
        activation(name, (n, h, w, c))
    fused = set()
    for node in q.ops:
        if id(node) in fused:
            continue
        x = q.canon(node.input[0])
        xi = tensor_of.get(x)
        if xi is None:
            raise SystemExit(f"{node.name} ({node.op_type}): its input {x!r} is not an int8 activation")
        x_shape = b.shape(xi)
        if node.op_type == "Conv":
            w_int, w_scales, w_zps, axis = const(node.input[1], "Conv weights")
            if axis != 0 or np.any(w_zps != 0) or w_int.dtype != np.int8:
                raise SystemExit(f"{node.name}: weights must be int8, symmetric, per output channel")
            if attr(node, "group", 1) != 1 or any(d != 1 for d in attr(node, "dilations", [1, 1])):
                raise SystemExit(f"{node.name}: grouped or dilated Conv is not handled here")
            oc, ic, kh, kw = w_int.shape
            sh, sw = attr(node, "strides", [1, 1])
            pads = attr(node, "pads", [0, 0, 0, 0])
            pad_h, oh = same_or_valid(x_shape[1], kh, sh, (pads[0], pads[2]))
            pad_w, ow = same_or_valid(x_shape[2], kw, sw, (pads[1], pads[3]))
            if pad_h != pad_w:
                raise SystemExit(f"{node.name}: SAME on one axis and VALID on the other")
            wi = b.tensor(
                (oc, kh, kw, ic), tfl.TensorType.INT8,
                np.transpose(w_int, (0, 2, 3, 1)), w_scales, [0] * oc, axis=0, name=node.input[1],
            )
            b_int, b_scales, _, _ = const(node.input[2], "Conv bias")
            bi = b.tensor(
                (oc,), tfl.TensorType.INT32, b_int.astype(np.int32), b_scales, [0] * oc, name=node.input[2]
            )
            out, act = fused_output(node)
            yi = activation(out, (x_shape[0], oh, ow, oc))
            o = tfl.Conv2DOptionsT()
            o.padding = pad_h
            o.strideH, o.strideW, o.dilationHFactor, o.dilationWFactor = sh, sw, 1, 1
            o.fusedActivationFunction = act
            b.op(tfl.BuiltinOperator.CONV_2D, tfl.BuiltinOptions.Conv2DOptions, o, [xi, wi, bi], [yi])
        elif node.op_type == "Gemm":
            if attr(node, "transA", 0) or attr(node, "alpha", 1.0) != 1.0 or attr(node, "beta", 1.0) != 1.0:
                raise SystemExit(f"{node.name}: Gemm with transA, alpha or beta is not handled here")
            w_int, w_scales, w_zps, axis = const(node.input[1], "Gemm weights")
            if attr(node, "transB", 0):
                want_axis = 0
            else:
                w_int, want_axis = w_int.T, 1
            if axis != want_axis or np.any(w_zps != 0) or w_int.dtype != np.int8:
                raise SystemExit(f"{node.name}: weights must be int8, symmetric, per output channel")
            outputs, inputs = w_int.shape
            if x in chw_of:
                # ONNX flattened C, H, W; the TFLite tensor is flattened H, W, C: reorder the columns.
                c, h, w = chw_of[x]
                w_int = w_int.reshape(outputs, c, h, w).transpose(0, 2, 3, 1).reshape(outputs, inputs)
            wi = b.tensor(
                (outputs, inputs), tfl.TensorType.INT8, w_int, w_scales, [0] * outputs, axis=0, name=node.input[1]
            )
            b_int, b_scales, _, _ = const(node.input[2], "Gemm bias")
            bi = b.tensor(
                (outputs,), tfl.TensorType.INT32, b_int.astype(np.int32), b_scales, [0] * outputs,
                name=node.input[2],
            )
            out, act = fused_output(node)
            yi = activation(out, (x_shape[0], outputs))
            o = tfl.FullyConnectedOptionsT()
            o.fusedActivationFunction = act
            b.op(tfl.BuiltinOperator.FULLY_CONNECTED, tfl.BuiltinOptions.FullyConnectedOptions, o, [xi, wi, bi], [yi])
        elif node.op_type == "MaxPool":
            kh, kw = attr(node, "kernel_shape")
            sh, sw = attr(node, "strides", [1, 1])
            pads = attr(node, "pads", [0, 0, 0, 0])
            pad_h, oh = same_or_valid(x_shape[1], kh, sh, (pads[0], pads[2]))
            pad_w, ow = same_or_valid(x_shape[2], kw, sw, (pads[1], pads[3]))
            out = q.canon(node.output[0])
            if q.qparams.get(out) != q.qparams[x]:
                # TFLite's int8 max pool keeps its input's quantization (the calibrated ranges of a max
                # pool's input and output are the same for min/max calibration).
                raise SystemExit(f"{node.name}: input {q.qparams[x]} and output {q.qparams.get(out)} differ")
            yi = activation(out, (x_shape[0], oh, ow, x_shape[3]))
            o = tfl.Pool2DOptionsT()
            o.padding = pad_h
            o.strideH, o.strideW, o.filterHeight, o.filterWidth = sh, sw, kh, kw
            o.fusedActivationFunction = tfl.ActivationFunctionType.NONE
            b.op(tfl.BuiltinOperator.MAX_POOL_2D, tfl.BuiltinOptions.Pool2DOptions, o, [xi], [yi])
        elif node.op_type in ("Flatten", "Reshape"):
            if node.op_type == "Flatten" and attr(node, "axis", 1) != 1:
                raise SystemExit(f"{node.name}: Flatten with axis other than 1")
            out = q.canon(node.output[0])
            if out in q.qparams and q.qparams[out] != q.qparams[x]:
                raise SystemExit(f"{node.name}: a reshape that re-quantizes")
            n = x_shape[0]
            flat = int(np.prod(x_shape[1:]))
            if len(x_shape) == 4:
                chw_of[out] = (x_shape[3], x_shape[1], x_shape[2])
            tensor_of[out] = b.tensor(
                (n, flat), tfl.TensorType.INT8, scales=[q.qparams[x][0]], zero_points=[q.qparams[x][1]], name=out
            )
            shape_i = b.tensor((2,), tfl.TensorType.INT32, np.array([n, flat], np.int32), name=f"{out}_shape")
            o = tfl.ReshapeOptionsT()
            o.newShape = [n, flat]
            b.op(tfl.BuiltinOperator.RESHAPE, tfl.BuiltinOptions.ReshapeOptions, o, [xi, shape_i], [tensor_of[out]])
        elif node.op_type == "Softmax":
            if attr(node, "axis", -1) not in (-1, len(x_shape) - 1):
                raise SystemExit(f"{node.name}: Softmax on an axis other than the last")
            out = q.canon(node.output[0])
            yi = activation(out, x_shape)
            o = tfl.SoftmaxOptionsT()
            o.beta = 1.0
            b.op(tfl.BuiltinOperator.SOFTMAX, tfl.BuiltinOptions.SoftmaxOptions, o, [xi], [yi])
        elif node.op_type == "Relu":
            out = q.canon(node.output[0])
            yi = activation(out, x_shape)
            b.op(tfl.BuiltinOperator.RELU, tfl.BuiltinOptions.NONE, None, [xi], [yi])
        else:
            raise SystemExit(f"{node.name}: {node.op_type} is not handled here")
    missing = [o for o in q.outputs if o not in tensor_of]
    if missing:
        raise SystemExit(f"graph outputs {missing} are not int8 tensors")
    data = b.finish(
        [tensor_of[i] for i in q.inputs],
        [tensor_of[o] for o in q.outputs],
        name="main",
        description="digits CNN, int8, from Ember's QDQ model (tests/tflm/digits.py)",
    )
    return data, q.qparams[q.inputs[0]], q.qparams[q.outputs[0]]


def arena_bytes(interpreter):
    """TFLM's arena use from what `print_allocations()` writes to stderr: "Arena allocation total" (bytes),
    and its parts "head" (the non-persistent section: the planned activations and scratch buffers) and "tail"
    (persistent: tensor and node structs, kernel data such as per-channel multipliers)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile(mode="w+b") as f:
        os.dup2(f.fileno(), 2)
        try:
            interpreter.print_allocations()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        text = f.read().decode(errors="replace")
    figures = {}
    for part in ("total", "head", "tail"):
        m = re.search(rf"Arena allocation {part} (\d+) bytes", text)
        if not m:
            raise SystemExit(f"no 'Arena allocation {part}' line in print_allocations():\n{text}")
        figures[part] = int(m.group(1))
    return figures


def quantize(x, scale, zp):
    """ONNX QuantizeLinear in float32: round half to even, saturate to int8."""
    q = np.round(x.astype(np.float32) / np.float32(scale)) + zp
    return np.clip(q, -128, 127).astype(np.int8)


def agreement(ours, theirs):
    """Top-1 equal rows and max |int8 difference| of two `[N, 10]` int8 arrays."""
    same = int(np.sum(np.argmax(ours, 1) == np.argmax(theirs, 1)))
    diff = np.abs(ours.astype(np.int32) - theirs.astype(np.int32))
    return {
        "top1_same": same,
        "images": int(len(ours)),
        "max_abs_diff_lsb": int(diff.max()),
        "values_differing": int(np.count_nonzero(diff)),
    }


def ember_int8(path, out_scale, out_zp):
    y = np.load(path)
    if y.dtype == np.int8:
        return y.reshape(len(y), -1), "int8"
    q = np.round(y.astype(np.float64) / out_scale) + out_zp
    return np.clip(q, -128, 127).astype(np.int8).reshape(len(y), -1), "dequantized float, rounded back to int8"


def ember_from_tflite(exe, out, x_q, tflm, labels):
    """Ember on the `.tflite` itself: converted as it is, each image run as int8, compared with TFLM."""
    blob = out / "digits_from_tflite.ember"
    run = lambda *args: subprocess.run([exe, *map(str, args)], check=True, capture_output=True, text=True)  # noqa: E731
    run("convert", out / "digits_int8.tflite", "-o", blob)
    x1 = out / "x_q1.npy"
    np.save(x1, x_q[:1])
    figures = json.loads(run("bench", blob, "--input", x1, "--json").stdout)
    ys = []
    for i in range(len(x_q)):
        xi, yi = out / "x_qi.npy", out / "y_qi.npy"
        np.save(xi, x_q[i : i + 1])
        run("run", blob, "--input", xi, "--output", yi)
        yq = np.load(yi)
        if yq.dtype != np.int8:
            raise SystemExit(f"Ember's output from the .tflite is {yq.dtype}, not int8")
        ys.append(yq.reshape(-1))
    e = np.stack(ys)
    figures["accuracy"] = float(np.mean(np.argmax(e, 1) == labels))
    figures["vs_tflm"] = agreement(e, tflm)
    return figures


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("qdq", help="the QDQ ONNX model (ember convert --save-qdq)")
    ap.add_argument("--out", default="target/tflm", help="folder for the .tflite, tflm_q.npy and tflm.json")
    ap.add_argument("--ember-output", help="Ember's outputs on the 360 images (.npy, int8 or float32)")
    ap.add_argument("--ember", help="the ember CLI: also convert and run the same .tflite with it")
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)

    model, (in_scale, in_zp), (out_scale, out_zp) = to_tflite(QdqGraph(a.qdq))
    (out / "digits_int8.tflite").write_bytes(model)
    x = np.load(DIGITS / "x.npy")
    labels = np.load(DIGITS / "labels.npy")
    x_q = quantize(np.transpose(x, (0, 2, 3, 1)), in_scale, in_zp)  # NCHW -> NHWC

    interpreter = runtime.Interpreter.from_bytes(model, arena_size=1 << 16)
    ys = []
    for i in range(len(x_q)):
        interpreter.set_input(x_q[i : i + 1], 0)
        interpreter.invoke()
        ys.append(np.array(interpreter.get_output(0), dtype=np.int8).reshape(-1))
    arena = arena_bytes(interpreter)
    y = np.stack(ys)
    np.save(out / "tflm_q.npy", y)

    float_probs = np.load(DIGITS / "y.npy")  # onnxruntime's outputs of the float model
    report = {
        "images": int(len(y)),
        "float_accuracy": float(np.mean(np.argmax(float_probs, 1) == labels)),
        "tflm_accuracy": float(np.mean(np.argmax(y, 1) == labels)),
        "tflm_arena_bytes": arena["total"],
        "tflm_arena_head_bytes": arena["head"],
        "tflm_arena_tail_bytes": arena["tail"],
        "tflite_bytes": len(model),
        "tflite": str(out / "digits_int8.tflite"),
        "input_quant": [in_scale, in_zp],
        "output_quant": [out_scale, out_zp],
    }
    if a.ember_output:
        e, how = ember_int8(a.ember_output, out_scale, out_zp)
        if e.shape != y.shape:
            raise SystemExit(f"{a.ember_output}: shape {e.shape}, expected {y.shape}")
        report["ember_accuracy"] = float(np.mean(np.argmax(e, 1) == labels))
        report["ember_vs_tflm"] = agreement(e, y)
        report["ember_output_read_as"] = how
    if a.ember:
        np.save(out / "x_q.npy", x_q)
        report["ember_tflite"] = ember_from_tflite(a.ember, out, x_q, y, labels)
    (out / "tflm.json").write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
