//! Softmax, LogSoftmax, LayerNorm, reductions, pools and recurrent layers of every level against
//! `ember-core`'s reference kernels, on proptest cases aimed at their edges: every axis (rows along the
//! last axis, columns across the others, widths around the vector widths), empty lanes, every reduce
//! op over contiguous and scattered axes, pool windows with padding, strides and channels that leave
//! tails, every recurrent cell and direction with sizes around the lanes and the kernel's blocks, and
//! special values.
//!
//! Pools (same cells in the same order) must give the reference's values exactly; Max and Min
//! reductions too. Sums are added in another order than the reference's loop, so Softmax, LayerNorm
//! and the summing reductions must agree within `1e-5` of the larger of 1, the reference's result and
//! the sum of the magnitudes that went into it; recurrent layers within `2e-5` (see their test).

mod common;

use common::{check, close, levels, plain, same_bits, same_value, summable, values};
use ember_core::ops::nn::layer_norm::{self, LayerNormParams};
use ember_core::ops::nn::reduce::{self, ReduceOp, ReduceParams};
use ember_core::ops::nn::rnn::{self, RnnCell, RnnDirection, RnnParams};
use ember_core::ops::nn::softmax::SoftmaxParams;
use ember_core::ops::pool::{avg_pool, Pool2dParams};
use ember_core::ops::{In, Out};
use ember_core::{Kernels, OpKind, Workspace, REFERENCE};
use ember_testkit::window::{self, pool_params};
use proptest::collection::vec;
use proptest::prelude::*;

/// A dim around the vector widths, sometimes 0.
fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![10 => 1usize..=12, 2 => 13usize..=40, 1 => Just(0usize)]
}

/// Dims of rank 1..=4 with at most a few thousand elements.
fn dims() -> impl Strategy<Value = Vec<usize>> {
    vec(dim(), 1..=4).prop_filter("a few thousand elements at most", |d| {
        d.iter().product::<usize>() <= 5000
    })
}

fn input<'a>(data: &'a [f32], dims: &'a [usize]) -> In<'a> {
    In { data, dims }
}

// -------------------------------------------------------------------------------------------- softmax

/// Softmax or LogSoftmax of `x` (dims `d`) along `axis` with table `k`.
fn run_softmax(k: &Kernels, log: bool, axis: u8, d: &[usize], x: &[f32]) -> Vec<f32> {
    let mut y = vec![0.0; x.len()];
    let p = SoftmaxParams { axis };
    let f = if log { k.log_softmax } else { k.softmax };
    f(
        &p,
        input(x, d),
        Out {
            data: &mut y,
            dims: d,
        },
    );
    y
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn softmax_matches_reference(
        (d, axis, x, log) in dims().prop_flat_map(|d| {
            let n = d.iter().product();
            (Just(d.clone()), 0..d.len() as u8, values(n, 30.0), any::<bool>())
        })
    ) {
        let want = run_softmax(&REFERENCE, log, axis, &d, &x);
        for (isa, k) in levels() {
            let got = run_softmax(k, log, axis, &d, &x);
            let what = format!("{isa} log={log} axis {axis} {d:?}");
            check(&what, &got, &want, |_, g, w| close(g, w, 1e-5, 0.0))?;
        }
    }
}

// ------------------------------------------------------------------------------------------ layernorm

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn layer_norm_matches_reference(
        (d, axis, x, scale, bias) in dims().prop_flat_map(|d| {
            (Just(d.clone()), 0..d.len() as u8)
        }).prop_flat_map(|(d, axis)| {
            let n = d.iter().product();
            let row: usize = d[usize::from(axis)..].iter().product();
            (
                Just(d),
                Just(axis),
                plain(n, 10.0),
                plain(row, 2.0),
                proptest::option::of(plain(row, 2.0)),
            )
        })
    ) {
        let p = LayerNormParams { axis, epsilon: 1e-5 };
        let inner = &d[usize::from(axis)..];
        prop_assert!(layer_norm::validate(&p, &d, inner, bias.as_ref().map(|_| inner), &d).is_ok());
        let run = |k: &Kernels| {
            let mut y = vec![0.0; x.len()];
            (k.layer_norm)(&p, input(&x, &d), input(&scale, inner), bias.as_deref(), Out {
                data: &mut y,
                dims: &d,
            });
            y
        };
        let want = run(&REFERENCE);
        // The kernels sum the mean and the variance in another order than the reference: each sum
        // may differ by about `len * eps * max|x|`, and the output amplifies the mean's error by
        // `|scale| / std`. A row of nearly equal values (small std) is ill-conditioned, so the
        // tolerance of each row is that bound (x4) on top of 1e-5.
        let len = inner.iter().product::<usize>().max(1);
        let max_scale = scale.iter().fold(0.0f32, |m, v| m.max(v.abs()));
        let slack: Vec<f32> = x
            .chunks(len)
            .map(|row| {
                let n = row.len() as f32;
                let mean = row.iter().sum::<f32>() / n;
                let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f32>() / n;
                let max_x = row.iter().fold(0.0f32, |m, v| m.max(v.abs()));
                4.0 * n * f32::EPSILON * max_x * max_scale / (var + 1e-5).sqrt()
            })
            .collect();
        for (isa, k) in levels() {
            let what = format!("{isa} axis {axis} {d:?}");
            check(&what, &run(k), &want, |i, g, w| {
                close(g, w, 1e-5, 0.0) || (g - w).abs() <= 1e-5 + slack[i / len]
            })?;
        }
    }
}

// --------------------------------------------------------------------------------------------- reduce

fn reduce_op() -> impl Strategy<Value = ReduceOp> {
    use ReduceOp::*;
    proptest::sample::select(vec![
        Sum, Mean, Max, Min, Prod, L1, L2, LogSumExp, SumSquare, LogSum,
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn reduce_matches_reference(
        (op, d, axes, keepdims, x) in (reduce_op(), dims(), any::<u8>(), any::<bool>())
            .prop_flat_map(|(op, d, axes, keepdims)| {
                let axes = axes & ((1u16 << d.len()) - 1) as u8;
                let n = d.iter().product();
                // Products and logarithms of sums on values that keep them finite and positive;
                // special values for the others (but none that overflows a sum: with those, the
                // order of the additions decides between inf, NaN and a finite value).
                let x = match op {
                    ReduceOp::Prod => plain(n, 1.5).boxed(),
                    ReduceOp::LogSum => vec(0.1f32..10.0, n).boxed(),
                    ReduceOp::Max | ReduceOp::Min => values(n, 10.0).boxed(),
                    _ => summable(n, 10.0).boxed(),
                };
                (Just(op), Just(d), Just(axes), Just(keepdims), x)
            })
    ) {
        let p = ReduceParams { op, axes, keepdims };
        let y_dims: Vec<usize> = d
            .iter()
            .enumerate()
            .filter_map(|(i, &n)| match axes & (1 << i) != 0 {
                true if keepdims => Some(1),
                true => None,
                false => Some(n),
            })
            .collect();
        prop_assert!(reduce::validate(&p, &d, &y_dims).is_ok());
        let run = |k: &Kernels, x: &[f32]| {
            let mut y = vec![0.0; y_dims.iter().product()];
            (k.reduce)(&p, input(x, &d), Out { data: &mut y, dims: &y_dims });
            y
        };
        let want = run(&REFERENCE, &x);
        // The sum of the magnitudes of each output's terms, for the tolerance of sums.
        let magnitudes = {
            let terms: Vec<f32> = x.iter().map(|v| v.abs().max(v * v)).collect();
            let sum = ReduceParams { op: ReduceOp::Sum, ..p };
            let mut m = vec![0.0; want.len()];
            (REFERENCE.reduce)(&sum, input(&terms, &d), Out { data: &mut m, dims: &y_dims });
            m
        };
        for (isa, k) in levels() {
            let got = run(k, &x);
            let what = format!("{isa} {op:?} axes {axes:#b} {d:?}");
            match op {
                ReduceOp::Max | ReduceOp::Min => check(&what, &got, &want, |_, g, w| same_value(g, w))?,
                ReduceOp::Prod => check(&what, &got, &want, |_, g, w| close(g, w, 1e-5, 0.0))?,
                _ => check(&what, &got, &want, |i, g, w| close(g, w, 1e-5, magnitudes[i]))?,
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------- pools

/// A pool: NHWC input dims, window parameters, and which pool.
#[derive(Clone, Debug)]
struct PoolCase {
    p: Pool2dParams,
    x_dims: [usize; 4],
    x: Vec<f32>,
}

fn pool_case() -> impl Strategy<Value = PoolCase> {
    (
        (1usize..=2, 1usize..=9, 1usize..=9, 1usize..=40),
        (1u16..=4, 1u16..=4, 1u16..=3, 1u16..=3),
        any::<bool>(),
    )
        .prop_flat_map(|(x, (kh, kw, sh, sw), include)| {
            // Padding below the window size (else a window can lie in the padding).
            let pads = (0..kh, 0..kw, 0..kh, 0..kw);
            (Just(x), Just((kh, kw, sh, sw)), pads, Just(include))
        })
        .prop_flat_map(
            |((n, h, w, c), (kh, kw, sh, sw), (pt, pl, pb, pr), include)| {
                let p = pool_params((kh, kw), (sh, sw), [pt, pl, pb, pr], include);
                (Just(p), Just([n, h, w, c]), values(n * h * w * c, 10.0))
            },
        )
        .prop_map(|(p, x_dims, x)| PoolCase { p, x_dims, x })
}

/// The output dims `validate` accepts for `c`, if any.
fn pool_output(c: &PoolCase) -> Option<[usize; 4]> {
    let y = window::pool_output(&c.p, c.x_dims)?;
    avg_pool::validate(&c.p, &c.x_dims, &y).ok().map(|()| y)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1024,
        max_global_rejects: 4096,
        ..ProptestConfig::default()
    })]

    #[test]
    fn pools_match_reference(c in pool_case()) {
        let y_dims = pool_output(&c);
        prop_assume!(y_dims.is_some(), "a window lies in the padding");
        let y_dims = y_dims.unwrap_or_default();
        for max in [true, false] {
            let run = |k: &Kernels| {
                let mut y = vec![0.0; y_dims.iter().product()];
                let f = if max { k.max_pool } else { k.avg_pool };
                f(&c.p, input(&c.x, &c.x_dims), Out { data: &mut y, dims: &y_dims });
                y
            };
            let want = run(&REFERENCE);
            for (isa, k) in levels() {
                let what = format!("{isa} max={max} {:?} {:?}", c.p, c.x_dims);
                // Max pooling's -0 against 0 is `f32::max`'s choice in the reference.
                if max {
                    check(&what, &run(k), &want, |_, g, w| same_value(g, w))?;
                } else {
                    check(&what, &run(k), &want, |_, g, w| same_bits(g, w))?;
                }
            }
        }
    }

    #[test]
    fn global_avg_pool_matches_reference(
        (d, x) in (1usize..=2, 1usize..=12, 1usize..=12, 1usize..=70).prop_flat_map(|(n, h, w, c)| {
            (Just([n, h, w, c]), values(n * h * w * c, 10.0))
        })
    ) {
        let y_dims = [d[0], 1, 1, d[3]];
        let run = |k: &Kernels| {
            let mut y = vec![0.0; d[0] * d[3]];
            (k.global_avg_pool)(input(&x, &d), Out { data: &mut y, dims: &y_dims });
            y
        };
        let want = run(&REFERENCE);
        for (isa, k) in levels() {
            check(&format!("{isa} {d:?}"), &run(k), &want, |_, g, w| same_bits(g, w))?;
        }
    }
}

// ---------------------------------------------------------------------------------- recurrent layers

/// A recurrent layer: its parameters, `[seq, batch, input]`, the hidden size, and which optional
/// inputs (bias, initial hidden and cell states, peepholes) it has.
#[derive(Debug, Clone)]
struct RnnCase {
    p: RnnParams,
    seq: usize,
    batch: usize,
    input: usize,
    hidden: usize,
    values: Vec<f32>,
    bias: bool,
    h0: bool,
    c0: bool,
}

fn rnn_case() -> impl Strategy<Value = RnnCase> {
    let cell = prop_oneof![
        Just(RnnCell::Simple),
        any::<bool>().prop_map(|linear_before_reset| RnnCell::Gru {
            linear_before_reset
        }),
        any::<bool>().prop_map(|peepholes| RnnCell::Lstm { peepholes }),
    ];
    let direction = prop_oneof![
        Just(RnnDirection::Forward),
        Just(RnnDirection::Reverse),
        Just(RnnDirection::Bidirectional),
    ];
    let clip = prop_oneof![3 => Just(f32::INFINITY), 1 => 0.5f32..3.0];
    // Input and hidden sizes around the lanes and the kernel's blocks of 16 units.
    let size = prop_oneof![4 => 0usize..=20, 2 => 21usize..=40, 1 => 60usize..=70];
    (
        (cell, direction, clip),
        0usize..=4,
        1usize..=3,
        size.clone(),
        size.prop_filter("a hidden unit at least", |&h| h > 0),
        (any::<bool>(), any::<bool>(), any::<bool>()),
    )
        .prop_flat_map(
            |((cell, direction, clip), seq, batch, input, hidden, (bias, h0, c0))| {
                let p = RnnParams {
                    cell,
                    direction,
                    clip,
                };
                let n = rnn_sizes(&p, seq, batch, input, hidden).iter().sum();
                plain(n, 1.0).prop_map(move |values| RnnCase {
                    p,
                    seq,
                    batch,
                    input,
                    hidden,
                    values,
                    bias,
                    h0,
                    c0: c0 && matches!(cell, RnnCell::Lstm { .. }),
                })
            },
        )
}

/// Values of x, w, r, b, h0, c0 and p (each present or not, all sized here).
fn rnn_sizes(p: &RnnParams, seq: usize, batch: usize, input: usize, hidden: usize) -> [usize; 7] {
    let (dirs, rows) = (p.direction.count(), p.cell.gates() * hidden);
    [
        seq * batch * input,
        dirs * rows * input,
        dirs * rows * hidden,
        dirs * 2 * rows,
        dirs * batch * hidden,
        dirs * batch * hidden,
        dirs * 3 * hidden,
    ]
}

/// The layer with table `k`, with the scratch the table asks for or none: the whole output (`Y`,
/// `Y_h`, `Y_c`).
fn run_rnn(k: &Kernels, c: &RnnCase, scratch: bool) -> Vec<f32> {
    let sizes = rnn_sizes(&c.p, c.seq, c.batch, c.input, c.hidden);
    let mut parts = Vec::new();
    let mut rest = &c.values[..];
    for n in sizes {
        let (part, tail) = rest.split_at(n);
        parts.push(part);
        rest = tail;
    }
    let (dirs, rows) = (c.p.direction.count(), c.p.cell.gates() * c.hidden);
    let xd = [c.seq, c.batch, c.input];
    let wd = [dirs, rows, c.input];
    let rd = [dirs, rows, c.hidden];
    let yd = rnn::out_dims(&xd, &rd).expect("rank-3 dims");
    let peepholes = matches!(c.p.cell, RnnCell::Lstm { peepholes: true });
    let mut y = vec![f32::NAN; yd.iter().product()];
    let dims: [&[usize]; 3] = [&xd, &wd, &rd];
    let need = k.scratch.map_or(0, |f| f(&OpKind::Rnn(c.p), &dims, &yd, 1));
    let mut bytes = vec![0u128; need.div_ceil(16)];
    let mut ws = Workspace::new(bytemuck::cast_slice_mut(&mut bytes), None);
    (k.rnn)(
        &c.p,
        input(parts[0], &xd),
        input(parts[1], &wd),
        input(parts[2], &rd),
        c.bias.then_some(parts[3]),
        c.h0.then_some(parts[4]),
        c.c0.then_some(parts[5]),
        peepholes.then_some(parts[6]),
        Out {
            data: &mut y,
            dims: &yd,
        },
        scratch.then_some(&mut ws),
    );
    y
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Every cell, direction and optional input. The kernels' dot products sum in another order (and
    /// with FMA), and their sigmoid and tanh are within a few ulp: the outputs (hidden states in
    /// [-1, 1], cell states growing by at most 1 per step) agree within 2e-5 of the larger of 1 and the
    /// value, with weights and inputs in [-1, 1] and rows of up to 140 products.
    #[test]
    fn recurrent_layers_match_reference(c in rnn_case()) {
        let want = run_rnn(&REFERENCE, &c, false);
        for (isa, k) in levels() {
            let what = format!("{isa} {:?} seq {} batch {} input {} hidden {}", c.p, c.seq, c.batch, c.input, c.hidden);
            let got = run_rnn(k, &c, false);
            check(&what, &got, &want, |_, g, w| close(g, w, 2e-5, 0.0))?;
            // With the scratch for every step's input projection computed first: the same bits.
            check(&format!("{what}, with scratch"), &run_rnn(k, &c, true), &got, |_, g, w| same_bits(g, w))?;
        }
    }
}
