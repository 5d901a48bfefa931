//! Parameters of the data-movement ops (`ops::array`): concatenation, transposition, padding, slicing,
//! gathering and resizing.

use serde::{Deserialize, Serialize};

use super::tensor::MAX_RANK;

// One module per file of this folder: a new op's parameters need no line here.
automod::dir!(pub "src/schema/array");

/// Parameters of a concatenation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ConcatParams {
    /// The axis to join along (non-negative).
    pub axis: u8,
}

/// Parameters of a transpose: output dim `i` is input dim `perm[i]` (only the first `rank` entries count).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TransposeParams {
    /// The permutation.
    pub perm: [u8; MAX_RANK],
}

/// Parameters of a constant pad: `before[i]` and `after[i]` elements added on axis `i` (first `rank`
/// entries count).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PadParams {
    /// Elements added before each axis.
    pub before: [u32; MAX_RANK],
    /// Elements added after each axis.
    pub after: [u32; MAX_RANK],
    /// The fill value.
    pub value: f32,
}

/// Parameters of a slice (only the first `rank` entries count).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct SliceParams {
    /// Input index of the first element kept on each axis.
    pub start: [u32; MAX_RANK],
    /// Input index step between kept elements on each axis (non-zero, may be negative).
    pub step: [i32; MAX_RANK],
}

/// Parameters of a gather.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct GatherParams {
    /// The axis indexed (non-negative).
    pub axis: u8,
}

/// How an output coordinate maps to an input coordinate (ONNX `coordinate_transformation_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CoordMode {
    /// `(o + 0.5) / scale - 0.5`.
    HalfPixel,
    /// As `HalfPixel`, but 0 when `in * scale` is at most 1.
    PytorchHalfPixel,
    /// `o * (in - 1) / (in * scale - 1)` (0 when `in * scale` is at most 1).
    AlignCorners,
    /// `o / scale`.
    Asymmetric,
    /// As `HalfPixel`, shifted so that the centre of the input maps to the centre of the output when
    /// `in * scale` is not a whole number: `in / 2 * (1 - out / (in * scale)) + (o + 0.5) / scale - 0.5`.
    HalfPixelSymmetric,
}

/// How a nearest resize rounds an input coordinate (ONNX `nearest_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum NearestMode {
    /// Round to nearest, halves down.
    RoundPreferFloor,
    /// Round to nearest, halves up.
    RoundPreferCeil,
    /// Round down.
    Floor,
    /// Round up.
    Ceil,
}

/// Interpolation.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ResizeMode {
    /// The nearest input element.
    Nearest(NearestMode),
    /// Bilinear interpolation of the four neighbours (coordinates clamped to the input).
    Linear,
    /// Bicubic interpolation of the 4 x 4 neighbours (Keys' kernel with coefficient `a`); taps off
    /// the input read its edge, or get no weight with `exclude_outside` (the others renormalized).
    /// With `antialias`, a downscale by `s` widens the kernel by `1 / s` (and the weights sum to 1).
    Cubic {
        /// The kernel's coefficient (ONNX `cubic_coeff_a`: -0.75, or -0.5 as in TensorFlow).
        a: f32,
        /// Taps off the input get no weight instead of reading the edge.
        exclude_outside: bool,
        /// Downscales widen the kernel by `1 / scale` (ONNX `antialias=1`).
        antialias: bool,
    },
    /// Bilinear interpolation with antialiasing (ONNX `mode=linear antialias=1`): a downscale by `s`
    /// widens the triangle kernel by `1 / s`, the weights normalized to sum 1.
    LinearAntialias {
        /// Taps off the input get no weight instead of reading the edge.
        exclude_outside: bool,
    },
}

/// Parameters of a resize.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ResizeParams {
    /// Interpolation.
    pub mode: ResizeMode,
    /// Coordinate transformation.
    pub coord: CoordMode,
    /// Scale of the H axis.
    pub scale_h: f32,
    /// Scale of the W axis.
    pub scale_w: f32,
    /// The last axis is channels (NHWC: H and W are the two axes before it); otherwise H and W are
    /// the last two axes (NCHW).
    pub channels_last: bool,
}
