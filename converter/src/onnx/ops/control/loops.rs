//! `Loop` (opset 11 on) and `Scan` (opset 9 on): a body run once per iteration over carried values,
//! with stacked outputs ([`crate::ir::control::Loop`]).
//!
//! A loop's trip count is bounded at conversion: a constant, a `Scan`'s inputs' length, or
//! `--max-trip` for a count (or a condition) computed at run time. Its stacked outputs are planned for
//! that bound: a `Loop` with such outputs must run exactly that many iterations (the runtime says so
//! otherwise), since Ember's shapes are static.

use ember_core::schema::control::{LoopBound, Trip};

use super::{emit_control, subgraph};
use crate::ir::control::{Control, Loop, ScanAxis};
use crate::ir::{ConstData, DType, Graph, TensorId};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// A carried value's dims and dtype must not change across iterations.
fn check_carried(
    ctx: &NodeCtx<'_>,
    body: &Graph,
    k: usize,
    init: TensorId,
    out: TensorId,
) -> Result<(), ConvertError> {
    let (i, o) = (ctx.graph().tensor(init), body.tensor(out));
    if i.shape != o.shape || i.dtype != o.dtype {
        return Err(ctx.err(format!(
            "carried value {k} enters the body as {} {:?} and leaves it as {} {:?}; Ember's shapes \
             are static, so a carried value keeps its shape and type across iterations",
            i.dtype.name(),
            i.shape,
            o.dtype.name(),
            o.shape
        )));
    }
    Ok(())
}

/// The value `id` is an Identity (a Reshape to its own dims) of, followed back, or `id` itself.
fn copy_of(g: &Graph, mut id: TensorId) -> TensorId {
    while let Some(n) = g.nodes.iter().find(|n| n.output == id) {
        match (&n.op, n.inputs.first()) {
            (crate::ir::Op::Reshape { shape }, Some(&x)) if g.tensor(x).shape == *shape => id = x,
            _ => break,
        }
    }
    id
}

/// Whether `id` is the constant `value` (a scalar condition).
fn is_const_bool(g: &Graph, id: TensorId, value: bool) -> bool {
    match &g.tensor(id).data {
        Some(ConstData::I64(v)) => v.len() == 1 && (v[0] != 0) == value,
        Some(ConstData::F32(v)) => v.len() == 1 && (v[0] != 0.0) == value,
        None => false,
    }
}

/// `Loop`: inputs `M` (trip count), `cond`, then the carried values' initial values; the body reads
/// the iteration number, the condition and the carried values, and gives the condition, the carried
/// values and the stacked outputs' elements.
pub fn import_loop(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let body = ctx.attr_graph("body")?;
    let m = ctx.opt_input(0)?;
    let cond = ctx.opt_input(1)?;
    let inits: Vec<TensorId> = (2..ctx.node.input.len())
        .map(|k| ctx.input(k, "initial value"))
        .collect::<Result<_, _>>()?;
    let states = inits.len();

    // The bound: a constant trip count, else --max-trip.
    let const_trip = match m {
        Some(t) if ctx.graph().is_const(t) => {
            let v = ctx.const_ints(t, "trip count M")?;
            Some(v.first().copied().unwrap_or(0).max(0))
        }
        _ => None,
    };
    let cond_const = cond.filter(|&c| ctx.graph().is_const(c));
    let never = cond_const.is_some_and(|c| is_const_bool(ctx.graph(), c, false));
    let max_trip = match (never, const_trip) {
        (true, _) => 0,
        (false, Some(n)) => u32::try_from(n).map_err(|_| ctx.err(format!("trip count {n} is too large")))?,
        (false, None) => ctx.max_trip()?,
    };
    let trip = m.filter(|_| const_trip.is_none() && !never);
    let mut cond_in = cond.filter(|_| cond_const.is_none());

    let mut formal = vec![(Vec::new(), DType::I64), (Vec::new(), DType::Bool)];
    for &i in &inits {
        let t = ctx.graph().tensor(i);
        formal.push((t.shape.clone(), t.dtype));
    }
    let mut sub = subgraph::import(ctx, body, "body", &formal)?;
    let outputs = sub.graph.outputs.len();
    if outputs < 1 + states {
        return Err(ctx.err(format!(
            "its body gives {outputs} values; a loop of {states} carried values needs the condition \
             and them"
        )));
    }
    for (k, &i) in inits.iter().enumerate() {
        check_carried(ctx, &sub.graph, k, i, sub.graph.outputs[1 + k])?;
    }
    // A condition the body always computes as true ends nothing: the trip count alone bounds the loop.
    let body_cond = sub.graph.outputs[0];
    // A condition passed on unchanged from a constant true (or no) initial one is true throughout.
    let passed_on = copy_of(&sub.graph, body_cond) == sub.graph.inputs[1] && cond_in.is_none();
    let cond_out = !is_const_bool(&sub.graph, body_cond, true) && !passed_on;
    if !cond_out {
        sub.graph.outputs.remove(0);
    } else if cond_in.is_none() {
        // The body's condition can end the loop: the head needs an initial one.
        let c = match cond {
            Some(c) => c,
            None => {
                let c = ctx.add_constant("cond", Vec::new(), ConstData::I64(vec![1]));
                ctx.imp.graph.tensor_mut(c).dtype = DType::Bool;
                c
            }
        };
        cond_in = Some(c);
    }
    let first_scan = usize::from(cond_out) + states;
    let scan_out: Vec<ScanAxis> = (first_scan..sub.graph.outputs.len())
        .map(|_| ScanAxis {
            axis: 0,
            reverse: false,
        })
        .collect();
    subgraph::optimize(ctx, &mut sub.graph, "body")?;

    let mut values: Vec<(Vec<usize>, DType)> = Vec::new();
    for &i in &inits {
        let t = ctx.graph().tensor(i);
        values.push((t.shape.clone(), t.dtype));
    }
    for k in 0..scan_out.len() {
        let e = sub.graph.tensor(sub.graph.outputs[first_scan + k]);
        let mut shape = vec![max_trip as usize];
        shape.extend(&e.shape);
        values.push((shape, e.dtype));
    }
    let bound = LoopBound {
        max_trip,
        trip: if trip.is_some() {
            Trip::Input
        } else if const_trip.is_some() || never {
            Trip::Constant
        } else {
            Trip::Unbounded
        },
        cond: cond_in.is_some(),
    };
    let mut inputs: Vec<TensorId> = trip.into_iter().chain(cond_in).collect();
    inputs.extend(&inits);
    inputs.extend(&sub.captured);
    let control = Control::Loop(Loop {
        body: sub.graph,
        bound,
        cond_out,
        states,
        scan_in: Vec::new(),
        scan_out,
    });
    emit_control(ctx, control, inputs, &values)
}

/// An axis attribute's values (`count` of them, each in `-rank..rank` of `ranks[k]`, default 0).
fn axes(
    ctx: &NodeCtx<'_>,
    name: &str,
    directions: &str,
    ranks: &[usize],
) -> Result<Vec<ScanAxis>, ConvertError> {
    let given = ctx.attr_ints(name)?;
    let reverse = ctx.attr_ints(directions)?;
    ranks
        .iter()
        .enumerate()
        .map(|(k, &rank)| {
            let a = given.as_ref().map_or(0, |v| v.get(k).copied().unwrap_or(0));
            let r = rank as i64;
            if a < -r || a >= r {
                return Err(ctx.err(format!("{name}[{k}]={a} is outside a rank of {rank}")));
            }
            let rev = reverse.as_ref().map_or(0, |v| v.get(k).copied().unwrap_or(0));
            Ok(ScanAxis {
                axis: (if a < 0 { a + r } else { a }) as usize,
                reverse: rev != 0,
            })
        })
        .collect()
}

/// `Scan`: inputs the carried values' initial values, then `num_scan_inputs` scanned tensors, read a
/// slice per iteration along their axes; the body gives the carried values and the stacked outputs'
/// elements.
pub fn import_scan(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let body = ctx.attr_graph("body")?;
    let n_scan = ctx
        .attr_int("num_scan_inputs")?
        .ok_or_else(|| ctx.err("attribute num_scan_inputs is missing"))?;
    let all: Vec<TensorId> = (0..ctx.node.input.len())
        .map(|k| ctx.input(k, "input"))
        .collect::<Result<_, _>>()?;
    let n_scan = usize::try_from(n_scan)
        .ok()
        .filter(|&n| n >= 1 && n <= all.len())
        .ok_or_else(|| ctx.err(format!("num_scan_inputs={n_scan} does not fit its {} inputs", all.len())))?;
    let states = all.len() - n_scan;
    let (inits, scanned) = all.split_at(states);
    let ranks: Vec<usize> = scanned.iter().map(|&x| ctx.shape(x).len()).collect();
    let scan_in = axes(ctx, "scan_input_axes", "scan_input_directions", &ranks)?;
    let mut trip = None;
    for (k, (&x, a)) in scanned.iter().zip(&scan_in).enumerate() {
        let len = ctx.shape(x)[a.axis];
        if trip.is_some_and(|t| t != len) {
            return Err(ctx.err(format!(
                "scanned input {k} is {len} long along its axis, another {}",
                trip.unwrap_or(0)
            )));
        }
        trip = Some(len);
    }
    let trip = trip.unwrap_or(0);
    let max_trip = u32::try_from(trip).map_err(|_| ctx.err(format!("{trip} iterations")))?;

    let mut formal = Vec::new();
    for &i in inits {
        let t = ctx.graph().tensor(i);
        formal.push((t.shape.clone(), t.dtype));
    }
    for (&x, a) in scanned.iter().zip(&scan_in) {
        let t = ctx.graph().tensor(x);
        let mut shape = t.shape.clone();
        shape.remove(a.axis);
        formal.push((shape, t.dtype));
    }
    let mut sub = subgraph::import(ctx, body, "body", &formal)?;
    if sub.graph.outputs.len() < states {
        return Err(ctx.err(format!(
            "its body gives {} values for {states} carried values",
            sub.graph.outputs.len()
        )));
    }
    for (k, &i) in inits.iter().enumerate() {
        check_carried(ctx, &sub.graph, k, i, sub.graph.outputs[k])?;
    }
    // The layout of a loop's body: the iteration number and the condition first (a scan reads
    // neither).
    let iter = sub.graph.add_activation_of("iteration", Vec::new(), DType::I64);
    let cond = sub.graph.add_activation_of("condition", Vec::new(), DType::Bool);
    sub.graph.inputs.splice(0..0, [iter, cond]);
    let elems: Vec<usize> = sub.graph.outputs[states..]
        .iter()
        .map(|&e| sub.graph.tensor(e).shape.len())
        .collect();
    let out_ranks: Vec<usize> = elems.iter().map(|r| r + 1).collect();
    let scan_out = axes(ctx, "scan_output_axes", "scan_output_directions", &out_ranks)?;
    subgraph::optimize(ctx, &mut sub.graph, "body")?;

    let mut values: Vec<(Vec<usize>, DType)> = Vec::new();
    for &i in inits {
        let t = ctx.graph().tensor(i);
        values.push((t.shape.clone(), t.dtype));
    }
    for (k, a) in scan_out.iter().enumerate() {
        let e = sub.graph.tensor(sub.graph.outputs[states + k]);
        let mut shape = e.shape.clone();
        shape.insert(a.axis, trip);
        values.push((shape, e.dtype));
    }
    let mut inputs: Vec<TensorId> = all.clone();
    inputs.extend(&sub.captured);
    let control = Control::Loop(Loop {
        body: sub.graph,
        bound: LoopBound {
            max_trip,
            trip: Trip::Constant,
            cond: false,
        },
        cond_out: false,
        states,
        scan_in,
        scan_out,
    });
    emit_control(ctx, control, inputs, &values)
}
