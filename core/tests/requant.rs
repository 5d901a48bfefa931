//! The fixed-point primitives (`ops::quant::requant`) against exact i64/i128 mathematics.

use ember_core::ops::math::activation::Activation;
use ember_core::ops::quant::requant::{
    activation_range, check_per_channel, clamp_to_i8, multiply_by_quantized_multiplier,
    quantize_multiplier, rounding_divide_by_pot, saturating_rounding_doubling_high_mul, MAX_SHIFT,
    MIN_SHIFT,
};
use proptest::prelude::*;

use ember_testkit::ops_int8::{div_pow2_half_away, mbqm_definition};

/// A Q31 multiplier as the converter makes them (`[2^30, 2^31)`), now and then an extreme or 0.
fn multiplier() -> impl Strategy<Value = i32> {
    prop_oneof![
        8 => (1i32 << 30)..=i32::MAX,
        1 => Just(0),
        1 => Just(i32::MAX),
        1 => Just(1 << 30),
        1 => any::<i32>(),
    ]
}

/// An int32 value: anything, or small ones (accumulators), or the extremes.
fn int32() -> impl Strategy<Value = i32> {
    prop_oneof![
        4 => any::<i32>(),
        4 => -100_000i32..100_000,
        1 => Just(i32::MIN),
        1 => Just(i32::MAX),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn doubling_high_mul_matches_exact_rounding(a in int32(), b in int32()) {
        let exact = i128::from(a) * i128::from(b);
        // round(a * b / 2^31), ties toward +infinity; only MIN * MIN overflows, and saturates.
        let want = if a == i32::MIN && b == i32::MIN {
            i128::from(i32::MAX)
        } else {
            (exact + (1 << 30)).div_euclid(1 << 31)
        };
        prop_assert_eq!(i128::from(saturating_rounding_doubling_high_mul(a, b)), want);
    }

    #[test]
    fn rounding_divide_by_pot_matches_exact_rounding(x in int32(), e in 0i32..=62) {
        let want = div_pow2_half_away(i128::from(x), e as u32);
        prop_assert_eq!(i128::from(rounding_divide_by_pot(x, e)), want);
    }

    #[test]
    fn mbqm_matches_definition(
        (x, shift) in (MIN_SHIFT..=MAX_SHIFT).prop_flat_map(|shift| {
            // `x << max(shift, 0)` fits in int32 (beyond, TFLite's C is undefined; the kernels wrap and
            // never panic, see below).
            let bound = i32::MAX >> shift.max(0);
            (prop_oneof![3 => -bound..=bound, 1 => Just(bound), 1 => Just(-bound - 1)], Just(shift))
        }),
        m in multiplier(),
    ) {
        let got = multiply_by_quantized_multiplier(x, m, shift);
        prop_assert_eq!(i64::from(got), mbqm_definition(x.into(), m, shift));
        // And within 1 of the exact real product x * m * 2^(shift - 31), for representable results.
        let real = (i128::from(x) * i128::from(m)) as f64 * 2f64.powi(shift - 31);
        if real.abs() < 2e9 {
            prop_assert!((f64::from(got) - real).abs() <= 1.0, "{} vs {}", got, real);
        }
    }

    #[test]
    fn mbqm_never_panics(x in any::<i32>(), m in any::<i32>(), shift in any::<i32>()) {
        let _ = multiply_by_quantized_multiplier(x, m, shift);
        let _ = rounding_divide_by_pot(x, shift);
    }

    #[test]
    fn quantize_multiplier_is_within_half_a_q31_step(
        log2 in -40.0f64..29.0,
    ) {
        let real = log2.exp2();
        let (m, shift) = quantize_multiplier(real);
        if real < 2f64.powi(-32) {
            // Tiny multipliers may be flushed to zero (TFLite does so below 2^-32 after rounding).
            prop_assert!((m, shift) == (0, 0) || (MIN_SHIFT..=MAX_SHIFT).contains(&shift));
            return Ok(());
        }
        prop_assert!((1 << 30..=i32::MAX).contains(&m), "multiplier {}", m);
        prop_assert!((MIN_SHIFT..=MAX_SHIFT).contains(&shift), "shift {}", shift);
        // |m - real * 2^(31 - shift)| <= 1/2: the nearest Q31 mantissa.
        let ideal = real * 2f64.powi(31 - shift);
        prop_assert!((f64::from(m) - ideal).abs() <= 0.5, "{} vs {}", m, ideal);
        prop_assert_eq!(check_per_channel(&[m, shift]), Ok(()));
    }
}

#[test]
fn known_primitives() {
    // 0.5 * 0.5 = 0.25 in Q31; -1 * -1 saturates.
    assert_eq!(
        saturating_rounding_doubling_high_mul(1 << 30, 1 << 30),
        1 << 29
    );
    assert_eq!(
        saturating_rounding_doubling_high_mul(i32::MIN, i32::MIN),
        i32::MAX
    );
    // Ties: +0.5 rounds up, -0.5 rounds up (toward +infinity) in the high multiply...
    assert_eq!(saturating_rounding_doubling_high_mul(1, 1 << 30), 1);
    assert_eq!(saturating_rounding_doubling_high_mul(-1, 1 << 30), 0);
    // ...and away from zero in the rounding shift.
    assert_eq!(rounding_divide_by_pot(5, 1), 3);
    assert_eq!(rounding_divide_by_pot(-5, 1), -3);
    assert_eq!(rounding_divide_by_pot(-6, 2), -2);
    assert_eq!(rounding_divide_by_pot(i32::MIN, 31), -1);
    assert_eq!(rounding_divide_by_pot(i32::MAX, 31), 1);
    // 100 * 0.75 = 75; 100 * 3 = 300 (shift 2: 0.75 * 4); 7 * 0.25 = 1.75 -> 2.
    let (m, s) = quantize_multiplier(0.75);
    assert_eq!((m, s), (3 << 29, 0));
    assert_eq!(multiply_by_quantized_multiplier(100, m, s), 75);
    let (m, s) = quantize_multiplier(3.0);
    assert_eq!((m, s), (3 << 29, 2));
    assert_eq!(multiply_by_quantized_multiplier(100, m, s), 300);
    assert_eq!(multiply_by_quantized_multiplier(7, 1 << 30, -1), 2);
    assert_eq!(multiply_by_quantized_multiplier(-7, 1 << 30, -1), -2);
    // 2^-33 is flushed to zero.
    assert_eq!(quantize_multiplier(2f64.powi(-33)), (0, 0));
    assert_eq!(quantize_multiplier(2f64.powi(-32)), (1 << 30, -31));
}

#[test]
fn activation_ranges() {
    // Scale 0.1, zero point -10: 0 is -10, 6 is 50.
    assert_eq!(activation_range(Activation::None, 0.1, -10), (-128, 127));
    assert_eq!(activation_range(Activation::Relu, 0.1, -10), (-10, 127));
    assert_eq!(activation_range(Activation::Relu6, 0.1, -10), (-10, 50));
    let clip = Activation::Clip {
        min: -1.0,
        max: 100.0,
    };
    assert_eq!(activation_range(clip, 0.1, -10), (-20, 127));
    assert_eq!(clamp_to_i8(1000, -5, 5), 5);
    assert_eq!(clamp_to_i8(-1000, -5, 5), -5);
    assert_eq!(clamp_to_i8(0, 3, 1), 1); // crossed bounds give the upper one
}

#[test]
fn check_per_channel_rejects_bad_rows() {
    assert_eq!(check_per_channel(&[1 << 30, -3, i32::MAX, 30]), Ok(()));
    assert!(check_per_channel(&[1 << 30]).is_err()); // odd length
    assert!(check_per_channel(&[-1, 0]).is_err()); // negative multiplier
    assert!(check_per_channel(&[1 << 30, 31]).is_err()); // shift too large
    assert!(check_per_channel(&[1 << 30, -32]).is_err()); // shift too small
}
