//! Parameters of the data-dependent gathers and scatters (`ops::array::gather_scatter_elements`,
//! `ops::array::gather_scatter_nd`): ONNX `GatherElements`/`ScatterElements` and
//! `GatherND`/`ScatterND`, one kind per pair with a mode.

use serde::{Deserialize, Serialize};

/// How a scatter combines an update with the element already there.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ScatterReduction {
    /// The update replaces the element (a later update of the same element wins).
    None,
    /// `y += update`.
    Add,
    /// `y *= update`.
    Mul,
    /// `y = max(y, update)`.
    Max,
    /// `y = min(y, update)`.
    Min,
}

/// Whether the op reads elements at the indices (gather) or writes updates there (scatter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum GatherScatterMode {
    /// Inputs `data, indices`; the output takes its values from `data` at the indices.
    Gather,
    /// Inputs `data, indices, updates`; the output is `data` with the updates written at the indices.
    Scatter(ScatterReduction),
}

/// Parameters of `GatherElements` / `ScatterElements`: indices along one axis, element by element.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GatherScatterElementsParams {
    /// The axis the indices index (non-negative, below the rank).
    pub axis: u8,
    /// Gather, or scatter with a reduction.
    pub mode: GatherScatterMode,
}

/// Parameters of `GatherND` / `ScatterND`: the last axis of the indices holds a tuple of coordinates
/// into `data`, which picks an element or a slice.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GatherScatterNdParams {
    /// Leading axes shared by `data` and the indices, gathered batch by batch (0 for a scatter).
    pub batch_dims: u8,
    /// Gather, or scatter with a reduction.
    pub mode: GatherScatterMode,
}
