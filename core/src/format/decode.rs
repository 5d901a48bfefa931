//! Decoding of op records for a build that runs only some kernel-table entries.
//!
//! An [`OpRecord`] is postcard: the [`OpKind`] variant index (a varint), the variant's parameters, the
//! input ids, the output id. serde's derived `Deserialize` for `OpKind` links the parameter decoder of
//! every variant, because the index is only known at run time: about 10 KB of flash on a Cortex-M. Here
//! each variant is decoded only when the entry mask `E` (a constant) has an entry that can run it, so a
//! firmware links the decoders of its model's op kinds and no others; any other index is refused like
//! bytes that do not decode. With every entry in `E` the result is exactly serde's (a test compares the
//! two on random records).

use serde::Deserialize;

use crate::format::compact::{Compact, Reader};
use crate::format::OpRecord;
use crate::kernels::{has, DECODES};
use crate::op_set::for_each_op;
use crate::schema::{OpKind, MAX_OP_INPUTS};

/// Decodes an op record (trailing bytes allowed, as for every record), or `None` if it does not decode
/// or its kind has no entry in `E`. A Reshape decodes in every build: planned as an alias of its input,
/// it runs no kernel.
pub(crate) fn op_record<const E: u64>(bytes: &[u8]) -> Option<OpRecord> {
    let mut r = Reader::new(bytes);
    let tag = r.tag()?;
    let (kind, rest) = op_kind::<E>(tag, r.rest())?;
    let mut r = Reader::new(rest);
    let inputs = heapless::Vec::<u32, MAX_OP_INPUTS>::read(&mut r)?;
    let output = u32::read(&mut r)?;
    Some(OpRecord {
        kind,
        inputs,
        output,
    })
}

/// A variant with parameters `P`, decoded through serde (a row of the declaration that says `serde`).
fn serde<'a, P: Deserialize<'a>>(
    rest: &'a [u8],
    variant: fn(P) -> OpKind,
) -> Option<(OpKind, &'a [u8])> {
    let (params, rest) = postcard::take_from_bytes::<P>(rest).ok()?;
    Some((variant(params), rest))
}

/// A variant with parameters `P`, decoded by [`Compact`] (a row that says `compact`: the common kinds,
/// with less code per kind).
fn compact<P: Compact>(rest: &[u8], variant: fn(P) -> OpKind) -> Option<(OpKind, &[u8])> {
    let mut r = Reader::new(rest);
    let params = P::read(&mut r)?;
    Some((variant(params), r.rest()))
}

/// A kind's decoding: its decoder (`compact` or `serde`) with its variant, or the variant itself for a
/// kind without parameters.
macro_rules! variant {
    ($rest:ident, $kind:ident) => {
        Some((OpKind::$kind, $rest))
    };
    ($rest:ident, $kind:ident $decoder:ident) => {
        $decoder($rest, OpKind::$kind)
    };
}

/// `op_kind`, from the declaration of the op set.
macro_rules! decoder {
    (
        kinds {
            $(
                $(#[$doc:meta])*
                $kind:ident $(($decoder:ident $params:ty))? $min:literal..=$max:tt { $($entries:tt)* }
            )*
        }
        movement { $($movement:tt)* }
    ) => {
        /// The kinds' tags: their positions in the declaration, as serde numbers them.
        #[allow(dead_code)]
        #[repr(u32)]
        enum Tag {
            $($kind,)*
        }

        /// The variant of index `tag` (declaration order of [`OpKind`], as serde numbers them), if `E`
        /// has an entry that runs it ([`DECODES`]).
        fn op_kind<const E: u64>(tag: u32, rest: &[u8]) -> Option<(OpKind, &[u8])> {
            match tag {
                $(t if t == Tag::$kind as u32 && has::<E>(const { DECODES[Tag::$kind as usize] }) => {
                    variant!(rest, $kind $($decoder)?)
                })*
                _ => None,
            }
        }
    };
}
for_each_op!(decoder);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::entry::*;
    use crate::kernels::family::ALL;

    /// A small deterministic generator (xorshift64*), so a failure names a reproducible case.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        /// A byte biased towards small values, so that enum tags, bools and short lengths decode often.
        fn byte(&mut self) -> u8 {
            let r = self.next();
            match r % 4 {
                0 | 1 => (r >> 8) as u8 % 4,
                2 => (r >> 8) as u8 % 32,
                _ => (r >> 8) as u8,
            }
        }
    }

    /// With every entry, the hand decoder gives serde's result on every record, decodable or not:
    /// random bytes after each variant index up to past the last one.
    #[test]
    fn matches_serde_on_random_records() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let kinds = crate::schema::KINDS;
        let mut decoded = [0usize; crate::schema::KINDS + 1];
        for tag in 0..=kinds as u8 {
            for _ in 0..4000 {
                let len = 1 + (rng.next() % 48) as usize;
                let mut bytes = [0u8; 49];
                bytes[0] = tag;
                for b in &mut bytes[1..len] {
                    *b = rng.byte();
                }
                let bytes = &bytes[..len];
                let serde: Option<OpRecord> = postcard::take_from_bytes(bytes).ok().map(|(v, _)| v);
                let ours = op_record::<ALL>(bytes);
                // Compared as their encodings, bit for bit (a NaN parameter is not equal to itself).
                let encode = |r: &Option<OpRecord>| {
                    let mut buf = [0u8; 64];
                    let n = r
                        .as_ref()
                        .map(|r| postcard::to_slice(r, &mut buf).unwrap().len());
                    (n, buf)
                };
                assert_eq!(encode(&ours), encode(&serde), "tag {tag}, bytes {bytes:?}");
                decoded[tag as usize] += usize::from(ours.is_some());
            }
        }
        // Every variant was exercised with records that decode, and none past the last.
        for (tag, &n) in decoded.iter().enumerate() {
            assert_eq!(n > 0, tag < kinds, "variant {tag}: {n} records decoded");
        }
    }

    /// A build without an op kind's entries refuses its records; Reshape decodes everywhere.
    #[test]
    fn refuses_kinds_outside_the_mask() {
        let record = |kind: OpKind| {
            let r = OpRecord {
                kind,
                inputs: heapless::Vec::from_slice(&[0]).unwrap(),
                output: 1,
            };
            let mut buf = [0u8; 64];
            let n = postcard::to_slice(&r, &mut buf).unwrap().len();
            (r, buf, n)
        };
        let (reshape, buf, n) = record(OpKind::Reshape);
        assert_eq!(op_record::<QUANT_CONV2D>(&buf[..n]), Some(reshape));
        let (broadcast, buf, n) = record(OpKind::Broadcast);
        assert_eq!(op_record::<QUANT_CONV2D>(&buf[..n]), None);
        assert_eq!(op_record::<MOVEMENT8>(&buf[..n]), Some(broadcast.clone()));
        assert_eq!(op_record::<BROADCAST>(&buf[..n]), Some(broadcast));
    }
}
