//! The recurrent layer (`OpKind::Rnn`) on Vulkan against the CPU reference kernel, within 1e-4
//! relative: every cell (RNN, GRU with `linear_before_reset` 0 and 1, LSTM with and without
//! peepholes), every direction, with and without bias and initial states, clipped or not, on random
//! sizes (a sequence of 0 included). Skips (printing why) without a Vulkan device unless
//! `EMBER_REQUIRE_GPU=1`.

use crate::common;

use common::{check_op, vulkan, Rng};
use ember_core::ops::nn::rnn::{RnnCell, RnnDirection, RnnParams};
use ember_core::OpKind;
use ember_testkit::model::{input, weight};
use ember_testkit::shape::numel;

#[test]
fn rnn_cells_directions_and_inputs() {
    let Some(gpu) = vulkan() else { return };
    let mut rng = Rng::new(15);
    let cells = [
        RnnCell::Simple,
        RnnCell::Gru {
            linear_before_reset: false,
        },
        RnnCell::Gru {
            linear_before_reset: true,
        },
        RnnCell::Lstm { peepholes: false },
        RnnCell::Lstm { peepholes: true },
    ];
    let directions = [
        RnnDirection::Forward,
        RnnDirection::Reverse,
        RnnDirection::Bidirectional,
    ];
    for (case, &cell) in cells.iter().cycle().take(15).enumerate() {
        let direction = directions[case % 3];
        let (seq, batch, inp, hidden) =
            (rng.int(0, 4), rng.int(1, 3), rng.int(1, 4), rng.int(1, 5));
        let (dirs, rows) = (direction.count(), cell.gates() * hidden);
        let clip = if rng.bool() { 0.8 } else { f32::INFINITY };
        let lstm = matches!(cell, RnnCell::Lstm { .. });
        let peepholes = cell == RnnCell::Lstm { peepholes: true };
        // How many of the optional inputs b, h0, c0, p it has: p needs all before it.
        let most = if lstm { 3 } else { 2 };
        let optional = if peepholes { 4 } else { rng.int(0, most) };
        let x = [seq, batch, inp];
        let mut operands = vec![
            input(&x, rng.floats(numel(&x), -1.0, 1.0)),
            weight(&[dirs, rows, inp], rng.floats(dirs * rows * inp, -1.0, 1.0)),
            weight(
                &[dirs, rows, hidden],
                rng.floats(dirs * rows * hidden, -1.0, 1.0),
            ),
        ];
        let dims = [
            vec![dirs, 2 * rows],
            vec![dirs, batch, hidden],
            vec![dirs, batch, hidden],
            vec![dirs, 3 * hidden],
        ];
        for d in dims.iter().take(optional) {
            operands.push(input(d, rng.floats(numel(d), -1.0, 1.0)));
        }
        let p = RnnParams {
            cell,
            direction,
            clip,
        };
        check_op(
            gpu,
            OpKind::Rnn(p),
            &operands,
            &[seq + 2, dirs, batch, hidden],
        );
    }
}
