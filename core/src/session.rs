//! `Session`: one model running over one caller-owned arena, through one kernel table.
//!
//! The arena is split into three regions, each 16-byte aligned: persistent (state kept across runs),
//! the planned activations (every arena tensor at the offset the converter chose), and the scratch pool
//! (kernel temporaries, sized to the largest request of any op). Nothing is allocated.
//!
//! A model with shape variants (`ember convert --dim`) runs any of them in the same arena, sized for
//! the largest: [`Session::set_dims`] or [`Session::set_input_shapes`] switches between them without
//! allocating, and the activation bytes a smaller variant leaves free are the application's
//! ([`Session::spare_mut`]).

use core::ops::Range;

use crate::format::{Storage, TensorRecord, ALIGN, MAX_VARIANTS};
use crate::kernels::{
    entry::CONTROL, entry::VARIANTS, entry::WORKSPACE, family, has, Kernels, REFERENCE,
};
use crate::model::{arena_range, round_up, OpTensors, Operand};
use crate::ops::control::Flow;
use crate::ops::element::{AnyIn, AnyOut};
use crate::ops::entry::OpArgs;
use crate::schema::{DType, OpKind, MAX_OP_INPUTS};
use crate::workspace::{Parallel, Workspace};
use crate::{Error, Model};

mod switching;
mod tensors;
mod variants;
pub use tensors::{TensorMut, TensorRef};
pub use variants::VariantUse;
use variants::{note_use, VariantState};

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
    /// Scratch pool: what the converter planned, or (for a session opened with
    /// [`Session::with_options`]) the largest request of the kernel table's kernels.
    pub scratch_bytes: usize,
}

/// A model bound to an arena and a kernel table, ready to run. `E` is the model's entry mask (see
/// [`Model::parse_only`]): the session dispatches only those op kinds.
// `repr(C)`: the fields stay in this order, the workspace (unused in firmware) last, so that the
// others keep the short stack offsets Thumb code loads them with (8 to 16 bytes of flash on the digits
// firmware).
#[repr(C)]
pub struct Session<'a, const E: u64 = { family::ALL }> {
    model: &'a Model<'a, E>,
    kernels: &'static Kernels,
    activations: &'a mut [u8],
    report: MemoryReport,
    /// The scratch region and the workers, for a build with [`WORKSPACE`] (`None` in firmware).
    workspace: Option<Workspace<'a>>,
    /// Every op looked up once (sessions opened with [`Session::with_options`] on a host), so that a run
    /// does not decode op and tensor records again.
    /// The same for every shape variant, by variant index (empty: not looked up).
    #[cfg(feature = "alloc")]
    prepared: alloc::vec::Vec<Prepared>,
    /// For a model with shape variants, in a build with [`VARIANTS`] (`None` in firmware that runs
    /// one shape).
    variants: Option<VariantState<'a, E>>,
}

/// One looked-up op as a run needs it: a whole [`OpTensors`] (decoded for this run), or an op the session
/// looked up when it opened. `run_op` is generic over it, so a build without the second (firmware) keeps
/// exactly the code it had.
trait OpParts {
    fn kind(&self) -> &OpKind;
    fn output(&self) -> &Operand;
    fn input_count(&self) -> usize;
    fn inputs(&self) -> impl Iterator<Item = &Operand>;
    fn aliased(&self) -> bool;
    fn all_f32(&self) -> bool;
}

impl OpParts for OpTensors {
    #[inline(always)]
    fn kind(&self) -> &OpKind {
        &self.op.kind
    }
    #[inline(always)]
    fn output(&self) -> &Operand {
        &self.y
    }
    #[inline(always)]
    fn input_count(&self) -> usize {
        self.n
    }
    #[inline(always)]
    fn inputs(&self) -> impl Iterator<Item = &Operand> {
        self.x.iter().take(self.n)
    }
    #[inline(always)]
    fn aliased(&self) -> bool {
        self.aliased
    }
    #[inline(always)]
    fn all_f32(&self) -> bool {
        self.all_f32
    }
}

/// An op of [`Prepared`], with its inputs.
#[cfg(feature = "alloc")]
struct OpView<'t> {
    op: &'t PreparedOp,
    x: &'t [Operand],
}

#[cfg(feature = "alloc")]
impl OpParts for OpView<'_> {
    fn kind(&self) -> &OpKind {
        &self.op.kind
    }
    fn output(&self) -> &Operand {
        &self.op.y
    }
    fn input_count(&self) -> usize {
        self.x.len()
    }
    fn inputs(&self) -> impl Iterator<Item = &Operand> {
        self.x.iter()
    }
    fn aliased(&self) -> bool {
        self.op.aliased
    }
    fn all_f32(&self) -> bool {
        self.op.all_f32
    }
}

/// The model's ops looked up once: per op its kind, output and flags, and where its inputs start in
/// `inputs` (about 200 bytes an op, against 1.5 KB for a whole [`OpTensors`]).
#[cfg(feature = "alloc")]
struct Prepared {
    ops: alloc::vec::Vec<PreparedOp>,
    inputs: alloc::vec::Vec<Operand>,
}

#[cfg(feature = "alloc")]
struct PreparedOp {
    kind: OpKind,
    y: Operand,
    first_input: usize,
    inputs: usize,
    aliased: bool,
    all_f32: bool,
}

#[cfg(feature = "alloc")]
impl Prepared {
    /// Looks up every op of `model` (with the checks of every run).
    fn of<const E: u64>(model: &Model<'_, E>) -> Result<Self, Error> {
        let mut ops = alloc::vec::Vec::with_capacity(model.op_count());
        let mut inputs = alloc::vec::Vec::new();
        for i in 0..model.op_count() {
            model.with_op_tensors(i, &mut |t| {
                ops.push(PreparedOp {
                    kind: t.op.kind,
                    y: t.y,
                    first_input: inputs.len(),
                    inputs: t.n,
                    aliased: t.aliased,
                    all_f32: t.all_f32,
                });
                inputs.extend_from_slice(t.x.get(..t.n).unwrap_or(&[]));
                Ok(())
            })?;
        }
        Ok(Prepared { ops, inputs })
    }

    fn view(&self, i: usize) -> Option<OpView<'_>> {
        let op = self.ops.get(i)?;
        Some(OpView {
            op,
            x: self
                .inputs
                .get(op.first_input..op.first_input + op.inputs)?,
        })
    }
}

/// How [`Session::with_options`] opens a session: the kernel table, and the workers its kernels may use.
#[derive(Clone, Copy)]
pub struct SessionOptions<'a> {
    /// The kernels that run every op.
    pub kernels: &'static Kernels,
    /// Workers for the kernels that split their work (a thread pool on a host), if any.
    pub parallel: Option<&'a dyn Parallel>,
}

impl SessionOptions<'static> {
    /// `kernels` on the calling thread alone.
    pub fn new(kernels: &'static Kernels) -> Self {
        SessionOptions {
            kernels,
            parallel: None,
        }
    }
}

impl<'a, const E: u64> Session<'a, E> {
    /// Opens a session with the reference kernels. Fails with `ArenaTooSmall` if the arena can't hold the
    /// plan (the `need` accounts for aligning the arena's start to 16 bytes).
    pub fn new(model: &'a Model<'a, E>, arena: &'a mut [u8]) -> Result<Self, Error> {
        Self::with_kernels(model, arena, &REFERENCE)
    }

    /// Opens a session that runs every op through `kernels` (a target's table).
    pub fn with_kernels(
        model: &'a Model<'a, E>,
        arena: &'a mut [u8],
        kernels: &'static Kernels,
    ) -> Result<Self, Error> {
        check_entries(model, kernels)?;
        let scratch = model.largest_plan().scratch_bytes as usize;
        Self::open(model, arena, kernels, None, scratch)
    }

    /// Opens a session with `options`: their kernel table, workers, and, in the arena, the scratch the
    /// table's kernels ask for (the largest request of any op, for that many workers), so that they can
    /// pack operands or build im2col rows without allocating. Size the arena with
    /// [`Session::arena_bytes_for`]; `ArenaTooSmall` otherwise.
    pub fn with_options(
        model: &'a Model<'a, E>,
        arena: &'a mut [u8],
        options: &SessionOptions<'a>,
    ) -> Result<Self, Error> {
        check_entries(model, options.kernels)?;
        let scratch = kernel_scratch(model, options)?;
        #[allow(unused_mut)]
        let mut session = Self::open(model, arena, options.kernels, options.parallel, scratch)?;
        #[cfg(feature = "alloc")]
        {
            session.prepared = (0..model.variant_count())
                .map(|i| Prepared::of(&model.variant(i)?))
                .collect::<Result<_, Error>>()?;
        }
        Ok(session)
    }

    /// The arena bytes [`Session::with_options`] needs for `model` with `options` (alignment padding
    /// excluded: a 16-byte-aligned arena of this size is enough).
    pub fn arena_bytes_for(
        model: &Model<'_, E>,
        options: &SessionOptions<'_>,
    ) -> Result<usize, Error> {
        let plan = model.largest_plan();
        let scratch = kernel_scratch(model, options)?;
        Ok(round_up(plan.persistent_bytes as usize)
            + round_up(plan.activation_bytes as usize)
            + round_up(scratch))
    }

    /// Splits `arena` into the persistent, activation and scratch regions (`scratch_bytes` of scratch).
    fn open(
        model: &'a Model<'a, E>,
        arena: &'a mut [u8],
        kernels: &'static Kernels,
        parallel: Option<&'a dyn Parallel>,
        scratch_bytes: usize,
    ) -> Result<Self, Error> {
        let plan = model.largest_plan();
        let addr = arena.as_ptr() as usize;
        let padding = (ALIGN - addr % ALIGN) % ALIGN;
        let persistent = round_up(plan.persistent_bytes as usize);
        let planned = round_up(plan.activation_bytes as usize);
        let scratch = round_up(scratch_bytes);
        let need = padding + persistent + planned + scratch;
        let have = arena.len();
        if have < need {
            return Err(Error::ArenaTooSmall { need, have });
        }
        let (_, rest) = arena.split_at_mut(padding + persistent);
        // The scratch region is what follows the activations (at least `scratch` bytes).
        let (activations, scratch_region) = rest.split_at_mut(planned);
        // A build without `WORKSPACE` (firmware) keeps neither: its kernels get no workspace.
        let workspace = has::<E>(WORKSPACE).then_some(Workspace {
            scratch: scratch_region,
            parallel,
        });
        Ok(Session {
            model,
            kernels,
            activations,
            workspace,
            #[cfg(feature = "alloc")]
            prepared: alloc::vec::Vec::new(),
            variants: (has::<E>(VARIANTS) && model.variant_count() > 1).then(|| VariantState {
                view: None,
                current: model.variant_index(),
                uses: [VariantUse::default(); MAX_VARIANTS],
            }),
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

    /// The model this session runs: the view of its current shape variant.
    pub fn model(&self) -> &Model<'a, E> {
        match &self.variants {
            Some(VariantState {
                view: Some(view), ..
            }) if has::<E>(VARIANTS) => view,
            _ => self.model,
        }
    }

    /// The kernel table this session runs.
    pub fn kernels(&self) -> &'static Kernels {
        self.kernels
    }

    /// Workers the session's kernels split their work over (1: the calling thread alone).
    pub fn workers(&self) -> usize {
        self.workspace.as_ref().map_or(1, Workspace::workers)
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
        self.arena_tensor(id)
    }

    /// Tensor `id`'s record and its bytes' range in the arena.
    fn arena_tensor(&self, id: u32) -> Result<(TensorRecord, Range<usize>), Error> {
        let t = self.model().tensor(id as usize).ok_or(Error::BadMetadata {
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
        let (record, range) = self.io_tensor(self.model().inputs(), index)?;
        Ok(TensorMut {
            record,
            bytes: &mut self.activations[range],
        })
    }

    /// Graph output `index`, read-only (valid after `run`).
    pub fn output(&self, index: usize) -> Result<TensorRef<'_>, Error> {
        let (record, range) = self.io_tensor(self.model().outputs(), index)?;
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
        self.count_run();
        #[cfg(feature = "alloc")]
        if !self.prepared.is_empty() {
            return self.run_prepared(&mut |s, i, t| s.run_op(i, t));
        }
        let view = self.take_view();
        let model = view.as_ref().unwrap_or(self.model);
        let result = self.each_op(model, |s, i, t| s.run_op(i, t));
        self.put_view(view);
        result
    }

    /// Runs every op once, as [`Session::run`] does, and hands `observe` each op's output as soon as
    /// the op has written it: the op's index, the output's tensor id in the model (its name is
    /// [`Model::tensor_name`](crate::Model::tensor_name)) and the tensor. Every intermediate value of a
    /// run, for calibration and per-layer comparisons, without making them graph outputs; the tensor
    /// lives only for the call (a later op may reuse its bytes). A loop's body reports its ops once per
    /// iteration.
    pub fn run_observed(
        &mut self,
        observe: &mut dyn FnMut(usize, u32, TensorRef<'_>),
    ) -> Result<(), Error> {
        self.count_run();
        let view = self.view();
        let model = view.as_ref().unwrap_or(self.model);
        self.each_op(model, |s, i, t| {
            s.run_op(i, t)?;
            let output = t.op.output;
            let (record, range) = s.arena_tensor(output)?;
            let bytes = s.activations.get(range).ok_or(Error::BadOp {
                op: i as u32,
                reason: "output out of bounds",
            })?;
            observe(i, output, TensorRef { record, bytes });
            Ok(())
        })
    }

    /// Calls `each` on every op of `model`, looked up, in order: each op once, or, with control flow,
    /// where the control ops move the run (a build without control flow makes no [`Flow`] at all).
    #[inline(always)]
    fn each_op(
        &mut self,
        model: &Model<'_, E>,
        mut each: impl FnMut(&mut Self, usize, &OpTensors) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let n = model.op_count();
        if !has::<E>(CONTROL) {
            return (0..n).try_for_each(|i| model.with_op_tensors(i, &mut |t| each(self, i, t)));
        }
        let mut flow = Flow::default();
        let mut i = 0;
        while i < n {
            let mut next = i + 1;
            model.with_op_tensors(i, &mut |t| {
                each(self, i, t)?;
                next = self.after(i, t, &mut flow)?;
                Ok(())
            })?;
            i = next;
        }
        Ok(())
    }

    /// Calls `f` with every op in order (where control ops move the run, with control flow), from the
    /// ops looked up when the session opened.
    #[cfg(feature = "alloc")]
    fn run_prepared(
        &mut self,
        f: &mut dyn FnMut(&mut Self, usize, &OpView<'_>) -> Result<(), Error>,
    ) -> Result<(), Error> {
        let all = core::mem::take(&mut self.prepared);
        let result = match all.get(self.variant()) {
            Some(prepared) => {
                let view = |i: usize| {
                    prepared.view(i).ok_or(Error::BadOp {
                        op: i as u32,
                        reason: "op out of range",
                    })
                };
                let n = prepared.ops.len();
                if has::<E>(CONTROL) {
                    let mut flow = Flow::default();
                    let mut i = 0;
                    let mut result = Ok(());
                    while i < n && result.is_ok() {
                        result = view(i).and_then(|t| {
                            f(self, i, &t)?;
                            i = self.after(i, &t, &mut flow)?;
                            Ok(())
                        });
                    }
                    result
                } else {
                    (0..n).try_for_each(|i| f(self, i, &view(i)?))
                }
            }
            None => Err(Error::NoVariant {
                variants: all.len(),
            }),
        };
        self.prepared = all;
        result
    }

    /// Runs every op once, timing each with `clock` and reporting it to `on_op`.
    pub fn run_profiled(
        &mut self,
        clock: &dyn Clock,
        on_op: &mut dyn FnMut(&OpEvent),
    ) -> Result<(), Error> {
        self.count_run();
        #[cfg(feature = "alloc")]
        if !self.prepared.is_empty() {
            return self.run_prepared(&mut |s, i, t| {
                let start = clock.now();
                s.run_op(i, t)?;
                let ticks = clock.now().wrapping_sub(start);
                on_op(&OpEvent {
                    index: i,
                    op: t.kind().name(),
                    kernels: s.kernels.name,
                    ticks,
                });
                Ok(())
            });
        }
        let view = self.take_view();
        let model = view.as_ref().unwrap_or(self.model);
        let result = self.each_op(model, |s, i, t| {
            let start = clock.now();
            s.run_op(i, t)?;
            let ticks = clock.now().wrapping_sub(start);
            on_op(&OpEvent {
                index: i,
                op: t.op.kind.name(),
                kernels: s.kernels.name,
                ticks,
            });
            Ok(())
        });
        self.put_view(view);
        result
    }

    /// After op `i` ran: the op that runs next, as `flow` says after a control op (which reads its
    /// scalar inputs, a trip count or a condition, and writes a loop's counter).
    #[inline(never)]
    fn after(&mut self, i: usize, t: &impl OpParts, flow: &mut Flow) -> Result<usize, Error> {
        let OpKind::Control(p) = t.kind() else {
            return Ok(i + 1);
        };
        let bad = |reason| Error::BadOp {
            op: i as u32,
            reason,
        };
        // The scalars' bytes, copied out of the arena or the weights (at most three inputs).
        let mut held = [[0u8; 8]; 3];
        let mut dtypes = [DType::F32; 3];
        let weights = self.model.weights();
        for ((slot, dtype), x) in held.iter_mut().zip(dtypes.iter_mut()).zip(t.inputs()) {
            let (s, e) = x.range;
            let e = e.min(s.saturating_add(8));
            let from = if x.in_arena {
                self.activations.get(s..e)
            } else {
                weights.get(s..e)
            };
            let from = from.ok_or(bad("input out of bounds"))?;
            slot[..from.len()].copy_from_slice(from);
            *dtype = x.dtype;
        }
        let n = t.input_count().min(3);
        let ins: [AnyIn<'_>; 3] = core::array::from_fn(|k| AnyIn {
            dtype: dtypes[k],
            bytes: &held[k],
            dims: &[],
        });
        let (y0, y1) = t.output().range;
        let y = self
            .activations
            .get_mut(y0..y1)
            .ok_or(bad("output out of bounds"))?;
        flow.next(p, i, ins.get(..n).unwrap_or(&[]), y)
    }

    /// Runs op `i` on its looked-up tensors `t`.
    fn run_op(&mut self, i: usize, t: &impl OpParts) -> Result<(), Error> {
        let bad = |reason| Error::BadOp {
            op: i as u32,
            reason,
        };
        let (y0, y1) = t.output().range;
        let weights = self.model.weights();

        // Inputs: weights in place, arena tensors from either side of the output's bytes.
        let (before, rest) = self
            .activations
            .split_at_mut_checked(y0)
            .ok_or(bad("output out of bounds"))?;
        let (out_bytes, after) = rest
            .split_at_mut_checked(y1 - y0)
            .ok_or(bad("output out of bounds"))?;
        let mut ins = [AnyIn {
            dtype: DType::F32,
            bytes: &[],
            dims: &[],
        }; MAX_OP_INPUTS];
        let mut peak = y1;
        for (slot, x) in ins.iter_mut().zip(t.inputs()) {
            let (s, e) = x.range;
            let bytes = if !x.in_arena {
                weights.get(s..e)
            } else {
                peak = peak.max(e);
                if t.aliased() {
                    // A Reshape planned on its input's bytes: nothing to read.
                    Some(&[][..])
                } else if e <= y0 {
                    before.get(s..e)
                } else {
                    s.checked_sub(y1).and_then(|s| after.get(s..e - y1))
                }
            };
            *slot = AnyIn {
                dtype: x.dtype,
                bytes: bytes.ok_or(bad("input out of bounds"))?,
                dims: x.dims.as_slice(),
            };
        }
        self.report.peak_bytes = self.report.peak_bytes.max(peak);
        note_use(&mut self.variants, |u| {
            u.peak_bytes = u.peak_bytes.max(peak as u32);
        });
        let n = t.input_count();
        let y_any = AnyOut {
            dtype: t.output().dtype,
            bytes: out_bytes,
            dims: t.output().dims.as_slice(),
        };
        let all_f32 = t.all_f32();
        let ws = if has::<E>(WORKSPACE) {
            self.workspace.as_mut()
        } else {
            None
        };
        // Workers for the ops the session splits itself (a build without `WORKSPACE` has none).
        let parallel = match &ws {
            Some(ws) if has::<E>(WORKSPACE) => ws.parallel,
            _ => None,
        };
        let args = OpArgs {
            ins: &ins,
            n,
            y: y_any,
            ws,
            parallel,
        };
        // The dispatch holds the kinds of `E` alone (a constant), so a build for some op kinds links
        // the dispatch of those only; `Model::parse_only` refused every other kind already.
        self.kernels.run::<E>(t.kind(), all_f32, t.aliased(), args)
    }
}

/// The largest scratch request of `options.kernels` over the model's ops, for `options`' workers.
fn kernel_scratch<const E: u64>(
    model: &Model<'_, E>,
    options: &SessionOptions<'_>,
) -> Result<usize, Error> {
    let workers = options.parallel.map_or(1, |p| p.workers().max(1));
    let mut most = 0;
    for v in 0..model.variant_count() {
        most = most.max(op_scratch(&model.variant(v)?, options, workers)?);
    }
    Ok(most)
}

/// [`kernel_scratch`] over one variant's ops.
fn op_scratch<const E: u64>(
    model: &Model<'_, E>,
    options: &SessionOptions<'_>,
    workers: usize,
) -> Result<usize, Error> {
    let mut most = 0;
    for i in 0..model.op_count() {
        model.with_op_tensors(i, &mut |t| {
            let mut dims: [&[usize]; MAX_OP_INPUTS] = [&[]; MAX_OP_INPUTS];
            for (d, x) in dims.iter_mut().zip(t.x.iter().take(t.n)) {
                *d = x.dims.as_slice();
            }
            if let Some(scratch) = options.kernels.scratch {
                most = most.max(scratch(
                    &t.op.kind,
                    &dims[..t.n],
                    t.y.dims.as_slice(),
                    workers,
                ));
            }
            Ok(())
        })?;
    }
    Ok(most)
}

/// Refuses a model with an op whose entry `kernels` leaves out (see [`crate::kernels::entry`]).
fn check_entries<const E: u64>(model: &Model<'_, E>, kernels: &Kernels) -> Result<(), Error> {
    let need = model.kernel_entries()?;
    let missing = need & !kernels.entries;
    if missing == 0 {
        return Ok(());
    }
    Err(Error::KernelMissing {
        entry: crate::kernels::entry::NAMES
            .get(missing.trailing_zeros() as usize)
            .copied()
            .unwrap_or("?"),
        kernels: kernels.name,
    })
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
