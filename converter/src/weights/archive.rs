//! Zip access shared by the PyTorch zip layout and `.npz`: entry names, and an entry's bytes as a
//! slice of the file when it is stored (no copy) or inflated when it is deflated.

use std::io::{Cursor, Read};
use std::sync::Arc;

use zip::{CompressionMethod, ZipArchive};

use super::Bytes;
use crate::ConvertError;

/// An open zip over the bytes of a file.
pub(crate) struct Archive<'a> {
    bytes: &'a [u8],
    zip: ZipArchive<Cursor<&'a [u8]>>,
}

impl<'a> Archive<'a> {
    pub fn open(bytes: &'a [u8]) -> Result<Self, ConvertError> {
        let zip = ZipArchive::new(Cursor::new(bytes))
            .map_err(|e| ConvertError::checkpoint(format!("not a readable zip archive: {e}")))?;
        Ok(Archive { bytes, zip })
    }

    /// Entry names, in the archive's order (names that are not UTF-8 are skipped).
    pub fn names(&self) -> Vec<String> {
        self.zip
            .file_names_raw()
            .filter_map(|n| std::str::from_utf8(n).ok().map(str::to_string))
            .collect()
    }

    /// The bytes of entry `name` (at most `max` of them), or `None` when there is no such entry.
    pub fn entry(&mut self, name: &str, max: u64) -> Result<Option<Bytes<'a>>, ConvertError> {
        let Some(index) = self.zip.index_for_name(name) else {
            return Ok(None);
        };
        let fail = |why: String| ConvertError::checkpoint(format!("zip entry \"{name}\": {why}"));
        let mut file = self.zip.by_index(index).map_err(|e| fail(e.to_string()))?;
        if file.encrypted() {
            return Err(fail("it is encrypted".into()));
        }
        let size = file.size();
        if size > max {
            return Err(fail(format!(
                "{size} bytes, over the budget of {max} for this entry"
            )));
        }
        match file.compression() {
            CompressionMethod::Stored => {
                let start = file
                    .data_start()
                    .ok_or_else(|| fail("no data offset".into()))?;
                let range = usize::try_from(start)
                    .ok()
                    .zip(usize::try_from(size).ok())
                    .and_then(|(s, n)| Some(s..s.checked_add(n)?))
                    .filter(|r| r.end <= self.bytes.len())
                    .ok_or_else(|| fail("its data lies past the end of the file".into()))?;
                Ok(Some(Bytes::Borrowed(&self.bytes[range])))
            }
            CompressionMethod::Deflated => {
                // Grown as data arrives, never sized by the header's claim; a size that
                // disagrees with the header is an error.
                let mut out = Vec::new();
                (&mut file)
                    .take(size + 1)
                    .read_to_end(&mut out)
                    .map_err(|e| fail(format!("cannot inflate: {e}")))?;
                if out.len() as u64 != size {
                    return Err(fail(format!(
                        "inflates to {} bytes, its header says {size}",
                        out.len()
                    )));
                }
                let len = out.len();
                Ok(Some(Bytes::Shared(Arc::new(out), 0..len)))
            }
            other => Err(fail(format!(
                "compression {other:?}; only stored and deflated entries are read"
            ))),
        }
    }
}
