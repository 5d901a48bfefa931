//! The converter's integration tests in one test binary, a module per area: each test binary links the
//! converter and its dependencies again, and CI builds them cold (as 27 binaries: 16.5 s of compile
//! and link; as one: 5 s, on the 2-core CI machine). `../checkpoint_budget.rs` stays a binary of its
//! own: it installs a global allocator.

mod common;

mod array_ops;
mod bind;
mod builder;
mod calibrate;
mod checkpoint_readers;
mod control_flow;
mod conv_transpose;
mod decomposed_ops;
mod digits;
mod empty_tensors;
mod errors;
mod graph;
mod hf_folder;
mod layer_norm_outputs;
mod models_e2e;
mod op_table;
mod ops;
mod passes_log;
mod plan;
mod post_processing;
mod quant;
mod quant_bn;
mod quant_lut;
mod random_graphs;
mod reduce_norm;
mod rnn;
mod shapes;
mod signal_ops;
mod silu;
mod supported_ops_doc;
mod tflite;
mod variants;
