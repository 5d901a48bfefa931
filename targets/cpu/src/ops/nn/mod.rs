//! Neural-network ops.

pub(crate) mod conv;
pub(crate) mod conv_transpose;
pub(crate) mod depthwise;
pub(crate) mod fully_connected;
pub(crate) mod matmul;
