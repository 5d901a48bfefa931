//! Element-wise arithmetic on integer and f64 tensors: the binary ops with broadcasting, and Abs,
//! Neg, Sign, Relu, Clip, Floor, Ceil, Round.
//!
//! Integer results are computed exactly in `i128` and then wrapped modulo 2^bits (numpy's overflow);
//! division truncates toward zero, `Mod` takes the dividend's sign, `FloorMod` the divisor's (Python's
//! `%`), and anything divided by zero is 0. f64 follows IEEE and Python's float `%`.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::arith;
use ember_core::ops::math::binary::{BinaryOp, BinaryParams};
use ember_core::ops::math::unary::{UnaryOp, UnaryParams};
use ember_core::{DType, Kernels};
use proptest::collection::vec;
use proptest::prelude::*;

use crate::ops_f32::math::{arithmetic_definition, BINARY_OPS};

use super::{
    assert_same, bits, broadcast_shapes, dim, floats, int_range, ints, is_shape_error, numel, run,
    same, tensor, two_operands, wrap, Arg, Known, Num, Tensor, TwoOperands, INTS,
};

// --------------------------------------------------------------------------------------------- binary

/// A binary op over two broadcasting operands of one dtype.
pub type BinaryCase = TwoOperands<BinaryParams>;

fn binary_case(ops: Vec<BinaryOp>, dtypes: Vec<DType>) -> impl Strategy<Value = BinaryCase> {
    let op = proptest::sample::select(ops);
    (op, proptest::sample::select(dtypes), broadcast_shapes(2)).prop_flat_map(
        |(op, dtype, shapes)| {
            let p = BinaryParams {
                op,
                act: Activation::None,
            };
            two_operands(p, shapes, move |dims| tensor(dtype, dims))
        },
    )
}

/// Every binary op but `Pow` (which has its own test) on every integer dtype.
pub fn int_binary_case() -> impl Strategy<Value = BinaryCase> {
    let ops = binary_ops_but(&[BinaryOp::Pow, BinaryOp::PRelu]);
    binary_case(ops, INTS.to_vec())
}

/// `Pow` on every integer dtype.
pub fn int_pow_case() -> impl Strategy<Value = BinaryCase> {
    binary_case(vec![BinaryOp::Pow], INTS.to_vec())
}

/// Every binary op these kernels run, on f64.
pub fn f64_binary_case() -> impl Strategy<Value = BinaryCase> {
    binary_case(binary_ops_but(&[BinaryOp::PRelu]), vec![DType::F64])
}

/// Every binary op but `excluded`, in [`BINARY_OPS`]' order.
fn binary_ops_but(excluded: &[BinaryOp]) -> Vec<BinaryOp> {
    let kept = BINARY_OPS.into_iter().filter(|op| !excluded.contains(op));
    kept.collect()
}

/// `a / b` rounded toward zero (`b != 0`), from the magnitudes.
fn trunc_div(a: i128, b: i128) -> i128 {
    let q = a.abs() / b.abs();
    if (a < 0) != (b < 0) {
        -q
    } else {
        q
    }
}

/// `a / b` rounded toward negative infinity (`b != 0`).
fn floor_div(a: i128, b: i128) -> i128 {
    let q = trunc_div(a, b);
    if q * b != a && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

/// `a^e` in dtype `d`: for `e >= 0` the power modulo 2^bits (by squaring, over every bit of `e`); for
/// `e < 0` the real power truncated toward zero: 1 and -1 keep their magnitude, other bases give a
/// fraction, hence 0 (0 to a negative power divides by zero, which gives 0 too).
fn int_pow(d: DType, a: i128, e: i128) -> i128 {
    if e < 0 {
        return match a {
            1 => 1,
            -1 if e % 2 == 0 => 1,
            -1 => -1,
            _ => 0,
        };
    }
    let m = 1u128 << bits(d);
    let mut base = a.rem_euclid(1i128 << bits(d)) as u128; // in 0..m
    let mut result = 1u128;
    let mut e = e as u128; // e >= 0
    while e > 0 {
        // Both factors are below 2^64, so the products fit in u128.
        if e % 2 == 1 {
            result = result * base % m;
        }
        base = base * base % m;
        e /= 2;
    }
    wrap(d, result as i128) // below 2^64
}

/// The binary ops on integers of dtype `d`, written out.
fn int_binary(op: BinaryOp, d: DType, a: i128, b: i128) -> i128 {
    match op {
        BinaryOp::Add => wrap(d, a + b),
        BinaryOp::Sub => wrap(d, a - b),
        // Multiplied modulo 2^128 (u64 products overflow i128), which is exact modulo 2^bits.
        BinaryOp::Mul => wrap(d, (a as u128).wrapping_mul(b as u128) as i128),
        BinaryOp::Div | BinaryOp::Mod | BinaryOp::FloorMod if b == 0 => 0,
        // MIN / -1 is MAX + 1, which wraps to MIN.
        BinaryOp::Div => wrap(d, trunc_div(a, b)),
        BinaryOp::Mod => a - trunc_div(a, b) * b,
        BinaryOp::FloorMod => a - floor_div(a, b) * b,
        BinaryOp::Pow => int_pow(d, a, b),
        BinaryOp::Min => a.min(b),
        BinaryOp::Max => a.max(b),
        BinaryOp::PRelu => panic!("PRelu is not an integer op"),
    }
}

/// Python's float `%`: fmod, moved by one divisor when its sign differs from the divisor's; a zero
/// remainder takes the divisor's sign.
fn python_float_mod(u: f64, v: f64) -> f64 {
    let r = u % v; // Rust's float `%` is C's fmod (exact)
    if r == 0.0 {
        0f64.copysign(v)
    } else if (r < 0.0) != (v < 0.0) {
        r + v
    } else {
        r
    }
}

/// The binary ops on f64, written out (IEEE arithmetic; Min and Max are NaN if either operand is).
fn f64_binary(op: BinaryOp, u: f64, v: f64) -> f64 {
    let nan = u.is_nan() || v.is_nan();
    match op {
        BinaryOp::Min | BinaryOp::Max if nan => f64::NAN,
        // numpy: the first operand on ties (so min(+0, -0) is +0).
        BinaryOp::Min => {
            if u <= v {
                u
            } else {
                v
            }
        }
        BinaryOp::Max => {
            if u >= v {
                u
            } else {
                v
            }
        }
        BinaryOp::FloorMod => python_float_mod(u, v),
        BinaryOp::PRelu => panic!("PRelu is not an f64 op here"),
        _ => arithmetic_definition(op, u, v),
    }
}

/// The expected result of `u op v` in dtype `d`.
fn binary_definition(op: BinaryOp, d: DType, u: Num, v: Num) -> Num {
    match d {
        DType::F64 => Num::Float(f64_binary(op, u.float(), v.float())),
        _ => Num::Int(int_binary(op, d, u.int(), v.int())),
    }
}

/// Whether `got` is `want` to within a few ulps (for `Pow`, whose libm need not round as std does).
fn close(got: Num, want: Num) -> bool {
    let (g, w) = (got.float(), want.float());
    same(got, want) || (w.is_finite() && (g - w).abs() <= 1e-14 * w.abs())
}

fn run_binary(k: &Kernels, p: &BinaryParams, a: &Tensor, b: &Tensor, y_dims: &[usize]) -> Vec<Num> {
    run(&[a, b], a.dtype, y_dims, |x, y| {
        (k.binary_any)(p, x[0], x[1], y)
    })
}

/// The table's binary kernel against the definition, by explicit index mapping.
pub fn check_binary(k: &Kernels, c: &BinaryCase) -> Result<(), TestCaseError> {
    let a = &c.a;
    prop_assert_eq!(c.validate_with(a.dtype, arith::validate_binary), Ok(()));
    let got = run_binary(k, &c.p, a, &c.b, &c.y_dims);
    prop_assert_eq!(got.len(), numel(&c.y_dims), "output length");
    for (i, (&g, (u, v))) in got.iter().zip(c.operands()).enumerate() {
        let w = binary_definition(c.p.op, a.dtype, u, v);
        let ok = if a.dtype == DType::F64 && c.p.op == BinaryOp::Pow {
            close(g, w)
        } else {
            same(g, w)
        };
        prop_assert!(
            ok,
            "output {}: {:?}({:?}, {:?}) = {:?}, want {:?}",
            i,
            c.p.op,
            u,
            v,
            g,
            w
        );
    }
    Ok(())
}

fn run_op(k: &Kernels, op: BinaryOp, a: &Tensor, b: &Tensor) -> Vec<Num> {
    let p = BinaryParams {
        op,
        act: Activation::None,
    };
    let y_dims = super::broadcast_shape(&a.dims, &b.dims);
    run_binary(k, &p, a, b, &y_dims)
}

/// Hand-computed integer arithmetic: wrapping, truncating division, both remainders, division by zero.
pub fn known_int_binary(k: &Kernels) {
    let mut known = Known::default();
    let t = Tensor::ints;
    let (i8_min, i64_min) = (i128::from(i8::MIN), i128::from(i64::MIN));
    // Wrapping: 100 + 100 = 200 - 256; -100 - 100 = -200 + 256; 3 - 5 in u8 is 254; 16 * 16 = 256 is 0.
    let a = t(DType::I8, &[3], &[100, -100, 127]);
    let b = t(DType::I8, &[3], &[100, -100, 1]);
    known.check(&run_op(k, BinaryOp::Add, &a, &b), &ints(&[-56, 56, -128]));
    let a = t(DType::U8, &[2], &[3, 0]);
    let b = t(DType::U8, &[2], &[5, 1]);
    known.check(&run_op(k, BinaryOp::Sub, &a, &b), &ints(&[254, 255]));
    let a = t(DType::I8, &[3], &[16, -16, 100]);
    let b = t(DType::I8, &[3], &[16, 16, 3]);
    known.check(&run_op(k, BinaryOp::Mul, &a, &b), &ints(&[0, 0, 44]));
    let a = t(DType::U64, &[1], &[(1 << 64) - 1]);
    known.check(&run_op(k, BinaryOp::Mul, &a, &a), &ints(&[1]));
    // A column plus a row, int32.
    let col = t(DType::I32, &[2, 1], &[1, 2]);
    let row = t(DType::I32, &[3], &[10, 20, 30]);
    let y = run_op(k, BinaryOp::Add, &col, &row);
    known.check(&y, &ints(&[11, 21, 31, 12, 22, 32]));
    // Division truncates toward zero; x / 0 is 0; MIN / -1 wraps to MIN.
    let a = t(DType::I32, &[6], &[7, -7, 7, -7, 5, 0]);
    let b = t(DType::I32, &[6], &[2, 2, -2, -2, 0, 0]);
    known.check(
        &run_op(k, BinaryOp::Div, &a, &b),
        &ints(&[3, -3, -3, 3, 0, 0]),
    );
    let a = t(DType::I8, &[2], &[i8_min, i8_min]);
    let b = t(DType::I8, &[2], &[-1, 1]);
    known.check(&run_op(k, BinaryOp::Div, &a, &b), &ints(&[i8_min, i8_min]));
    let a = t(DType::I64, &[], &[i64_min]);
    let b = t(DType::I64, &[], &[-1]);
    known.check(&run_op(k, BinaryOp::Div, &a, &b), &ints(&[i64_min]));
    // Mod takes the dividend's sign, FloorMod the divisor's; by 0 both are 0.
    let a = t(DType::I32, &[5], &[7, -7, 7, -7, 5]);
    let b = t(DType::I32, &[5], &[3, 3, -3, -3, 0]);
    known.check(&run_op(k, BinaryOp::Mod, &a, &b), &ints(&[1, -1, 1, -1, 0]));
    known.check(
        &run_op(k, BinaryOp::FloorMod, &a, &b),
        &ints(&[1, 2, -2, -1, 0]),
    );
    let a = t(DType::I8, &[3], &[i8_min, i8_min, -1]);
    let b = t(DType::I8, &[3], &[127, -1, i8_min]);
    known.check(&run_op(k, BinaryOp::FloorMod, &a, &b), &ints(&[126, 0, -1]));
    known.check(&run_op(k, BinaryOp::Mod, &a, &b), &ints(&[-1, 0, -1]));
    let a = t(DType::U8, &[2], &[250, 7]);
    let b = t(DType::U8, &[], &[7]);
    known.check(&run_op(k, BinaryOp::FloorMod, &a, &b), &ints(&[5, 0]));
    // Min and Max compare as the dtype does (u8 200 > 100).
    let a = t(DType::U8, &[2], &[200, 0]);
    let b = t(DType::U8, &[1], &[100]);
    known.check(&run_op(k, BinaryOp::Min, &a, &b), &ints(&[100, 0]));
    known.check(&run_op(k, BinaryOp::Max, &a, &b), &ints(&[200, 100]));
    let a = t(DType::I64, &[2], &[-1, i64_min]);
    let b = t(DType::I64, &[], &[i64_min + 1]);
    known.check(&run_op(k, BinaryOp::Max, &a, &b), &ints(&[-1, i64_min + 1]));
    known.finish();
}

/// Hand-computed integer powers: wrapping, negative exponents, exponents of 2^32 and beyond.
pub fn known_int_pow(k: &Kernels) {
    let mut known = Known::default();
    let t = Tensor::ints;
    let pow = |a: &Tensor, b: &Tensor| run_op(k, BinaryOp::Pow, a, b);
    let a = t(DType::I32, &[5], &[2, -3, 0, 5, 7]);
    let b = t(DType::I32, &[5], &[10, 3, 0, 0, 1]);
    known.check(&pow(&a, &b), &ints(&[1024, -27, 1, 1, 7]));
    // 2^7 = 128 and 3^5 = 243 wrap in int8; 2^8 is 0 in uint8.
    let a = t(DType::I8, &[2], &[2, 3]);
    let b = t(DType::I8, &[2], &[7, 5]);
    known.check(&pow(&a, &b), &ints(&[-128, -13]));
    let a = t(DType::U8, &[2], &[2, 255]);
    let b = t(DType::U8, &[2], &[8, 2]);
    known.check(&pow(&a, &b), &ints(&[0, 1]));
    // Negative exponents: the real power truncated toward zero; (-1)^-n is ±1.
    let a = t(DType::I32, &[7], &[2, -2, 1, 1, -1, -1, 0]);
    let b = t(DType::I32, &[7], &[-1, -1, -5, -6, -1, -2, -1]);
    known.check(&pow(&a, &b), &ints(&[0, 0, 1, 1, -1, 1, 0]));
    // Exponents beyond u32: (-1)^(2^32) = 1, (-1)^(2^32 + 1) = -1; every odd number to the power 2^62
    // is 1 modulo 2^64; 3^(2^64 - 1) is then 3^-1 modulo 2^64, 0xAAAA_AAAA_AAAA_AAAB.
    let a = t(DType::I64, &[3], &[-1, -1, 3]);
    let b = t(DType::I64, &[3], &[1 << 32, (1 << 32) + 1, 1 << 62]);
    known.check(&pow(&a, &b), &ints(&[1, -1, 1]));
    let a = t(DType::U64, &[1], &[3]);
    let b = t(DType::U64, &[1], &[(1 << 64) - 1]);
    known.check(&pow(&a, &b), &ints(&[0xAAAA_AAAA_AAAA_AAAB]));
    known.finish();
}

/// Hand-computed f64 arithmetic: Python's float `%`, fmod, IEEE division, NaN in Min and Max.
pub fn known_f64_binary(k: &Kernels) {
    let mut known = Known::default();
    let t = Tensor::floats;
    let (inf, nan) = (f64::INFINITY, f64::NAN);
    let a = t(DType::F64, &[7], &[5.5, -5.5, 5.5, -5.5, -4.0, 4.0, 3.0]);
    let b = t(DType::F64, &[7], &[2.0, 2.0, -2.0, -2.0, 2.0, -2.0, inf]);
    let y = run_op(k, BinaryOp::FloorMod, &a, &b);
    known.check(&y, &floats(&[1.5, 0.5, -0.5, -1.5, 0.0, -0.0, 3.0]));
    let y = run_op(k, BinaryOp::Mod, &a, &b);
    known.check(&y, &floats(&[1.5, -1.5, 1.5, -1.5, -0.0, 0.0, 3.0]));
    let a = t(DType::F64, &[3], &[1.0, -1.0, 0.0]);
    let zero = t(DType::F64, &[], &[0.0]);
    known.check(
        &run_op(k, BinaryOp::Div, &a, &zero),
        &floats(&[inf, -inf, nan]),
    );
    known.check(
        &run_op(k, BinaryOp::Mod, &a, &zero),
        &floats(&[nan, nan, nan]),
    );
    // f64, not f32: 0.1 + 0.2 is 0.30000000000000004.
    let a = t(DType::F64, &[1], &[0.1]);
    let b = t(DType::F64, &[1], &[0.2]);
    known.check(
        &run_op(k, BinaryOp::Add, &a, &b),
        &floats(&[0.300_000_000_000_000_04]),
    );
    let a = t(DType::F64, &[3], &[nan, 1.0, 2.0]);
    let b = t(DType::F64, &[3], &[1.0, nan, 3.0]);
    known.check(&run_op(k, BinaryOp::Min, &a, &b), &floats(&[nan, nan, 2.0]));
    known.check(&run_op(k, BinaryOp::Max, &a, &b), &floats(&[nan, nan, 3.0]));
    let a = t(DType::F64, &[4], &[2.0, 4.0, -2.0, 0.0]);
    let b = t(DType::F64, &[4], &[10.0, 0.5, 3.0, 0.0]);
    known.check(
        &run_op(k, BinaryOp::Pow, &a, &b),
        &floats(&[1024.0, 2.0, -8.0, 1.0]),
    );
    known.finish();
}

/// `validate_binary` rejects mixed dtypes, f32 (the f32 kernels' job), bool, float16, a fused
/// activation, PRelu, and shapes that do not broadcast.
pub fn binary_validate_rejects() {
    let p = |op, act| BinaryParams { op, act };
    let add = p(BinaryOp::Add, Activation::None);
    let s: &[usize] = &[2, 3];
    let bad: [(BinaryParams, Arg<'_>, Arg<'_>, Arg<'_>); 11] = [
        (add, (s, DType::I32), (s, DType::I64), (s, DType::I32)),
        (add, (s, DType::I32), (s, DType::I32), (s, DType::I64)),
        (add, (s, DType::F32), (s, DType::F32), (s, DType::F32)),
        (add, (s, DType::Bool), (s, DType::Bool), (s, DType::Bool)),
        (add, (s, DType::F16), (s, DType::F16), (s, DType::F16)),
        (
            p(BinaryOp::Add, Activation::Relu),
            (s, DType::I32),
            (s, DType::I32),
            (s, DType::I32),
        ),
        (
            p(BinaryOp::PRelu, Activation::None),
            (s, DType::F64),
            (s, DType::F64),
            (s, DType::F64),
        ),
        (add, (s, DType::I8), (&[2], DType::I8), (s, DType::I8)),
        (
            add,
            (s, DType::I8),
            (&[3], DType::I8),
            (&[2, 3, 1], DType::I8),
        ),
        (
            add,
            (&[2, 1], DType::I8),
            (&[3], DType::I8),
            (&[2, 1], DType::I8),
        ),
        (
            add,
            (&[1; 7], DType::I8),
            (&[1; 7], DType::I8),
            (&[1; 7], DType::I8),
        ),
    ];
    for (p, a, b, y) in bad {
        let r = arith::validate_binary(&p, a, b, y);
        assert!(is_shape_error(r), "{p:?}: {a:?}, {b:?} -> {y:?}");
    }
    for d in INTS.into_iter().chain([DType::F64]) {
        let r = arith::validate_binary(&add, (&[2, 1], d), (&[3], d), (s, d));
        assert_eq!(r, Ok(()), "{d:?}");
    }
}

// ---------------------------------------------------------------------------------------------- unary

/// A unary op over an integer or f64 tensor.
#[derive(Clone, Debug)]
pub struct UnaryCase {
    p: UnaryParams,
    x: Tensor,
}

/// A Clip bound: a small integer (exact for every integer dtype) or no bound (an infinity).
fn clip_bound() -> impl Strategy<Value = f32> {
    prop_oneof![
        6 => (-6i8..=12).prop_map(f32::from),
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
    ]
}

fn unary_case(
    plain: Vec<UnaryOp>,
    dtypes: Vec<DType>,
    bound: BoxedStrategy<f32>,
) -> impl Strategy<Value = UnaryCase> {
    let op = prop_oneof![
        5 => proptest::sample::select(plain),
        2 => (bound.clone(), bound).prop_map(|(min, max)| UnaryOp::Clip { min, max }),
    ];
    (op, proptest::sample::select(dtypes), vec(dim(), 0..=4))
        .prop_flat_map(|(op, dtype, dims)| (Just(UnaryParams { op }), tensor(dtype, dims)))
        .prop_map(|(p, x)| UnaryCase { p, x })
}

/// Every unary op these kernels run on integers, on every integer dtype.
pub fn int_unary_case() -> impl Strategy<Value = UnaryCase> {
    let plain = vec![
        UnaryOp::Abs,
        UnaryOp::Neg,
        UnaryOp::Sign,
        UnaryOp::Relu,
        UnaryOp::Floor,
        UnaryOp::Ceil,
        UnaryOp::Round,
    ];
    unary_case(plain, INTS.to_vec(), clip_bound().boxed())
}

/// Every unary op these kernels run on f64.
pub fn f64_unary_case() -> impl Strategy<Value = UnaryCase> {
    let plain = vec![UnaryOp::Abs, UnaryOp::Neg, UnaryOp::Sign, UnaryOp::Relu];
    let bound = prop_oneof![4 => -5.0f32..5.0, 1 => clip_bound()];
    unary_case(plain, vec![DType::F64], bound.boxed())
}

/// A Clip bound as an integer of dtype `d`: an infinity is no bound (the dtype's extreme), and a bound
/// beyond the dtype's range acts as the nearest value in it.
fn int_bound(d: DType, b: f32) -> i128 {
    let (lo, hi) = int_range(d);
    if b.is_infinite() {
        return if b > 0.0 { hi } else { lo };
    }
    (b as i128).clamp(lo, hi) // b is a small integer
}

/// ONNX Clip: the lower bound first, then the upper one (so `min > max` gives `max`).
fn clip<T: PartialOrd>(v: T, min: T, max: T) -> T {
    let lower = if v < min { min } else { v };
    if lower > max {
        max
    } else {
        lower
    }
}

/// The unary ops on integers of dtype `d`, written out.
fn int_unary(op: UnaryOp, d: DType, a: i128) -> i128 {
    match op {
        UnaryOp::Abs => wrap(d, a.abs()),
        UnaryOp::Neg => wrap(d, -a),
        UnaryOp::Sign => a.signum(),
        UnaryOp::Relu => a.max(0),
        UnaryOp::Clip { min, max } => clip(a, int_bound(d, min), int_bound(d, max)),
        // An integer is already whole.
        UnaryOp::Floor | UnaryOp::Ceil | UnaryOp::Round => a,
        _ => panic!("{op:?} is not an integer op"),
    }
}

/// The unary ops on f64, written out. NaN passes through every one (as in the f32 kernels and ONNX).
fn f64_unary(op: UnaryOp, u: f64) -> f64 {
    if u.is_nan() {
        return u;
    }
    match op {
        UnaryOp::Abs if u.is_sign_negative() => -u,
        UnaryOp::Abs => u,
        UnaryOp::Neg => -u,
        UnaryOp::Sign if u > 0.0 => 1.0,
        UnaryOp::Sign if u < 0.0 => -1.0,
        UnaryOp::Sign => u,
        UnaryOp::Relu if u > 0.0 => u,
        UnaryOp::Relu => 0.0,
        UnaryOp::Clip { min, max } => clip(u, f64::from(min), f64::from(max)),
        _ => panic!("{op:?} is not an f64 op here"),
    }
}

fn run_unary(k: &Kernels, op: UnaryOp, x: &Tensor) -> Vec<Num> {
    run(&[x], x.dtype, &x.dims, |x, y| {
        (k.unary_any)(&UnaryParams { op }, x[0], y)
    })
}

/// The table's unary kernel against the definition, element by element.
pub fn check_unary(k: &Kernels, c: &UnaryCase) -> Result<(), TestCaseError> {
    let x = &c.x;
    prop_assert_eq!(
        arith::validate_unary(&c.p, (&x.dims, x.dtype), (&x.dims, x.dtype)),
        Ok(())
    );
    let got = run_unary(k, c.p.op, x);
    // The sign of Sign(±0) is not pinned (ONNX says 0); compare zeros by value there.
    let unsign = |n: Num| match n {
        Num::Float(f) if f == 0.0 && matches!(c.p.op, UnaryOp::Sign) => Num::Float(0.0),
        _ => n,
    };
    let want: Vec<Num> = x
        .values
        .iter()
        .map(|&v| match x.dtype {
            DType::F64 => unsign(Num::Float(f64_unary(c.p.op, v.float()))),
            d => Num::Int(int_unary(c.p.op, d, v.int())),
        })
        .collect();
    let got: Vec<Num> = got.into_iter().map(unsign).collect();
    assert_same(&got, &want)
}

/// Hand-computed unary answers.
pub fn known_unary(k: &Kernels) {
    let mut known = Known::default();
    let t = Tensor::ints;
    let i8_min = i128::from(i8::MIN);
    let x = t(DType::I8, &[4], &[i8_min, -5, 5, 0]);
    known.check(&run_unary(k, UnaryOp::Abs, &x), &ints(&[i8_min, 5, 5, 0]));
    known.check(&run_unary(k, UnaryOp::Neg, &x), &ints(&[i8_min, 5, -5, 0]));
    known.check(&run_unary(k, UnaryOp::Sign, &x), &ints(&[-1, -1, 1, 0]));
    known.check(&run_unary(k, UnaryOp::Relu, &x), &ints(&[0, 0, 5, 0]));
    let x = t(DType::U8, &[3], &[200, 1, 0]);
    known.check(&run_unary(k, UnaryOp::Sign, &x), &ints(&[1, 1, 0]));
    known.check(&run_unary(k, UnaryOp::Neg, &x), &ints(&[56, 255, 0]));
    known.check(&run_unary(k, UnaryOp::Abs, &x), &ints(&[200, 1, 0]));
    let clip_op = |min, max| UnaryOp::Clip { min, max };
    let x = t(DType::I32, &[3], &[-5, 0, 5]);
    known.check(&run_unary(k, clip_op(-2.0, 2.0), &x), &ints(&[-2, 0, 2]));
    // min > max: ONNX clips to min first, then to max, so every element becomes max.
    let x = t(DType::I32, &[3], &[0, 2, 5]);
    known.check(&run_unary(k, clip_op(3.0, 1.0), &x), &ints(&[1, 1, 1]));
    // Bounds beyond the dtype's range, and no bounds at all.
    let x = t(DType::U8, &[2], &[0, 255]);
    known.check(&run_unary(k, clip_op(-5.0, 300.0), &x), &ints(&[0, 255]));
    let inf = f32::INFINITY;
    let x = t(
        DType::I64,
        &[2],
        &[i128::from(i64::MAX), i128::from(i64::MIN)],
    );
    let want = ints(&[i128::from(i64::MAX), i128::from(i64::MIN)]);
    known.check(&run_unary(k, clip_op(-inf, inf), &x), &want);
    for op in [UnaryOp::Floor, UnaryOp::Ceil, UnaryOp::Round] {
        known.check(&run_unary(k, op, &x), &want);
    }
    // f64: Abs(-0) = +0, Neg(0) = -0, NaN passes through Relu and Clip.
    let f = Tensor::floats;
    let nan = f64::NAN;
    let x = f(DType::F64, &[3], &[-0.0, -2.5, nan]);
    known.check(&run_unary(k, UnaryOp::Abs, &x), &floats(&[0.0, 2.5, nan]));
    known.check(&run_unary(k, UnaryOp::Neg, &x), &floats(&[0.0, 2.5, nan]));
    let x = f(DType::F64, &[4], &[nan, -1.0, 2.5, -3.0]);
    known.check(
        &run_unary(k, UnaryOp::Relu, &x),
        &floats(&[nan, 0.0, 2.5, 0.0]),
    );
    let y = run_unary(k, clip_op(-1.0, 1.0), &x);
    known.check(&y, &floats(&[nan, -1.0, 1.0, -1.0]));
    let x = f(DType::F64, &[3], &[-3.0, 2.0, nan]);
    known.check(&run_unary(k, UnaryOp::Sign, &x), &floats(&[-1.0, 1.0, nan]));
    known.finish();
}

/// `validate_unary` rejects mixed dtypes, f32, bool, float16, other dims, and the ops that run on f32
/// only.
pub fn unary_validate_rejects() {
    let p = |op| UnaryParams { op };
    let s: &[usize] = &[2, 3];
    let bad: [(UnaryOp, Arg<'_>, Arg<'_>); 9] = [
        (UnaryOp::Abs, (s, DType::I32), (s, DType::I64)),
        (UnaryOp::Abs, (s, DType::F32), (s, DType::F32)),
        (UnaryOp::Abs, (s, DType::Bool), (s, DType::Bool)),
        (UnaryOp::Abs, (s, DType::F16), (s, DType::F16)),
        (UnaryOp::Abs, (s, DType::I32), (&[3, 2], DType::I32)),
        (UnaryOp::Abs, (s, DType::I32), (&[6], DType::I32)),
        (UnaryOp::Sigmoid, (s, DType::F64), (s, DType::F64)),
        (UnaryOp::Exp, (s, DType::I32), (s, DType::I32)),
        (UnaryOp::Relu6, (s, DType::I8), (s, DType::I8)),
    ];
    for (op, x, y) in bad {
        assert!(
            is_shape_error(arith::validate_unary(&p(op), x, y)),
            "{op:?}: {x:?} -> {y:?}"
        );
    }
    for d in INTS.into_iter().chain([DType::F64]) {
        for op in [UnaryOp::Abs, UnaryOp::Neg, UnaryOp::Sign, UnaryOp::Relu] {
            assert_eq!(
                arith::validate_unary(&p(op), (s, d), (s, d)),
                Ok(()),
                "{op:?} {d:?}"
            );
        }
    }
}
