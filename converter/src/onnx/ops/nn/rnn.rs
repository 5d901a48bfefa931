//! ONNX `RNN`, `GRU` and `LSTM` (opset 7 on; `layout` from 14) to the blob's [`OpKind::Rnn`], one
//! kernel over the whole sequence (`core/src/ops/nn/rnn.rs` says why it is not unrolled).
//!
//! Supported: `direction` forward, reverse or bidirectional; the default activations only (`activations`
//! may name them: Tanh for RNN, Sigmoid, Tanh for GRU, Sigmoid, Tanh, Tanh for LSTM, per direction;
//! no `activation_alpha`/`activation_beta`); `clip`; GRU `linear_before_reset` 0 and 1; LSTM peepholes
//! `P`, and `input_forget` 0 only; `layout` 0 and 1 (1 adds transposes around the kernel);
//! `sequence_lens` absent, or a constant equal to the sequence length for every batch row. Initial states
//! may be graph inputs, computed, or constants.
//!
//! The kernel's one output `[seq + 2, dirs, batch, hidden]` holds `Y`, `Y_h` and `Y_c`: each output
//! the model reads is a slice of it (and a transpose with `layout=1`).

use ember_core::ops::nn::rnn::{RnnCell, RnnDirection, RnnParams};
use ember_core::OpKind;

use crate::ir::op::Slice;
use crate::ir::{ConstData, Op, TensorId};
use crate::onnx::node::NodeCtx;
use crate::ConvertError;

/// Imports `RNN`, `GRU` and `LSTM`.
pub fn import(ctx: &mut NodeCtx<'_>) -> Result<(), ConvertError> {
    let op = ctx.node.op_type.clone();
    let x = ctx.input(0, "X")?;
    let w = ctx.input(1, "W")?;
    let r = ctx.input(2, "R")?;
    let direction = ctx.attr_choice(
        "direction",
        "forward",
        &[
            ("forward", RnnDirection::Forward),
            ("reverse", RnnDirection::Reverse),
            ("bidirectional", RnnDirection::Bidirectional),
        ],
    )?;
    let dirs = direction.count();
    let (cell, defaults): (RnnCell, &[&str]) = match op.as_str() {
        "RNN" => (RnnCell::Simple, &["Tanh"]),
        "GRU" => {
            let lbr = ctx.attr_int("linear_before_reset")?.unwrap_or(0);
            if !matches!(lbr, 0 | 1) {
                return Err(ctx.err(format!("attribute linear_before_reset={lbr} must be 0 or 1")));
            }
            let cell = RnnCell::Gru {
                linear_before_reset: lbr == 1,
            };
            (cell, &["Sigmoid", "Tanh"])
        }
        _ => {
            let input_forget = ctx.attr_int("input_forget")?.unwrap_or(0);
            if input_forget != 0 {
                return Err(ctx.err(format!(
                    "attribute input_forget={input_forget} is not supported (only 0, the default)"
                )));
            }
            let peepholes = ctx.opt_input(7)?.is_some();
            (RnnCell::Lstm { peepholes }, &["Sigmoid", "Tanh", "Tanh"])
        }
    };
    if let Some(acts) = ctx.attr_strings("activations")? {
        let expected: Vec<&str> = (0..dirs).flat_map(|_| defaults.iter().copied()).collect();
        let same = acts.len() == expected.len()
            && acts.iter().zip(&expected).all(|(a, e)| a.eq_ignore_ascii_case(e));
        if !same {
            return Err(ctx.err(format!(
                "attribute activations={acts:?} is not supported; Ember runs the default \
                 activations only ({expected:?})"
            )));
        }
    }
    for name in ["activation_alpha", "activation_beta"] {
        if ctx.attr_floats(name)?.is_some_and(|v| !v.is_empty()) {
            return Err(ctx.err(format!(
                "attribute {name} is not supported (the default activations take none)"
            )));
        }
    }
    let clip = match ctx.attr_float("clip")? {
        None => f32::INFINITY,
        Some(c) if c > 0.0 => c,
        Some(c) => return Err(ctx.err(format!("attribute clip={c} must be positive"))),
    };
    let layout = ctx.attr_int("layout")?.unwrap_or(0);
    if !matches!(layout, 0 | 1) {
        return Err(ctx.err(format!("attribute layout={layout} must be 0 or 1")));
    }
    let batch_first = layout == 1;
    let x = if batch_first { transpose(ctx, "x_seq_first", x, &[1, 0, 2])? } else { x };
    let xs = ctx.shape(x);
    let rs = ctx.shape(r);
    if xs.len() != 3 || rs.len() != 3 {
        return Err(ctx.err(format!(
            "X {xs:?} and R {rs:?} must be of rank 3 ([seq, batch, input], [dirs, gates * hidden, \
             hidden])"
        )));
    }
    let (seq, batch, hidden) = (xs[0], xs[1], rs[2]);
    if let Some(h) = ctx.attr_int("hidden_size")? {
        if usize::try_from(h).ok() != Some(hidden) {
            return Err(ctx.err(format!(
                "attribute hidden_size={h} disagrees with R's shape {rs:?}"
            )));
        }
    }
    if let Some(lens) = ctx.opt_input(4)? {
        let v = ctx.const_ints(lens, "input sequence_lens")?;
        if v.len() != batch || v.iter().any(|&l| usize::try_from(l).ok() != Some(seq)) {
            return Err(ctx.err(format!(
                "sequence_lens {v:?} is not supported: Ember runs every batch row over the whole \
                 sequence ({seq} steps), so each length must be {seq}"
            )));
        }
    }
    let rows = cell.gates() * hidden;
    let state_dims = vec![dirs, batch, hidden];
    let mut optional: Vec<(Option<TensorId>, &str, Vec<usize>)> = vec![
        (ctx.opt_input(3)?, "b", vec![dirs, 2 * rows]),
        (ctx.opt_input(5)?, "h0", state_dims.clone()),
    ];
    if let RnnCell::Lstm { .. } = cell {
        optional.push((ctx.opt_input(6)?, "c0", state_dims.clone()));
        optional.push((ctx.opt_input(7)?, "p", vec![dirs, 3 * hidden]));
    }
    // Inputs are positional: an absent one before a given one becomes zeros.
    let last = optional.iter().rposition(|(t, _, _)| t.is_some());
    let mut inputs = vec![x, w, r];
    for (k, (t, what, dims)) in optional.into_iter().enumerate() {
        if last.is_none_or(|l| k > l) {
            break;
        }
        let t = match t {
            Some(t) if batch_first && (what == "h0" || what == "c0") => {
                transpose(ctx, &format!("{what}_dirs_first"), t, &[1, 0, 2])?
            }
            Some(t) => t,
            None => {
                let n = dims.iter().product();
                ctx.add_constant(what, dims, ConstData::F32(vec![0.0; n]))
            }
        };
        inputs.push(t);
    }
    let params = RnnParams {
        cell,
        direction,
        clip,
    };
    let all = ctx.emit_tmp("states", Op::Core(OpKind::Rnn(params)), inputs)?;
    let out_dims = [seq, dirs, batch, hidden];
    let outputs = if matches!(cell, RnnCell::Lstm { .. }) { 3 } else { 2 };
    for i in 0..outputs {
        let Some(name) = ctx.node.output.get(i).filter(|n| !n.is_empty()).cloned() else {
            continue;
        };
        let (start, len) = if i == 0 { (0, seq) } else { (seq + i - 1, 1) };
        let mut s = Slice {
            start: vec![0; 4],
            step: vec![1; 4],
            size: out_dims.to_vec(),
        };
        s.start[0] = start;
        s.size[0] = len;
        let what = ["y", "y_h", "y_c"][i];
        let mut id = ctx.emit_tmp(what, Op::Slice(s), vec![all])?;
        if i > 0 {
            let shape = state_dims.clone();
            id = ctx.emit_tmp(&format!("{what}_rows"), Op::Reshape { shape }, vec![id])?;
        }
        if batch_first {
            let perm: &[usize] = if i == 0 { &[2, 0, 1, 3] } else { &[1, 0, 2] };
            id = transpose(ctx, &format!("{what}_batch_first"), id, perm)?;
        }
        bind(ctx, &name, id)?;
    }
    Ok(())
}

/// `t` with its dims permuted by `perm`.
fn transpose(
    ctx: &mut NodeCtx<'_>,
    what: &str,
    t: TensorId,
    perm: &[usize],
) -> Result<TensorId, ConvertError> {
    let perm = perm.to_vec();
    ctx.emit_tmp(what, Op::Transpose { perm }, vec![t])
}

/// Binds the ONNX output `name` to `id` (renamed after it).
fn bind(ctx: &mut NodeCtx<'_>, name: &str, id: TensorId) -> Result<(), ConvertError> {
    if ctx.imp.values.contains_key(name) {
        return Err(ctx.err(format!(
            "output \"{name}\" is already defined by an earlier node"
        )));
    }
    let g = &mut ctx.imp.graph;
    if !g.is_const(id) && !g.is_input(id) {
        g.rename(id, name);
    }
    ctx.imp.values.insert(name.to_string(), id);
    Ok(())
}
