//! The blob's schema: element types, the closed op set ([`OpKind`]) and every op's parameters, as
//! postcard encodes them. The lowest layer of the crate, importing nothing else from it but the
//! declaration of the op set (`op_set`, plain tokens that import nothing), from which [`OpKind`] is
//! generated: the blob format (`format`), the kernels (`ops`) and the model all build on it.
//! Parameters are grouped by the kernel family that runs them (`math`, `nn`, `array`, `pool`,
//! `quant`); the kernels add the methods that are arithmetic (`Activation::apply`, the int8
//! `from_scales` constructors) in their own files.
//!
//! Postcard encodes enum variants by their index and struct fields in order, so variants and fields
//! are only ever appended (a new op kind is a minor format version, see `docs/format.md`).

pub mod array;
pub mod control;
pub mod math;
pub mod nn;
mod op;
mod pool;
mod quant;
mod tensor;

pub use array::*;
pub use math::*;
pub use nn::*;
pub use op::*;
pub use pool::*;
pub use quant::*;
pub use tensor::*;
