//! Data movement: concatenation, transposition, padding, reshape copies, slicing, gathering,
//! broadcasting and resizing.

pub mod any;
pub mod broadcast;
pub mod concat;
pub mod embedding;
pub mod gather;
pub mod pad;
pub mod reshape;
pub mod resize;
pub mod slice;
pub mod transpose;
