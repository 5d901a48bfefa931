//! Transposes and resizes of every level against `ember-core`'s reference kernels. Transposes: every
//! permutation of ranks 1 to 6, with axes of 1 (which the kernel drops), axes that stay neighbours
//! (which it merges), sizes around and above its tile, and empty tensors. Resizes: nearest (every
//! rounding) and bilinear, every coordinate mode, both layouts, up and down, widths past the kernel's
//! block of columns. Both compute the reference's own arithmetic: the bits must match.

mod common;

use common::{check, levels, same_bits};
use ember_core::ops::array::resize::{self, CoordMode, NearestMode, ResizeMode, ResizeParams};
use ember_core::ops::array::transpose::{self, TransposeParams};
use ember_core::{Kernels, REFERENCE};
use proptest::collection::vec;
use proptest::prelude::*;

fn run(
    k: &Kernels,
    p: &TransposeParams,
    x: &[f32],
    x_dims: &[usize],
    y_dims: &[usize],
) -> Vec<f32> {
    common::run_one_input(x, x_dims, y_dims, 0.0, |x, y| (k.transpose)(p, x, y))
}

fn check_transpose(x_dims: &[usize], perm: &[usize]) -> Result<(), TestCaseError> {
    let mut p = TransposeParams { perm: [0; 6] };
    for (slot, &a) in p.perm.iter_mut().zip(perm) {
        *slot = a as u8;
    }
    let y_dims: Vec<usize> = perm.iter().map(|&a| x_dims[a]).collect();
    prop_assert!(transpose::validate(&p, x_dims, &y_dims).is_ok());
    let x: Vec<f32> = (0..x_dims.iter().product::<usize>())
        .map(|i| i as f32)
        .collect();
    let want = run(&REFERENCE, &p, &x, x_dims, &y_dims);
    for (isa, k) in levels() {
        let got = run(k, &p, &x, x_dims, &y_dims);
        check(
            &format!("{isa} {x_dims:?} {perm:?}"),
            &got,
            &want,
            |_, g, w| same_bits(g, w),
        )?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn transpose_matches_reference(
        (x_dims, perm) in vec(prop_oneof![4 => 1usize..=4, 2 => Just(1usize), 1 => 5usize..=37, 1 => Just(0usize)], 1..=6)
            .prop_filter("at most a few thousand elements", |d| d.iter().product::<usize>() <= 8000)
            .prop_flat_map(|d| {
                let perm: Vec<usize> = (0..d.len()).collect();
                (Just(d), Just(perm).prop_shuffle())
            })
    ) {
        check_transpose(&x_dims, &perm)?;
    }
}

#[test]
fn transposes_of_the_models() {
    let cases: [(&[usize], &[usize]); 6] = [
        (&[1, 3, 160, 160], &[0, 2, 3, 1]),
        (&[1, 160, 160, 3], &[0, 3, 1, 2]),
        (&[1, 120, 40], &[0, 2, 1]),
        (&[1, 40, 3, 8, 15], &[2, 0, 3, 1, 4]),
        (&[1, 8, 40, 15], &[0, 1, 3, 2]),
        (&[2, 33, 17, 5], &[3, 1, 0, 2]),
    ];
    for (d, perm) in cases {
        check_transpose(d, perm).unwrap();
    }
}

/// `x` resized by `k` to `y_dims`.
fn run_resize(
    k: &Kernels,
    p: &ResizeParams,
    x: &[f32],
    x_dims: &[usize],
    y_dims: &[usize],
) -> Vec<f32> {
    common::run_one_input(x, x_dims, y_dims, f32::NAN, |x, y| (k.resize)(p, x, y))
}

fn resize_params() -> impl Strategy<Value = ResizeParams> {
    let nearest = prop_oneof![
        Just(NearestMode::RoundPreferFloor),
        Just(NearestMode::RoundPreferCeil),
        Just(NearestMode::Floor),
        Just(NearestMode::Ceil),
    ];
    let mode = prop_oneof![
        nearest.prop_map(ResizeMode::Nearest),
        Just(ResizeMode::Linear)
    ];
    let coord = prop_oneof![
        Just(CoordMode::HalfPixel),
        Just(CoordMode::PytorchHalfPixel),
        Just(CoordMode::AlignCorners),
        Just(CoordMode::Asymmetric),
    ];
    (mode, coord, any::<bool>()).prop_map(|(mode, coord, channels_last)| ResizeParams {
        mode,
        coord,
        scale_h: 1.0,
        scale_w: 1.0,
        channels_last,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn resize_matches_reference(
        base in resize_params(),
        (h_in, w_in, h_out, w_out) in (1usize..=9, 1usize..=9, 1usize..=12, prop_oneof![3 => 1usize..=24, 1 => 250usize..=600]),
        (planes, channels) in (1usize..=3, 1usize..=5),
        from_sizes in any::<bool>(),
        x in proptest::collection::vec(common::value(100.0), 9 * 9 * 3 * 5),
    ) {
        // Scales as a model gives them: exactly `out / in` (sizes given), or a rounder factor whose
        // resized length is not a whole number of elements.
        let scale = |o: usize, i: usize| if from_sizes { o as f32 / i as f32 } else { (o as f32 / i as f32 * 4.0).round().max(1.0) / 4.0 };
        let p = ResizeParams { scale_h: scale(h_out, h_in), scale_w: scale(w_out, w_in), ..base };
        let (x_dims, y_dims) = if p.channels_last {
            (vec![planes, h_in, w_in, channels], vec![planes, h_out, w_out, channels])
        } else {
            (vec![planes, channels, h_in, w_in], vec![planes, channels, h_out, w_out])
        };
        prop_assert!(resize::validate(&p, &x_dims, &y_dims).is_ok());
        let x = &x[..x_dims.iter().product::<usize>()];
        let want = run_resize(&REFERENCE, &p, x, &x_dims, &y_dims);
        for (isa, k) in levels() {
            let got = run_resize(k, &p, x, &x_dims, &y_dims);
            check(&format!("{isa} {p:?} {x_dims:?} -> {y_dims:?}"), &got, &want, |_, g, w| same_bits(g, w))?;
        }
    }
}
