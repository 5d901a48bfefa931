//! `torch.save`'s zip layout (the default since PyTorch 1.6): a zip whose entries share one top
//! folder (`archive/`, or the saved file's stem), holding `data.pkl` (the object, pickled with
//! persistent ids `('storage', torch.FloatStorage, '0', 'cpu', numel)`), `data/<key>` (each storage's
//! raw bytes, stored uncompressed), `byteorder` (`little` or `big`; absent in files from before
//! PyTorch 2.1, which were little-endian), plus `version` and other records this reader ignores.

use super::archive::Archive;
use super::gather::{CopyBudget, Storage};
use super::torch::{self, TorchGlobal};
use super::torch_storage;
use super::{pickle, Checkpoint, Limits};
use crate::ConvertError;

/// True when the zip in `bytes` has a top-level or one-folder-deep `data.pkl`.
pub fn is_torch_archive(bytes: &[u8]) -> bool {
    Archive::open(bytes).is_ok_and(|a| pickle_entry(&a.names()).is_ok())
}

/// The name of the archive's `data.pkl` entry.
fn pickle_entry(names: &[String]) -> Result<String, ConvertError> {
    let found: Vec<&String> = names
        .iter()
        .filter(|n| *n == "data.pkl" || n.split_once('/').is_some_and(|(_, r)| r == "data.pkl"))
        .collect();
    match found.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(ConvertError::checkpoint(
            "a zip without data.pkl: not a torch.save checkpoint",
        )),
        _ => Err(ConvertError::checkpoint(format!(
            "a zip with {} data.pkl entries; torch.save writes one",
            found.len()
        ))),
    }
}

/// Reads a zip-layout checkpoint.
pub fn read<'a>(bytes: &'a [u8], limits: &Limits) -> Result<Checkpoint<'a>, ConvertError> {
    let mut archive = Archive::open(bytes)?;
    let names = archive.names();
    let pkl_name = pickle_entry(&names)?;
    let prefix = &pkl_name[..pkl_name.len() - "data.pkl".len()];
    if names.iter().any(|n| n == &format!("{prefix}constants.pkl")) {
        return Err(ConvertError::checkpoint(
            "a TorchScript archive (torch.jit.save); Ember reads state dicts: save \
             model.state_dict() with torch.save",
        ));
    }
    let big_endian = match archive.entry(&format!("{prefix}byteorder"), 16)? {
        None => false,
        Some(b) => match b.as_slice() {
            b"little" => false,
            b"big" => true,
            other => {
                return Err(ConvertError::checkpoint(format!(
                    "byteorder record {:?}: expected little or big",
                    String::from_utf8_lossy(other)
                )))
            }
        },
    };
    let pkl = archive
        .entry(&pkl_name, limits.max_pickle_bytes as u64)?
        .ok_or_else(|| {
            ConvertError::checkpoint(format!(
                "zip entry \"{pkl_name}\" is listed but cannot be found by name: the archive is damaged"
            ))
        })?;
    let p = pickle::load::<TorchGlobal>(pkl.as_slice(), 0, limits)?;
    let claims = torch::claims(&p)?;
    let found = torch::collect(&p, limits)?;
    let mut budget = CopyBudget::new(limits, bytes.len());
    let storage = |key: &std::rc::Rc<str>| -> Result<Storage<'a>, ConvertError> {
        let claim = claims.get(key).ok_or_else(|| {
            ConvertError::checkpoint(format!("internal: storage \"{key}\" was not claimed"))
        })?;
        let name = format!("{prefix}data/{key}");
        let need = claim.element().bytes_for(claim.numel);
        let fail = |have: String| {
            ConvertError::checkpoint(format!(
                "storage \"{key}\" claims {} elements of {} ({} bytes) but {name} {have}",
                claim.numel,
                claim.element(),
                need.map_or("too many".to_string(), |n| n.to_string())
            ))
        };
        let need = need.ok_or_else(|| fail("cannot hold them".into()))?;
        let data = archive
            .entry(&name, need)
            .map_err(|e| fail(format!("cannot be read ({e})")))?
            .ok_or_else(|| fail("is missing".into()))?;
        if (data.as_slice().len() as u64) < need {
            return Err(fail(format!("holds {} bytes", data.as_slice().len())));
        }
        let data = data.sub(0..need as usize);
        Ok(Storage {
            bytes: data,
            dtype: claim.element(),
            big_endian,
        })
    };
    let mut ckpt = torch_storage::build(&p, found, storage, limits, &mut budget, false)?;
    if big_endian {
        ckpt.notice("the checkpoint was written big-endian (byteorder record); its values were byte-swapped".into());
    }
    Ok(ckpt)
}
