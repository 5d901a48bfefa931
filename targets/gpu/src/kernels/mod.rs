//! The `#[cube]` kernels of the f32 and int8 op sets, by family (as in `ember_core::ops`). Each file also holds
//! the layout of the `meta` buffer its kernels read, which `crate::gpu::lower` fills.

use cubecl::prelude::*;

/// Flat position `pos` of an NHWC tensor of `h` rows, `w` columns and `c` channels as its `(n, y, x,
/// channel)`.
#[cube]
pub(crate) fn nhwc_index(pos: usize, h: usize, w: usize, c: usize) -> (usize, usize, usize, usize) {
    let pixel = pos / c;
    let rest = pixel / w;
    (rest / h, rest % h, pixel % w, pos % c)
}

/// Largest tensor rank; sets the layout of the kernels' `meta` buffers (which the lowering fills).
pub(crate) const MAX_RANK: usize = ember_core::ops::MAX_RANK;

/// A module of constants of type `$ty`, numbered from 0 in the order listed: a kernel's op codes, or
/// the positions of the fields of its `meta` table (which the lowering fills). With `len LEN`, the
/// module also holds `LEN`, how many there are.
macro_rules! numbered {
    (
        $(#[$doc:meta])*
        $vis:vis mod $name:ident: $ty:ty $(, len $len:ident)? {
            $($(#[$item_doc:meta])* $item:ident),* $(,)?
        }
    ) => {
        $(#[$doc])*
        $vis mod $name {
            numbered!(@from $ty, 0; $($(#[$item_doc])* $item),*; $($len)?);
        }
    };
    (@from $ty:ty, $n:expr; $(#[$doc:meta])* $first:ident $(, $(#[$rest_doc:meta])* $rest:ident)*; $($len:ident)?) => {
        $(#[$doc])*
        pub const $first: $ty = $n;
        numbered!(@from $ty, $n + 1; $($(#[$rest_doc])* $rest),*; $($len)?);
    };
    (@from $ty:ty, $n:expr; ; $($len:ident)?) => {
        $(pub const $len: $ty = $n;)?
    };
}

pub(crate) mod array;
pub(crate) mod math;
pub(crate) mod nn;
pub(crate) mod pool;
pub(crate) mod quant;
#[cfg(test)]
pub(crate) mod refused;
pub(crate) mod rnn;
