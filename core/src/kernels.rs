//! The kernel table: one plain function pointer per op, supplied by a target as a value.
//!
//! A session runs every op through a `&'static Kernels`. `ember-core` provides [`REFERENCE`]; targets
//! (`ember-cpu`, `ember-cortex-m`) export their own tables, usually the reference table with some entries
//! replaced. There is no trait and no type parameter: switching targets is changing a value.
//!
//! The table's fields, their [`entry`] bits and [`family`] masks, [`Kernels::only`], the reference
//! table, which entry runs an op, its validation and its dispatch are all generated from the
//! declaration of the op set (`crate::op_set`); each entry's signature, reference kernel and stub are
//! declared in its op's file ([`KernelEntry`]).

use crate::op_set::{for_each_op, has_alternative, params, params_binding, str_eq};
use crate::ops::entry::{check_dtypes, KernelEntry, OpArgs, OpEntry, Operands};
use crate::ops::shape::Checked;
use crate::schema::OpKind;
use crate::workspace::ScratchFn;
use crate::Error;

/// Whether the entry mask `E` has any of `bits`: a constant in each instance, so that the code it guards
/// (an op kind's decoding, validation and dispatch) vanishes from builds that leave those entries out.
#[inline(always)]
pub(crate) const fn has<const E: u64>(bits: u64) -> bool {
    E & bits != 0
}

/// The union of the entries that `members` (entry bits with the name of a family they are in) lists
/// in `family`.
const fn members(family: &str, members: &[(&str, u64)]) -> u64 {
    let mut mask = 0;
    let mut i = 0;
    while i < members.len() {
        if str_eq(members[i].0, family) {
            mask |= members[i].1;
        }
        i += 1;
    }
    mask
}

/// Why validation or dispatch refuses an op whose entry the build leaves out ([`Model::parse_only`]
/// refuses such a model first).
///
/// [`Model::parse_only`]: crate::Model::parse_only
pub(crate) const LEFT_OUT: &str =
    "this build of the runtime leaves out this op kind (Model::parse_only)";

/// An entry's validation: its dtypes, then the rest. Out of line: inlined into one function, the
/// checks of a firmware's few op kinds took more flash than apart (some 250 bytes on the f32 digits
/// demo, 130 on the int8 one).
#[inline(never)]
fn validate<T: OpEntry>(p: &T::Params, o: &impl Operands) -> Checked {
    check_dtypes(T::DTYPES, o)?;
    T::validate(p, o)
}

/// What one row of the declaration does, given its entries (`$field $bit ($path)`, then the other
/// alternatives: another entry `$other $bit ($path)`, `movement`, `alias`); see `crate::op_set`.
macro_rules! row {
    // The entry that runs the op (0: none in `E`), as `entry_in` says.
    (@entry $e:ident, $all_f32:ident, $out_bytes:ident;
        $field:ident $bit:literal ($($path:tt)*); [$($other:ident $($obit:literal ($($opath:tt)*))?),*]) => {{
        const OTHERS: &[&str] = &[$(stringify!($other)),*];
        const MOVEMENT: bool = has_alternative(OTHERS, "movement");
        if ($all_f32 || OTHERS.is_empty()) && has::<$e>(1 << $bit) {
            1 << $bit
        } else $($( if has::<$e>(1 << $obit) { 1 << $obit } else )?)* if MOVEMENT && has::<$e>(entry::MOVEMENT) {
            movement_entry($out_bytes)
        } else {
            0
        }
    }};
    // The op's validation: the other entry's for tensors that are not all f32 (if `E` has it), else
    // this entry's (which also checks the data movement of other dtypes).
    (@validate $e:ident, $all_f32:ident, $p:expr, $o:ident;
        $field:ident $bit:literal ($($path:tt)*); [$($other:ident $($obit:literal ($($opath:tt)*))?),*]) => {{
        const OTHERS: &[&str] = &[$(stringify!($other)),*];
        const ALIAS: bool = has_alternative(OTHERS, "alias");
        const KERNELS: u64 = if has_alternative(OTHERS, "movement") {
            (1 << $bit) | entry::MOVEMENT
        } else {
            1 << $bit
        };
        $($( if !$all_f32 && has::<$e>(1 << $obit) {
            validate::<crate::ops::$($opath)*>($p, $o)
        } else )?)* if ALIAS || has::<$e>(KERNELS) {
            validate::<crate::ops::$($path)*>($p, $o)
        } else {
            Err(LEFT_OUT)
        }
    }};
    // The op's dispatch, through the entry `@entry` names.
    (@run $self:ident, $e:ident, $all_f32:ident, $aliased:ident, $kind:ident, $p:expr, $a:ident;
        $field:ident $bit:literal ($($path:tt)*); [$($other:ident $($obit:literal ($($opath:tt)*))?),*]) => {{
        const OTHERS: &[&str] = &[$(stringify!($other)),*];
        const MOVEMENT: bool = has_alternative(OTHERS, "movement");
        const ALIAS: bool = has_alternative(OTHERS, "alias");
        if ALIAS && $aliased {
            // Planned on its input's bytes: they are already in place.
            Ok(())
        } else if ($all_f32 || OTHERS.is_empty()) && has::<$e>(1 << $bit) {
            <crate::ops::$($path)* as OpEntry>::run($self.$field, $p, $a)
        } else $($( if has::<$e>(1 << $obit) {
            <crate::ops::$($opath)* as OpEntry>::run($self.$other, $p, $a)
        } else )?)* if MOVEMENT && has::<$e>(entry::MOVEMENT) {
            $self.movement::<$e>($kind, $a)
        } else {
            Err(Error::Unsupported { reason: LEFT_OUT })
        }
    }};
}

/// The kernel table and everything else that goes over its entries, from the declaration.
macro_rules! kernel_table {
    (
        kinds {
            $(
                $(#[$doc:meta])*
                $kind:ident $(($decoder:ident $params:ty))? $min:literal..=$max:tt {
                    $field:ident $CONST:ident = $bit:literal: $($seg:ident)::+ [$($fam:ident),+]
                    $(| $other:ident $($OCONST:ident = $obit:literal: $($oseg:ident)::+ [$($ofam:ident),+])?)*
                }
            )*
        }
        movement {
            $(
                $mfield:ident $MCONST:ident = $mbit:literal: $($mseg:ident)::+ [$($mfam:ident),+]
                    moves $size:literal $unit:ident;
            )*
        }
    ) => {
        /// The entries of a kernel table, one bit each, in [`Kernels::entries`]. A session refuses a model
        /// that needs an entry its table leaves out, so a table can carry only what its models use (the
        /// other entries are stubs the session never calls) and a firmware links only those kernels: see
        /// [`Kernels::only`] and [`Model::kernel_entries`](crate::Model::kernel_entries).
        pub mod entry {
            $(
                #[doc = concat!("[`Kernels::", stringify!($mfield), "`](super::Kernels::", stringify!($mfield), ").")]
                pub const $MCONST: u64 = 1 << $mbit;
            )*
            $(
                #[doc = concat!("[`Kernels::", stringify!($field), "`](super::Kernels::", stringify!($field), ").")]
                pub const $CONST: u64 = 1 << $bit;
                $($(
                    #[doc = concat!("[`Kernels::", stringify!($other), "`](super::Kernels::", stringify!($other), ").")]
                    pub const $OCONST: u64 = 1 << $obit;
                )?)*
            )*
            /// Every data-movement entry.
            pub const MOVEMENT: u64 = 0 $(| $MCONST)*;
            /// Not a kernel: sessions of a build with this bit hand their kernels scratch and workers (a
            /// [`Workspace`](crate::Workspace)). Host builds have it ([`family::ALL`](super::family::ALL)); a
            /// firmware's [`Model::parse_only`](crate::Model::parse_only) mask, made of its ops' entries, does
            /// not, so its sessions link none of that code and give kernels an empty workspace.
            pub const WORKSPACE: u64 = 1 << 63;
            /// Not a kernel: a build with this bit reads a blob's shape variants
            /// ([`Model::variant`](crate::Model::variant), `Session::set_dims`). Without it (a
            /// firmware's mask, made of its ops' entries) a blob with variants opens as its largest
            /// variant, as a reader of an older format opens it, and none of the variant code is
            /// linked. Host builds have it; `ember convert --emit rust` adds it to `KERNEL_ENTRIES` for
            /// a blob with variants.
            pub const VARIANTS: u64 = 1 << 62;

            /// The entries' bits and names (the fields of [`Kernels`](super::Kernels)), in declaration order.
            const BY_FIELD: &[(u64, &str)] = &[
                $(($MCONST, stringify!($mfield)),)*
                $(($CONST, stringify!($field)), $($(($OCONST, stringify!($other)),)?)*)*
            ];

            /// One past the highest entry bit. Bits of kinds being added on other branches may be
            /// missing until they merge: their names are empty.
            const BITS: usize = {
                let (mut top, mut i) = (0, 0);
                while i < BY_FIELD.len() {
                    let bit = BY_FIELD[i].0.trailing_zeros() as usize + 1;
                    if bit > top {
                        top = bit;
                    }
                    i += 1;
                }
                top
            };

            /// The name of entry bit `i` (the field of [`Kernels`](super::Kernels)), for reports.
            pub const NAMES: [&str; BITS] = {
                let mut names = [""; BITS];
                let mut i = 0;
                while i < BY_FIELD.len() {
                    let bit = BY_FIELD[i].0.trailing_zeros() as usize;
                    assert!(
                        bit < names.len() && names[bit].is_empty(),
                        "the declaration gives an entry bit twice"
                    );
                    names[bit] = BY_FIELD[i].1;
                    i += 1;
                }
                names
            };

            /// The names of the entries in `mask`, in bit order.
            pub fn names(mask: u64) -> impl Iterator<Item = &'static str> {
                NAMES
                    .iter()
                    .enumerate()
                    .filter(move |(i, _)| mask & (1 << i) != 0)
                    .map(|(_, n)| *n)
            }
        }

        /// Groups of [`entry`] bits: what a table provides as a whole family of ops (the declaration
        /// says which families each entry is in).
        pub mod family {
            use super::members;

            /// Every entry, once with each family it is in.
            const MEMBERS: &[(&str, u64)] = &[
                $($((stringify!($mfam), super::entry::$MCONST),)+)*
                $(
                    $((stringify!($fam), super::entry::$CONST),)+
                    $($($((stringify!($ofam), super::entry::$OCONST),)+)?)*
                )*
            ];

            /// Every op on f32 tensors.
            pub const F32: u64 = members("F32", MEMBERS);
            /// Ops on the other dtypes: integer and f64 arithmetic, comparisons, logic, Where, Cast,
            /// ArgMax, and data movement of any dtype.
            pub const TYPED: u64 = members("TYPED", MEMBERS);
            /// The int8 ops, and data movement of 1-byte tensors.
            pub const INT8: u64 = members("INT8", MEMBERS);
            /// Weight-only int8 (`--quantize int8-weights`): f32 activations, int8 weights read in place.
            pub const WEIGHT_INT8: u64 = members("WEIGHT_INT8", MEMBERS);

            // Every family the declaration names is one of these.
            const _: () = {
                let mut i = 0;
                while i < MEMBERS.len() {
                    let f = MEMBERS[i].0;
                    assert!(
                        super::str_eq(f, "F32")
                            || super::str_eq(f, "TYPED")
                            || super::str_eq(f, "INT8")
                            || super::str_eq(f, "WEIGHT_INT8"),
                        "a family of the declaration is not F32, TYPED, INT8 or WEIGHT_INT8"
                    );
                    i += 1;
                }
            };
            /// All of them.
            pub const ALL: u64 =
                F32 | TYPED | INT8 | WEIGHT_INT8 | super::entry::WORKSPACE | super::entry::VARIANTS;
        }

        /// A target's kernels, one entry per op of the blob's op set, and which entries it provides.
        /// Each field's type is the signature its entry declares (`<Entry as KernelEntry>::Kernel`, in
        /// the op's file).
        #[derive(Clone, Copy, Debug)]
        pub struct Kernels {
            /// Name shown by `ember inspect` and in profiles (`"reference"`, `"cpu-avx2"`, ...).
            pub name: &'static str,
            /// The [`entry`] bits this table provides (often a [`family`] mask); the others are stubs a
            /// session never calls.
            pub entries: u64,
            /// Scratch bytes the table's kernels ask for, per op (see [`crate::workspace`]); `None`: none.
            pub scratch: Option<ScratchFn>,
            $(
                #[doc = concat!(
                    "Data movement (Concat, Transpose, Pad, Reshape, Slice, Gather, Broadcast) of tensors \
                     other than f32 with ", stringify!($size), "-",
                    stringify!($unit), " elements."
                )]
                pub $mfield: <crate::ops::$($mseg)::+ as KernelEntry>::Kernel,
            )*
            $(
                #[doc = concat!("[`OpKind::", stringify!($kind), "`](crate::OpKind::", stringify!($kind), ").")]
                pub $field: <crate::ops::$($seg)::+ as KernelEntry>::Kernel,
                $($(
                    #[doc = concat!(
                        "[`OpKind::", stringify!($kind), "`](crate::OpKind::", stringify!($kind),
                        ") when its tensors are not all f32."
                    )]
                    pub $other: <crate::ops::$($oseg)::+ as KernelEntry>::Kernel,
                )?)*
            )*
        }

        /// The portable reference kernels of `ember-core`: plain Rust, no SIMD, no allocation.
        pub static REFERENCE: Kernels = Kernels {
            name: "reference",
            entries: family::ALL,
            scratch: None,
            $($mfield: <crate::ops::$($mseg)::+ as KernelEntry>::REFERENCE,)*
            $(
                $field: <crate::ops::$($seg)::+ as KernelEntry>::REFERENCE,
                $($($other: <crate::ops::$($oseg)::+ as KernelEntry>::REFERENCE,)?)*
            )*
        };

        impl Kernels {
            /// This table with only the entries in `entries` (and in the table): the others become stubs,
            /// so that a static built with it links only those kernels. Pass a model's
            /// [`Model::kernel_entries`](crate::Model::kernel_entries), which `ember convert --emit rust`
            /// and the firmware examples' build scripts write as a constant:
            ///
            /// ```
            /// use ember_core::kernels::{entry, Kernels};
            /// // A table for a model that only needs int8 convolutions and the f32 <-> int8 edges.
            /// static KERNELS: Kernels = ember_core::REFERENCE
            ///     .only(entry::QUANT_CONV2D | entry::QUANTIZE | entry::DEQUANTIZE);
            /// assert_eq!(KERNELS.entries, entry::QUANT_CONV2D | entry::QUANTIZE | entry::DEQUANTIZE);
            /// ```
            pub const fn only(&self, entries: u64) -> Kernels {
                let keep = self.entries & entries;
                // Each entry: this table's kernel if kept, else the stub of its signature.
                Kernels {
                    name: self.name,
                    entries: keep,
                    scratch: self.scratch,
                    $($mfield: if keep & entry::$MCONST != 0 {
                        self.$mfield
                    } else {
                        <crate::ops::$($mseg)::+ as KernelEntry>::STUB
                    },)*
                    $(
                        $field: if keep & entry::$CONST != 0 {
                            self.$field
                        } else {
                            <crate::ops::$($seg)::+ as KernelEntry>::STUB
                        },
                        $($($other: if keep & entry::$OCONST != 0 {
                            self.$other
                        } else {
                            <crate::ops::$($oseg)::+ as KernelEntry>::STUB
                        },)?)*
                    )*
                }
            }

            /// The entries whose kernels differ from `base`'s (compared as function pointers): what a
            /// target's table built on `..REFERENCE` replaces. Its tests assert this mask.
            pub fn replaced(&self, base: &Kernels) -> u64 {
                let mut replaced = 0;
                $(if self.$mfield as usize != base.$mfield as usize {
                    replaced |= entry::$MCONST;
                })*
                $(
                    if self.$field as usize != base.$field as usize {
                        replaced |= entry::$CONST;
                    }
                    $($(if self.$other as usize != base.$other as usize {
                        replaced |= entry::$OCONST;
                    })?)*
                )*
                replaced
            }

            /// Runs op `kind` on its tensors `a` (which passed validation) through the entry that
            /// [`entry_in`] names for it, or not at all if it is `aliased` (a Reshape planned on its
            /// input's bytes); the kinds outside `E` are left out of the build.
            pub(crate) fn run<const E: u64>(
                &self,
                kind: &OpKind,
                all_f32: bool,
                aliased: bool,
                a: OpArgs<'_, '_>,
            ) -> Result<(), Error> {
                match kind {
                    $(OpKind::$kind $((params_binding!($decoder p)))? if has::<E>(DECODES[Tag::$kind as usize]) => {
                        row!(@run self, E, all_f32, aliased, kind, params!(p $($decoder)?), a;
                            $field $bit ($($seg)::+); [$($other $($obit ($($oseg)::+))?),*])
                    })*
                    _ => Err(Error::Unsupported { reason: LEFT_OUT }),
                }
            }

            /// Data movement of tensors other than f32, by the output's element size.
            fn movement<const E: u64>(&self, kind: &OpKind, a: OpArgs<'_, '_>) -> Result<(), Error> {
                let movement = match a.y.dtype.size() {
                    $($size if has::<E>(entry::$MCONST) => self.$mfield,)*
                    _ => return Err(Error::Unsupported { reason: LEFT_OUT }),
                };
                movement(kind, a.ins.get(..a.n).unwrap_or(&[]), a.y)
            }
        }

        /// The data-movement entry of an element size.
        fn movement_entry(out_bytes: usize) -> u64 {
            match out_bytes {
                $($size => entry::$MCONST,)*
                _ => 0,
            }
        }

        /// [`entry_of`] for a build with the entries `E` only: 0 for a kind `E` leaves out (validation
        /// refuses those first), so the match holds the model's kinds alone.
        pub(crate) fn entry_in<const E: u64>(kind: &OpKind, all_f32: bool, out_bytes: usize) -> u64 {
            match kind {
                $(OpKind::$kind { .. } if has::<E>(DECODES[Tag::$kind as usize]) => row!(@entry E, all_f32, out_bytes;
                    $field $bit ($($seg)::+); [$($other $($obit ($($oseg)::+))?),*]),)*
                _ => 0,
            }
        }

        /// Validates op `kind` on its tensors `o` (a build with the entries `E` only: the validation of
        /// other kinds is left out, and they are refused). Every dtype and shape fact its kernel relies
        /// on: see each entry's `validate`.
        pub(crate) fn validate_in<const E: u64>(kind: &OpKind, o: &impl Operands) -> Checked {
            let all_f32 = o.all_f32();
            match kind {
                $(OpKind::$kind $((params_binding!($decoder p)))? if has::<E>(DECODES[Tag::$kind as usize]) => {
                    row!(@validate E, all_f32, params!(p $($decoder)?), o;
                        $field $bit ($($seg)::+); [$($other $($obit ($($oseg)::+))?),*])
                })*
                _ => Err(LEFT_OUT),
            }
        }

        /// The output's dims of op `kind` for inputs of these dims, through the entry that runs it
        /// on f32 ([`OpEntry::infer`]).
        pub(crate) fn infer_dims(
            kind: &OpKind,
            x: &[&[usize]],
        ) -> Result<crate::ops::entry::OutDims, &'static str> {
            match kind {
                $(OpKind::$kind $((params_binding!($decoder p)))? => {
                    <crate::ops::$($seg)::+ as OpEntry>::infer(params!(p $($decoder)?), x)
                })*
            }
        }

        /// The output's dtype of op `kind` for inputs of these dtypes ([`OpEntry::infer_dtype`]).
        pub(crate) fn infer_dtype(
            kind: &OpKind,
            x: &[crate::schema::DType],
        ) -> Result<crate::schema::DType, &'static str> {
            match kind {
                $(OpKind::$kind $((params_binding!($decoder p)))? => {
                    <crate::ops::$($seg)::+ as OpEntry>::infer_dtype(params!(p $($decoder)?), x)
                })*
            }
        }

        /// The kinds' tags: their positions in the declaration.
        #[allow(dead_code)]
        #[repr(usize)]
        enum Tag {
            $($kind,)*
        }

        /// The entries that can run each kind, by its tag (every entry for a kind `alias` marks:
        /// a build decodes it whatever its entries). A build whose entries `E` have none of a kind's
        /// leaves out its decoding, validation and dispatch: the matches over kinds guard each arm with
        /// it, so that they hold the build's kinds alone.
        pub(crate) const DECODES: &[u64] = &[$({
            let others: &[&str] = &[$(stringify!($other)),*];
            // An alternative without an entry of its own is `movement` or `alias`.
            $(assert!(
                !<[u32]>::is_empty(&[$($obit),*])
                    || str_eq(stringify!($other), "movement")
                    || str_eq(stringify!($other), "alias"),
                concat!("`", stringify!($kind), "`: an alternative is neither an entry, `movement` nor `alias`")
            );)*
            let mut kernels = entry::$CONST $($(| entry::$OCONST)?)*;
            if has_alternative(others, "movement") {
                kernels |= entry::MOVEMENT;
            }
            if has_alternative(others, "alias") {
                kernels = u64::MAX;
            }
            kernels
        },)*];
    };
}
for_each_op!(kernel_table);

/// The entry that runs `kind` (`all_f32`: every input and the output are f32). Ops on f32 tensors use
/// the f32 entries; int8 ops their own; data movement of other dtypes the `movement` entry of the
/// output's element size (`out_bytes`).
pub fn entry_of(kind: &OpKind, all_f32: bool, out_bytes: usize) -> u64 {
    entry_in::<{ family::ALL }>(kind, all_f32, out_bytes)
}

/// The reference kernels for f32 models only: what a firmware running a float model links (the other
/// families' entries are stubs; a model that needs them is refused when the session opens).
pub static REFERENCE_F32: Kernels = Kernels {
    name: "reference-f32",
    ..REFERENCE.only(family::F32)
};

/// The reference kernels for int8 models (with f32 at their edges): f32 and int8 families.
pub static REFERENCE_INT8: Kernels = Kernels {
    name: "reference-int8",
    ..REFERENCE.only(family::F32 | family::INT8)
};

/// Calls `f` with the scratch `kernels` asks for to run `kind` on these dims (one worker, 16-byte
/// aligned, allocated here): for calling a table's kernel directly, as the kernel test suites do.
#[cfg(feature = "alloc")]
pub fn with_scratch<R>(
    kernels: &Kernels,
    kind: &OpKind,
    inputs: &[&[usize]],
    output: &[usize],
    f: impl FnOnce(Option<&mut crate::Workspace<'_>>) -> R,
) -> R {
    let bytes = kernels.scratch.map_or(0, |f| f(kind, inputs, output, 1));
    let mut buf = crate::AlignedBuf::zeroed(bytes);
    f(Some(&mut crate::Workspace::new(buf.as_mut_bytes(), None)))
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;
    use crate::ops::entry::NotAWeight;
    use crate::schema::{DType, KIND_NAMES};

    /// Every entry the declaration names has a kernel of its own: the reference table's differs from
    /// the stub a table that leaves the entry out holds.
    #[test]
    fn every_entry_has_a_reference_kernel() {
        let stubs = REFERENCE.only(0);
        let kernels = family::ALL & !(entry::WORKSPACE | entry::VARIANTS);
        assert_eq!(
            REFERENCE.replaced(&stubs),
            kernels,
            "entries whose reference kernel is the stub: {:?}",
            entry::names(kernels & !REFERENCE.replaced(&stubs)).collect::<alloc::vec::Vec<_>>()
        );
        assert_eq!(REFERENCE_F32.replaced(&stubs), family::F32);
        assert_eq!(REFERENCE_INT8.replaced(&stubs), family::F32 | family::INT8);
    }

    /// An op with no tensors, to reach each kind's validation.
    struct NoTensors;

    impl Operands for NoTensors {
        fn count(&self) -> usize {
            0
        }
        fn dims(&self, _: usize) -> &[usize] {
            &[]
        }
        fn dtype(&self, _: usize) -> DType {
            DType::F32
        }
        fn out_dims(&self) -> &[usize] {
            &[]
        }
        fn out_dtype(&self) -> DType {
            DType::F32
        }
        fn all_f32(&self) -> bool {
            true
        }
        fn weight(&self, _: usize) -> Result<&[u8], NotAWeight> {
            Err(NotAWeight::InArena)
        }
    }

    /// Every kind the declaration names runs through an entry of the table and has a validation of
    /// its own in a full build (each kind built from its tag and zeros, as the blob encodes it).
    #[test]
    fn every_kind_has_an_entry_and_a_validation() {
        for (tag, name) in KIND_NAMES.iter().enumerate() {
            let mut bytes = [0u8; 64];
            bytes[0] = u8::try_from(tag).expect("fewer than 128 kinds: a one-byte tag");
            let kind: OpKind = postcard::from_bytes(&bytes).expect("every kind decodes from zeros");
            let entries = entry_of(&kind, true, 4) | entry_of(&kind, false, 1);
            assert_ne!(entries, 0, "{name} runs through no entry");
            assert_ne!(
                validate_in::<{ family::ALL }>(&kind, &NoTensors),
                Err(LEFT_OUT),
                "{name} has no validation"
            );
        }
    }
}
