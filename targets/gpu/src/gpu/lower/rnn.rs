//! Lowering of the recurrent layer (`OpKind::Rnn`) onto `kernels::rnn`: its `meta` table, and one
//! launch per phase and time step (the kernel's module doc says why a step is not one launch).

use ember_core::ops::nn::rnn::{RnnCell, RnnDirection, RnnParams};

use super::{add_table, u32s, Launch, OpView, Table, Work};
use crate::kernels::rnn::{rnn_cell, rnn_meta as m, rnn_phase};

/// The launches of a recurrent layer.
pub(super) fn lower(
    op: &OpView<'_>,
    p: &RnnParams,
    tables: &mut Vec<Table>,
) -> Result<Work, String> {
    let (xd, rd) = (op.input_dims[0], op.input_dims[2]);
    let has = |k: usize| op.inputs.get(k).copied();
    let (cell, linear_before_reset) = match p.cell {
        RnnCell::Simple => (rnn_cell::SIMPLE, false),
        RnnCell::Gru {
            linear_before_reset,
        } => (rnn_cell::GRU, linear_before_reset),
        RnnCell::Lstm { .. } => (rnn_cell::LSTM, false),
    };
    let mut meta = vec![0usize; m::LEN];
    meta[m::SEQ] = xd[0];
    meta[m::BATCH] = xd[1];
    meta[m::INPUT] = xd[2];
    meta[m::HIDDEN] = rd[2];
    meta[m::DIRS] = p.direction.count();
    meta[m::REVERSE] = usize::from(p.direction == RnnDirection::Reverse);
    meta[m::CELL] = cell as usize;
    meta[m::LINEAR_BEFORE_RESET] = usize::from(linear_before_reset);
    for (field, k) in [(m::HAS_B, 3), (m::HAS_H0, 4), (m::HAS_C0, 5), (m::HAS_P, 6)] {
        meta[field] = usize::from(has(k).is_some());
    }
    let units = p.direction.count() * xd[1] * rd[2];
    let meta = add_table(tables, Table::U32(u32s(meta)?));
    let seq = u32::try_from(xd[0]).map_err(|_| "the sequence is longer than u32".to_string())?;
    let launch = |phase: u32, step: u32| Launch::Rnn {
        x: op.inputs[0],
        w: op.inputs[1],
        r: op.inputs[2],
        b: has(3),
        h0: has(4),
        c0: has(5),
        p: has(6),
        meta,
        clip: p.clip,
        phase,
        step,
        units,
    };
    let reset = cell == rnn_cell::GRU && !linear_before_reset;
    let mut launches = vec![launch(rnn_phase::INIT, 0)];
    for step in 0..seq {
        if reset {
            launches.push(launch(rnn_phase::RESET, step));
        }
        launches.push(launch(rnn_phase::STEP, step));
        launches.push(launch(rnn_phase::COPY, step));
    }
    Ok(Work::Launches(launches))
}
