"""Float32 cases of make.py (goldens: LiteRT's reference kernels). Each builder takes its own seeded
generator and returns (model, subgraph inputs, subgraph outputs, input arrays, extra cases.txt fields).

Operator versions are those the TFLite converter writes (`tensorflow/lite/tools/versioning/op_version.cc`):
1 for every float op except FULLY_CONNECTED with keep_num_dims (5; not used here), TRANSPOSE_CONV with a bias
input (3), RESIZE_* with half_pixel_centers (3) and DEQUANTIZE of float16 (3).
"""

import numpy as np
from tflite_writer import Model, tfl

F32 = tfl.TensorType.FLOAT32
SAME, VALID = tfl.Padding.SAME, tfl.Padding.VALID
ACT = tfl.ActivationFunctionType


def rand(rng, shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape).astype(np.float32)


def i32(*values):
    return np.array(values, dtype=np.int32)


def out_size(padding, size, k, stride, dilation=1):
    """TFLite's output size along one axis (SAME: ceil(size / stride); VALID: no padding)."""
    if padding == SAME:
        return -(-size // stride)
    return (size - dilation * (k - 1) - 1) // stride + 1


def act(m, name, shape):
    """A float32 activation tensor (no data)."""
    return m.tensor(shape, F32, name=name)


def conv2d_same(rng):
    m = Model()
    x = act(m, "x", (1, 7, 9, 3))
    w = m.const(rand(rng, (4, 3, 3, 3), -0.5, 0.5), "w")  # OHWI
    b = m.const(rand(rng, (4,)), "b")
    y = act(m, "y", (1, 7, 9, 4))
    m.add("CONV_2D", [x, w, b], [y], padding=SAME, strideH=1, strideW=1, fusedActivationFunction=ACT.RELU6)
    return m, [x], [y], [rand(rng, (1, 7, 9, 3), -3, 3)], {}


def conv2d_valid_stride2_dilated(rng):
    m = Model()
    x = act(m, "x", (1, 13, 11, 3))
    w1 = m.const(rand(rng, (5, 3, 3, 3), -0.5, 0.5), "w1")
    b1 = m.const(rand(rng, (5,)), "b1")
    h1, w1_ = out_size(VALID, 13, 3, 2), out_size(VALID, 11, 3, 2)  # 6, 5
    c1 = act(m, "c1", (1, h1, w1_, 5))
    m.add("CONV_2D", [x, w1, b1], [c1], padding=VALID, strideH=2, strideW=2)
    # 3x3 with dilation 2 (a 5x5 span), SAME: padding 2 on each side.
    w2 = m.const(rand(rng, (4, 3, 3, 5), -0.5, 0.5), "w2")
    b2 = m.const(rand(rng, (4,)), "b2")
    y = act(m, "y", (1, h1, w1_, 4))
    m.add(
        "CONV_2D", [c1, w2, b2], [y], padding=SAME, strideH=1, strideW=1, dilationHFactor=2, dilationWFactor=2,
        fusedActivationFunction=ACT.RELU,
    )
    return m, [x], [y], [rand(rng, (1, 13, 11, 3))], {}


def depthwise(rng):
    m = Model()
    x = act(m, "x", (1, 7, 9, 4))
    w1 = m.const(rand(rng, (1, 3, 3, 4)), "w1")  # [1, KH, KW, C * multiplier]
    b1 = m.const(rand(rng, (4,)), "b1")
    d1 = act(m, "d1", (1, 7, 9, 4))
    m.add("DEPTHWISE_CONV_2D", [x, w1, b1], [d1], padding=SAME, strideH=1, strideW=1, depthMultiplier=1)
    # Multiplier 2: output channel o reads input channel o // 2.
    w2 = m.const(rand(rng, (1, 3, 3, 8)), "w2")
    b2 = m.const(rand(rng, (8,)), "b2")
    y = act(m, "y", (1, out_size(VALID, 7, 3, 2), out_size(VALID, 9, 3, 2), 8))
    m.add(
        "DEPTHWISE_CONV_2D", [d1, w2, b2], [y], padding=VALID, strideH=2, strideW=2, depthMultiplier=2,
        fusedActivationFunction=ACT.RELU,
    )
    return m, [x], [y], [rand(rng, (1, 7, 9, 4))], {}


def fully_connected(rng):
    m = Model()
    x = act(m, "x", (1, 2, 3, 4))
    # keep_num_dims false: the input is read as [elements / 12, 12] = [2, 12] (weights are [units, 12]),
    # not as [6, 4]: the last dimension of the input is not the weights' input size here.
    w1 = m.const(rand(rng, (5, 12)), "w1")
    b1 = m.const(rand(rng, (5,)), "b1")
    f1 = act(m, "f1", (2, 5))
    m.add("FULLY_CONNECTED", [x, w1, b1], [f1], fusedActivationFunction=ACT.RELU, keepNumDims=False)
    # No bias: the optional input is -1 (as the converter writes it; version 1, as a 2-input FC would be 6).
    w2 = m.const(rand(rng, (3, 5)), "w2")
    y = act(m, "y", (2, 3))
    m.add("FULLY_CONNECTED", [f1, w2, -1], [y], keepNumDims=False)
    return m, [x], [y], [rand(rng, (1, 2, 3, 4))], {}


def transpose_conv(rng):
    m = Model()
    x = act(m, "x", (1, 4, 5, 3))
    shape = m.const(i32(1, 8, 10, 4), "output_shape")
    w = m.const(rand(rng, (4, 3, 3, 3)), "w")  # [OC, KH, KW, IC]
    b = m.const(rand(rng, (4,)), "b")
    y = act(m, "y", (1, 8, 10, 4))
    # Inputs: output shape, weights, input, bias (the bias input needs version 3).
    m.add("TRANSPOSE_CONV", [shape, w, x, b], [y], version=3, padding=SAME, strideH=2, strideW=2)
    return m, [x], [y], [rand(rng, (1, 4, 5, 3))], {}


def pools(rng):
    m = Model()
    x = act(m, "x", (1, 7, 9, 3))
    p = act(m, "p", (1, 4, 5, 3))
    # SAME average: padded positions are not counted.
    m.add("AVERAGE_POOL_2D", [x], [p], padding=SAME, strideH=2, strideW=2, filterHeight=3, filterWidth=3)
    y = act(m, "y", (1, 3, 4, 3))
    m.add("MAX_POOL_2D", [p], [y], padding=VALID, strideH=1, strideW=1, filterHeight=2, filterWidth=2)
    return m, [x], [y], [rand(rng, (1, 7, 9, 3))], {}


def binary(rng):
    m = Model()
    shape = (1, 5, 7, 3)
    a, b = act(m, "a", shape), act(m, "b", shape)
    c = m.const(rand(rng, (3,)), "c")  # broadcast over the last axis
    s = act(m, "a_plus_c", shape)
    m.add("ADD", [a, c], [s])
    d = act(m, "diff", shape)
    m.add("SUB", [s, b], [d], fusedActivationFunction=ACT.RELU)
    k = m.const(np.array(-1.75, np.float32), "k")  # a scalar: shape []
    p = act(m, "prod", shape)
    m.add("MUL", [d, k], [p])
    q = m.const(np.array([[[[0.5, -2.0, 3.0]]]], np.float32), "q")  # [1, 1, 1, C]
    y = act(m, "y", shape)
    m.add("DIV", [p, q], [y])
    return m, [a, b], [y], [rand(rng, shape), rand(rng, shape)], {}


def reshape(rng):
    m = Model()
    x = act(m, "x", (1, 6, 4, 3))
    r = act(m, "r", (6, 12))
    m.add("RESHAPE", [x], [r], newShape=[6, 12])  # the shape in the options only (one input)
    shape = m.const(i32(2, -1, 4), "shape")
    y = act(m, "y", (2, 9, 4))
    m.add("RESHAPE", [r, shape], [y])  # the shape as an input tensor, with -1 (options table without new_shape)
    return m, [x], [y], [rand(rng, (1, 6, 4, 3))], {}


def softmax(rng):
    m = Model()
    x = act(m, "x", (2, 10))
    y = act(m, "y", (2, 10))
    m.add("SOFTMAX", [x], [y], beta=0.5)
    return m, [x], [y], [rand(rng, (2, 10), -4, 4)], {}


def activations(rng):
    """x -> LEAKY_RELU -> PRELU = t; y0 = LOGISTIC(RELU6(t)); y1 = RELU(TANH(HARD_SWISH(t)))."""
    m = Model()
    shape = (1, 5, 7, 3)
    x = act(m, "x", shape)
    lr = act(m, "leaky", shape)
    m.add("LEAKY_RELU", [x], [lr], alpha=0.2)
    slope = m.const(np.array([[[-2.5, 0.5, 3.0]]], np.float32), "slope")  # [1, 1, C]
    t = act(m, "prelu", shape)
    m.add("PRELU", [lr, slope], [t])
    r6 = act(m, "relu6", shape)
    m.add("RELU6", [t], [r6])
    y0 = act(m, "y0", shape)
    m.add("LOGISTIC", [r6], [y0])
    hs = act(m, "hard_swish", shape)
    m.add("HARD_SWISH", [t], [hs])
    th = act(m, "tanh", shape)
    m.add("TANH", [hs], [th])
    y1 = act(m, "y1", shape)
    m.add("RELU", [th], [y1])
    return m, [x], [y0, y1], [rand(rng, shape, -8, 8)], {}


def pad(rng):
    m = Model()
    x = act(m, "x", (1, 5, 7, 3))
    p1 = m.const(i32([0, 0], [1, 2], [2, 1], [0, 1]), "paddings1")  # [4, 2]: before, after per axis
    t = act(m, "padded", (1, 8, 10, 4))
    m.add("PAD", [x, p1], [t])
    p2 = m.const(i32([0, 0], [0, 1], [1, 0], [0, 0]), "paddings2")
    value = m.const(np.array(0.5, np.float32), "value")
    y = act(m, "y", (1, 9, 11, 4))
    m.add("PADV2", [t, p2, value], [y])
    return m, [x], [y], [rand(rng, (1, 5, 7, 3))], {}


def concat(rng):
    m = Model()
    shapes = [(1, 4, 5, 2), (1, 4, 5, 3), (1, 4, 5, 1), (1, 2, 5, 6)]
    xs = [act(m, f"x{i}", s) for i, s in enumerate(shapes)]
    c = act(m, "c", (1, 4, 5, 6))
    # No fused activation: LiteRT refuses one ("params->activation != kTfLiteActNone", concatenation.cc).
    m.add("CONCATENATION", xs[:3], [c], axis=3, fusedActivationFunction=ACT.NONE)
    y = act(m, "y", (1, 6, 5, 6))
    m.add("CONCATENATION", [c, xs[3]], [y], axis=1)
    return m, xs, [y], [rand(rng, s) for s in shapes], {}


def split(rng):
    m = Model()
    x = act(m, "x", (1, 5, 6, 9))
    axis3 = m.const(np.array(3, np.int32), "axis3")  # a scalar
    parts = [act(m, f"split{i}", (1, 5, 6, 3)) for i in range(3)]
    m.add("SPLIT", [axis3, x], parts, numSplits=3)  # inputs: axis, then the tensor
    sizes = m.const(i32(2, -1), "size_splits")
    axis1 = m.const(np.array(1, np.int32), "axis1")
    v = [act(m, "split_v0", (1, 2, 6, 9)), act(m, "split_v1", (1, 3, 6, 9))]
    m.add("SPLIT_V", [x, sizes, axis1], v, numSplits=2)  # inputs: tensor, sizes, axis
    return m, [x], parts + v, [rand(rng, (1, 5, 6, 9))], {}


def strided_slice(rng):
    m = Model()
    x = act(m, "x", (1, 6, 7, 5))
    # Axis 0 shrunk (index 0); axis 1: 1, 3; axis 2 (begin and end masked) 0, 3, 6; axis 3: 2, 3, 4.
    s1 = act(m, "s1", (2, 3, 3))
    m.add(
        "STRIDED_SLICE",
        [x, m.const(i32(0, 1, 0, 2), "begin1"), m.const(i32(1, 5, 7, 5), "end1"), m.const(i32(1, 2, 3, 1), "strides1")],
        [s1], beginMask=0b0100, endMask=0b0100, shrinkAxisMask=0b0001,
    )
    # Negative strides: axis 0 from -1 (1) down to -3 (-1 after adding 2, i.e. through index 0): 1, 0;
    # axes 1 and 2 masked: 2, 0 (stride -2) and 2, 1, 0.
    y = act(m, "y1", (2, 2, 3))
    m.add(
        "STRIDED_SLICE",
        [s1, m.const(i32(-1, 0, 0), "begin2"), m.const(i32(-3, 0, 0), "end2"), m.const(i32(-1, -2, -1), "strides2")],
        [y], beginMask=0b110, endMask=0b110,
    )
    return m, [x], [s1, y], [rand(rng, (1, 6, 7, 5))], {}


def mean(rng):
    m = Model()
    x = act(m, "x", (1, 5, 7, 4))
    y0 = act(m, "y0", (1, 1, 1, 4))
    m.add("MEAN", [x, m.const(i32(1, 2), "axes12")], [y0], keepDims=True)
    y1 = act(m, "y1", (1, 5, 7))
    m.add("MEAN", [x, m.const(i32(3), "axis3")], [y1], keepDims=False)
    return m, [x], [y0, y1], [rand(rng, (1, 5, 7, 4))], {}


def resize(rng):
    m = Model()
    x = act(m, "x", (1, 3, 4, 3))
    y0 = act(m, "y0", (1, 6, 8, 3))
    m.add(
        "RESIZE_BILINEAR", [x, m.const(i32(6, 8), "size0")], [y0], version=3, alignCorners=False,
        halfPixelCenters=True,
    )
    y1 = act(m, "y1", (1, 5, 7, 3))
    m.add("RESIZE_BILINEAR", [x, m.const(i32(5, 7), "size1")], [y1], alignCorners=True, halfPixelCenters=False)
    y2 = act(m, "y2", (1, 7, 9, 3))
    m.add(
        "RESIZE_NEAREST_NEIGHBOR", [x, m.const(i32(7, 9), "size2")], [y2], version=3, alignCorners=False,
        halfPixelCenters=True,
    )
    return m, [x], [y0, y1, y2], [rand(rng, (1, 3, 4, 3))], {}


def transpose(rng):
    m = Model()
    x = act(m, "x", (1, 4, 5, 3))
    y = act(m, "y", (1, 3, 4, 5))
    m.add("TRANSPOSE", [x, m.const(i32(0, 3, 1, 2), "perm")], [y])
    return m, [x], [y], [rand(rng, (1, 4, 5, 3))], {}


def gather(rng):
    m = Model()
    x = act(m, "x", (2, 7, 5))
    y = act(m, "y", (2, 5, 5))
    m.add("GATHER", [x, m.const(i32(4, 0, 6, 0, 2), "indices")], [y], axis=1, batchDims=0)
    return m, [x], [y], [rand(rng, (2, 7, 5))], {}


def lstm(rng):
    """UNIDIRECTIONAL_SEQUENCE_LSTM, batch-major [1, 5 steps, 4 features], 3 cells, no peephole, projection
    or layer norm. Its 24 inputs: 0 the input; 1-4 input-to-{input, forget, cell, output} weights
    [cells, features]; 5-8 recurrent-to-{input, forget, cell, output} weights [cells, outputs]; 9-11 peephole
    weights (-1); 12-15 {input, forget, cell, output} gate biases [cells]; 16-17 projection weights and bias
    (-1); 18 output state and 19 cell state (variable tensors, [batch, outputs] and [batch, cells], zero at
    the start: the golden is a fresh interpreter's first invoke); 20-23 layer norm weights (-1)."""
    m = Model()
    batch, steps, features, cells = 1, 5, 4, 3
    x = act(m, "x", (batch, steps, features))
    gates = ("input", "forget", "cell", "output")
    w_in = [m.const(rand(rng, (cells, features)), f"input_to_{g}_w") for g in gates]
    w_rec = [m.const(rand(rng, (cells, cells)), f"recurrent_to_{g}_w") for g in gates]
    biases = [m.const(rand(rng, (cells,), -0.5, 0.5), f"{g}_gate_bias") for g in gates]
    h = m.tensor((batch, cells), F32, name="output_state", variable=True)
    c = m.tensor((batch, cells), F32, name="cell_state", variable=True)
    y = act(m, "y", (batch, steps, cells))
    inputs = [x] + w_in + w_rec + [-1] * 3 + biases + [-1] * 2 + [h, c] + [-1] * 4
    m.add(
        "UNIDIRECTIONAL_SEQUENCE_LSTM", inputs, [y], fusedActivationFunction=ACT.TANH, cellClip=0.0,
        projClip=0.0, timeMajor=False,
    )
    return m, [x], [y], [rand(rng, (batch, steps, features), -2, 2)], {}


def float16_weights(rng):
    """As TFLite's float16 quantization writes a conv: float16 weights and bias, each read through a
    DEQUANTIZE into a float32 tensor the conv takes."""
    m = Model()
    x = act(m, "x", (1, 7, 9, 3))
    w16 = m.const(rand(rng, (4, 3, 3, 3), -0.5, 0.5).astype(np.float16), "w_fp16")
    b16 = m.const(rand(rng, (4,)).astype(np.float16), "b_fp16")
    w = act(m, "w", (4, 3, 3, 3))
    b = act(m, "b", (4,))
    m.add("DEQUANTIZE", [w16], [w], version=3)
    m.add("DEQUANTIZE", [b16], [b], version=3)
    y = act(m, "y", (1, 7, 9, 4))
    m.add("CONV_2D", [x, w, b], [y], padding=SAME, strideH=1, strideW=1)
    return m, [x], [y], [rand(rng, (1, 7, 9, 3))], {}


CASES = [
    ("conv2d_same", conv2d_same),
    ("conv2d_valid_stride2_dilated", conv2d_valid_stride2_dilated),
    ("depthwise", depthwise),
    ("fully_connected", fully_connected),
    ("transpose_conv", transpose_conv),
    ("pools", pools),
    ("binary", binary),
    ("reshape", reshape),
    ("softmax", softmax),
    ("activations", activations),
    ("pad", pad),
    ("concat", concat),
    ("split", split),
    ("strided_slice", strided_slice),
    ("mean", mean),
    ("resize", resize),
    ("transpose", transpose),
    ("gather", gather),
    ("lstm", lstm),
    ("float16_weights", float16_weights),
]
