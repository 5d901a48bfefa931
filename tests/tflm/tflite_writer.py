"""Writes `.tflite` flatbuffers with the object API that the `tflite-micro` package ships
(`schema_py_generated.py`), so no TensorFlow install is needed.

Shared by `tests/tflm/make.py` (single-op int8 models), `tests/tflm/digits.py` (the int8 digits CNN) and
`converter/tests/models/tflite/make.py` (the TFLite importer's test models). One subgraph per model:

    m = Model()
    x = m.tensor((1, 7, 9, 3), tfl.TensorType.FLOAT32, name="x")
    w = m.const(weights, name="w")                       # dtype and shape from the array
    y = m.tensor((1, 7, 9, 4), tfl.TensorType.FLOAT32, name="y")
    m.add("CONV_2D", [x, w, -1], [y], padding=tfl.Padding.SAME, strideH=1, strideW=1)
    data = m.finish([x], [y])

`add` names the operator and sets its options table's fields (the object API's names, e.g. `strideH`);
`op` takes the operator code and options object as they are; `custom_op` writes a CUSTOM operator. Each
operator code is written once, in order of first use, with the highest version any of its operators asked
for (as the TFLite converter does), `builtin_code` set and `deprecated_builtin_code = min(code, 127)`
(127 is PLACEHOLDER_FOR_GREATER_OP_CODES). Optional inputs are -1.
"""

import flatbuffers
import numpy as np
from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as tfl

# numpy dtype -> TFLite tensor type, for `Model.const`.
TENSOR_TYPES = {
    np.dtype(np.float32): tfl.TensorType.FLOAT32,
    np.dtype(np.float16): tfl.TensorType.FLOAT16,
    np.dtype(np.int8): tfl.TensorType.INT8,
    np.dtype(np.uint8): tfl.TensorType.UINT8,
    np.dtype(np.int16): tfl.TensorType.INT16,
    np.dtype(np.int32): tfl.TensorType.INT32,
    np.dtype(np.int64): tfl.TensorType.INT64,
    np.dtype(np.bool_): tfl.TensorType.BOOL,
}

# Builtin operator -> the BuiltinOptions table it carries (the name in both enums); an operator not listed
# carries none. The converter writes an empty table for ops whose options have no fields (PAD, DEQUANTIZE).
OPTIONS = {
    "ADD": "AddOptions",
    "AVERAGE_POOL_2D": "Pool2DOptions",
    "BUCKETIZE": "BucketizeOptions",
    "CONCATENATION": "ConcatenationOptions",
    "CONV_2D": "Conv2DOptions",
    "DEPTHWISE_CONV_2D": "DepthwiseConv2DOptions",
    "DEQUANTIZE": "DequantizeOptions",
    "DIV": "DivOptions",
    "FULLY_CONNECTED": "FullyConnectedOptions",
    "GATHER": "GatherOptions",
    "HARD_SWISH": "HardSwishOptions",
    "LEAKY_RELU": "LeakyReluOptions",
    "MAX_POOL_2D": "Pool2DOptions",
    "MEAN": "ReducerOptions",
    "MUL": "MulOptions",
    "NON_MAX_SUPPRESSION_V5": "NonMaxSuppressionV5Options",
    "PAD": "PadOptions",
    "PADV2": "PadV2Options",
    "QUANTIZE": "QuantizeOptions",
    "RESHAPE": "ReshapeOptions",
    "RESIZE_BILINEAR": "ResizeBilinearOptions",
    "RESIZE_NEAREST_NEIGHBOR": "ResizeNearestNeighborOptions",
    "SOFTMAX": "SoftmaxOptions",
    "SPLIT": "SplitOptions",
    "SPLIT_V": "SplitVOptions",
    "STRIDED_SLICE": "StridedSliceOptions",
    "SUB": "SubOptions",
    "TRANSPOSE": "TransposeOptions",
    "TRANSPOSE_CONV": "TransposeConvOptions",
    "UNIDIRECTIONAL_SEQUENCE_LSTM": "UnidirectionalSequenceLSTMOptions",
}


def f32(v):
    """The float32 nearest to v, as a Python float."""
    return float(np.float32(v))


def op_name(code):
    """The BuiltinOperator name of `code`."""
    for name, value in vars(tfl.BuiltinOperator).items():
        if value == code and not name.startswith("_"):
            return name
    raise KeyError(code)


def options(op, **fields):
    """(BuiltinOptions type, options object) for builtin `op` (a name), with `fields` set; a field the
    table does not have is an error."""
    table = OPTIONS.get(op)
    if table is None:
        if fields:
            raise TypeError(f"{op} has no options table, got {sorted(fields)}")
        return tfl.BuiltinOptions.NONE, None
    o = getattr(tfl, table + "T")()
    for key, value in fields.items():
        if not hasattr(o, key):
            raise TypeError(f"{table} has no field {key!r} (fields: {sorted(vars(o))})")
        setattr(o, key, value)
    return getattr(tfl.BuiltinOptions, table), o


class Model:
    """One subgraph; tensors, buffers, operator codes and operators appended as they are declared."""

    def __init__(self):
        empty = tfl.BufferT()
        empty.data = []
        self.buffers = [empty]
        self.tensors = []
        self.codes = []  # [builtin code, custom code, version], in order of first use
        self.operators = []

    def tensor(self, shape, dtype, data=None, scales=None, zero_points=None, axis=0, name=None, variable=False):
        """Declares a tensor (named `t<index>` unless `name` is given), with its constant `data` in a
        buffer of its own and its quantization if `scales` is given; returns its index. `variable`
        marks a state tensor (`is_variable`, such as an LSTM's), which has no data."""
        t = tfl.TensorT()
        t.shape = [int(d) for d in shape]
        t.type = dtype
        t.name = f"t{len(self.tensors)}" if name is None else name
        t.buffer = 0
        if data is not None:
            b = tfl.BufferT()
            b.data = list(np.ascontiguousarray(data).tobytes())
            self.buffers.append(b)
            t.buffer = len(self.buffers) - 1
        if scales is not None:
            q = tfl.QuantizationParametersT()
            q.scale = [f32(s) for s in scales]
            q.zeroPoint = [int(z) for z in zero_points]
            q.quantizedDimension = axis
            t.quantization = q
        if variable:
            t.isVariable = True
        self.tensors.append(t)
        return len(self.tensors) - 1

    def const(self, data, name=None, scales=None, zero_points=None, axis=0):
        """A constant tensor holding the numpy array `data` (its dtype and shape; a 0-d array is a scalar
        of shape [])."""
        data = np.asarray(data)
        return self.tensor(data.shape, TENSOR_TYPES[data.dtype], data, scales, zero_points, axis, name)

    def shape(self, index):
        return list(self.tensors[index].shape)

    def _code(self, builtin, custom, version):
        for i, c in enumerate(self.codes):
            if c[0] == builtin and c[1] == custom:
                c[2] = max(c[2], version)
                return i
        self.codes.append([builtin, custom, version])
        return len(self.codes) - 1

    def op(self, opcode, options_type, options, inputs, outputs, version=1):
        """Appends a builtin operator (`opcode` a BuiltinOperator value); returns its index."""
        o = tfl.OperatorT()
        o.opcodeIndex = self._code(opcode, None, version)
        o.inputs = list(inputs)
        o.outputs = list(outputs)
        o.builtinOptionsType = options_type
        o.builtinOptions = options
        self.operators.append(o)
        return len(self.operators) - 1

    def add(self, op, inputs, outputs, version=1, **fields):
        """Appends builtin operator `op` (a name, such as "CONV_2D") with its options table's `fields`."""
        options_type, o = options(op, **fields)
        return self.op(getattr(tfl.BuiltinOperator, op), options_type, o, inputs, outputs, version)

    def custom_op(self, custom_code, inputs, outputs, custom_options=b"", version=1):
        """Appends a CUSTOM operator named `custom_code`, with raw `custom_options` bytes (flexbuffers)."""
        o = tfl.OperatorT()
        o.opcodeIndex = self._code(tfl.BuiltinOperator.CUSTOM, custom_code, version)
        o.inputs = list(inputs)
        o.outputs = list(outputs)
        if custom_options:
            o.customOptions = list(custom_options)
            o.customOptionsFormat = tfl.CustomOptionsFormat.FLEXBUFFERS
        self.operators.append(o)
        return len(self.operators) - 1

    def finish(self, inputs, outputs, name=None, description=None):
        """The model's flatbuffer bytes, with subgraph inputs and outputs in the order given."""
        codes = []
        for builtin, custom, version in self.codes:
            code = tfl.OperatorCodeT()
            code.builtinCode = builtin
            code.deprecatedBuiltinCode = min(builtin, tfl.BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES)
            if custom is not None:
                code.customCode = custom
            code.version = version
            codes.append(code)
        sg = tfl.SubGraphT()
        sg.tensors = self.tensors
        sg.inputs = list(inputs)
        sg.outputs = list(outputs)
        sg.operators = self.operators
        if name is not None:
            sg.name = name
        m = tfl.ModelT()
        m.version = 3
        if description is not None:
            m.description = description
        m.operatorCodes = codes
        m.subgraphs = [sg]
        m.buffers = self.buffers
        builder = flatbuffers.Builder(1 << 16)
        builder.Finish(m.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())

    def build(self, opcode, options_type, options, inputs, outputs, graph_inputs):
        """A one-operator model: `op`, then `finish(graph_inputs, outputs)`."""
        self.op(opcode, options_type, options, inputs, outputs)
        return self.finish(graph_inputs, outputs)
