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
use crate::kernels::{entry, family, has};
use crate::ops;
use crate::ops::shape::Checked;
use crate::schema::{DType, OpKind, MAX_OP_INPUTS, MAX_RANK};
use crate::Error;

mod lookup;
mod tables;
pub(crate) use lookup::{OpTensors, Operand};
use tables::{read_u16, read_u32, RecordTable, Sections};

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
    /// The kernel-table entries of every op, found by `validate`.
    entries: u64,
}

/// Byte size of a tensor, or `None` if it overflows `u32`.
pub(crate) fn byte_size(dtype: DType, dims: &[u32]) -> Option<u32> {
    let mut n = dtype.size() as u32;
    for &d in dims {
        n = n.checked_mul(d)?;
    }
    Some(n)
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
        &self.dims[..self.rank]
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
        let info_bytes = sections.require(SectionKind::Info)?;
        let info = ModelInfo::read(&mut crate::format::compact::Reader::new(info_bytes)).ok_or(
            Error::BadMetadata {
                reason: "info section does not decode",
            },
        )?;
        let tensors = RecordTable::new(
            sections.require(SectionKind::Tensors)?,
            SectionKind::Tensors,
        )?;
        let ops = RecordTable::new(sections.require(SectionKind::Ops)?, SectionKind::Ops)?;
        let weights = sections.require(SectionKind::Weights)?;
        let names = match sections.find(SectionKind::Names) {
            Some(bytes) => Some(RecordTable::new(bytes, SectionKind::Names)?),
            None => None,
        };
        let mut model = Model {
            blob,
            info,
            tensors,
            ops,
            names,
            weights,
            minor,
            entries: 0,
        };
        model.entries = model.validate()?;
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

    /// [`Model::validate_op`] on the looked-up tensors.
    fn check_op(&self, i: usize, t: &OpTensors, entries: &mut u64) -> Result<(), Error> {
        let bad = |reason| Error::BadOp {
            op: i as u32,
            reason,
        };
        let (op, n, all_f32) = (&t.op, t.n, t.all_f32);
        let out_dtype = t.y.dtype;
        let d = |k: usize| (k < n).then(|| t.x[k].dims.as_slice());
        let x = t.x[0].dims.as_slice();
        let dt = |k: usize| t.x[k].dtype;
        let typed = |k: usize| (t.x[k].dims.as_slice(), t.x[k].dtype);
        let y = &t.y.dims;
        let yt = (y.as_slice(), out_dtype);
        let inputs = &t.x[..n.min(MAX_OP_INPUTS)];
        // Which dtypes each op takes: f32-only ops, ops on any dtype (checked by their own validate),
        // and data movement (input and output of one dtype, any).
        let same_dtype = n > 0 && inputs.iter().all(|x| x.dtype == out_dtype);
        let movement = matches!(
            op.kind,
            OpKind::Concat(_)
                | OpKind::Transpose(_)
                | OpKind::Pad(_)
                | OpKind::Reshape
                | OpKind::Slice(_)
                | OpKind::Broadcast
        );
        // (Each test is skipped, as a constant, by a build whose entries `E` cannot run the kinds it names.)
        let any_dtype = has::<E>(
            entry::COMPARE
                | entry::LOGICAL
                | entry::NOT
                | entry::WHERE_SELECT
                | entry::CAST
                | entry::ARG_REDUCE,
        ) && matches!(
            op.kind,
            OpKind::Compare(_)
                | OpKind::Logical(_)
                | OpKind::Not
                | OpKind::Where
                | OpKind::Cast(_)
                | OpKind::ArgReduce(_)
        );
        if movement {
            if !same_dtype {
                return Err(bad(
                    "data-movement op whose inputs and output differ in dtype",
                ));
            }
        } else if let (true, OpKind::Gather(_)) =
            (has::<E>(entry::GATHER | entry::MOVEMENT), &op.kind)
        {
            if out_dtype != dt(0) || dt(1) != DType::F32 {
                return Err(bad(
                    "gather needs data and output of one dtype and f32 indices",
                ));
            }
        } else if let (true, OpKind::FullyConnectedW8(_)) =
            (has::<E>(entry::FULLY_CONNECTED_W8), &op.kind)
        {
            let f32_at = |k: usize| k >= n || dt(k) == DType::F32;
            if out_dtype != DType::F32
                || !f32_at(0)
                || dt(1) != DType::I8
                || !f32_at(2)
                || !f32_at(3)
            {
                return Err(bad(
                    "weight-only int8 fully connected needs int8 weights and f32 input, scales, bias \
                     and output",
                ));
            }
        } else if let (true, OpKind::Embedding) = (has::<E>(entry::EMBEDDING), &op.kind) {
            let table_ok = match (dt(0), n) {
                (DType::F32, 2) => true,
                (DType::I8, 3) => dt(2) == DType::F32,
                _ => false,
            };
            if out_dtype != DType::F32 || !table_ok || !matches!(dt(1), DType::I32 | DType::I64) {
                return Err(bad(
                    "embedding needs an f32 table (or int8 with f32 scales), int32 or int64 ids and \
                     an f32 output",
                ));
            }
        } else if has::<E>(entry::BINARY_ANY | entry::UNARY_ANY)
            && matches!(op.kind, OpKind::Binary(_) | OpKind::Unary(_))
            && !all_f32
        {
            // Integer and f64 arithmetic: arith's validate checks the dtypes.
        } else if let Some(want) = quant_dtypes(&op.kind, n) {
            let ok = want.output == out_dtype
                && inputs
                    .iter()
                    .zip(want.inputs)
                    .all(|(have, &need)| have.dtype == need);
            if !ok {
                return Err(bad(
                    "int8 op with tensors of the wrong dtypes (x, w int8; requant, bias int32)",
                ));
            }
        } else if !any_dtype && !all_f32 {
            return Err(bad("this op runs on f32 tensors only"));
        }
        let checked = match &op.kind {
            OpKind::Binary(p) if !all_f32 && has::<E>(entry::BINARY_ANY) => {
                shape_reason(ops::math::arith::validate_binary(p, typed(0), typed(1), yt))
            }
            OpKind::Unary(p) if !all_f32 && has::<E>(entry::UNARY_ANY) => {
                shape_reason(ops::math::arith::validate_unary(p, typed(0), yt))
            }
            OpKind::Conv2d(p) if has::<E>(entry::CONV2D) => {
                ops::nn::conv::check(p, x, d(1).unwrap_or(&[]), d(2), y.as_slice())
            }
            OpKind::ConvTranspose2d(p) if has::<E>(entry::CONV_TRANSPOSE2D) => shape_reason(
                ops::nn::conv_transpose::validate(p, x, d(1).unwrap_or(&[]), d(2), y.as_slice()),
            ),
            OpKind::FullyConnected(p) if has::<E>(entry::FULLY_CONNECTED) => {
                ops::nn::fully_connected::check(p, x, d(1).unwrap_or(&[]), d(2), y.as_slice())
            }
            OpKind::MatMul(p) if has::<E>(entry::MATMUL) => shape_reason(
                ops::nn::matmul::validate(p, x, d(1).unwrap_or(&[]), y.as_slice()),
            ),
            OpKind::Binary(p) if all_f32 && has::<E>(entry::BINARY) => shape_reason(
                ops::math::binary::validate(p, x, d(1).unwrap_or(&[]), y.as_slice()),
            ),
            OpKind::Unary(p) if all_f32 && has::<E>(entry::UNARY) => {
                shape_reason(ops::math::unary::validate(p, x, y.as_slice()))
            }
            OpKind::Softmax(p) if has::<E>(entry::SOFTMAX) => {
                shape_reason(ops::nn::softmax::validate(p, x, y.as_slice()))
            }
            OpKind::MaxPool2d(p) if has::<E>(entry::MAX_POOL) => {
                ops::pool::max_pool::check(p, x, y.as_slice())
            }
            OpKind::AvgPool2d(p) if has::<E>(entry::AVG_POOL) => {
                shape_reason(ops::pool::avg_pool::validate(p, x, y.as_slice()))
            }
            OpKind::GlobalAvgPool if has::<E>(entry::GLOBAL_AVG_POOL) => {
                shape_reason(ops::pool::global_avg_pool::validate(x, y.as_slice()))
            }
            OpKind::Concat(p) if has::<E>(entry::CONCAT | entry::MOVEMENT) => {
                let mut xs: heapless::Vec<&[usize], MAX_OP_INPUTS> = heapless::Vec::new();
                for u in inputs {
                    let _ = xs.push(u.dims.as_slice());
                }
                shape_reason(ops::array::concat::validate(p, &xs, y.as_slice()))
            }
            OpKind::Transpose(p) if has::<E>(entry::TRANSPOSE | entry::MOVEMENT) => {
                shape_reason(ops::array::transpose::validate(p, x, y.as_slice()))
            }
            OpKind::Pad(p) if has::<E>(entry::PAD | entry::MOVEMENT) => {
                shape_reason(ops::array::pad::validate(p, x, y.as_slice()))
            }
            // Every build validates a Reshape: planned as an alias of its input, it needs no kernel.
            OpKind::Reshape => ops::array::reshape::check(x, y.as_slice()),
            OpKind::LogSoftmax(p) if has::<E>(entry::LOG_SOFTMAX) => {
                shape_reason(ops::nn::softmax::validate(p, x, y.as_slice()))
            }
            OpKind::Reduce(p) if has::<E>(entry::REDUCE) => {
                shape_reason(ops::nn::reduce::validate(p, x, y.as_slice()))
            }
            OpKind::LayerNorm(p) if has::<E>(entry::LAYER_NORM) => shape_reason(
                ops::nn::layer_norm::validate(p, x, d(1).unwrap_or(&[]), d(2), y.as_slice()),
            ),
            OpKind::Slice(p) if has::<E>(entry::SLICE | entry::MOVEMENT) => {
                shape_reason(ops::array::slice::validate(p, x, y.as_slice()))
            }
            OpKind::Gather(p) if has::<E>(entry::GATHER | entry::MOVEMENT) => {
                self.validate_gather(p, &t.x[1], x, y.as_slice())
            }
            OpKind::Broadcast if has::<E>(entry::BROADCAST | entry::MOVEMENT) => {
                shape_reason(ops::array::broadcast::validate(x, y.as_slice()))
            }
            OpKind::Resize(p) if has::<E>(entry::RESIZE) => {
                shape_reason(ops::array::resize::validate(p, x, y.as_slice()))
            }
            OpKind::Compare(p) if has::<E>(entry::COMPARE) => {
                shape_reason(ops::math::compare::validate(p, typed(0), typed(1), yt))
            }
            OpKind::Logical(p) if has::<E>(entry::LOGICAL) => {
                shape_reason(ops::math::logical::validate(p, typed(0), typed(1), yt))
            }
            OpKind::Not if has::<E>(entry::NOT) => {
                shape_reason(ops::math::logical::validate_not(typed(0), yt))
            }
            OpKind::Where if has::<E>(entry::WHERE_SELECT) => shape_reason(
                ops::math::where_op::validate(typed(0), typed(1), typed(2), yt),
            ),
            OpKind::Cast(p) if has::<E>(entry::CAST) => {
                shape_reason(ops::math::cast::validate(p, typed(0), yt))
            }
            OpKind::ArgReduce(p) if has::<E>(entry::ARG_REDUCE) => {
                shape_reason(ops::nn::arg_reduce::validate(p, typed(0), yt))
            }
            kind @ (OpKind::QuantConv2d(_) | OpKind::QuantFullyConnected(_))
                if has::<E>(entry::QUANT_CONV2D | entry::QUANT_FULLY_CONNECTED) =>
            {
                let (w, b, rq, y) = (d(1).unwrap_or(&[]), d(3), d(2).unwrap_or(&[]), y.as_slice());
                match kind {
                    OpKind::QuantConv2d(p) if has::<E>(entry::QUANT_CONV2D) => {
                        ops::quant::conv::check(p, x, w, b, rq, y)
                    }
                    OpKind::QuantFullyConnected(p) if has::<E>(entry::QUANT_FULLY_CONNECTED) => {
                        ops::quant::fully_connected::check(p, x, w, b, rq, y)
                    }
                    _ => Err(LEFT_OUT),
                }
                .and_then(|()| self.validate_requant(&t.x[2]))
            }
            OpKind::QuantAdd(p) if has::<E>(entry::QUANT_ADD) => shape_reason(
                ops::quant::add::validate(p, x, d(1).unwrap_or(&[]), y.as_slice()),
            ),
            OpKind::QuantMul(p) if has::<E>(entry::QUANT_MUL) => shape_reason(
                ops::quant::mul::validate(p, x, d(1).unwrap_or(&[]), y.as_slice()),
            ),
            OpKind::QuantAvgPool2d(p) if has::<E>(entry::QUANT_AVG_POOL) => {
                shape_reason(ops::quant::avg_pool::validate(p, x, y.as_slice()))
            }
            OpKind::QuantMaxPool2d(p) if has::<E>(entry::QUANT_MAX_POOL) => {
                ops::quant::max_pool::check(p, x, y.as_slice())
            }
            OpKind::QuantSoftmax(p) if has::<E>(entry::QUANT_SOFTMAX) => {
                ops::quant::softmax::check(p, x, y.as_slice())
            }
            OpKind::Quantize(p) if has::<E>(entry::QUANTIZE) => {
                ops::quant::quantize::check(p, x, y.as_slice())
            }
            OpKind::Dequantize(p) if has::<E>(entry::DEQUANTIZE) => {
                ops::quant::dequantize::check(p, x, y.as_slice())
            }
            OpKind::Requantize(p) if has::<E>(entry::REQUANTIZE) => {
                shape_reason(ops::quant::requantize::validate(p, x, y.as_slice()))
            }
            OpKind::FullyConnectedW8(p) if has::<E>(entry::FULLY_CONNECTED_W8) => {
                ops::nn::fully_connected_w8::check(
                    p,
                    x,
                    d(1).unwrap_or(&[]),
                    d(2).unwrap_or(&[]),
                    d(3),
                    y.as_slice(),
                )
            }
            OpKind::Embedding if has::<E>(entry::EMBEDDING) => {
                ops::array::embedding::check(x, d(1).unwrap_or(&[]), d(2), y.as_slice())
            }
            // An op whose entry this build leaves out (`parse_only`): its validation is not linked.
            _ => return Err(bad(LEFT_OUT)),
        };

        checked.map_err(bad)?;
        if t.aliased {
            // A Reshape planned on its input's bytes runs no kernel.
            return Ok(());
        }
        match crate::kernels::entry_in::<E>(&op.kind, all_f32, out_dtype.size()) {
            // A kind validated above whose entry `E` leaves out (a Reshape that is not an alias).
            0 => Err(bad(LEFT_OUT)),
            entry => {
                *entries |= entry;
                Ok(())
            }
        }
    }

    /// Gather's shapes and its indices: a weight tensor of whole numbers inside the axis (read here
    /// once, so the kernel can trust them).
    fn validate_gather(
        &self,
        p: &ops::array::gather::GatherParams,
        indices: &Operand,
        x: &[usize],
        y: &[usize],
    ) -> Checked {
        shape_reason(ops::array::gather::validate(
            p,
            x,
            indices.dims.as_slice(),
            y,
        ))?;
        let values: &[f32] = self.weight_values(
            indices,
            [
                "gather indices must be a weight tensor",
                "gather indices run past the weights section",
                "gather indices are not f32-aligned",
            ],
        )?;
        shape_reason(ops::array::gather::validate_indices(p, x, values))
    }

    /// The requantization input of an int8 conv or fully connected op: an I32 weight tensor whose
    /// `(multiplier, shift)` rows are checked here once (see `requant::check_per_channel`).
    fn validate_requant(&self, requant: &Operand) -> Checked {
        let values: &[i32] = self.weight_values(
            requant,
            [
                "requantization tensor must be a weight tensor",
                "requantization tensor runs past the weights section",
                "requantization tensor is not i32-aligned",
            ],
        )?;
        ops::quant::requant::check_rows(values)
    }

    /// The values of a weight tensor that validation reads; `errors` says what is wrong if the tensor
    /// lives in the arena, runs past the weights section, or is not aligned for `T`.
    fn weight_values<T: bytemuck::Pod>(
        &self,
        t: &Operand,
        errors: [&'static str; 3],
    ) -> Checked<&'b [T]> {
        match (t.in_arena, self.weights.get(t.range.0..t.range.1)) {
            (true, _) => Err(errors[0]),
            (false, None) => Err(errors[1]),
            (false, Some(bytes)) => bytemuck::try_cast_slice(bytes).map_err(|_| errors[2]),
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
    /// and scratch regions, each rounded up to 16.
    pub fn arena_bytes(&self) -> usize {
        let p = self.info.arena;
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

    /// The weights section (read in place by kernels).
    pub(crate) fn weights(&self) -> &'b [u8] {
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

/// The reason of a validator's shape error (the only error validators give).
fn shape_reason(checked: Result<(), Error>) -> Checked {
    checked.map_err(|e| match e {
        Error::Shape { reason } => reason,
        _ => "op shapes or parameters are invalid",
    })
}

/// Why a model is refused whose op needs an entry the build leaves out ([`Model::parse_only`]).
const LEFT_OUT: &str = "this build of the runtime leaves out this op kind (Model::parse_only)";

/// The dtypes an int8 op takes (inputs in order, then output), or `None` for other ops.
struct QuantDTypes {
    inputs: &'static [DType],
    output: DType,
}

fn quant_dtypes(kind: &OpKind, n_inputs: usize) -> Option<QuantDTypes> {
    use DType::{F32, I32, I8};
    let q = |inputs: &'static [DType], output| Some(QuantDTypes { inputs, output });
    match kind {
        OpKind::QuantConv2d(_) | OpKind::QuantFullyConnected(_) if n_inputs == 4 => {
            q(&[I8, I8, I32, I32], I8)
        }
        OpKind::QuantConv2d(_) | OpKind::QuantFullyConnected(_) => q(&[I8, I8, I32], I8),
        OpKind::QuantAdd(_) | OpKind::QuantMul(_) => q(&[I8, I8], I8),
        OpKind::QuantAvgPool2d(_)
        | OpKind::QuantMaxPool2d(_)
        | OpKind::QuantSoftmax(_)
        | OpKind::Requantize(_) => q(&[I8], I8),
        OpKind::Quantize(_) => q(&[F32], I8),
        OpKind::Dequantize(_) => q(&[I8], F32),
        _ => None,
    }
}
