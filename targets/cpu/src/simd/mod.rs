//! Lanes of f32 at each instruction-set level, behind one trait ([`Simd`]), so that every kernel of
//! this crate is written once and compiled per level: [`Scalar`] (one lane, portable), `Sse2` (4 lanes,
//! x86-64 baseline), `Avx2` (8 lanes, AVX2 and FMA) and `Neon` (4 lanes, aarch64 baseline).
//!
//! A level is a zero-sized token; a kernel takes it as its first argument (`fn kernel<S: Simd>(s: S,
//! ...)`) and calls its methods, which are `#[inline(always)]`. [`per_level!`] wraps a kernel in one
//! function per level; the AVX2 one runs inside a `#[target_feature(enable = "avx2,fma")]` function, so
//! that everything inlined into it is compiled for AVX2. Every generic function a kernel calls must be
//! `#[inline(always)]` too: one that is not is compiled without the level's features and calls each
//! intrinsic out of line. Closures cannot be marked so: the loops here call the closure they are given
//! from one place only, which gets it inlined (LLVM always inlines a function into its only caller);
//! other closures holding vector code should stay a line or two, or be `#[inline(always)]` functions.
//!
//! Also here: the loops every element-wise kernel shares ([`map`], [`zip`], ...), which handle the
//! tail that does not fill a vector by running the same vector code on a zero-padded copy, so that an
//! element's result never depends on where it sits in the tensor. The vectorized transcendental
//! functions are in [`math`].

use core::mem::MaybeUninit;

pub(crate) mod math;
mod scalar;

#[cfg(target_arch = "aarch64")]
mod neon;
#[cfg(target_arch = "x86_64")]
mod x86;

#[cfg(target_arch = "aarch64")]
pub(crate) use neon::Neon;
pub(crate) use scalar::Scalar;
#[cfg(target_arch = "x86_64")]
pub(crate) use x86::{Avx2, Sse2};

/// The most lanes of any level (AVX2): the size of the buffers that hold a partial vector.
pub(crate) const MAX_LANES: usize = 8;

/// One instruction-set level's f32 vectors. Methods are lane-wise unless said otherwise.
///
/// `min` and `max` have x86's semantics on every level (`a < b ? a : b`: the second operand when
/// either is NaN), which the kernels use to reproduce the reference's NaN handling exactly; `mul_add`
/// is fused where the level has FMA, so only code that is allowed to differ from the reference in the
/// last bit (the transcendental functions) uses it.
pub(crate) trait Simd: Copy {
    /// Lanes of f32.
    type V: Copy;
    /// Lanes of i32.
    type I: Copy;
    /// A lane mask (what comparisons give).
    type M: Copy;
    /// Number of lanes.
    const LANES: usize;

    /// Every lane `x`.
    fn splat(self, x: f32) -> Self::V;
    /// `LANES` values from `p` (any alignment).
    ///
    /// # Safety
    /// `p` must be valid for reading `LANES` f32.
    unsafe fn load(self, p: *const f32) -> Self::V;
    /// Writes the lanes to `p` (any alignment).
    ///
    /// # Safety
    /// `p` must be valid for writing `LANES` f32.
    unsafe fn store(self, p: *mut f32, v: Self::V);

    /// `a + b`.
    fn add(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a - b`.
    fn sub(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a * b`.
    fn mul(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a / b`.
    fn div(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a * b + c`, rounded once where the level has FMA, twice elsewhere.
    fn mul_add(self, a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `a < b ? a : b`.
    fn min(self, a: Self::V, b: Self::V) -> Self::V;
    /// `a > b ? a : b`.
    fn max(self, a: Self::V, b: Self::V) -> Self::V;
    /// Square root (correctly rounded).
    fn sqrt(self, a: Self::V) -> Self::V;
    /// Largest integer `<= a` (sign of zero kept, NaN and infinities passed through).
    fn floor(self, a: Self::V) -> Self::V;
    /// Smallest integer `>= a`.
    fn ceil(self, a: Self::V) -> Self::V;
    /// Nearest integer, ties to even.
    fn round(self, a: Self::V) -> Self::V;
    /// `|a|` (clears the sign bit).
    fn abs(self, a: Self::V) -> Self::V;
    /// `-a` (flips the sign bit).
    fn neg(self, a: Self::V) -> Self::V;
    /// `|a|` with the sign bit of `sign`.
    fn copysign(self, a: Self::V, sign: Self::V) -> Self::V;

    /// `a < b` (false when either is NaN).
    fn lt(self, a: Self::V, b: Self::V) -> Self::M;
    /// `a <= b`.
    fn le(self, a: Self::V, b: Self::V) -> Self::M;
    /// `a == b`.
    fn eq(self, a: Self::V, b: Self::V) -> Self::M;
    /// Whether `a` is NaN.
    fn is_nan(self, a: Self::V) -> Self::M;
    /// Either mask.
    fn or(self, a: Self::M, b: Self::M) -> Self::M;
    /// `m ? a : b`.
    fn select(self, m: Self::M, a: Self::V, b: Self::V) -> Self::V;

    /// Every lane `x`.
    fn splat_i(self, x: i32) -> Self::I;
    /// The bits of `a`.
    fn to_bits(self, a: Self::V) -> Self::I;
    /// The f32 whose bits are `a`.
    fn bits_to_f32(self, a: Self::I) -> Self::V;
    /// `a` rounded to the nearest integer, ties to even (`|a| < 2^31`).
    fn to_int(self, a: Self::V) -> Self::I;
    /// `a` as f32.
    fn to_float(self, a: Self::I) -> Self::V;
    /// `a + b` (wrapping).
    fn add_i(self, a: Self::I, b: Self::I) -> Self::I;
    /// `a - b` (wrapping).
    fn sub_i(self, a: Self::I, b: Self::I) -> Self::I;
    /// `a & b`.
    fn and_i(self, a: Self::I, b: Self::I) -> Self::I;
    /// `a << 23`: an exponent into place.
    fn shl_23(self, a: Self::I) -> Self::I;
    /// `a >> 23` (arithmetic): the exponent field of a non-negative float's bits.
    fn shr_23(self, a: Self::I) -> Self::I;
    /// `a >> 1` (arithmetic).
    fn shr_1(self, a: Self::I) -> Self::I;

    /// Sum of the lanes, in a fixed order.
    fn sum(self, a: Self::V) -> f32;
}

/// Elements per block of the loops below (`BLOCK / LANES` vectors): one block is a handful of
/// independent vectors in flight.
const BLOCK: usize = 32;

/// Where an element-wise loop reads an operand: consecutive values, or one value repeated.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Operand<'a> {
    /// One value per element (at least as many as the loop's elements).
    Run(&'a [f32]),
    /// The same value for every element.
    Repeat(f32),
}

/// Zeros, read by the vectors of a short last block that lie wholly past its end.
static ZEROS: [f32; MAX_LANES] = [0.0; MAX_LANES];

/// One vector on the stack, for the vector that straddles the end of a loop: filled before it is
/// read, so that it costs nothing in calls that have no such vector.
struct Pad([MaybeUninit<f32>; MAX_LANES]);

impl Pad {
    #[inline(always)]
    fn new() -> Pad {
        Pad([MaybeUninit::uninit(); MAX_LANES])
    }

    /// Holds `values` (fewer than MAX_LANES), then `rest`; a pointer to the MAX_LANES values.
    #[inline(always)]
    fn fill(&mut self, values: &[f32], rest: f32) -> *const f32 {
        let all = values.iter().copied().chain(core::iter::repeat(rest));
        for (slot, v) in self.0.iter_mut().zip(all) {
            slot.write(v);
        }
        self.0.as_ptr().cast()
    }

    /// A pointer for writing MAX_LANES values.
    #[inline(always)]
    fn out(&mut self) -> *mut f32 {
        self.0.as_mut_ptr().cast()
    }

    /// The first `n` values.
    ///
    /// # Safety
    /// They must have been written (by [`Pad::fill`], or through [`Pad::out`]).
    #[inline(always)]
    unsafe fn written(&self, n: usize) -> &[f32] {
        // SAFETY: the caller says the first n values are initialized.
        unsafe { core::slice::from_raw_parts(self.0.as_ptr().cast(), n.min(MAX_LANES)) }
    }
}

/// Where the vector at `k` of a block of `len` elements (out of BLOCK) reads a run whose block starts
/// at `run`: in the run while the vector fits, in `pad` (the run's last values, padded) for the vector
/// that straddles the end, in [`ZEROS`] past it.
#[inline(always)]
fn source<S: Simd>(run: *const f32, k: usize, len: usize, pad: *const f32) -> *const f32 {
    if k + S::LANES <= len {
        run.wrapping_add(k)
    } else if k < len {
        pad
    } else {
        ZEROS.as_ptr()
    }
}

/// A vector of `x` (fewer than LANES values wherever it is shorter), the missing lanes `rest`.
#[inline(always)]
pub(crate) fn load_part<S: Simd>(s: S, x: &[f32], rest: f32) -> S::V {
    if x.len() >= S::LANES {
        // SAFETY: `x` has at least LANES values.
        unsafe { s.load(x.as_ptr()) }
    } else {
        let mut pad = Pad::new();
        // SAFETY: `fill` wrote MAX_LANES >= LANES values.
        unsafe { s.load(pad.fill(x, rest)) }
    }
}

/// Writes the first `min(y.len(), LANES)` lanes of `v` to `y`.
#[inline(always)]
pub(crate) fn store_part<S: Simd>(s: S, y: &mut [f32], v: S::V) {
    if y.len() >= S::LANES {
        // SAFETY: `y` has room for LANES values.
        unsafe { s.store(y.as_mut_ptr(), v) }
    } else {
        let mut out = Pad::new();
        // SAFETY: the pad holds MAX_LANES >= LANES values, all written by the store.
        unsafe {
            s.store(out.out(), v);
            y.copy_from_slice(out.written(y.len()));
        }
    }
}

/// `y[i] = f(x[i])` over `min(x.len(), y.len())` elements.
#[inline(always)]
pub(crate) fn map<S: Simd>(s: S, x: &[f32], y: &mut [f32], f: impl Fn(S::V) -> S::V) {
    let n = x.len().min(y.len());
    zip(s, Operand::Run(&x[..n]), Operand::Repeat(0.0), y, |v, _| {
        f(v)
    });
}

/// `y[i] = f(y[i], b[i])` in place (over fewer elements where a run `b` is shorter).
#[inline(always)]
pub(crate) fn update<S: Simd>(s: S, y: &mut [f32], b: Operand<'_>, f: impl Fn(S::V, S::V) -> S::V) {
    let n = match b {
        Operand::Run(run) => y.len().min(run.len()),
        Operand::Repeat(_) => y.len(),
    };
    let (b_run, b_repeat) = match b {
        Operand::Run(run) => (run.as_ptr(), None),
        Operand::Repeat(v) => (ZEROS.as_ptr(), Some(s.splat(v))),
    };
    let (mut y_pad, mut b_pad, mut out) = (Pad::new(), Pad::new(), Pad::new());
    let yp = y.as_mut_ptr();
    let mut i = 0;
    while i < n {
        let len = BLOCK.min(n - i);
        let whole = len / S::LANES * S::LANES;
        let (mut y_straddling, mut b_straddling) = (ZEROS.as_ptr(), ZEROS.as_ptr());
        if whole < len {
            y_straddling = y_pad.fill(&y[i + whole..i + len], 0.0);
            if let Operand::Run(run) = b {
                b_straddling = b_pad.fill(&run[i + whole..i + len], 0.0);
            }
        }
        let bp = b_run.wrapping_add(i);
        for k in (0..BLOCK).step_by(S::LANES) {
            // SAFETY: `source` points at LANES readable values: in `y` (or a run of at least `n`
            // values) while the vector fits before `i + len <= n`, else in a pad or ZEROS.
            let u = unsafe { s.load(source::<S>(yp.wrapping_add(i), k, len, y_straddling)) };
            let v = match b_repeat {
                Some(v) => v,
                // SAFETY: as for `y`.
                None => unsafe { s.load(source::<S>(bp, k, len, b_straddling)) },
            };
            let r = f(u, v);
            if k + S::LANES <= len {
                // SAFETY: i + k + LANES <= i + len <= n <= y.len().
                unsafe { s.store(yp.add(i + k), r) };
            } else if k < len {
                // SAFETY: `out` holds MAX_LANES >= LANES values.
                unsafe { s.store(out.out(), r) };
            }
        }
        if whole < len {
            // SAFETY: the straddling vector was stored to `out`.
            y[i + whole..i + len].copy_from_slice(unsafe { out.written(len - whole) });
        }
        i += len;
    }
}

/// `y[i] = f(y[i])` in place.
#[inline(always)]
pub(crate) fn map_in_place<S: Simd>(s: S, y: &mut [f32], f: impl Fn(S::V) -> S::V) {
    update(s, y, Operand::Repeat(0.0), |v, _| f(v));
}

/// `y[i] = f(a[i], b[i])` over `y.len()` elements (fewer where a run operand is shorter).
///
/// `f` is called from one place only, so that it is inlined into the level's function wherever this
/// is (a closure is compiled without the level's target features, and only inlining gives them to it).
/// The vector that straddles the end runs on zero-padded copies.
#[inline(always)]
pub(crate) fn zip<S: Simd>(
    s: S,
    a: Operand<'_>,
    b: Operand<'_>,
    y: &mut [f32],
    f: impl Fn(S::V, S::V) -> S::V,
) {
    let mut n = y.len();
    for operand in [a, b] {
        if let Operand::Run(run) = operand {
            n = n.min(run.len());
        }
    }
    // A run is read through a pointer, a repeated value is a vector.
    let reader = |operand: Operand<'_>| match operand {
        Operand::Run(run) => (run.as_ptr(), None),
        Operand::Repeat(v) => (ZEROS.as_ptr(), Some(s.splat(v))),
    };
    let ((a_run, a_repeat), (b_run, b_repeat)) = (reader(a), reader(b));
    let (mut a_pad, mut b_pad, mut out) = (Pad::new(), Pad::new(), Pad::new());
    let yp = y.as_mut_ptr();
    let mut i = 0;
    while i < n {
        let len = BLOCK.min(n - i);
        let whole = len / S::LANES * S::LANES;
        let (mut a_straddling, mut b_straddling) = (ZEROS.as_ptr(), ZEROS.as_ptr());
        if whole < len {
            if let Operand::Run(run) = a {
                a_straddling = a_pad.fill(&run[i + whole..i + len], 0.0);
            }
            if let Operand::Run(run) = b {
                b_straddling = b_pad.fill(&run[i + whole..i + len], 0.0);
            }
        }
        let (ap, bp) = (a_run.wrapping_add(i), b_run.wrapping_add(i));
        for k in (0..BLOCK).step_by(S::LANES) {
            let u = match a_repeat {
                Some(u) => u,
                // SAFETY: `source` points at LANES readable values: within a run of at least `n`
                // values while the vector fits before `i + len <= n`, else in the pad or ZEROS.
                None => unsafe { s.load(source::<S>(ap, k, len, a_straddling)) },
            };
            let v = match b_repeat {
                Some(v) => v,
                // SAFETY: as for `a`.
                None => unsafe { s.load(source::<S>(bp, k, len, b_straddling)) },
            };
            let r = f(u, v);
            if k + S::LANES <= len {
                // SAFETY: i + k + LANES <= i + len <= n <= y.len().
                unsafe { s.store(yp.add(i + k), r) };
            } else if k < len {
                // SAFETY: `out` holds MAX_LANES >= LANES values.
                unsafe { s.store(out.out(), r) };
            }
        }
        if whole < len {
            // SAFETY: the straddling vector was stored to `out`.
            y[i + whole..i + len].copy_from_slice(unsafe { out.written(len - whole) });
        }
        i += len;
    }
}

/// `acc = f(acc, x)` over the vectors of `x`, from `init` in each of `BLOCK / LANES` accumulators,
/// which `merge` then combines pairwise in a fixed order; the missing lanes of a short last block
/// hold `pad` (which must change nothing: the identity of `f`). Returns the lane-wise result.
#[inline(always)]
pub(crate) fn fold<S: Simd>(
    s: S,
    x: &[f32],
    init: S::V,
    pad: f32,
    f: impl Fn(S::V, S::V) -> S::V,
    merge: impl Fn(S::V, S::V) -> S::V,
) -> S::V {
    let n = x.len();
    let mut acc = [init; BLOCK];
    let mut tail = Pad::new();
    let padding = s.splat(pad);
    let mut i = 0;
    while i < n {
        let len = BLOCK.min(n - i);
        let whole = len / S::LANES * S::LANES;
        let straddling = if whole < len {
            tail.fill(&x[i + whole..i + len], pad)
        } else {
            ZEROS.as_ptr()
        };
        let p = x[i..].as_ptr();
        for (k, acc) in acc.iter_mut().take(BLOCK / S::LANES).enumerate() {
            let at = k * S::LANES;
            let v = if at < len {
                // SAFETY: `source` points at LANES readable values (in `x` while the vector fits,
                // else in the filled pad).
                unsafe { s.load(source::<S>(p, at, len, straddling)) }
            } else {
                padding
            };
            *acc = f(*acc, v);
        }
        i += len;
    }
    // Pairwise, in a fixed order.
    let mut width = BLOCK / S::LANES;
    while width > 1 {
        width /= 2;
        for k in 0..width {
            acc[k] = merge(acc[k], acc[k + width]);
        }
    }
    acc[0]
}

/// The lanes of `v`, for reductions that finish in scalar code.
#[inline(always)]
pub(crate) fn lanes<S: Simd>(s: S, v: S::V) -> [f32; MAX_LANES] {
    let mut buf = [0.0f32; MAX_LANES];
    // SAFETY: `buf` holds MAX_LANES >= LANES values.
    unsafe { s.store(buf.as_mut_ptr(), v) };
    buf
}

/// Defines, for each listed kernel `fn name(args) => generic;`, one module per instruction-set level
/// (`scalar`, `sse2` and `avx2` on x86-64, `neon` on aarch64) holding `fn name(args)`, the kernel
/// table's entry: it calls `generic(level, args)`, the AVX2 one from inside a function compiled with
/// AVX2 and FMA. Starting the list with `simd:` leaves out the `scalar` module, for kernels the scalar
/// table does not take (where the reference kernel, which the compiler vectorizes, is as fast).
macro_rules! per_level {
    (simd: $(fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $generic:path;)+) => {
        /// This file's kernels on SSE2 (4 lanes).
        #[cfg(target_arch = "x86_64")]
        pub(crate) mod sse2 {
            #[allow(unused_imports)]
            use super::*;
            $(
                pub(crate) fn $name($($arg: $ty),*) {
                    $generic($crate::simd::Sse2::new(), $($arg),*)
                }
            )+
        }

        /// This file's kernels on AVX2 with FMA (8 lanes).
        #[cfg(target_arch = "x86_64")]
        pub(crate) mod avx2 {
            #[allow(unused_imports)]
            use super::*;
            $(
                pub(crate) fn $name($($arg: $ty),*) {
                    #[target_feature(enable = "avx2,fma")]
                    fn with_avx2($($arg: $ty),*) {
                        $generic($crate::simd::Avx2::new(), $($arg),*)
                    }
                    // SAFETY: this function is an entry of the AVX2 kernel table only, which `Isa`
                    // hands out only when the CPU has AVX2 and FMA (`Isa::is_supported`).
                    unsafe { with_avx2($($arg),*) }
                }
            )+
        }

        /// This file's kernels on NEON (4 lanes).
        #[cfg(target_arch = "aarch64")]
        pub(crate) mod neon {
            #[allow(unused_imports)]
            use super::*;
            $(
                pub(crate) fn $name($($arg: $ty),*) {
                    $generic($crate::simd::Neon::new(), $($arg),*)
                }
            )+
        }
    };
    ($(fn $name:ident($($arg:ident: $ty:ty),* $(,)?) => $generic:path;)+) => {
        /// This file's kernels on one lane, in portable Rust.
        pub(crate) mod scalar {
            #[allow(unused_imports)]
            use super::*;
            $(
                pub(crate) fn $name($($arg: $ty),*) {
                    $generic($crate::simd::Scalar, $($arg),*)
                }
            )+
        }

        $crate::simd::per_level! { simd: $(fn $name($($arg: $ty),*) => $generic;)+ }
    };
}
pub(crate) use per_level;
