//! The one error type of `ember-core`: small, `Copy`, and carrying the numbers a user needs.

use core::fmt;

use crate::schema::DType;

/// Everything that can go wrong while parsing a blob, opening a session, or running it.
#[derive(Clone, Copy, Debug, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Error {
    /// The blob is shorter than its header says it is.
    Truncated {
        /// Bytes the header asks for.
        need: u32,
        /// Bytes present.
        have: u32,
    },
    /// The first four bytes are not `EMBR`: this is not an Ember blob.
    BadMagic,
    /// The blob was written for a format major version this runtime does not read.
    UnsupportedVersion {
        /// Major version in the blob.
        found: u16,
        /// Major version this runtime reads.
        supported: u16,
    },
    /// The CRC-32 of the blob does not match the header: the bytes were damaged.
    ChecksumMismatch {
        /// CRC stored in the header.
        stored: u32,
        /// CRC of the bytes present.
        computed: u32,
    },
    /// The blob does not start at a 16-byte boundary, so weights can't be read in place.
    MisalignedBlob {
        /// Required alignment in bytes.
        align: u32,
    },
    /// A section is missing, duplicated, out of bounds, or overlaps another.
    BadSection {
        /// Section kind (see `format::SectionKind`).
        kind: u32,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The metadata could not be decoded.
    BadMetadata {
        /// What is wrong.
        reason: &'static str,
    },
    /// A tensor record is inconsistent (shape, dtype, storage, bounds).
    BadTensor {
        /// Tensor index.
        tensor: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// An op record is inconsistent (arity, tensor ids, shapes, memory plan).
    BadOp {
        /// Op index in execution order.
        op: u32,
        /// What is wrong.
        reason: &'static str,
    },
    /// A kernel's shape check failed (wrapped into `BadOp` by the model validator).
    Shape {
        /// What is wrong.
        reason: &'static str,
    },
    /// The arena handed to `Session::new` is smaller than the model's plan.
    ArenaTooSmall {
        /// Bytes the session needs with this arena's alignment.
        need: usize,
        /// Bytes provided.
        have: usize,
    },
    /// No graph input or output has this index.
    NoSuchTensor {
        /// Index asked for.
        index: usize,
        /// Number of inputs or outputs the model has.
        count: usize,
    },
    /// A buffer handed in or out has the wrong number of elements.
    WrongLength {
        /// Elements the tensor has.
        expected: usize,
        /// Elements given.
        got: usize,
    },
    /// A tensor was accessed as a type it does not have.
    WrongDType {
        /// The tensor's element type.
        expected: DType,
        /// The type asked for.
        got: DType,
    },
    /// The blob uses something this runtime build does not support.
    Unsupported {
        /// What.
        reason: &'static str,
    },
    /// The session's kernel table leaves out the family of an op the model has (e.g. a firmware built
    /// with `REFERENCE_F32` given an int8 model).
    KernelMissing {
        /// A kernel-table entry the model's ops run through (a name of [`crate::kernels::entry::NAMES`]).
        entry: &'static str,
        /// The table's name.
        kernels: &'static str,
    },
    /// No shape variant of the model has the dims asked for (`Session::set_dims`) or the input shapes
    /// given; `Model::variant_dims` lists those it has (`ember inspect` prints them).
    NoVariant {
        /// How many variants the model has.
        variants: usize,
    },
    /// An input written in a shape other than its variant's, where the model declares no pad
    /// value for it (`ember convert --pad`).
    NoPadValue {
        /// The graph input.
        input: usize,
    },
    /// A loop's trip count does not fit the bound it was converted for.
    LoopBound {
        /// The loop's op (its head or its end).
        op: u32,
        /// The most iterations the loop was planned for (`ember convert --max-trip`).
        bound: u32,
        /// What happened.
        reason: &'static str,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Error::Truncated { need, have } => write!(
                f,
                "blob truncated: the header declares {need} bytes but only {have} are present; \
                 copy or flash the whole file"
            ),
            Error::BadMagic => write!(f, "not an Ember blob (magic is not `EMBR`); convert the model with `ember convert`"),
            // As u32: firmware prints u32s anyway, and a u16 formatter would be linked for this alone.
            Error::UnsupportedVersion { found, supported } => write!(
                f,
                "blob format version {} is not supported by this runtime (reads version {}); \
                 reconvert the model with a matching `ember convert` or update the runtime",
                u32::from(found),
                u32::from(supported)
            ),
            Error::ChecksumMismatch { stored, computed } => write!(
                f,
                "blob checksum mismatch (header {stored:#010x}, computed {computed:#010x}): the file is corrupt; \
                 copy or reconvert it"
            ),
            Error::MisalignedBlob { align } => write!(
                f,
                "blob is not {align}-byte aligned in memory; place it with `ember_core::include_model!` or an \
                 aligned buffer"
            ),
            Error::BadSection { kind, reason } => write!(f, "corrupt blob: section {kind}: {reason}"),
            Error::BadMetadata { reason } => write!(f, "corrupt blob: metadata: {reason}"),
            Error::BadTensor { tensor, reason } => write!(f, "corrupt blob: tensor {tensor}: {reason}"),
            Error::BadOp { op, reason } => write!(f, "corrupt blob: op {op}: {reason}"),
            Error::Shape { reason } => write!(f, "shape error: {reason}"),
            Error::ArenaTooSmall { need, have } => write!(
                f,
                "arena too small: the model needs {need} bytes, the arena has {have}; use the ARENA_BYTES \
                 the converter reports"
            ),
            Error::NoSuchTensor { index, count } => {
                write!(f, "no tensor at index {index}: the model has {count}")
            }
            Error::WrongLength { expected, got } => write!(
                f,
                "wrong number of elements: the tensor holds {expected}, the buffer has {got}"
            ),
            Error::WrongDType { expected, got } => write!(
                f,
                "wrong element type: the tensor is {}, accessed as {}",
                expected.name(),
                got.name()
            ),
            Error::Unsupported { reason } => write!(f, "unsupported: {reason}"),
            Error::KernelMissing { entry, kernels } => write!(
                f,
                "the model runs ops through the kernel-table entry {entry}, which the \"{kernels}\" \
                 table leaves out: open the session with a table that has it (ember_core::REFERENCE has every \
                 one; a firmware's table needs the model's KERNEL_ENTRIES)"
            ),
            Error::NoVariant { variants } => write!(
                f,
                "no shape variant of the model has these dims (it has {variants}; `ember inspect` \
                 lists them): convert with the dims you need in `--dim`"
            ),
            Error::NoPadValue { input } => write!(
                f,
                "graph input {input} is smaller than its shape variant's, and the model declares no \
                 pad value for it: give the variant's exact shape, or convert with --pad NAME=VALUE"
            ),
            // The reason says it all (the op and bound are fields): no argument to format, which every
            // firmware would link, loops or not.
            Error::LoopBound { reason, .. } => f.write_str(reason),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}
