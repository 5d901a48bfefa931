//! TFLite import: reads a `.tflite` flatbuffer (subgraph 0) through the reader that planus generates
//! from TFLite's `schema.fbs` ([`schema`]; no hand-written parsing) and lowers every operator into the
//! graph IR the ONNX importer produces, so the same passes, lowering, planner and targets serve it.
//!
//! - **Layout.** TFLite's 4-D activations are NHWC already, Ember's layout: spatial ops are imported
//!   channels-last with OHWI weights and the graph is marked [`Graph::channels_last`], so the layout
//!   pass adds no transpose. Every tensor keeps TFLite's shape, inputs and outputs included.
//! - **Quantization.** An int8 tensor of the file stays an int8 tensor: an op reading one reads it
//!   through a Dequantize, and an op writing one writes through a Quantize, the QDQ form of the ONNX
//!   importer. The QDQ pass (`passes::qdq`) then fuses each Dequantize-op-Quantize into the int8 op of
//!   the TFLite int8 spec, which with `RequantRounding::Double` (TFLite's default arithmetic) gives
//!   TFLM's results bit for bit. Constant int8 and int32 tensors (weights, biases) become float
//!   constants that carry their [`Quant`], from which the QDQ pass recovers the file's own integers.
//!   FLOAT16 constants (TFLite's float16 quantization) are widened to float32 at conversion time.
//! - **Errors.** An operator outside the supported set, or one whose options Ember cannot run, is an
//!   error naming the operator index, its op and version, and nothing is written.
//!
//! The ops, with the options each takes, are in `ops/` (`ops/mod.rs` has the table).

mod builtin_names;
mod int8;
mod ops;
mod values;
mod versions;
#[allow(
    clippy::all,
    clippy::pedantic,
    missing_docs,
    unused_qualifications,
    dead_code,
    non_camel_case_types
)]
#[rustfmt::skip]
mod schema_generated;

use std::collections::HashMap;

use ember_core::ops::quant::dequantize::DequantizeParams;
use ember_core::ops::quant::quantize::{QuantizeParams, Rounding};
use half::f16;
use planus::ReadAsRoot;

use crate::ir::emit::add_node;
use crate::ir::quant::{Quant, QuantOp};
use crate::ir::{ConstData, DType, Graph, Op, TensorId};
use crate::onnx::ImportSummary;
use crate::{ConvertError, ConvertOptions};

pub use schema_generated::tflite as schema;
pub(crate) use values::ir_dtype;

use schema::{BuiltinOperator, TensorType};

/// True when `bytes` start like a TFLite flatbuffer (file identifier `TFL3` at offset 4).
pub fn is_tflite(bytes: &[u8]) -> bool {
    bytes.get(4..8) == Some(b"TFL3".as_slice())
}

/// Largest number of operators, tensors or buffers Ember reads from one subgraph (far above any
/// model a device runs; a hostile file cannot make the import loop for long).
const MAX_ITEMS: usize = 1 << 20;

/// The names of the model's inputs (subgraph 0), in order, read without importing anything.
pub fn graph_input_names(bytes: &[u8]) -> Result<Vec<String>, ConvertError> {
    let model = schema::ModelRef::read_as_root(bytes).map_err(decode)?;
    let sub = subgraph0(&model)?;
    let tensors = sub
        .tensors()
        .map_err(decode)?
        .ok_or_else(|| no("tensors"))?;
    let inputs = sub.inputs().map_err(decode)?.ok_or_else(|| no("inputs"))?;
    inputs
        .iter()
        .map(|i| {
            let t = tensors
                .get(index(i, tensors.len(), "input")?)
                .ok_or_else(|| no("tensors"))?
                .map_err(decode)?;
            Ok(t.name().map_err(decode)?.unwrap_or_default().to_string())
        })
        .collect()
}

/// Decodes `bytes` (a `.tflite` file) and imports subgraph 0. Notices go to `notices`.
pub fn import_summarized(
    bytes: &[u8],
    opts: &ConvertOptions,
    notices: &mut Vec<String>,
) -> Result<(Graph, ImportSummary), ConvertError> {
    if !opts.shapes.is_empty() || !opts.dims.is_empty() || !opts.dim_shapes.is_empty() {
        return Err(ConvertError::Model {
            reason: "a .tflite model has static input shapes; --shape and --dim apply to ONNX \
                     models only"
                .into(),
        });
    }
    let model = schema::ModelRef::read_as_root(bytes).map_err(decode)?;
    let version = model.version().map_err(decode)?;
    if version != 3 {
        return Err(ConvertError::TfliteDecode {
            reason: format!(
                "schema version {version}; Ember reads version 3 (every TFLite since 1.0)"
            ),
        });
    }
    let sub = subgraph0(&model)?;
    let subgraphs = model.subgraphs().map_err(decode)?.map_or(0, |s| s.len());
    if subgraphs > 1 {
        notices.push(format!(
            "the model has {subgraphs} subgraphs; Ember imports subgraph 0 (the main graph), and an \
             operator that calls another one (WHILE, IF, CALL_ONCE) is refused"
        ));
    }
    let mut imp = Importer::new(bytes, &model, &sub)?;
    imp.rounding = opts.rounding;
    let operators = sub.operators().map_err(decode)?;
    let count = operators.as_ref().map_or(0, |o| o.len());
    if count > MAX_ITEMS {
        return Err(no("a plausible operator count"));
    }
    let codes = model.operator_codes().map_err(decode)?;
    for (index, op) in operators.iter().flat_map(|o| o.iter()).enumerate() {
        let op = op.map_err(decode)?;
        let code_index = op.opcode_index().map_err(decode)? as usize;
        let code = codes
            .as_ref()
            .and_then(|c| c.get(code_index))
            .ok_or_else(|| ConvertError::TfliteDecode {
                reason: format!("operator {index} uses operator code {code_index}, which the model does not have"),
            })?
            .map_err(decode)?;
        let opcode = OpCode::read(&code)?;
        if let Some(max) = versions::max_version(opcode.builtin) {
            if opcode.version > max {
                let e = OpError(format!(
                    "version {} is newer than Ember reads (up to {max}): it adds a feature Ember \
                     does not run; see docs/tflite.md",
                    opcode.version
                ));
                return Err(e.at(index, &opcode));
            }
        }
        ops::import(&mut imp, &opcode, &op).map_err(|e| e.at(index, &opcode))?;
    }
    imp.finish(&sub)?;
    let summary = ImportSummary {
        onnx_nodes: count,
        folded: imp.folded,
        aliased: Vec::new(),
    };
    Ok((imp.graph, summary))
}

/// An operator code: the builtin op (the larger of the two code fields, as TFLite reads it) or a
/// custom op's name, and its version.
pub(crate) struct OpCode {
    pub(crate) builtin: BuiltinOperator,
    pub(crate) custom: Option<String>,
    pub(crate) version: i32,
}

impl OpCode {
    fn read(code: &schema::OperatorCodeRef<'_>) -> Result<Self, ConvertError> {
        let deprecated = code.deprecated_builtin_code().map_err(decode)?;
        let builtin = code
            .builtin_code()
            .map_err(|e| ConvertError::TfliteDecode {
                reason: format!("an operator code this schema does not know ({e})"),
            })?;
        // Files older than schema 3a only fill the deprecated (int8) field.
        let builtin = if (builtin as i32) < i32::from(deprecated) {
            BuiltinOperator::try_from(deprecated as i32).map_err(|_| {
                ConvertError::TfliteDecode {
                    reason: format!("unknown builtin operator code {deprecated}"),
                }
            })?
        } else {
            builtin
        };
        Ok(OpCode {
            builtin,
            custom: code.custom_code().map_err(decode)?.map(str::to_string),
            version: code.version().map_err(decode)?,
        })
    }

    /// `CONV_2D`, or a custom op's `CUSTOM "name"`.
    pub(crate) fn name(&self) -> String {
        match &self.custom {
            Some(c) if self.builtin == BuiltinOperator::Custom => format!("CUSTOM \"{c}\""),
            _ => builtin_names::builtin_name(self.builtin as i32).map_or_else(
                || format!("builtin {}", self.builtin as i32),
                str::to_string,
            ),
        }
    }
}

/// An error of one operator, before the operator's index and name are known to it.
pub(crate) struct OpError(pub(crate) String);

impl OpError {
    fn at(self, index: usize, code: &OpCode) -> ConvertError {
        ConvertError::TfliteOp {
            index,
            op: code.name(),
            version: code.version,
            reason: self.0,
        }
    }
}

impl From<String> for OpError {
    fn from(s: String) -> Self {
        OpError(s)
    }
}

impl From<planus::Error> for OpError {
    fn from(e: planus::Error) -> Self {
        OpError(format!("the operator's table does not decode: {e}"))
    }
}

fn decode(e: planus::Error) -> ConvertError {
    ConvertError::TfliteDecode {
        reason: e.to_string(),
    }
}

fn no(what: &str) -> ConvertError {
    ConvertError::TfliteDecode {
        reason: format!("subgraph 0 has no {what}"),
    }
}

fn index(i: i32, len: usize, what: &str) -> Result<usize, ConvertError> {
    usize::try_from(i)
        .ok()
        .filter(|&i| i < len)
        .ok_or_else(|| ConvertError::TfliteDecode {
            reason: format!("{what} tensor index {i} is outside the {len} tensors"),
        })
}

fn subgraph0<'a>(model: &schema::ModelRef<'a>) -> Result<schema::SubGraphRef<'a>, ConvertError> {
    model
        .subgraphs()
        .map_err(decode)?
        .ok_or_else(|| ConvertError::TfliteDecode {
            reason: "the model has no subgraphs".into(),
        })?
        .get(0)
        .ok_or_else(|| ConvertError::TfliteDecode {
            reason: "the model has no subgraphs".into(),
        })?
        .map_err(decode)
}

/// A tensor's quantization as the file gives it: scales, zero points, quantized dimension.
pub(crate) type FileQuant = (Vec<f32>, Vec<i64>, usize);

/// A tensor of the file, as the importer needs it.
pub(crate) struct FileTensor<'a> {
    pub(crate) name: String,
    pub(crate) shape: Vec<usize>,
    pub(crate) dtype: TensorType,
    /// Per-tensor or per-channel parameters (scales, zero points, quantized dimension), when the
    /// tensor is quantized.
    pub(crate) quant: Option<FileQuant>,
    /// The constant's bytes, when the tensor has a buffer.
    pub(crate) data: Option<&'a [u8]>,
    pub(crate) is_variable: bool,
}

/// The import's state: the graph being built, the file's tensors, and which IR tensor holds each.
pub(crate) struct Importer<'a> {
    pub(crate) graph: Graph,
    pub(crate) tensors: Vec<FileTensor<'a>>,
    /// The IR tensor holding each file tensor as the file stores it (int8 stays int8).
    values: HashMap<usize, TensorId>,
    /// The float view of an int8 tensor (its Dequantize), made once.
    floats: HashMap<usize, TensorId>,
    folded: Vec<String>,
    /// How int8 ops requantize (`ConvertOptions::rounding`), for the tables made here.
    pub(crate) rounding: crate::RequantRounding,
}

impl<'a> Importer<'a> {
    fn new(
        bytes: &'a [u8],
        model: &schema::ModelRef<'a>,
        sub: &schema::SubGraphRef<'a>,
    ) -> Result<Self, ConvertError> {
        let buffers = model.buffers().map_err(decode)?;
        let file_tensors = sub
            .tensors()
            .map_err(decode)?
            .ok_or_else(|| no("tensors"))?;
        if file_tensors.len() > MAX_ITEMS {
            return Err(no("a plausible tensor count"));
        }
        let mut tensors = Vec::with_capacity(file_tensors.len());
        for (i, t) in file_tensors.iter().enumerate() {
            let t = t.map_err(decode)?;
            let name = t.name().map_err(decode)?.unwrap_or_default();
            let name = if name.is_empty() {
                format!("tensor{i}")
            } else {
                name.to_string()
            };
            let tensor_err = |reason: String| ConvertError::Tensor {
                name: name.clone(),
                reason,
            };
            let shape = t
                .shape()
                .map_err(decode)?
                .map(|s| {
                    s.iter()
                        .map(|d| {
                            usize::try_from(d).map_err(|_| {
                                tensor_err(format!(
                                    "dim {d}: Ember plans static shapes (give the model a fixed \
                                     shape when exporting it)"
                                ))
                            })
                        })
                        .collect::<Result<Vec<_>, _>>()
                })
                .transpose()?
                .unwrap_or_default();
            let dtype = t
                .type_()
                .map_err(|e| tensor_err(format!("element type: {e}")))?;
            let quant = values::read_quant(&t, &shape).map_err(tensor_err)?;
            let buffer = t.buffer().map_err(decode)? as usize;
            let data = match buffer {
                0 => None,
                b => values::buffer_data(bytes, buffers.as_ref(), b).map_err(tensor_err)?,
            };
            if t.sparsity().map_err(decode)?.is_some() {
                return Err(tensor_err(
                    "sparse tensors are not supported; densify the model when exporting it".into(),
                ));
            }
            tensors.push(FileTensor {
                name,
                shape,
                dtype,
                quant,
                data,
                is_variable: t.is_variable().map_err(decode)?,
            });
        }
        let mut imp = Importer {
            graph: Graph::new(0),
            tensors,
            values: HashMap::new(),
            floats: HashMap::new(),
            folded: Vec::new(),
            rounding: crate::RequantRounding::Double,
        };
        imp.graph.channels_last = true;
        let inputs = sub.inputs().map_err(decode)?.ok_or_else(|| no("inputs"))?;
        for i in inputs.iter() {
            let i = index(i, imp.tensors.len(), "input")?;
            let t = &imp.tensors[i];
            let input_err = |reason: String| ConvertError::Input {
                name: t.name.clone(),
                reason,
            };
            let dtype = ir_dtype(t.dtype).map_err(|e| input_err(e.0))?;
            let (name, shape) = (t.name.clone(), t.shape.clone());
            let id = imp.graph.add_activation_of(&name, shape, dtype);
            if dtype == DType::I8 {
                let (scale, zero_point) = imp.int8_params(i).map_err(|e| ConvertError::Input {
                    name: name.clone(),
                    reason: e.0,
                })?;
                imp.graph.tensor_mut(id).quant = Some(Quant::per_tensor(scale, zero_point));
            }
            imp.graph.inputs.push(id);
            imp.values.insert(i, id);
        }
        Ok(imp)
    }

    fn finish(&mut self, sub: &schema::SubGraphRef<'_>) -> Result<(), ConvertError> {
        let outputs = sub
            .outputs()
            .map_err(decode)?
            .ok_or_else(|| no("outputs"))?;
        for o in outputs.iter() {
            let o = index(o, self.tensors.len(), "output")?;
            let id = self.value(o).map_err(|e| ConvertError::Output {
                name: self.tensors[o].name.clone(),
                reason: e.0,
            })?;
            self.graph.outputs.push(id);
        }
        Ok(())
    }

    /// The file tensor `i` of an operator's inputs, checked.
    pub(crate) fn file(&self, i: i32) -> Result<&FileTensor<'a>, OpError> {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.tensors.get(i))
            .ok_or_else(|| OpError(format!("tensor index {i} is outside the model's tensors")))
    }

    /// The bytes of constant tensor `i`, checked against its shape and element size.
    pub(crate) fn const_bytes(&self, i: usize) -> Result<Option<&'a [u8]>, OpError> {
        let t = &self.tensors[i];
        let Some(data) = t.data else {
            return Ok(None);
        };
        let elem = match t.dtype {
            TensorType::Float32 | TensorType::Int32 | TensorType::Uint32 => 4,
            TensorType::Float16 | TensorType::Int16 | TensorType::Uint16 => 2,
            TensorType::Int8 | TensorType::Uint8 | TensorType::Bool => 1,
            TensorType::Int64 | TensorType::Float64 | TensorType::Uint64 => 8,
            other => {
                return Err(OpError(format!(
                    "constant \"{}\" has element type {other:?}, which Ember does not read",
                    t.name
                )))
            }
        };
        let n = t
            .shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .and_then(|n| n.checked_mul(elem));
        if n != Some(data.len()) {
            return Err(OpError(format!(
                "constant \"{}\" of shape {:?} holds {} bytes, not {}",
                t.name,
                t.shape,
                data.len(),
                n.map_or("a representable number of".into(), |n| n.to_string())
            )));
        }
        Ok(Some(data))
    }

    /// The values of constant tensor `i` as integers (INT32/INT64/INT8/UINT8/BOOL): the file's, or
    /// what the import computed for it.
    pub(crate) fn const_ints(&self, i: i32, what: &str) -> Result<Vec<i64>, OpError> {
        let t = self.file(i)?;
        let i = i as usize;
        // A value an earlier operator computed at conversion time (SHAPE -> STRIDED_SLICE -> PACK).
        if let Some(ConstData::I64(v)) = self
            .values
            .get(&i)
            .and_then(|&id| self.graph.tensor(id).data.as_ref())
        {
            return Ok(v.clone());
        }
        let bytes = self.const_bytes(i)?.ok_or_else(|| {
            OpError(format!(
                "{what} (\"{}\") must be a constant: Ember plans static shapes",
                t.name
            ))
        })?;
        values::ints(bytes, t.dtype).ok_or_else(|| {
            OpError(format!(
                "{what} (\"{}\") has element type {:?}; an integer type is needed",
                t.name, t.dtype
            ))
        })
    }

    /// The `(scale, zero_point)` of int8 tensor `i`, which must be per tensor.
    pub(crate) fn int8_params(&self, i: usize) -> Result<(f32, i8), OpError> {
        let t = &self.tensors[i];
        match &t.quant {
            Some((s, z, _)) if s.len() == 1 => {
                let zp = i8::try_from(z[0]).map_err(|_| {
                    OpError(format!(
                        "tensor \"{}\": zero point {} is outside int8",
                        t.name, z[0]
                    ))
                })?;
                Ok((s[0], zp))
            }
            Some(_) => Err(OpError(format!(
                "int8 activation \"{}\" is quantized per channel; the TFLite int8 spec quantizes \
                 activations per tensor",
                t.name
            ))),
            None => Err(OpError(format!(
                "int8 tensor \"{}\" has no quantization parameters",
                t.name
            ))),
        }
    }

    /// The IR tensor holding file tensor `i` as stored (an activation, or a constant made on first
    /// use: float data as f32, integers as i64, int8 with quantization as the float values with
    /// their [`Quant`]).
    pub(crate) fn value(&mut self, i: usize) -> Result<TensorId, OpError> {
        if let Some(&id) = self.values.get(&i) {
            return Ok(id);
        }
        let id = self.constant(i)?;
        self.values.insert(i, id);
        Ok(id)
    }

    fn constant(&mut self, i: usize) -> Result<TensorId, OpError> {
        let bytes = self.const_bytes(i)?;
        let t = &self.tensors[i];
        let Some(bytes) = bytes else {
            let why = if t.is_variable {
                "is a variable (state kept between invocations), which Ember does not support"
            } else {
                "is read before any operator writes it"
            };
            return Err(OpError(format!("tensor \"{}\" {why}", t.name)));
        };
        let (name, shape) = (t.name.clone(), t.shape.clone());
        let quantized = matches!(
            t.dtype,
            TensorType::Int8 | TensorType::Uint8 | TensorType::Int32
        ) && t.quant.is_some();
        let id = match t.dtype {
            TensorType::Float32 => {
                let v = bytes
                    .chunks_exact(4)
                    .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                    .collect();
                self.graph.add_constant(&name, shape, ConstData::F32(v))
            }
            TensorType::Float16 => {
                let v = bytes
                    .chunks_exact(2)
                    .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
                    .collect();
                self.graph.add_constant(&name, shape, ConstData::F32(v))
            }
            _ if quantized => {
                let q = values::ints(bytes, t.dtype).unwrap_or_default();
                let (scales, zps, axis) = t.quant.clone().unwrap_or_default();
                let dtype = ir_dtype(t.dtype)?;
                let values = values::dequantized(&q, &shape, &scales, &zps, axis);
                let id = self
                    .graph
                    .add_constant(&name, shape, ConstData::F32(values));
                self.graph.tensor_mut(id).quant = Some(Quant {
                    zero_points: zps.iter().map(|&z| z as i32).collect(),
                    scales,
                    axis: if zps.len() == 1 { 0 } else { axis },
                    dtype,
                });
                id
            }
            other => {
                let v = values::ints(bytes, other).ok_or_else(|| {
                    OpError(format!(
                        "constant \"{name}\" has element type {other:?}, which Ember does not read"
                    ))
                })?;
                let dtype = ir_dtype(other)?;
                self.graph
                    .add_constant_of(&name, shape, ConstData::I64(v), dtype)
            }
        };
        Ok(id)
    }

    /// File tensor `i` as a float value: itself when float, its Dequantize (made once) when an int8
    /// activation, the dequantized constant when a quantized constant.
    pub(crate) fn float(&mut self, i: usize) -> Result<TensorId, OpError> {
        if let Some(&id) = self.floats.get(&i) {
            return Ok(id);
        }
        let id = self.value(i)?;
        let t = self.graph.tensor(id);
        let quantized = self.tensors[i].quant.is_some();
        if t.data.is_none() && quantized && t.dtype != DType::I8 {
            return Err(OpError(format!(
                "tensor \"{}\" is quantized {}; Ember runs int8 quantization (re-export the \
                 model with int8 activations)",
                self.tensors[i].name,
                t.dtype.name()
            )));
        }
        if t.dtype != DType::I8 || t.data.is_some() {
            return Ok(id);
        }
        let (scale, zero_point) = self.int8_params(i)?;
        let op = Op::Quant(QuantOp::Dequantize(DequantizeParams { scale, zero_point }));
        let name = format!("{}.dequantized", self.tensors[i].name);
        let f = self.emit(&name, &name, "DEQUANTIZE", op, vec![id])?;
        self.floats.insert(i, f);
        Ok(f)
    }

    /// Binds `value` (a float, or integer, result) as file tensor `o`: through a Quantize when the
    /// file stores `o` as int8. Checks the shape against the file's.
    pub(crate) fn bind(
        &mut self,
        node: &str,
        o: usize,
        value: TensorId,
    ) -> Result<TensorId, OpError> {
        let t = &self.tensors[o];
        let want = ir_dtype(t.dtype)?;
        let have = self.graph.tensor(value).dtype;
        if want != have && !(want == DType::I8 && have == DType::F32) {
            return Err(OpError(format!(
                "output \"{}\" is {:?} in the file; Ember computes {}",
                t.name,
                t.dtype,
                have.name()
            )));
        }
        let got = &self.graph.tensor(value).shape;
        if *got != t.shape && !(t.shape.is_empty() && got.iter().product::<usize>() == 1) {
            return Err(OpError(format!(
                "output \"{}\": Ember computes shape {got:?}, the file says {:?}",
                t.name, t.shape
            )));
        }
        let id = match t.dtype {
            TensorType::Int8 if self.graph.tensor(value).dtype == DType::F32 => {
                let (scale, zero_point) = self.int8_params(o)?;
                let p = QuantizeParams {
                    scale,
                    zero_point,
                    // TFLite's AffineQuantize rounds with std::round: halves away from zero.
                    rounding: Rounding::HalfAwayFromZero,
                };
                let name = t.name.clone();
                let q = self.emit(
                    node,
                    &name,
                    "QUANTIZE",
                    Op::Quant(QuantOp::Quantize(p)),
                    vec![value],
                )?;
                self.graph.tensor_mut(q).quant = Some(Quant::per_tensor(scale, zero_point));
                q
            }
            _ => {
                let name = self.tensors[o].name.clone();
                let g = &mut self.graph;
                if g.is_const(value) && !g.is_input(value) {
                    self.folded.push(format!("{node} ({name})"));
                } else if !g.is_input(value) && g.tensor(value).name != name {
                    // The file's name, which outputs are bound by (`ember run --output NAME=...`).
                    g.rename(value, &name);
                }
                value
            }
        };
        self.values.insert(o, id);
        Ok(id)
    }

    /// Adds a node (shape and dtype inferred, folded when its inputs are constants).
    pub(crate) fn emit(
        &mut self,
        node: &str,
        out: &str,
        source: &str,
        op: Op,
        inputs: Vec<TensorId>,
    ) -> Result<TensorId, OpError> {
        add_node(&mut self.graph, node, out, source, op, inputs).map_err(OpError)
    }
}
