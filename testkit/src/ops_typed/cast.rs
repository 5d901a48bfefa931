//! `Cast` between every pair of dtypes but float16, as numpy's `astype`.

use ember_core::ops::math::cast::{self, CastParams};
use ember_core::{DType, Kernels};
use proptest::collection::vec;
use proptest::prelude::*;

use super::{
    assert_same, dim, floats, int_range, ints, is_shape_error, run, tensor, tensor_with, wrap, Arg,
    Known, Num, Tensor, ALL,
};

/// A cast of one tensor to a dtype.
#[derive(Clone, Debug)]
pub struct CastCase {
    p: CastParams,
    x: Tensor,
}

/// Any dtype to any dtype, rank 0 to 4.
pub fn cast_case() -> impl Strategy<Value = CastCase> {
    let dtype = || proptest::sample::select(ALL.to_vec());
    (dtype(), dtype(), vec(dim(), 0..=4))
        .prop_flat_map(|(from, to, dims)| (Just(CastParams { to }), tensor(from, dims)))
        .prop_map(|(p, x)| CastCase { p, x })
}

/// Wide integers (32 and 64 bits) cast to f32 or f64, built around the rounding edges of the target:
/// a leading bit at `p`, the bit just below the last one the float keeps (a tie), now and then the last
/// kept bit (a tie that rounds up to even), and now and then one lower bit anywhere (just above the
/// tie; below bit `p - 53` it is the case that rounding to f64 first turns into a tie).
pub fn wide_int_to_float_case() -> impl Strategy<Value = CastCase> {
    let from = proptest::sample::select(vec![DType::I32, DType::U32, DType::I64, DType::U64]);
    let to = proptest::sample::select(vec![DType::F32, DType::F64]);
    (from, to, 1usize..=8)
        .prop_flat_map(|(from, to, n)| {
            let digits = if to == DType::F32 { 24 } else { 53 };
            let b = super::bits(from);
            // Leading bits near the top and low bits near the bottom are where f64 and f32 part.
            let lead = prop_oneof![0..b, b - 12..b];
            let low = proptest::option::of(prop_oneof![0..b, 0..12u32]);
            let parts = (lead, any::<bool>(), low);
            let element = parts
                .prop_map(move |(p, odd, low)| {
                    let mut v = 1i128 << p;
                    if p >= digits {
                        v |= 1 << (p - digits);
                        if odd {
                            v |= 1 << (p - digits + 1);
                        }
                    }
                    if let Some(l) = low.filter(|&l| l < p) {
                        v |= 1 << l;
                    }
                    Num::Int(wrap(from, v))
                })
                .boxed();
            (Just(CastParams { to }), tensor_with(from, vec![n], element))
        })
        .prop_map(|(p, x)| CastCase { p, x })
}

/// `i` rounded to `digits` significant bits, to nearest with ties to even (how an integer becomes a
/// float with a `digits`-bit significand), computed on the bits. `|i| < 2^64`, so the result is never
/// beyond f32's range, and with `digits <= 53` it is exactly an f64.
fn round_to_precision(i: i128, digits: u32) -> f64 {
    let m = i.unsigned_abs();
    let len = 128 - m.leading_zeros();
    let r = if len <= digits {
        m
    } else {
        let shift = len - digits;
        let (q, rest, half) = (m >> shift, m & ((1 << shift) - 1), 1u128 << (shift - 1));
        let q = if rest > half || (rest == half && q % 2 == 1) {
            q + 1
        } else {
            q
        };
        q << shift
    };
    let magnitude = r as f64; // exact: at most `digits` significant bits
    if i < 0 {
        -magnitude
    } else {
        magnitude
    }
}

/// A float cast to an integer dtype: NaN is 0, otherwise truncated toward zero and saturated at the
/// dtype's bounds (infinities included).
fn saturate(to: DType, f: f64) -> i128 {
    let (lo, hi) = int_range(to);
    if f.is_nan() {
        return 0;
    }
    let t = f.trunc();
    // lo and hi + 1 are powers of two (or 0), exact in f64.
    if t <= lo as f64 {
        lo
    } else if t >= (hi + 1) as f64 {
        hi
    } else {
        t as i128 // exact: an integer below 2^64 in magnitude
    }
}

/// The definition of `astype(to)` on one exact value.
pub fn cast_definition(v: Num, to: DType) -> Num {
    match (v, to) {
        (Num::Int(i), DType::Bool) => Num::Int(i128::from(i != 0)),
        // NaN is not 0, so it is true.
        (Num::Float(f), DType::Bool) => Num::Int(i128::from(f != 0.0)),
        (Num::Int(i), DType::F32) => Num::Float(round_to_precision(i, 24)),
        (Num::Int(i), DType::F64) => Num::Float(round_to_precision(i, 53)),
        // f64 -> f32 rounds to nearest (overflowing to infinity); f32 -> f32 and f32 -> f64 are exact.
        (Num::Float(f), DType::F32) => Num::Float(f64::from(f as f32)),
        (Num::Float(f), DType::F64) => Num::Float(f),
        (Num::Int(i), _) => Num::Int(wrap(to, i)),
        (Num::Float(f), _) => Num::Int(saturate(to, f)),
    }
}

fn run_cast(k: &Kernels, to: DType, x: &Tensor) -> Vec<Num> {
    run(&[x], to, &x.dims, |x, y| {
        (k.cast)(&CastParams { to }, x[0], y)
    })
}

/// The table's cast against the definition, element by element.
pub fn check_cast(k: &Kernels, c: &CastCase) -> Result<(), TestCaseError> {
    let x = &c.x;
    prop_assert_eq!(
        cast::validate(&c.p, (&x.dims, x.dtype), (&x.dims, c.p.to)),
        Ok(())
    );
    let got = run_cast(k, c.p.to, x);
    let want: Vec<Num> = x
        .values
        .iter()
        .map(|&v| cast_definition(v, c.p.to))
        .collect();
    assert_same(&got, &want)
}

/// Hand-computed casts.
pub fn known_cast(k: &Kernels) {
    let mut known = Known::default();
    let cast = |x: &Tensor, to| run_cast(k, to, x);
    // Float to integer truncates toward zero and saturates; NaN is 0.
    let x = Tensor::floats(
        DType::F32,
        &[8],
        &[
            2.7,
            -2.7,
            300.0,
            -300.0,
            f64::NAN,
            f64::INFINITY,
            -0.5,
            127.9,
        ],
    );
    known.check(
        &cast(&x, DType::I8),
        &ints(&[2, -2, 127, -128, 0, 127, 0, 127]),
    );
    known.check(&cast(&x, DType::U8), &ints(&[2, 0, 255, 0, 0, 255, 0, 127]));
    let x = Tensor::floats(DType::F64, &[3], &[1e19, -1e19, 4294967295.9]);
    let (i64_min, i64_max) = (i128::from(i64::MIN), i128::from(i64::MAX));
    known.check(
        &cast(&x, DType::I64),
        &ints(&[i64_max, i64_min, 4294967295]),
    );
    known.check(&cast(&x, DType::U32), &ints(&[4294967295, 0, 4294967295]));
    // Integer to narrower integer wraps; to wider sign-extends (signed) or zero-extends (unsigned).
    let x = Tensor::ints(DType::I32, &[4], &[300, -1, 128, -129]);
    known.check(&cast(&x, DType::I8), &ints(&[44, -1, -128, 127]));
    known.check(&cast(&x, DType::U8), &ints(&[44, 255, 128, 127]));
    known.check(
        &cast(&x, DType::U64),
        &ints(&[300, (1 << 64) - 1, 128, (1 << 64) - 129]),
    );
    let x = Tensor::ints(DType::U8, &[2], &[255, 128]);
    known.check(&cast(&x, DType::I8), &ints(&[-1, -128]));
    known.check(&cast(&x, DType::I64), &ints(&[255, 128]));
    let x = Tensor::ints(DType::U64, &[2], &[(1 << 64) - 1, 1 << 63]);
    known.check(&cast(&x, DType::I64), &ints(&[-1, i64_min]));
    known.check(&cast(&x, DType::I16), &ints(&[-1, 0]));
    // Anything to bool is `!= 0` (NaN and 0.1 included); bool to anything is 0 or 1.
    let x = Tensor::floats(DType::F64, &[5], &[0.0, -0.0, 0.1, f64::NAN, -3.0]);
    known.check(&cast(&x, DType::Bool), &ints(&[0, 0, 1, 1, 1]));
    let x = Tensor::ints(DType::I64, &[3], &[0, 1 << 40, -1]);
    known.check(&cast(&x, DType::Bool), &ints(&[0, 1, 1]));
    let x = Tensor::ints(DType::Bool, &[2], &[1, 0]);
    known.check(&cast(&x, DType::F32), &floats(&[1.0, 0.0]));
    known.check(&cast(&x, DType::I64), &ints(&[1, 0]));
    // f64 to f32 rounds to nearest and overflows to infinity.
    let x = Tensor::floats(DType::F64, &[3], &[0.1, 1e40, -1e40]);
    known.check(
        &cast(&x, DType::F32),
        &floats(&[f64::from(0.1f32), f64::INFINITY, f64::NEG_INFINITY]),
    );
    // Integers to floats round once, to nearest, ties to even: 2^24 + 1 is a tie between 2^24 and
    // 2^24 + 2 (even is 2^24); 2^63 + 2^39 + 1 is just above the tie between 2^63 and 2^63 + 2^40, so
    // it rounds up (rounding to f64 first would make it the tie, then round down).
    let x = Tensor::ints(DType::I32, &[2], &[(1 << 24) + 1, (1 << 24) + 3]);
    let two24 = f64::from(1u32 << 24);
    known.check(&cast(&x, DType::F32), &floats(&[two24, two24 + 4.0]));
    let x = Tensor::ints(DType::I64, &[1], &[(1 << 62) + (1 << 38) + 1]);
    let want = 2f64.powi(62) + 2f64.powi(39);
    known.check(&cast(&x, DType::F32), &floats(&[want]));
    let x = Tensor::ints(DType::U64, &[1], &[(1 << 63) + (1 << 39) + 1]);
    let want = 2f64.powi(63) + 2f64.powi(40);
    known.check(&cast(&x, DType::F32), &floats(&[want]));
    // Empty and scalar tensors.
    let x = Tensor::ints(DType::I8, &[0, 3], &[]);
    known.check(&cast(&x, DType::F64), &[]);
    let x = Tensor::floats(DType::F32, &[], &[-7.9]);
    known.check(&cast(&x, DType::I16), &ints(&[-7]));
    known.finish();
}

/// `validate` rejects an output of other dims or of a dtype other than the op's, and float16.
pub fn cast_validate_rejects() {
    let p = |to| CastParams { to };
    let s: &[usize] = &[2, 3];
    let bad: [(DType, Arg<'_>, Arg<'_>); 6] = [
        (DType::I32, (s, DType::F32), (&[3, 2], DType::I32)),
        (DType::I32, (s, DType::F32), (&[6], DType::I32)),
        (DType::I32, (s, DType::F32), (s, DType::I64)),
        (DType::Bool, (s, DType::F32), (s, DType::U8)),
        (DType::F16, (s, DType::F32), (s, DType::F32)),
        (DType::F32, (s, DType::F16), (&[3, 2], DType::F32)),
    ];
    for (to, x, y) in bad {
        assert!(
            is_shape_error(cast::validate(&p(to), x, y)),
            "{x:?} as {to:?} -> {y:?}"
        );
    }
    for from in ALL {
        for to in ALL {
            assert_eq!(
                cast::validate(&p(to), (s, from), (s, to)),
                Ok(()),
                "{from:?} as {to:?}"
            );
        }
    }
}

/// float16 (storage only): casts round to nearest, ties to even, and overflow to infinity, as IEEE
/// binary16 does. Bit patterns from the binary16 definition.
pub fn cast_to_and_from_float16() {
    use ember_core::ops::element::{AnyIn, AnyOut};
    /// Casts the five elements of `x` (of `from`) into `y` (of `to`) with the reference kernel.
    fn cast5<T: bytemuck::Pod, U: bytemuck::Pod>(
        x: &[T; 5],
        from: DType,
        y: &mut [U; 5],
        to: DType,
    ) {
        let dims = [5usize];
        let x = AnyIn {
            dtype: from,
            bytes: bytemuck::cast_slice(x),
            dims: &dims,
        };
        let y = AnyOut {
            dtype: to,
            bytes: bytemuck::cast_slice_mut(y),
            dims: &dims,
        };
        cast::cast(&CastParams { to }, x, y);
    }
    let x: [f32; 5] = [1.0 / 3.0, 2049.0, 65504.0, 70000.0, -2.5];
    let mut y = [0u16; 5];
    cast5(&x, DType::F32, &mut y, DType::F16);
    // 1/3 -> 0x3555 (0.333251953125); 2049 -> 2048 (tie, even); 65504 is the largest finite value;
    // 70000 overflows to +inf (0x7c00); -2.5 -> 0xc100.
    assert_eq!(y, [0x3555, 0x6800, 0x7bff, 0x7c00, 0xc100]);
    let mut back = [0i32; 5];
    cast5(&y, DType::F16, &mut back, DType::I32);
    // Truncation toward zero; infinity saturates.
    assert_eq!(back, [0, 2048, 65504, i32::MAX, -2]);
}
