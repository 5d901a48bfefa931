//! The legacy layout of `torch.save` (`_use_new_zipfile_serialization=False`, and every file from
//! before PyTorch 1.6): five pickles one after the other, then the storages.
//!
//! 1. the magic number `0x1950a86a20f9469cfc6c`; 2. the protocol version, 1001; 3. the writer's
//!    `sys_info`: `{protocol_version, little_endian, type_sizes: {short, int, long}}`;
//! 4. the object, whose persistent ids are `('storage', torch.FloatStorage, key, location, numel,
//!    view)`, `view` being `None` or `(view_key, offset, size)` in files from before PyTorch 0.4;
//! 5. the sorted list of storage keys; then, for each key, its element count as an 8-byte integer
//!    and its raw bytes.
//!
//! Byte order: PyTorch writes the element counts and data little-endian since it started caring
//! about big-endian hosts, and in the host's order before that; `sys_info.little_endian` says which
//! host wrote the file, not always which order the data is in. So each storage's order is read off
//! its count, which must equal the count its persistent id gave (read both ways, one matches). Type
//! sizes: `short` must be 2 and `int` 4; `long` is the writer's C `long`, 8 on Linux and macOS, 4 on
//! Windows. `LongStorage` elements are int64 in every PyTorch since 0.4, but PyTorch before 0.4
//! wrote them as C longs: when a file declares 4-byte longs, the storages are laid out with 8-byte
//! and with 4-byte elements, and the one that ends exactly at the end of the file is taken (4-byte
//! values are widened to int64).

use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

use super::gather::{CopyBudget, Storage};
use super::pickle::{self, NoGlobals, Node, Value};
use super::torch::{self, StorageClaim, TorchGlobal, TorchPickle};
use super::{Bytes, Checkpoint, ElementType, Limits};
use crate::ConvertError;

/// `torch.serialization.MAGIC_NUMBER`.
const MAGIC: i128 = 0x1950a86a20f9469cfc6c;
/// `torch.serialization.PROTOCOL_VERSION`.
const PROTOCOL_VERSION: i128 = 1001;

fn err(msg: impl Into<String>) -> ConvertError {
    ConvertError::checkpoint(msg)
}

/// True when `bytes` start with a pickled magic number (after PROTO and an optional FRAME).
pub fn looks_legacy(bytes: &[u8]) -> bool {
    if bytes.first() != Some(&0x80) {
        return false;
    }
    let at = if bytes.get(2) == Some(&0x95) { 11 } else { 2 };
    let mut want = vec![0x8a, 10];
    want.extend_from_slice(&MAGIC.to_le_bytes()[..10]);
    bytes.get(at..at + want.len()) == Some(&want[..])
}

/// What the legacy layout holds: the object's pickle and the root storages by key.
struct Legacy<'a> {
    pickle: TorchPickle,
    storages: HashMap<Rc<str>, Storage<'a>>,
    notices: Vec<String>,
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
        let Some(head) = bytes.get(at..at + 8) else {
            return Err(past_end().into());
        };
        let head: [u8; 8] = head.try_into().expect("8 bytes");
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

/// Parses a legacy-layout file held in `buf`.
fn parse<'a>(
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
                    let c: [u8; 4] = c.try_into().expect("4 bytes");
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

/// Reads a legacy-layout checkpoint.
pub fn read<'a>(bytes: &'a [u8], limits: &Limits) -> Result<Checkpoint<'a>, ConvertError> {
    let mut budget = CopyBudget::new(limits, bytes.len());
    let legacy = parse(Bytes::Borrowed(bytes), limits, &mut budget)?;
    let found = torch::collect(&legacy.pickle, limits)?;
    let storages = legacy.storages;
    let storage = |key: &Rc<str>| {
        storages.get(key).cloned().ok_or_else(|| {
            err(format!(
                "storage \"{key}\" is not in the file's storage list"
            ))
        })
    };
    let mut ckpt = torch::build(&legacy.pickle, found, storage, limits, &mut budget, false)?;
    for n in legacy.notices {
        ckpt.notice(n);
    }
    Ok(ckpt)
}

/// Reads a state dict pickled with Python's `pickle` (not `torch.save`): every storage is a
/// `torch.storage._load_from_bytes` call.
pub fn read_pickle<'a>(bytes: &'a [u8], limits: &Limits) -> Result<Checkpoint<'a>, ConvertError> {
    let mut budget = CopyBudget::new(limits, bytes.len());
    let p = pickle::load::<TorchGlobal>(bytes, 0, limits)?;
    let found = torch::collect(&p, limits)?;
    let storage = |key: &Rc<str>| -> Result<Storage<'a>, ConvertError> {
        Err(err(format!(
            "storage \"{key}\" is named by a persistent id, but a plain pickle has no storages \
             (was it cut out of a torch.save file?)"
        )))
    };
    torch::build(&p, found, storage, limits, &mut budget, false)
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
