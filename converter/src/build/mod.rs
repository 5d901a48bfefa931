//! The model builder: an architecture's forward pass written in Rust, its weights taken from a
//! checkpoint ([`crate::weights`]) by name, producing the IR the ONNX importer produces. A user who
//! trained in PyTorch (or Burn) without exporting ONNX writes the forward pass once; conversion then
//! runs the same passes, quantization, lowering and planning as for ONNX ([`crate::convert_built`]).
//!
//! Each layer is named; a layer with weights reads `<name>.weight` (and `<name>.bias`, and a batch
//! norm's `running_mean`/`running_var`), PyTorch's `state_dict` names and layouts (a Linear weight is
//! `[out, in]`, a Conv2d weight `[out, in / groups, kh, kw]`). Names meet the checkpoint's through the
//! binding rules ([`crate::bind::names`]): exact, then up to the wrapper prefixes (`model.`, `module.`,
//! `_orig_mod.`), then through `--rename` rules. A missing weight, one of the wrong shape or of an
//! element type that is not float is an error naming the layer and the tensor. Ops without weights
//! (activations, pooling, reshapes, attention's matmuls and softmax) are named too, for reports.
//! Values are computed at conversion time when their inputs are constants (a slice of a position
//! table, a sum of constant rows), as in the ONNX importer.
//!
//! ```no_run
//! use ember_convert::build::{Builder, Conv2d};
//! use ember_convert::weights::Checkpoint;
//! use ember_convert::{convert_built, ConvertOptions, WeightStorage};
//! # fn main() -> Result<(), ember_convert::ConvertError> {
//! let bytes = std::fs::read("model.safetensors").unwrap();
//! let ckpt = Checkpoint::parse(&bytes)?;
//! let mut b = Builder::new(&ckpt);
//! let x = b.input("input", &[1, 1, 8, 8], ember_convert::ir::DType::F32);
//! let x = b.conv2d("conv1", x, Conv2d { padding: [1, 1], ..Conv2d::default() })?;
//! let x = b.relu("relu1", x)?;
//! let x = b.flatten("flatten", x, 1)?;
//! let y = b.linear("fc", x)?;
//! b.output("logits", y);
//! let out = convert_built(b.finish()?, &ConvertOptions::default(), WeightStorage::Float)?;
//! # let _ = out;
//! # Ok(())
//! # }
//! ```

pub mod bert;
pub mod hf;

use std::collections::{BTreeSet, HashMap};

use ember_core::ops::math::activation::Activation;
use ember_core::ops::math::binary::BinaryOp;
use ember_core::ops::math::unary::UnaryOp;
use ember_core::ops::nn::reduce::ReduceOp;

use crate::bind::{names, BindOptions, BindReport, Binding, Match};
use crate::ir::op::Slice;
use crate::ir::{ConstData, DType, Graph, Op, Pool2d, SpatialLayout, TensorId};
use crate::weights::Checkpoint;
use crate::ConvertError;

/// A value of the graph being built (an input, a weight, a layer's output).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Value(TensorId);

/// A 2-D convolution's hyper-parameters, as PyTorch's `nn.Conv2d` takes them (the channel counts and
/// kernel size come from the weight).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conv2d {
    /// `[h, w]`.
    pub stride: [usize; 2],
    /// Zeros added on both sides, `[h, w]`.
    pub padding: [usize; 2],
    /// `[h, w]`.
    pub dilation: [usize; 2],
    /// Groups (`in_channels` for a depthwise convolution).
    pub groups: usize,
}

impl Default for Conv2d {
    fn default() -> Self {
        Conv2d {
            stride: [1, 1],
            padding: [0, 0],
            dilation: [1, 1],
            groups: 1,
        }
    }
}

/// A built graph, ready for [`crate::convert_built`].
#[derive(Clone, Debug)]
pub struct Built {
    /// The graph.
    pub graph: Graph,
    /// Which checkpoint tensor each weight came from, and the tensors nothing used.
    pub report: BindReport,
    /// Things the user should know (unused checkpoint tensors, reshaped weights, ...).
    pub notices: Vec<String>,
    /// Hash of the weights read (names, shapes and bytes), recorded in the blob as its source.
    pub source_hash: u64,
}

/// Builds a graph whose weights come from a checkpoint.
pub struct Builder<'c, 'a> {
    ckpt: &'c Checkpoint<'a>,
    index: names::Index<'c>,
    strict: bool,
    graph: Graph,
    /// Weights read so far, by the name asked for (a weight used twice is one constant).
    weights: HashMap<String, TensorId>,
    used: BTreeSet<&'c str>,
    report: BindReport,
    hash: u64,
}

/// An error about `layer`.
fn err(layer: &str, reason: impl Into<String>) -> ConvertError {
    ConvertError::Build {
        layer: layer.to_string(),
        reason: reason.into(),
    }
}

/// `[a, b, c]`.
pub(crate) fn dims(shape: &[usize]) -> String {
    format!("{shape:?}")
}

/// Folds `bytes` into an FNV-1a style hash, eight bytes at a time (a checkpoint is tens of MB).
fn mix(mut h: u64, bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let v = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        h = (h ^ v).wrapping_mul(0x0100_0000_01b3);
    }
    for &b in words.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl<'c, 'a> Builder<'c, 'a> {
    /// A builder reading weights from `ckpt` with the default naming rules.
    pub fn new(ckpt: &'c Checkpoint<'a>) -> Self {
        Self::with_options(ckpt, &BindOptions::default())
    }

    /// A builder reading weights from `ckpt` through `opts.renames`; with `opts.strict`, checkpoint
    /// tensors no layer reads are an error at [`Builder::finish`].
    pub fn with_options(ckpt: &'c Checkpoint<'a>, opts: &BindOptions) -> Self {
        Builder {
            ckpt,
            index: names::Index::new(ckpt.names(), &opts.renames),
            strict: opts.strict,
            graph: Graph::new(crate::onnx::MAX_TESTED_OPSET),
            weights: HashMap::new(),
            used: BTreeSet::new(),
            report: BindReport::default(),
            hash: 0xcbf2_9ce4_8422_2325,
        }
    }

    /// The dims of `v`.
    pub fn shape(&self, v: Value) -> &[usize] {
        &self.graph.tensor(v.0).shape
    }

    /// The element type of `v`.
    pub fn dtype(&self, v: Value) -> DType {
        self.graph.tensor(v.0).dtype
    }

    /// The graph so far.
    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    /// Adds a graph input.
    pub fn input(&mut self, name: &str, shape: &[usize], dtype: DType) -> Value {
        let id = self.graph.add_activation_of(name, shape.to_vec(), dtype);
        self.graph.inputs.push(id);
        Value(id)
    }

    /// Makes `v` a graph output named `name`.
    pub fn output(&mut self, name: &str, v: Value) {
        if self.graph.tensor(v.0).name != name {
            self.graph.rename(v.0, name);
        }
        self.graph.outputs.push(v.0);
    }

    /// A constant of these f32 values (`values.len()` must be the product of `shape`).
    pub fn constant(
        &mut self,
        name: &str,
        shape: &[usize],
        values: Vec<f32>,
    ) -> Result<Value, ConvertError> {
        if values.len() != shape.iter().product::<usize>() {
            return Err(err(
                name,
                format!(
                    "{} values for a constant of shape {}",
                    values.len(),
                    dims(shape)
                ),
            ));
        }
        let id = self
            .graph
            .add_constant(name, shape.to_vec(), ConstData::F32(values));
        Ok(Value(id))
    }

    /// A one-element f32 constant (broadcasts against anything).
    pub fn scalar(&mut self, name: &str, v: f32) -> Value {
        Value(
            self.graph
                .add_constant(name, vec![1], ConstData::F32(vec![v])),
        )
    }

    /// Adds node `layer` (of builder kind `kind`) computing `op`.
    fn node(
        &mut self,
        layer: &str,
        kind: &str,
        op: Op,
        inputs: &[Value],
    ) -> Result<Value, ConvertError> {
        let ids = inputs.iter().map(|v| v.0).collect();
        crate::ir::emit::add_node(&mut self.graph, layer, layer, kind, op, ids)
            .map(Value)
            .map_err(|e| err(layer, format!("{kind}: {e}")))
    }

    /// The weight `name` of `layer` as an f32 constant, checked against `want` (`None` for any
    /// shape); `Ok(None)` when it is absent and not `required`.
    fn tensor(
        &mut self,
        layer: &str,
        name: &str,
        want: Option<&[usize]>,
        required: bool,
    ) -> Result<Option<Value>, ConvertError> {
        if let Some(&id) = self.weights.get(name) {
            let have = &self.graph.tensor(id).shape;
            if want.is_some_and(|w| w != have.as_slice()) {
                return Err(err(
                    layer,
                    format!(
                        "weight \"{name}\" {} is used again where {} is needed",
                        dims(have),
                        dims(want.unwrap_or_default())
                    ),
                ));
            }
            return Ok(Some(Value(id)));
        }
        let found = self.index.find(name).map_err(|e| err(layer, e))?;
        let Some((ckpt_name, how)) = found else {
            if !required {
                return Ok(None);
            }
            let pool: Vec<&str> = self
                .ckpt
                .names()
                .filter(|n| !self.index.is_dropped(n))
                .collect();
            let near = names::closest(name, &pool);
            return Err(err(
                layer,
                format!(
                    "weight \"{name}\"{} is not in the checkpoint{}",
                    want.map(|w| format!(" {}", dims(w))).unwrap_or_default(),
                    if near.is_empty() {
                        String::new()
                    } else {
                        format!(" (closest names there: {})", names::quoted(&near))
                    }
                ),
            ));
        };
        // The index holds the checkpoint's names.
        let Some(t) = self.ckpt.get(ckpt_name) else {
            return Err(ConvertError::internal(format!(
                "checkpoint tensor {ckpt_name} vanished"
            )));
        };
        let head = format!(
            "tensor \"{ckpt_name}\" {} {} for weight \"{name}\"",
            dims(t.shape()),
            t.dtype()
        );
        let shape = match want {
            None => t.shape().to_vec(),
            Some(w) if w == t.shape() => w.to_vec(),
            Some(w) => {
                let squeezed =
                    |s: &[usize]| -> Vec<usize> { s.iter().copied().filter(|&d| d != 1).collect() };
                if squeezed(w) != squeezed(t.shape()) {
                    return Err(err(layer, format!("{head}: the layer needs {}", dims(w))));
                }
                w.to_vec()
            }
        };
        if !t.dtype().is_float() {
            return Err(err(
                layer,
                format!("{head}: its element type is not a float type, which weights need"),
            ));
        }
        let values = t.to_f32().map_err(|e| err(layer, format!("{head}: {e}")))?;
        self.hash = mix(self.hash, name.as_bytes());
        self.hash = mix(self.hash, t.bytes());
        self.used.insert(ckpt_name);
        self.report.bound.push(Binding {
            initializer: name.to_string(),
            shape: shape.clone(),
            onnx_type: "FLOAT",
            tensor: ckpt_name.to_string(),
            tensor_shape: t.shape().to_vec(),
            dtype: t.dtype(),
            how,
        });
        let id = self.graph.add_constant(name, shape, ConstData::F32(values));
        self.weights.insert(name.to_string(), id);
        Ok(Some(Value(id)))
    }

    /// The checkpoint tensor `name` as an f32 constant of any shape (for weights no layer here reads,
    /// e.g. a position table), read by the naming rules; an error naming `layer` when absent.
    pub fn param(&mut self, layer: &str, name: &str) -> Result<Value, ConvertError> {
        self.tensor(layer, name, None, true)
            .and_then(|v| required(layer, name, v))
    }

    /// [`Builder::param`] with the shape it must have (or have up to dims of size 1).
    pub fn param_shaped(
        &mut self,
        layer: &str,
        name: &str,
        shape: &[usize],
    ) -> Result<Value, ConvertError> {
        self.tensor(layer, name, Some(shape), true)
            .and_then(|v| required(layer, name, v))
    }

    /// `x W^T + b`, PyTorch's `nn.Linear`: `<name>.weight` `[out, in]` (`in` the last dim of `x`),
    /// `<name>.bias` `[out]` if the checkpoint has it.
    pub fn linear(&mut self, name: &str, x: Value) -> Result<Value, ConvertError> {
        let inner = self.shape(x).last().copied().unwrap_or(0);
        let w = self.param(name, &format!("{name}.weight"))?;
        let ws = self.shape(w).to_vec();
        if ws.len() != 2 || ws[1] != inner {
            return Err(err(
                name,
                format!(
                    "weight \"{name}.weight\" {} does not take an input of {} features (a Linear \
                     weight is [out, in])",
                    dims(&ws),
                    inner
                ),
            ));
        }
        let mut inputs = vec![x, w];
        inputs.extend(self.tensor(name, &format!("{name}.bias"), Some(&[ws[0]]), false)?);
        let act = Activation::None;
        self.node(name, "linear", Op::FullyConnected { act }, &inputs)
    }

    /// PyTorch's `nn.Conv2d` on an NCHW input: `<name>.weight` `[out, in / groups, kh, kw]`,
    /// `<name>.bias` `[out]` if the checkpoint has it.
    pub fn conv2d(&mut self, name: &str, x: Value, c: Conv2d) -> Result<Value, ConvertError> {
        let xs = self.shape(x).to_vec();
        let w = self.param(name, &format!("{name}.weight"))?;
        let ws = self.shape(w).to_vec();
        let (Some(&ch), true) = (xs.get(1), xs.len() == 4) else {
            return Err(err(name, format!("input {} is not NCHW", dims(&xs))));
        };
        if ws.len() != 4 || c.groups == 0 || ws[1] * c.groups != ch {
            return Err(err(
                name,
                format!(
                    "weight \"{name}.weight\" {} does not take an input of {ch} channels in {} \
                     group(s) (a Conv2d weight is [out, in / groups, kh, kw])",
                    dims(&ws),
                    c.groups
                ),
            ));
        }
        let mut inputs = vec![x, w];
        inputs.extend(self.tensor(name, &format!("{name}.bias"), Some(&[ws[0]]), false)?);
        let [ph, pw] = c.padding;
        let op = Op::Conv2d(crate::ir::op::Conv2d {
            strides: c.stride,
            dilations: c.dilation,
            pads: [ph, pw, ph, pw],
            groups: c.groups,
            act: Activation::None,
            layout: SpatialLayout::Nchw,
        });
        self.node(name, "conv2d", op, &inputs)
    }

    /// `nn.LayerNorm` over the last dim: `<name>.weight` and `<name>.bias` (if present) of that size.
    pub fn layer_norm(&mut self, name: &str, x: Value, eps: f32) -> Result<Value, ConvertError> {
        let xs = self.shape(x).to_vec();
        let Some(&d) = xs.last() else {
            return Err(err(name, "the input has rank 0"));
        };
        let w = self.param_shaped(name, &format!("{name}.weight"), &[d])?;
        let mut inputs = vec![x, w];
        inputs.extend(self.tensor(name, &format!("{name}.bias"), Some(&[d]), false)?);
        let op = crate::onnx::ops::nn::layer_norm::layer_norm(xs.len() - 1, eps)
            .map_err(|e| err(name, e))?;
        self.node(name, "layer_norm", op, &inputs)
    }

    /// `nn.BatchNorm2d` (or 1d) in inference: `<name>.weight`, `.bias`, `.running_mean`,
    /// `.running_var`, each `[C]` with `C` dim 1 of `x`.
    pub fn batch_norm(&mut self, name: &str, x: Value, eps: f32) -> Result<Value, ConvertError> {
        let Some(&c) = self.shape(x).get(1) else {
            return Err(err(name, "the input has no channel dim (dim 1)"));
        };
        let mut inputs = vec![x];
        for part in ["weight", "bias", "running_mean", "running_var"] {
            inputs.push(self.param_shaped(name, &format!("{name}.{part}"), &[c])?);
        }
        self.node(name, "batch_norm", Op::BatchNorm { epsilon: eps }, &inputs)
    }

    /// `nn.Embedding`: rows of `<name>.weight` `[rows, dim]` picked by `ids` (int32 or int64, any
    /// shape), computed at run time; output `ids.dims ++ [dim]`.
    pub fn embedding(&mut self, name: &str, ids: Value) -> Result<Value, ConvertError> {
        let table = self.param(name, &format!("{name}.weight"))?;
        self.node(name, "embedding", Op::Embedding, &[table, ids])
    }

    /// An element-wise function.
    pub fn unary(&mut self, name: &str, x: Value, op: UnaryOp) -> Result<Value, ConvertError> {
        self.node(name, "unary", Op::Unary(op), &[x])
    }

    /// `max(x, 0)`.
    pub fn relu(&mut self, name: &str, x: Value) -> Result<Value, ConvertError> {
        self.unary(name, x, UnaryOp::Relu)
    }

    /// GELU, exact (erf) form: `nn.GELU()`, Hugging Face's `"gelu"`.
    pub fn gelu(&mut self, name: &str, x: Value) -> Result<Value, ConvertError> {
        self.unary(name, x, UnaryOp::Gelu)
    }

    /// `tanh(x)`.
    pub fn tanh(&mut self, name: &str, x: Value) -> Result<Value, ConvertError> {
        self.unary(name, x, UnaryOp::Tanh)
    }

    /// `1 / (1 + exp(-x))`.
    pub fn sigmoid(&mut self, name: &str, x: Value) -> Result<Value, ConvertError> {
        self.unary(name, x, UnaryOp::Sigmoid)
    }

    /// A broadcasting element-wise op (numpy rules).
    pub fn binary(
        &mut self,
        name: &str,
        a: Value,
        b: Value,
        op: BinaryOp,
    ) -> Result<Value, ConvertError> {
        let act = Activation::None;
        self.node(name, "binary", Op::Binary { op, act }, &[a, b])
    }

    /// `a + b`.
    pub fn add(&mut self, name: &str, a: Value, b: Value) -> Result<Value, ConvertError> {
        self.binary(name, a, b, BinaryOp::Add)
    }

    /// `a - b`.
    pub fn sub(&mut self, name: &str, a: Value, b: Value) -> Result<Value, ConvertError> {
        self.binary(name, a, b, BinaryOp::Sub)
    }

    /// `a * b`.
    pub fn mul(&mut self, name: &str, a: Value, b: Value) -> Result<Value, ConvertError> {
        self.binary(name, a, b, BinaryOp::Mul)
    }

    /// `a / b`.
    pub fn div(&mut self, name: &str, a: Value, b: Value) -> Result<Value, ConvertError> {
        self.binary(name, a, b, BinaryOp::Div)
    }

    /// The larger of `a` and `b`.
    pub fn max(&mut self, name: &str, a: Value, b: Value) -> Result<Value, ConvertError> {
        self.binary(name, a, b, BinaryOp::Max)
    }

    /// Batched matrix product (numpy `matmul` of operands of rank >= 2).
    pub fn matmul(&mut self, name: &str, a: Value, b: Value) -> Result<Value, ConvertError> {
        self.node(name, "matmul", Op::MatMul, &[a, b])
    }

    /// The axis `axis` of `x` (negative counts from the end).
    fn axis(&self, layer: &str, x: Value, axis: isize) -> Result<usize, ConvertError> {
        let rank = self.shape(x).len();
        crate::ir::shape::resolve_axis(axis as i64, rank).map_err(|e| err(layer, e))
    }

    /// Softmax along `axis`.
    pub fn softmax(&mut self, name: &str, x: Value, axis: isize) -> Result<Value, ConvertError> {
        let axis = self.axis(name, x, axis)?;
        self.node(name, "softmax", Op::Softmax { axis }, &[x])
    }

    /// The same elements in another shape.
    pub fn reshape(
        &mut self,
        name: &str,
        x: Value,
        shape: &[usize],
    ) -> Result<Value, ConvertError> {
        let op = Op::Reshape {
            shape: shape.to_vec(),
        };
        self.node(name, "reshape", op, &[x])
    }

    /// Dims from `start` on merged into one (`torch.flatten(x, start)`).
    pub fn flatten(&mut self, name: &str, x: Value, start: usize) -> Result<Value, ConvertError> {
        let xs = self.shape(x);
        let start = start.min(xs.len());
        let mut shape = xs[..start].to_vec();
        shape.push(xs[start..].iter().product());
        self.reshape(name, x, &shape)
    }

    /// Output dim `i` is input dim `perm[i]` (`x.permute(perm)`).
    pub fn transpose(
        &mut self,
        name: &str,
        x: Value,
        perm: &[usize],
    ) -> Result<Value, ConvertError> {
        let op = Op::Transpose {
            perm: perm.to_vec(),
        };
        self.node(name, "transpose", op, &[x])
    }

    /// Elements `start..end` of axis `axis` (`x.narrow`, `x[:, start:end]`).
    pub fn slice(
        &mut self,
        name: &str,
        x: Value,
        axis: isize,
        range: std::ops::Range<usize>,
    ) -> Result<Value, ConvertError> {
        let axis = self.axis(name, x, axis)?;
        let xs = self.shape(x).to_vec();
        if range.start >= range.end || range.end > xs[axis] {
            return Err(err(
                name,
                format!("slice {range:?} of axis {axis} of {}", dims(&xs)),
            ));
        }
        let mut start = vec![0; xs.len()];
        start[axis] = range.start;
        let mut size = xs.clone();
        size[axis] = range.end - range.start;
        let op = Op::Slice(Slice {
            start,
            step: vec![1; xs.len()],
            size,
        });
        self.node(name, "slice", op, &[x])
    }

    /// A reduction over `axes` (negative count from the end).
    pub fn reduce(
        &mut self,
        name: &str,
        x: Value,
        op: ReduceOp,
        axes: &[isize],
        keepdims: bool,
    ) -> Result<Value, ConvertError> {
        let mut resolved = axes
            .iter()
            .map(|&a| self.axis(name, x, a))
            .collect::<Result<Vec<_>, _>>()?;
        resolved.sort_unstable();
        resolved.dedup();
        let op = Op::Reduce {
            op,
            axes: resolved,
            keepdims,
        };
        self.node(name, "reduce", op, &[x])
    }

    /// The mean over `axes`.
    pub fn mean(
        &mut self,
        name: &str,
        x: Value,
        axes: &[isize],
        keepdims: bool,
    ) -> Result<Value, ConvertError> {
        self.reduce(name, x, ReduceOp::Mean, axes, keepdims)
    }

    /// The sum over `axes`.
    pub fn sum(
        &mut self,
        name: &str,
        x: Value,
        axes: &[isize],
        keepdims: bool,
    ) -> Result<Value, ConvertError> {
        self.reduce(name, x, ReduceOp::Sum, axes, keepdims)
    }

    /// `xs` joined along `axis`.
    pub fn concat(&mut self, name: &str, xs: &[Value], axis: isize) -> Result<Value, ConvertError> {
        let Some(&first) = xs.first() else {
            return Err(err(name, "concat of nothing"));
        };
        let axis = self.axis(name, first, axis)?;
        self.node(name, "concat", Op::Concat { axis }, xs)
    }

    /// Element-wise conversion to `to`.
    pub fn cast(&mut self, name: &str, x: Value, to: DType) -> Result<Value, ConvertError> {
        self.node(name, "cast", Op::Cast { to }, &[x])
    }

    fn pool(
        &mut self,
        name: &str,
        x: Value,
        kernel: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
        max: bool,
    ) -> Result<Value, ConvertError> {
        let [ph, pw] = padding;
        let p = Pool2d {
            kernel,
            strides: stride,
            pads: [ph, pw, ph, pw],
            count_include_pad: true,
            layout: SpatialLayout::Nchw,
        };
        let (kind, op) = if max {
            ("max_pool2d", Op::MaxPool(p))
        } else {
            ("avg_pool2d", Op::AvgPool(p))
        };
        self.node(name, kind, op, &[x])
    }

    /// `nn.MaxPool2d(kernel, stride, padding)` on NCHW.
    pub fn max_pool2d(
        &mut self,
        name: &str,
        x: Value,
        kernel: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
    ) -> Result<Value, ConvertError> {
        self.pool(name, x, kernel, stride, padding, true)
    }

    /// `nn.AvgPool2d(kernel, stride, padding)` on NCHW (padding counted, PyTorch's default).
    pub fn avg_pool2d(
        &mut self,
        name: &str,
        x: Value,
        kernel: [usize; 2],
        stride: [usize; 2],
        padding: [usize; 2],
    ) -> Result<Value, ConvertError> {
        self.pool(name, x, kernel, stride, padding, false)
    }

    /// The mean over H and W of NCHW, keeping them as dims of 1 (`nn.AdaptiveAvgPool2d(1)`).
    pub fn global_avg_pool(&mut self, name: &str, x: Value) -> Result<Value, ConvertError> {
        let op = Op::GlobalAvgPool {
            layout: SpatialLayout::Nchw,
        };
        self.node(name, "global_avg_pool", op, &[x])
    }

    /// The finished graph. Checkpoint tensors no layer read are listed in a notice (an error with
    /// `strict`).
    pub fn finish(mut self) -> Result<Built, ConvertError> {
        if self.graph.outputs.is_empty() {
            return Err(ConvertError::Model {
                reason: "the built model has no output (call Builder::output)".into(),
            });
        }
        self.report.dropped = self.index.dropped.iter().map(|s| s.to_string()).collect();
        self.report.unused = self
            .ckpt
            .names()
            .filter(|n| !self.used.contains(n) && !self.index.is_dropped(n))
            .map(str::to_string)
            .collect();
        let mut notices = Vec::new();
        if !self.report.unused.is_empty() {
            let n = self.report.unused.len();
            let listed = self
                .report
                .unused
                .iter()
                .take(20)
                .cloned()
                .collect::<Vec<_>>();
            let what = format!(
                "{n} checkpoint tensor{} read by no layer: {}{}",
                if n == 1 { "" } else { "s" },
                listed.join(", "),
                if n > 20 { ", ..." } else { "" }
            );
            if self.strict {
                return Err(ConvertError::bind(format!("--strict: {what}")));
            }
            notices.push(what);
        }
        if let Some(reshaped) = self.report.reshaped() {
            notices.push(format!("read up to size-1 dims: {reshaped}"));
        }
        let renamed = self
            .report
            .bound
            .iter()
            .filter(|b| b.how != Match::Exact)
            .count();
        if renamed > 0 {
            notices.push(format!(
                "{renamed} weight(s) found under another name (prefix or --rename); --verbose lists them"
            ));
        }
        self.report.notices = notices.clone();
        self.graph
            .check()
            .map_err(|e| ConvertError::internal(format!("built graph: {e}")))?;
        Ok(Built {
            graph: self.graph,
            report: self.report,
            notices,
            source_hash: self.hash,
        })
    }
}

/// A tensor asked for with `required`: [`Builder::tensor`] returns an error rather than `None` for a
/// missing one, so `None` here is a broken invariant, reported rather than a panic.
fn required(layer: &str, name: &str, v: Option<Value>) -> Result<Value, ConvertError> {
    v.ok_or_else(|| {
        ConvertError::internal(format!(
            "{layer}: required tensor \"{name}\" came back absent"
        ))
    })
}
