//! Kernels that read computed positions: strided slice, gather, broadcast copy, resize.

use ember_core::ops::array::broadcast;
use ember_core::ops::array::gather::{self, GatherParams};
use ember_core::ops::array::resize::{self, CoordMode, NearestMode, ResizeMode, ResizeParams};
use ember_core::ops::array::slice::{self, SliceParams};
use ember_core::ops::{In, Out, MAX_RANK};
use ember_core::Kernels;
use proptest::collection::vec;
use proptest::prelude::*;

use super::{assert_close, assert_known, dim, flat, numel, unflat, values, Want};

fn exact(values: impl IntoIterator<Item = f32>) -> Vec<Want> {
    values
        .into_iter()
        .map(|v| Want::exact(f64::from(v)))
        .collect()
}

/// Runs a one-input kernel into a NaN-filled output.
fn run1(y_dims: &[usize], f: impl FnOnce(Out<'_>)) -> Vec<f32> {
    let mut y = vec![f32::NAN; numel(y_dims)];
    f(Out {
        data: &mut y,
        dims: y_dims,
    });
    y
}

// ---------------------------------------------------------------------------------------------- slice

/// A strided slice.
#[derive(Clone, Debug)]
pub struct SliceCase {
    p: SliceParams,
    x_dims: Vec<usize>,
    y_dims: Vec<usize>,
    x: Vec<f32>,
}

/// Rank 0 to 4; per axis a step in `-3..=3` (not 0), a start inside the axis and any count that stays
/// inside; entries past the rank hold junk.
pub fn slice_case() -> impl Strategy<Value = SliceCase> {
    vec((1usize..=5, prop_oneof![-3i32..=-1, 1i32..=3]), 0..=4)
        .prop_flat_map(|axes| {
            let starts: Vec<_> = axes.iter().map(|&(d, _)| 0..d).collect();
            (Just(axes), starts)
        })
        .prop_flat_map(|(axes, starts)| {
            let counts: Vec<_> = axes
                .iter()
                .zip(&starts)
                .map(|(&(d, step), &s)| {
                    let room = if step > 0 { d - 1 - s } else { s };
                    0..=room / step.unsigned_abs() as usize + 1
                })
                .collect();
            let n = numel(&axes.iter().map(|a| a.0).collect::<Vec<_>>());
            (Just(axes), Just(starts), counts, values(n))
        })
        .prop_map(|(axes, starts, counts, x)| {
            let mut p = SliceParams {
                start: [99; MAX_RANK],
                step: [0; MAX_RANK],
            };
            for i in 0..axes.len() {
                p.start[i] = starts[i] as u32;
                p.step[i] = axes[i].1;
            }
            SliceCase {
                p,
                x_dims: axes.iter().map(|a| a.0).collect(),
                y_dims: counts,
                x,
            }
        })
}

/// The table's slice against `y[j] = x[start + j * step]` per axis; one more element on any axis is
/// rejected by `validate`.
pub fn check_slice(k: &Kernels, c: &SliceCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(slice::validate(&c.p, &c.x_dims, &c.y_dims), Ok(()));
    let want = (0..numel(&c.y_dims)).map(|pos| {
        let j = unflat(pos, &c.y_dims);
        let i: Vec<usize> = (0..j.len())
            .map(|a| (c.p.start[a] as i64 + j[a] as i64 * i64::from(c.p.step[a])) as usize)
            .collect();
        c.x[flat(&i, &c.x_dims)]
    });
    let y = run1(&c.y_dims, |y| {
        (k.slice)(
            &c.p,
            In {
                data: &c.x,
                dims: &c.x_dims,
            },
            y,
        )
    });
    assert_close(&y, &exact(want))?;
    if !c.y_dims.contains(&0) {
        for a in 0..c.y_dims.len() {
            let mut longer = c.y_dims.clone();
            longer[a] += 1;
            let last = c.p.start[a] as i64 + c.y_dims[a] as i64 * i64::from(c.p.step[a]);
            if last < 0 || last >= c.x_dims[a] as i64 {
                prop_assert!(slice::validate(&c.p, &c.x_dims, &longer).is_err());
            }
        }
    }
    Ok(())
}

// --------------------------------------------------------------------------------------------- gather

/// A gather with valid indices.
#[derive(Clone, Debug)]
pub struct GatherCase {
    p: GatherParams,
    x_dims: Vec<usize>,
    idx_dims: Vec<usize>,
    idx: Vec<f32>,
    x: Vec<f32>,
}

/// Input rank 1 to 4 (the gathered axis 1 to 4 long), indices of rank 0 to 2.
pub fn gather_case() -> impl Strategy<Value = GatherCase> {
    (vec(1usize..=4, 1..=4), vec(dim(), 0..=2))
        .prop_flat_map(|(x_dims, idx_dims)| {
            let axis = 0..x_dims.len() as u8;
            (Just(x_dims), Just(idx_dims), axis)
        })
        .prop_flat_map(|(x_dims, idx_dims, axis)| {
            let len = x_dims[usize::from(axis)];
            let idx = vec((0..len).prop_map(|i| i as f32), numel(&idx_dims));
            let x = values(numel(&x_dims));
            (Just(x_dims), Just(idx_dims), Just(axis), idx, x)
        })
        .prop_map(|(x_dims, idx_dims, axis, idx, x)| GatherCase {
            p: GatherParams { axis },
            x_dims,
            idx_dims,
            idx,
            x,
        })
}

/// The table's gather against `y[a.., j.., b..] = x[a.., idx[j..], b..]`.
pub fn check_gather(k: &Kernels, c: &GatherCase) -> Result<(), TestCaseError> {
    let axis = usize::from(c.p.axis);
    let mut y_dims = c.x_dims[..axis].to_vec();
    y_dims.extend(&c.idx_dims);
    y_dims.extend(&c.x_dims[axis + 1..]);
    prop_assert_eq!(
        gather::validate(&c.p, &c.x_dims, &c.idx_dims, &y_dims),
        Ok(())
    );
    prop_assert_eq!(gather::validate_indices(&c.p, &c.x_dims, &c.idx), Ok(()));
    let len = c.x_dims[axis] as f32;
    for bad in [-1.0, len, 0.5, f32::NAN] {
        prop_assert!(gather::validate_indices(&c.p, &c.x_dims, &[bad]).is_err());
    }
    let want = (0..numel(&y_dims)).map(|pos| {
        let j = unflat(pos, &y_dims);
        let r = c.idx_dims.len();
        let mut i = j[..axis].to_vec();
        i.push(c.idx[flat(&j[axis..axis + r], &c.idx_dims)] as usize);
        i.extend(&j[axis + r..]);
        c.x[flat(&i, &c.x_dims)]
    });
    let y = run1(&y_dims, |y| {
        (k.gather)(
            &c.p,
            In {
                data: &c.x,
                dims: &c.x_dims,
            },
            In {
                data: &c.idx,
                dims: &c.idx_dims,
            },
            y,
        )
    });
    assert_close(&y, &exact(want))
}

// ------------------------------------------------------------------------------------------ broadcast

/// A one-way broadcast.
#[derive(Clone, Debug)]
pub struct BroadcastCase {
    x_dims: Vec<usize>,
    y_dims: Vec<usize>,
    x: Vec<f32>,
}

/// Output rank 0 to 5; the input is a suffix of it with some dims replaced by 1.
pub fn broadcast_case() -> impl Strategy<Value = BroadcastCase> {
    vec((dim(), any::<bool>()), 0..=5)
        .prop_flat_map(|axes| {
            let rank = axes.len();
            (Just(axes), 0..=rank)
        })
        .prop_flat_map(|(axes, drop)| {
            let y_dims: Vec<usize> = axes.iter().map(|a| a.0).collect();
            let x_dims: Vec<usize> = axes[drop..]
                .iter()
                .map(|&(d, one)| if one { 1 } else { d })
                .collect();
            let n = numel(&x_dims);
            (Just(x_dims), Just(y_dims), values(n))
        })
        .prop_map(|(x_dims, y_dims, x)| BroadcastCase { x_dims, y_dims, x })
}

/// The table's broadcast against `y[i] = x[i with 0 on x's size-1 axes]`.
pub fn check_broadcast(k: &Kernels, c: &BroadcastCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(broadcast::validate(&c.x_dims, &c.y_dims), Ok(()));
    let pad = c.y_dims.len() - c.x_dims.len();
    let want = (0..numel(&c.y_dims)).map(|pos| {
        let j = unflat(pos, &c.y_dims);
        let i: Vec<usize> = (0..c.x_dims.len())
            .map(|a| if c.x_dims[a] == 1 { 0 } else { j[pad + a] })
            .collect();
        c.x[flat(&i, &c.x_dims)]
    });
    let y = run1(&c.y_dims, |y| {
        (k.broadcast)(
            In {
                data: &c.x,
                dims: &c.x_dims,
            },
            y,
        )
    });
    assert_close(&y, &exact(want))?;
    // One more leading dim that is neither 1 nor the output's (or past the output's rank).
    let mut wider = c.x_dims.clone();
    wider.insert(0, if pad > 0 { c.y_dims[pad - 1] + 2 } else { 2 });
    prop_assert!(broadcast::validate(&wider, &c.y_dims).is_err());
    Ok(())
}

// --------------------------------------------------------------------------------------------- resize

/// A resize of the last two axes.
#[derive(Clone, Debug)]
pub struct ResizeCase {
    p: ResizeParams,
    x_dims: Vec<usize>,
    y_dims: Vec<usize>,
    x: Vec<f32>,
}

fn any_coord() -> impl Strategy<Value = CoordMode> {
    prop_oneof![
        Just(CoordMode::HalfPixel),
        Just(CoordMode::PytorchHalfPixel),
        Just(CoordMode::AlignCorners),
        Just(CoordMode::Asymmetric),
        Just(CoordMode::HalfPixelSymmetric),
    ]
}

fn any_mode() -> impl Strategy<Value = ResizeMode> {
    let cubic = (
        prop_oneof![Just(-0.75f32), Just(-0.5)],
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(a, exclude_outside, antialias)| ResizeMode::Cubic {
            a,
            exclude_outside,
            antialias,
        });
    let linear_aa =
        any::<bool>().prop_map(|exclude_outside| ResizeMode::LinearAntialias { exclude_outside });
    prop_oneof![
        cubic,
        linear_aa,
        Just(ResizeMode::Linear),
        Just(ResizeMode::Nearest(NearestMode::RoundPreferFloor)),
        Just(ResizeMode::Nearest(NearestMode::RoundPreferCeil)),
        Just(ResizeMode::Nearest(NearestMode::Floor)),
        Just(ResizeMode::Nearest(NearestMode::Ceil)),
    ]
}

/// Leading dims `[n, c]`, `[h, w]` 1 to 5 (then 1 to 3 channels when channels-last), scales from a set whose coordinates are exact in f32 (so
/// nearest rounding is the same in f32 and f64), output `floor(in * scale)` at least 1.
pub fn resize_case() -> impl Strategy<Value = ResizeCase> {
    let scale = prop_oneof![
        Just(0.5f32),
        Just(1.0),
        Just(2.0),
        Just(3.0),
        Just(0.25),
        Just(4.0)
    ];
    (
        vec(1usize..=2, 0..=2),
        1usize..=5,
        1usize..=5,
        scale.clone(),
        scale,
        any_mode(),
        any_coord(),
        prop_oneof![Just(None), (1usize..=3).prop_map(Some)],
    )
        .prop_flat_map(|(lead, h, w, sh, sw, mode, coord, channels)| {
            let mut x_dims = lead.clone();
            x_dims.extend([h, w]);
            let out = |n: usize, s: f32| ((n as f32 * s) as usize).max(1);
            let mut y_dims = lead;
            y_dims.extend([out(h, sh), out(w, sw)]);
            if let Some(c) = channels {
                x_dims.push(c);
                y_dims.push(c);
            }
            let p = ResizeParams {
                mode,
                coord,
                scale_h: sh,
                scale_w: sw,
                channels_last: channels.is_some(),
            };
            let n = numel(&x_dims);
            (Just(p), Just(x_dims), Just(y_dims), values(n))
        })
        .prop_map(|(p, x_dims, y_dims, x)| ResizeCase {
            p,
            x_dims,
            y_dims,
            x,
        })
}

/// ONNX's coordinate transformation, in f64, with the resized length `n_in * scale` (exact for the
/// generated scales).
fn source(coord: CoordMode, o: usize, n_in: usize, n_out: usize, scale: f64) -> f64 {
    let o = o as f64;
    let resized = n_in as f64 * scale;
    match coord {
        CoordMode::HalfPixelSymmetric => {
            n_in as f64 / 2.0 * (1.0 - n_out as f64 / resized) + (o + 0.5) / scale - 0.5
        }
        CoordMode::HalfPixel => (o + 0.5) / scale - 0.5,
        CoordMode::PytorchHalfPixel if resized > 1.0 => (o + 0.5) / scale - 0.5,
        CoordMode::AlignCorners if resized > 1.0 => o * (n_in as f64 - 1.0) / (resized - 1.0),
        CoordMode::PytorchHalfPixel | CoordMode::AlignCorners => 0.0,
        CoordMode::Asymmetric => o / scale,
    }
}

/// One axis of the definition: `(index, weight)` pairs summing to 1.
fn taps(p: &ResizeParams, o: usize, n_in: usize, n_out: usize, scale: f32) -> Vec<(usize, f64)> {
    let c = source(p.coord, o, n_in, n_out, f64::from(scale));
    let last = (n_in - 1) as f64;
    match p.mode {
        ResizeMode::Nearest(m) => {
            let frac = c - c.floor();
            let r = match m {
                NearestMode::RoundPreferFloor if frac == 0.5 => c.floor(),
                NearestMode::RoundPreferCeil if frac == 0.5 => c.ceil(),
                NearestMode::Floor => c.floor(),
                NearestMode::Ceil => c.ceil(),
                _ => c.round(),
            };
            vec![(r.clamp(0.0, last) as usize, 1.0)]
        }
        ResizeMode::Linear => {
            let c = c.clamp(0.0, last);
            let lo = c.floor();
            let hi = (lo + 1.0).min(last);
            vec![(lo as usize, 1.0 - (c - lo)), (hi as usize, c - lo)]
        }
        ResizeMode::Cubic {
            a,
            exclude_outside,
            antialias,
        } => filter_taps(c, n_in, scale, 2.0, antialias, exclude_outside, |d| {
            let (a, d) = (f64::from(a), d.abs());
            if d <= 1.0 {
                (a + 2.0) * d * d * d - (a + 3.0) * d * d + 1.0
            } else if d < 2.0 {
                a * d * d * d - 5.0 * a * d * d + 8.0 * a * d - 4.0 * a
            } else {
                0.0
            }
        }),
        ResizeMode::LinearAntialias { exclude_outside } => {
            filter_taps(c, n_in, scale, 1.0, true, exclude_outside, |d| {
                (1.0 - d.abs()).max(0.0)
            })
        }
    }
}

/// The taps of a kernel of `radius` at `c`: every whole `j` within `radius / s` of `c` (`s` the scale
/// of an antialiased downscale, else 1) weighs `kernel((j - c) * s)`, and reads the edge when off the
/// input, or weighs 0 there with `exclude_outside`; normalized to sum 1 when antialiased or excluding.
fn filter_taps(
    c: f64,
    n_in: usize,
    scale: f32,
    radius: f64,
    antialias: bool,
    exclude_outside: bool,
    kernel: impl Fn(f64) -> f64,
) -> Vec<(usize, f64)> {
    let s = if antialias && scale < 1.0 {
        f64::from(scale)
    } else {
        1.0
    };
    let last = n_in as i64 - 1;
    let lo = (c - radius / s).ceil() as i64;
    let hi = (c + radius / s).floor() as i64;
    let mut t: Vec<(usize, f64)> = (lo..=hi)
        .filter(|j| !exclude_outside || (0..=last).contains(j))
        .map(|j| (j.clamp(0, last) as usize, kernel((j as f64 - c) * s)))
        .collect();
    if antialias || exclude_outside {
        let sum: f64 = t.iter().map(|&(_, w)| w).sum();
        if sum != 0.0 {
            t.iter_mut().for_each(|(_, w)| *w /= sum);
        }
    }
    t
}

/// The table's resize against a separable definition: each output is the sum over the H taps and W
/// taps of weight products times the input.
pub fn check_resize(k: &Kernels, c: &ResizeCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(resize::validate(&c.p, &c.x_dims, &c.y_dims), Ok(()));
    let h = c.x_dims.len() - 2 - usize::from(c.p.channels_last);
    let (h_in, w_in) = (c.x_dims[h], c.x_dims[h + 1]);
    let want: Vec<Want> = (0..numel(&c.y_dims))
        .map(|pos| {
            let j = unflat(pos, &c.y_dims);
            let mut w = Want::exact(0.0);
            let (h_out, w_out) = (c.y_dims[h], c.y_dims[h + 1]);
            for (iy, wy) in taps(&c.p, j[h], h_in, h_out, c.p.scale_h) {
                for (ix, wx) in taps(&c.p, j[h + 1], w_in, w_out, c.p.scale_w) {
                    let mut i = j.clone();
                    i[h] = iy;
                    i[h + 1] = ix;
                    let term = wy * wx * f64::from(c.x[flat(&i, &c.x_dims)]);
                    w.value += term;
                    w.magnitude += term.abs();
                }
            }
            w
        })
        .collect();
    let y = run1(&c.y_dims, |y| {
        (k.resize)(
            &c.p,
            In {
                data: &c.x,
                dims: &c.x_dims,
            },
            y,
        )
    });
    assert_close(&y, &want)
}

// ------------------------------------------------------------------------------------- known answers

/// Hand-computed answers.
pub fn known_indexing(k: &Kernels) {
    let x: Vec<f32> = (0..12).map(|v| v as f32).collect();
    // [3, 4], rows 2 and 0 (step -2), columns 3, 1 (step -2).
    let p = SliceParams {
        start: [2, 3, 0, 0, 0, 0],
        step: [-2, -2, 1, 1, 1, 1],
    };
    let y = run1(&[2, 2], |y| {
        (k.slice)(
            &p,
            In {
                data: &x,
                dims: &[3, 4],
            },
            y,
        )
    });
    assert_known(&y, &[11.0, 9.0, 3.0, 1.0]);

    // Gather columns [3, 0, 3] of [3, 4].
    let p = GatherParams { axis: 1 };
    let idx = [3.0, 0.0, 3.0];
    let y = run1(&[3, 3], |y| {
        (k.gather)(
            &p,
            In {
                data: &x,
                dims: &[3, 4],
            },
            In {
                data: &idx,
                dims: &[3],
            },
            y,
        )
    });
    assert_known(&y, &[3.0, 0.0, 3.0, 7.0, 4.0, 7.0, 11.0, 8.0, 11.0]);

    // [3, 1] broadcast to [2, 3, 2].
    let y = run1(&[2, 3, 2], |y| {
        (k.broadcast)(
            In {
                data: &[1.0, 2.0, 3.0],
                dims: &[3, 1],
            },
            y,
        )
    });
    assert_known(
        &y,
        &[1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 1.0, 1.0, 2.0, 2.0, 3.0, 3.0],
    );

    // [1, 2] -> [1, 4]: nearest asymmetric floor repeats, bilinear half_pixel blends (onnxruntime).
    let row = [1.0, 3.0];
    let resize_row = |mode, coord| {
        let p = ResizeParams {
            mode,
            coord,
            scale_h: 1.0,
            scale_w: 2.0,
            channels_last: false,
        };
        run1(&[1, 4], |y| {
            (k.resize)(
                &p,
                In {
                    data: &row,
                    dims: &[1, 2],
                },
                y,
            )
        })
    };
    let nearest = ResizeMode::Nearest(NearestMode::Floor);
    assert_known(
        &resize_row(nearest, CoordMode::Asymmetric),
        &[1.0, 1.0, 3.0, 3.0],
    );
    assert_known(
        &resize_row(ResizeMode::Linear, CoordMode::HalfPixel),
        &[1.0, 1.5, 2.5, 3.0],
    );
    assert_known(
        &resize_row(ResizeMode::Linear, CoordMode::AlignCorners),
        &[1.0, 1.0 + 2.0 / 3.0, 1.0 + 4.0 / 3.0, 3.0],
    );
}
