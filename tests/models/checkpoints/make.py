#!/usr/bin/env python3
"""Checkpoint test material for Ember: the digits CNN's trained weights in every layout Ember reads,
graphs whose own weights are wrong (so only binding gives the right answer), reader edge cases, hostile
pickles, and a LoRA adapter with numpy's merged outputs.

torch is not installed here, so the PyTorch layouts are written the way `torch.save` writes them
(torch/serialization.py, `_save` and `_legacy_save`) with `zipfile` and protocol-2 `pickle`: stand-in
tensor and storage classes reduce to `torch._utils._rebuild_tensor_v2(...)` and give `torch.save`'s
persistent ids, and stand-in `torch` modules in `sys.modules` let `pickle` name the globals. Zip records
are 64-byte aligned with an `FB` extra field, as PyTorch's writer does.

    target/venv/bin/python tests/models/checkpoints/make.py

Deterministic: rerunning gives byte-identical files. Outputs (next to this script):
    digits_random.onnx        the digits CNN with seeded random initializers named like PyTorch
                              (conv1.weight, ..., fc2.bias)
    digits_matmul.onnx        the trained digits CNN with fc1 as MatMul + Add, fc1.weight stored [64, 32]
    digits_zip.pt             state_dict, zip layout (fc1.weight a transposed view, the biases views of one
                              shared storage, fc2.weight an nn.Parameter)
    digits_legacy.pt          state_dict, legacy layout, keys prefixed `module.`, plus an unused int64
                              `module.step`
    digits_bf16.safetensors   the weights in BF16, keys prefixed `model.`
    y_bf16.npy                onnxruntime on digits x.npy with the BF16-rounded weights
    digits.npz                the weights, keys prefixed `backbone.`, conv2.bias saved as [16, 1, 1]
    views_*.pt, views.pkl     reader edge cases (strides, offsets, shared storages, byte orders, type
                              sizes, dtypes, protocol 4, deflate, _load_from_bytes); see VIEWS
    hostile/*.pt              pickles that would run code or exhaust a naive reader, both layouts
    lora/adapter_model.safetensors, lora/adapter_config.json
                              a PEFT LoRA adapter (r 4, alpha 8) for fc1
    y_lora.npy, y_lora_half.npy
                              numpy's digits CNN on x.npy with fc1 merged (scale 1 and 0.5)
"""

import collections
import io
import json
import os
import pickle
import struct
import subprocess
import sys
import tempfile
import types
import zipfile
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402
from safetensors.numpy import save_file  # noqa: E402

OUT = Path(__file__).resolve().parent
DIGITS = OUT.parent / "digits"
sys.path.insert(0, str(DIGITS))
import make as digits  # noqa: E402  (the digits model's numpy forward pass)

MAGIC_NUMBER = 0x1950A86A20F9469CFC6C
PROTOCOL_VERSION = 1001
# The marker a hostile pickle would create if it were run (relative to the working directory).
MARKER = "ember-pickle-was-executed"

# ---------------------------------------------------------------- stand-in torch

def _module(name):
    m = types.ModuleType(name)
    sys.modules[name] = m
    return m


def _global_fn(module, name):
    def fn(*args):
        raise RuntimeError(f"{module}.{name} is a stand-in and is never called")
    fn.__module__, fn.__name__, fn.__qualname__ = module.__name__, name, name
    setattr(module, name, fn)
    return fn


torch = _module("torch")
torch_utils = _module("torch._utils")
torch_storage = _module("torch.storage")
torch_serialization = _module("torch.serialization")
torch.__path__ = []  # a package, so that `torch._utils` imports
_rebuild_tensor_v2 = _global_fn(torch_utils, "_rebuild_tensor_v2")
_rebuild_tensor_v3 = _global_fn(torch_utils, "_rebuild_tensor_v3")
_rebuild_parameter = _global_fn(torch_utils, "_rebuild_parameter")
_load_from_bytes = _global_fn(torch_storage, "_load_from_bytes")

STORAGE_CLASSES = {}
for _name, _fmt in [("FloatStorage", "f4"), ("HalfStorage", "f2"), ("BFloat16Storage", "bf16"),
                    ("DoubleStorage", "f8"), ("LongStorage", "i8"), ("CharStorage", "i1"),
                    ("BoolStorage", "b1")]:
    _cls = type(_name, (), {"__module__": "torch"})
    setattr(torch, _name, _cls)
    STORAGE_CLASSES[_fmt] = _cls
UntypedStorage = type("UntypedStorage", (), {"__module__": "torch.storage"})
torch_storage.UntypedStorage = UntypedStorage


class _Dtype:
    """A torch dtype: pickles as the global torch.<name>."""

    def __init__(self, name):
        self.name = name
        self.__module__ = "torch"
        setattr(torch, name, self)

    def __reduce__(self):
        return self.name


uint16 = _Dtype("uint16")


class Storage:
    """A storage: `fmt` is a little-endian numpy dtype string ('<f4', '<i8', ...) or 'bf16';
    `untyped` saves it as torch.UntypedStorage (what `_rebuild_tensor_v3` tensors use)."""

    def __init__(self, values, fmt, untyped=False):
        if fmt == "bf16":
            arr = np.asarray(values, dtype=np.float32).astype(ml_dtypes.bfloat16)
            self.cls_key = "bf16"
        else:
            arr = np.asarray(values, dtype=np.dtype(fmt))
            self.cls_key = fmt.lstrip("<")
        self.data = arr.tobytes()
        self.itemsize = arr.dtype.itemsize
        self.numel = arr.size
        self.untyped = untyped
        self.key = None

    def storage_type(self):
        return UntypedStorage if self.untyped else STORAGE_CLASSES[self.cls_key]

    def saved_numel(self):
        return len(self.data) if self.untyped else self.numel


class Tensor:
    """A tensor view of a storage, pickled as torch's `Tensor.__reduce_ex__` does."""

    def __init__(self, storage, size, stride=None, offset=0, dtype=None):
        if stride is None:
            stride, step = [], 1
            for d in reversed(size):
                stride.insert(0, step)
                step *= d
        self.args = (storage, offset, tuple(size), tuple(stride))
        self.dtype = dtype

    def __reduce_ex__(self, protocol):
        if self.dtype is not None:
            return (_rebuild_tensor_v3, self.args + (False, collections.OrderedDict(), self.dtype))
        return (_rebuild_tensor_v2, self.args + (False, collections.OrderedDict()))


class Parameter:
    def __init__(self, tensor):
        self.tensor = tensor

    def __reduce_ex__(self, protocol):
        return (_rebuild_parameter, (self.tensor, True, collections.OrderedDict()))


def state_dict(tensors, modules):
    """An OrderedDict with `_metadata`, as `nn.Module.state_dict()` returns it."""
    sd = collections.OrderedDict(tensors)
    sd._metadata = collections.OrderedDict((m, {"version": 1}) for m in [""] + modules)
    return sd


# ---------------------------------------------------------------- the two torch.save layouts

def _pickle_object(obj, protocol, pid):
    buf = io.BytesIO()
    p = pickle.Pickler(buf, protocol=protocol)
    p.persistent_id = pid
    p.dump(obj)
    return buf.getvalue()


def _aligned_write(zf, name, data, compress):
    """A stored record whose data starts on a 64-byte boundary, padded with an `FB` extra field."""
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED if compress else zipfile.ZIP_STORED
    header = 30 + len(name.encode())
    offset = zf.fp.tell()
    pad = (-(offset + header + 4)) % 64
    info.extra = b"FB" + struct.pack("<H", pad) + b"Z" * pad
    zf.writestr(info, data)


def save_zip(obj, path, protocol=2, byteorder="little", compress=False, root="archive"):
    """`torch.save(obj, path)`: data.pkl, byteorder, data/<key>, version."""
    storages = []

    def pid(o):
        if isinstance(o, Storage):
            if o.key is None:
                o.key = str(len(storages))
                storages.append(o)
            return ("storage", o.storage_type(), o.key, "cpu", o.saved_numel())
        return None

    data_pkl = _pickle_object(obj, protocol, pid)
    with zipfile.ZipFile(path, "w") as zf:
        _aligned_write(zf, f"{root}/data.pkl", data_pkl, compress)
        if byteorder is not None:
            _aligned_write(zf, f"{root}/byteorder", byteorder.encode(), compress)
        for s in sorted(storages, key=lambda s: s.key):
            _aligned_write(zf, f"{root}/data/{s.key}", s.data, compress)
        _aligned_write(zf, f"{root}/version", b"3\n", compress)
        _aligned_write(zf, f"{root}/.data/serialization_id", b"0" * 40, compress)
    for s in storages:
        s.key = None


def legacy_bytes(obj, protocol=2, little_endian=True, long_size=8, big_endian_data=False,
                 views=None):
    """`torch.save(obj, f, _use_new_zipfile_serialization=False)`. Keys are `str(storage._cdata)`
    (pointer-like numbers). `views` maps a Storage to (root Storage, offset, size): a pre-0.4 storage
    view, saved with its root's key and view metadata."""
    storages = {}
    views = views or {}

    def pid(o):
        if isinstance(o, Storage):
            if o in views:
                root, offset, size = views[o]
                storages[_cdata(root)] = root
                return ("storage", root.storage_type(), _cdata(root), "cpu", root.saved_numel(),
                        (_cdata(o), offset, size))
            storages[_cdata(o)] = o
            return ("storage", o.storage_type(), _cdata(o), "cpu", o.saved_numel(), None)
        return None

    out = io.BytesIO()
    out.write(pickle.dumps(MAGIC_NUMBER, protocol=protocol))
    out.write(pickle.dumps(PROTOCOL_VERSION, protocol=protocol))
    out.write(pickle.dumps({"protocol_version": PROTOCOL_VERSION, "little_endian": little_endian,
                            "type_sizes": {"short": 2, "int": 4, "long": long_size}},
                           protocol=protocol))
    out.write(_pickle_object(obj, protocol, pid))
    keys = sorted(storages)
    out.write(pickle.dumps(keys, protocol=protocol))
    for k in keys:
        s = storages[k]
        numel = s.saved_numel()
        out.write(struct.pack(">q" if big_endian_data else "<q", numel))
        out.write(s.data)
    return out.getvalue()


_next_cdata = [94_000_000_000_000]


def _cdata(s):
    """`str(storage._cdata)`: a pointer-like number, fixed per storage object."""
    if getattr(s, "cdata", None) is None:
        s.cdata = str(_next_cdata[0])
        _next_cdata[0] += 4096
    return s.cdata


# ---------------------------------------------------------------- the digits weights

def digits_weights():
    """The trained weights, renamed from the ONNX model's conv1.w to PyTorch's conv1.weight."""
    model = onnx.load(DIGITS / "model.onnx")
    return {init.name.replace(".w", ".weight").replace(".b", ".bias"):
            numpy_helper.to_array(init).astype(np.float32) for init in model.graph.initializer}


def renamed_graph(weights):
    """The digits model with PyTorch-style initializer names and `weights` as their values."""
    model = onnx.load(DIGITS / "model.onnx")
    rename = {i.name: i.name.replace(".w", ".weight").replace(".b", ".bias")
              for i in model.graph.initializer}
    for node in model.graph.node:
        node.input[:] = [rename.get(n, n) for n in node.input]
    inits = [numpy_helper.from_array(weights[rename[i.name]], rename[i.name])
             for i in model.graph.initializer]
    del model.graph.initializer[:]
    model.graph.initializer.extend(inits)
    model.doc_string = "digits CNN for checkpoint binding tests; see tests/models/checkpoints/make.py"
    return model


def run_ort(model, x):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess.run(["probs"], {"input": x})[0]


def write_digits(w):
    rng = np.random.default_rng(14)
    random = {k: rng.normal(0.0, 0.5, size=v.shape).astype(np.float32) for k, v in w.items()}
    model = renamed_graph(random)
    onnx.checker.check_model(model, full_check=True)
    (OUT / "digits_random.onnx").write_bytes(model.SerializeToString())

    # Zip layout: fc1.weight a transposed view of a [64, 32] storage, the two conv biases views of one
    # shared storage, fc2.weight an nn.Parameter.
    fc1_t = Storage(w["fc1.weight"].T.copy(), "<f4")
    biases = Storage(np.concatenate([w["conv1.bias"], w["conv2.bias"]]), "<f4")
    plain = {k: Tensor(Storage(v, "<f4"), v.shape) for k, v in w.items()}
    plain["fc1.weight"] = Tensor(fc1_t, (32, 64), stride=(1, 32))
    plain["conv1.bias"] = Tensor(biases, (8,), offset=0)
    plain["conv2.bias"] = Tensor(biases, (16,), offset=8)
    plain["fc2.weight"] = Parameter(plain["fc2.weight"])
    modules = ["conv1", "conv2", "fc1", "fc2"]
    save_zip(state_dict(plain, modules), OUT / "digits_zip.pt")

    # Legacy layout, as a DataParallel model saves it (`module.` prefix), with an int64 counter.
    legacy = {f"module.{k}": Tensor(Storage(v, "<f4"), v.shape) for k, v in w.items()}
    legacy["module.step"] = Tensor(Storage([1000], "<i8"), ())
    (OUT / "digits_legacy.pt").write_bytes(
        legacy_bytes(state_dict(legacy, ["module"] + [f"module.{m}" for m in modules])))

    # BF16 safetensors and its goldens.
    bf16 = {k: v.astype(ml_dtypes.bfloat16) for k, v in w.items()}
    save_file({f"model.{k}": v for k, v in bf16.items()}, OUT / "digits_bf16.safetensors")
    x = np.load(DIGITS / "x.npy")
    rounded = renamed_graph({k: v.astype(np.float32) for k, v in bf16.items()})
    np.save(OUT / "y_bf16.npy", run_ort(rounded, x).astype(np.float32))

    # npz, keys under `backbone.`, conv2.bias with size-1 dims.
    npz = {f"backbone.{k}": v for k, v in w.items()}
    npz["backbone.conv2.bias"] = w["conv2.bias"].reshape(16, 1, 1)
    with open(OUT / "digits.npz", "wb") as f:
        np.savez(f, **npz)
    _fix_zip_times(OUT / "digits.npz")

    # fc1 as MatMul with a [64, 32] weight, for LoRA's transpose rule.
    mm = renamed_graph(w)
    nodes = list(mm.graph.node)
    i = next(k for k, n in enumerate(nodes) if n.name == "fc1")
    for init in mm.graph.initializer:
        if init.name == "fc1.weight":
            init.CopyFrom(numpy_helper.from_array(w["fc1.weight"].T.copy(), "fc1.weight"))
    matmul = helper.make_node("MatMul", ["flat", "fc1.weight"], ["fc1_mm"], name="fc1")
    add = helper.make_node("Add", ["fc1_mm", "fc1.bias"], ["fc1"], name="fc1_bias")
    nodes[i:i + 1] = [matmul, add]
    del mm.graph.node[:]
    mm.graph.node.extend(nodes)
    onnx.checker.check_model(mm, full_check=True)
    y_mm = run_ort(mm, x)
    assert np.abs(y_mm - np.load(DIGITS / "y.npy")).max() < 1e-5
    (OUT / "digits_matmul.onnx").write_bytes(mm.SerializeToString())
    return x


def _fix_zip_times(path):
    """np.savez stamps the current time into the zip: rewrite it with a fixed one."""
    with zipfile.ZipFile(path) as zf:
        entries = [(i.filename, zf.read(i.filename)) for i in zf.infolist()]
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in entries:
            zf.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data)


# ---------------------------------------------------------------- LoRA

def write_lora(w, x):
    rng = np.random.default_rng(7)
    r, alpha = 4, 8
    a = rng.normal(0, 0.2, size=(r, 64)).astype(np.float32)
    b = rng.normal(0, 0.2, size=(32, r)).astype(np.float32)
    (OUT / "lora").mkdir(exist_ok=True)
    save_file({"base_model.model.fc1.lora_A.weight": a, "base_model.model.fc1.lora_B.weight": b},
              OUT / "lora" / "adapter_model.safetensors")
    config = {"peft_type": "LORA", "task_type": None, "r": r, "lora_alpha": alpha,
              "lora_dropout": 0.0, "target_modules": ["fc1"], "fan_in_fan_out": False,
              "bias": "none", "use_rslora": False, "base_model_name_or_path": "ember-digits-cnn"}
    (OUT / "lora" / "adapter_config.json").write_text(json.dumps(config, indent=2) + "\n")
    for scale, name in [(1.0, "y_lora.npy"), (0.5, "y_lora_half.npy")]:
        p = {k.replace(".weight", ".w").replace(".bias", ".b"): v.astype(np.float64)
             for k, v in w.items()}
        merged = p["fc1.w"] + scale * (alpha / r) * (b.astype(np.float64) @ a.astype(np.float64))
        p["fc1.w"] = merged.astype(np.float32).astype(np.float64)
        np.save(OUT / name, digits.forward(p, x.astype(np.float64)).astype(np.float32))


# ---------------------------------------------------------------- reader edge cases

def views_object(legacy_views=False):
    """The tensors every views file holds (names under `model.`), in a training-checkpoint dict.
    Expected values: see converter/tests/converter/checkpoint_readers.rs."""
    shared = Storage(np.arange(10) * 0.5, "<f4")
    t = {
        "f32.transposed": Tensor(Storage(np.arange(12), "<f4"), (4, 3), stride=(1, 4)),
        "f32.offset_a": Tensor(shared, (3,), offset=2),
        "f32.offset_b": Tensor(shared, (2, 3), offset=4),
        "f32.expanded": Tensor(Storage([7.0], "<f4"), (2, 3), stride=(0, 0)),
        "f32.scalar": Tensor(Storage([1.0, 42.0], "<f4"), (), offset=1),
        "f16.half": Tensor(Storage([1.5, -2.25, 65504, 0], "<f2"), (4,)),
        "bf16.b": Tensor(Storage([1.0, -3.5, 0.15625], "bf16"), (3,)),
        "f64.d": Tensor(Storage([0.1, -1e300], "<f8"), (2,)),
        "i64.steps": Tensor(Storage([-1, 0, 1_000_000], "<i8"), (3,)),
        "i8.q": Tensor(Storage([-128, 0, 127], "<i1"), (3,)),
        "bool.mask": Tensor(Storage([1, 0, 1], "<b1"), (3,)),
        "u16.v3": Tensor(Storage([1, 65535, 256], "<u2", untyped=True), (3,), dtype=uint16),
        "param.p": Parameter(Tensor(Storage([3.0, 4.0], "<f4"), (2,))),
    }
    views = {}
    if legacy_views:
        sview = Storage(np.arange(10)[5:9] * 0.5, "<f4")
        views[sview] = (shared, 5, 4)
        t["f32.storage_view"] = Tensor(sview, (2,), offset=1)
    return {"model": state_dict(t, []), "epoch": 3, "optimizer": {"lr": 0.1}}, views


def big_endian_copy(obj):
    """The same object with every storage's bytes big-endian."""
    seen = {}
    for s in _storages(obj):
        if id(s) not in seen:
            swap = s.itemsize if not s.untyped else 2
            data = np.frombuffer(s.data, dtype=f">u{swap}" if swap > 1 else "u1")
            if swap > 1:
                s.data = data.byteswap().tobytes()
            seen[id(s)] = s
    return obj


def _storages(obj):
    if isinstance(obj, dict):
        for v in obj.values():
            yield from _storages(v)
    elif isinstance(obj, Tensor):
        yield obj.args[0]
    elif isinstance(obj, Parameter):
        yield from _storages(obj.tensor)


def write_views():
    obj, _ = views_object()
    save_zip(obj, OUT / "views_le.pt")
    obj, _ = views_object()
    save_zip(obj, OUT / "views_p4.pt", protocol=4, compress=True, root="views_p4")
    obj, _ = views_object()
    save_zip(big_endian_copy(obj), OUT / "views_be.pt", byteorder="big")
    obj, views = views_object(legacy_views=True)
    (OUT / "views_legacy.pt").write_bytes(legacy_bytes(obj, views=views))
    obj, views = views_object(legacy_views=True)
    (OUT / "views_legacy_be.pt").write_bytes(
        legacy_bytes(big_endian_copy(obj), little_endian=False, big_endian_data=True, views=views))
    # PyTorch before 0.4 on Windows: C long is 4 bytes, and so are LongStorage's elements.
    obj, views = views_object(legacy_views=True)
    for s in _storages(obj):
        if s.cls_key == "i8":
            s.data = np.frombuffer(s.data, "<i8").astype("<i4").tobytes()
            s.itemsize = 4
    (OUT / "views_legacy_long4.pt").write_bytes(legacy_bytes(obj, long_size=4, views=views))
    # A state dict pickled with plain pickle: storages reduce to _load_from_bytes(<legacy file>).
    inline = InlineStorage(np.arange(6), "<f4")
    plain = {"w": Tensor(inline, (2, 3)), "wt": Tensor(inline, (3, 2), stride=(1, 3))}
    (OUT / "views.pkl").write_bytes(pickle.dumps(collections.OrderedDict(plain), protocol=2))


class InlineStorage(Storage):
    """A storage pickled by `UntypedStorage.__reduce__`: a legacy-layout file of itself."""

    def __reduce__(self):
        plain = Storage(np.frombuffer(self.data, "<f4"), "<f4")
        return (_load_from_bytes, (legacy_bytes(plain),))


# ---------------------------------------------------------------- hostile pickles

def _global_call(module, name, arg, proto4=False):
    """Opcodes pushing module.name(arg)."""
    if proto4:
        g = (b"\x8c" + bytes([len(module)]) + module.encode() + b"\x8c" + bytes([len(name)])
             + name.encode() + b"\x93")
    else:
        g = b"c" + module.encode() + b"\n" + name.encode() + b"\n"
    a = arg.encode()
    return g + b"X" + struct.pack("<I", len(a)) + a + b"\x85R"


SHELL = f"touch {MARKER}"
EVAL = f"__import__('os').system('touch {MARKER}')"


def hostile_pickles():
    """name -> (data.pkl bytes, what Ember's error must name). Each runs `touch MARKER` if loaded
    with Python's pickle (the budget attacks come first, then the call)."""
    system = _global_call("os", "system", SHELL)
    d = {}
    d["os_system"] = (b"\x80\x02}X\x01\x00\x00\x00w" + system + b"s.", "os.system")
    d["builtins_eval"] = (b"\x80\x02}X\x01\x00\x00\x00w" + _global_call("builtins", "eval", EVAL)
                          + b"s.", "builtins.eval")
    d["posix_system"] = (b"\x80\x02}X\x01\x00\x00\x00w" + _global_call("posix", "system", SHELL)
                         + b"s.", "posix.system")
    # torch.serialization imports os, so torch's own unpickler resolves this dotted name.
    d["lookalike"] = (b"\x80\x04}X\x01\x00\x00\x00w"
                      + _global_call("torch.serialization", "os.system", SHELL, proto4=True)
                      + b"s.", "torch.serialization.os.system")
    # 300 lists nested in each other, then the call.
    d["deep_nesting"] = (b"\x80\x02" + b"]" * 300 + b"a" * 299 + b"0" + system + b".",
                         "max_depth")
    # A tensor claiming 2^48 elements of a 1-element storage (expanded with zero strides).
    huge = (b"\x80\x02}X\x01\x00\x00\x00w"
            b"ctorch._utils\n_rebuild_tensor_v2\n("
            b"(X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuK\x01tQ"
            b"K\x00" + b"\x8a\x03\x00\x00\x01" * 3 + b"\x87K\x00K\x00K\x00\x87\x89"
            b"ccollections\nOrderedDict\n)RtRs" + b"0" + system + b".")
    d["huge_size"] = (huge, "max_elements")
    # Billion laughs: list i holds list i-1 twice, 40 times over (2^40 leaves), then the call.
    bomb = b"\x80\x02]q\x00"
    for i in range(1, 41):
        bomb += b"(h" + bytes([i - 1]) + b"h" + bytes([i - 1]) + b"lq" + bytes([i])
    bomb += b"0" + system + b"."
    d["memo_bomb"] = (bomb, "max_visits")
    return d


def write_hostile():
    out = OUT / "hostile"
    out.mkdir(exist_ok=True)
    expect = {}
    for name, (pkl, must_name) in hostile_pickles().items():
        assert len(pkl) <= 1024, (name, len(pkl))
        _check_pickle_runs_code(pkl)
        with zipfile.ZipFile(out / f"{name}_zip.pt", "w") as zf:
            _aligned_write(zf, "archive/data.pkl", pkl, False)
            _aligned_write(zf, "archive/byteorder", b"little", False)
            _aligned_write(zf, "archive/version", b"3\n", False)
        head = (pickle.dumps(MAGIC_NUMBER, protocol=2) + pickle.dumps(PROTOCOL_VERSION, protocol=2)
                + pickle.dumps({"protocol_version": PROTOCOL_VERSION, "little_endian": True,
                                "type_sizes": {"short": 2, "int": 4, "long": 8}}, protocol=2))
        (out / f"{name}_legacy.pt").write_bytes(head + pkl + pickle.dumps([], protocol=2))
        expect[name] = must_name
    # A storage whose nested legacy file calls os.system (plain pickle, _load_from_bytes).
    inner = (pickle.dumps(MAGIC_NUMBER, protocol=2) + pickle.dumps(PROTOCOL_VERSION, protocol=2)
             + pickle.dumps({"little_endian": True}, protocol=2) + b"\x80\x02" + _global_call(
                 "os", "system", SHELL) + b".")
    nested = (b"\x80\x02ccollections\nOrderedDict\n)R(X\x01\x00\x00\x00w"
              b"ctorch._utils\n_rebuild_tensor_v2\n("
              b"ctorch.storage\n_load_from_bytes\nC" + bytes([len(inner)]) + inner + b"\x85R"
              b"K\x00K\x01\x85K\x01\x85\x89ccollections\nOrderedDict\n)RtRu.")
    _check_pickle_runs_code(nested)
    (out / "load_from_bytes.pkl").write_bytes(nested)
    expect["load_from_bytes"] = "os.system"
    (out / "expected.json").write_text(json.dumps(expect, indent=2, sort_keys=True) + "\n")
    # No code, just a lie: a 2^40-element storage (and tensor) whose data is one float.
    big = 1 << 40
    lie = Storage([1.0], "<f4")
    obj = {"w": Tensor(lie, (big,))}
    claim = lie.saved_numel
    lie.saved_numel = lambda: big
    save_zip(obj, out / "huge_storage_zip.pt")
    (out / "huge_storage_legacy.pt").write_bytes(legacy_bytes(obj))
    lie.saved_numel = claim


CHILD = """
import io, os, pickle, sys, types
def mod(name):
    m = types.ModuleType(name)
    sys.modules[name] = m
    return m
torch = mod("torch")
torch.__path__ = []
torch.FloatStorage = type("FloatStorage", (), {})
mod("torch._utils")._rebuild_tensor_v2 = lambda *args: None
mod("torch.serialization").os = os
class Unpickler(pickle.Unpickler):
    def persistent_load(self, pid):
        return None
def load_from_bytes(b):
    f = io.BytesIO(b)
    for _ in range(4):
        Unpickler(f).load()
mod("torch.storage")._load_from_bytes = load_from_bytes
try:
    Unpickler(io.BytesIO(sys.stdin.buffer.read())).load()
except Exception:
    pass
"""


def _check_pickle_runs_code(pkl):
    """Proves that a hostile pickle is what it claims: loaded by Python's pickle (with stand-ins for
    the torch functions it names, which do nothing) in a child process in a scratch folder, it
    creates the marker."""
    with tempfile.TemporaryDirectory() as d:
        subprocess.run([sys.executable, "-c", CHILD], input=pkl, cwd=d, timeout=60,
                       capture_output=True, check=True)
        if not (Path(d) / MARKER).exists():
            raise SystemExit("a hostile pickle did not run its payload under Python's pickle")


# ---------------------------------------------------------------- main

def main():
    w = digits_weights()
    x = write_digits(w)
    write_lora(w, x)
    write_views()
    write_hostile()
    total = 0
    for p in sorted(OUT.rglob("*")):
        if p.is_file() and p.suffix not in (".py", ".md"):
            total += p.stat().st_size
    print(f"wrote {total} bytes of test material under {OUT}")


if __name__ == "__main__":
    main()
