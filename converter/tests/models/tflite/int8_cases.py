"""Int8 cases (goldens: TFLM) and error cases (no goldens) of make.py. Each builder takes its own seeded
generator and returns (model, subgraph inputs, subgraph outputs, input arrays, extra cases.txt fields); keys
starting with "_" are for make.py, not cases.txt.

Int8 models are quantized as the TFLite converter quantizes: int8 activations with a scale and zero point
each (asymmetric), symmetric int8 weights, per channel for CONV_2D (quantized_dimension 0, weights OHWI) and
DEPTHWISE_CONV_2D (quantized_dimension 3, weights [1, KH, KW, C]) and per tensor for FULLY_CONNECTED, int32
biases with scale input_scale * weight_scale and zero point 0, pools, PAD, RESHAPE and CONCATENATION keeping
their input's scale and zero point, SOFTMAX and LOGISTIC outputs at 1/256 and -128. Activation scales come
from the float ranges that numpy computes for the dequantized network on the case's input (a few cases widen
an activated output's range on purpose, said where they do). Operator versions are the converter's for int8
(`tensorflow/lite/tools/versioning/op_version.cc`): CONV_2D and DEPTHWISE_CONV_2D 3, FULLY_CONNECTED 4 (5
with keep_num_dims, which op_version.cc checks first), MUL 2 (3 when input1_scale * input2_scale /
output_scale >= 1), RESIZE_BILINEAR 3 with half_pixel_centers (else 2), RESIZE_NEAREST_NEIGHBOR 3 with
half_pixel_centers or align_corners (else 2), 1 for RESHAPE, QUANTIZE, HARD_SWISH and LEAKY_RELU (which have
no int8 version), and 2 for the other int8 ops (DEQUANTIZE, SUB, MEAN, TANH, LOGISTIC, SOFTMAX, RELU, RELU6,
MAXIMUM, MINIMUM, STRIDED_SLICE, SPLIT, TRANSPOSE, PAD, CONCATENATION, ADD, pools). TFLM reads no versions.
"""

import numpy as np
from flatbuffers import flexbuffers
from tflite_writer import Model, f32, tfl

F32, I8, I32 = tfl.TensorType.FLOAT32, tfl.TensorType.INT8, tfl.TensorType.INT32
SAME, VALID = tfl.Padding.SAME, tfl.Padding.VALID
ACT = tfl.ActivationFunctionType


def quant(lo, hi):
    """(scale, zero point) of an asymmetric int8 tensor covering [lo, hi] and 0."""
    lo, hi = min(float(lo), 0.0), max(float(hi), 0.0)
    scale = f32((hi - lo) / 255)
    return scale, int(np.clip(np.round(-128 - lo / scale), -128, 127))


def dequant(q, scale, zp):
    return ((q.astype(np.float32) - zp) * np.asarray(scale, np.float32)).astype(np.float32)


def dequant_weights(q, scales, axis=None):
    """Float weights of symmetric int8 `q`, per channel along `axis` or per tensor."""
    shape = [1] * q.ndim
    if axis is not None:
        shape[axis] = -1
    return q.astype(np.float32) * np.array(scales, np.float32).reshape(shape)


def quantize(x, scale, zp):
    return np.clip(np.round(x / np.float32(scale)) + zp, -128, 127).astype(np.int8)


def symmetric(w, axis=None):
    """Symmetric int8 weights: (integers, scales), per channel along `axis` or per tensor."""
    reduce = tuple(i for i in range(w.ndim) if i != axis) if axis is not None else None
    scales = (np.max(np.abs(w), axis=reduce) / 127).astype(np.float32).reshape(-1)
    shape = [1] * w.ndim
    if axis is not None:
        shape[axis] = -1
    q = np.clip(np.round(w / scales.reshape(shape)), -127, 127).astype(np.int8)
    return q, [f32(s) for s in scales]


def int8_input(rng, shape):
    return rng.integers(-128, 128, size=shape, dtype=np.int8)


def pad_before(size, k, stride):
    """SAME padding before, along one axis."""
    out = -(-size // stride)
    return max((out - 1) * stride + k - size, 0) // 2


def np_conv(x, w, b, stride=1, depthwise=False):
    """Float NHWC conv (weights OHWI) or depthwise conv (weights [1, KH, KW, C * multiplier]), SAME."""
    n, h, wd, c = x.shape
    kh, kw = w.shape[1:3]
    oh, ow = -(-h // stride), -(-wd // stride)
    pt, pl = pad_before(h, kh, stride), pad_before(wd, kw, stride)
    xp = np.zeros((n, h + kh + stride, wd + kw + stride, c), np.float64)
    xp[:, pt : pt + h, pl : pl + wd] = x
    oc = w.shape[3] if depthwise else w.shape[0]
    y = np.zeros((n, oh, ow, oc))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, i : i + (oh - 1) * stride + 1 : stride, j : j + (ow - 1) * stride + 1 : stride]
            if depthwise:
                y += np.repeat(patch, oc // c, axis=3) * w[0, i, j]
            else:
                y += patch @ w[:, i, j, :].T
    return y + b


class Int8Model(Model):
    def act(self, name, shape, q):
        """An int8 activation with quantization `q` = (scale, zero point)."""
        return self.tensor(shape, I8, scales=[q[0]], zero_points=[q[1]], name=name)

    def weights(self, name, w, scales, axis=0):
        return self.tensor(w.shape, I8, w, scales, [0] * len(scales), axis, name)

    def bias(self, name, b_float, x_scale, w_scales):
        """int32 bias: `b_float` / (x_scale * w_scale), with one scale per weight scale (per channel or per
        tensor); returns (index, dequantized bias)."""
        scales = np.float32(x_scale) * np.array(w_scales, np.float32)
        q = np.round(b_float / scales).astype(np.int32)
        index = self.tensor(q.shape, I32, q, [f32(s) for s in scales], [0] * len(scales), name=name)
        return index, (q * scales).astype(np.float32)


def int8_conv_pool(rng):
    m = Int8Model()
    qx = (0.03, -7)
    xq = int8_input(rng, (1, 7, 9, 3))
    x = m.act("x", xq.shape, qx)
    w1_q, w1_s = symmetric(rng.uniform(-0.5, 0.5, (5, 3, 3, 3)), axis=0)
    w1 = m.weights("w1", w1_q, w1_s, axis=0)
    b1, b1_f = m.bias("b1", rng.uniform(-0.5, 0.5, 5), qx[0], w1_s)
    c1_f = np.maximum(np_conv(dequant(xq, *qx), dequant_weights(w1_q, w1_s, 0), b1_f), 0)
    q1 = quant(c1_f.min(), c1_f.max())
    c1 = m.act("c1", (1, 7, 9, 5), q1)
    m.add("CONV_2D", [x, w1, b1], [c1], version=3, padding=SAME, strideH=1, strideW=1,
          fusedActivationFunction=ACT.RELU)
    w2_q, w2_s = symmetric(rng.uniform(-1, 1, (1, 3, 3, 5)), axis=3)
    w2 = m.weights("w2", w2_q, w2_s, axis=3)
    b2, b2_f = m.bias("b2", rng.uniform(-0.5, 0.5, 5), q1[0], w2_s)
    c2_f = np_conv(dequant(quantize(c1_f, *q1), *q1), dequant_weights(w2_q, w2_s, 3), b2_f, depthwise=True)
    q2 = quant(c2_f.min(), c2_f.max())
    c2 = m.act("c2", (1, 7, 9, 5), q2)
    m.add("DEPTHWISE_CONV_2D", [c1, w2, b2], [c2], version=3, padding=SAME, strideH=1, strideW=1,
          depthMultiplier=1)
    p = m.act("avg", (1, 4, 5, 5), q2)
    m.add("AVERAGE_POOL_2D", [c2], [p], version=2, padding=SAME, strideH=2, strideW=2, filterHeight=3,
          filterWidth=3)
    y = m.act("y", (1, 3, 4, 5), q2)
    m.add("MAX_POOL_2D", [p], [y], version=2, padding=VALID, strideH=1, strideW=1, filterHeight=2,
          filterWidth=2)
    return m, [x], [y], [xq], {}


def int8_fc_softmax(rng):
    m = Int8Model()
    qx = (0.05, 3)
    xq = int8_input(rng, (2, 3, 5))
    x = m.act("x", xq.shape, qx)
    r = m.act("flat", (2, 15), qx)
    m.add("RESHAPE", [x, m.const(np.array([-1, 15], np.int32), "shape")], [r], newShape=[-1, 15])
    w_q, w_s = symmetric(rng.uniform(-0.15, 0.15, (10, 15)))
    w = m.weights("w", w_q, w_s)
    b, b_f = m.bias("b", rng.uniform(-1, 1, 10), qx[0], w_s)
    logits_f = dequant(xq.reshape(2, 15), *qx) @ dequant_weights(w_q, w_s).T + b_f
    ql = quant(logits_f.min(), logits_f.max())
    logits = m.act("logits", (2, 10), ql)
    m.add("FULLY_CONNECTED", [r, w, b], [logits], version=4, keepNumDims=False)
    y = m.act("y", (2, 10), (1 / 256, -128))
    m.add("SOFTMAX", [logits], [y], version=2, beta=1.0)
    return m, [x], [y], [xq], {}


def int8_add_mul(rng):
    m = Int8Model()
    qa, qb, qc = (0.04, -10), (0.015, 20), (0.02, 0)
    shape, c_shape = (1, 5, 7, 3), (1, 1, 7, 3)
    aq, bq, cq = int8_input(rng, shape), int8_input(rng, shape), int8_input(rng, c_shape)
    a, b, c = m.act("a", shape, qa), m.act("b", shape, qb), m.act("c", c_shape, qc)
    s_f = dequant(aq, *qa) + dequant(bq, *qb)
    qs = quant(s_f.min(), s_f.max())
    s = m.act("sum", shape, qs)
    m.add("ADD", [a, b], [s], version=2)
    y_f = dequant(quantize(s_f, *qs), *qs) * dequant(cq, *qc)
    qy = quant(y_f.min(), y_f.max())
    y = m.act("y", shape, qy)
    mul_version = 3 if qs[0] * qc[0] / qy[0] >= 1 else 2
    m.add("MUL", [s, c], [y], version=mul_version)  # c broadcast over axis 1
    return m, [a, b, c], [y], [aq, bq, cq], {}


def int8_concat_reshape(rng):
    m = Int8Model()
    q = (0.02, 5)
    aq, bq = int8_input(rng, (1, 4, 5, 3)), int8_input(rng, (1, 4, 5, 2))
    a, b = m.act("a", aq.shape, q), m.act("b", bq.shape, q)
    c = m.act("concat", (1, 4, 5, 5), q)
    m.add("CONCATENATION", [a, b], [c], version=2, axis=3)
    y = m.act("y", (1, 20, 5), q)
    m.add("RESHAPE", [c, m.const(np.array([1, -1, 5], np.int32), "shape")], [y], newShape=[1, -1, 5])
    return m, [a, b], [y], [aq, bq], {}


def int8_quantize_edges(rng):
    m = Int8Model()
    xf = rng.uniform(-2, 2, (1, 6, 5, 3)).astype(np.float32)
    qx = quant(-2, 2)
    x = m.tensor(xf.shape, F32, name="x")
    xi = m.act("x_int8", xf.shape, qx)
    m.add("QUANTIZE", [x], [xi])
    w_q, w_s = symmetric(rng.uniform(-0.5, 0.5, (4, 3, 3, 3)), axis=0)
    w = m.weights("w", w_q, w_s, axis=0)
    b, b_f = m.bias("b", rng.uniform(-0.5, 0.5, 4), qx[0], w_s)
    y_f = np_conv(dequant(quantize(xf, *qx), *qx), dequant_weights(w_q, w_s, 0), b_f)
    qy = quant(y_f.min(), y_f.max())
    yi = m.act("y_int8", (1, 6, 5, 4), qy)
    m.add("CONV_2D", [xi, w, b], [yi], version=3, padding=SAME, strideH=1, strideW=1)
    y = m.tensor((1, 6, 5, 4), F32, name="y")
    m.add("DEQUANTIZE", [yi], [y], version=2)
    return m, [x], [y], [xf], {"_output_scale": qy[0]}


def int8_pad(rng):
    m = Int8Model()
    q = (0.05, -20)
    xq = int8_input(rng, (1, 5, 4, 3))
    x = m.act("x", xq.shape, q)
    paddings = m.const(np.array([[0, 0], [1, 2], [2, 1], [0, 1]], np.int32), "paddings")
    y = m.act("y", (1, 8, 7, 4), q)  # padded with the zero point (real 0)
    m.add("PAD", [x, paddings], [y], version=2)
    return m, [x], [y], [xq], {}


def int8_logistic(rng):
    m = Int8Model()
    q = (0.0625, 0)  # [-8, 7.94]
    xq = rng.permutation(np.arange(-128, 128, dtype=np.int8)).reshape(4, 64)  # every int8 value once
    x = m.act("x", xq.shape, q)
    y = m.act("y", xq.shape, (1 / 256, -128))
    m.add("LOGISTIC", [x], [y], version=2)
    return m, [x], [y], [xq], {"_record_litert": True}


def every_int8(rng, shape):
    """Each of the 256 int8 values once, shuffled, in `shape` (256 elements)."""
    return rng.permutation(np.arange(-128, 128, dtype=np.int8)).reshape(shape)


def int8_sub(rng):
    """y0 = a - b; y1 = RELU(b - a), its output quantized over the difference's whole range (not [0, max] as
    the converter would), so the fused RELU clamps at the zero point rather than at -128."""
    m = Int8Model()
    qa, qb = (0.03, -12), (0.05, 17)
    shape = (1, 5, 7, 3)
    aq, bq = int8_input(rng, shape), int8_input(rng, shape)
    a, b = m.act("a", shape, qa), m.act("b", shape, qb)
    d_f = dequant(aq, *qa) - dequant(bq, *qb)
    y0 = m.act("y0", shape, quant(d_f.min(), d_f.max()))
    m.add("SUB", [a, b], [y0], version=2)
    y1 = m.act("y1", shape, quant(-d_f.max(), -d_f.min()))
    m.add("SUB", [b, a], [y1], version=2, fusedActivationFunction=ACT.RELU)
    return m, [a, b], [y0, y1], [aq, bq], {"_record_litert": True}


def int8_mean(rng):
    """y0 = MEAN over axes [1, 2] (keep_dims), y1 = MEAN over axis 3 (no keep_dims); each output has its own
    scale and zero point. Each channel has its own offset, so the means spread."""
    m = Int8Model()
    qx = (0.04, 9)
    shape = (1, 5, 7, 6)
    offsets = rng.integers(-80, 80, size=6)
    xq = np.clip(offsets + rng.integers(-45, 46, size=shape), -128, 127).astype(np.int8)
    x = m.act("x", shape, qx)
    xf = dequant(xq, *qx)
    m0, m1 = xf.mean(axis=(1, 2), keepdims=True), xf.mean(axis=3)
    y0 = m.act("y0", (1, 1, 1, 6), quant(m0.min(), m0.max()))
    m.add("MEAN", [x, m.const(np.array([1, 2], np.int32), "axes12")], [y0], version=2, keepDims=True)
    y1 = m.act("y1", (1, 5, 7), quant(m1.min(), m1.max()))
    m.add("MEAN", [x, m.const(np.array([3], np.int32), "axis3")], [y1], version=2, keepDims=False)
    return m, [x], [y0, y1], [xq], {"_record_litert": True}


def int8_hard_swish(rng):
    m = Int8Model()
    qx = (0.04, -20)  # [-4.32, 5.88]
    xq = every_int8(rng, (1, 4, 8, 8))
    x = m.act("x", xq.shape, qx)
    xf = dequant(xq, *qx)
    y_f = xf * np.clip(xf + 3, 0, 6) / 6
    y = m.act("y", xq.shape, quant(y_f.min(), y_f.max()))
    m.add("HARD_SWISH", [x], [y])
    return m, [x], [y], [xq], {"_record_litert": True}


def int8_tanh(rng):
    m = Int8Model()
    qx = (0.025, -6)  # [-3.05, 3.33]
    xq = every_int8(rng, (4, 64))
    x = m.act("x", xq.shape, qx)
    y = m.act("y", xq.shape, (1 / 128, 0))  # as LiteRT and TFLM require for int8 TANH
    m.add("TANH", [x], [y], version=2)
    return m, [x], [y], [xq], {"_record_litert": True}


def int8_resize(rng):
    """y0 = RESIZE_BILINEAR to 7x10 with half-pixel centers, y1 = RESIZE_NEAREST_NEIGHBOR to 5x7 (neither
    align_corners nor half_pixel_centers); both keep the input's scale and zero point."""
    m = Int8Model()
    q = (0.05, -3)
    xq = int8_input(rng, (1, 3, 4, 3))
    x = m.act("x", xq.shape, q)
    y0 = m.act("y0", (1, 7, 10, 3), q)
    m.add("RESIZE_BILINEAR", [x, m.const(np.array([7, 10], np.int32), "size0")], [y0], version=3,
          alignCorners=False, halfPixelCenters=True)
    y1 = m.act("y1", (1, 5, 7, 3), q)
    m.add("RESIZE_NEAREST_NEIGHBOR", [x, m.const(np.array([5, 7], np.int32), "size1")], [y1], version=2,
          alignCorners=False, halfPixelCenters=False)
    return m, [x], [y0, y1], [xq], {"_record_litert": True}


def int8_strided_slice(rng):
    """As float `strided_slice`: y0 with begin and end masks and axis 0 shrunk; y1 = y0 sliced with negative
    strides. Same scale and zero point throughout."""
    m = Int8Model()
    q = (0.02, 11)
    xq = int8_input(rng, (1, 6, 7, 5))
    x = m.act("x", xq.shape, q)

    def i32(*v):
        return np.array(v, np.int32)

    y0 = m.act("y0", (2, 3, 3), q)
    m.add("STRIDED_SLICE", [x, m.const(i32(0, 1, 0, 2), "begin0"), m.const(i32(1, 5, 7, 5), "end0"),
                            m.const(i32(1, 2, 3, 1), "strides0")], [y0], version=2, beginMask=0b0100,
          endMask=0b0100, shrinkAxisMask=0b0001)
    y1 = m.act("y1", (2, 2, 3), q)
    m.add("STRIDED_SLICE", [y0, m.const(i32(-1, 0, 0), "begin1"), m.const(i32(-3, 0, 0), "end1"),
                            m.const(i32(-1, -2, -1), "strides1")], [y1], version=2, beginMask=0b110,
          endMask=0b110)
    return m, [x], [y0, y1], [xq], {"_record_litert": True}


def int8_split(rng):
    m = Int8Model()
    q = (0.03, -21)
    xq = int8_input(rng, (1, 4, 5, 6))
    x = m.act("x", xq.shape, q)
    ys = [m.act(f"y{i}", (1, 4, 5, 3), q) for i in range(2)]
    m.add("SPLIT", [m.const(np.array(3, np.int32), "axis"), x], ys, version=2, numSplits=2)
    return m, [x], ys, [xq], {"_record_litert": True}


def int8_transpose(rng):
    m = Int8Model()
    q = (0.025, 13)
    xq = int8_input(rng, (1, 4, 5, 3))
    x = m.act("x", xq.shape, q)
    y = m.act("y", (1, 3, 4, 5), q)
    m.add("TRANSPOSE", [x, m.const(np.array([0, 3, 1, 2], np.int32), "perm")], [y], version=2)
    return m, [x], [y], [xq], {"_record_litert": True}


def int8_max_min(rng):
    """y0 = MAXIMUM(a, b), y1 = MINIMUM(a, b): inputs and outputs share one scale and zero point."""
    m = Int8Model()
    q = (0.03, -4)
    shape = (1, 5, 7, 3)
    aq, bq = int8_input(rng, shape), int8_input(rng, shape)
    a, b = m.act("a", shape, q), m.act("b", shape, q)
    y0, y1 = m.act("y0", shape, q), m.act("y1", shape, q)
    m.add("MAXIMUM", [a, b], [y0], version=2)
    m.add("MINIMUM", [a, b], [y1], version=2)
    return m, [a, b], [y0, y1], [aq, bq], {"_record_litert": True}


def int8_leaky_relu(rng):
    m = Int8Model()
    qx = (0.05, 10)  # [-6.9, 5.85]
    xq = every_int8(rng, (2, 8, 16))
    x = m.act("x", xq.shape, qx)
    xf = dequant(xq, *qx)
    y_f = np.where(xf >= 0, xf, np.float32(0.1) * xf)
    y = m.act("y", xq.shape, quant(y_f.min(), y_f.max()))
    m.add("LEAKY_RELU", [x], [y], alpha=0.1)  # version 1 for int8 too (2 is int16)
    return m, [x], [y], [xq], {"_record_litert": True}


def int8_relu_relu6(rng):
    """x -> RELU (requantized: its output has its own scale and zero point) -> RELU6 (output quantized as its
    input, as the converter writes it: TFLM's int8 RELU6 clamps in its input's quantization and ignores the
    output's). The RELU output's range reaches below 0 and past 6 (not [0, max] as the converter would
    write), so the clamps at real 0 and 6 land inside the int8 range."""
    m = Int8Model()
    qx, qr = (0.06, -5), (0.035, -90)  # [-7.38, 7.95], [-1.33, 7.6]: 0 -> -90, 6 -> 81
    xq = every_int8(rng, (1, 4, 8, 8))
    x = m.act("x", xq.shape, qx)
    r = m.act("relu", xq.shape, qr)
    m.add("RELU", [x], [r], version=2)
    y = m.act("y", xq.shape, qr)
    m.add("RELU6", [r], [y], version=2)
    return m, [x], [y], [xq], {"_record_litert": True}


def int8_dequantize_edge(rng):
    """An int8 subgraph input read through DEQUANTIZE into a float32 output."""
    m = Int8Model()
    q = (0.07, -13)
    xq = int8_input(rng, (1, 5, 7, 3))
    x = m.act("x", xq.shape, q)
    y = m.tensor(xq.shape, F32, name="y")
    m.add("DEQUANTIZE", [x], [y], version=2)
    return m, [x], [y], [xq], {"_output_scale": q[0], "_record_litert": True}


def int8_fc_keep_dims(rng):
    """FULLY_CONNECTED with keep_num_dims: [1, 3, 8] -> [1, 3, 5] (version 5, as op_version.cc checks
    keep_num_dims before int8)."""
    m = Int8Model()
    qx = (0.04, -7)
    xq = int8_input(rng, (1, 3, 8))
    x = m.act("x", xq.shape, qx)
    w_q, w_s = symmetric(rng.uniform(-0.4, 0.4, (5, 8)))
    w = m.weights("w", w_q, w_s)
    b, b_f = m.bias("b", rng.uniform(-1, 1, 5), qx[0], w_s)
    y_f = dequant(xq, *qx) @ dequant_weights(w_q, w_s).T + b_f
    y = m.act("y", (1, 3, 5), quant(y_f.min(), y_f.max()))
    m.add("FULLY_CONNECTED", [x, w, b], [y], version=5, keepNumDims=True)
    return m, [x], [y], [xq], {"_record_litert": True}


def int8_depthwise_multiplier(rng):
    """DEPTHWISE_CONV_2D, depth multiplier 2 (output channel o reads input channel o // 2), stride 2, SAME,
    fused RELU6: [1, 7, 9, 3] -> [1, 4, 5, 6]. The output is quantized over the pre-activation range (not
    [0, 6] as the converter would), so both RELU6 clamps land inside the int8 range."""
    m = Int8Model()
    qx = (0.03, 6)
    xq = int8_input(rng, (1, 7, 9, 3))
    x = m.act("x", xq.shape, qx)
    w_q, w_s = symmetric(rng.uniform(-1, 1, (1, 3, 3, 6)), axis=3)
    w = m.weights("w", w_q, w_s, axis=3)
    b, b_f = m.bias("b", rng.uniform(-0.5, 0.5, 6), qx[0], w_s)
    y_f = np_conv(dequant(xq, *qx), dequant_weights(w_q, w_s, 3), b_f, stride=2, depthwise=True)
    y = m.act("y", (1, 4, 5, 6), quant(y_f.min(), y_f.max()))
    m.add("DEPTHWISE_CONV_2D", [x, w, b], [y], version=3, padding=SAME, strideH=2, strideW=2,
          depthMultiplier=2, fusedActivationFunction=ACT.RELU6)
    return m, [x], [y], [xq], {"_record_litert": True}


def unsupported_builtin(rng):
    """LOGISTIC, then BUCKETIZE (TensorFlow feature columns' bucketing: the index of the bucket each value
    falls in). Its code, 147, is above 127: `deprecated_builtin_code` is 127
    (PLACEHOLDER_FOR_GREATER_OP_CODES) and only `builtin_code` names it."""
    m = Model()
    x = m.tensor((2, 5), F32, name="x")
    p = m.tensor((2, 5), F32, name="p")
    m.add("LOGISTIC", [x], [p])
    y = m.tensor((2, 5), I32, name="y")
    m.add("BUCKETIZE", [p], [y], boundaries=[0.25, 0.5, 0.75])
    return m, [x], [y], [rng.uniform(-3, 3, (2, 5)).astype(np.float32)], {"_type": "float", "unsupported": "BUCKETIZE"}


def unsupported_custom(rng):
    m = Model()
    x = m.tensor((1, 4), F32, name="x")
    y = m.tensor((1, 4), F32, name="y")
    m.custom_op("MyCustomOp", [x], [y], custom_options=flexbuffers.Dumps({"alpha": 0.5}))
    return m, [x], [y], [rng.uniform(-1, 1, (1, 4)).astype(np.float32)], {
        "_type": "float", "unsupported": "CUSTOM:MyCustomOp"}


CASES = [
    ("int8_conv_pool", "int8", int8_conv_pool),
    ("int8_fc_softmax", "int8", int8_fc_softmax),
    ("int8_add_mul", "int8", int8_add_mul),
    ("int8_concat_reshape", "int8", int8_concat_reshape),
    ("int8_quantize_edges", "int8", int8_quantize_edges),
    ("int8_pad", "int8", int8_pad),
    ("int8_logistic", "int8", int8_logistic),
    ("int8_sub", "int8", int8_sub),
    ("int8_mean", "int8", int8_mean),
    ("int8_hard_swish", "int8", int8_hard_swish),
    ("int8_tanh", "int8", int8_tanh),
    ("int8_resize", "int8", int8_resize),
    ("int8_strided_slice", "int8", int8_strided_slice),
    ("int8_split", "int8", int8_split),
    ("int8_transpose", "int8", int8_transpose),
    ("int8_max_min", "int8", int8_max_min),
    ("int8_leaky_relu", "int8", int8_leaky_relu),
    ("int8_relu_relu6", "int8", int8_relu_relu6),
    ("int8_dequantize_edge", "int8", int8_dequantize_edge),
    ("int8_fc_keep_dims", "int8", int8_fc_keep_dims),
    ("int8_depthwise_multiplier", "int8", int8_depthwise_multiplier),
    ("unsupported_builtin", "error", unsupported_builtin),
    ("unsupported_custom", "error", unsupported_custom),
]
