//! A small postcard reader for the records a session decodes at parse and on every run: tensor records
//! and the parameters of the common op kinds.
//!
//! serde's derived decoders are generic code that the compiler inlines field by field: every varint,
//! every error path, per struct. On a microcontroller that is kilobytes of flash for a handful of
//! records. Here each field is one call into the few out-of-line readers below. The bytes are postcard,
//! as [`crate::format::write`] writes them through serde, and every reader accepts exactly what postcard
//! accepts (same varint limits, same bool and option tags): the tests compare both on random bytes. Op
//! kinds without a reader here decode through serde ([`super::decode`]).

use crate::format::{
    ArenaPlan, ModelInfo, QuantParams, Span, Storage, TensorRecord, VariantRecord, VariantTables,
};
use crate::schema::{
    Activation, Conv2dParams, DType, DequantizeParams, FullyConnectedParams, Pool2dParams,
    QuantAvgPoolParams, QuantConv2dParams, QuantFullyConnectedParams, QuantMaxPoolParams,
    QuantSoftmaxParams, QuantizeParams, RequantRounding, Rounding, SoftmaxParams,
};

/// A cursor over postcard bytes.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes }
    }

    /// The bytes not read yet.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.bytes
    }

    #[inline(never)]
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.bytes.split_first()?;
        self.bytes = rest;
        Some(b)
    }

    /// An unsigned LEB128 varint of a `bits`-bit integer, as postcard reads it: at most
    /// `ceil(bits / 7)` bytes, and a last byte of at most the bits that are left.
    #[inline(never)]
    fn varint(&mut self, bits: u32) -> Option<u64> {
        let max = bits.div_ceil(7);
        let mut out = 0u64;
        for i in 0..max {
            let b = self.byte()?;
            out |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                let last_max = (1u32 << (bits % 7)) - 1;
                return (i + 1 < max || u32::from(b) <= last_max).then_some(out);
            }
        }
        None
    }

    /// [`Reader::varint`] for at most 32 bits (`u16`, `u32`, `i32`, tags, and lengths on a 32-bit
    /// target): nearly every field. Its result comes back in registers; an `Option<u64>` goes through
    /// memory at every call site.
    #[inline(never)]
    fn varint32(&mut self, bits: u32) -> Option<u32> {
        let max = bits.div_ceil(7);
        let mut out = 0u32;
        for i in 0..max {
            let b = self.byte()?;
            // `7 * i` is at most 28; bits shifted out of a last byte make it too large, refused below.
            out |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                let last_max = (1u32 << (bits % 7)) - 1;
                return (i + 1 < max || u32::from(b) <= last_max).then_some(out);
            }
        }
        None
    }

    /// An enum variant index.
    pub(crate) fn tag(&mut self) -> Option<u32> {
        self.varint32(32)
    }

    /// A sequence length (a `usize` varint).
    pub(crate) fn len(&mut self) -> Option<usize> {
        if usize::BITS <= 32 {
            self.varint32(usize::BITS).map(|v| v as usize)
        } else {
            self.varint(usize::BITS).map(|v| v as usize)
        }
    }

    /// A byte string, borrowed from the bytes (its length, then the bytes).
    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = self.len()?;
        if len > self.bytes.len() {
            return None;
        }
        let (s, rest) = self.bytes.split_at(len);
        self.bytes = rest;
        Some(s)
    }
}

/// A value read from postcard bytes.
pub(crate) trait Compact: Sized {
    fn read(r: &mut Reader<'_>) -> Option<Self>;
}

impl Compact for u8 {
    fn read(r: &mut Reader<'_>) -> Option<Self> {
        r.byte()
    }
}

impl Compact for u64 {
    fn read(r: &mut Reader<'_>) -> Option<Self> {
        r.varint(64)
    }
}

impl Compact for i8 {
    fn read(r: &mut Reader<'_>) -> Option<Self> {
        r.byte().map(|b| b as i8)
    }
}

impl Compact for u16 {
    fn read(r: &mut Reader<'_>) -> Option<Self> {
        r.varint32(16).map(|v| v as u16)
    }
}

impl Compact for u32 {
    fn read(r: &mut Reader<'_>) -> Option<Self> {
        r.varint32(32)
    }
}

impl Compact for i32 {
    fn read(r: &mut Reader<'_>) -> Option<Self> {
        // Zigzag: 0, -1, 1, -2, ... as 0, 1, 2, 3, ...
        let n = r.varint32(32)?;
        Some((n >> 1) as i32 ^ -((n & 1) as i32))
    }
}

impl Compact for bool {
    fn read(r: &mut Reader<'_>) -> Option<Self> {
        match r.byte()? {
            0 => Some(false),
            1 => Some(true),
            _ => None,
        }
    }
}

impl Compact for f32 {
    fn read(r: &mut Reader<'_>) -> Option<Self> {
        let (head, rest) = r.bytes.split_first_chunk::<4>()?;
        r.bytes = rest;
        Some(f32::from_le_bytes(*head))
    }
}

impl Compact for f64 {
    fn read(r: &mut Reader<'_>) -> Option<Self> {
        let (head, rest) = r.bytes.split_first_chunk::<8>()?;
        r.bytes = rest;
        Some(f64::from_le_bytes(*head))
    }
}

impl<T: Compact> Compact for Option<T> {
    fn read(r: &mut Reader<'_>) -> Option<Self> {
        match r.byte()? {
            0 => Some(None),
            1 => Some(Some(T::read(r)?)),
            _ => None,
        }
    }
}

impl<const N: usize> Compact for heapless::Vec<u32, N> {
    fn read(r: &mut Reader<'_>) -> Option<Self> {
        let len = r.len()?;
        let mut v = heapless::Vec::new();
        for _ in 0..len {
            v.push(u32::read(r)?).ok()?;
        }
        Some(v)
    }
}

/// A struct: its fields in declaration order (the order postcard writes them).
macro_rules! compact_struct {
    ($($ty:ident { $($field:ident),* $(,)? })*) => {$(
        impl Compact for $ty {
            fn read(r: &mut Reader<'_>) -> Option<Self> {
                // Struct expression fields are evaluated in the order written.
                Some($ty { $($field: Compact::read(r)?,)* })
            }
        }
    )*};
}

/// A fieldless enum: its variants in declaration order (postcard writes the index).
macro_rules! compact_enum {
    ($($ty:ident { $($variant:ident),* $(,)? })*) => {$(
        impl Compact for $ty {
            fn read(r: &mut Reader<'_>) -> Option<Self> {
                const VARIANTS: &[$ty] = &[$($ty::$variant),*];
                VARIANTS.get(r.tag()? as usize).copied()
            }
        }
    )*};
}

compact_enum! {
    DType { F32, F16, I8, U8, I32, I64, Bool, I16, U16, U32, U64, F64 }
    RequantRounding { Double, Single }
    Rounding { HalfAwayFromZero, HalfToEven }
}

impl Compact for Activation {
    fn read(r: &mut Reader<'_>) -> Option<Self> {
        Some(match r.tag()? {
            0 => Activation::None,
            1 => Activation::Relu,
            2 => Activation::Relu6,
            3 => Activation::Clip {
                min: f32::read(r)?,
                max: f32::read(r)?,
            },
            _ => return None,
        })
    }
}

impl Compact for Storage {
    fn read(r: &mut Reader<'_>) -> Option<Self> {
        Some(match r.tag()? {
            0 => Storage::Weights {
                offset: u32::read(r)?,
            },
            1 => Storage::Arena {
                offset: u32::read(r)?,
            },
            _ => return None,
        })
    }
}

impl<'a> ModelInfo<'a> {
    /// The info section, borrowing the producer from `bytes`.
    pub(crate) fn read(r: &mut Reader<'a>) -> Option<Self> {
        Some(ModelInfo {
            producer: r.bytes()?,
            source_hash: Compact::read(r)?,
            tensor_count: Compact::read(r)?,
            op_count: Compact::read(r)?,
            inputs: Compact::read(r)?,
            outputs: Compact::read(r)?,
            arena: Compact::read(r)?,
        })
    }
}

compact_struct! {
    Span { offset, len }
    VariantTables { info, tensors, ops }
    VariantRecord { dims, tables }
    ArenaPlan { persistent_bytes, activation_bytes, scratch_bytes, lower_bound_bytes }
    QuantParams { scale, zero_point }
    TensorRecord { dtype, dims, storage, quant, first_use, last_use }
    Conv2dParams {
        stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, pad_bottom, pad_right, groups,
        act,
    }
    FullyConnectedParams { act }
    SoftmaxParams { axis }
    Pool2dParams {
        kernel_h, kernel_w, stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right,
        count_include_pad,
    }
    QuantConv2dParams {
        stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left, pad_bottom, pad_right, groups,
        x_zero_point, y_zero_point, act_min, act_max, rounding,
    }
    QuantFullyConnectedParams { x_zero_point, y_zero_point, act_min, act_max, rounding }
    QuantMaxPoolParams { window, act_min, act_max }
    QuantAvgPoolParams { window, zero_point, act_min, act_max }
    QuantSoftmaxParams { axis, input_multiplier, input_left_shift, diff_min }
    QuantizeParams { scale, zero_point, rounding }
    DequantizeParams { scale, zero_point }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Dims;
    use serde::de::DeserializeOwned;

    /// Random bytes biased towards small values and continuation bits (xorshift64*, fixed seed).
    fn random_bytes(state: &mut u64, out: &mut [u8]) {
        for b in out {
            *state ^= *state >> 12;
            *state ^= *state << 25;
            *state ^= *state >> 27;
            let r = state.wrapping_mul(0x2545_f491_4f6c_dd1d);
            *b = match r % 5 {
                0 | 1 => (r >> 8) as u8 % 4,
                2 => 0x80 | (r >> 8) as u8,
                3 => (r >> 8) as u8 % 32,
                _ => (r >> 8) as u8,
            };
        }
    }

    /// Reads `T` both ways from many random byte strings; both must agree on success, value (compared
    /// as postcard bytes, so that NaN equals itself) and bytes consumed. Returns how many decoded.
    fn agrees_with_serde<T>(seed: u64) -> usize
    where
        T: Compact + DeserializeOwned + serde::Serialize,
    {
        let mut state = seed;
        let mut decoded = 0;
        for _ in 0..20_000 {
            let mut bytes = [0u8; 40];
            random_bytes(&mut state, &mut bytes);
            let len = 1 + (bytes[0] as usize % 40);
            let bytes = &bytes[..len];
            let ours = {
                let mut r = Reader::new(bytes);
                T::read(&mut r).map(|v| (v, r.rest().len()))
            };
            let theirs = postcard::take_from_bytes::<T>(bytes)
                .ok()
                .map(|(v, rest)| (v, rest.len()));
            let encode = |v: &Option<(T, usize)>| {
                let mut buf = [0u8; 64];
                v.as_ref().map(|(v, rest)| {
                    let n = postcard::to_slice(v, &mut buf).unwrap().len();
                    (buf, n, *rest)
                })
            };
            assert_eq!(encode(&ours), encode(&theirs), "{bytes:?}");
            decoded += usize::from(ours.is_some());
        }
        decoded
    }

    #[test]
    fn every_reader_accepts_what_postcard_accepts() {
        assert!(agrees_with_serde::<u16>(1) > 0);
        assert!(agrees_with_serde::<u32>(2) > 0);
        assert!(agrees_with_serde::<i32>(3) > 0);
        assert!(agrees_with_serde::<bool>(4) > 0);
        assert!(agrees_with_serde::<Option<f32>>(5) > 0);
        assert!(agrees_with_serde::<Dims>(6) > 0);
        assert!(agrees_with_serde::<TensorRecord>(7) > 0);
        assert!(agrees_with_serde::<Activation>(8) > 0);
        assert!(agrees_with_serde::<Conv2dParams>(9) > 0);
        assert!(agrees_with_serde::<Pool2dParams>(10) > 0);
        assert!(agrees_with_serde::<QuantConv2dParams>(11) > 0);
        assert!(agrees_with_serde::<QuantSoftmaxParams>(12) > 0);
        assert!(agrees_with_serde::<QuantizeParams>(13) > 0);
        assert!(agrees_with_serde::<u64>(14) > 0);
        assert!(agrees_with_serde::<ArenaPlan>(15) > 0);
        assert!(agrees_with_serde::<VariantRecord>(16) > 0);
    }

    /// The info section both ways, on random bytes after a valid string (so that the rest is reached).
    #[test]
    fn model_info_agrees_with_serde() {
        let mut state = 16;
        let mut decoded = 0;
        for _ in 0..20_000 {
            let mut bytes = [0u8; 48];
            random_bytes(&mut state, &mut bytes[4..]);
            bytes[..4].copy_from_slice(&[3, b'a', b'b', b'c']);
            let len = 4 + (bytes[4] as usize % 44);
            let bytes = &bytes[..len];
            let ours = ModelInfo::read(&mut Reader::new(bytes));
            let theirs = postcard::take_from_bytes::<ModelInfo<'_>>(bytes)
                .ok()
                .map(|(v, _)| v);
            assert_eq!(ours, theirs, "{bytes:?}");
            decoded += usize::from(ours.is_some());
        }
        assert!(decoded > 0);
        // A producer that is not UTF-8 reads as bytes in both; only `producer_str` refuses it.
        let bad = [1, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        let ours = ModelInfo::read(&mut Reader::new(&bad)).unwrap();
        let (theirs, _) = postcard::take_from_bytes::<ModelInfo<'_>>(&bad).unwrap();
        assert_eq!(ours, theirs);
        assert_eq!((ours.producer, ours.producer_str()), (&[0xff][..], None));
    }

    /// The producer as bytes is written as a string was (blobs from before and after the change read
    /// alike).
    #[test]
    fn producer_bytes_are_written_as_a_string() {
        let text = "ember-convert 0.1.0";
        let as_str = postcard::to_slice(&text, &mut [0u8; 32]).unwrap().to_vec();
        let as_bytes = postcard::to_slice(&text.as_bytes(), &mut [0u8; 32])
            .unwrap()
            .to_vec();
        assert_eq!(as_str, as_bytes);
        let section = [&as_str[..], &[0; 16]].concat();
        let info = ModelInfo::read(&mut Reader::new(&section)).unwrap();
        assert_eq!(info.producer_str(), Some(text));
    }

    /// Varints at their limits: the largest value, one past it, and an over-long encoding.
    #[test]
    fn varint_limits() {
        let read = |bytes: &[u8]| u16::read(&mut Reader::new(bytes));
        assert_eq!(read(&[0xff, 0xff, 0x03]), Some(u16::MAX));
        assert_eq!(read(&[0xff, 0xff, 0x04]), None);
        assert_eq!(read(&[0x80, 0x80, 0x80, 0x00]), None);
        let read = |bytes: &[u8]| u32::read(&mut Reader::new(bytes));
        assert_eq!(read(&[0xff, 0xff, 0xff, 0xff, 0x0f]), Some(u32::MAX));
        assert_eq!(read(&[0xff, 0xff, 0xff, 0xff, 0x10]), None);
        assert_eq!(read(&[0x80, 0x00]), Some(0));
    }
}
