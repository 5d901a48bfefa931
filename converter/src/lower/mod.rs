//! Lowering: the IR graph (after the passes, in Ember's layout) to the blob's records. Picks the
//! tensors the ops use, lays out the weights section (f32 little-endian, 16-byte aligned), plans the
//! activation arena ([`memory`]), fills every record, and checks the result (the `check` module).

mod check;
pub mod control;
pub mod memory;
mod narrow;
pub(crate) mod ops;
mod quant;

use std::collections::HashMap;

use ember_core::format::{ArenaPlan, Dims, OpRecord, Storage, TensorRecord, MAX_GRAPH_IO};
use ember_core::ops::quant::requant::RequantRounding;
use ember_core::DType;

use crate::ir::{ConstData, Graph, Op, TensorId};
use crate::plan::align_up;
use crate::ConvertError;
use memory::ArenaTensor;

/// Everything the blob holds, ready for `write_blob`.
#[derive(Clone, Debug)]
pub struct Lowered {
    /// Tensor table.
    pub tensors: Vec<TensorRecord>,
    /// Ops in execution order.
    pub ops: Vec<OpRecord>,
    /// Weights section.
    pub weights: Vec<u8>,
    /// Tensor names (same order as `tensors`).
    pub tensor_names: Vec<String>,
    /// Op (node) names (same order as `ops`).
    pub op_names: Vec<String>,
    /// Graph input tensor ids.
    pub inputs: Vec<u32>,
    /// Graph output tensor ids.
    pub outputs: Vec<u32>,
    /// Memory plan.
    pub arena: ArenaPlan,
    /// Activation bytes of TFLM's greedy plan for the same buffers (`arena.activation_bytes` is
    /// never more); reported, not written into the blob.
    pub greedy_activation_bytes: u32,
}

/// Lowers the graph. Every int8 op that requantizes rounds in `rounding` mode.
pub fn lower(g: &Graph, rounding: RequantRounding) -> Result<Lowered, ConvertError> {
    let expanded = control::expand(g)?;
    let g: &Graph = &expanded;
    for &o in &g.outputs {
        if g.is_const(o) {
            return Err(ConvertError::Output {
                name: g.tensor(o).name.clone(),
                reason: "is a constant (computed at conversion time); Ember needs every output to \
                         be computed by an op"
                    .into(),
            });
        }
    }
    if g.inputs.len() > MAX_GRAPH_IO || g.outputs.len() > MAX_GRAPH_IO {
        return Err(ConvertError::limit(format!(
            "{} inputs and {} outputs; at most {MAX_GRAPH_IO} of each",
            g.inputs.len(),
            g.outputs.len()
        )));
    }

    // Record ids: graph inputs first, then tensors in order of first use.
    let mut ids: HashMap<TensorId, u32> = HashMap::new();
    let mut order: Vec<TensorId> = Vec::new();
    let mut record = |t: TensorId, ids: &mut HashMap<TensorId, u32>| -> Result<u32, ConvertError> {
        if let Some(&r) = ids.get(&t) {
            return Ok(r);
        }
        let r = u32::try_from(order.len()).map_err(|_| ConvertError::limit("too many tensors"))?;
        ids.insert(t, r);
        order.push(t);
        Ok(r)
    };
    for &t in &g.inputs {
        record(t, &mut ids)?;
    }
    let mut op_records = Vec::with_capacity(g.nodes.len());
    for n in &g.nodes {
        let mut kind = ops::lower_op(n)?;
        quant::set_rounding(&mut kind, rounding);
        let inputs: Vec<u32> = n
            .inputs
            .iter()
            .map(|&i| record(i, &mut ids))
            .collect::<Result<_, _>>()?;
        let inputs = bounded(&inputs, || {
            format!("node \"{}\" has {} inputs", n.name, n.inputs.len())
        })?;
        let output = record(n.output, &mut ids)?;
        op_records.push(OpRecord {
            kind,
            inputs,
            output,
        });
    }
    for &t in &g.outputs {
        record(t, &mut ids)?;
    }

    // Lifetimes in op steps.
    let n_ops = g.nodes.len();
    let mut first = vec![0usize; order.len()];
    let mut last = vec![0usize; order.len()];
    let mut written = vec![false; order.len()];
    for (step, op) in op_records.iter().enumerate() {
        // A loop's counter is written by its head and again by its end: it lives from the head.
        let y = op.output as usize;
        if !written[y] {
            first[y] = step;
            written[y] = true;
        }
        last[y] = last[y].max(step);
        for &i in &op.inputs {
            last[i as usize] = last[i as usize].max(step);
        }
    }
    let is_output = |t: TensorId| g.outputs.contains(&t);
    for &t in &g.outputs {
        last[ids[&t] as usize] = n_ops;
    }
    control::lifetimes(&op_records, &written, &mut first, &mut last);

    // Weights and arena tensors.
    let mut weights: Vec<u8> = Vec::new();
    let mut storage = Vec::with_capacity(order.len());
    let mut arena_tensors: Vec<ArenaTensor> = Vec::new();
    let mut arena_index: HashMap<u32, usize> = HashMap::new();
    for (r, &t) in order.iter().enumerate() {
        let tensor = g.tensor(t);
        let numel = crate::ir::shape::numel(&tensor.shape).map_err(ConvertError::limit)?;
        match &tensor.data {
            Some(data) => {
                let offset = u32::try_from(weights.len())
                    .map_err(|_| ConvertError::limit("the weights exceed 4 GiB"))?;
                write_elements(&mut weights, data, tensor.dtype).map_err(|reason| {
                    ConvertError::Tensor {
                        name: tensor.name.clone(),
                        reason,
                    }
                })?;
                weights.resize(align_up(weights.len()), 0);
                storage.push(Some(Storage::Weights { offset }));
            }
            None => {
                storage.push(None);
                arena_index.insert(r as u32, arena_tensors.len());
                arena_tensors.push(ArenaTensor {
                    bytes: align_up(numel.saturating_mul(tensor.dtype.size())),
                    first_use: first[r],
                    last_use: if is_output(t) { n_ops } else { last[r] },
                    is_input: g.is_input(t),
                    is_output: is_output(t),
                });
            }
        }
    }
    let reshapes: Vec<(usize, usize)> = g
        .nodes
        .iter()
        .zip(&op_records)
        .filter(|(n, _)| matches!(n.op, Op::Reshape { .. }))
        .filter_map(|(_, op)| {
            let x = *arena_index.get(op.inputs.first()?)?;
            Some((x, *arena_index.get(&op.output)?))
        })
        .collect();
    let plan = memory::plan(&arena_tensors, &reshapes)?;

    let quant_params = quant::records(g);
    let mut tensors = Vec::with_capacity(order.len());
    for (r, &t) in order.iter().enumerate() {
        let tensor = g.tensor(t);
        let dims = tensor
            .shape
            .iter()
            .map(|&d| {
                u32::try_from(d)
                    .map_err(|_| ConvertError::limit(format!("dim {d} of {}", tensor.name)))
            })
            .collect::<Result<Vec<u32>, _>>()?;
        let dims: Dims = bounded(&dims, || {
            format!("tensor \"{}\" has rank {}", tensor.name, tensor.shape.len())
        })?;
        // The format's limit on one tensor, as `parse` checks it.
        if ember_core::byte_size(tensor.dtype, &dims).is_none() {
            return Err(ConvertError::limit(format!(
                "tensor \"{}\" of dims {:?} holds more than 4 GiB (the product of its non-zero dims)",
                tensor.name, tensor.shape
            )));
        }
        let storage = match storage[r] {
            Some(s) => s,
            None => {
                // Every tensor without storage was given an arena index above.
                let offset = plan.offsets[arena_index[&(r as u32)]];
                Storage::Arena {
                    offset: u32::try_from(offset)
                        .map_err(|_| ConvertError::limit("the arena exceeds 4 GiB"))?,
                }
            }
        };
        let is_weight = matches!(storage, Storage::Weights { .. });
        tensors.push(TensorRecord {
            dtype: tensor.dtype,
            dims,
            storage,
            quant: quant_params.get(&t).copied(),
            first_use: if is_weight || g.is_input(t) {
                0
            } else {
                first[r] as u32
            },
            last_use: if is_output(t) {
                u32::MAX
            } else {
                last[r] as u32
            },
        });
    }
    let u32_of =
        |n: usize| u32::try_from(n).map_err(|_| ConvertError::limit("the arena exceeds 4 GiB"));
    let arena = ArenaPlan {
        persistent_bytes: 0,
        activation_bytes: u32_of(plan.total)?,
        scratch_bytes: 0,
        lower_bound_bytes: u32_of(plan.lower_bound)?,
    };
    // Every graph input and output was given a record id above.
    let lowered = Lowered {
        inputs: g.inputs.iter().map(|t| ids[t]).collect(),
        outputs: g.outputs.iter().map(|t| ids[t]).collect(),
        tensor_names: order.iter().map(|&t| g.tensor(t).name.clone()).collect(),
        op_names: g.nodes.iter().map(|n| n.name.clone()).collect(),
        tensors,
        ops: op_records,
        weights,
        arena,
        greedy_activation_bytes: u32_of(plan.greedy_total)?,
    };
    check::check(&lowered)?;
    Ok(lowered)
}

/// Appends `data` to `out` as little-endian elements of `dtype`: f32 values widen to f64 or convert
/// to integers (truncating, as a cast would), integer values narrow with two's-complement wrapping.
pub(crate) fn write_elements(
    out: &mut Vec<u8>,
    data: &ConstData,
    dtype: DType,
) -> Result<(), String> {
    fn put<const N: usize>(out: &mut Vec<u8>, b: [u8; N]) {
        out.extend_from_slice(&b);
    }
    match data {
        ConstData::F32(v) => {
            for &x in v {
                match dtype {
                    DType::F32 => put(out, x.to_le_bytes()),
                    DType::F64 => put(out, f64::from(x).to_le_bytes()),
                    DType::Bool => out.push(u8::from(x != 0.0)),
                    DType::F16 => put(out, ember_core::half::f16::from_f32(x).to_le_bytes()),
                    _ => write_int(out, x as i64, dtype),
                }
            }
        }
        ConstData::I64(v) => {
            for &x in v {
                match dtype {
                    DType::F32 => put(out, (x as f32).to_le_bytes()),
                    DType::F64 => put(out, (x as f64).to_le_bytes()),
                    DType::Bool => out.push(u8::from(x != 0)),
                    DType::F16 => put(out, ember_core::half::f16::from_f64(x as f64).to_le_bytes()),
                    _ => write_int(out, x, dtype),
                }
            }
        }
    }
    Ok(())
}

/// `x` as a little-endian integer of `dtype`'s width (wrapping).
fn write_int(out: &mut Vec<u8>, x: i64, dtype: DType) {
    let bytes = x.to_le_bytes();
    out.extend_from_slice(&bytes[..dtype.size()]);
}

/// `items` in a blob's fixed-capacity list, or a limit error: `what` has too many, at most `N`.
fn bounded<const N: usize>(
    items: &[u32],
    what: impl FnOnce() -> String,
) -> Result<heapless::Vec<u32, N>, ConvertError> {
    heapless::Vec::from_slice(items)
        .map_err(|_| ConvertError::limit(format!("{}; at most {N}", what())))
}
