//! What PyTorch's pickles mean: the globals a `state_dict` uses ([`TorchGlobal`]), the storages
//! its persistent ids name, and the tensors its `_rebuild_*` calls describe. Shared by the zip and
//! legacy layouts, which differ only in where the storages' bytes are.
//!
//! Tensors are collected from the pickled object by walking dicts (and lists and tuples), joining
//! keys with dots: a training checkpoint `{"model": {"fc.weight": ...}, "epoch": 3}` gives
//! `model.fc.weight`; values that are not tensors are skipped.

use std::collections::HashMap;
use std::rc::Rc;

use super::gather::View;
use super::pickle::{kind, Globals, Heap, Node, Pickle, Value};
use super::{ElementType, Limits};
use crate::ConvertError;

/// The globals of a PyTorch checkpoint that this reader knows. Everything else is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TorchGlobal {
    /// `collections.OrderedDict`: the state dict itself.
    OrderedDict,
    /// `torch._utils._rebuild_tensor` (storage, offset, size, stride).
    RebuildTensor,
    /// `torch._utils._rebuild_tensor_v2` (storage, offset, size, stride, requires_grad, hooks[,
    /// metadata]).
    RebuildTensorV2,
    /// `torch._utils._rebuild_tensor_v3`: v2 over an untyped storage, plus the dtype.
    RebuildTensorV3,
    /// `torch._utils._rebuild_parameter` (tensor, requires_grad, hooks).
    RebuildParameter,
    /// `torch._utils._rebuild_parameter_with_state` (tensor, requires_grad, hooks, state).
    RebuildParameterWithState,
    /// `torch._tensor._rebuild_from_type_v2` (rebuild function, type, args, state).
    RebuildFromTypeV2,
    /// `torch.storage._load_from_bytes`: a storage pickled without `torch.save`'s persistent ids,
    /// as a nested legacy-layout file.
    LoadFromBytes,
    /// `_codecs.encode`: how protocol 2 pickles `bytes`.
    CodecsEncode,
    /// A storage class (`torch.FloatStorage`, ...); `None` for `torch.UntypedStorage`.
    Storage(Option<ElementType>),
    /// A dtype (`torch.float32`, ...), an argument of `_rebuild_tensor_v3`.
    Dtype(ElementType),
    /// `torch.Tensor` or `torch.nn.parameter.Parameter`, an argument of `_rebuild_from_type_v2`.
    TensorType,
}

/// The legacy storage classes and their element types.
const STORAGES: &[(&str, ElementType)] = &[
    ("DoubleStorage", ElementType::F64),
    ("FloatStorage", ElementType::F32),
    ("HalfStorage", ElementType::F16),
    ("BFloat16Storage", ElementType::BF16),
    ("LongStorage", ElementType::I64),
    ("IntStorage", ElementType::I32),
    ("ShortStorage", ElementType::I16),
    ("CharStorage", ElementType::I8),
    ("ByteStorage", ElementType::U8),
    ("BoolStorage", ElementType::Bool),
    ("ComplexFloatStorage", ElementType::C64),
    ("ComplexDoubleStorage", ElementType::C128),
];

/// `torch.<name>` dtypes and their element types.
const DTYPES: &[(&str, ElementType)] = &[
    ("float32", ElementType::F32),
    ("float", ElementType::F32),
    ("float64", ElementType::F64),
    ("double", ElementType::F64),
    ("float16", ElementType::F16),
    ("half", ElementType::F16),
    ("bfloat16", ElementType::BF16),
    ("int8", ElementType::I8),
    ("uint8", ElementType::U8),
    ("int16", ElementType::I16),
    ("short", ElementType::I16),
    ("int32", ElementType::I32),
    ("int", ElementType::I32),
    ("int64", ElementType::I64),
    ("long", ElementType::I64),
    ("bool", ElementType::Bool),
    ("uint16", ElementType::U16),
    ("uint32", ElementType::U32),
    ("uint64", ElementType::U64),
    ("float8_e4m3fn", ElementType::F8E4M3),
    ("float8_e4m3fnuz", ElementType::F8E4M3Fnuz),
    ("float8_e5m2", ElementType::F8E5M2),
    ("float8_e5m2fnuz", ElementType::F8E5M2Fnuz),
    ("float8_e8m0fnu", ElementType::F8E8M0),
    ("complex64", ElementType::C64),
    ("cfloat", ElementType::C64),
    ("complex128", ElementType::C128),
    ("cdouble", ElementType::C128),
];

impl Globals for TorchGlobal {
    fn resolve(module: &str, name: &str) -> Option<Self> {
        use TorchGlobal::*;
        Some(match (module, name) {
            ("collections", "OrderedDict") => OrderedDict,
            ("torch._utils", "_rebuild_tensor") => RebuildTensor,
            ("torch._utils", "_rebuild_tensor_v2") => RebuildTensorV2,
            ("torch._utils", "_rebuild_tensor_v3") => RebuildTensorV3,
            ("torch._utils", "_rebuild_parameter") => RebuildParameter,
            ("torch._utils", "_rebuild_parameter_with_state") => RebuildParameterWithState,
            // torch.load maps the module `torch.tensor` to `torch._tensor` for old files.
            ("torch._tensor" | "torch.tensor", "_rebuild_from_type_v2") => RebuildFromTypeV2,
            ("torch.storage", "_load_from_bytes") => LoadFromBytes,
            ("_codecs", "encode") => CodecsEncode,
            ("torch" | "torch.storage", "UntypedStorage") => Storage(None),
            ("torch" | "torch.cuda", s) if s.ends_with("Storage") => {
                Storage(Some(STORAGES.iter().find(|(n, _)| *n == s)?.1))
            }
            ("torch", "Tensor") | ("torch.nn.parameter", "Parameter") => TensorType,
            ("torch", d) => Dtype(DTYPES.iter().find(|(n, _)| *n == d)?.1),
            _ => return None,
        })
    }

    fn is_dict(self) -> bool {
        self == TorchGlobal::OrderedDict
    }

    fn check_call(self, heap: &Heap<Self>, args: &V, limits: &Limits) -> Result<(), String> {
        use TorchGlobal::*;
        if !matches!(self, RebuildTensor | RebuildTensorV2 | RebuildTensorV3) {
            return Ok(());
        }
        // Malformed arguments are reported when the tensor is collected.
        let Some(size) = heap.tuple(args).and_then(|items| items.get(2)) else {
            return Ok(());
        };
        let Ok(shape) = ints(heap, size, "size") else {
            return Ok(());
        };
        if shape.len() > limits.max_rank {
            return Err(format!(
                "a tensor of {} dimensions, over the budget of {} (Limits::max_rank)",
                shape.len(),
                limits.max_rank
            ));
        }
        match super::numel(&shape) {
            Some(n) if n as u64 <= limits.max_elements => Ok(()),
            _ => Err(format!(
                "a tensor of size {shape:?} claims more elements than the budget of {} \
                 (Limits::max_elements)",
                limits.max_elements
            )),
        }
    }

    fn accepted() -> &'static str {
        "collections.OrderedDict, torch._utils._rebuild_tensor, _rebuild_tensor_v2, \
         _rebuild_tensor_v3, _rebuild_parameter, _rebuild_parameter_with_state, \
         torch._tensor._rebuild_from_type_v2, torch.storage._load_from_bytes, _codecs.encode, \
         torch.Tensor, torch.nn.parameter.Parameter, the torch.*Storage classes and the torch dtypes"
    }
}

pub(crate) type TorchPickle = Pickle<TorchGlobal>;
type V = Value<TorchGlobal>;

/// Where a tensor's storage comes from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum StorageId {
    /// A persistent id's key (`data/<key>` in the zip layout, the storage section in the legacy
    /// one), and the (offset, size) in elements of the legacy layout's storage views.
    Key(Rc<str>, Option<(u64, u64)>),
    /// The `_load_from_bytes` call node holding the storage as a nested legacy file.
    Inline(usize),
}

/// A storage as a persistent id describes it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct StorageClaim {
    /// Element type; `None` for an untyped (byte) storage.
    pub dtype: Option<ElementType>,
    /// Elements the file says it holds.
    pub numel: u64,
    /// Legacy views of a root storage: (view key, offset, size) in elements.
    pub view: Option<(Rc<str>, u64, u64)>,
}

impl StorageClaim {
    /// The element type of the storage's bytes (u8 for an untyped storage).
    pub fn element(&self) -> ElementType {
        self.dtype.unwrap_or(ElementType::U8)
    }
}

/// A tensor found in the pickle, before its storage is read.
#[derive(Clone, Debug)]
pub(crate) struct TensorRef {
    pub storage: StorageId,
    /// `_rebuild_tensor_v3`'s dtype; `None` for the storage's own.
    pub dtype: Option<ElementType>,
    pub view: View,
}

fn err(msg: impl Into<String>) -> ConvertError {
    ConvertError::checkpoint(msg)
}

fn as_usize(v: &V, what: &str) -> Result<usize, ConvertError> {
    match v {
        Value::Int(i) => usize::try_from(*i).map_err(|_| err(format!("{what} is {i}"))),
        _ => Err(err(format!("{what} is not an int"))),
    }
}

fn ints(heap: &Heap<TorchGlobal>, v: &V, what: &str) -> Result<Vec<usize>, ConvertError> {
    let items = match v {
        Value::Node(id) => match heap.node(*id) {
            Node::Tuple(items) | Node::List(items) => items,
            _ => return Err(err(format!("{what} is a {}, not a tuple", kind(v, heap)))),
        },
        _ => return Err(err(format!("{what} is a {}, not a tuple", kind(v, heap)))),
    };
    items.iter().map(|i| as_usize(i, what)).collect()
}

/// Reads the persistent id `pid` of a storage.
fn claim(heap: &Heap<TorchGlobal>, pid: &V) -> Result<(Rc<str>, StorageClaim), ConvertError> {
    let Some(items) = heap.tuple(pid) else {
        return Err(err(format!(
            "a persistent id is a {}, not torch.save's tuple",
            kind(pid, heap)
        )));
    };
    match items.first() {
        Some(Value::Str(s)) if &**s == "storage" => {}
        Some(Value::Str(s)) if &**s == "module" => {
            return Err(err(
                "the file pickles a whole nn.Module class (torch.save(model)); Ember reads \
                 state dicts: save model.state_dict() instead",
            ))
        }
        _ => return Err(err("a persistent id that is not a ('storage', ...) tuple")),
    }
    let [_, ty, key, _location, numel, rest @ ..] = items else {
        return Err(err(format!(
            "a storage persistent id has {} fields, expected 5 or 6",
            items.len()
        )));
    };
    let Value::Global(TorchGlobal::Storage(dtype)) = ty else {
        return Err(err(format!(
            "a storage persistent id names a {}, not a storage class",
            kind(ty, heap)
        )));
    };
    let Value::Str(key) = key else {
        return Err(err("a storage key that is not a string"));
    };
    let numel = as_usize(numel, "a storage's element count")? as u64;
    let view = match rest {
        [] | [Value::None] => None,
        [v] => {
            let Some([Value::Str(vk), off, size]) = heap.tuple(v) else {
                return Err(err("a storage view that is not (key, offset, size)"));
            };
            Some((
                vk.clone(),
                as_usize(off, "a storage view offset")? as u64,
                as_usize(size, "a storage view size")? as u64,
            ))
        }
        _ => return Err(err("a storage persistent id with extra fields")),
    };
    Ok((
        key.clone(),
        StorageClaim {
            dtype: *dtype,
            numel,
            view,
        },
    ))
}

/// Every storage the pickle's persistent ids name, by key. Two ids naming one key must agree.
pub(crate) fn claims(p: &TorchPickle) -> Result<HashMap<Rc<str>, StorageClaim>, ConvertError> {
    let mut out: HashMap<Rc<str>, StorageClaim> = HashMap::new();
    for id in 0..p.heap.len() {
        if let Node::Persistent(pid) = p.heap.node(id) {
            let (key, c) = claim(&p.heap, pid)?;
            match out.get(&key) {
                Some(prev) if prev.dtype != c.dtype || prev.numel != c.numel => {
                    return Err(err(format!(
                        "storage \"{key}\" is described twice, differently ({prev:?} and {c:?})"
                    )))
                }
                _ => {
                    out.insert(key, c);
                }
            }
        }
    }
    Ok(out)
}

/// The tensors of a pickled object, and notices about what was skipped.
pub(crate) struct Found {
    pub tensors: Vec<(String, TensorRef)>,
    pub notices: Vec<String>,
}

/// Walks the pickled object and collects its tensors.
pub(crate) fn collect(p: &TorchPickle, limits: &Limits) -> Result<Found, ConvertError> {
    let mut w = Walker {
        heap: &p.heap,
        limits,
        visits: 0,
        found: Found {
            tensors: Vec::new(),
            notices: Vec::new(),
        },
        skipped: 0,
    };
    w.walk(&p.root, String::new(), 0)?;
    if w.skipped > 0 {
        let n = w.skipped;
        w.found.notices.push(format!(
            "{n} value{} that {} not tensors (numbers, strings, storages) skipped",
            if n == 1 { "" } else { "s" },
            if n == 1 { "is" } else { "are" }
        ));
    }
    if w.found.tensors.len() > limits.max_tensors {
        return Err(err(format!(
            "more than {} tensors (Limits::max_tensors)",
            limits.max_tensors
        )));
    }
    Ok(w.found)
}

struct Walker<'p, 'l> {
    heap: &'p Heap<TorchGlobal>,
    limits: &'l Limits,
    visits: usize,
    found: Found,
    skipped: usize,
}

impl Walker<'_, '_> {
    fn walk(&mut self, v: &V, name: String, depth: usize) -> Result<(), ConvertError> {
        self.visits += 1;
        if self.visits > self.limits.max_visits {
            return Err(err(format!(
                "the pickle's containers are reached more than {} times (Limits::max_visits): a \
                 memo bomb?",
                self.limits.max_visits
            )));
        }
        if depth > self.limits.max_depth {
            return Err(err(format!(
                "tensors nested deeper than {} containers (Limits::max_depth), at \"{name}\"",
                self.limits.max_depth
            )));
        }
        let Value::Node(id) = v else {
            self.skipped += usize::from(!matches!(v, Value::None));
            return Ok(());
        };
        let join = |key: &str| {
            if name.is_empty() {
                key.to_string()
            } else {
                format!("{name}.{key}")
            }
        };
        match self.heap.node(*id) {
            Node::Dict(pairs) => {
                for (k, v) in pairs {
                    let key = match k {
                        Value::Str(s) => s.to_string(),
                        Value::Int(i) => i.to_string(),
                        _ => {
                            self.skipped += 1;
                            continue;
                        }
                    };
                    self.walk(v, join(&key), depth + 1)?;
                }
            }
            Node::List(items) | Node::Tuple(items) => {
                for (i, v) in items.iter().enumerate() {
                    self.walk(v, join(&i.to_string()), depth + 1)?;
                }
            }
            Node::Set(_) | Node::Persistent(_) => self.skipped += 1,
            Node::Call { func, args } => match tensor_of(self.heap, *func, args, 0)? {
                Some(t) => self.found.tensors.push((name, t)),
                None => self.skipped += 1,
            },
        }
        Ok(())
    }
}

/// The storage a rebuild call's first argument names.
fn storage_of(heap: &Heap<TorchGlobal>, v: &V) -> Result<StorageId, ConvertError> {
    if let Value::Node(id) = v {
        match heap.node(*id) {
            Node::Persistent(pid) => {
                let (key, c) = claim(heap, pid)?;
                let view = c.view.map(|(_, offset, size)| (offset, size));
                return Ok(StorageId::Key(key, view));
            }
            Node::Call {
                func: TorchGlobal::LoadFromBytes,
                ..
            } => return Ok(StorageId::Inline(*id)),
            _ => {}
        }
    }
    Err(err(format!(
        "a tensor's storage is a {}, not a storage",
        kind(v, heap)
    )))
}

/// The tensor `func(*args)` describes, if `func` is a tensor rebuild function. `hops` counts
/// wrappers (`_rebuild_parameter`, `_rebuild_from_type_v2`) already unwrapped.
fn tensor_of(
    heap: &Heap<TorchGlobal>,
    func: TorchGlobal,
    args: &V,
    hops: usize,
) -> Result<Option<TensorRef>, ConvertError> {
    use TorchGlobal::*;
    if hops > 4 {
        return Err(err("tensor rebuild calls wrapped more than 4 deep"));
    }
    let items = heap.tuple(args).unwrap_or(&[]);
    let arg = |i: usize, what: &str| {
        items.get(i).ok_or_else(|| {
            err(format!(
                "{func:?} with {} arguments: no {what} (argument {i})",
                items.len()
            ))
        })
    };
    match func {
        RebuildTensor | RebuildTensorV2 | RebuildTensorV3 => {
            let storage = storage_of(heap, arg(0, "storage")?)?;
            let offset = as_usize(arg(1, "storage offset")?, "a storage offset")?;
            let shape = ints(heap, arg(2, "size")?, "a tensor size")?;
            let strides = ints(heap, arg(3, "stride")?, "a tensor stride")?;
            let dtype = if func == RebuildTensorV3 {
                match arg(6, "dtype")? {
                    Value::Global(Dtype(d)) => Some(*d),
                    other => {
                        return Err(err(format!(
                            "_rebuild_tensor_v3's dtype is a {}",
                            kind(other, heap)
                        )))
                    }
                }
            } else {
                None
            };
            Ok(Some(TensorRef {
                storage,
                dtype,
                view: View {
                    offset,
                    shape,
                    strides,
                },
            }))
        }
        RebuildParameter | RebuildParameterWithState => {
            let data = arg(0, "data")?;
            let Value::Node(id) = data else {
                return Err(err("a parameter whose data is not a tensor"));
            };
            match heap.node(*id) {
                Node::Call { func, args } => tensor_of(heap, *func, args, hops + 1),
                _ => Err(err("a parameter whose data is not a tensor")),
            }
        }
        RebuildFromTypeV2 => {
            let (Value::Global(f), Value::Global(TensorType)) =
                (arg(0, "function")?, arg(1, "type")?)
            else {
                return Err(err(
                    "_rebuild_from_type_v2 of a type other than torch.Tensor or Parameter",
                ));
            };
            tensor_of(heap, *f, arg(2, "arguments")?, hops + 1)
        }
        _ => Ok(None),
    }
}

/// The bytes of a `_load_from_bytes(b)` call's argument: `bytes`, or protocol 2's
/// `_codecs.encode(str, "latin1")`.
pub(crate) fn inline_bytes(heap: &Heap<TorchGlobal>, call: usize) -> Result<Vec<u8>, ConvertError> {
    let Node::Call { args, .. } = heap.node(call) else {
        return Err(err("internal: not a call"));
    };
    match heap.tuple(args) {
        Some([Value::Bytes(b)]) => Ok(b.to_vec()),
        Some([Value::Node(id)]) => match heap.node(*id) {
            Node::Call {
                func: TorchGlobal::CodecsEncode,
                args,
            } => match heap.tuple(args) {
                Some([Value::Str(s), Value::Str(enc)]) if &**enc == "latin1" => s
                    .chars()
                    .map(|c| u8::try_from(u32::from(c)).ok())
                    .collect::<Option<Vec<u8>>>()
                    .ok_or_else(|| err("_codecs.encode of a non-latin1 string")),
                _ => Err(err(
                    "_codecs.encode with arguments other than (str, \"latin1\"); refused",
                )),
            },
            _ => Err(err("_load_from_bytes of something that is not bytes")),
        },
        _ => Err(err("_load_from_bytes of something that is not bytes")),
    }
}
