//! Data movement: concatenation, transposition, padding, and reshape copies.

pub mod concat;
pub mod pad;
pub mod reshape;
pub mod transpose;
