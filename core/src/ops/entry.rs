//! What an op's file declares about it, besides its kernel: the entry of the kernel table that runs it
//! ([`KernelEntry`]: the kernel's signature, the reference kernel, and the stub a table that leaves it
//! out holds), and how the op is checked and run (`OpEntry`: its `validate` over any [`Operands`],
//! and its `run`, which turns the tensors into the kernel's arguments).
//!
//! Each entry is a unit type in its op's file (`ops::nn::conv::Conv2d`). The declaration of the op set
//! (`crate::op_set`) names it once, and everything that goes over every op (the kernel table, its entry
//! bits, [`Kernels::only`](crate::Kernels::only), decoding, validation, dispatch) is generated from
//! that declaration: adding an op adds no arm anywhere else. Most entries only call their kernel:
//! [`op_entry!`] writes their unit type and both impls from a few lines.

use crate::ops::element::{AnyIn, AnyOut};
use crate::ops::shape::{require, Checked};
use crate::ops::{In, Out};
use crate::schema::{DType, MAX_OP_INPUTS, MAX_RANK};
use crate::workspace::{Parallel, Workspace};
use crate::Error;

/// An entry of the kernel table (a field of [`Kernels`](crate::Kernels)), as its op's file declares it.
pub trait KernelEntry {
    /// The kernel's signature: a plain function pointer, the type of the table's field.
    type Kernel: Copy;
    /// The portable kernel, [`REFERENCE`](crate::REFERENCE)'s entry.
    const REFERENCE: Self::Kernel;
    /// What a table that leaves the entry out holds (see [`Kernels::only`](crate::Kernels::only)): a
    /// function that does nothing, or reports [`LEFT_OUT`] where the signature returns a `Result`.
    /// A session never calls it: it refuses a model that needs an entry its table leaves out.
    const STUB: Self::Kernel;
}

/// Declares an entry whose kernel returns nothing: its unit type and both impls, from what is
/// particular to it, one line each:
///
/// ```text
/// op_entry! {
///     /// The [`Kernels::softmax`](crate::Kernels::softmax) entry, which runs ...
///     Softmax: SoftmaxFn = softmax, SoftmaxParams, F32;
///     validate |p, o| shape_reason(validate(p, o.dims(0), o.out_dims()));
///     run |kernel, p, a| kernel(p, a.x(0)?, out(a.y)?);
/// }
/// ```
///
/// The first line names the unit type, the kernel's signature ([`KernelEntry::Kernel`]), the reference
/// kernel, the kind's parameters (`()` for none) and the [`DTypes`] variant: `F32`, `Same`, `Own`, or
/// `Int8[I8, I8, I32] -> I8` with the dtypes of the inputs and of the output. `validate` is the body of
/// [`OpEntry::validate`] over the parameters and the [`Operands`]; `infer`, which an op that the
/// converter carries as its blob kind has, the body of [`OpEntry::infer`] (the output's dims from the
/// parameters and the inputs' dims; the dtype follows from the [`DTypes`]); `run` is the kernel's call in
/// [`OpEntry::run`] (`#[inline(always)]`, as every entry's), its arguments taken from the parameters
/// and the [`OpArgs`]; the stub ignores as many arguments. Entries
/// whose `run` does more (splits the work, gathers inputs, returns the kernel's `Result`) write both
/// impls out.
macro_rules! op_entry {
    (
        $(#[$doc:meta])*
        $name:ident: $kernel_fn:ty = $reference:path, $params:ty,
            $dtypes:ident $([$($input:ident),*] -> $output:ident)?;
        validate |$p:pat_param, $o:ident| $validate:expr;
        $(infer |$ip:pat_param, $ix:ident| $infer:expr;)?
        run |$kernel:ident, $run_p:pat_param, $a:ident|
            $call:ident($($arg:expr),* $(,)?);
    ) => {
        $(#[$doc])*
        pub struct $name;

        impl $crate::ops::entry::KernelEntry for $name {
            type Kernel = $kernel_fn;
            const REFERENCE: $kernel_fn = $reference;
            const STUB: $kernel_fn = |$($crate::ops::entry::ignored!($arg)),*| {};
        }

        impl $crate::ops::entry::OpEntry for $name {
            type Params = $params;
            const DTYPES: $crate::ops::entry::DTypes = $crate::ops::entry::DTypes::$dtypes$((
                &$crate::ops::entry::Int8DTypes {
                    inputs: &[$($crate::schema::DType::$input),*],
                    output: $crate::schema::DType::$output,
                }
            ))?;

            fn validate(
                $p: &$params,
                $o: &impl $crate::ops::entry::Operands,
            ) -> $crate::ops::shape::Checked {
                $validate
            }

            $(
                fn infer(
                    $ip: &$params,
                    $ix: &[&[usize]],
                ) -> Result<$crate::ops::entry::OutDims, &'static str> {
                    $infer
                }
            )?

            #[inline(always)]
            fn run(
                $kernel: $kernel_fn,
                $run_p: &$params,
                $a: $crate::ops::entry::OpArgs<'_, '_>,
            ) -> Result<(), $crate::Error> {
                $call($($arg),*);
                Ok(())
            }
        }
    };
}
pub(crate) use op_entry;

/// `_`, once per argument of the kernel's call: the parameters of [`op_entry!`]'s stub.
macro_rules! ignored {
    ($arg:expr) => {
        _
    };
}
pub(crate) use ignored;

/// What a stub that returns a `Result` gives (one value for all of them, so that the linker's
/// identical-code folding keeps one copy of those stubs in a firmware).
pub const LEFT_OUT: Error = Error::Unsupported {
    reason: "this kernel table leaves this op out",
};

/// The entry of an op kind: how its tensors are checked and handed to its kernel.
pub(crate) trait OpEntry: KernelEntry {
    /// The kind's parameters (`()` for a kind without).
    type Params;

    /// The dtypes the entry takes, checked before [`OpEntry::validate`].
    const DTYPES: DTypes;

    /// Checks everything else the kernel relies on (its dtypes passed [`OpEntry::DTYPES`]): every shape
    /// fact, and the weight values some kernels trust, such as Gather's indices. `Model::parse` runs it
    /// on every op of a blob, and the converter on every op it writes.
    fn validate(p: &Self::Params, o: &impl Operands) -> Checked;

    /// The output's dims for inputs of these dims (which `validate` then checks as it checks any
    /// op), or why they do not fit. Front ends that build a graph ask it
    /// ([`infer_dims`](crate::model::infer_dims)): the converter carries an op that has it as its
    /// blob kind, from its importer to the blob, without an op of its own. The ops the converter
    /// represents in its own form (those it fuses, rewrites for a layout or quantizes) have none.
    fn infer(_p: &Self::Params, _x: &[&[usize]]) -> Result<OutDims, &'static str> {
        Err("the converter has no shape inference of this op kind")
    }

    /// The output's dtype for inputs of these dtypes: what [`OpEntry::DTYPES`] says (an entry whose
    /// rule is `Own` says it here if it has [`OpEntry::infer`]).
    fn infer_dtype(_p: &Self::Params, x: &[DType]) -> Result<DType, &'static str> {
        match Self::DTYPES {
            DTypes::F32 => Ok(DType::F32),
            DTypes::Same => x.first().copied().ok_or("the op has no input"),
            DTypes::Int8(rule) => Ok(rule.output),
            DTypes::Own => Err("the op's output dtype depends on its parameters"),
        }
    }

    /// Runs `kernel` on the op's tensors, which passed [`OpEntry::validate`]. Each entry marks it
    /// `#[inline(always)]`: the dispatch then holds every entry's conversions in one function, whose
    /// error paths they share (some 100 bytes of flash on the digits demo).
    fn run(kernel: Self::Kernel, p: &Self::Params, a: OpArgs<'_, '_>) -> Result<(), Error>;
}

/// An output's dims, as [`OpEntry::infer`] gives them.
pub type OutDims = heapless::Vec<usize, MAX_RANK>;

/// The dims of an op's first input, as its output's (the ops whose output is shaped like `x`).
pub(crate) fn dims_of_first(x: &[&[usize]]) -> Result<OutDims, &'static str> {
    let dims = x.first().ok_or("the op has no input")?;
    OutDims::from_slice(dims).map_err(|_| "the input's rank is above the format's limit")
}

/// Why [`Operands::weight`] has no bytes for an input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NotAWeight {
    /// The input lives in the arena: its values are only known when the model runs.
    InArena,
    /// Its bytes run past the weights section.
    OutOfBounds,
}

/// An op's tensors as validation sees them: dims and dtypes, and the bytes of its weight inputs. The
/// model implements it over a parsed blob, the converter over the records it is about to write, so that
/// both run the same checks ([`validate_op`](crate::model::validate_op)).
pub trait Operands {
    /// Number of inputs.
    fn count(&self) -> usize;
    /// Dims of input `k` (empty for `k` past the last input).
    fn dims(&self, k: usize) -> &[usize];
    /// Dtype of input `k` (`F32` for `k` past the last input).
    fn dtype(&self, k: usize) -> DType;
    /// Dims of the output.
    fn out_dims(&self) -> &[usize];
    /// Dtype of the output.
    fn out_dtype(&self) -> DType;
    /// Whether every input and the output are f32.
    fn all_f32(&self) -> bool;
    /// The bytes of input `k`, when it is a weight tensor.
    fn weight(&self, k: usize) -> Result<&[u8], NotAWeight>;

    /// Dims of input `k` if the op has it.
    #[inline(always)]
    fn opt(&self, k: usize) -> Option<&[usize]> {
        (k < self.count()).then(|| self.dims(k))
    }

    /// Dims and dtype of input `k`.
    #[inline(always)]
    fn typed(&self, k: usize) -> (&[usize], DType) {
        (self.dims(k), self.dtype(k))
    }

    /// Dims and dtype of the output.
    #[inline(always)]
    fn out_typed(&self) -> (&[usize], DType) {
        (self.out_dims(), self.out_dtype())
    }

    /// The values of weight input `k`; `errors` say what is wrong if it lives in the arena, runs past
    /// the weights section, or is not aligned for `T`.
    #[inline(always)]
    fn weight_values<T: bytemuck::Pod>(
        &self,
        k: usize,
        errors: [&'static str; 3],
    ) -> Result<&[T], &'static str> {
        match self.weight(k) {
            Err(NotAWeight::InArena) => Err(errors[0]),
            Err(NotAWeight::OutOfBounds) => Err(errors[1]),
            Ok(bytes) => bytemuck::try_cast_slice(bytes).map_err(|_| errors[2]),
        }
    }
}

/// The dtypes an entry takes ([`OpEntry::DTYPES`]).
#[derive(Clone, Copy, Debug)]
pub(crate) enum DTypes {
    /// Every input and the output are f32.
    F32,
    /// Inputs and output of one dtype, any (data movement).
    Same,
    /// The int8 ops: the dtypes of the inputs the op has, in order, and of the output.
    Int8(&'static Int8DTypes),
    /// Checked by the entry's own `validate` (the ops on any dtype, and those with rules of their own).
    Own,
}

/// Checks `o`'s dtypes against `rule` (a constant where it is called: this folds to the one check).
#[inline(always)]
pub(crate) fn check_dtypes(rule: DTypes, o: &impl Operands) -> Checked {
    match rule {
        DTypes::F32 => require(o.all_f32(), "this op runs on f32 tensors only"),
        DTypes::Same => {
            let (out, n) = (o.out_dtype(), o.count().min(MAX_OP_INPUTS));
            require(
                n > 0 && (0..n).all(|k| o.dtype(k) == out),
                "data-movement op whose inputs and output differ in dtype",
            )
        }
        DTypes::Int8(rule) => int8_dtypes(o, rule),
        DTypes::Own => Ok(()),
    }
}

/// The dtypes of an int8 op's tensors ([`DTypes::Int8`]).
#[derive(Debug)]
pub(crate) struct Int8DTypes {
    /// Of the inputs the op has, in order.
    pub(crate) inputs: &'static [DType],
    /// Of the output.
    pub(crate) output: DType,
}

/// [`DTypes::Int8`]'s check (out of line: one copy serves every int8 op).
#[inline(never)]
fn int8_dtypes(o: &impl Operands, rule: &Int8DTypes) -> Checked {
    let n = o.count().min(MAX_OP_INPUTS);
    require(
        o.out_dtype() == rule.output
            && (0..n).zip(rule.inputs).all(|(k, &need)| o.dtype(k) == need),
        "int8 op with tensors of the wrong dtypes (x, w int8; requant, bias int32)",
    )
}

/// The reason of a validator's shape error (the only error validators give).
pub(crate) fn shape_reason(checked: Result<(), Error>) -> Checked {
    checked.map_err(|e| match e {
        Error::Shape { reason } => reason,
        _ => "op shapes or parameters are invalid",
    })
}

/// An op's tensors as a session hands them to [`OpEntry::run`]: the inputs (weights in place, arena
/// tensors from either side of the output), the output, and the kernel's workspace.
pub(crate) struct OpArgs<'a, 'w> {
    /// The inputs; the first `n` are the op's.
    pub(crate) ins: &'a [AnyIn<'a>; MAX_OP_INPUTS],
    /// Number of inputs.
    pub(crate) n: usize,
    /// The output.
    pub(crate) y: AnyOut<'a>,
    /// The kernel's scratch and workers (`None` in a build without a workspace).
    pub(crate) ws: Option<&'a mut Workspace<'w>>,
    /// Workers for the ops the session splits itself (element-wise ops).
    pub(crate) parallel: Option<&'a dyn Parallel>,
}

impl<'a> OpArgs<'a, '_> {
    /// Input `k`, any dtype.
    #[inline(always)]
    pub(crate) fn any(&self, k: usize) -> AnyIn<'a> {
        self.ins[k]
    }

    /// Input `k` as `T`s (the dtype was checked by `validate`; the alignment is checked here).
    #[inline(always)]
    pub(crate) fn x<T: bytemuck::Pod>(&self, k: usize) -> Result<In<'a, T>, Error> {
        typed(self.ins[k])
    }

    /// The elements of input `k` as `T`s if the op has it (a bias, the scales of an embedding).
    #[inline(always)]
    pub(crate) fn opt<T: bytemuck::Pod>(&self, k: usize) -> Result<Option<&'a [T]>, Error> {
        if k < self.n {
            Ok(Some(self.x(k)?.data))
        } else {
            Ok(None)
        }
    }
}

/// The typed view of an input (element type checked by `validate`; alignment by the cast).
pub(crate) fn typed<T: bytemuck::Pod>(x: AnyIn<'_>) -> Result<In<'_, T>, Error> {
    x.typed().ok_or(Error::Unsupported {
        reason: "tensor bytes are not aligned for their dtype",
    })
}

/// The typed view of the output.
pub(crate) fn out<T: bytemuck::Pod>(y: AnyOut<'_>) -> Result<Out<'_, T>, Error> {
    y.typed().ok_or(Error::Unsupported {
        reason: "tensor bytes are not aligned for their dtype",
    })
}
