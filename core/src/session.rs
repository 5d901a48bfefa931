//! `Session`: one model running over one caller-owned arena, through one kernel table.
//!
//! The arena is split into three regions, each 16-byte aligned: persistent (state kept across runs),
//! the planned activations (every arena tensor at the offset the converter chose), and the scratch pool
//! (kernel temporaries, sized to the largest request of any op). Nothing is allocated.

use core::ops::Range;

use crate::format::{DType, Storage, TensorRecord, ALIGN, MAX_OP_INPUTS};
use crate::kernels::{Kernels, REFERENCE};
use crate::model::{arena_range, byte_size, round_up, UDims};
use crate::op::OpKind;
use crate::ops::element::{AnyIn, AnyOut, Element};
use crate::ops::{In, Out};
use crate::{Error, Model};

/// A time source for profiling, as a value: a DWT cycle counter on a Cortex-M, `Instant` on a host.
pub trait Clock {
    /// Current time in ticks.
    fn now(&self) -> u64;
    /// Ticks per second (for converting to time).
    fn ticks_per_second(&self) -> u64;
}

/// What `run_profiled` reports after each op.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct OpEvent {
    /// Op index in execution order.
    pub index: usize,
    /// Op name (`Conv2d`, `Add`, ...).
    pub op: &'static str,
    /// Name of the kernel table that ran it.
    pub kernels: &'static str,
    /// Ticks the op took.
    pub ticks: u64,
}

/// Where a session's arena bytes went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MemoryReport {
    /// Bytes of the arena handed in.
    pub arena_bytes: usize,
    /// Bytes the session uses, alignment padding included (`ArenaTooSmall` reports this as `need`).
    pub used_bytes: usize,
    /// Bytes skipped at the start to reach a 16-byte boundary.
    pub alignment_padding: usize,
    /// Persistent region.
    pub persistent_bytes: usize,
    /// Planned activation region.
    pub planned_bytes: usize,
    /// The planner's lower bound for activations (largest sum of tensors live at one step).
    pub lower_bound_bytes: usize,
    /// Highest activation byte actually touched by a run so far (0 before the first run).
    pub peak_bytes: usize,
    /// Scratch pool.
    pub scratch_bytes: usize,
}

/// A model bound to an arena and a kernel table, ready to run.
pub struct Session<'a> {
    model: &'a Model<'a>,
    kernels: &'static Kernels,
    activations: &'a mut [u8],
    report: MemoryReport,
}

impl<'a> Session<'a> {
    /// Opens a session with the reference kernels. Fails with `ArenaTooSmall` if the arena can't hold the
    /// plan (the `need` accounts for aligning the arena's start to 16 bytes).
    pub fn new(model: &'a Model<'a>, arena: &'a mut [u8]) -> Result<Self, Error> {
        Self::with_kernels(model, arena, &REFERENCE)
    }

    /// Opens a session that runs every op through `kernels` (a target's table).
    pub fn with_kernels(
        model: &'a Model<'a>,
        arena: &'a mut [u8],
        kernels: &'static Kernels,
    ) -> Result<Self, Error> {
        check_entries(model, kernels)?;
        let plan = model.plan();
        let addr = arena.as_ptr() as usize;
        let padding = (ALIGN - addr % ALIGN) % ALIGN;
        let persistent = round_up(plan.persistent_bytes as usize);
        let planned = round_up(plan.activation_bytes as usize);
        let scratch = round_up(plan.scratch_bytes as usize);
        let need = padding + model.arena_bytes();
        let have = arena.len();
        if have < need {
            return Err(Error::ArenaTooSmall { need, have });
        }
        let (_, rest) = arena.split_at_mut(padding + persistent);
        let (activations, _scratch) = rest.split_at_mut(planned);
        Ok(Session {
            model,
            kernels,
            activations,
            report: MemoryReport {
                arena_bytes: have,
                used_bytes: need,
                alignment_padding: padding,
                persistent_bytes: persistent,
                planned_bytes: planned,
                lower_bound_bytes: plan.lower_bound_bytes as usize,
                peak_bytes: 0,
                scratch_bytes: scratch,
            },
        })
    }

    /// The model this session runs.
    pub fn model(&self) -> &'a Model<'a> {
        self.model
    }

    /// The kernel table this session runs.
    pub fn kernels(&self) -> &'static Kernels {
        self.kernels
    }

    /// Where the arena bytes went.
    pub fn memory_report(&self) -> MemoryReport {
        self.report
    }

    fn io_tensor(&self, ids: &[u32], index: usize) -> Result<(TensorRecord, Range<usize>), Error> {
        let id = *ids.get(index).ok_or(Error::NoSuchTensor {
            index,
            count: ids.len(),
        })?;
        let t = self.model.tensor(id as usize).ok_or(Error::BadMetadata {
            reason: "graph tensor id out of range",
        })?;
        let range = match t.storage {
            Storage::Arena { offset } => arena_range(offset, &t),
            Storage::Weights { .. } => {
                return Err(Error::BadTensor {
                    tensor: id,
                    reason: "graph inputs and outputs must live in the arena",
                })
            }
        };
        Ok((t, range.0..range.1))
    }

    /// Graph input `index`, writable.
    pub fn input(&mut self, index: usize) -> Result<TensorMut<'_>, Error> {
        let (record, range) = self.io_tensor(self.model.inputs(), index)?;
        Ok(TensorMut {
            record,
            bytes: &mut self.activations[range],
        })
    }

    /// Graph output `index`, read-only (valid after `run`).
    pub fn output(&self, index: usize) -> Result<TensorRef<'_>, Error> {
        let (record, range) = self.io_tensor(self.model.outputs(), index)?;
        Ok(TensorRef {
            record,
            bytes: &self.activations[range],
        })
    }

    /// Runs every op once.
    ///
    /// A run consumes its inputs: the planner lets later ops reuse the arena bytes of a graph input once
    /// it has been read, so write every input again before each run.
    pub fn run(&mut self) -> Result<(), Error> {
        for i in 0..self.model.op_count() {
            self.run_op(i)?;
        }
        Ok(())
    }

    /// Runs every op once, timing each with `clock` and reporting it to `on_op`.
    pub fn run_profiled(
        &mut self,
        clock: &dyn Clock,
        on_op: &mut dyn FnMut(&OpEvent),
    ) -> Result<(), Error> {
        for i in 0..self.model.op_count() {
            let start = clock.now();
            let op = self.run_op(i)?;
            let ticks = clock.now().wrapping_sub(start);
            on_op(&OpEvent {
                index: i,
                op: op.name(),
                kernels: self.kernels.name,
                ticks,
            });
        }
        Ok(())
    }

    fn run_op(&mut self, i: usize) -> Result<OpKind, Error> {
        let bad = |reason| Error::BadOp {
            op: i as u32,
            reason,
        };
        let op = self.model.op(i).ok_or(bad("record does not decode"))?;
        let out_t = self
            .model
            .tensor(op.output as usize)
            .ok_or(bad("output id out of range"))?;
        let out_range = match out_t.storage {
            Storage::Arena { offset } => arena_range(offset, &out_t),
            Storage::Weights { .. } => return Err(bad("output is a weight tensor")),
        };
        let weights = self.model.weights();

        // Resolve inputs: weights in place, arena tensors from either side of the output's bytes.
        let (before, rest) = self.activations.split_at_mut(out_range.0);
        let (out_bytes, after) = rest.split_at_mut(out_range.1 - out_range.0);
        let mut data: heapless::Vec<&[u8], MAX_OP_INPUTS> = heapless::Vec::new();
        let mut dims: heapless::Vec<UDims, MAX_OP_INPUTS> = heapless::Vec::new();
        let mut dtypes: heapless::Vec<DType, MAX_OP_INPUTS> = heapless::Vec::new();
        let mut aliased = false;
        let mut peak = out_range.1;
        for &id in op.inputs.iter() {
            let t = self
                .model
                .tensor(id as usize)
                .ok_or(bad("input id out of range"))?;
            let size = byte_size(t.dtype, &t.dims).ok_or(bad("input size overflows"))? as usize;
            let bytes: &[u8] = match t.storage {
                Storage::Weights { offset } => weights
                    .get(offset as usize..offset as usize + size)
                    .ok_or(bad("weights out of bounds"))?,
                Storage::Arena { offset } => {
                    let (s, e) = (offset as usize, offset as usize + size);
                    peak = peak.max(e);
                    if (s, e) == out_range {
                        // A Reshape planned on its input's bytes: nothing to read.
                        aliased = true;
                        &[]
                    } else if e <= out_range.0 {
                        before.get(s..e).ok_or(bad("input out of bounds"))?
                    } else if s >= out_range.1 {
                        after
                            .get(s - out_range.1..e - out_range.1)
                            .ok_or(bad("input out of bounds"))?
                    } else {
                        return Err(bad("output overlaps an input in the arena"));
                    }
                }
            };
            data.push(bytes).map_err(|_| bad("too many inputs"))?;
            dims.push(UDims::of(&t.dims))
                .map_err(|_| bad("too many inputs"))?;
            dtypes.push(t.dtype).map_err(|_| bad("too many inputs"))?;
        }
        self.report.peak_bytes = self.report.peak_bytes.max(peak);
        let y_dims = UDims::of(&out_t.dims);
        let any_in = |k: usize| -> Result<AnyIn<'_>, Error> {
            match (data.get(k), dims.get(k), dtypes.get(k)) {
                (Some(d), Some(s), Some(&t)) => Ok(AnyIn {
                    dtype: t,
                    bytes: d,
                    dims: s.as_slice(),
                }),
                _ => Err(bad("missing input")),
            }
        };
        let y_any = AnyOut {
            dtype: out_t.dtype,
            bytes: out_bytes,
            dims: y_dims.as_slice(),
        };
        let k = self.kernels;
        let all_f32 = out_t.dtype == DType::F32 && dtypes.iter().all(|&t| t == DType::F32);
        match &op.kind {
            // An alias planned by the converter: the bytes are already in place.
            OpKind::Reshape if aliased => {}
            OpKind::Compare(p) => (k.compare)(p, any_in(0)?, any_in(1)?, y_any),
            OpKind::Logical(p) => {
                (k.logical)(p, typed(any_in(0)?)?, typed(any_in(1)?)?, out(y_any)?)
            }
            OpKind::Not => (k.not)(typed(any_in(0)?)?, out(y_any)?),
            OpKind::Where => (k.where_select)(any_in(0)?, any_in(1)?, any_in(2)?, y_any),
            OpKind::Cast(p) => (k.cast)(p, any_in(0)?, y_any),
            OpKind::ArgReduce(p) => (k.arg_reduce)(p, any_in(0)?, out(y_any)?),
            OpKind::Binary(p) if !all_f32 => (k.binary_any)(p, any_in(0)?, any_in(1)?, y_any),
            OpKind::Unary(p) if !all_f32 => (k.unary_any)(p, any_in(0)?, y_any),
            OpKind::QuantConv2d(p) => {
                let bias = match data.len() {
                    4 => Some(typed::<i32>(any_in(3)?)?.data),
                    _ => None,
                };
                let rq = typed::<i32>(any_in(2)?)?.data;
                (k.quant_conv2d)(
                    p,
                    typed(any_in(0)?)?,
                    typed(any_in(1)?)?,
                    bias,
                    rq,
                    out(y_any)?,
                )
            }
            OpKind::QuantFullyConnected(p) => {
                let bias = match data.len() {
                    4 => Some(typed::<i32>(any_in(3)?)?.data),
                    _ => None,
                };
                let rq = typed::<i32>(any_in(2)?)?.data;
                let (x, w) = (typed(any_in(0)?)?, typed(any_in(1)?)?);
                (k.quant_fully_connected)(p, x, w, bias, rq, out(y_any)?)
            }
            OpKind::QuantAdd(p) => {
                (k.quant_add)(p, typed(any_in(0)?)?, typed(any_in(1)?)?, out(y_any)?)
            }
            OpKind::QuantMul(p) => {
                (k.quant_mul)(p, typed(any_in(0)?)?, typed(any_in(1)?)?, out(y_any)?)
            }
            OpKind::QuantAvgPool2d(p) => (k.quant_avg_pool)(p, typed(any_in(0)?)?, out(y_any)?),
            OpKind::QuantMaxPool2d(p) => (k.quant_max_pool)(p, typed(any_in(0)?)?, out(y_any)?),
            OpKind::QuantSoftmax(p) => (k.quant_softmax)(p, typed(any_in(0)?)?, out(y_any)?),
            OpKind::Quantize(p) => (k.quantize)(p, typed(any_in(0)?)?, out(y_any)?),
            OpKind::Dequantize(p) => (k.dequantize)(p, typed(any_in(0)?)?, out(y_any)?),
            OpKind::Requantize(p) => (k.requantize)(p, typed(any_in(0)?)?, out(y_any)?),
            kind if all_f32 => run_f32(k, kind, &any_in, data.len(), y_any)?,
            kind => {
                let mut xs: heapless::Vec<AnyIn<'_>, MAX_OP_INPUTS> = heapless::Vec::new();
                for j in 0..data.len() {
                    xs.push(any_in(j)?).map_err(|_| bad("too many inputs"))?;
                }
                let movement = match y_any.dtype.size() {
                    1 => k.movement8,
                    2 => k.movement16,
                    4 => k.movement32,
                    _ => k.movement64,
                };
                movement(kind, &xs, y_any)?
            }
        }
        Ok(op.kind)
    }
}

/// The typed view of an input (element type checked by `Model::parse`; alignment by the cast).
fn typed<T: bytemuck::Pod>(x: AnyIn<'_>) -> Result<In<'_, T>, Error> {
    x.typed().ok_or(Error::Unsupported {
        reason: "tensor bytes are not aligned for their dtype",
    })
}

/// The typed view of the output.
fn out<T: bytemuck::Pod>(y: AnyOut<'_>) -> Result<Out<'_, T>, Error> {
    y.typed().ok_or(Error::Unsupported {
        reason: "tensor bytes are not aligned for their dtype",
    })
}

/// Runs an op whose inputs and output are all f32, through the kernel table.
fn run_f32<'d>(
    k: &Kernels,
    kind: &OpKind,
    input: &dyn Fn(usize) -> Result<AnyIn<'d>, Error>,
    n_inputs: usize,
    y: AnyOut<'_>,
) -> Result<(), Error> {
    let x = |i: usize| -> Result<In<'d>, Error> { typed(input(i)?) };
    let bias = |i: usize| -> Result<Option<&'d [f32]>, Error> {
        if i < n_inputs {
            Ok(Some(x(i)?.data))
        } else {
            Ok(None)
        }
    };
    let y: Out<'_> = out(y)?;
    match kind {
        OpKind::Conv2d(p) => (k.conv2d)(p, x(0)?, x(1)?, bias(2)?, y),
        OpKind::ConvTranspose2d(p) => (k.conv_transpose2d)(p, x(0)?, x(1)?, bias(2)?, y),
        OpKind::FullyConnected(p) => (k.fully_connected)(p, x(0)?, x(1)?, bias(2)?, y),
        OpKind::MatMul(p) => (k.matmul)(p, x(0)?, x(1)?, y),
        OpKind::Binary(p) => (k.binary)(p, x(0)?, x(1)?, y),
        OpKind::Unary(p) => (k.unary)(p, x(0)?, y),
        OpKind::Softmax(p) => (k.softmax)(p, x(0)?, y),
        OpKind::MaxPool2d(p) => (k.max_pool)(p, x(0)?, y),
        OpKind::AvgPool2d(p) => (k.avg_pool)(p, x(0)?, y),
        OpKind::GlobalAvgPool => (k.global_avg_pool)(x(0)?, y),
        OpKind::Concat(p) => {
            let mut xs: heapless::Vec<In<'_>, MAX_OP_INPUTS> = heapless::Vec::new();
            for j in 0..n_inputs {
                xs.push(x(j)?).map_err(|_| Error::Unsupported {
                    reason: "too many inputs",
                })?;
            }
            (k.concat)(p, &xs, y)
        }
        OpKind::Transpose(p) => (k.transpose)(p, x(0)?, y),
        OpKind::Pad(p) => (k.pad)(p, x(0)?, y),
        OpKind::Reshape => (k.reshape)(x(0)?, y),
        OpKind::LogSoftmax(p) => (k.log_softmax)(p, x(0)?, y),
        OpKind::Reduce(p) => (k.reduce)(p, x(0)?, y),
        OpKind::LayerNorm(p) => (k.layer_norm)(p, x(0)?, x(1)?, bias(2)?, y),
        OpKind::Slice(p) => (k.slice)(p, x(0)?, y),
        OpKind::Gather(p) => (k.gather)(p, x(0)?, x(1)?, y),
        OpKind::Broadcast => (k.broadcast)(x(0)?, y),
        OpKind::Resize(p) => (k.resize)(p, x(0)?, y),
        // Ops on other dtypes are dispatched before this function.
        OpKind::Compare(_)
        | OpKind::Logical(_)
        | OpKind::Not
        | OpKind::Where
        | OpKind::Cast(_)
        | OpKind::ArgReduce(_)
        | OpKind::QuantConv2d(_)
        | OpKind::QuantFullyConnected(_)
        | OpKind::QuantAdd(_)
        | OpKind::QuantMul(_)
        | OpKind::QuantAvgPool2d(_)
        | OpKind::QuantMaxPool2d(_)
        | OpKind::QuantSoftmax(_)
        | OpKind::Quantize(_)
        | OpKind::Dequantize(_)
        | OpKind::Requantize(_) => {}
    }
    Ok(())
}

fn check_dtype<T: Element>(dtype: DType) -> Result<(), Error> {
    let same = T::DTYPE == dtype || (T::DTYPE == DType::U8 && dtype == DType::Bool);
    if same {
        Ok(())
    } else {
        Err(Error::WrongDType {
            expected: dtype,
            got: T::DTYPE,
        })
    }
}

/// Refuses a model with an op whose entry `kernels` leaves out (see [`crate::kernels::entry`]).
fn check_entries(model: &Model<'_>, kernels: &Kernels) -> Result<(), Error> {
    for i in 0..model.op_count() {
        let need = model.op_entry(i)?;
        if kernels.entries & need != need {
            let name = model.op(i).map_or("?", |op| op.kind.name());
            return Err(Error::KernelMissing {
                op: i as u32,
                name,
                kernels: kernels.name,
            });
        }
    }
    Ok(())
}

/// A writable view of a graph input.
pub struct TensorMut<'s> {
    record: TensorRecord,
    bytes: &'s mut [u8],
}

impl TensorMut<'_> {
    /// Dimensions (as the source model declared them, e.g. NCHW for an ONNX image input).
    pub fn dims(&self) -> &[u32] {
        &self.record.dims
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.record.dtype
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.record.dtype.size()
    }

    /// True if the tensor holds no elements.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The elements as f32, writable in place.
    pub fn as_f32_mut(&mut self) -> Result<&mut [f32], Error> {
        if self.record.dtype != DType::F32 {
            return Err(Error::WrongDType {
                expected: self.record.dtype,
                got: DType::F32,
            });
        }
        bytemuck::try_cast_slice_mut(self.bytes).map_err(|_| Error::Unsupported {
            reason: "tensor is not f32-aligned",
        })
    }

    /// The elements as `T` (whose dtype must be the tensor's; Bool tensors are read as `u8`).
    pub fn as_mut_slice<T: Element>(&mut self) -> Result<&mut [T], Error> {
        check_dtype::<T>(self.record.dtype)?;
        bytemuck::try_cast_slice_mut(self.bytes).map_err(|_| Error::Unsupported {
            reason: "tensor bytes are not aligned for their dtype",
        })
    }

    /// The raw little-endian bytes, writable (for inputs of any dtype, e.g. from a `.npy` file).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        self.bytes
    }

    /// Copies `values` in; the length must match.
    pub fn write_f32(&mut self, values: &[f32]) -> Result<(), Error> {
        let dst = self.as_f32_mut()?;
        if dst.len() != values.len() {
            return Err(Error::WrongLength {
                expected: dst.len(),
                got: values.len(),
            });
        }
        dst.copy_from_slice(values);
        Ok(())
    }
}

/// A read-only view of a graph output.
pub struct TensorRef<'s> {
    record: TensorRecord,
    bytes: &'s [u8],
}

impl<'s> TensorRef<'s> {
    /// Dimensions (as the source model declared them).
    pub fn dims(&self) -> &[u32] {
        &self.record.dims
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.record.dtype
    }

    /// The elements as f32.
    pub fn as_f32(&self) -> Result<&'s [f32], Error> {
        if self.record.dtype != DType::F32 {
            return Err(Error::WrongDType {
                expected: self.record.dtype,
                got: DType::F32,
            });
        }
        bytemuck::try_cast_slice(self.bytes).map_err(|_| Error::Unsupported {
            reason: "tensor is not f32-aligned",
        })
    }

    /// The elements as `T` (whose dtype must be the tensor's; Bool tensors are read as `u8`).
    pub fn as_slice<T: Element>(&self) -> Result<&'s [T], Error> {
        check_dtype::<T>(self.record.dtype)?;
        bytemuck::try_cast_slice(self.bytes).map_err(|_| Error::Unsupported {
            reason: "tensor bytes are not aligned for their dtype",
        })
    }

    /// The raw little-endian bytes.
    pub fn bytes(&self) -> &'s [u8] {
        self.bytes
    }

    /// Copies the elements out; the length must match.
    pub fn read_f32(&self, out: &mut [f32]) -> Result<(), Error> {
        let src = self.as_f32()?;
        if src.len() != out.len() {
            return Err(Error::WrongLength {
                expected: src.len(),
                got: out.len(),
            });
        }
        out.copy_from_slice(src);
        Ok(())
    }
}

/// A `Clock` over `std::time::Instant`, in nanoseconds.
#[cfg(feature = "std")]
#[derive(Clone, Copy, Debug)]
pub struct StdClock {
    start: std::time::Instant,
}

#[cfg(feature = "std")]
impl Default for StdClock {
    fn default() -> Self {
        StdClock {
            start: std::time::Instant::now(),
        }
    }
}

#[cfg(feature = "std")]
impl Clock for StdClock {
    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn ticks_per_second(&self) -> u64 {
        1_000_000_000
    }
}
