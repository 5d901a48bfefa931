//! Lays control flow out in the op list, the last step before lowering: each [`Op::Control`] node
//! becomes its sub-graphs' ops between the blob's control ops (`ember_core::schema::control`), and
//! [`lifetimes`] extends the lifetime of every buffer that crosses a loop's iterations, so that the
//! one plan of the whole list holds for every iteration.
//!
//! A loop, with `c` its counter (the node's token):
//!
//! ```text
//! c = Loop[end]([trip][, cond])        counter = 0; no iteration: go on after EndLoop
//! s_in = Select(c, s_out, s_init)      per carried value: the body's last value, or the initial one
//! x_i = ScanRead(c, x)                 per scanned input
//! ... the body's ops ...
//! y = ScanWrite(c, y_i)                per stacked output, into the node's value itself
//! c = EndLoop[start]([trip][, cond])   counter + 1; again from after the head while it runs
//! v = Select(c, s_out, s_init)         per carried value the graph reads after the loop
//! ```
//!
//! An `If`: `f = Branch(cond)` skips to the `else` ops when the condition is false, the `then` ops end
//! with `Branch(f)`, which skips the `else` ops, and each value is `Select(f, then, else)`.

use std::borrow::Cow;
use std::collections::HashMap;

use ember_core::schema::control::{ControlOp, Trip};
use ember_core::{DType, OpKind};

use crate::ir::control::{Branches, Control, Loop};
use crate::ir::{ConstData, Graph, Node, Op, TensorId};
use crate::ConvertError;

/// The graph with every control node laid out (the graph itself when it has none).
pub fn expand(g: &Graph) -> Result<Cow<'_, Graph>, ConvertError> {
    if !g.nodes.iter().any(|n| matches!(n.op, Op::Control(_))) {
        return Ok(Cow::Borrowed(g));
    }
    let mut out = g.clone();
    out.nodes = Vec::with_capacity(g.nodes.len());
    // The values each control node gives, by its token: (index, tensor).
    let mut values: HashMap<TensorId, Vec<(usize, TensorId)>> = HashMap::new();
    for n in &g.nodes {
        if let (Op::ControlOutput { index, .. }, Some(&token)) = (&n.op, n.inputs.first()) {
            values.entry(token).or_default().push((*index, n.output));
        }
    }
    for n in &g.nodes {
        match &n.op {
            Op::Control(c) => {
                let given = values.remove(&n.output).unwrap_or_default();
                match &**c {
                    Control::Loop(l) => expand_loop(&mut out, n, l, &given)?,
                    Control::If(b) => expand_if(&mut out, n, b, &given)?,
                }
            }
            // Written where its control node is laid out.
            Op::ControlOutput { .. } => {}
            _ => out.nodes.push(n.clone()),
        }
    }
    Ok(Cow::Owned(out))
}

/// A sub-graph's tensors brought into `out`: its inputs as `inputs` says, those `preset` names into
/// the outer tensors it gives, every other tensor copied under a name prefixed with the control
/// node's.
struct Imported {
    map: HashMap<TensorId, TensorId>,
}

impl Imported {
    fn new(
        out: &mut Graph,
        sub: &Graph,
        prefix: &str,
        inputs: &[TensorId],
        preset: &[(TensorId, TensorId)],
    ) -> Self {
        let mut map: HashMap<TensorId, TensorId> = sub
            .inputs
            .iter()
            .copied()
            .zip(inputs.iter().copied())
            .collect();
        map.extend(preset.iter().copied());
        for (k, t) in sub.tensors.iter().enumerate() {
            let id = TensorId(k);
            if map.contains_key(&id) {
                continue;
            }
            let mut t = t.clone();
            t.name = format!("{prefix}/{}", t.name);
            map.insert(id, out.add_tensor(t));
        }
        Imported { map }
    }

    fn get(&self, id: TensorId) -> TensorId {
        // Every tensor of the sub-graph was mapped in `new`.
        self.map.get(&id).copied().unwrap_or(id)
    }

    /// Appends the sub-graph's nodes to `out`, reading and writing the mapped tensors (the op
    /// indices its own control ops name moved by where it lands).
    fn push_nodes(&self, out: &mut Graph, sub: &Graph, prefix: &str) -> Result<(), ConvertError> {
        let at = node_index(out)?;
        for n in &sub.nodes {
            let mut op = n.op.clone();
            if let Op::Core(OpKind::Control(
                ControlOp::Loop { end: i, .. }
                | ControlOp::EndLoop { start: i, .. }
                | ControlOp::Branch { to: i, .. },
            )) = &mut op
            {
                *i += at;
            }
            out.nodes.push(Node {
                name: format!("{prefix}/{}", n.name),
                onnx_op: n.onnx_op.clone(),
                op,
                inputs: n.inputs.iter().map(|&i| self.get(i)).collect(),
                output: self.get(n.output),
            });
        }
        Ok(())
    }
}

fn control(op: ControlOp) -> Op {
    Op::Core(OpKind::Control(op))
}

fn push(
    out: &mut Graph,
    name: String,
    source: &str,
    op: Op,
    inputs: Vec<TensorId>,
    output: TensorId,
) {
    out.nodes.push(Node {
        name,
        onnx_op: source.to_string(),
        op,
        inputs,
        output,
    });
}

/// A new activation shaped and typed like `like`.
fn like(out: &mut Graph, like: TensorId, name: &str) -> TensorId {
    let t = out.tensor(like);
    let (shape, dtype) = (t.shape.clone(), t.dtype);
    out.add_activation_of(name, shape, dtype)
}

fn node_index(out: &Graph) -> Result<u32, ConvertError> {
    u32::try_from(out.nodes.len()).map_err(|_| ConvertError::limit("too many ops"))
}

fn expand_loop(
    out: &mut Graph,
    n: &Node,
    l: &Loop,
    given: &[(usize, TensorId)],
) -> Result<(), ConvertError> {
    let body = expand(&l.body)?;
    let body: &Graph = &body;
    let name = n.name.as_str();
    let src = n.onnx_op.as_str();
    let counter = n.output;
    let mut next = n.inputs.iter().copied();
    let trip = if l.bound.trip == Trip::Input {
        next.next()
    } else {
        None
    };
    let cond = if l.bound.cond { next.next() } else { None };
    let inits: Vec<TensorId> = next.by_ref().take(l.states).collect();
    let scanned: Vec<TensorId> = next.by_ref().take(l.scan_in.len()).collect();
    let captured: Vec<TensorId> = next.collect();
    let internal = || ConvertError::internal(format!("loop \"{name}\" has the wrong inputs"));
    if inits.len() != l.states || scanned.len() != l.scan_in.len() {
        return Err(internal());
    }
    let b_in = &body.inputs;
    let b_out = &body.outputs;
    let cond_out = usize::from(l.cond_out);
    if b_in.len() != l.own_inputs() + captured.len()
        || b_out.len() != cond_out + l.states + l.scan_out.len()
    {
        return Err(internal());
    }
    // The condition the body reads: the node's (or true) until the body computes one.
    let cond_init = match cond {
        Some(c) => c,
        None => out.add_constant_of(
            &format!("{name}.cond"),
            Vec::new(),
            ConstData::I64(vec![1]),
            DType::Bool,
        ),
    };
    // A selector for the copies (a Select of one value twice).
    let one = out.add_constant_of(
        &format!("{name}.copy"),
        Vec::new(),
        ConstData::I64(vec![1]),
        DType::I64,
    );
    let copy = |out: &mut Graph, node: String, from: TensorId, to: TensorId| {
        push(
            out,
            node,
            src,
            control(ControlOp::Select),
            vec![one, from, from],
            to,
        );
    };
    // The carried values: the condition when the body computes it, then the loop's states, each as
    // (initial value, body input, body output, the node's value when the graph reads it).
    let mut carries: Vec<(TensorId, TensorId, TensorId, Option<TensorId>)> = Vec::new();
    if l.cond_out {
        carries.push((cond_init, b_in[1], b_out[0], None));
    }
    for k in 0..l.states {
        let value = given.iter().find(|(i, _)| *i == k).map(|&(_, y)| y);
        carries.push((inits[k], b_in[2 + k], b_out[cond_out + k], value));
    }
    let producers = body.producers();
    // The value a tensor is a Reshape (an alias in the plan) of, or itself.
    let root = |mut t: TensorId| {
        while let Some(&p) = producers.get(&t) {
            match body.nodes[p].op {
                Op::Reshape { .. } => t = body.nodes[p].inputs[0],
                _ => break,
            }
        }
        t
    };
    // A value the body passes on unchanged is its initial value throughout: the body reads that.
    let fixed: Vec<bool> = carries.iter().map(|&(_, i, o, _)| root(o) == i).collect();

    // Each other carried value lives in one buffer over the whole loop: the initial value is copied
    // into it before the loop, the body's op writes its next value into it (or, where the body's
    // output is an input, a constant, an alias or another carried value's output, a copy at the end
    // of the body does), the head copies it for the body to read, and after the loop it is the node's
    // value. So the initial value is read once, before the loop, and the last one needs no copy.
    let mut buffer: Vec<Option<TensorId>> = Vec::with_capacity(carries.len());
    let mut written_by_body: Vec<(TensorId, TensorId)> = Vec::new();
    let mut copies_at_end: Vec<(TensorId, TensorId)> = Vec::new();
    let mut seen: Vec<TensorId> = Vec::new();
    for (j, &(init, _, o, value)) in carries.iter().enumerate() {
        if fixed[j] {
            buffer.push(None);
            continue;
        }
        let b = match value {
            Some(y) => y,
            None => like(out, init, &format!("{name}.{}", body.tensor(o).name)),
        };
        let aliased = producers
            .get(&o)
            .is_some_and(|&p| matches!(body.nodes[p].op, Op::Reshape { .. }));
        if body.is_input(o) || body.is_const(o) || aliased || seen.contains(&o) {
            copies_at_end.push((o, b));
        } else {
            written_by_body.push((o, b));
        }
        seen.push(o);
        buffer.push(Some(b));
    }

    let mut inputs = vec![counter];
    let mut heads: Vec<(TensorId, TensorId)> = Vec::new();
    let cond_in = match (l.cond_out, buffer.first()) {
        (true, Some(&Some(b))) => {
            let t = like(out, cond_init, &format!("{name}.cond_in"));
            heads.push((b, t));
            t
        }
        _ => cond_init,
    };
    inputs.push(cond_in);
    for k in 0..l.states {
        let j = cond_out + k;
        inputs.push(match buffer[j] {
            Some(b) => {
                let t = like(
                    out,
                    inits[k],
                    &format!("{name}.{}", body.tensor(b_in[2 + k]).name),
                );
                heads.push((b, t));
                t
            }
            None => inits[k],
        });
    }
    let mut slices = Vec::with_capacity(scanned.len());
    for (k, &x) in scanned.iter().enumerate() {
        let t = body.tensor(b_in[2 + l.states + k]);
        let (shape, dtype, tname) = (t.shape.clone(), t.dtype, t.name.clone());
        let s = out.add_activation_of(&format!("{name}.{tname}"), shape, dtype);
        slices.push((x, s));
        inputs.push(s);
    }
    inputs.extend(&captured);
    let imported = Imported::new(out, body, name, &inputs, &written_by_body);

    for (j, &(init, _, _, _)) in carries.iter().enumerate() {
        if let Some(b) = buffer[j] {
            copy(out, format!("{name}.init{j}"), init, b);
        }
    }
    let head = node_index(out)?;
    let bound = l.bound;
    push(
        out,
        name.to_string(),
        src,
        control(ControlOp::Loop { end: 0, bound }),
        trip.into_iter().chain(cond).collect(),
        counter,
    );
    for (j, &(b, t)) in heads.iter().enumerate() {
        copy(out, format!("{name}.carry{j}"), b, t);
    }
    for (k, &(x, s)) in slices.iter().enumerate() {
        let a = l.scan_in[k];
        push(
            out,
            format!("{name}.scan_in{k}"),
            src,
            control(ControlOp::ScanRead {
                axis: axis_u8(a.axis)?,
                reverse: a.reverse,
            }),
            vec![counter, x],
            s,
        );
    }
    imported.push_nodes(out, body, name)?;
    for (k, &(o, b)) in copies_at_end.iter().enumerate() {
        copy(out, format!("{name}.next{k}"), imported.get(o), b);
    }
    for (k, a) in l.scan_out.iter().enumerate() {
        let Some(&(_, y)) = given.iter().find(|(i, _)| *i == l.states + k) else {
            continue;
        };
        let e = imported.get(b_out[cond_out + l.states + k]);
        push(
            out,
            format!("{name}.scan_out{k}"),
            src,
            control(ControlOp::ScanWrite {
                axis: axis_u8(a.axis)?,
                reverse: a.reverse,
            }),
            vec![counter, e],
            y,
        );
    }
    let end = node_index(out)?;
    let mut end_inputs: Vec<TensorId> = trip.into_iter().collect();
    if bound.cond {
        end_inputs.push(match (l.cond_out, buffer.first()) {
            (true, Some(&Some(b))) => b,
            _ => cond_init,
        });
    }
    push(
        out,
        format!("{name}.end"),
        src,
        control(ControlOp::EndLoop {
            start: head,
            bound,
            exact: !l.scan_out.is_empty(),
        }),
        end_inputs,
        counter,
    );
    out.nodes[head as usize].op = control(ControlOp::Loop { end, bound });
    // A value the body passes on unchanged is its initial one.
    for &(index, y) in given {
        if index < l.states && fixed[cond_out + index] {
            copy(out, format!("{name}.out{index}"), inits[index], y);
        }
    }
    Ok(())
}

fn axis_u8(axis: usize) -> Result<u8, ConvertError> {
    u8::try_from(axis).map_err(|_| ConvertError::limit(format!("scan axis {axis}")))
}

fn expand_if(
    out: &mut Graph,
    n: &Node,
    b: &Branches,
    given: &[(usize, TensorId)],
) -> Result<(), ConvertError> {
    let then = expand(&b.then)?;
    let els = expand(&b.els)?;
    let name = n.name.as_str();
    let src = n.onnx_op.as_str();
    let flag = n.output;
    let (Some(&cond), rest) = (n.inputs.first(), n.inputs.get(1..).unwrap_or(&[])) else {
        return Err(ConvertError::internal(format!(
            "if \"{name}\" has no condition"
        )));
    };
    if rest.len() != then.inputs.len() + els.inputs.len() {
        return Err(ConvertError::internal(format!(
            "if \"{name}\" has the wrong inputs"
        )));
    }
    let (then_in, else_in) = rest.split_at(then.inputs.len());
    let then_map = Imported::new(out, &then, &format!("{name}/then"), then_in, &[]);
    let else_map = Imported::new(out, &els, &format!("{name}/else"), else_in, &[]);
    let head = out.nodes.len();
    push(
        out,
        name.to_string(),
        src,
        control(ControlOp::Branch { to: 0, when: false }),
        vec![cond],
        flag,
    );
    then_map.push_nodes(out, &then, &format!("{name}/then"))?;
    let skip = like(out, flag, &format!("{name}.taken"));
    let middle = out.nodes.len();
    push(
        out,
        format!("{name}.skip_else"),
        src,
        control(ControlOp::Branch { to: 0, when: true }),
        vec![flag],
        skip,
    );
    let else_start = node_index(out)?;
    else_map.push_nodes(out, &els, &format!("{name}/else"))?;
    let after = node_index(out)?;
    out.nodes[head].op = control(ControlOp::Branch {
        to: else_start,
        when: false,
    });
    out.nodes[middle].op = control(ControlOp::Branch {
        to: after,
        when: true,
    });
    for &(index, y) in given {
        let (Some(&t), Some(&e)) = (then.outputs.get(index), els.outputs.get(index)) else {
            return Err(ConvertError::internal(format!(
                "if \"{name}\" has no value {index}"
            )));
        };
        push(
            out,
            format!("{name}.out{index}"),
            src,
            control(ControlOp::Select),
            vec![flag, then_map.get(t), else_map.get(e)],
            y,
        );
    }
    Ok(())
}

/// Extends the lifetimes `first`/`last` (in op steps, by tensor record; `written` says which an op
/// writes, the others being graph inputs and weights) of the buffers that cross a loop's iterations to
/// the whole loop: a value from before the loop that the body reads (a carried value's buffer among
/// them, which the body also writes), and a value the body computes and the graph reads after the
/// loop (a stacked output keeps its earlier slices).
pub fn lifetimes(
    ops: &[ember_core::format::OpRecord],
    written: &[bool],
    first: &mut [usize],
    last: &mut [usize],
) {
    let mut loops: Vec<(usize, usize)> = ops
        .iter()
        .enumerate()
        .filter_map(|(h, op)| match op.kind {
            OpKind::Control(ControlOp::Loop { end, .. }) => Some((h, end as usize)),
            _ => None,
        })
        .collect();
    // Inner loops first: an outer loop then covers what an inner one extended.
    loops.sort_by_key(|&(h, e)| e - h);
    for (h, e) in loops {
        let inside = |s: usize| h <= s && s <= e;
        for r in 0..first.len() {
            let defined_inside = written[r] && inside(first[r]);
            if defined_inside && last[r] > e {
                first[r] = h;
            }
            if !defined_inside && inside(last[r]) {
                last[r] = e;
            }
        }
    }
}
