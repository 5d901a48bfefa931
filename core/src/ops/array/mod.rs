//! Data movement: concatenation, transposition, padding, reshape copies, slicing, gathering,
//! broadcasting and resizing.

// One module per file of this folder: an op's file needs no line here.
automod::dir!(pub "src/ops/array");
