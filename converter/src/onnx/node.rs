//! The importer's state, and [`NodeCtx`]: what an op importer sees of the node it converts. It reads
//! attributes and constant inputs with checked types, emits IR nodes (inferring their shapes), and
//! turns every problem into a [`ConvertError::Node`] naming the node, op type and opset. Every
//! attribute accessor records the name it was asked for, so that the dispatcher can reject the
//! attributes no importer read ([`NodeCtx::unread_attributes`]).

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};

use crate::ir::{ConstData, Graph, Op, TensorId};
use crate::onnx::proto::{attribute_type, AttributeProto, GraphProto, NodeProto};
use crate::onnx::tensor::read_tensor_typed;
use crate::ConvertError;

/// Everything the import has built so far.
pub struct Importer {
    /// The graph being built.
    pub graph: Graph,
    /// ONNX value name to tensor.
    pub values: HashMap<String, TensorId>,
    /// ONNX value names that exist but cannot be used, with the reason (e.g. Dropout's mask).
    pub unavailable: HashMap<String, String>,
    /// Notices for the report.
    pub notices: Vec<String>,
    /// The `--max-count` of ops with a data-dependent count, by output or node name.
    pub max_counts: HashMap<String, usize>,
    /// The `--max-trip` of loops whose trip count is computed at run time, by output or node name.
    pub max_trips: HashMap<String, usize>,
    /// The model's opsets by domain (for the sub-graphs of control-flow ops).
    pub opsets: HashMap<String, i64>,
}

/// One ONNX node being imported.
pub struct NodeCtx<'a> {
    /// The import state.
    pub imp: &'a mut Importer,
    /// The node.
    pub node: &'a NodeProto,
    /// The node's name, or `<op_type>_<index>` when it has none.
    pub name: String,
    /// Default-domain opset of the model.
    pub opset: i64,
    /// Names of the attributes the importer asked for, present or not.
    asked: RefCell<BTreeSet<String>>,
}

impl<'a> NodeCtx<'a> {
    /// The context of `node`, named `name`, in a model of default-domain opset `opset`.
    pub fn new(imp: &'a mut Importer, node: &'a NodeProto, name: String, opset: i64) -> Self {
        NodeCtx {
            imp,
            node,
            name,
            opset,
            asked: RefCell::new(BTreeSet::new()),
        }
    }
}

impl<'a> NodeCtx<'a> {
    /// A GRAPH attribute (a control-flow op's body or branch), which the op requires.
    pub fn attr_graph(&self, name: &str) -> Result<&'a GraphProto, ConvertError> {
        self.asked.borrow_mut().insert(name.to_string());
        let node: &'a NodeProto = self.node;
        let a = node
            .attribute
            .iter()
            .find(|a| a.name == name)
            .ok_or_else(|| self.err(format!("attribute {name} (a graph) is missing")))?;
        if a.r#type != attribute_type::GRAPH && a.r#type != attribute_type::UNDEFINED {
            return Err(self.err(format!(
                "attribute {name} must be of type GRAPH (found type {})",
                a.r#type
            )));
        }
        a.g.as_deref()
            .ok_or_else(|| self.err(format!("attribute {name} holds no graph")))
    }

    /// The most iterations the node's loop may run, when its trip count is computed at run time
    /// ([`ConvertOptions::max_trips`](crate::ConvertOptions::max_trips), by the node's name or an output's).
    pub fn max_trip(&self) -> Result<u32, ConvertError> {
        let n = std::iter::once(self.name.as_str())
            .chain(self.node.output.iter().map(String::as_str))
            .find_map(|k| self.imp.max_trips.get(k))
            .ok_or_else(|| {
                self.err(format!(
                    "the loop's trip count is only known at run time, and Ember plans a loop's \
                     buffers for a bound: give its most iterations with --max-trip {}=N \
                     (ConvertOptions::max_trips)",
                    self.name
                ))
            })?;
        u32::try_from(*n)
            .map_err(|_| self.err(format!("--max-trip {}={n} is too large", self.name)))
    }
}

impl NodeCtx<'_> {
    /// An error about this node.
    pub fn err(&self, reason: impl Into<String>) -> ConvertError {
        ConvertError::Node {
            node: self.name.clone(),
            op: self.node.op_type.clone(),
            opset: self.opset,
            reason: reason.into(),
        }
    }

    /// The graph.
    pub fn graph(&self) -> &Graph {
        &self.imp.graph
    }

    /// Input `i`, if present (omitted optional inputs have an empty name or are missing).
    pub fn opt_input(&self, i: usize) -> Result<Option<TensorId>, ConvertError> {
        let Some(name) = self.node.input.get(i).filter(|n| !n.is_empty()) else {
            return Ok(None);
        };
        if let Some(&id) = self.imp.values.get(name) {
            return Ok(Some(id));
        }
        Err(match self.imp.unavailable.get(name) {
            Some(why) => self.err(format!("input {i} (\"{name}\") {why}")),
            None => self.err(format!(
                "input {i} (\"{name}\") is not a graph input, an initializer, or the output of an \
                 earlier node (missing initializer, or nodes not in topological order)"
            )),
        })
    }

    /// Input `i`, which the op requires.
    pub fn input(&self, i: usize, what: &str) -> Result<TensorId, ConvertError> {
        self.opt_input(i)?
            .ok_or_else(|| self.err(format!("input {i} ({what}) is required but missing")))
    }

    /// Dims of a tensor.
    pub fn shape(&self, id: TensorId) -> Vec<usize> {
        self.imp.graph.tensor(id).shape.clone()
    }

    /// f32 data of input `id`, if it is an f32 constant.
    pub fn const_f32(&self, id: TensorId) -> Option<&[f32]> {
        self.imp.graph.const_f32(id)
    }

    /// Data of a constant integer input (shape, pads, axes).
    pub fn const_ints(&self, id: TensorId, what: &str) -> Result<Vec<i64>, ConvertError> {
        let t = self.imp.graph.tensor(id);
        match &t.data {
            Some(ConstData::I64(v)) => Ok(v.clone()),
            Some(ConstData::F32(_)) => Err(self.err(format!(
                "{what} (\"{}\") must be an INT64 tensor, found FLOAT",
                t.name
            ))),
            None => Err(self.err(format!(
                "{what} (\"{}\") must be a constant (an initializer or a Constant node); Ember \
                 resolves it at conversion time",
                t.name
            ))),
        }
    }

    /// Data of a constant integer input of sizes (a shape, repeats), none negative.
    pub fn const_sizes(&self, id: TensorId, what: &str) -> Result<Vec<usize>, ConvertError> {
        let v = self.const_ints(id, what)?;
        crate::ir::shape::dims_from_i64(&v).map_err(|e| self.err(e))
    }

    /// A constant scalar f32 input (one element of any rank).
    pub fn const_scalar(&self, id: TensorId, what: &str) -> Result<f32, ConvertError> {
        let t = self.imp.graph.tensor(id);
        match self.const_f32(id) {
            Some([v]) => Ok(*v),
            Some(v) => Err(self.err(format!(
                "{what} (\"{}\") must hold one value, it holds {}",
                t.name,
                v.len()
            ))),
            None => Err(self.err(format!(
                "{what} (\"{}\") must be a constant FLOAT scalar",
                t.name
            ))),
        }
    }

    /// Rejects extra outputs beyond the first (marks used ones as unavailable with `why`).
    pub fn extra_outputs_unavailable(&mut self, why: &str) {
        for name in self.node.output.iter().skip(1).filter(|n| !n.is_empty()) {
            let reason = format!("is output of node \"{}\", {why}", self.name);
            self.imp.unavailable.insert(name.clone(), reason);
        }
    }

    fn output_name(&self) -> Result<&str, ConvertError> {
        let name = self
            .node
            .output
            .first()
            .filter(|n| !n.is_empty())
            .ok_or_else(|| self.err("the node has no output"))?;
        if self.imp.values.contains_key(name) {
            return Err(self.err(format!(
                "output \"{name}\" is already defined by an earlier node"
            )));
        }
        Ok(name)
    }

    /// Binds the node's (first) output name to an existing tensor.
    pub fn bind_output(&mut self, id: TensorId) -> Result<(), ConvertError> {
        let name = self.output_name()?.to_string();
        self.imp.values.insert(name, id);
        Ok(())
    }

    /// Adds a node computing the node's output (or the constant it folds to when its inputs are
    /// constants: see `ir::emit::add_node`).
    pub fn emit(&mut self, op: Op, inputs: Vec<TensorId>) -> Result<TensorId, ConvertError> {
        let out_name = self.output_name()?.to_string();
        let node_name = self.name.clone();
        let id = self.add_node(&node_name, &out_name, op, inputs)?;
        self.imp.values.insert(out_name, id);
        Ok(id)
    }

    /// The name of the node's output `k` if the model uses it (ops with several outputs, each computed
    /// by a node of its own: TopK's values and indices).
    pub fn used_output(&self, k: usize) -> Option<&str> {
        self.node
            .output
            .get(k)
            .map(String::as_str)
            .filter(|n| !n.is_empty())
    }

    /// Adds a node computing the node's output `k` (which [`NodeCtx::used_output`] names), and binds
    /// that ONNX name to it.
    pub fn emit_output(
        &mut self,
        k: usize,
        op: Op,
        inputs: Vec<TensorId>,
    ) -> Result<TensorId, ConvertError> {
        let out_name = self
            .used_output(k)
            .ok_or_else(|| self.err(format!("the node has no output {k}")))?
            .to_string();
        if self.imp.values.contains_key(&out_name) {
            return Err(self.err(format!(
                "output \"{out_name}\" is already defined by an earlier node"
            )));
        }
        let node_name = if k == 0 {
            self.name.clone()
        } else {
            format!("{}.{k}", self.name)
        };
        let id = self.add_node(&node_name, &out_name, op, inputs)?;
        self.imp.values.insert(out_name, id);
        Ok(id)
    }

    /// The most values the node's output may hold, which its count depends on the data
    /// ([`ConvertOptions::max_counts`](crate::ConvertOptions::max_counts), by the output's name or the
    /// node's), or an error naming the option.
    pub fn max_count(&self) -> Result<u32, ConvertError> {
        let output = self.used_output(0).unwrap_or_default();
        let n = [output, self.name.as_str()]
            .iter()
            .find_map(|k| self.imp.max_counts.get(*k))
            .ok_or_else(|| {
                self.err(format!(
                    "how many values output \"{output}\" holds depends on the data, and Ember plans \
                     static shapes: give its most with --max-count {output}=N \
                     (ConvertOptions::max_counts)"
                ))
            })?;
        u32::try_from(*n).map_err(|_| self.err(format!("--max-count {output}={n} is too large")))
    }

    /// Adds a node computing an intermediate value (`suffix` names it after the node).
    pub fn emit_tmp(
        &mut self,
        suffix: &str,
        op: Op,
        inputs: Vec<TensorId>,
    ) -> Result<TensorId, ConvertError> {
        let name = format!("{}.{suffix}", self.name);
        self.add_node(&name, &name, op, inputs)
    }

    /// Makes `id`, the last value of a node that was imported as several IR nodes, the node's output:
    /// binds the ONNX output name to it, and gives it and its producer the ONNX names.
    pub fn finish(&mut self, id: TensorId) -> Result<(), ConvertError> {
        let out_name = self.output_name()?.to_string();
        let g = &mut self.imp.graph;
        if let Some(n) = g.nodes.iter_mut().rev().find(|n| n.output == id) {
            n.name = self.name.clone();
        }
        if !g.is_const(id) && !g.is_input(id) && g.producer(id).is_some() {
            g.rename(id, &out_name);
        }
        self.imp.values.insert(out_name, id);
        Ok(())
    }

    /// Adds a constant named after the node.
    pub fn add_constant(&mut self, suffix: &str, shape: Vec<usize>, data: ConstData) -> TensorId {
        let name = format!("{}.{suffix}", self.name);
        self.imp.graph.add_constant(&name, shape, data)
    }

    fn add_node(
        &mut self,
        node_name: &str,
        out_name: &str,
        op: Op,
        inputs: Vec<TensorId>,
    ) -> Result<TensorId, ConvertError> {
        let source = self.node.op_type.clone();
        crate::ir::emit::add_node(
            &mut self.imp.graph,
            node_name,
            out_name,
            &source,
            op,
            inputs,
        )
        .map_err(|e| self.err(e))
    }

    fn attr(&self, name: &str) -> Result<Option<&AttributeProto>, ConvertError> {
        self.asked.borrow_mut().insert(name.to_string());
        let Some(a) = self.node.attribute.iter().find(|a| a.name == name) else {
            return Ok(None);
        };
        if !a.ref_attr_name.is_empty() {
            return Err(self.err(format!(
                "attribute {name} refers to a function attribute ({}), which is not supported",
                a.ref_attr_name
            )));
        }
        Ok(Some(a))
    }

    fn typed_attr(
        &self,
        name: &str,
        want: i32,
        want_name: &str,
        present: impl Fn(&AttributeProto) -> bool,
    ) -> Result<Option<&AttributeProto>, ConvertError> {
        let Some(a) = self.attr(name)? else {
            return Ok(None);
        };
        let ok = if a.r#type == attribute_type::UNDEFINED {
            present(a)
        } else {
            a.r#type == want
        };
        if ok {
            Ok(Some(a))
        } else {
            Err(self.err(format!(
                "attribute {name} must be of type {want_name} (found type {})",
                a.r#type
            )))
        }
    }

    /// A scalar attribute of type `want` (named `want_name`) whose field `value` reads (unset
    /// reads as zero); in a file that leaves the type out, a set field says the attribute is one.
    fn scalar_attr<T: Copy + Default>(
        &self,
        name: &str,
        want: i32,
        want_name: &str,
        value: impl Fn(&AttributeProto) -> Option<T>,
    ) -> Result<Option<T>, ConvertError> {
        Ok(self
            .typed_attr(name, want, want_name, |a| value(a).is_some())?
            .map(|a| value(a).unwrap_or_default()))
    }

    /// A list attribute of type `want` (named `want_name`) whose field `values` reads; in a file that
    /// leaves the type out, a non-empty field says the attribute is one.
    fn list_attr<T: Clone>(
        &self,
        name: &str,
        want: i32,
        want_name: &str,
        values: impl Fn(&AttributeProto) -> &Vec<T>,
    ) -> Result<Option<Vec<T>>, ConvertError> {
        Ok(self
            .typed_attr(name, want, want_name, |a| !values(a).is_empty())?
            .map(|a| values(a).clone()))
    }

    /// An INT attribute.
    pub fn attr_int(&self, name: &str) -> Result<Option<i64>, ConvertError> {
        self.scalar_attr(name, attribute_type::INT, "INT", |a| a.i)
    }

    /// An INTS attribute.
    pub fn attr_ints(&self, name: &str) -> Result<Option<Vec<i64>>, ConvertError> {
        self.list_attr(name, attribute_type::INTS, "INTS", |a| &a.ints)
    }

    /// A FLOAT attribute.
    pub fn attr_float(&self, name: &str) -> Result<Option<f32>, ConvertError> {
        self.scalar_attr(name, attribute_type::FLOAT, "FLOAT", |a| a.f)
    }

    /// A FLOATS attribute.
    pub fn attr_floats(&self, name: &str) -> Result<Option<Vec<f32>>, ConvertError> {
        self.list_attr(name, attribute_type::FLOATS, "FLOATS", |a| &a.floats)
    }

    /// A STRING attribute, as UTF-8.
    pub fn attr_string(&self, name: &str) -> Result<Option<String>, ConvertError> {
        let Some(a) = self.typed_attr(name, attribute_type::STRING, "STRING", |a| a.s.is_some())?
        else {
            return Ok(None);
        };
        String::from_utf8(a.s.clone().unwrap_or_default())
            .map(Some)
            .map_err(|_| self.err(format!("attribute {name} is not valid UTF-8")))
    }

    /// A STRINGS attribute, each as UTF-8.
    pub fn attr_strings(&self, name: &str) -> Result<Option<Vec<String>>, ConvertError> {
        let Some(list) =
            self.list_attr(name, attribute_type::STRINGS, "STRINGS", |a| &a.strings)?
        else {
            return Ok(None);
        };
        list.into_iter()
            .map(|b| {
                String::from_utf8(b)
                    .map_err(|_| self.err(format!("attribute {name} is not valid UTF-8")))
            })
            .collect::<Result<_, _>>()
            .map(Some)
    }

    /// What `choices` maps the STRING attribute `name` to (`default` when it is absent), or an error
    /// saying its value is not supported.
    pub fn attr_choice<T: Copy>(
        &self,
        name: &str,
        default: &str,
        choices: &[(&str, T)],
    ) -> Result<T, ConvertError> {
        let value = self.attr_string(name)?.unwrap_or_else(|| default.into());
        choices
            .iter()
            .find(|(s, _)| *s == value)
            .map(|&(_, t)| t)
            .ok_or_else(|| self.err(format!("attribute {name}={value} is not supported")))
    }

    /// A TENSOR attribute, read as constant data.
    pub fn attr_tensor(
        &self,
        name: &str,
    ) -> Result<Option<(Vec<usize>, ConstData, crate::ir::DType)>, ConvertError> {
        let Some(a) = self.typed_attr(name, attribute_type::TENSOR, "TENSOR", |a| a.t.is_some())?
        else {
            return Ok(None);
        };
        let t =
            a.t.as_ref()
                .ok_or_else(|| self.err(format!("attribute {name} holds no tensor")))?;
        read_tensor_typed(t, &format!("{}.{name}", self.name)).map(Some)
    }

    /// The node's attributes that no accessor was asked for, in the node's order (repeats once).
    pub fn unread_attributes(&self) -> Vec<&str> {
        let asked = self.asked.borrow();
        let mut unread: Vec<&str> = Vec::new();
        for a in &self.node.attribute {
            if !asked.contains(&a.name) && !unread.contains(&a.name.as_str()) {
                unread.push(&a.name);
            }
        }
        unread
    }

    /// The attribute names the importer asked for (present or not), sorted.
    pub fn asked_attributes(&self) -> Vec<String> {
        self.asked.borrow().iter().cloned().collect()
    }

    /// An INTS attribute converted to sizes (each must be >= `min`).
    pub fn attr_sizes(&self, name: &str, min: i64) -> Result<Option<Vec<usize>>, ConvertError> {
        let Some(v) = self.attr_ints(name)? else {
            return Ok(None);
        };
        v.iter()
            .map(|&x| {
                if x < min {
                    Err(self.err(format!("attribute {name}={v:?}: values must be >= {min}")))
                } else {
                    usize::try_from(x)
                        .map_err(|_| self.err(format!("attribute {name}={v:?} is out of range")))
                }
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}
