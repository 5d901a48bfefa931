//! The `.ember` blob: header layout, section table, and the postcard records of the metadata.
//!
//! `docs/format.md` describes every byte. This module, with [`crate::schema`] below it (dtypes, op kinds
//! and their parameters), is the single source of truth for it: the runtime reads it (`crate::model`) and
//! the converter writes it (`write`, behind the `alloc` feature).

use serde::{Deserialize, Serialize};

use crate::schema::{OpKind, MAX_RANK};

pub use crate::schema::{DType, MAX_OP_INPUTS};

pub(crate) mod compact;
pub(crate) mod decode;
#[cfg(feature = "alloc")]
pub mod write;

/// The first four bytes of every blob.
pub const MAGIC: [u8; 4] = *b"EMBR";
/// Format major version this runtime reads. A different major is rejected.
pub const VERSION_MAJOR: u16 = 1;
/// Format minor version this runtime writes. Minor versions only add optional data and new op variants
/// (1: more unary and binary functions, appended to `UnaryOp` and `BinaryOp`; 2: the int8 ops that
/// requantize carry their [`RequantRounding`](crate::schema::RequantRounding) as a last field; 3: shape
/// variants, [`SectionKind::Variants`] and [`SectionKind::VariantTables`], which a minor-2 reader skips,
/// running the largest variant).
pub const VERSION_MINOR: u16 = 3;
/// Bytes in the fixed header.
pub const HEADER_LEN: usize = 24;
/// Bytes in one section-table entry.
pub const SECTION_ENTRY_LEN: usize = 16;
/// CRC-32 (IEEE 802.3, the same as zlib's `crc32`) over the blob after the header. A one-slice table
/// (1 KiB of flash) rather than the 16 KiB sliced tables of faster implementations: MCUs pay for flash.
pub const CRC32: crc::Crc<u32, crc::Table<1>> =
    crc::Crc::<u32, crc::Table<1>>::new(&crc::CRC_32_ISO_HDLC);

/// Most sections a blob may have.
pub const MAX_SECTIONS: usize = 16;
/// Alignment of the blob start, of the weights section, and of every weight and arena tensor.
pub const ALIGN: usize = 16;
/// Most graph inputs or outputs.
pub const MAX_GRAPH_IO: usize = 16;
/// Most shape variants in one blob.
pub const MAX_VARIANTS: usize = 16;
/// Most named dims that the shape variants of a blob vary.
pub const MAX_VARIANT_DIMS: usize = 4;

/// What a section holds. Unknown kinds are skipped (a later minor version may add them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum SectionKind {
    /// postcard [`ModelInfo`].
    Info = 1,
    /// Record table of [`TensorRecord`]s.
    Tensors = 2,
    /// Record table of [`OpRecord`]s, in execution order.
    Ops = 3,
    /// Raw weight bytes, each tensor 16-byte aligned.
    Weights = 4,
    /// Optional record table of names (`&str`): one per tensor, then one per op.
    Names = 5,
    /// Optional record table of the blob's shape variants: record 0 the names of the dims they vary
    /// (a postcard sequence of strings; then, optionally, a sequence of `(u32, f64)`: the graph
    /// inputs that may be padded, by index, with their pad values), then one [`VariantRecord`] per
    /// variant, in the order
    /// `ember convert` was given their values.
    Variants = 6,
    /// The info record and the tensor and op tables of every variant but the largest (which is in the
    /// Info, Tensors and Ops sections), each laid out as those sections are.
    VariantTables = 7,
}

/// Where a tensor's bytes live.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Storage {
    /// In the weights section, at this offset from the section start (read in place, never copied).
    Weights {
        /// Byte offset in the weights section.
        offset: u32,
    },
    /// In the planned activation region of the arena, at this offset.
    Arena {
        /// Byte offset in the activation region.
        offset: u32,
    },
}

/// Per-tensor affine quantization: `real = scale * (q - zero_point)`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct QuantParams {
    /// Scale.
    pub scale: f32,
    /// Zero point.
    pub zero_point: i32,
}

/// Dimensions of a tensor, outermost first (NHWC for 4-D activations).
pub type Dims = heapless::Vec<u32, MAX_RANK>;

/// One entry of the tensor table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TensorRecord {
    /// Element type.
    pub dtype: DType,
    /// Dimensions.
    pub dims: Dims,
    /// Where the bytes live.
    pub storage: Storage,
    /// Quantization, for quantized tensors.
    pub quant: Option<QuantParams>,
    /// Index of the first op that touches the tensor (its producer), or 0 for graph inputs and weights.
    pub first_use: u32,
    /// Index of the last op that reads it (`u32::MAX` for graph outputs, which live to the end).
    pub last_use: u32,
}

/// One entry of the op table.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpRecord {
    /// What the op does, with all parameters resolved.
    pub kind: OpKind,
    /// Input tensor ids, in the op's order.
    pub inputs: heapless::Vec<u32, MAX_OP_INPUTS>,
    /// Output tensor id.
    pub output: u32,
}

/// Arena sizes planned by the converter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ArenaPlan {
    /// Session state and per-op prepared data kept across runs.
    pub persistent_bytes: u32,
    /// Planned activations (all arena tensors, offsets relative to this region).
    pub activation_bytes: u32,
    /// Kernel temporaries; the largest any op asks for.
    pub scratch_bytes: u32,
    /// The planner's lower bound for activations: the largest sum of tensors live at one step.
    pub lower_bound_bytes: u32,
}

impl<'a> ModelInfo<'a> {
    /// The producer as text (`None` if it is not UTF-8).
    pub fn producer_str(&self) -> Option<&'a str> {
        core::str::from_utf8(self.producer).ok()
    }
}

/// The info section: graph-level facts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ModelInfo<'a> {
    /// Producer, e.g. `ember-convert 0.1.0`: UTF-8 text, kept as bytes so that a firmware, which never
    /// reads it, links no UTF-8 validation ([`ModelInfo::producer_str`] checks it). Postcard writes a
    /// string and these bytes alike.
    #[serde(borrow)]
    pub producer: &'a [u8],
    /// FNV-1a 64 hash of the source model file.
    pub source_hash: u64,
    /// Number of tensor records.
    pub tensor_count: u32,
    /// Number of op records.
    pub op_count: u32,
    /// Graph input tensor ids.
    pub inputs: heapless::Vec<u32, MAX_GRAPH_IO>,
    /// Graph output tensor ids.
    pub outputs: heapless::Vec<u32, MAX_GRAPH_IO>,
    /// Memory plan.
    pub arena: ArenaPlan,
}

/// A byte range of the [`SectionKind::VariantTables`] section.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Span {
    /// First byte, from the section start.
    pub offset: u32,
    /// Length in bytes.
    pub len: u32,
}

/// Where one variant's tables are in the [`SectionKind::VariantTables`] section.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VariantTables {
    /// Its [`ModelInfo`] record.
    pub info: Span,
    /// Its tensor table (a record table of [`TensorRecord`]s).
    pub tensors: Span,
    /// Its op table (a record table of [`OpRecord`]s).
    pub ops: Span,
}

/// One shape variant of a blob: the values of the named dims, and where its tables are. All variants
/// share the weights section and the arena size (the largest variant's); each has its own tensor
/// table, ops and activation plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct VariantRecord {
    /// The value of each named dim, in the order of the names record.
    pub dims: heapless::Vec<u32, MAX_VARIANT_DIMS>,
    /// Its tables, or `None` for the largest variant, whose tables are the Info, Tensors and Ops
    /// sections (what a reader that knows no variants runs).
    pub tables: Option<VariantTables>,
}
