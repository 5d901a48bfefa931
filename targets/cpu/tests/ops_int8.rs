//! `ember-core`'s whole int8 kernel suite (`core/tests/ops_int8.rs`: proptests against exact i64 models
//! and the real-valued ops, known answers, TFLM golden cases, `validate` edge cases) run on the int8
//! kernels of each SIMD level's table, through small adapters that give each call the scratch its
//! table asks for (the suite's kernels take no workspace).
//!
//! A level this CPU lacks runs the reference kernels instead, so its tests pass without testing it:
//! `levels_under_test` prints which levels ran for real (x86-64: sse2, avx2; aarch64 under QEMU:
//! neon with `-cpu cortex-a57`, neon and neon-dotprod with `-cpu max`).
//!
//! The suite's files refer to their helpers as `crate::...`, so this test crate's root re-exports them
//! (see `targets/cortex-m/tests/ops_int8_dsp.rs`, which does the same).
#![allow(clippy::duplicate_mod)]

#[path = "../../../core/tests/ops_int8.rs"]
#[macro_use]
#[allow(dead_code)]
mod suite;

#[path = "../../../core/tests/ops_int8/conv.rs"]
mod conv;
#[path = "../../../core/tests/ops_int8/elementwise.rs"]
mod elementwise;
#[path = "../../../core/tests/ops_int8/pool.rs"]
mod pool;
#[path = "../../../core/tests/ops_int8/softmax.rs"]
mod softmax;
#[path = "../../../core/tests/ops_int8/tflm.rs"]
mod tflm;

pub use suite::*;

use ember_core::ops::quant::conv::QuantConv2dParams;
use ember_core::ops::quant::fully_connected::QuantFullyConnectedParams;
use ember_core::ops::{In, Out};
use ember_core::workspace::with_scratch;
use ember_core::OpKind;
use ember_cpu::{table, Isa};

/// Level `Isa::ALL[L]`'s int8 Conv2d, with the scratch its table asks for (the reference kernel where
/// this CPU lacks the level).
fn conv2d<const L: usize>(
    p: &QuantConv2dParams,
    x: In<'_, i8>,
    w: In<'_, i8>,
    b: Option<&[i32]>,
    requant: &[i32],
    y: Out<'_, i8>,
) {
    let isa = Isa::ALL[L];
    if !isa.is_supported() {
        return ember_core::ops::quant::conv::conv2d(p, x, w, b, requant, y);
    }
    let k = table(isa);
    let rq = [requant.len() / 2, 2];
    let b_dims = b.map(|b| [b.len()]);
    let mut inputs: Vec<&[usize]> = vec![x.dims, w.dims, &rq];
    inputs.extend(b_dims.as_ref().map(|d| &d[..]));
    let y_dims = y.dims;
    with_scratch(k, &OpKind::QuantConv2d(*p), &inputs, y_dims, |ws| {
        (k.quant_conv2d)(p, x, w, b, requant, y, ws)
    })
}

/// Level `Isa::ALL[L]`'s int8 FullyConnected, as [`conv2d`].
fn fully_connected<const L: usize>(
    p: &QuantFullyConnectedParams,
    x: In<'_, i8>,
    w: In<'_, i8>,
    b: Option<&[i32]>,
    requant: &[i32],
    y: Out<'_, i8>,
) {
    let isa = Isa::ALL[L];
    if !isa.is_supported() {
        return ember_core::ops::quant::fully_connected::fully_connected(p, x, w, b, requant, y);
    }
    let k = table(isa);
    let rq = [requant.len() / 2, 2];
    let b_dims = b.map(|b| [b.len()]);
    let mut inputs: Vec<&[usize]> = vec![x.dims, w.dims, &rq];
    inputs.extend(b_dims.as_ref().map(|d| &d[..]));
    let y_dims = y.dims;
    with_scratch(k, &OpKind::QuantFullyConnected(*p), &inputs, y_dims, |ws| {
        (k.quant_fully_connected)(p, x, w, b, requant, y, ws)
    })
}

/// The int8 kernels of level `Isa::ALL[L]` (the ops it does not accelerate are its table's, i.e. the
/// reference's).
const fn level<const L: usize>() -> Int8Kernels {
    Int8Kernels {
        conv2d: conv2d::<L>,
        fully_connected: fully_connected::<L>,
        ..REFERENCE
    }
}

const fn index(isa: Isa) -> usize {
    isa as usize
}

static SSE2: Int8Kernels = level::<{ index(Isa::Sse2) }>();
static AVX2: Int8Kernels = level::<{ index(Isa::Avx2) }>();
static NEON: Int8Kernels = level::<{ index(Isa::Neon) }>();
static NEON_DOTPROD: Int8Kernels = level::<{ index(Isa::NeonDotprod) }>();

int8_suite!(sse2, &crate::SSE2);
int8_suite!(avx2, &crate::AVX2);
int8_suite!(neon, &crate::NEON);
int8_suite!(neon_dotprod, &crate::NEON_DOTPROD);

#[test]
fn levels_under_test() {
    assert_eq!(Isa::ALL[index(Isa::NeonDotprod)], Isa::NeonDotprod);
    let ran: Vec<_> = Isa::supported().filter(|&i| i != Isa::Scalar).collect();
    eprintln!("int8 suite ran the SIMD kernels of: {ran:?} (the other levels ran the reference)");
    assert!(!ran.is_empty(), "no SIMD level on this CPU");
}
