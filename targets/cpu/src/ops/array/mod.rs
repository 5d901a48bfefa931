//! Data movement: resize and transposition.

pub(crate) mod resize;
pub(crate) mod transpose;
