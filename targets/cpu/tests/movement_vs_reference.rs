//! Transposes of every level against `ember-core`'s reference kernel: every permutation of ranks 1
//! to 6, with axes of 1 (which the kernel drops), axes that stay neighbours (which it merges), sizes
//! around and above its tile, and empty tensors. A transpose moves values: the bits must match.

mod common;

use common::{check, levels, same_bits};
use ember_core::ops::array::transpose::{self, TransposeParams};
use ember_core::ops::{In, Out};
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
    let mut y = vec![0.0; x.len()];
    (k.transpose)(
        p,
        In {
            data: x,
            dims: x_dims,
        },
        Out {
            data: &mut y,
            dims: y_dims,
        },
    );
    y
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
