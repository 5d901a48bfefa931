"""Array and shape op cases of make.py (Shape/Gather/Concat folding, Squeeze/Unsqueeze, Expand, Tile,
Slice, Split, Gather, DepthToSpace/SpaceToDepth, Resize/Upsample, Where). Each case has its own seed,
so rebuilding one (or adding one) leaves every other case's files unchanged. Run through make.py
(all cases, or `make.py resize where ...`), or alone:

    target/venv/bin/python converter/tests/models/ops/array_cases.py

"""

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

OUT = Path(__file__).resolve().parent

RNG = np.random.default_rng(11)
I64_MAX = np.iinfo(np.int64).max


def rand(*shape):
    return RNG.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def i64(*v):
    return np.array(v, dtype=np.int64)


def init(name, array):
    return numpy_helper.from_array(np.asarray(array), name=name)


def save(case, opset, nodes, x, inits, ir_version=8):
    """As make.py's `save`, but states `y`'s shape (taken from a first onnxruntime run): onnx's shape
    inference cannot follow every shape subgraph."""
    def build(y_shape):
        graph = helper.make_graph(
            nodes, case,
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
            initializer=inits,
        )
        model = helper.make_model(graph, producer_name="ember-convert tests",
                                  opset_imports=[helper.make_opsetid("", opset)])
        model.ir_version = ir_version
        return model

    def run(model):
        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
        return sess.run(["y"], {"x": x})[0].astype(np.float32)

    model = build(list(run(build(None)).shape))
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    (OUT / f"{case}.onnx").write_bytes(model.SerializeToString())
    y = run(model)
    np.save(OUT / f"{case}.x.npy", x)
    np.save(OUT / f"{case}.y.npy", y)
    print(f"{case:14s} x {list(x.shape)} -> y {list(y.shape)}")


def resize_filters():
    """Resize, opset 19: cubic (cubic_coeff_a -0.75 and -0.5, exclude_outside 0 and 1) under every
    coordinate transformation, antialiased linear and cubic up and down, and half_pixel_symmetric for
    nearest, linear and cubic; outputs flattened and joined."""
    n = helper.make_node
    # (mode, coordinate transformation, attributes, scales or sizes, values)
    cases = [
        ("cubic", "half_pixel", {}, "scales", [1, 1, 2, 1.5]),
        ("cubic", "half_pixel", dict(cubic_coeff_a=-0.5, exclude_outside=1), "scales", [1, 1, 0.6, 0.5]),
        ("cubic", "align_corners", dict(exclude_outside=1), "sizes", [1, 2, 9, 3]),
        ("cubic", "asymmetric", dict(cubic_coeff_a=-0.5), "scales", [1, 1, 1.5, 2]),
        ("cubic", "pytorch_half_pixel", dict(exclude_outside=1), "sizes", [1, 2, 3, 11]),
        ("cubic", "half_pixel_symmetric", dict(cubic_coeff_a=-0.5), "scales", [1, 1, 0.7, 1.3]),
        ("cubic", "half_pixel", dict(antialias=1, cubic_coeff_a=-0.5), "scales", [1, 1, 0.5, 0.6]),
        ("cubic", "pytorch_half_pixel", dict(antialias=1), "sizes", [1, 2, 3, 5]),
        ("cubic", "half_pixel", dict(antialias=1), "scales", [1, 1, 2, 1.5]),
        ("linear", "half_pixel", dict(antialias=1), "scales", [1, 1, 0.6, 0.5]),
        ("linear", "align_corners", dict(antialias=1), "sizes", [1, 2, 4, 3]),
        ("linear", "half_pixel", dict(antialias=1), "sizes", [1, 2, 9, 12]),
        ("linear", "half_pixel_symmetric", {}, "scales", [1, 1, 0.7, 1.7]),
        ("nearest", "half_pixel_symmetric", {}, "scales", [1, 1, 1.7, 0.6]),
        ("linear", "half_pixel_symmetric", dict(antialias=1), "scales", [1, 1, 0.45, 0.8]),
        ("linear", "half_pixel", dict(antialias=1, exclude_outside=1), "scales", [1, 1, 0.4, 0.7]),
        ("cubic", "asymmetric", dict(antialias=1, exclude_outside=1), "sizes", [1, 2, 4, 3]),
    ]
    nodes, inits, outs = [], [], []
    for i, (mode, coord, extra, kind, values) in enumerate(cases):
        attrs = dict(mode=mode, coordinate_transformation_mode=coord, **extra)
        if kind == "scales":
            inits.append(init(f"sc{i}", np.array(values, dtype=np.float32)))
            inputs = ["x", "", f"sc{i}"]
        else:
            inits.append(init(f"sz{i}", i64(*values)))
            inputs = ["x", "", "", f"sz{i}"]
        nodes.append(n("Resize", inputs, [f"r{i}"], name=f"resize{i}_{mode}_{coord}", **attrs))
        nodes.append(n("Flatten", [f"r{i}"], [f"f{i}"], name=f"flat{i}", axis=1))
        outs.append(f"f{i}")
    # Two joins: a Concat takes at most 16 inputs in Ember.
    half = len(outs) // 2
    nodes.append(n("Concat", outs[:half], ["c0"], name="cat0", axis=1))
    nodes.append(n("Concat", outs[half:], ["c1"], name="cat1", axis=1))
    nodes.append(n("Concat", ["c0", "c1"], ["y"], name="cat", axis=1))
    save("resize_filters", 19, nodes, rand(1, 2, 6, 8), inits, ir_version=9)


def shape_subgraph():
    """A PyTorch-style shape subgraph, all folded: Shape, Gather, Unsqueeze, Concat, Reshape, Slice of a
    shape, Size, Range, Cast, ConstantOfShape; Squeeze/Unsqueeze as reshapes; Expand."""
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["s"], name="shape"),                                 # [2, 3, 4, 5]
        n("Gather", ["s", "zero"], ["b"], name="batch", axis=0),               # scalar 2
        n("Unsqueeze", ["b", "ax0"], ["b1"], name="b1"),                       # [2]
        n("Size", ["x"], ["sz0"], name="size0"),                               # 120
        n("Div", ["sz0", "b"], ["per"], name="per_row"),                       # 60 (integer Div)
        n("Cast", ["one_f"], ["one_i"], name="truncate", to=7),                # [1] (1.7 -> 1)
        n("Mul", ["per", "one_i"], ["per1"], name="per_row_vec"),              # [60]
        n("Concat", ["b1", "per1"], ["tgt"], name="tgt", axis=0),              # [2, 60]
        n("Reshape", ["x", "tgt"], ["r"], name="flat"),                        # [2, 60]
        n("Unsqueeze", ["r", "ax1"], ["u"], name="u"),                         # [2, 1, 60]
        n("Shape", ["x"], ["s23"], name="shape_mid", start=1, end=-2),         # [3]
        n("Concat", ["one", "s23", "one"], ["eshape"], name="eshape", axis=0), # [1, 3, 1]
        n("Expand", ["u", "eshape"], ["e"], name="expand"),                    # [2, 3, 60]
        n("Size", ["x"], ["sz"], name="size"),                                 # 120
        n("Slice", ["s", "m1", "big"], ["last"], name="last_dim"),             # [5]
        n("CastLike", ["sz", "x"], ["szf"], name="szf"),
        n("Range", ["r0", "r60", "r1"], ["rng"], name="range"),                # [60]
        n("Cast", ["rng"], ["rngf"], name="rngf", to=1),
        n("Div", ["rngf", "szf"], ["ramp"], name="ramp"),
        n("Add", ["e", "ramp"], ["a"], name="add_ramp"),
        n("Cast", ["a"], ["a32"], name="same_cast", to=1),                     # identity
        n("Shape", ["a32"], ["as"], name="shape_a"),
        n("ConstantOfShape", ["as"], ["half"], name="half",
          value=helper.make_tensor("v", 1, [1], [0.5])),
        n("Mul", ["a32", "half"], ["h"], name="mul_half"),
        n("Unsqueeze", ["h", "ax0"], ["h1"], name="h1"),                       # [1, 2, 3, 60]
        n("Squeeze", ["h1", "ax0"], ["y"], name="sq"),                         # [2, 3, 60]
    ]
    inits = [
        init("zero", np.int64(0)), init("ax0", i64(0)), init("ax1", i64(1)),
        init("one", i64(1)), init("m1", i64(-1)), init("big", i64(I64_MAX)),
        init("one_f", np.array([1.7], dtype=np.float32)), init("r0", np.int64(0)), init("r60", np.int64(60)), init("r1", np.int64(1)),
    ]
    save("shape_subgraph", 15, nodes, rand(2, 3, 4, 5), inits)


def slicing():
    """Slice (negative steps, clamping, axes), Split into three, Gather with 2-D and negative indices,
    Tile, and old-opset Slice/Split/Squeeze attribute forms in a second model."""
    n = helper.make_node
    nodes = [
        n("Slice", ["x", "st", "en", "ax", "sp"], ["a"], name="rev"),          # [2, 3, 5, 4]
        n("Split", ["x", "parts"], ["s1", "s2", "s3"], name="split", axis=1),  # 1, 2, 3
        n("Concat", ["a", "s2", "s1"], ["c"], name="cat", axis=1),             # [2, 6, 5, 4]
        n("Gather", ["c", "idx"], ["g"], name="gather", axis=2),               # [2, 6, 2, 2, 4]
        n("Tile", ["g", "reps"], ["t"], name="tile"),                          # [2, 6, 2, 4, 4]
        n("Gather", ["s3", "one"], ["g1"], name="gather_scalar", axis=-3),     # [2, 5, 4]
        n("Slice", ["g1", "st2", "en2"], ["g2"], name="clamp"),                # [2, 5, 2]
        n("Reshape", ["g2", "shape"], ["g3"], name="rs"),                      # [2, 1, 1, 5, 2]
        n("Tile", ["g3", "reps2"], ["g4"], name="tile_ones"),                  # [2, 6, 2, 5, 2]
        n("Concat", ["t", "g4"], ["y0"], name="cat2", axis=3),                 # [2, 6, 2, 9, 4]?
    ]
    # g4's last dim is 2, t's is 4: pad g4 by slicing t instead.
    nodes[-1] = n("Slice", ["t", "z", "two", "m1"], ["t2"], name="t_last")      # [2, 6, 2, 4, 2]
    nodes.append(n("Concat", ["t2", "g4"], ["y"], name="cat2", axis=3))        # [2, 6, 2, 9, 2]
    inits = [
        init("st", i64(5, -1)), init("en", i64(0, -100)), init("ax", i64(1, 3)), init("sp", i64(-2, -1)),
        init("parts", i64(1, 2, 3)),
        init("idx", i64([0, -1], [2, 2])),
        init("reps", i64(1, 1, 1, 2, 1)),
        init("one", np.int64(1)),
        init("st2", i64(-100, 0, -3)), init("en2", i64(100, I64_MAX, -1)),
        init("shape", i64(2, 1, 1, 5, 2)),
        init("reps2", i64(1, 6, 2, 1, 1)),
        init("z", i64(0)), init("two", i64(2)), init("m1", i64(-1)),
    ]
    save("slicing", 13, nodes, rand(2, 6, 5, 4), inits)

    nodes = [
        n("Slice", ["x"], ["a"], name="slice_v1", starts=[1, 0], ends=[3, -1], axes=[0, 2]),  # [2, 3, 4]
        n("Split", ["a"], ["p", "q"], name="split_v1", axis=2, split=[1, 3]),
        n("Squeeze", ["p"], ["p2"], name="squeeze_v1", axes=[2]),                             # [2, 3]
        n("Unsqueeze", ["p2"], ["p3"], name="unsqueeze_v1", axes=[2]),                       # [2, 3, 1]
        n("Mul", ["q", "p3"], ["y"], name="mul"),                                              # [2, 3, 3]
    ]
    save("slicing_v9", 9, nodes, rand(4, 3, 5), [])


def spatial():
    """DepthToSpace (DCR, CRD) and SpaceToDepth around a convolution (NHWC in between)."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),                  # [1, 8, 3, 4]
        n("DepthToSpace", ["c"], ["d"], name="d2s_dcr", blocksize=2),                   # [1, 2, 6, 8]
        n("SpaceToDepth", ["d"], ["s"], name="s2d", blocksize=2),                       # [1, 8, 3, 4]
        n("DepthToSpace", ["s"], ["e"], name="d2s_crd", blocksize=2, mode="CRD"),       # [1, 2, 6, 8]
        n("Add", ["e", "d"], ["y"], name="add"),
    ]
    save("spatial", 13, nodes, rand(1, 3, 3, 4), [init("w", rand(8, 3, 3, 3))])


def resize():
    """Resize: nearest (every nearest_mode) and linear, every supported coordinate transformation,
    scales and sizes, up and down; outputs flattened and joined."""
    n = helper.make_node
    cases = [
        ("nearest", "asymmetric", "floor", "scales", [1, 1, 2, 2]),
        ("nearest", "half_pixel", "round_prefer_floor", "sizes", [1, 2, 5, 7]),
        ("nearest", "half_pixel", "round_prefer_ceil", "scales", [1, 1, 0.6, 0.5]),
        ("nearest", "align_corners", "ceil", "sizes", [1, 2, 7, 3]),
        ("nearest", "pytorch_half_pixel", "round_prefer_floor", "scales", [1, 1, 3, 1]),
        ("linear", "half_pixel", None, "scales", [1, 1, 2, 2]),
        ("linear", "pytorch_half_pixel", None, "sizes", [1, 2, 1, 6]),
        ("linear", "align_corners", None, "sizes", [1, 2, 5, 9]),
        ("linear", "asymmetric", None, "scales", [1, 1, 1.5, 0.5]),
        ("linear", "half_pixel", None, "scales", [1, 1, 0.5, 0.75]),
    ]
    nodes, inits, outs = [], [], []
    for i, (mode, coord, nearest, kind, values) in enumerate(cases):
        attrs = dict(mode=mode, coordinate_transformation_mode=coord)
        if nearest:
            attrs["nearest_mode"] = nearest
        if kind == "scales":
            inits.append(init(f"sc{i}", np.array(values, dtype=np.float32)))
            inputs = ["x", "", f"sc{i}"]
        else:
            inits.append(init(f"sz{i}", i64(*values)))
            inputs = ["x", "", "", f"sz{i}"]
        nodes.append(n("Resize", inputs, [f"r{i}"], name=f"resize{i}_{mode}_{coord}", **attrs))
        nodes.append(n("Flatten", [f"r{i}"], [f"f{i}"], name=f"flat{i}", axis=1))
        outs.append(f"f{i}")
    nodes.append(n("Concat", outs, ["y"], name="cat", axis=1))
    save("resize", 13, nodes, rand(1, 2, 4, 6), inits)


def upsample():
    """Resize between convolutions: it runs channels-last, so no transposes around it."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1"], ["c1"], name="c1", pads=[1, 1, 1, 1]),                     # [1, 4, 5, 6]
        n("Resize", ["c1", "", "sc"], ["u1"], name="up_nearest", mode="nearest",
          coordinate_transformation_mode="asymmetric", nearest_mode="floor"),            # [1, 4, 10, 12]
        n("Relu", ["u1"], ["r"], name="relu"),
        n("Resize", ["r", "", "", "sz"], ["u2"], name="up_linear", mode="linear"),       # [1, 4, 13, 17]
        n("Conv", ["u2", "w2"], ["y"], name="c2"),                                       # [1, 2, 11, 15]
    ]
    inits = [
        init("w1", rand(4, 3, 3, 3)), init("w2", rand(2, 4, 3, 3)),
        init("sc", np.array([1, 1, 2, 2], dtype=np.float32)), init("sz", i64(1, 4, 13, 17)),
    ]
    save("upsample", 13, nodes, rand(1, 3, 5, 6), inits)


def upsample_v9():
    """The deprecated Upsample (opset 9): nearest and linear, scales as an input."""
    n = helper.make_node
    nodes = [
        n("Upsample", ["x", "s1"], ["u"], name="up_nearest", mode="nearest"),   # [1, 2, 6, 12]
        n("Upsample", ["u", "s2"], ["y"], name="up_linear", mode="linear"),     # [1, 2, 9, 24]
    ]
    inits = [
        init("s1", np.array([1, 1, 2, 3], dtype=np.float32)),
        init("s2", np.array([1, 1, 1.5, 2], dtype=np.float32)),
    ]
    save("upsample_v9", 9, nodes, rand(1, 2, 3, 4), inits)


def channel_split():
    """Split along the channels between convolutions: the slices run on the NHWC activation."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1"], ["c1"], name="c1", pads=[1, 1, 1, 1]),            # [1, 6, 4, 5]
        n("Split", ["c1", "parts"], ["a", "b"], name="split", axis=1),          # [1, 3, 4, 5] x 2
        n("Add", ["a", "b"], ["s"], name="add"),
        n("Slice", ["s", "st", "en", "ax", "sp"], ["t"], name="crop"),          # [1, 3, 3, 2]
        n("Conv", ["t", "w2"], ["y"], name="c2", pads=[1, 1, 1, 1]),            # [1, 2, 3, 2]
    ]
    inits = [
        init("w1", rand(6, 3, 3, 3)), init("w2", rand(2, 3, 3, 3)), init("parts", i64(3, 3)),
        init("st", i64(3, -1)), init("en", i64(0, 0)), init("ax", i64(2, 3)), init("sp", i64(-1, -2)),
    ]
    save("channel_split", 13, nodes, rand(1, 3, 4, 5), inits)


def fpn_concat():
    """An FPN-style neck: a deeper map upsampled and concatenated with a shallower one along the
    channels, between convolutions: the Concat runs channels-last, so no transposes around it."""
    n = helper.make_node
    nodes = [
        n("Conv", ["x", "w1"], ["c1"], name="c1", pads=[1, 1, 1, 1]),                     # [1, 4, 6, 8]
        n("Conv", ["c1", "w2"], ["c2"], name="c2", pads=[1, 1, 1, 1], strides=[2, 2]),    # [1, 5, 3, 4]
        n("Resize", ["c2", "", "sc"], ["u"], name="up", mode="nearest"),                 # [1, 5, 6, 8]
        n("Concat", ["c1", "u", "c1"], ["cat"], name="cat", axis=1),                     # [1, 13, 6, 8]
        n("Conv", ["cat", "w3"], ["y"], name="c3"),                                      # [1, 2, 4, 6]
    ]
    inits = [
        init("w1", rand(4, 3, 3, 3)), init("w2", rand(5, 4, 3, 3)), init("w3", rand(2, 13, 3, 3)),
        init("sc", np.array([1, 1, 2, 2], dtype=np.float32)),
    ]
    save("fpn_concat", 13, nodes, rand(1, 3, 6, 8), inits)


def where():
    """Where with constant conditions: a -inf fill before Softmax (attention-mask style), a constant X,
    two runtime inputs, an all-true condition, and an all-constant Where (folded)."""
    n = helper.make_node
    nodes = [
        n("Where", ["c1", "x", "neg_inf"], ["w1"], name="mask_fill"),
        n("Softmax", ["w1"], ["s1"], name="softmax", axis=-1),
        n("Where", ["c2", "k", "x"], ["w2"], name="const_x"),
        n("Relu", ["x"], ["r"], name="relu"),
        n("Where", ["c3", "x", "r"], ["w3"], name="both_runtime"),
        n("Where", ["t", "x", "zero"], ["w4"], name="all_true"),
        n("Where", ["c2", "k", "zero"], ["w5"], name="folded"),
        n("Add", ["s1", "w2"], ["a1"], name="add1"),
        n("Add", ["a1", "w3"], ["a2"], name="add2"),
        n("Add", ["a2", "w4"], ["a3"], name="add3"),
        n("Add", ["a3", "w5"], ["y"], name="add4"),
    ]
    inits = [
        init("c1", np.array([[True, False, True, True]])),
        init("neg_inf", np.float32(-np.inf)),
        init("c2", np.array([True, False, False, True])),
        init("k", rand(3, 4)),
        init("c3", np.array([[[True, False, True, False]], [[False, False, True, True]]])),
        init("t", np.array([True])),
        init("zero", np.float32(0.0)),
    ]
    save("where", 13, nodes, rand(2, 3, 4), inits)


def seeded(build, seed):
    """`build` with the generator reset first, so a case's files do not depend on which others ran."""
    def run():
        global RNG
        RNG = np.random.default_rng(seed)
        build()
    return run


CASES = {
    "shape_subgraph": seeded(shape_subgraph, 11),
    "slicing": seeded(slicing, 12),
    "spatial": seeded(spatial, 13),
    "resize": seeded(resize, 14),
    "where": seeded(where, 15),
    "upsample": seeded(upsample, 16),
    "upsample_v9": seeded(upsample_v9, 17),
    "channel_split": seeded(channel_split, 18),
    "fpn_concat": seeded(fpn_concat, 19),
    "resize_filters": seeded(resize_filters, 20),
}


def main():
    for build in CASES.values():
        build()


if __name__ == "__main__":
    main()
