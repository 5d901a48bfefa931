//! Data movement: transposition.

pub(crate) mod transpose;
