//! Activations that producing ops apply to their results (fused), and the NaN-propagating scalar
//! helpers (`relu`, `clip`, `max_nan`, `min_nan`) they share with the unary and binary ops.

pub use crate::schema::Activation;

impl Activation {
    /// Applies the activation to one value.
    #[inline(always)]
    pub fn apply(self, x: f32) -> f32 {
        match self {
            Activation::None => x,
            Activation::Relu => relu(x),
            Activation::Relu6 => clip(x, 0.0, 6.0),
            Activation::Clip { min, max } => clip(x, min, max),
        }
    }
}

/// `max(x, 0)`, with NaN passed through (as ONNX and onnxruntime do; `f32::max` would give 0).
#[inline(always)]
pub fn relu(x: f32) -> f32 {
    if x < 0.0 {
        0.0
    } else {
        x
    }
}

/// `min(max(x, min), max)` as ONNX `Clip` defines it: the lower bound first, so `min > max` gives `max`
/// (and cannot panic, unlike `f32::clamp`); NaN passes through.
#[inline(always)]
pub fn clip(x: f32, min: f32, max: f32) -> f32 {
    let lower = if x < min { min } else { x };
    if lower > max {
        max
    } else {
        lower
    }
}

/// The larger of `a` and `b`, NaN if either is NaN (numpy `maximum`, ONNX `Max`).
#[inline(always)]
pub fn max_nan(a: f32, b: f32) -> f32 {
    if a > b || a.is_nan() {
        a
    } else {
        b
    }
}

/// The smaller of `a` and `b`, NaN if either is NaN (numpy `minimum`, ONNX `Min`).
#[inline(always)]
pub fn min_nan(a: f32, b: f32) -> f32 {
    if a < b || a.is_nan() {
        a
    } else {
        b
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
    fn nan_passes_through() {
        let clip = Activation::Clip { min: 3.0, max: 1.0 };
        for act in [Activation::Relu, Activation::Relu6, clip] {
            assert!(act.apply(f32::NAN).is_nan(), "{act:?}");
        }
        assert!(super::max_nan(f32::NAN, 1.0).is_nan());
        assert!(super::max_nan(1.0, f32::NAN).is_nan());
        assert!(super::min_nan(f32::NAN, 1.0).is_nan());
        assert!(super::min_nan(1.0, f32::NAN).is_nan());
        assert_eq!(super::max_nan(-1.0, 2.0), 2.0);
        assert_eq!(super::min_nan(-1.0, 2.0), -1.0);
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
