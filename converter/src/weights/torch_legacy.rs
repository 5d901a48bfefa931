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
//!
//! The parser of this layout lives in `torch_storage.rs`, because the bytes of every
//! `_load_from_bytes` storage, in a pickle of any layout, are such a file; this module reads whole
//! files with it.

use std::rc::Rc;

use super::gather::{CopyBudget, Storage};
use super::pickle;
use super::torch::{self, TorchGlobal};
use super::torch_storage::{self, MAGIC};
use super::{Bytes, Checkpoint, Limits};
use crate::ConvertError;

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

/// Reads a legacy-layout checkpoint.
pub fn read<'a>(bytes: &'a [u8], limits: &Limits) -> Result<Checkpoint<'a>, ConvertError> {
    let mut budget = CopyBudget::new(limits, bytes.len());
    let legacy = torch_storage::parse(Bytes::Borrowed(bytes), limits, &mut budget)?;
    let found = torch::collect(&legacy.pickle, limits)?;
    let storages = legacy.storages;
    let storage = |key: &Rc<str>| {
        storages.get(key).cloned().ok_or_else(|| {
            err(format!(
                "storage \"{key}\" is not in the file's storage list"
            ))
        })
    };
    let mut ckpt =
        torch_storage::build(&legacy.pickle, found, storage, limits, &mut budget, false)?;
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
    torch_storage::build(&p, found, storage, limits, &mut budget, false)
}
