//! Conformance suite for the kernels of tensors other than f32: comparisons, Bool logic, `Where`,
//! `Cast`, integer and f64 arithmetic, ArgMax / ArgMin.
//!
//! Every kernel is run through its entry in a [`Kernels`] table (the dtype-erased `AnyIn` / `AnyOut`
//! views) over proptest-generated shapes (rank 0 to 4, numpy broadcasting, empty tensors), dtypes and
//! values (the edges of each type: MIN, MAX, 0, -1, sparse bit patterns; ±0, ±inf, NaN), and compared
//! with a definition written independently here. Elements are held as exact values (`i128` or `f64`),
//! and numpy's semantics are spelled out: wrapping modulo 2^bits, division truncating toward zero,
//! floor-mod taking the divisor's sign, float-to-integer casts truncating and saturating, integer
//! narrowing wrapping, anything to bool being `!= 0`; broadcasting is a direct index formula. Each kernel
//! also has a few answers computed by hand, and its `validate` is checked to accept every generated case
//! and to reject mismatched dtypes, outputs of the wrong dtype and shapes that do not broadcast.
//!
//! The checks are functions taking a `&Kernels`; [`typed_suite!`](crate::typed_suite) instantiates them
//! as `#[test]`s for one table, as [`f32_suite!`](crate::f32_suite) does for the f32 kernels.

pub mod arg_reduce;
pub mod arith;
pub mod cast;
pub mod compare;
pub mod where_op;

use std::fmt;

use ember_core::ops::element::{AnyIn, AnyOut};
use ember_core::DType;
use proptest::collection::vec;
use proptest::prelude::*;

pub use crate::shape::{
    broadcast_operand, broadcast_shape, broadcast_source, dim, flat, numel, unflat,
};

// --------------------------------------------------------------------------------------------- values

/// The integer dtypes.
pub const INTS: [DType; 8] = [
    DType::I8,
    DType::U8,
    DType::I16,
    DType::U16,
    DType::I32,
    DType::U32,
    DType::I64,
    DType::U64,
];

/// Every dtype these kernels take (all but F16): F32, F64, the [`INTS`] and Bool.
pub const ALL: [DType; 11] = {
    let mut all = [DType::Bool; 11];
    all[0] = DType::F32;
    all[1] = DType::F64;
    let mut i = 0;
    while i < INTS.len() {
        all[2 + i] = INTS[i];
        i += 1;
    }
    all
};

/// An element's exact value, whatever its dtype: integers and bools as `i128` (wide enough for every
/// integer type, and for sums and quotients of two of them), floats as `f64` (which holds every f32).
#[derive(Clone, Copy)]
pub enum Num {
    /// An integer or a bool (0 or 1).
    Int(i128),
    /// A float.
    Float(f64),
}

impl Num {
    /// The integer value; panics on a float (a bug in this suite).
    #[track_caller]
    pub fn int(self) -> i128 {
        match self {
            Num::Int(i) => i,
            Num::Float(f) => panic!("expected an integer, found {f}"),
        }
    }

    /// The float value; panics on an integer (a bug in this suite).
    #[track_caller]
    pub fn float(self) -> f64 {
        match self {
            Num::Float(f) => f,
            Num::Int(i) => panic!("expected a float, found {i}"),
        }
    }

    /// Whether this is a float NaN.
    pub fn is_nan(self) -> bool {
        matches!(self, Num::Float(f) if f.is_nan())
    }
}

impl fmt::Debug for Num {
    /// Compact, also under `{:#?}` (proptest prints failing cases that way): `-3`, `2.5`, `NaN`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Num::Int(i) => write!(f, "{i}"),
            Num::Float(v) => write!(f, "{v:?}"),
        }
    }
}

/// Whether a kernel's output is the expected value: integers equal; floats both NaN, or equal with the
/// same sign (so `-0` is not `+0`).
pub fn same(got: Num, want: Num) -> bool {
    match (got, want) {
        (Num::Int(g), Num::Int(w)) => g == w,
        (Num::Float(g), Num::Float(w)) => {
            (g.is_nan() && w.is_nan()) || (g == w && g.is_sign_negative() == w.is_sign_negative())
        }
        _ => false,
    }
}

/// Checks every output against its expected value with [`same`].
pub fn assert_same(got: &[Num], want: &[Num]) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.len(), want.len(), "output length");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        prop_assert!(same(g, w), "output {}: got {:?}, want {:?}", i, g, w);
    }
    Ok(())
}

/// Hand-computed answers, checked one after another; every mismatch is reported at the end, so that
/// one wrong answer does not hide the next.
#[derive(Default)]
pub struct Known {
    failures: Vec<String>,
}

impl Known {
    /// Records a mismatch between `got` and `want` (compared with [`same`]).
    #[track_caller]
    pub fn check(&mut self, got: &[Num], want: &[Num]) {
        if let Err(e) = assert_same(got, want) {
            let at = std::panic::Location::caller();
            let (at, e) = (format!("{}:{}", at.file(), at.line()), e.to_string());
            self.failures.push(format!(
                "{at}: {e}
    got:  {got:?}
    want: {want:?}"
            ));
        }
    }

    /// Panics with every recorded mismatch.
    pub fn finish(self) {
        let n = self.failures.len();
        assert!(
            n == 0,
            "{n} hand-computed answer(s) wrong:\n{}",
            self.failures.join("\n")
        );
    }
}

/// Integers as [`Num`]s, for hand-computed answers.
pub fn ints(values: &[i128]) -> Vec<Num> {
    values.iter().map(|&v| Num::Int(v)).collect()
}

/// Floats as [`Num`]s, for hand-computed answers.
pub fn floats(values: &[f64]) -> Vec<Num> {
    values.iter().map(|&v| Num::Float(v)).collect()
}

/// Width in bits of an integer dtype (1 for Bool).
pub fn bits(d: DType) -> u32 {
    match d {
        DType::Bool => 1,
        DType::I8 | DType::U8 => 8,
        DType::I16 | DType::U16 => 16,
        DType::I32 | DType::U32 => 32,
        DType::I64 | DType::U64 => 64,
        _ => panic!("{d:?} is not an integer dtype"),
    }
}

/// Whether an integer dtype is signed.
pub fn signed(d: DType) -> bool {
    matches!(d, DType::I8 | DType::I16 | DType::I32 | DType::I64)
}

/// The smallest and largest value of an integer dtype (0 and 1 for Bool).
pub fn int_range(d: DType) -> (i128, i128) {
    let b = bits(d);
    if signed(d) {
        (-(1i128 << (b - 1)), (1i128 << (b - 1)) - 1)
    } else {
        (0, (1i128 << b) - 1)
    }
}

/// `v` reduced modulo 2^bits into the range of integer dtype `d`: two's-complement wrapping.
pub fn wrap(d: DType, v: i128) -> i128 {
    let m = 1i128 << bits(d);
    let r = v.rem_euclid(m);
    if signed(d) && r >= m / 2 {
        r - m
    } else {
        r
    }
}

/// One element of integer dtype `d`: small values most often (for ties, small divisors and exponents),
/// then the whole range, the edges, and sparse bit patterns (which reach the rounding cases of wide
/// integers converted to floats).
fn int_element(d: DType) -> BoxedStrategy<Num> {
    let (lo, hi) = int_range(d);
    let b = bits(d);
    let edges = vec![lo, lo + 1, hi - 1, hi, 0, 1, wrap(d, -1), wrap(d, 2)];
    prop_oneof![
        3 => lo.max(-6)..=12i128,
        2 => lo..=hi,
        1 => proptest::sample::select(edges),
        1 => vec(0..b, 1..=3)
            .prop_map(move |set| wrap(d, set.iter().fold(0i128, |acc, &bit| acc | (1i128 << bit)))),
    ]
    .prop_map(Num::Int)
    .boxed()
}

/// One element of float dtype `d` (F32 values are rounded to f32): mostly in -10..10, then small
/// integers (exact remainders and ties), special values, values beyond the integer types' ranges, and
/// any bit pattern.
fn float_element(d: DType) -> BoxedStrategy<Num> {
    let single = d == DType::F32;
    let round = move |v: f64| if single { f64::from(v as f32) } else { v };
    let special = vec![
        0.0,
        -0.0,
        0.5,
        -0.5,
        2.5,
        -2.5,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
    ];
    let wide = vec![
        127.9, 128.0, -128.9, -129.0, 255.9, 256.0, -1.5, 65535.5, 65536.0, 3e9, -3e9, 5e9, 9.3e18,
        -9.3e18, 1.9e19, 1e30, -1e30,
    ];
    let any_bits = if single {
        any::<f32>().prop_map(f64::from).boxed()
    } else {
        any::<f64>().boxed()
    };
    prop_oneof![
        4 => -10.0f64..10.0,
        2 => (-6i32..=6).prop_map(f64::from),
        1 => proptest::sample::select(special),
        1 => proptest::sample::select(wide),
        1 => any_bits,
    ]
    .prop_map(move |v| Num::Float(round(v)))
    .boxed()
}

/// One element of dtype `d`.
pub fn element(d: DType) -> BoxedStrategy<Num> {
    match d {
        DType::Bool => (0i128..=1).prop_map(Num::Int).boxed(),
        DType::F32 | DType::F64 => float_element(d),
        _ => int_element(d),
    }
}

// --------------------------------------------------------------------------------------------- shapes

/// `count` operand shapes (rank 0 to 4) that broadcast together, and their broadcast shape.
pub fn broadcast_shapes(count: usize) -> impl Strategy<Value = (Vec<Vec<usize>>, Vec<usize>)> {
    vec(dim(), 0..=4)
        .prop_flat_map(move |full| {
            (0..count)
                .map(|_| broadcast_operand(full.clone()))
                .collect::<Vec<_>>()
        })
        .prop_map(|shapes| {
            let y = shapes
                .iter()
                .fold(Vec::new(), |acc, s| broadcast_shape(&acc, s));
            (shapes, y)
        })
}

// -------------------------------------------------------------------------------------------- tensors

/// A tensor of any dtype, its elements held as exact values.
#[derive(Clone)]
pub struct Tensor {
    /// Element type.
    pub dtype: DType,
    /// Dimensions.
    pub dims: Vec<usize>,
    /// Row-major elements.
    pub values: Vec<Num>,
}

impl Tensor {
    /// A tensor from integers (or bools), for hand-computed cases.
    pub fn ints(dtype: DType, dims: &[usize], values: &[i128]) -> Self {
        assert_eq!(numel(dims), values.len(), "hand-written tensor");
        Tensor {
            dtype,
            dims: dims.to_vec(),
            values: ints(values),
        }
    }

    /// A tensor from floats, for hand-computed cases.
    pub fn floats(dtype: DType, dims: &[usize], values: &[f64]) -> Self {
        assert_eq!(numel(dims), values.len(), "hand-written tensor");
        Tensor {
            dtype,
            dims: dims.to_vec(),
            values: floats(values),
        }
    }

    /// The element at `index` of the output of a broadcasting op, read from this operand.
    pub fn broadcast_at(&self, y_index: &[usize]) -> Num {
        self.values[broadcast_source(y_index, &self.dims)]
    }
}

impl fmt::Debug for Tensor {
    /// On one line, also under `{:#?}`: `I8 [2, 1] [3, -4]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} {:?} [", self.dtype, self.dims)?;
        for (i, v) in self.values.iter().enumerate() {
            let sep = if i == 0 { "" } else { ", " };
            write!(f, "{sep}{v:?}")?;
        }
        write!(f, "]")
    }
}

/// A tensor of `dtype` and `dims` with values drawn by `element`.
pub fn tensor_with(
    dtype: DType,
    dims: Vec<usize>,
    element: BoxedStrategy<Num>,
) -> impl Strategy<Value = Tensor> {
    let n = numel(&dims);
    vec(element, n).prop_map(move |values| Tensor {
        dtype,
        dims: dims.clone(),
        values,
    })
}

/// A tensor of `dtype` and `dims` with any values of the dtype.
pub fn tensor(dtype: DType, dims: Vec<usize>) -> impl Strategy<Value = Tensor> {
    tensor_with(dtype, dims, element(dtype))
}

/// Element bytes, kept in `u64` words so that they are aligned for every dtype.
struct Bytes {
    words: Vec<u64>,
    len: usize,
}

/// Byte written to every output element before a kernel runs, so that elements it skips show up.
const SENTINEL: u8 = 0xA5;

impl Bytes {
    fn filled(len: usize, byte: u8) -> Self {
        Bytes {
            words: vec![u64::from_ne_bytes([byte; 8]); len.div_ceil(8)],
            len,
        }
    }

    fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len]
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        &mut bytemuck::cast_slice_mut(&mut self.words)[..self.len]
    }
}

/// Writes `v` as one element of `d`; panics if it does not fit (a bug in this suite's generators).
fn encode_one(d: DType, v: Num, out: &mut [u8]) {
    let fits = "value out of its dtype's range";
    // The integer `$i` as a `$t`, in native byte order.
    macro_rules! put {
        ($t:ty, $i:expr) => {
            out.copy_from_slice(&<$t>::try_from($i).expect(fits).to_ne_bytes())
        };
    }
    match (d, v) {
        (DType::F32, Num::Float(f)) => out.copy_from_slice(&(f as f32).to_ne_bytes()),
        (DType::F64, Num::Float(f)) => out.copy_from_slice(&f.to_ne_bytes()),
        (DType::I8, Num::Int(i)) => put!(i8, i),
        (DType::U8 | DType::Bool, Num::Int(i)) => put!(u8, i),
        (DType::I16, Num::Int(i)) => put!(i16, i),
        (DType::U16, Num::Int(i)) => put!(u16, i),
        (DType::I32, Num::Int(i)) => put!(i32, i),
        (DType::U32, Num::Int(i)) => put!(u32, i),
        (DType::I64, Num::Int(i)) => put!(i64, i),
        (DType::U64, Num::Int(i)) => put!(u64, i),
        _ => panic!("{d:?} cannot hold {v:?}"),
    }
}

/// Reads one element of `d`.
fn decode_one(d: DType, b: &[u8]) -> Num {
    match d {
        DType::F32 => Num::Float(f64::from(f32::from_ne_bytes(
            b.try_into().expect("4 bytes"),
        ))),
        DType::F64 => Num::Float(f64::from_ne_bytes(b.try_into().expect("8 bytes"))),
        DType::I8 => Num::Int(i128::from(i8::from_ne_bytes([b[0]]))),
        DType::U8 | DType::Bool => Num::Int(i128::from(b[0])),
        DType::I16 => Num::Int(i128::from(i16::from_ne_bytes([b[0], b[1]]))),
        DType::U16 => Num::Int(i128::from(u16::from_ne_bytes([b[0], b[1]]))),
        DType::I32 => Num::Int(i128::from(i32::from_ne_bytes(
            b.try_into().expect("4 bytes"),
        ))),
        DType::U32 => Num::Int(i128::from(u32::from_ne_bytes(
            b.try_into().expect("4 bytes"),
        ))),
        DType::I64 => Num::Int(i128::from(i64::from_ne_bytes(
            b.try_into().expect("8 bytes"),
        ))),
        DType::U64 => Num::Int(i128::from(u64::from_ne_bytes(
            b.try_into().expect("8 bytes"),
        ))),
        DType::F16 => panic!("float16 is not read by this suite"),
    }
}

fn encode(t: &Tensor) -> Bytes {
    let size = t.dtype.size();
    let mut bytes = Bytes::filled(size * t.values.len(), 0);
    for (chunk, &v) in bytes.bytes_mut().chunks_exact_mut(size).zip(&t.values) {
        encode_one(t.dtype, v, chunk);
    }
    bytes
}

/// Runs `kernel` on the inputs and an output of `y_dtype` and `y_dims` (filled with a sentinel first),
/// and reads the output back.
pub fn run(
    inputs: &[&Tensor],
    y_dtype: DType,
    y_dims: &[usize],
    kernel: impl FnOnce(&[AnyIn<'_>], AnyOut<'_>),
) -> Vec<Num> {
    let buffers: Vec<Bytes> = inputs.iter().map(|t| encode(t)).collect();
    let views: Vec<AnyIn<'_>> = inputs
        .iter()
        .zip(&buffers)
        .map(|(t, b)| AnyIn {
            dtype: t.dtype,
            bytes: b.bytes(),
            dims: &t.dims,
        })
        .collect();
    let size = y_dtype.size();
    let mut y = Bytes::filled(size * numel(y_dims), SENTINEL);
    kernel(
        &views,
        AnyOut {
            dtype: y_dtype,
            bytes: y.bytes_mut(),
            dims: y_dims,
        },
    );
    y.bytes()
        .chunks_exact(size)
        .map(|b| decode_one(y_dtype, b))
        .collect()
}

/// A tensor's dims and dtype, as every `validate` takes them.
pub type Arg<'a> = (&'a [usize], DType);

/// An op over two broadcasting operands: its parameters, the operands and the output's dims.
#[derive(Clone, Debug)]
pub struct TwoOperands<P> {
    p: P,
    a: Tensor,
    b: Tensor,
    y_dims: Vec<usize>,
}

impl<P> TwoOperands<P> {
    /// `validate`'s verdict on the case, with an output of `y_dtype`.
    pub fn validate_with<R>(
        &self,
        y_dtype: DType,
        validate: impl FnOnce(&P, Arg<'_>, Arg<'_>, Arg<'_>) -> R,
    ) -> R {
        let (a, b) = (&self.a, &self.b);
        validate(
            &self.p,
            (&a.dims, a.dtype),
            (&b.dims, b.dtype),
            (&self.y_dims, y_dtype),
        )
    }

    /// The operands of each output in turn, by explicit index mapping.
    pub fn operands(&self) -> impl Iterator<Item = (Num, Num)> + '_ {
        (0..numel(&self.y_dims)).map(|i| {
            let index = unflat(i, &self.y_dims);
            (self.a.broadcast_at(&index), self.b.broadcast_at(&index))
        })
    }
}

/// The case of parameters `p` over operands of the broadcasting `shapes` (as [`broadcast_shapes`]
/// draws them), each drawn by `operand` from its dims.
pub fn two_operands<P, S>(
    p: P,
    (shapes, y_dims): (Vec<Vec<usize>>, Vec<usize>),
    operand: impl Fn(Vec<usize>) -> S,
) -> impl Strategy<Value = TwoOperands<P>>
where
    P: Clone + fmt::Debug,
    S: Strategy<Value = Tensor>,
{
    let a_and_b = (operand(shapes[0].clone()), operand(shapes[1].clone()));
    a_and_b.prop_map(move |(a, b)| TwoOperands {
        p: p.clone(),
        a,
        b,
        y_dims: y_dims.clone(),
    })
}

/// Whether a validate result is a shape error (the one error every `validate` here returns).
pub fn is_shape_error(r: Result<(), ember_core::Error>) -> bool {
    matches!(r, Err(ember_core::Error::Shape { .. }))
}
