//! Parameters of a recurrent layer (`ops::nn::rnn`): ONNX `RNN`, `GRU` and `LSTM`.

use serde::{Deserialize, Serialize};

/// The cell a recurrent layer runs at each time step (ONNX gate orders; the default activations).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RnnCell {
    /// `h = tanh(W x + R h + Wb + Rb)`; one gate.
    Simple,
    /// Gated recurrent unit, gates `z, r, h` in that order.
    Gru {
        /// The reset gate multiplies `R_h h + Rb_h` (ONNX `linear_before_reset=1`) instead of `h`.
        linear_before_reset: bool,
    },
    /// Long short-term memory, gates `i, o, f, c` in that order.
    Lstm {
        /// Input 6 holds the peepholes `P` (`[dirs, 3 * hidden]`, `i, o, f`).
        peepholes: bool,
    },
}

impl RnnCell {
    /// Gates per hidden unit: the rows of `W` and `R` are `gates * hidden` per direction.
    pub const fn gates(self) -> usize {
        match self {
            RnnCell::Simple => 1,
            RnnCell::Gru { .. } => 3,
            RnnCell::Lstm { .. } => 4,
        }
    }
}

/// Which way a recurrent layer walks the sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RnnDirection {
    /// From the first time step to the last.
    Forward,
    /// From the last time step to the first.
    Reverse,
    /// Both: direction 0 forward, direction 1 reverse.
    Bidirectional,
}

impl RnnDirection {
    /// Number of directions (the `dirs` axis of the weights and the output).
    pub const fn count(self) -> usize {
        match self {
            RnnDirection::Bidirectional => 2,
            _ => 1,
        }
    }
}

/// Parameters of a recurrent layer.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RnnParams {
    /// The cell.
    pub cell: RnnCell,
    /// The direction(s).
    pub direction: RnnDirection,
    /// Gate pre-activations are clipped to `[-clip, clip]` (ONNX `clip`); infinity for none.
    pub clip: f32,
}
