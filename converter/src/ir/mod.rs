//! The converter's graph IR: tensors with static shapes and optional constant data, and nodes with a
//! rich op enum ([`Op`]), kept in execution (topological) order.
//!
//! Shapes are always static and always the shape of the bytes as they will be stored: ONNX's logical
//! shape until the layout pass (`passes::layout`) moves 4-D activations to NHWC, physical from then on.
//! [`Tensor::layout`] records which of the two a tensor holds. Every node has exactly one output,
//! like every op of the blob. [`Graph::check`] verifies the invariants after each pass.

mod check;
pub mod control;
pub mod emit;
pub mod eval;
pub mod op;
pub mod quant;
pub mod shape;

use std::collections::{HashMap, HashSet};

pub use op::{Op, Pool2d, SpatialLayout};

/// Index of a tensor in [`Graph::tensors`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TensorId(pub usize);

/// How a tensor's stored dims relate to ONNX's logical dims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TensorLayout {
    /// As ONNX describes it (NCHW for 4-D activations).
    Onnx,
    /// A 4-D tensor whose logical NCHW dims are stored as NHWC (`[0, 2, 3, 1]` of the logical dims).
    Nhwc,
}

/// Element type of an IR tensor: the blob's dtypes. Constants keep their values in [`ConstData`]
/// (f32, or i64 for every integer and bool type) and their dtype here; lowering writes them in it.
pub use ember_core::DType;

/// Constant data, row-major.
#[derive(Clone, Debug, PartialEq)]
pub enum ConstData {
    /// f32 elements.
    F32(Vec<f32>),
    /// i64 elements (INT32 initializers are widened to this).
    I64(Vec<i64>),
}

impl ConstData {
    /// The dtype this data is held in (F32 or I64), which is the constant's dtype unless the tensor
    /// says otherwise.
    pub fn dtype(&self) -> DType {
        match self {
            ConstData::F32(_) => DType::F32,
            ConstData::I64(_) => DType::I64,
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            ConstData::F32(v) => v.len(),
            ConstData::I64(v) => v.len(),
        }
    }

    /// True when there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A value of the graph.
#[derive(Clone, Debug)]
pub struct Tensor {
    /// Unique name (the ONNX value name, or a derived one for tensors the converter adds).
    pub name: String,
    /// Stored dims, outermost first.
    pub shape: Vec<usize>,
    /// Element type.
    pub dtype: DType,
    /// `Some` for constants (initializers, `Constant` nodes, folded values).
    pub data: Option<ConstData>,
    /// How `shape` relates to ONNX's logical shape.
    pub layout: TensorLayout,
    /// Quantization: of an int8 activation (per tensor), or, on a FLOAT constant, the int8 values and
    /// scales it was dequantized from (see [`quant::Quant`]).
    pub quant: Option<quant::Quant>,
}

/// One op invocation with a single output.
#[derive(Clone, Debug)]
pub struct Node {
    /// Name for reports and the blob's names table: the ONNX node name, or derived from it.
    pub name: String,
    /// The ONNX op type it came from (for error messages).
    pub onnx_op: String,
    /// What it computes.
    pub op: Op,
    /// Inputs, in the op's order.
    pub inputs: Vec<TensorId>,
    /// Output.
    pub output: TensorId,
}

/// A graph with static shapes, nodes in execution order.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// Every tensor, including unused ones (lowering keeps only the referenced ones).
    pub tensors: Vec<Tensor>,
    /// Nodes in execution order.
    pub nodes: Vec<Node>,
    /// Graph inputs, in ONNX order.
    pub inputs: Vec<TensorId>,
    /// Graph outputs, in ONNX order.
    pub outputs: Vec<TensorId>,
    /// Values kept as tensors of their own for a caller to observe (`ConvertOptions::observe`): the
    /// passes treat them as they treat outputs ([`Graph::is_kept`]), but they are not graph outputs.
    pub observed: Vec<TensorId>,
    /// Default-domain opset of the source model (for error messages).
    pub opset: i64,
    /// The importer wrote every spatial op channels-last with the tensors' shapes as stored (a
    /// TFLite model): the layout pass has nothing to move.
    pub channels_last: bool,
    names: HashSet<String>,
}

impl Graph {
    /// An empty graph for a model of this opset.
    pub fn new(opset: i64) -> Self {
        Graph {
            opset,
            ..Graph::default()
        }
    }

    /// The tensor with this id.
    pub fn tensor(&self, id: TensorId) -> &Tensor {
        &self.tensors[id.0]
    }

    /// The tensor with this id, writable.
    pub fn tensor_mut(&mut self, id: TensorId) -> &mut Tensor {
        &mut self.tensors[id.0]
    }

    /// A name not used by any tensor yet: `base`, or `base.2`, `base.3`, ...
    pub fn fresh_name(&self, base: &str) -> String {
        if !self.names.contains(base) {
            return base.to_string();
        }
        (2..)
            .map(|i| format!("{base}.{i}"))
            .find(|n| !self.names.contains(n))
            // The range is unbounded and the set finite, so some name is free.
            .unwrap_or_default()
    }

    /// Adds a tensor, renaming it if its name is taken.
    pub fn add_tensor(&mut self, mut t: Tensor) -> TensorId {
        t.name = self.fresh_name(&t.name);
        self.names.insert(t.name.clone());
        self.tensors.push(t);
        TensorId(self.tensors.len() - 1)
    }

    /// Adds a runtime (non-constant) f32 tensor in ONNX layout.
    pub fn add_activation(&mut self, name: &str, shape: Vec<usize>) -> TensorId {
        self.add_activation_of(name, shape, DType::F32)
    }

    /// Adds a runtime (non-constant) tensor of `dtype` in ONNX layout.
    pub fn add_activation_of(&mut self, name: &str, shape: Vec<usize>, dtype: DType) -> TensorId {
        self.add_tensor(Tensor {
            name: name.to_string(),
            shape,
            dtype,
            data: None,
            layout: TensorLayout::Onnx,
            quant: None,
        })
    }

    /// Adds a constant in ONNX layout, of its data's dtype (F32 or I64).
    pub fn add_constant(&mut self, name: &str, shape: Vec<usize>, data: ConstData) -> TensorId {
        let dtype = data.dtype();
        self.add_constant_of(name, shape, data, dtype)
    }

    /// Adds a constant in ONNX layout whose dtype is `dtype` (values held in `data`).
    pub fn add_constant_of(
        &mut self,
        name: &str,
        shape: Vec<usize>,
        data: ConstData,
        dtype: DType,
    ) -> TensorId {
        self.add_tensor(Tensor {
            name: name.to_string(),
            shape,
            dtype,
            data: Some(data),
            layout: TensorLayout::Onnx,
            quant: None,
        })
    }

    /// Swaps the names of two tensors (used when a new tensor takes over a graph output's name).
    pub fn swap_names(&mut self, a: TensorId, b: TensorId) {
        let na = std::mem::take(&mut self.tensors[a.0].name);
        let nb = std::mem::replace(&mut self.tensors[b.0].name, na);
        self.tensors[a.0].name = nb;
    }

    /// Renames a tensor to a fresh name derived from `base`.
    pub fn rename(&mut self, id: TensorId, base: &str) {
        let name = self.fresh_name(base);
        self.names.insert(name.clone());
        self.tensors[id.0].name = name;
    }

    /// The f32 data of a constant, if `id` is an f32 constant.
    pub fn const_f32(&self, id: TensorId) -> Option<&[f32]> {
        match &self.tensor(id).data {
            Some(ConstData::F32(v)) => Some(v),
            _ => None,
        }
    }

    /// True if `id` is a constant.
    pub fn is_const(&self, id: TensorId) -> bool {
        self.tensor(id).data.is_some()
    }

    /// True if `id` is a graph input.
    pub fn is_input(&self, id: TensorId) -> bool {
        self.inputs.contains(&id)
    }

    /// True if `id` is a graph output.
    pub fn is_output(&self, id: TensorId) -> bool {
        self.outputs.contains(&id)
    }

    /// True if `id` must stay a tensor of its own: a graph output, or a value kept for observation.
    /// Passes fuse or fold away only values that are not.
    pub fn is_kept(&self, id: TensorId) -> bool {
        self.is_output(id) || self.observed.contains(&id)
    }

    /// Producing node index of every node output.
    pub fn producers(&self) -> HashMap<TensorId, usize> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.output, i))
            .collect()
    }

    /// Number of node inputs reading each tensor.
    pub fn use_counts(&self) -> HashMap<TensorId, usize> {
        let mut counts = HashMap::new();
        for &i in self.nodes.iter().flat_map(|n| &n.inputs) {
            *counts.entry(i).or_insert(0) += 1;
        }
        counts
    }

    /// Index of the node producing `id`, if any.
    pub fn producer(&self, id: TensorId) -> Option<usize> {
        self.nodes.iter().position(|n| n.output == id)
    }

    /// Number of node inputs reading `id` (a node reading it twice counts twice).
    pub fn use_count(&self, id: TensorId) -> usize {
        self.nodes
            .iter()
            .map(|n| n.inputs.iter().filter(|&&i| i == id).count())
            .sum()
    }

    /// Makes every node input (not graph outputs) that reads `old` read `new` instead.
    pub fn replace_node_inputs(&mut self, old: TensorId, new: TensorId) {
        for n in &mut self.nodes {
            for i in &mut n.inputs {
                if *i == old {
                    *i = new;
                }
            }
        }
    }
}
