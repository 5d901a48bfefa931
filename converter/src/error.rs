//! The converter's one error type. Every message names what it is about (node, op type, opset, input,
//! tensor) and, where there is one, what the user can do.

/// Why a model could not be converted.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// The bytes are not a decodable ONNX `ModelProto`.
    #[error("not a valid ONNX model: {reason}")]
    Decode {
        /// The protobuf decoder's complaint.
        reason: String,
    },
    /// The bytes are not a readable TFLite flatbuffer.
    #[error("not a valid TFLite model: {reason}")]
    TfliteDecode {
        /// What the flatbuffer reader found.
        reason: String,
    },
    /// A TFLite operator Ember does not support, or one whose inputs or options it cannot run.
    #[error("operator {index} ({op}, version {version}): {reason}")]
    TfliteOp {
        /// Index of the operator in subgraph 0.
        index: usize,
        /// TFLite's op name (`CONV_2D`, or `CUSTOM "name"`).
        op: String,
        /// The operator code's version.
        version: i32,
        /// What is wrong and, where possible, what to do.
        reason: String,
    },
    /// The model as a whole is unusable (no graph, no default-domain opset, ...).
    #[error("unsupported model: {reason}")]
    Model {
        /// What is wrong.
        reason: String,
    },
    /// A node uses an op Ember does not support.
    #[error(
        "node \"{node}\" (op {op}, opset {opset}): op {op} of domain \"{domain}\" is not supported \
         by Ember; supported ops (default domain): {supported}"
    )]
    UnsupportedOp {
        /// Node name.
        node: String,
        /// ONNX op type.
        op: String,
        /// Op domain (`""` is the default ONNX domain).
        domain: String,
        /// Opset of that domain imported by the model (0 when none).
        opset: i64,
        /// Comma-separated list of the supported ops.
        supported: String,
    },
    /// A node's attributes, inputs or shapes cannot be converted.
    #[error("node \"{node}\" (op {op}, opset {opset}): {reason}")]
    Node {
        /// Node name.
        node: String,
        /// ONNX op type.
        op: String,
        /// Default-domain opset of the model.
        opset: i64,
        /// What is wrong and, where possible, what to do.
        reason: String,
    },
    /// A graph input cannot be given a static shape, or a `--shape` override does not fit it.
    #[error("input \"{name}\": {reason}")]
    Input {
        /// Graph input name (or the name given in the override).
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A graph output cannot be produced by the blob.
    #[error("output \"{name}\": {reason}")]
    Output {
        /// Graph output name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// An initializer or constant cannot be read.
    #[error("tensor \"{name}\": {reason}")]
    Tensor {
        /// Tensor name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// A weights file (safetensors, PyTorch, npz, LoRA adapter) cannot be read, or is refused.
    #[error("checkpoint: {reason}")]
    Checkpoint {
        /// What is wrong: the tensor, global or budget concerned.
        reason: String,
    },
    /// Checkpoint tensors cannot be bound to the graph's initializers (or a LoRA adapter merged).
    #[error("binding weights: {reason}")]
    Bind {
        /// Every tensor concerned, with what is wrong with each.
        reason: String,
    },
    /// A layer of a model described in Rust ([`crate::build`], or a Hugging Face folder) cannot be
    /// built: a weight missing from the checkpoint, of the wrong shape or element type, or inputs
    /// that do not fit the layer.
    #[error("layer \"{layer}\": {reason}")]
    Build {
        /// The layer's name.
        layer: String,
        /// What is wrong, naming the tensor concerned.
        reason: String,
    },
    /// The converted model exceeds a fixed limit of the blob format (rank, op inputs, graph inputs,
    /// 4 GiB offsets).
    #[error("the model exceeds a limit of the Ember format: {reason}")]
    Limit {
        /// Which limit.
        reason: String,
    },
    /// The shape variants asked for (`--dim` and the `--shape`s that use them) do not fit together.
    #[error("shape variants: {reason}")]
    Dims {
        /// What is wrong, and what to give instead.
        reason: String,
    },
    /// Converting one shape variant failed.
    #[error("shape variant {dims}: {source}")]
    Variant {
        /// The variant's named dims, as `W=160`.
        dims: String,
        /// Why it failed.
        source: Box<ConvertError>,
    },
    /// The converter broke one of its own invariants; this is a bug in the converter.
    #[error("internal converter error (please report it with the model): {reason}")]
    Internal {
        /// The broken invariant.
        reason: String,
    },
}

impl ConvertError {
    /// Shorthand for [`ConvertError::Internal`].
    pub(crate) fn internal(reason: impl Into<String>) -> Self {
        ConvertError::Internal {
            reason: reason.into(),
        }
    }

    /// Shorthand for [`ConvertError::Checkpoint`].
    pub(crate) fn checkpoint(reason: impl Into<String>) -> Self {
        ConvertError::Checkpoint {
            reason: reason.into(),
        }
    }

    /// Shorthand for [`ConvertError::Bind`].
    pub(crate) fn bind(reason: impl Into<String>) -> Self {
        ConvertError::Bind {
            reason: reason.into(),
        }
    }

    /// Shorthand for [`ConvertError::Limit`].
    pub(crate) fn limit(reason: impl Into<String>) -> Self {
        ConvertError::Limit {
            reason: reason.into(),
        }
    }
}
