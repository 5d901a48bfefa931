//! # ember-core
//!
//! Ember's runtime: it parses a `.ember` blob without copying it, opens a [`Session`] over a caller-owned
//! arena, and runs the model through a table of kernels. `no_std`, no allocator required.
//!
//! ```ignore
//! static MODEL: &ember_core::AlignedBytes<[u8; N]> = &ember_core::AlignedBytes(*include_bytes!("digits.ember"));
//! let model = Model::parse(&MODEL.0)?;
//! let mut arena = [0u8; digits::ARENA_BYTES];
//! let mut session = Session::new(&model, &mut arena)?;
//! session.input(0)?.write_f32(&pixels)?;
//! session.run()?;
//! let scores = session.output(0)?.as_f32()?;
//! ```
#![no_std]
#![warn(missing_docs)]
#![forbid(unsafe_code)]

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

#[cfg(feature = "alloc")]
mod aligned;
mod error;
mod eval;
pub mod format;
pub mod kernels;
pub mod model;
/// The closed op set of the blob, [`OpKind`]: defined in [`schema`], and still reachable here.
pub mod op {
    pub use crate::schema::OpKind;
}
mod op_set;
pub mod ops;
#[cfg(feature = "alloc")]
pub mod plan;
pub mod schema;
pub mod session;
pub mod workspace;

#[cfg(feature = "alloc")]
pub use aligned::AlignedBuf;
pub use error::Error;
pub use eval::eval_op;
#[doc(hidden)]
pub use half;
pub use kernels::{Kernels, REFERENCE, REFERENCE_F32, REFERENCE_INT8};
pub use model::{byte_size, Fit, Model};
pub use schema::{DType, OpKind};
#[cfg(feature = "std")]
pub use session::StdClock;
pub use session::{
    Clock, MemoryReport, OpEvent, Session, SessionOptions, TensorMut, TensorRef, VariantUse,
};
pub use workspace::{Parallel, Workspace};

/// Bytes forced to a 16-byte boundary, so that a blob embedded with `include_bytes!` can be read in place.
#[repr(C, align(16))]
pub struct AlignedBytes<T: ?Sized>(pub T);

/// Embeds a `.ember` file as a 16-byte-aligned `&'static [u8]`.
///
/// ```ignore
/// static BLOB: &[u8] = ember_core::include_model!("digits.ember");
/// ```
#[macro_export]
macro_rules! include_model {
    ($path:expr) => {{
        static ALIGNED: &$crate::AlignedBytes<[u8]> = &$crate::AlignedBytes(*include_bytes!($path));
        &ALIGNED.0
    }};
}
