#!/usr/bin/env python3
"""Golden int8 results from TFLM's reference kernels, for Ember's int8 kernel tests.

For each case this script builds a single-op int8 `.tflite` model with the flatbuffer object API that the
`tflite-micro` package ships (`schema_py_generated.py`, through `tflite_writer.py` next to this script; no
TensorFlow needed), runs it with TFLM's Python interpreter, and writes the op's description (geometry, fused
activation, float scales and zero points as stored in the model), its inputs, constants and TFLM's output to
`golden.txt` next to this script.
`testkit/src/ops_int8/tflm.rs` reads it, derives Ember's parameters from the scales with Ember's own
converter-side helpers, runs Ember's kernels and compares bit for bit.

Rerun (deterministic, seeded):

    python3 -m venv target/venv-tflm
    target/venv-tflm/bin/pip install tflite-micro==0.dev20261023182759 numpy
    target/venv-tflm/bin/python tests/tflm/make.py

`golden.txt` is line-based: `case <name>` starts a case, then one `<key> <values...>` per line (ints, or
floats written as the shortest decimal of their f32 value), and a blank line ends it.
"""

import pathlib
import sys

import numpy as np
from tflite_micro import runtime
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as tfl

from tflite_writer import Model, f32

OUT = pathlib.Path(__file__).with_name("golden.txt")
ACTIVATIONS = {
    "none": tfl.ActivationFunctionType.NONE,
    "relu": tfl.ActivationFunctionType.RELU,
    "relu6": tfl.ActivationFunctionType.RELU6,
}


def run(model_bytes, inputs):
    interpreter = runtime.Interpreter.from_bytes(model_bytes, arena_size=1 << 20)
    for i, x in enumerate(inputs):
        interpreter.set_input(x, i)
    interpreter.invoke()
    return interpreter.get_output(0)


def padding(kind, size, k, stride, dilation):
    """(output size, pad before, pad after) of TFLite's SAME or VALID padding along one axis."""
    span = dilation * (k - 1) + 1
    if kind == "same":
        out = -(-size // stride)
    else:
        out = (size - span) // stride + 1
    total = max((out - 1) * stride + span - size, 0)
    return out, total // 2, total - total // 2


class Writer:
    def __init__(self):
        self.lines = []

    @staticmethod
    def word(v):
        if isinstance(v, str):
            return v
        if isinstance(v, (float, np.floating)):
            return repr(f32(v))
        return str(int(v))

    def case(self, name, **fields):
        self.lines.append(f"case {name}")
        for key, value in fields.items():
            if isinstance(value, np.ndarray):
                value = value.reshape(-1).tolist()
            if not isinstance(value, (list, tuple)):
                value = [value]
            text = " ".join(self.word(v) for v in value)
            self.lines.append(f"{key} {text}".rstrip())
        self.lines.append("")


def int8(rng, shape):
    return rng.integers(-128, 128, size=shape, dtype=np.int8)


def weights_per_channel(rng, shape, axis):
    w = rng.integers(-127, 128, size=shape, dtype=np.int8)
    scales = [f32(s) for s in np.exp(rng.uniform(np.log(0.002), np.log(0.05), shape[axis]))]
    return w, scales


def conv_cases(rng, out, kind):
    """CONV_2D (`kind` "conv2d", or "grouped": 2 or 3 groups) or DEPTHWISE_CONV_2D ("depthwise")."""
    depthwise = kind == "depthwise"
    for i in range(10):
        n = int(rng.integers(1, 3))
        h, w = (int(v) for v in rng.integers(3, 9, 2))
        kh, kw = (int(v) for v in rng.integers(1, 4, 2))
        sh, sw = (int(v) for v in rng.integers(1, 3, 2))
        dh, dw = (int(v) for v in rng.integers(1, 3, 2)) if i % 3 == 0 else (1, 1)
        pad = "same" if i % 2 == 0 else "valid"
        act = ["none", "relu", "relu6"][i % 3]
        ic = int(rng.integers(1, 5))
        mult = int(rng.integers(1, 3))
        groups = int(rng.integers(2, 4)) if kind == "grouped" else 1
        ic *= groups
        oc = ic * mult if depthwise else groups * int(rng.integers(1, 4))
        oh, pt, pb = padding(pad, h, kh, sh, dh)
        ow, pl, pr = padding(pad, w, kw, sw, dw)
        if oh < 1 or ow < 1:
            continue
        x_scale, x_zp = f32(rng.uniform(0.01, 0.1)), int(rng.integers(-128, 128))
        y_scale = f32(x_scale * 0.02 * np.sqrt(kh * kw * (1 if depthwise else ic // groups)) * rng.uniform(30, 300))
        y_zp = int(rng.integers(-128, 128))
        x = int8(rng, (n, h, w, ic))
        m = Model()
        xi = m.tensor(x.shape, tfl.TensorType.INT8, scales=[x_scale], zero_points=[x_zp])
        if depthwise:
            w_tfl, w_scales = weights_per_channel(rng, (1, kh, kw, oc), 3)
            wi = m.tensor(w_tfl.shape, tfl.TensorType.INT8, w_tfl, w_scales, [0] * oc, axis=3)
            w_ember = np.transpose(w_tfl, (3, 1, 2, 0))  # [OC, KH, KW, 1]
        else:
            w_ember, w_scales = weights_per_channel(rng, (oc, kh, kw, ic // groups), 0)
            wi = m.tensor(w_ember.shape, tfl.TensorType.INT8, w_ember, w_scales, [0] * oc, axis=0)
        bias = rng.integers(-20000, 20000, size=oc, dtype=np.int32)
        b_scales = [f32(x_scale * s) for s in w_scales]
        bi = m.tensor((oc,), tfl.TensorType.INT32, bias, b_scales, [0] * oc)
        yi = m.tensor((n, oh, ow, oc), tfl.TensorType.INT8, scales=[y_scale], zero_points=[y_zp])
        if depthwise:
            o = tfl.DepthwiseConv2DOptionsT()
            o.depthMultiplier = mult
            options_type, opcode = tfl.BuiltinOptions.DepthwiseConv2DOptions, tfl.BuiltinOperator.DEPTHWISE_CONV_2D
        else:
            o = tfl.Conv2DOptionsT()
            options_type, opcode = tfl.BuiltinOptions.Conv2DOptions, tfl.BuiltinOperator.CONV_2D
        o.padding = tfl.Padding.SAME if pad == "same" else tfl.Padding.VALID
        o.strideH, o.strideW, o.dilationHFactor, o.dilationWFactor = sh, sw, dh, dw
        o.fusedActivationFunction = ACTIVATIONS[act]
        model = m.build(opcode, options_type, o, [xi, wi, bi], [yi], [xi])
        y = run(model, [x])
        out.case(
            f"{kind}_{i}",
            op="conv2d",
            stride=[sh, sw],
            dilation=[dh, dw],
            pad=[pt, pl, pb, pr],
            groups=oc // mult if depthwise else groups,
            act=["none", "relu", "relu6"].index(act),
            x_quant=[x_scale, x_zp],
            w_scales=w_scales,
            y_quant=[y_scale, y_zp],
            x_shape=x.shape,
            x=x,
            w_shape=w_ember.shape,
            w=w_ember,
            b=bias,
            y_shape=y.shape,
            y=y,
        )


def fully_connected_cases(rng, out):
    for i in range(8):
        batch, inputs, outputs = int(rng.integers(1, 4)), int(rng.integers(1, 21)), int(rng.integers(1, 7))
        act = ["none", "relu", "relu6"][i % 3]
        x_scale, x_zp = f32(rng.uniform(0.01, 0.1)), int(rng.integers(-128, 128))
        w = rng.integers(-127, 128, size=(outputs, inputs), dtype=np.int8)
        per_channel = i % 2 == 1
        w_scales = [f32(v) for v in rng.uniform(0.002, 0.05, outputs if per_channel else 1)]
        y_scale = f32(x_scale * max(w_scales) * np.sqrt(inputs) * rng.uniform(20, 200))
        y_zp = int(rng.integers(-128, 128))
        x = int8(rng, (batch, inputs))
        bias = rng.integers(-20000, 20000, size=outputs, dtype=np.int32)
        m = Model()
        xi = m.tensor(x.shape, tfl.TensorType.INT8, scales=[x_scale], zero_points=[x_zp])
        wi = m.tensor(w.shape, tfl.TensorType.INT8, w, w_scales, [0] * len(w_scales))
        b_scales = [f32(x_scale * s) for s in w_scales]
        bi = m.tensor((outputs,), tfl.TensorType.INT32, bias, b_scales, [0] * len(w_scales))
        yi = m.tensor((batch, outputs), tfl.TensorType.INT8, scales=[y_scale], zero_points=[y_zp])
        o = tfl.FullyConnectedOptionsT()
        o.fusedActivationFunction = ACTIVATIONS[act]
        model = m.build(
            tfl.BuiltinOperator.FULLY_CONNECTED, tfl.BuiltinOptions.FullyConnectedOptions, o, [xi, wi, bi], [yi], [xi]
        )
        y = run(model, [x])
        out.case(
            f"fully_connected_{i}",
            op="fully_connected",
            act=["none", "relu", "relu6"].index(act),
            x_quant=[x_scale, x_zp],
            w_scales=w_scales,
            y_quant=[y_scale, y_zp],
            x_shape=x.shape,
            x=x,
            w_shape=w.shape,
            w=w,
            b=bias,
            y_shape=y.shape,
            y=y,
        )


def binary_cases(rng, out, op):
    shapes = [
        ((2, 3, 4), (2, 3, 4)),
        ((1, 5), (1, 5)),
        ((2, 3, 4), (4,)),
        ((2, 1, 4), (1, 3, 1)),
        ((3, 1), (3, 5)),
        ((1, 2, 2, 3), (1, 2, 2, 3)),
        ((2, 2, 1, 3), (1, 1, 4, 3)),
        ((7,), (7,)),
    ]
    for i, (a_shape, b_shape) in enumerate(shapes):
        act = ["none", "relu", "relu6"][i % 3]
        a_scale, b_scale = (f32(v) for v in np.exp(rng.uniform(np.log(0.005), np.log(1.0), 2)))
        if op == "add":
            y_scale = f32(max(a_scale, b_scale) * rng.uniform(0.3, 4))
        else:
            y_scale = f32(a_scale * b_scale * rng.uniform(10, 100))
        a_zp, b_zp, y_zp = (int(v) for v in rng.integers(-128, 128, 3))
        a, b = int8(rng, a_shape), int8(rng, b_shape)
        y_shape = np.broadcast_shapes(a_shape, b_shape)
        m = Model()
        ai = m.tensor(a_shape, tfl.TensorType.INT8, scales=[a_scale], zero_points=[a_zp])
        bi = m.tensor(b_shape, tfl.TensorType.INT8, scales=[b_scale], zero_points=[b_zp])
        yi = m.tensor(y_shape, tfl.TensorType.INT8, scales=[y_scale], zero_points=[y_zp])
        if op == "add":
            o = tfl.AddOptionsT()
            opcode, options_type = tfl.BuiltinOperator.ADD, tfl.BuiltinOptions.AddOptions
        else:
            o = tfl.MulOptionsT()
            opcode, options_type = tfl.BuiltinOperator.MUL, tfl.BuiltinOptions.MulOptions
        o.fusedActivationFunction = ACTIVATIONS[act]
        y = run(m.build(opcode, options_type, o, [ai, bi], [yi], [ai, bi]), [a, b])
        out.case(
            f"{op}_{i}",
            op=op,
            act=["none", "relu", "relu6"].index(act),
            a_quant=[a_scale, a_zp],
            b_quant=[b_scale, b_zp],
            y_quant=[y_scale, y_zp],
            a_shape=a_shape,
            a=a,
            b_shape=b_shape,
            b=b,
            y_shape=y.shape,
            y=y,
        )


def pool_cases(rng, out, op):
    for i in range(8):
        n, h, w, c = 1 + i % 2, int(rng.integers(2, 8)), int(rng.integers(2, 8)), int(rng.integers(1, 4))
        kh, kw = (int(v) for v in rng.integers(1, 4, 2))
        sh, sw = (int(v) for v in rng.integers(1, 3, 2))
        pad = "same" if i % 2 == 0 else "valid"
        act = ["none", "relu", "relu6"][i % 3]
        oh, pt, pb = padding(pad, h, kh, sh, 1)
        ow, pl, pr = padding(pad, w, kw, sw, 1)
        if oh < 1 or ow < 1:
            continue
        scale, zp = f32(rng.uniform(0.01, 0.2)), int(rng.integers(-128, 128))
        x = int8(rng, (n, h, w, c))
        m = Model()
        xi = m.tensor(x.shape, tfl.TensorType.INT8, scales=[scale], zero_points=[zp])
        yi = m.tensor((n, oh, ow, c), tfl.TensorType.INT8, scales=[scale], zero_points=[zp])
        o = tfl.Pool2DOptionsT()
        o.padding = tfl.Padding.SAME if pad == "same" else tfl.Padding.VALID
        o.strideH, o.strideW, o.filterHeight, o.filterWidth = sh, sw, kh, kw
        o.fusedActivationFunction = ACTIVATIONS[act]
        opcode = tfl.BuiltinOperator.AVERAGE_POOL_2D if op == "avg_pool" else tfl.BuiltinOperator.MAX_POOL_2D
        y = run(m.build(opcode, tfl.BuiltinOptions.Pool2DOptions, o, [xi], [yi], [xi]), [x])
        out.case(
            f"{op}_{i}",
            op=op,
            kernel=[kh, kw],
            stride=[sh, sw],
            pad=[pt, pl, pb, pr],
            act=["none", "relu", "relu6"].index(act),
            x_quant=[scale, zp],
            x_shape=x.shape,
            x=x,
            y_shape=y.shape,
            y=y,
        )


def softmax_cases(rng, out):
    shapes = [(1, 10), (3, 7), (2, 40), (1, 1), (4, 3), (1, 300), (2, 2, 5), (1, 1000)]
    for i, shape in enumerate(shapes):
        beta = 1.0 if i % 3 else f32(rng.uniform(0.5, 2.0))
        scale, zp = f32(np.exp(rng.uniform(np.log(0.01), np.log(1.0)))), int(rng.integers(-128, 128))
        if i % 2:
            x = int8(rng, shape)
        else:  # clustered near a maximum: many non-negligible probabilities
            x = np.clip(int(rng.integers(-100, 128)) - rng.integers(0, 30, size=shape), -128, 127).astype(np.int8)
        m = Model()
        xi = m.tensor(shape, tfl.TensorType.INT8, scales=[scale], zero_points=[zp])
        yi = m.tensor(shape, tfl.TensorType.INT8, scales=[1.0 / 256], zero_points=[-128])
        o = tfl.SoftmaxOptionsT()
        o.beta = beta
        y = run(m.build(tfl.BuiltinOperator.SOFTMAX, tfl.BuiltinOptions.SoftmaxOptions, o, [xi], [yi], [xi]), [x])
        out.case(
            f"softmax_{i}",
            op="softmax",
            beta=[beta],
            x_quant=[scale, zp],
            x_shape=shape,
            x=x,
            y_shape=y.shape,
            y=y,
        )


def quantize_cases(rng, out):
    for i in range(6):
        scale, zp = f32(np.exp(rng.uniform(np.log(0.001), np.log(10)))), int(rng.integers(-128, 128))
        k = rng.integers(-300, 300, size=40)
        x = np.concatenate([
            (rng.uniform(-300, 300, size=40) * scale),
            (k + 0.5) * scale,  # ties (after the f32 division, mostly)
            # Saturating values, but with x / scale within int32: beyond, TFLM's float-to-int cast is
            # undefined behaviour (on x86 it gives INT_MIN, and +1e30 quantizes to -128), where Ember
            # saturates.
            [0.0, -0.0, 1e5 * scale, -1e5 * scale, 2e9 * scale, -2e9 * scale],
        ]).astype(np.float32)
        m = Model()
        xi = m.tensor(x.shape, tfl.TensorType.FLOAT32)
        yi = m.tensor(x.shape, tfl.TensorType.INT8, scales=[scale], zero_points=[zp])
        y = run(m.build(tfl.BuiltinOperator.QUANTIZE, tfl.BuiltinOptions.QuantizeOptions, tfl.QuantizeOptionsT(), [xi], [yi], [xi]), [x])
        out.case(f"quantize_{i}", op="quantize", y_quant=[scale, zp], x=[float(v) for v in x], y=y)


def dequantize_cases(rng, out):
    for i in range(4):
        scale, zp = f32(np.exp(rng.uniform(np.log(1e-4), np.log(100)))), int(rng.integers(-128, 128))
        x = np.arange(-128, 128, dtype=np.int8)
        m = Model()
        xi = m.tensor(x.shape, tfl.TensorType.INT8, scales=[scale], zero_points=[zp])
        yi = m.tensor(x.shape, tfl.TensorType.FLOAT32)
        y = run(m.build(tfl.BuiltinOperator.DEQUANTIZE, tfl.BuiltinOptions.DequantizeOptions, tfl.DequantizeOptionsT(), [xi], [yi], [xi]), [x])
        out.case(f"dequantize_{i}", op="dequantize", x_quant=[scale, zp], x=x, y=[float(v) for v in y])


def requantize_cases(rng, out):
    for i in range(6):
        x_scale = f32(np.exp(rng.uniform(np.log(0.01), np.log(1.0))))
        y_scale = f32(x_scale / np.exp(rng.uniform(np.log(0.05), np.log(20))))
        x_zp, y_zp = (int(v) for v in rng.integers(-128, 128, 2))
        x = np.arange(-128, 128, dtype=np.int8)
        m = Model()
        xi = m.tensor(x.shape, tfl.TensorType.INT8, scales=[x_scale], zero_points=[x_zp])
        yi = m.tensor(x.shape, tfl.TensorType.INT8, scales=[y_scale], zero_points=[y_zp])
        y = run(m.build(tfl.BuiltinOperator.QUANTIZE, tfl.BuiltinOptions.QuantizeOptions, tfl.QuantizeOptionsT(), [xi], [yi], [xi]), [x])
        out.case(f"requantize_{i}", op="requantize", x_quant=[x_scale, x_zp], y_quant=[y_scale, y_zp], x=x, y=y)


def main():
    rng = np.random.default_rng(20261202)
    out = Writer()
    conv_cases(rng, out, "conv2d")
    conv_cases(rng, out, "depthwise")
    conv_cases(rng, out, "grouped")
    fully_connected_cases(rng, out)
    binary_cases(rng, out, "add")
    binary_cases(rng, out, "mul")
    pool_cases(rng, out, "avg_pool")
    pool_cases(rng, out, "max_pool")
    softmax_cases(rng, out)
    quantize_cases(rng, out)
    dequantize_cases(rng, out)
    requantize_cases(rng, out)
    OUT.write_text(
        "# Golden int8 results of TFLM's reference kernels; made by make.py (rerun it, don't edit).\n\n"
        + "\n".join(out.lines)
    )
    print(f"wrote {sum(l.startswith('case ') for l in out.lines)} cases to {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
