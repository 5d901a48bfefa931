//! `Model::parse`: zero-copy, allocation-free reading and validation of a `.ember` blob.
//!
//! Everything the interpreter later trusts is checked here once: the header and CRC, section bounds
//! (`model/tables.rs`), every tensor and op record decodes, tensor ids, dtypes, byte sizes against the weights
//! section and the arena plan, op arity, every op's shapes (through the op's own `validate`), and that
//! no op writes over its own inputs. After a successful parse, running the model cannot index out of
//! bounds.

use crate::format::{
    ArenaPlan, ModelInfo, OpRecord, SectionKind, Storage, TensorRecord, ALIGN, HEADER_LEN, MAGIC,
    VERSION_MAJOR,
};
use crate::kernels::{entry::VARIANTS, family, has, LEFT_OUT};
use crate::ops::entry::OutDims;
use crate::ops::entry::{NotAWeight, Operands};
use crate::schema::control::ControlOp;
use crate::schema::{DType, OpKind, MAX_RANK};
use crate::Error;

mod lookup;
mod tables;
mod variants;
pub(crate) use lookup::{OpTensors, Operand};
use tables::{read_u16, read_u32, RecordTable, Sections};
pub use variants::Fit;

/// A validated model over borrowed blob bytes. Parsing allocates nothing and copies no weights.
///
/// `E` is the [`crate::kernels::entry`] mask of the kernels the build can run ([`Model::parse_only`]):
/// every op kind by default. The decoding and validation code of other op kinds is left out of the binary,
/// and so is their dispatch in a [`Session`](crate::Session) over this model.
#[derive(Clone, Debug)]
pub struct Model<'b, const E: u64 = { family::ALL }> {
    blob: &'b [u8],
    info: ModelInfo<'b>,
    tensors: RecordTable<'b>,
    ops: RecordTable<'b>,
    names: Option<RecordTable<'b>>,
    weights: &'b [u8],
    /// The blob's format minor version.
    minor: u16,
    /// The kernel-table entries of every op of every variant, found by `validate`.
    entries: u64,
    /// The blob's own tables (its Info, Tensors, Ops and Names sections: the largest variant's).
    own: Tables<'b>,
    /// The shape variants (`None`: the blob has one shape, or the build reads none).
    variants: Option<Variants<'b>>,
    /// The variant this view runs (an index into the variant table; 0 without one).
    variant: usize,
}

/// A blob's shape variants: their record table, the section with their tables, and the largest
/// variant's plan.
#[derive(Clone, Copy, Debug)]
struct Variants<'b> {
    table: RecordTable<'b>,
    tables: &'b [u8],
    plan: ArenaPlan,
}

/// The tables of one shape: the blob's own (its Info, Tensors, Ops and Names sections) or a shape
/// variant's.
#[derive(Clone, Copy, Debug)]
struct Tables<'b> {
    info: &'b [u8],
    tensors: RecordTable<'b>,
    ops: RecordTable<'b>,
    names: Option<RecordTable<'b>>,
}

/// Byte size of a tensor of `dims`, or `None` when the element size times the product of its non-zero
/// dims overflows `u32`: the format's limit on a tensor, which `parse` checks and the converter checks
/// before it writes one. A tensor with a zero dim is empty (0 bytes), but only within the limit, so
/// that no kernel walks billions of empty rows, and so that the rule does not depend on where the
/// zero sits (`[0, n, n]` and `[n, n, 0]` are both refused when `n * n` overflows).
pub fn byte_size(dtype: DType, dims: &[u32]) -> Option<u32> {
    let mut n = dtype.size() as u32;
    let mut empty = false;
    for &d in dims {
        if d == 0 {
            empty = true;
        } else {
            n = n.checked_mul(d)?;
        }
    }
    Some(if empty { 0 } else { n })
}

/// Dims as `usize`s on the stack, for kernels.
#[derive(Clone, Copy, Debug)]
pub(crate) struct UDims {
    dims: [usize; MAX_RANK],
    rank: usize,
}

impl UDims {
    pub(crate) fn of(dims: &[u32]) -> Self {
        let mut out = [0usize; MAX_RANK];
        let rank = dims.len().min(MAX_RANK);
        for (o, &d) in out.iter_mut().zip(dims.iter()) {
            *o = d as usize;
        }
        UDims { dims: out, rank }
    }

    pub(crate) fn as_slice(&self) -> &[usize] {
        // (`rank` is at most `MAX_RANK`; the `min` tells the compiler, so that no panic path is linked
        // where the dims are read.)
        &self.dims[..self.rank.min(MAX_RANK)]
    }
}

impl<'b> Model<'b> {
    /// Parses and validates a blob. The blob must start on a 16-byte boundary (see `include_model!`).
    pub fn parse(blob: &'b [u8]) -> Result<Self, Error> {
        Self::parse_only::<{ family::ALL }>(blob)
    }

    /// [`Model::parse`] for a build that runs only the kernel-table entries in `ENTRIES` (a
    /// [`crate::kernels::entry`] mask, such as the `KERNEL_ENTRIES` that `ember convert --emit rust`
    /// writes): the validation code of every other op kind is left out of the binary, and a blob with
    /// such an op is refused (`Error::BadOp`). Firmware uses it to save flash:
    ///
    /// ```ignore
    /// let model = Model::parse_only::<{ model::KERNEL_ENTRIES }>(model::BLOB)?;
    /// ```
    ///
    /// The mask stays in the model's type, so a [`Session`](crate::Session) over it dispatches only those
    /// op kinds too.
    pub fn parse_only<const ENTRIES: u64>(blob: &'b [u8]) -> Result<Model<'b, ENTRIES>, Error> {
        if blob.len() < HEADER_LEN {
            return Err(Error::Truncated {
                need: HEADER_LEN as u32,
                have: blob.len() as u32,
            });
        }
        if blob[0..4] != MAGIC {
            return Err(Error::BadMagic);
        }
        let major = read_u16(blob, 4);
        if major != VERSION_MAJOR {
            return Err(Error::UnsupportedVersion {
                found: major,
                supported: VERSION_MAJOR,
            });
        }
        let minor = read_u16(blob, 6);
        let total = read_u32(blob, 12) as usize;
        if total < HEADER_LEN || total > blob.len() {
            return Err(Error::Truncated {
                need: total as u32,
                have: blob.len() as u32,
            });
        }
        // Bytes past `total` (padding a linker added) are ignored.
        let blob = &blob[..total];
        let stored = read_u32(blob, 16);
        let computed = crate::format::CRC32.checksum(&blob[HEADER_LEN..]);
        if stored != computed {
            return Err(Error::ChecksumMismatch { stored, computed });
        }
        if !(blob.as_ptr() as usize).is_multiple_of(ALIGN) {
            return Err(Error::MisalignedBlob {
                align: ALIGN as u32,
            });
        }

        let sections = Sections::read(blob)?;
        let main = Tables {
            info: sections.require(SectionKind::Info)?,
            tensors: RecordTable::new(
                sections.require(SectionKind::Tensors)?,
                SectionKind::Tensors,
            )?,
            ops: RecordTable::new(sections.require(SectionKind::Ops)?, SectionKind::Ops)?,
            names: match sections.find(SectionKind::Names) {
                Some(bytes) => Some(RecordTable::new(bytes, SectionKind::Names)?),
                None => None,
            },
        };
        let weights = sections.require(SectionKind::Weights)?;
        // A build without `VARIANTS` reads the blob as its largest variant, as an older reader does.
        let table = if has::<ENTRIES>(VARIANTS) {
            sections.find(SectionKind::Variants)
        } else {
            None
        };
        // Firmware without `VARIANTS` builds its one model inline; with it, parsing and switching
        // share one out-of-line copy.
        let mut model = if has::<ENTRIES>(VARIANTS) {
            Model::assemble(blob, weights, minor, 0, main, None, 0, main)
        } else {
            Model::assemble_inline(blob, weights, minor, 0, main, None, 0, main)
        }?;
        model.entries = model.validate()?;
        if let Some(bytes) = table {
            model.variants = Some(Variants {
                table: RecordTable::new(bytes, SectionKind::Variants)?,
                tables: sections.find(SectionKind::VariantTables).unwrap_or(&[]),
                plan: model.info.arena,
            });
            model.entries |= model.validate_variants()?;
        }
        Ok(model)
    }
}

impl<'b, const E: u64> Model<'b, E> {
    /// Checks everything the session trusts; returns the kernel-table entries the ops run through.
    fn validate(&self) -> Result<u64, Error> {
        let info = &self.info;
        if info.tensor_count as usize != self.tensors.count {
            return Err(Error::BadMetadata {
                reason: "tensor count differs from the tensor table",
            });
        }
        if info.op_count as usize != self.ops.count {
            return Err(Error::BadMetadata {
                reason: "op count differs from the op table",
            });
        }
        if let Some(names) = &self.names {
            if names.count != self.tensors.count + self.ops.count {
                return Err(Error::BadSection {
                    kind: SectionKind::Names as u32,
                    reason: "names table is not one name per tensor and per op",
                });
            }
            // The names themselves are not decoded here: the runtime never reads them, and a name that
            // does not decode reads as `None` (`tensor_name`, `op_name`), so firmware that never asks for
            // a name links no string decoding.
        }
        let plan = info.arena;
        (plan.persistent_bytes as usize)
            .checked_add(plan.activation_bytes as usize)
            .and_then(|n| n.checked_add(plan.scratch_bytes as usize))
            .and_then(|n| n.checked_add(3 * ALIGN))
            .ok_or(Error::BadMetadata {
                reason: "arena plan overflows the address space",
            })?;
        for i in 0..self.tensors.count {
            self.validate_tensor(i)?;
        }
        for &id in info.inputs.iter().chain(info.outputs.iter()) {
            let t = self.tensor(id as usize).ok_or(Error::BadMetadata {
                reason: "graph input or output id is out of range",
            })?;
            if !matches!(t.storage, Storage::Arena { .. }) {
                return Err(Error::BadTensor {
                    tensor: id,
                    reason: "graph inputs and outputs must be tensors in the arena",
                });
            }
        }
        let mut entries = 0;
        for i in 0..self.ops.count {
            self.validate_op(i, &mut entries)?;
        }
        Ok(entries)
    }

    /// [`Model::assemble_inline`], out of line: parsing and switching variants share this one copy.
    /// (Eight arguments rather than a struct of them, which cost the variant firmware 320 B.)
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn assemble(
        blob: &'b [u8],
        weights: &'b [u8],
        minor: u16,
        entries: u64,
        own: Tables<'b>,
        variants: Option<Variants<'b>>,
        variant: usize,
        tables: Tables<'b>,
    ) -> Result<Model<'b, E>, Error> {
        Self::assemble_inline(
            blob, weights, minor, entries, own, variants, variant, tables,
        )
    }

    /// A model over `blob` and its `weights` with one shape's `tables` (decoding their info record).
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn assemble_inline(
        blob: &'b [u8],
        weights: &'b [u8],
        minor: u16,
        entries: u64,
        own: Tables<'b>,
        variants: Option<Variants<'b>>,
        variant: usize,
        tables: Tables<'b>,
    ) -> Result<Model<'b, E>, Error> {
        Ok(Model {
            blob,
            info: ModelInfo::read(&mut crate::format::compact::Reader::new(tables.info)).ok_or(
                Error::BadMetadata {
                    reason: "an info record (the model's or a shape variant's) does not decode",
                },
            )?,
            tensors: tables.tensors,
            ops: tables.ops,
            names: tables.names,
            weights,
            minor,
            entries,
            own,
            variants,
            variant,
        })
    }

    fn validate_tensor(&self, i: usize) -> Result<(), Error> {
        let bad = |reason| Error::BadTensor {
            tensor: i as u32,
            reason,
        };
        let t = self.tensor(i).ok_or(bad("record does not decode"))?;
        let size = byte_size(t.dtype, &t.dims).ok_or(bad("byte size overflows"))? as usize;
        let (offset, region) = match t.storage {
            Storage::Weights { offset } => (offset as usize, self.weights.len()),
            Storage::Arena { offset } => {
                (offset as usize, self.info.arena.activation_bytes as usize)
            }
        };
        if !offset.is_multiple_of(ALIGN) {
            return Err(bad("offset is not 16-byte aligned"));
        }
        match offset.checked_add(size) {
            Some(end) if end <= region => {}
            _ => {
                return Err(bad(
                    "bytes run past their region (weights section or activation plan)",
                ));
            }
        }
        if t.first_use > t.last_use {
            return Err(bad("first use comes after last use"));
        }
        Ok(())
    }

    /// Validates op `i` and adds its kernel-table entry (as [`Model::op_entry`]) to `entries`.
    ///
    /// The entry is added to `entries` rather than returned: a `Result<u64, Error>` holds the error at
    /// another offset than the `Result<(), Error>` of every check, and each conversion copied it byte
    /// by byte.
    fn validate_op(&self, i: usize, entries: &mut u64) -> Result<(), Error> {
        self.with_op_tensors(i, &mut |t| self.check_op(i, t, entries))
    }

    /// [`Model::validate_op`] on the looked-up tensors: the op's own validation (generated from the
    /// declaration of the op set, the same that [`validate_op`] runs for the converter), then its entry.
    fn check_op(&self, i: usize, t: &OpTensors, entries: &mut u64) -> Result<(), Error> {
        let bad = |reason| Error::BadOp {
            op: i as u32,
            reason,
        };
        let operands = BlobOperands {
            t,
            x: core::array::from_fn(|k| t.x[k].dims.as_slice()),
            y: t.y.dims.as_slice(),
            weights: self.weights,
        };
        crate::kernels::validate_in::<E>(&t.op.kind, &operands).map_err(bad)?;
        if let OpKind::Control(p) = &t.op.kind {
            if has::<E>(crate::kernels::entry::CONTROL) {
                self.check_flow(i, p).map_err(bad)?;
            }
        }
        if t.aliased {
            // A Reshape planned on its input's bytes runs no kernel.
            return Ok(());
        }
        match crate::kernels::entry_in::<E>(&t.op.kind, t.all_f32, t.y.dtype.size()) {
            // A kind validated above whose entry `E` leaves out (a Reshape that is not an alias).
            0 => Err(bad(LEFT_OUT)),
            entry => {
                *entries |= entry;
                Ok(())
            }
        }
    }

    /// Where control op `i` moves the run: a loop's head and end name each other (its body between
    /// them), and a branch only skips forward, so that a run never goes back but to a loop's head,
    /// at most its bound of times.
    #[inline(never)]
    fn check_flow(&self, i: usize, p: &ControlOp) -> Result<(), &'static str> {
        let partner = |j: u32| self.op(j as usize).map(|o| o.kind);
        match *p {
            ControlOp::Loop { end, bound } => match partner(end) {
                Some(OpKind::Control(ControlOp::EndLoop {
                    start, bound: b, ..
                })) if end as usize > i && start as usize == i && b == bound => Ok(()),
                _ => Err("loop head whose end is not a later EndLoop naming it"),
            },
            ControlOp::EndLoop { start, bound, .. } => match partner(start) {
                Some(OpKind::Control(ControlOp::Loop { end, bound: b }))
                    if (start as usize) < i && end as usize == i && b == bound =>
                {
                    Ok(())
                }
                _ => Err("loop end whose head is not an earlier Loop naming it"),
            },
            ControlOp::Branch { to, .. } if to as usize <= i || to as usize > self.ops.count => {
                Err("branch that does not skip forward within the ops")
            }
            _ => Ok(()),
        }
    }

    /// Tensor record `i`, decoded (`None` if out of range).
    pub fn tensor(&self, i: usize) -> Option<TensorRecord> {
        use crate::format::compact::{Compact, Reader};
        TensorRecord::read(&mut Reader::new(self.tensors.record(i)?))
    }

    /// Op record `i` in execution order, decoded (`None` if out of range).
    /// An op whose kind this build leaves out (`E`, see [`Model::parse_only`]) reads as `None`.
    pub fn op(&self, i: usize) -> Option<OpRecord> {
        crate::format::decode::op_record::<E>(self.ops.record(i)?)
    }

    /// The kernel-table entry op `i` runs through (a bit of [`crate::kernels::entry`]), or 0 for a Reshape
    /// planned as an alias of its input, which runs no kernel.
    pub fn op_entry(&self, i: usize) -> Result<u64, Error> {
        let op = self.op(i).ok_or(Error::BadOp {
            op: i as u32,
            reason: "record does not decode",
        })?;
        if let (OpKind::Reshape, &[input]) = (&op.kind, op.inputs.as_slice()) {
            if self.is_alias(input, op.output) {
                // Planned on its input's bytes: the session runs no kernel for it.
                return Ok(0);
            }
        }
        let dtype = |id: u32| self.tensor(id as usize).map_or(DType::F32, |t| t.dtype);
        let all_f32 =
            dtype(op.output) == DType::F32 && op.inputs.iter().all(|&id| dtype(id) == DType::F32);
        Ok(crate::kernels::entry_of(
            &op.kind,
            all_f32,
            dtype(op.output).size(),
        ))
    }

    /// Whether tensors `a` and `b` are the same bytes of the arena (a Reshape planned as an alias).
    fn is_alias(&self, a: u32, b: u32) -> bool {
        let range = |id: u32| match self.tensor(id as usize)? {
            t @ TensorRecord {
                storage: Storage::Arena { offset },
                ..
            } => Some(arena_range(offset, &t)),
            _ => None,
        };
        matches!((range(a), range(b)), (Some(x), Some(y)) if x == y)
    }

    /// Every kernel-table entry the model's ops run through: give it to
    /// [`Kernels::only`](crate::Kernels::only) for a table with nothing else.
    /// (Found while parsing: the union of [`Model::op_entry`] over the ops.)
    pub fn kernel_entries(&self) -> Result<u64, Error> {
        Ok(self.entries)
    }

    /// The mask a build for this model gives [`Model::parse_only`] and
    /// [`Kernels::only`](crate::Kernels::only) (`ember convert --emit rust` writes it as
    /// `KERNEL_ENTRIES`): [`Model::kernel_entries`], plus
    /// [`entry::VARIANTS`](crate::kernels::entry::VARIANTS) for a blob with several shape variants, so
    /// that such a build reads them.
    pub fn build_entries(&self) -> Result<u64, Error> {
        let variants = match self.variant_count() {
            1 => 0,
            _ => crate::kernels::entry::VARIANTS,
        };
        Ok(self.kernel_entries()? | variants)
    }

    /// Number of tensors.
    pub fn tensor_count(&self) -> usize {
        self.tensors.count
    }

    /// Number of ops.
    pub fn op_count(&self) -> usize {
        self.ops.count
    }

    /// Name of tensor `i`, if the blob kept names (and the name decodes as UTF-8).
    pub fn tensor_name(&self, i: usize) -> Option<&'b str> {
        self.names.as_ref()?.decode(i)
    }

    /// Name of op `i` (the source node's name), if the blob kept names (and the name decodes as UTF-8).
    pub fn op_name(&self, i: usize) -> Option<&'b str> {
        self.names.as_ref()?.decode(self.tensors.count + i)
    }

    /// Graph-level facts: producer, inputs, outputs, memory plan.
    pub fn info(&self) -> &ModelInfo<'b> {
        &self.info
    }

    /// Graph input tensor ids.
    pub fn inputs(&self) -> &[u32] {
        &self.info.inputs
    }

    /// Graph output tensor ids.
    pub fn outputs(&self) -> &[u32] {
        &self.info.outputs
    }

    /// The memory plan written by the converter.
    pub fn plan(&self) -> ArenaPlan {
        self.info.arena
    }

    /// Arena bytes a session needs when the arena starts on a 16-byte boundary: persistent, activation
    /// and scratch regions, each rounded up to 16; with shape variants, the largest variant's (every
    /// variant runs in it).
    pub fn arena_bytes(&self) -> usize {
        let p = self.largest_plan();
        round_up(p.persistent_bytes as usize)
            + round_up(p.activation_bytes as usize)
            + round_up(p.scratch_bytes as usize)
    }

    /// Size of the whole blob in bytes.
    pub fn blob_bytes(&self) -> usize {
        self.blob.len()
    }

    /// Size of the weights section in bytes.
    pub fn weights_bytes(&self) -> usize {
        self.weights.len()
    }

    /// The weights section, in place in the blob: a tensor stored as `Storage::Weights { offset }`
    /// holds the bytes from `offset` on (parsing checked that they lie inside). Kernels read weights
    /// from it; a target that uploads weights elsewhere (a GPU) copies them from it.
    pub fn weights(&self) -> &'b [u8] {
        self.weights
    }
}

/// `(start, end)` of an arena tensor; sizes were validated to fit.
pub(crate) fn arena_range(offset: u32, t: &TensorRecord) -> (usize, usize) {
    let size = byte_size(t.dtype, &t.dims).unwrap_or(0) as usize;
    (offset as usize, offset as usize + size)
}

pub(crate) fn round_up(n: usize) -> usize {
    n.div_ceil(ALIGN) * ALIGN
}

/// An op of a blob, as validation reads it: its looked-up tensors, and the weights section.
struct BlobOperands<'t, 'b> {
    t: &'t OpTensors,
    /// The dims of the first inputs and of the output, sliced once (each op's validation reads them
    /// several times: some 200 bytes of flash on the int8 digits demo).
    x: [&'t [usize]; 4],
    y: &'t [usize],
    weights: &'b [u8],
}

impl Operands for BlobOperands<'_, '_> {
    #[inline(always)]
    fn count(&self) -> usize {
        self.t.n
    }
    #[inline(always)]
    fn dims(&self, k: usize) -> &[usize] {
        match self.x.get(k) {
            Some(dims) => dims,
            None => self.t.x[k].dims.as_slice(),
        }
    }
    #[inline(always)]
    fn dtype(&self, k: usize) -> DType {
        self.t.x[k].dtype
    }
    #[inline(always)]
    fn out_dims(&self) -> &[usize] {
        self.y
    }
    #[inline(always)]
    fn out_dtype(&self) -> DType {
        self.t.y.dtype
    }
    #[inline(always)]
    fn all_f32(&self) -> bool {
        self.t.all_f32
    }
    #[inline(always)]
    fn weight(&self, k: usize) -> Result<&[u8], NotAWeight> {
        let x = &self.t.x[k];
        match (x.in_arena, self.weights.get(x.range.0..x.range.1)) {
            (true, _) => Err(NotAWeight::InArena),
            (false, None) => Err(NotAWeight::OutOfBounds),
            (false, Some(bytes)) => Ok(bytes),
        }
    }
}

/// Checks one op as [`Model::parse`] does: the dtypes and shapes of its tensors and the weight values
/// its kernel trusts (the converter runs it on every op it writes, so that what it writes parses).
/// `Err` says what is wrong.
pub fn validate_op(kind: &OpKind, operands: &impl Operands) -> Result<(), &'static str> {
    crate::kernels::validate_in::<{ family::ALL }>(kind, operands)
}

/// The output's dims of op `kind` for inputs of these dims, for a front end that builds a graph of
/// blob ops (the converter, for the ops it carries as their blob kind); `Err` says why they do not
/// fit, or that the kind gives no inference (see `OpEntry::infer`). Inference computes the output;
/// [`validate_op`] then checks everything else.
pub fn infer_dims(kind: &OpKind, inputs: &[&[usize]]) -> Result<OutDims, &'static str> {
    crate::kernels::infer_dims(kind, inputs)
}

/// The output's dtype of op `kind` for inputs of these dtypes (see [`infer_dims`]).
pub fn infer_dtype(kind: &OpKind, inputs: &[DType]) -> Result<DType, &'static str> {
    crate::kernels::infer_dtype(kind, inputs)
}

#[cfg(test)]
mod byte_size_tests {
    use super::byte_size;
    use crate::DType;

    /// The limit by arithmetic: 4 * 3 * 838,860,799 = 10,066,329,588 > 2^32 - 1, wherever the zero sits;
    /// 4 * 1,073,741,823 = 2^32 - 4 fits.
    #[test]
    fn an_empty_tensor_is_zero_bytes_within_the_limit_wherever_its_zero_is() {
        assert_eq!(byte_size(DType::F32, &[3, 838_860_799, 0]), None);
        assert_eq!(byte_size(DType::F32, &[0, 3, 838_860_799]), None);
        assert_eq!(byte_size(DType::F32, &[0, 1_073_741_823]), Some(0));
        assert_eq!(byte_size(DType::F32, &[1_073_741_823]), Some(4_294_967_292));
        assert_eq!(byte_size(DType::F32, &[2, 3, 5]), Some(120));
        assert_eq!(byte_size(DType::F32, &[]), Some(4));
    }
}
