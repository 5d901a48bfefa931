//! The storages of a PyTorch pickle and the tensors built on them ([`build`]), shared by the zip
//! reader ([`super::torch_zip`]) and the legacy and plain-pickle readers ([`super::torch_legacy`]).
//!
//! A tensor's storage is either keyed, its bytes being the zip's `data/<key>` or following a legacy
//! file's object (the reader supplies them), or inline: a `torch.storage._load_from_bytes` call whose
//! bytes are a whole legacy-layout file holding that one storage ([`inline_storage`]). So the legacy
//! layout's parser ([`parse`]) lives here, below the readers: `build` reads inline storages with it in
//! any layout, and `torch_legacy` reads whole files with it.

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use super::gather::{CopyBudget, Storage};
use super::pickle::{self, NoGlobals, Node, Value};
use super::torch::{self, inline_bytes, Found, StorageClaim, StorageId, TorchGlobal, TorchPickle};
use super::{Bytes, Checkpoint, ElementType, Limits};
use crate::ConvertError;

/// `torch.serialization.MAGIC_NUMBER`.
pub(crate) const MAGIC: i128 = 0x1950a86a20f9469cfc6c;
/// `torch.serialization.PROTOCOL_VERSION`.
const PROTOCOL_VERSION: i128 = 1001;

fn err(msg: impl Into<String>) -> ConvertError {
    ConvertError::checkpoint(msg)
}

/// Builds the checkpoint: reads each tensor's storage through `storage` (keyed storages; inline
/// ones are parsed here as nested legacy files) and materializes its view.
pub(crate) fn build<'a>(
    p: &TorchPickle,
    found: Found,
    mut storage: impl FnMut(&Rc<str>) -> Result<Storage<'a>, ConvertError>,
    limits: &Limits,
    budget: &mut CopyBudget,
    nested: bool,
) -> Result<Checkpoint<'a>, ConvertError> {
    let mut ckpt = Checkpoint::new();
    let mut cache: HashMap<StorageId, (Bytes<'a>, bool, ElementType)> = HashMap::new();
    for (name, t) in found.tensors {
        let (bytes, big_endian, storage_dtype) = match cache.get(&t.storage) {
            Some(s) => s.clone(),
            None => {
                let s = match &t.storage {
                    StorageId::Key(k, view) => {
                        let s = storage(k)?;
                        let (big_endian, dtype) = (s.big_endian, s.dtype);
                        let bytes = match view {
                            None => s.bytes,
                            Some((offset, size)) => {
                                let elem = (s.dtype.bits() / 8) as u64;
                                let range = offset
                                    .checked_add(*size)
                                    .filter(|&end| end <= s.elements() as u64)
                                    .map(|end| (offset * elem) as usize..(end * elem) as usize)
                                    .ok_or_else(|| {
                                        err(format!(
                                            "storage view ({offset}, {size}) of \"{k}\" reaches \
                                             past its {} elements",
                                            s.elements()
                                        ))
                                    })?;
                                s.bytes.sub(range)
                            }
                        };
                        (bytes, big_endian, dtype)
                    }
                    StorageId::Inline(call) => {
                        if nested {
                            return Err(err("_load_from_bytes inside _load_from_bytes; refused"));
                        }
                        let b = inline_bytes(&p.heap, *call)?;
                        budget.take(b.len() as u64, "a _load_from_bytes storage")?;
                        let s = inline_storage(Arc::new(b), limits, budget)?;
                        (s.bytes, s.big_endian, s.dtype)
                    }
                };
                cache.insert(t.storage.clone(), s.clone());
                s
            }
        };
        let dtype = t.dtype.unwrap_or(storage_dtype);
        let s = Storage {
            bytes,
            dtype,
            big_endian,
        };
        let in_tensor = |e: String| err(format!("tensor \"{name}\": {e}"));
        if !dtype.bits().is_multiple_of(8) {
            return Err(in_tensor(format!("element type {dtype} is not byte-sized")));
        }
        t.view.check(s.elements(), limits).map_err(in_tensor)?;
        let tensor = s.tensor(&t.view, budget, &name)?;
        ckpt.insert(name, tensor)?;
    }
    for n in found.notices {
        ckpt.notice(n);
    }
    Ok(ckpt)
}

/// The storage held by the bytes of a `torch.storage._load_from_bytes` call: a legacy-layout file
/// whose object is that storage.
pub(crate) fn inline_storage(
    buf: Arc<Vec<u8>>,
    limits: &Limits,
    budget: &mut CopyBudget,
) -> Result<Storage<'static>, ConvertError> {
    let len = buf.len();
    let legacy = parse(Bytes::Shared(buf, 0..len), limits, budget).map_err(|e| match e {
        ConvertError::Checkpoint { reason } => err(format!(
            "in the bytes of a _load_from_bytes storage: {reason}"
        )),
        other => other,
    })?;
    let p = &legacy.pickle;
    let key = match &p.root {
        Value::Node(id) => match p.heap.node(*id) {
            Node::Persistent(_) => torch::claims(p)?.into_keys().next(),
            _ => None,
        },
        _ => None,
    };
    let key = key.ok_or_else(|| err("_load_from_bytes of something that is not one storage"))?;
    legacy
        .storages
        .get(&key)
        .cloned()
        .ok_or_else(|| err("_load_from_bytes: the storage's bytes are missing"))
}

/// What the legacy layout holds: the object's pickle and the root storages by key.
pub(crate) struct Legacy<'a> {
    pub pickle: TorchPickle,
    pub storages: HashMap<Rc<str>, Storage<'a>>,
    pub notices: Vec<String>,
}

/// The writer's `sys_info` pickle: (little_endian, long size).
fn sys_info(
    bytes: &[u8],
    start: usize,
    limits: &Limits,
) -> Result<(bool, u8, usize), ConvertError> {
    let p = pickle::load::<NoGlobals>(bytes, start, limits)?;
    let entries = |v: &Value<NoGlobals>| -> Vec<(String, Value<NoGlobals>)> {
        match v {
            Value::Node(id) => match p.heap.node(*id) {
                Node::Dict(pairs) => pairs
                    .iter()
                    .filter_map(|(k, v)| match k {
                        Value::Str(k) => Some((k.to_string(), v.clone())),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    };
    let info = entries(&p.root);
    if info.is_empty() {
        return Err(err("the legacy header's sys_info is not a dict"));
    }
    let mut little = true;
    let mut long = 8u8;
    for (k, v) in &info {
        match (k.as_str(), v) {
            ("little_endian", Value::Bool(b)) => little = *b,
            ("type_sizes", sizes) => {
                for (name, size) in entries(sizes) {
                    let Value::Int(size) = size else { continue };
                    match (name.as_str(), size) {
                        ("short", 2) | ("int", 4) => {}
                        ("long", 4 | 8) => long = size as u8,
                        (name, size) => {
                            return Err(err(format!(
                                "the file declares C type sizes Ember does not know how to read \
                                 ({name} = {size} bytes; expected short 2, int 4, long 4 or 8)"
                            )))
                        }
                    }
                }
            }
            _ => {}
        }
    }
    Ok((little, long, p.end))
}

fn int_pickle(bytes: &[u8], start: usize, limits: &Limits) -> Result<(i128, usize), ConvertError> {
    let p = pickle::load::<NoGlobals>(bytes, start, limits)?;
    match p.root {
        Value::Int(v) => Ok((v, p.end)),
        _ => Err(err(
            "not a PyTorch legacy checkpoint (its header is not a number)",
        )),
    }
}

/// Where each storage's bytes are: (key, byte range, big-endian).
type Layout = Vec<(Rc<str>, std::ops::Range<usize>, bool)>;

/// The storages laid out from `at` with long elements of `long_bytes`, and where they end; an
/// error saying why they do not fit the file that way.
fn layout(
    bytes: &[u8],
    mut at: usize,
    keys: &[Rc<str>],
    claims: &HashMap<Rc<str>, StorageClaim>,
    little_endian: bool,
    long_bytes: usize,
) -> Result<(Layout, usize), String> {
    let past_end = || "the storages after the object run past the end of the file (truncated?)";
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let claim = claims.get(key).ok_or_else(|| {
            format!("storage \"{key}\" is listed after the object, which never uses it")
        })?;
        let Some(head) = bytes
            .get(at..at + 8)
            .and_then(|h| <[u8; 8]>::try_from(h).ok())
        else {
            return Err(past_end().into());
        };
        let (le, be) = (u64::from_le_bytes(head), u64::from_be_bytes(head));
        let big = if le == claim.numel && be == claim.numel {
            !little_endian
        } else if le == claim.numel {
            false
        } else if be == claim.numel {
            true
        } else {
            return Err(format!(
                "storage \"{key}\": its header gives {le} elements (or {be} read big-endian), its \
                 persistent id {}",
                claim.numel
            ));
        };
        let elem = match claim.element() {
            ElementType::I64 => long_bytes,
            t => t.bits() / 8,
        } as u64;
        let len = claim
            .numel
            .checked_mul(elem)
            .and_then(|n| usize::try_from(n).ok());
        let start = at + 8;
        let Some(end) = len
            .and_then(|n| start.checked_add(n))
            .filter(|&e| e <= bytes.len())
        else {
            return Err(past_end().into());
        };
        out.push((key.clone(), start..end, big));
        at = end;
    }
    Ok((out, at))
}

/// Parses a legacy-layout file held in `buf` (the layout is described in [`super::torch_legacy`]).
pub(crate) fn parse<'a>(
    buf: Bytes<'a>,
    limits: &Limits,
    budget: &mut CopyBudget,
) -> Result<Legacy<'a>, ConvertError> {
    let b = buf.as_slice();
    let (magic, end) = int_pickle(b, 0, limits)?;
    if magic != MAGIC {
        return Err(err("not a PyTorch legacy checkpoint (wrong magic number)"));
    }
    let (version, end) = int_pickle(b, end, limits)?;
    if version != PROTOCOL_VERSION {
        return Err(err(format!(
            "legacy checkpoint protocol version {version}; Ember reads {PROTOCOL_VERSION}"
        )));
    }
    let (little_endian, long, end) = sys_info(b, end, limits)?;
    let pickle = pickle::load::<TorchGlobal>(b, end, limits)?;
    let claims = torch::claims(&pickle)?;
    let keys_pickle = pickle::load::<NoGlobals>(b, pickle.end, limits)?;
    let keys: Vec<Rc<str>> = match &keys_pickle.root {
        Value::Node(id) => match keys_pickle.heap.node(*id) {
            Node::List(items) => items
                .iter()
                .map(|k| match k {
                    Value::Str(s) => Ok(s.clone()),
                    _ => Err(err("a storage key that is not a string")),
                })
                .collect::<Result<_, _>>()?,
            _ => return Err(err("the storage key list is not a list")),
        },
        _ => return Err(err("the storage key list is not a list")),
    };
    let start = keys_pickle.end;
    let has_longs = keys.iter().any(|k| {
        claims
            .get(k)
            .is_some_and(|c| c.element() == ElementType::I64)
    });
    let wide = layout(b, start, &keys, &claims, little_endian, 8);
    let mut notices = Vec::new();
    let (places, long_bytes) = match wide {
        Ok((l, end)) if end == b.len() || long == 8 || !has_longs => (l, 8),
        wide => match layout(b, start, &keys, &claims, little_endian, 4) {
            Ok((l, end)) if long == 4 && has_longs && end == b.len() => {
                notices.push(
                    "the file declares 4-byte C longs and its LongStorages are laid out with \
                     4-byte elements (PyTorch before 0.4 on Windows): widened to int64"
                        .to_string(),
                );
                (l, 4)
            }
            _ => (wide.map_err(err)?.0, 8),
        },
    };
    let mut storages = HashMap::new();
    let mut swapped = false;
    for (key, range, big) in places {
        let dtype = claims[&key].element();
        swapped |= big;
        let storage = if dtype == ElementType::I64 && long_bytes == 4 {
            budget.take((range.len() * 2) as u64, "widening 4-byte longs")?;
            let wide: Vec<u8> = b[range]
                .chunks_exact(4)
                .flat_map(|c| {
                    // `chunks_exact(4)`: every chunk holds 4 bytes.
                    let c = [c[0], c[1], c[2], c[3]];
                    let v = if big {
                        i32::from_be_bytes(c)
                    } else {
                        i32::from_le_bytes(c)
                    };
                    i64::from(v).to_le_bytes()
                })
                .collect();
            let len = wide.len();
            Storage {
                bytes: Bytes::Shared(Arc::new(wide), 0..len),
                dtype,
                big_endian: false,
            }
        } else {
            Storage {
                bytes: buf.sub(range),
                dtype,
                big_endian: big,
            }
        };
        storages.insert(key, storage);
    }
    if swapped {
        notices.push("storages written big-endian were byte-swapped".to_string());
    }
    Ok(Legacy {
        pickle,
        storages,
        notices,
    })
}
