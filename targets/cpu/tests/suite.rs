//! `ember-testkit`'s kernel suites on each of this crate's tables: the f32 suite (proptests against f64
//! definitions, known answers, `validate` edge cases) on the table of every level, and the int8 suite
//! (proptests against exact i64 models and the real-valued ops, known answers, TFLM golden cases) on the
//! int8 kernels of each SIMD level, through small adapters that give each call the scratch its table
//! asks for (the suite's kernels take no workspace).
//!
//! A level this CPU lacks runs the scalar table (f32) or the reference kernels (int8) instead, so its
//! tests pass without testing it: the f32 suite says so on stderr, and `levels_under_test` prints which
//! levels ran for real (x86-64: sse2, avx2; aarch64 under QEMU: neon with `-cpu cortex-a57`, neon and
//! neon-dotprod with `-cpu max`).

mod common;

use common::{Entry, Reference};
use ember_core::kernels::with_scratch;
use ember_core::ops::quant::add::QuantAddFn;
use ember_core::ops::quant::mul::QuantMulFn;
use ember_core::ops::quant::{add, conv, fully_connected, mul};
use ember_core::ops::{In, Out};
use ember_core::{Kernels, OpKind};
use ember_cpu::{table, Isa};
use ember_testkit::ops_int8::{Int8Kernels, REFERENCE};
use ember_testkit::{f32_suite, int8_suite};

/// The table of `isa`; where this CPU cannot run it, the scalar table, with a note on stderr (the
/// level's tests then check nothing of their own).
fn level(isa: Isa) -> &'static Kernels {
    if isa.is_supported() {
        table(isa)
    } else {
        eprintln!("{isa} is not supported by this CPU: its suite runs the scalar table");
        table(Isa::Scalar)
    }
}

f32_suite!(f32_scalar, crate::level(ember_cpu::Isa::Scalar));
#[cfg(target_arch = "x86_64")]
f32_suite!(f32_sse2, crate::level(ember_cpu::Isa::Sse2));
#[cfg(target_arch = "x86_64")]
f32_suite!(f32_avx2, crate::level(ember_cpu::Isa::Avx2));
#[cfg(target_arch = "aarch64")]
f32_suite!(f32_neon, crate::level(ember_cpu::Isa::Neon));
#[cfg(target_arch = "aarch64")]
f32_suite!(f32_neon_dotprod, crate::level(ember_cpu::Isa::NeonDotprod));

/// One call of an int8 layer kernel: `p, x, w, bias, requant, y`.
type LayerCall<'a, P> = (
    &'a P,
    In<'a, i8>,
    In<'a, i8>,
    Option<&'a [i32]>,
    &'a [i32],
    Out<'a, i8>,
);

/// Runs an int8 layer through `entry` of level `isa`'s table, with the scratch the table asks for an
/// op of `kind`, or through `reference` where this CPU lacks the level.
fn run_layer<P>(
    isa: Isa,
    kind: OpKind,
    entry: fn(&Kernels) -> Entry<P>,
    reference: Reference<P>,
    (p, x, w, b, requant, y): LayerCall<'_, P>,
) {
    if !isa.is_supported() {
        return reference(p, x, w, b, requant, y);
    }
    let k = table(isa);
    let rq = [requant.len() / 2, 2];
    let b_dims = b.map(|b| [b.len()]);
    let mut inputs: Vec<&[usize]> = vec![x.dims, w.dims, &rq];
    inputs.extend(b_dims.as_ref().map(|d| &d[..]));
    with_scratch(k, &kind, &inputs, y.dims, |ws| {
        entry(k)(p, x, w, b, requant, y, ws)
    })
}

/// The int8 kernels of level `Isa::ALL[L]`: its table's Conv2d, FullyConnected, Add and Mul, the
/// layers given the scratch they ask for (the suite's kernels take no workspace), or the reference's
/// where this CPU lacks the level; the ops it does not accelerate are its table's, i.e. the
/// reference's.
const fn int8_level<const L: usize>() -> Int8Kernels {
    Int8Kernels {
        conv2d: |p, x, w, b, rq, y| {
            let (isa, kind) = (Isa::ALL[L], OpKind::QuantConv2d(*p));
            run_layer(
                isa,
                kind,
                |k| k.quant_conv2d,
                conv::conv2d,
                (p, x, w, b, rq, y),
            )
        },
        fully_connected: |p, x, w, b, rq, y| {
            let (isa, kind) = (Isa::ALL[L], OpKind::QuantFullyConnected(*p));
            let entry = |k: &Kernels| k.quant_fully_connected;
            let reference = fully_connected::fully_connected;
            run_layer(isa, kind, entry, reference, (p, x, w, b, rq, y))
        },
        // The level's own int8 Add and Mul (vectorized where the level has them), or the
        // reference's where this CPU lacks the level.
        add: |p, a, b, y| own(Isa::ALL[L], |k| k.quant_add, add::add as QuantAddFn)(p, a, b, y),
        mul: |p, a, b, y| own(Isa::ALL[L], |k| k.quant_mul, mul::mul as QuantMulFn)(p, a, b, y),
        ..REFERENCE
    }
}

/// The kernel `entry` of `isa`'s table where this CPU runs the level, else `reference`.
fn own<K>(isa: Isa, entry: impl Fn(&Kernels) -> K, reference: K) -> K {
    if isa.is_supported() {
        entry(table(isa))
    } else {
        reference
    }
}

const fn index(isa: Isa) -> usize {
    isa as usize
}

static SSE2: Int8Kernels = int8_level::<{ index(Isa::Sse2) }>();
static AVX2: Int8Kernels = int8_level::<{ index(Isa::Avx2) }>();
static NEON: Int8Kernels = int8_level::<{ index(Isa::Neon) }>();
static NEON_DOTPROD: Int8Kernels = int8_level::<{ index(Isa::NeonDotprod) }>();

int8_suite!(int8_sse2, &crate::SSE2);
int8_suite!(int8_avx2, &crate::AVX2);
int8_suite!(int8_neon, &crate::NEON);
int8_suite!(int8_neon_dotprod, &crate::NEON_DOTPROD);

#[test]
fn levels_under_test() {
    assert_eq!(Isa::ALL[index(Isa::NeonDotprod)], Isa::NeonDotprod);
    let ran: Vec<_> = Isa::supported().filter(|&i| i != Isa::Scalar).collect();
    eprintln!("int8 suite ran the SIMD kernels of: {ran:?} (the other levels ran the reference)");
    assert!(!ran.is_empty(), "no SIMD level on this CPU");
}
