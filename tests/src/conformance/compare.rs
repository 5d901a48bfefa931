//! Output comparison with the ONNX backend test's rule: `|got - want| <= atol + rtol * |want|`
//! element-wise (numpy's `assert_allclose`), NaN equal to NaN, infinities equal when their signs are.

/// Relative and absolute tolerance of one case.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    /// Relative tolerance.
    pub rtol: f32,
    /// Absolute tolerance.
    pub atol: f32,
}

impl Default for Tolerance {
    /// ONNX's backend-test defaults.
    fn default() -> Self {
        Tolerance {
            rtol: 1e-3,
            atol: 1e-7,
        }
    }
}

/// `Ok` when every element of `got` is close to `want` (same length assumed by the caller); else a
/// message with the number of mismatches, the largest difference and the first bad element.
pub fn compare(got: &[f32], want: &[f32], tol: Tolerance) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} values, expected {}", got.len(), want.len()));
    }
    let mut bad = 0usize;
    let mut max_diff = 0f32;
    let mut first: Option<(usize, f32, f32)> = None;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if close(g, w, tol) {
            continue;
        }
        bad += 1;
        let d = (g - w).abs();
        if d > max_diff || d.is_nan() {
            max_diff = if d.is_nan() {
                f32::NAN
            } else {
                d.max(max_diff)
            };
        }
        first.get_or_insert((i, g, w));
    }
    match first {
        None => Ok(()),
        Some((i, g, w)) => Err(format!(
            "{bad} of {} values differ, max |diff| {max_diff:e} (rtol {:e}, atol {:e}); first at \
             [{i}]: got {g}, expected {w}",
            got.len(),
            tol.rtol,
            tol.atol
        )),
    }
}

fn close(g: f32, w: f32, tol: Tolerance) -> bool {
    if g.is_nan() || w.is_nan() {
        return g.is_nan() && w.is_nan();
    }
    if g.is_infinite() || w.is_infinite() {
        return g == w;
    }
    // In f64 so that the tolerance itself does not round.
    let (g, w) = (f64::from(g), f64::from(w));
    (g - w).abs() <= f64::from(tol.atol) + f64::from(tol.rtol) * w.abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_equals_nan_and_inf_needs_its_sign() {
        let t = Tolerance::default();
        assert!(compare(&[f32::NAN, f32::INFINITY], &[f32::NAN, f32::INFINITY], t).is_ok());
        assert!(compare(&[f32::NAN], &[1.0], t).is_err());
        assert!(compare(&[f32::INFINITY], &[f32::NEG_INFINITY], t).is_err());
    }

    #[test]
    fn relative_and_absolute_parts() {
        let t = Tolerance::default();
        assert!(compare(&[1000.9], &[1000.0], t).is_ok());
        assert!(compare(&[1001.1], &[1000.0], t).is_err());
        assert!(compare(&[1e-8], &[0.0], t).is_ok());
        let e = compare(&[0.0, 2.0], &[0.0, 1.0], t).unwrap_err();
        assert!(e.contains("1 of 2") && e.contains("[1]"), "{e}");
    }
}
