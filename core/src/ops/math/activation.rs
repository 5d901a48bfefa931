//! Activations that producing ops apply to their results (fused), and the element-wise unary ops.

use serde::{Deserialize, Serialize};

/// An activation fused into the op that produces a tensor (Conv2d, FullyConnected, Binary).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Activation {
    /// Identity.
    None,
    /// `max(x, 0)`.
    Relu,
    /// `min(max(x, 0), 6)`.
    Relu6,
    /// `min(max(x, min), max)`.
    Clip {
        /// Lower bound.
        min: f32,
        /// Upper bound.
        max: f32,
    },
}

impl Activation {
    /// Applies the activation to one value.
    #[inline(always)]
    pub fn apply(self, x: f32) -> f32 {
        match self {
            Activation::None => x,
            Activation::Relu => x.max(0.0),
            Activation::Relu6 => x.clamp(0.0, 6.0),
            // Written as max then min (not `clamp`) so that min > max cannot panic.
            Activation::Clip { min, max } => x.max(min).min(max),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Activation;

    #[test]
    fn apply_matches_definitions() {
        let xs = [-7.5, -0.0, 0.0, 0.25, 5.9, 6.0, 6.5, 100.0];
        for x in xs {
            assert_eq!(Activation::None.apply(x), x);
            assert_eq!(Activation::Relu.apply(x), if x > 0.0 { x } else { 0.0 });
            assert_eq!(Activation::Relu6.apply(x), x.clamp(0.0, 6.0));
            let clip = Activation::Clip {
                min: -1.0,
                max: 2.0,
            };
            assert_eq!(clip.apply(x), x.clamp(-1.0, 2.0));
        }
    }

    #[test]
    fn clip_with_min_above_max_gives_max() {
        // ONNX Clip: when min > max, every output is max. Must not panic (unlike `f32::clamp`).
        let clip = Activation::Clip { min: 3.0, max: 1.0 };
        for x in [-5.0, 0.0, 2.0, 10.0] {
            assert_eq!(clip.apply(x), 1.0);
        }
    }
}
