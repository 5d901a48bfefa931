//! ONNX `Split`: one strided slice per output (Ember's ops have one output each). The sizes come from
//! the `split` attribute (before opset 13), the `split` input (from 13), `num_outputs` (from 18: equal
//! parts, the last one smaller), or equal parts over the outputs.

use crate::ir::shape::resolve_axis;
use crate::ir::op::Slice;
use crate::ir::Op;
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `Split`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let x = ctx.input(0, "input")?;
    let dims = ctx.shape(x);
    let axis = resolve_axis(ctx.attr_int("axis")?.unwrap_or(0), dims.len())
        .map_err(|e| ctx.err(format!("attribute axis: {e}")))?;
    let dim = dims[axis];
    let outputs = ctx.node.output.len();
    let given = if ctx.opset >= 13 {
        match ctx.opt_input(1)? {
            Some(s) => Some(ctx.const_ints(s, "input split")?),
            None => None,
        }
    } else {
        ctx.attr_ints("split")?
    };
    let sizes: Vec<usize> = match given {
        Some(s) => s
            .iter()
            .map(|&v| usize::try_from(v))
            .collect::<Result<_, _>>()
            .map_err(|_| ctx.err(format!("split {s:?} contains a negative size")))?,
        None => {
            let n = match ctx.attr_int("num_outputs")? {
                Some(n) => usize::try_from(n).unwrap_or(0),
                None => outputs,
            };
            if n == 0 {
                return Err(ctx.err("the node has no outputs to split into"));
            }
            if n != outputs {
                return Err(ctx.err(format!(
                    "attribute num_outputs={n} differs from the node's {outputs} outputs"
                )));
            }
            if ctx.opset < 18 && !dim.is_multiple_of(n) {
                return Err(ctx.err(format!(
                    "axis {axis} of {dims:?} does not split into {n} equal parts"
                )));
            }
            let part = dim.div_ceil(n);
            (0..n)
                .map(|i| part.min(dim.saturating_sub(i * part)))
                .collect()
        }
    };
    if sizes.len() != outputs || sizes.iter().sum::<usize>() != dim {
        return Err(ctx.err(format!(
            "split sizes {sizes:?} must be one per output ({outputs}) and add up to {dim}"
        )));
    }
    let mut offset = 0;
    for (i, &size) in sizes.iter().enumerate() {
        let name = ctx.node.output[i].clone();
        let mut s = Slice {
            start: vec![0; dims.len()],
            step: vec![1; dims.len()],
            size: dims.clone(),
        };
        s.start[axis] = if size == 0 { 0 } else { offset };
        s.size[axis] = size;
        offset += size;
        if name.is_empty() {
            continue;
        }
        if ctx.imp.values.contains_key(&name) {
            return Err(ctx.err(format!(
                "output \"{name}\" is already defined by an earlier node"
            )));
        }
        let id = ctx.emit_tmp(&format!("out{i}"), Op::Slice(s), vec![x])?;
        let g = &mut ctx.imp.graph;
        if !g.is_const(id) {
            g.rename(id, &name);
        }
        ctx.imp.values.insert(name, id);
    }
    Ok(())
}
