//! The closed op set of the blob, [`OpKind`], generated from its declaration (`crate::op_set`, where
//! each variant's doc says its inputs): each variant carries resolved parameters; shapes come from the
//! tensor table. Inputs are listed in the op record in the order the variant's doc gives.

use serde::{Deserialize, Serialize};

// Every kind's parameters, by family (the declaration names them).
use super::array;
use super::array::*;
use super::control;
use super::math;
use super::math::*;
use super::nn;
use super::nn::*;
use super::pool::*;
use super::quant::*;
use crate::op_set::for_each_op;

/// Most inputs an op may have.
pub const MAX_OP_INPUTS: usize = 16;

/// The enum, its names table and its arities, from the declaration of the op set (`crate::op_set`).
macro_rules! op_kind {
    (
        kinds {
            $(
                $(#[$doc:meta])*
                $kind:ident $(($decoder:ident $params:ty))? $min:literal..=$max:tt { $($entries:tt)* }
            )*
        }
        movement { $($movement:tt)* }
    ) => {
        /// One op of the blob, with its parameters.
        #[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
        #[cfg_attr(feature = "defmt", derive(defmt::Format))]
        pub enum OpKind {
            $($(#[$doc])* $kind $(($params))?,)*
        }

        /// The kinds' names (the variants of [`OpKind`]), in the order of their tags in the blob.
        /// [`OpKind::name`] reads it (for the kinds not named by their parameters): a table (a pointer
        /// and a length per kind, in `.rodata`) rather than a match, an arm of code per kind, which a
        /// firmware printing its profile paid in `.text` for every kind the format has (measured on the
        /// int8 digits demo: 392 bytes less `.text`, 56 bytes less `.text` and `.rodata`).
        pub static KIND_NAMES: [&str; KINDS] = [$(stringify!($kind)),*];

        /// Number of op kinds.
        pub const KINDS: usize = [$(stringify!($kind)),*].len();

        /// The kinds' positions in the declaration, as constants.
        #[allow(dead_code)]
        #[repr(usize)]
        enum Position {
            $($kind,)*
        }

        impl OpKind {
            /// The variant's position in the declaration (0 for `Conv2d`), which is also its tag: the
            /// compiler reads this match as the tag itself.
            fn position(&self) -> usize {
                match self {
                    $(OpKind::$kind { .. } => Position::$kind as usize,)*
                }
            }

            /// Allowed number of inputs, as `(min, max)`: a table by position (two bytes a kind in
            /// `.rodata`), which a match compiled into two tables of words or into code.
            pub fn arity(&self) -> (usize, usize) {
                const ARITIES: [(u8, u8); KINDS] = [$(($min as u8, $max as u8)),*];
                let (min, max) = ARITIES[self.position()];
                (usize::from(min), usize::from(max))
            }
        }
    };
}
for_each_op!(op_kind);

impl OpKind {
    /// Short name, as shown by `ember inspect` and profiles.
    pub fn name(&self) -> &'static str {
        match self {
            OpKind::Conv2d(p) if p.groups > 1 => "Conv2d(grouped)",
            OpKind::QuantConv2d(p) if p.groups > 1 => "QuantConv2d(grouped)",
            OpKind::Binary(p) => p.op.name(),
            OpKind::Unary(p) => p.op.name(),
            OpKind::Reduce(p) => p.op.name(),
            OpKind::Compare(p) => p.op.name(),
            OpKind::Logical(p) => p.op.name(),
            OpKind::Control(p) => p.name(),
            OpKind::ArgReduce(p) if p.max => "ArgMax",
            OpKind::ArgReduce(_) => "ArgMin",
            _ => KIND_NAMES[self.position()],
        }
    }
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;

    /// Each kind's position is its index in the blob's encoding (postcard writes the variant index
    /// first), and the name table's entry at that position is the variant's name as `Debug` prints it.
    #[test]
    fn positions_and_names_follow_the_declaration() {
        let mut decoded = 0;
        for index in 0..0x80 {
            // (A one-byte varint: indices from 0x80 on take two bytes.)
            // The variant's index, then zeros: parameters of zeros, false and empty lists.
            let mut bytes = [0u8; 64];
            bytes[0] = index;
            let Ok(kind) = postcard::from_bytes::<OpKind>(&bytes) else {
                continue;
            };
            decoded += 1;
            assert_eq!(kind.position(), usize::from(index), "{kind:?}");
            let debug = alloc::format!("{kind:?}");
            let variant = debug.split(['(', ' ']).next().unwrap_or_default();
            assert_eq!(KIND_NAMES[kind.position()], variant);
        }
        assert_eq!(
            decoded, KINDS,
            "every kind decodes from its index and zeros"
        );
    }
}
