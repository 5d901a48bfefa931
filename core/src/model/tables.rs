//! The blob's containers: the section table after the header, and the record tables inside sections
//! (a count, offsets, then postcard records). Both are checked when read, so their accessors can trust
//! their bounds.

use crate::format::{SectionKind, ALIGN, HEADER_LEN, MAX_SECTIONS, SECTION_ENTRY_LEN};
use crate::Error;

/// A section laid out as `u32 count`, `count + 1` u32 offsets, then postcard records.
#[derive(Clone, Copy, Debug)]
pub(super) struct RecordTable<'b> {
    bytes: &'b [u8],
    pub(super) count: usize,
}

/// The little-endian `u16` at `at`. Callers check the bounds first; out of them it reads 0 (no panic
/// path in the binary).
pub(super) fn read_u16(b: &[u8], at: usize) -> u16 {
    b.get(at..at + 2)
        .map_or(0, |s| u16::from_le_bytes([s[0], s[1]]))
}

/// The little-endian `u32` at `at` (0 out of bounds, as [`read_u16`]).
pub(super) fn read_u32(b: &[u8], at: usize) -> u32 {
    b.get(at..at + 4)
        .map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

impl<'b> RecordTable<'b> {
    pub(super) fn new(bytes: &'b [u8], kind: SectionKind) -> Result<Self, Error> {
        let bad = |reason| Error::BadSection {
            kind: kind as u32,
            reason,
        };
        if bytes.len() < 4 {
            return Err(bad("record table shorter than its count"));
        }
        let count = read_u32(bytes, 0) as usize;
        // The offsets array must fit; this also bounds `count` by the section size.
        let head = count
            .checked_add(1)
            .and_then(|n| n.checked_mul(4))
            .and_then(|n| n.checked_add(4))
            .ok_or(bad("record count overflows"))?;
        if head > bytes.len() {
            return Err(bad("record offsets run past the section"));
        }
        let mut prev = head;
        for i in 0..=count {
            let off = read_u32(bytes, 4 + 4 * i) as usize;
            if (i == 0 && off != head) || off < prev || off > bytes.len() {
                return Err(bad("record offsets are not increasing within the section"));
            }
            prev = off;
        }
        Ok(RecordTable { bytes, count })
    }

    /// Bytes of record `i`; the offsets were checked in `new`.
    pub(super) fn record(&self, i: usize) -> Option<&'b [u8]> {
        if i >= self.count {
            return None;
        }
        let start = read_u32(self.bytes, 4 + 4 * i) as usize;
        let end = read_u32(self.bytes, 8 + 4 * i) as usize;
        self.bytes.get(start..end)
    }

    pub(super) fn decode<T: serde::Deserialize<'b>>(&self, i: usize) -> Option<T> {
        let bytes = self.record(i)?;
        // Trailing bytes are allowed: a later minor version may append optional fields.
        postcard::take_from_bytes(bytes).ok().map(|(v, _)| v)
    }
}

/// The section table, read and checked.
pub(super) struct Sections<'b> {
    blob: &'b [u8],
    entries: [(u32, usize, usize); MAX_SECTIONS],
    count: usize,
}

impl<'b> Sections<'b> {
    pub(super) fn read(blob: &'b [u8]) -> Result<Self, Error> {
        let count = read_u16(blob, 20) as usize;
        if count > MAX_SECTIONS {
            return Err(Error::BadSection {
                kind: 0,
                reason: "more sections than the format allows",
            });
        }
        let table_end = HEADER_LEN + count * SECTION_ENTRY_LEN;
        if table_end > blob.len() {
            return Err(Error::Truncated {
                need: table_end as u32,
                have: blob.len() as u32,
            });
        }
        let mut entries = [(0u32, 0usize, 0usize); MAX_SECTIONS];
        for (i, e) in entries.iter_mut().enumerate().take(count) {
            let at = HEADER_LEN + i * SECTION_ENTRY_LEN;
            let kind = read_u32(blob, at);
            let offset = read_u32(blob, at + 4) as usize;
            let len = read_u32(blob, at + 8) as usize;
            let bad = |reason| Error::BadSection { kind, reason };
            if !offset.is_multiple_of(ALIGN) {
                return Err(bad("section is not 16-byte aligned"));
            }
            if offset < table_end || offset.checked_add(len).is_none_or(|end| end > blob.len()) {
                return Err(bad("section lies outside the blob"));
            }
            *e = (kind, offset, len);
        }
        for i in 0..count {
            for j in 0..i {
                let (ka, oa, la) = entries[i];
                let (kb, ob, lb) = entries[j];
                if ka == kb {
                    return Err(Error::BadSection {
                        kind: ka,
                        reason: "section appears twice",
                    });
                }
                if oa < ob + lb && ob < oa + la {
                    return Err(Error::BadSection {
                        kind: ka,
                        reason: "sections overlap",
                    });
                }
            }
        }
        Ok(Sections {
            blob,
            entries,
            count,
        })
    }

    pub(super) fn find(&self, kind: SectionKind) -> Option<&'b [u8]> {
        self.entries[..self.count]
            .iter()
            .find(|e| e.0 == kind as u32)
            .and_then(|&(_, o, l)| self.blob.get(o..o + l))
    }

    pub(super) fn require(&self, kind: SectionKind) -> Result<&'b [u8], Error> {
        self.find(kind).ok_or(Error::BadSection {
            kind: kind as u32,
            reason: "required section is missing",
        })
    }
}
