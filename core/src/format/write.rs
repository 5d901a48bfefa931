//! Serializes a model into a blob. Used by the converter on the host; the runtime never needs it.
//!
//! The caller hands in finished records (tensors with planned offsets, ops in execution order, the weights
//! bytes already aligned); this module only lays them out, so the layout rules live next to the reader.

use alloc::vec;
use alloc::vec::Vec;

use super::{
    ModelInfo, OpRecord, SectionKind, Span, TensorRecord, VariantRecord, VariantTables, ALIGN,
    HEADER_LEN, MAGIC, MAX_VARIANT_DIMS, SECTION_ENTRY_LEN, VERSION_MAJOR, VERSION_MINOR,
};

/// Why a blob could not be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteError {
    /// A record could not be encoded (it exceeds a fixed capacity of the format).
    Encode,
    /// The blob would exceed 4 GiB.
    TooLarge,
}

impl core::fmt::Display for WriteError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            WriteError::Encode => write!(f, "a record could not be encoded with postcard"),
            WriteError::TooLarge => write!(f, "the blob would exceed 4 GiB"),
        }
    }
}

/// Everything a blob holds.
pub struct BlobParts<'a> {
    /// Graph-level facts.
    pub info: &'a ModelInfo<'a>,
    /// The tensor table.
    pub tensors: &'a [TensorRecord],
    /// The ops, in execution order.
    pub ops: &'a [OpRecord],
    /// The weights section (each tensor at a 16-aligned offset given in its record).
    pub weights: &'a [u8],
    /// Optional names: one per tensor, then one per op.
    pub names: Option<&'a [&'a str]>,
    /// Shape variants (`None`: the blob has one shape); `info`, `tensors` and `ops` above are then the
    /// largest variant's.
    pub variants: Option<VariantParts<'a>>,
}

/// The shape variants of a blob.
pub struct VariantParts<'a> {
    /// Names of the dims the variants vary.
    pub dim_names: &'a [&'a str],
    /// Every variant in order: the values of its named dims, and its tables, or `None` for the
    /// variant in [`BlobParts`]'s own tables.
    pub variants: &'a [(
        heapless::Vec<u32, MAX_VARIANT_DIMS>,
        Option<VariantBody<'a>>,
    )],
    /// The graph inputs a session may pad to a larger variant's shape, by input index, with the
    /// value it pads with (`ember convert --pad`). Empty: every input needs its variant's exact
    /// shape.
    pub pads: &'a [(u32, f64)],
}

/// The tables of one variant.
pub struct VariantBody<'a> {
    /// Its graph-level facts and memory plan.
    pub info: &'a ModelInfo<'a>,
    /// Its tensor table (weights at offsets in the shared weights section).
    pub tensors: &'a [TensorRecord],
    /// Its ops, in execution order.
    pub ops: &'a [OpRecord],
}

/// Lays out a record table: `u32 count`, `count + 1` u32 offsets from the section start, then records.
fn record_table<T: serde::Serialize>(records: &[T]) -> Result<Vec<u8>, WriteError> {
    let encoded = records
        .iter()
        .map(|r| postcard::to_allocvec(r).map_err(|_| WriteError::Encode))
        .collect::<Result<Vec<_>, _>>()?;
    table_of(&encoded)
}

/// [`record_table`] of records already encoded.
fn table_of(records: &[Vec<u8>]) -> Result<Vec<u8>, WriteError> {
    let mut bodies = Vec::new();
    let mut ends = Vec::with_capacity(records.len());
    for bytes in records {
        bodies.extend_from_slice(bytes);
        ends.push(bodies.len());
    }
    let head = 4 + 4 * (records.len() + 1);
    let mut out = Vec::with_capacity(head + bodies.len());
    out.extend_from_slice(&u32_of(records.len())?.to_le_bytes());
    out.extend_from_slice(&u32_of(head)?.to_le_bytes());
    for end in ends {
        out.extend_from_slice(&u32_of(head + end)?.to_le_bytes());
    }
    out.extend_from_slice(&bodies);
    Ok(out)
}

fn u32_of(n: usize) -> Result<u32, WriteError> {
    u32::try_from(n).map_err(|_| WriteError::TooLarge)
}

fn align_up(n: usize) -> usize {
    n.div_ceil(ALIGN) * ALIGN
}

/// Writes a complete blob: header, section table, sections (each 16-aligned), CRC-32 over all but the header.
pub fn write_blob(parts: &BlobParts<'_>) -> Result<Vec<u8>, WriteError> {
    let mut sections: Vec<(SectionKind, Vec<u8>)> = Vec::new();
    sections.push((
        SectionKind::Info,
        postcard::to_allocvec(parts.info).map_err(|_| WriteError::Encode)?,
    ));
    sections.push((SectionKind::Tensors, record_table(parts.tensors)?));
    sections.push((SectionKind::Ops, record_table(parts.ops)?));
    if let Some(names) = parts.names {
        sections.push((SectionKind::Names, record_table(names)?));
    }
    if let Some(variants) = &parts.variants {
        let (table, tables) = variant_sections(variants)?;
        sections.push((SectionKind::Variants, table));
        sections.push((SectionKind::VariantTables, tables));
    }
    sections.push((SectionKind::Weights, parts.weights.to_vec()));

    let table_end = HEADER_LEN + SECTION_ENTRY_LEN * sections.len();
    let mut blob = vec_zeroed(align_up(table_end));
    let mut entries = Vec::new();
    for (kind, bytes) in &sections {
        let offset = align_up(blob.len());
        blob.resize(offset, 0);
        blob.extend_from_slice(bytes);
        entries.push((*kind as u32, u32_of(offset)?, u32_of(bytes.len())?));
    }
    let total = align_up(blob.len());
    blob.resize(total, 0);

    for (i, (kind, offset, len)) in entries.iter().enumerate() {
        let at = HEADER_LEN + i * SECTION_ENTRY_LEN;
        blob[at..at + 4].copy_from_slice(&kind.to_le_bytes());
        blob[at + 4..at + 8].copy_from_slice(&offset.to_le_bytes());
        blob[at + 8..at + 12].copy_from_slice(&len.to_le_bytes());
    }
    blob[0..4].copy_from_slice(&MAGIC);
    blob[4..6].copy_from_slice(&VERSION_MAJOR.to_le_bytes());
    blob[6..8].copy_from_slice(&VERSION_MINOR.to_le_bytes());
    blob[12..16].copy_from_slice(&u32_of(total)?.to_le_bytes());
    blob[20..22].copy_from_slice(&(sections.len() as u16).to_le_bytes());
    let crc = super::CRC32.checksum(&blob[HEADER_LEN..]);
    blob[16..20].copy_from_slice(&crc.to_le_bytes());
    Ok(blob)
}

/// The Variants section (the dim names, then a record per variant) and the VariantTables section
/// (each variant's info record, tensor table and op table, one after another, 4-aligned).
fn variant_sections(parts: &VariantParts<'_>) -> Result<(Vec<u8>, Vec<u8>), WriteError> {
    let mut tables = Vec::new();
    let mut put = |bytes: Vec<u8>| -> Result<Span, WriteError> {
        tables.resize(tables.len().next_multiple_of(4), 0);
        let span = Span {
            offset: u32_of(tables.len())?,
            len: u32_of(bytes.len())?,
        };
        tables.extend_from_slice(&bytes);
        Ok(span)
    };
    let mut names = postcard::to_allocvec(parts.dim_names).map_err(|_| WriteError::Encode)?;
    if !parts.pads.is_empty() {
        // Optional trailing data of record 0, which a reader that knows no padding skips.
        names.extend(postcard::to_allocvec(parts.pads).map_err(|_| WriteError::Encode)?);
    }
    let mut records = vec![names];
    for (dims, body) in parts.variants {
        let tables = match body {
            None => None,
            Some(b) => Some(VariantTables {
                info: put(postcard::to_allocvec(b.info).map_err(|_| WriteError::Encode)?)?,
                tensors: put(record_table(b.tensors)?)?,
                ops: put(record_table(b.ops)?)?,
            }),
        };
        let record = VariantRecord {
            dims: dims.clone(),
            tables,
        };
        records.push(postcard::to_allocvec(&record).map_err(|_| WriteError::Encode)?);
    }
    Ok((table_of(&records)?, tables))
}

/// Recomputes the CRC of a blob after its bytes were edited (tests that mutate blobs use this, so that
/// the structural validation is exercised rather than the checksum).
pub fn fix_crc(blob: &mut [u8]) {
    if blob.len() >= HEADER_LEN {
        let crc = super::CRC32.checksum(&blob[HEADER_LEN..]);
        blob[16..20].copy_from_slice(&crc.to_le_bytes());
    }
}

fn vec_zeroed(n: usize) -> Vec<u8> {
    alloc::vec![0u8; n]
}
