//! The subset of `onnx.proto` (ONNX IR version 10, opset 23) that the importer reads, as hand-written
//! `prost` messages.
//!
//! Why not `onnx-ir` (0.22) or generated code: writing the messages by hand keeps the build free of
//! `protoc` and build scripts, lets the importer decide every error message itself (a corrupt or
//! hostile file is an error naming the node or tensor, never a panic), and lets it choose its own graph
//! layout. Field tags and types follow `onnx/onnx.proto` exactly; fields the importer has no use for
//! (training info, functions, sparse tensors) are left out, and `prost`
//! skips them while decoding. Tests build small models with these same structs.
//!
//! `onnx.proto` is proto2: the repeated scalars that it does not mark `[packed = true]` are declared
//! `packed = "false"` here so that encoded test models match what `onnx` writes. Decoding accepts both
//! encodings either way.

/// Element types of `TensorProto.data_type` (`TensorProto.DataType`), the ones the importer names.
pub mod data_type {
    /// 32-bit float.
    pub const FLOAT: i32 = 1;
    /// Unsigned 8-bit integer.
    pub const UINT8: i32 = 2;
    /// Signed 8-bit integer.
    pub const INT8: i32 = 3;
    /// Unsigned 16-bit integer.
    pub const UINT16: i32 = 4;
    /// Signed 16-bit integer.
    pub const INT16: i32 = 5;
    /// Signed 32-bit integer.
    pub const INT32: i32 = 6;
    /// Signed 64-bit integer.
    pub const INT64: i32 = 7;
    /// Boolean.
    pub const BOOL: i32 = 9;
    /// 16-bit float.
    pub const FLOAT16: i32 = 10;
    /// 64-bit float.
    pub const DOUBLE: i32 = 11;
    /// Unsigned 32-bit integer.
    pub const UINT32: i32 = 12;
    /// Unsigned 64-bit integer.
    pub const UINT64: i32 = 13;

    /// The ONNX spelling of a data type, for error messages.
    pub fn name(t: i32) -> &'static str {
        const NAMES: [&str; 24] = [
            "UNDEFINED",
            "FLOAT",
            "UINT8",
            "INT8",
            "UINT16",
            "INT16",
            "INT32",
            "INT64",
            "STRING",
            "BOOL",
            "FLOAT16",
            "DOUBLE",
            "UINT32",
            "UINT64",
            "COMPLEX64",
            "COMPLEX128",
            "BFLOAT16",
            "FLOAT8E4M3FN",
            "FLOAT8E4M3FNUZ",
            "FLOAT8E5M2",
            "FLOAT8E5M2FNUZ",
            "UINT4",
            "INT4",
            "FLOAT4E2M1",
        ];
        usize::try_from(t)
            .ok()
            .and_then(|i| NAMES.get(i).copied())
            .unwrap_or("unknown")
    }
}

/// `AttributeProto.AttributeType`, the values the importer reads.
pub mod attribute_type {
    /// Not set (old models): the type is inferred from the field that is present.
    pub const UNDEFINED: i32 = 0;
    /// `f`.
    pub const FLOAT: i32 = 1;
    /// `i`.
    pub const INT: i32 = 2;
    /// `s`.
    pub const STRING: i32 = 3;
    /// `t`.
    pub const TENSOR: i32 = 4;
    /// `g` (sub-graph).
    pub const GRAPH: i32 = 5;
    /// `floats`.
    pub const FLOATS: i32 = 6;
    /// `ints`.
    pub const INTS: i32 = 7;
    /// `strings`.
    pub const STRINGS: i32 = 8;
}

/// `TensorProto.DataLocation`: `DEFAULT` (0) keeps the bytes in the file, `EXTERNAL` (1) elsewhere.
pub const DATA_LOCATION_EXTERNAL: i32 = 1;

/// The top-level message of an `.onnx` file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ModelProto {
    /// IR version of the file format.
    #[prost(int64, tag = "1")]
    pub ir_version: i64,
    /// Operator sets the graph uses, one per domain.
    #[prost(message, repeated, tag = "8")]
    pub opset_import: Vec<OperatorSetIdProto>,
    /// Tool that wrote the model.
    #[prost(string, tag = "2")]
    pub producer_name: String,
    /// Version of that tool.
    #[prost(string, tag = "3")]
    pub producer_version: String,
    /// Reverse-DNS name of the model's namespace.
    #[prost(string, tag = "4")]
    pub domain: String,
    /// Version of the model.
    #[prost(int64, tag = "5")]
    pub model_version: i64,
    /// Free-form documentation.
    #[prost(string, tag = "6")]
    pub doc_string: String,
    /// The computation.
    #[prost(message, optional, tag = "7")]
    pub graph: Option<GraphProto>,
}

/// One operator-set import: a domain (`""` is the default ONNX domain) and its version.
#[derive(Clone, PartialEq, prost::Message)]
pub struct OperatorSetIdProto {
    /// Domain; `""` and `"ai.onnx"` both mean the default domain.
    #[prost(string, tag = "1")]
    pub domain: String,
    /// Operator set version.
    #[prost(int64, tag = "2")]
    pub version: i64,
}

/// A graph: nodes in topological order, constants (initializers), inputs and outputs.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GraphProto {
    /// Nodes, topologically sorted.
    #[prost(message, repeated, tag = "1")]
    pub node: Vec<NodeProto>,
    /// Graph name.
    #[prost(string, tag = "2")]
    pub name: String,
    /// Constant tensors (weights).
    #[prost(message, repeated, tag = "5")]
    pub initializer: Vec<TensorProto>,
    /// Free-form documentation.
    #[prost(string, tag = "10")]
    pub doc_string: String,
    /// Graph inputs (older files also list the initializers here).
    #[prost(message, repeated, tag = "11")]
    pub input: Vec<ValueInfoProto>,
    /// Graph outputs.
    #[prost(message, repeated, tag = "12")]
    pub output: Vec<ValueInfoProto>,
    /// Optional type and shape information for intermediate values.
    #[prost(message, repeated, tag = "13")]
    pub value_info: Vec<ValueInfoProto>,
}

/// One operator invocation.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NodeProto {
    /// Input value names; an empty name marks an omitted optional input.
    #[prost(string, repeated, tag = "1")]
    pub input: Vec<String>,
    /// Output value names; an empty name marks an unused optional output.
    #[prost(string, repeated, tag = "2")]
    pub output: Vec<String>,
    /// Node name (may be empty).
    #[prost(string, tag = "3")]
    pub name: String,
    /// Operator name, e.g. `Conv`.
    #[prost(string, tag = "4")]
    pub op_type: String,
    /// Attributes.
    #[prost(message, repeated, tag = "5")]
    pub attribute: Vec<AttributeProto>,
    /// Free-form documentation.
    #[prost(string, tag = "6")]
    pub doc_string: String,
    /// Operator domain; empty for the default ONNX domain.
    #[prost(string, tag = "7")]
    pub domain: String,
}

/// A named attribute of a node. The list of sub-graphs (`graphs`) is not declared and is skipped.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AttributeProto {
    /// Attribute name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Which field holds the value (see [`attribute_type`]); 0 in very old files.
    #[prost(int32, tag = "20")]
    pub r#type: i32,
    /// Float value.
    #[prost(float, optional, tag = "2")]
    pub f: Option<f32>,
    /// Integer value.
    #[prost(int64, optional, tag = "3")]
    pub i: Option<i64>,
    /// String value (bytes, usually UTF-8).
    #[prost(bytes = "vec", optional, tag = "4")]
    pub s: Option<Vec<u8>>,
    /// Tensor value.
    #[prost(message, optional, tag = "5")]
    pub t: Option<TensorProto>,
    /// Graph value: the body of a `Loop` or `Scan`, a branch of an `If`.
    #[prost(message, optional, boxed, tag = "6")]
    pub g: Option<Box<GraphProto>>,
    /// Float list.
    #[prost(float, repeated, packed = "false", tag = "7")]
    pub floats: Vec<f32>,
    /// Integer list.
    #[prost(int64, repeated, packed = "false", tag = "8")]
    pub ints: Vec<i64>,
    /// String list.
    #[prost(bytes = "vec", repeated, tag = "9")]
    pub strings: Vec<Vec<u8>>,
    /// Set inside function bodies: the value comes from the caller's attribute of this name.
    #[prost(string, tag = "21")]
    pub ref_attr_name: String,
}

/// A key-value pair (used for external-data locations).
#[derive(Clone, PartialEq, prost::Message)]
pub struct StringStringEntryProto {
    /// Key, e.g. `location`.
    #[prost(string, tag = "1")]
    pub key: String,
    /// Value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// A constant tensor: dims, element type, and the data in one of several fields.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorProto {
    /// Dimensions, outermost first.
    #[prost(int64, repeated, packed = "false", tag = "1")]
    pub dims: Vec<i64>,
    /// Element type (see [`data_type`]).
    #[prost(int32, tag = "2")]
    pub data_type: i32,
    /// `FLOAT` (and `COMPLEX64`) data.
    #[prost(float, repeated, tag = "4")]
    pub float_data: Vec<f32>,
    /// `INT32`, `INT16`, `INT8`, `UINT16`, `UINT8`, `BOOL`, `FLOAT16` data.
    #[prost(int32, repeated, tag = "5")]
    pub int32_data: Vec<i32>,
    /// `INT64` data.
    #[prost(int64, repeated, tag = "7")]
    pub int64_data: Vec<i64>,
    /// Tensor name (initializers are referenced by it).
    #[prost(string, tag = "8")]
    pub name: String,
    /// Little-endian packed data of any type; takes precedence over the typed fields.
    #[prost(bytes = "vec", tag = "9")]
    pub raw_data: Vec<u8>,
    /// `DOUBLE` (and `COMPLEX128`) data.
    #[prost(double, repeated, tag = "10")]
    pub double_data: Vec<f64>,
    /// `UINT32` and `UINT64` data.
    #[prost(uint64, repeated, tag = "11")]
    pub uint64_data: Vec<u64>,
    /// Free-form documentation.
    #[prost(string, tag = "12")]
    pub doc_string: String,
    /// Where the data lives when `data_location` is `EXTERNAL`.
    #[prost(message, repeated, tag = "13")]
    pub external_data: Vec<StringStringEntryProto>,
    /// `DEFAULT` (0) or `EXTERNAL` (1).
    #[prost(int32, tag = "14")]
    pub data_location: i32,
}

/// Name and type of a value (graph input or output, or annotated intermediate).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueInfoProto {
    /// Value name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// Type; only tensor types are read.
    #[prost(message, optional, tag = "2")]
    pub r#type: Option<TypeProto>,
    /// Free-form documentation.
    #[prost(string, tag = "3")]
    pub doc_string: String,
}

impl TensorProto {
    /// A tensor `name` of `dims` and element type `data_type` (see [`data_type`]), its data in
    /// `raw_data` (little-endian).
    pub fn from_raw(name: &str, dims: &[i64], data_type: i32, raw_data: Vec<u8>) -> Self {
        Self {
            name: name.into(),
            dims: dims.to_vec(),
            data_type,
            raw_data,
            ..Self::default()
        }
    }
}

impl NodeProto {
    /// The value of INT attribute `name`, if the node has it.
    pub fn attr_i(&self, name: &str) -> Option<i64> {
        self.attribute
            .iter()
            .find(|a| a.name == name)
            .and_then(|a| a.i)
    }
}

impl ValueInfoProto {
    /// A FLOAT tensor `name` without a shape (an output listed for its values only).
    pub fn float_unshaped(name: &str) -> Self {
        Self {
            name: name.into(),
            r#type: Some(TypeProto {
                value: Some(TypeValue::TensorType(TypeProtoTensor {
                    elem_type: data_type::FLOAT,
                    shape: None,
                })),
                denotation: String::new(),
            }),
            doc_string: String::new(),
        }
    }
}

/// A value's type. Only the tensor variant is declared: sequences, maps, optionals and sparse
/// tensors decode as `value: None`, which the importer reports as unsupported.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProto {
    /// The type.
    #[prost(oneof = "TypeValue", tags = "1")]
    pub value: Option<TypeValue>,
    /// Optional denotation, e.g. `IMAGE`.
    #[prost(string, tag = "6")]
    pub denotation: String,
}

/// `TypeProto.value`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum TypeValue {
    /// A dense tensor.
    #[prost(message, tag = "1")]
    TensorType(TypeProtoTensor),
}

/// `TypeProto.Tensor`: element type and (optional) shape.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TypeProtoTensor {
    /// Element type (see [`data_type`]).
    #[prost(int32, tag = "1")]
    pub elem_type: i32,
    /// Shape; absent means unknown rank.
    #[prost(message, optional, tag = "2")]
    pub shape: Option<TensorShapeProto>,
}

/// A shape: one entry per dimension.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TensorShapeProto {
    /// Dimensions, outermost first.
    #[prost(message, repeated, tag = "1")]
    pub dim: Vec<Dimension>,
}

/// One dimension: a number, a symbolic name, or nothing (unknown).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Dimension {
    /// The value.
    #[prost(oneof = "DimensionValue", tags = "1, 2")]
    pub value: Option<DimensionValue>,
    /// Optional denotation, e.g. `DATA_BATCH`.
    #[prost(string, tag = "3")]
    pub denotation: String,
}

/// `TensorShapeProto.Dimension.value`.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum DimensionValue {
    /// A fixed size.
    #[prost(int64, tag = "1")]
    DimValue(i64),
    /// A symbolic size, e.g. `N` or `batch_size`.
    #[prost(string, tag = "2")]
    DimParam(String),
}
