//! Neural-network kernels besides convolution and reductions: fully connected, matmul, softmax, log
//! softmax, layer norm.

use ember_core::kernels::with_scratch;
use ember_core::ops::math::activation::Activation;
use ember_core::ops::nn::fully_connected::{self, FullyConnectedParams};
use ember_core::ops::nn::layer_norm::{self, LayerNormParams};
use ember_core::ops::nn::matmul::{self, MatMulParams};
use ember_core::ops::nn::softmax::{self, SoftmaxParams};
use ember_core::ops::{In, Out};
use ember_core::{Error, Kernels, OpKind};
use proptest::collection::vec;
use proptest::prelude::*;

use super::{
    activate, activation, assert_close, assert_known, assert_rejects_shapes, dim, flat,
    layer_with_values, numel, unflat, values, Shapes, Want,
};
use crate::layer::Layer;
use crate::shape::{broadcast_index, broadcast_operand, broadcast_shape};

// ------------------------------------------------------------------------------------ fully connected

/// A fully connected layer over `[..., IN]`.
pub type FullyConnectedCase = Layer<FullyConnectedParams, f32, f32, (), Vec<usize>, [usize; 2]>;

/// 0 to 2 leading dims, IN and OUT 1 to 6 (now and then 0).
pub fn fully_connected_case() -> impl Strategy<Value = FullyConnectedCase> {
    let features = prop_oneof![8 => 1usize..=6, 1 => Just(0usize)];
    (
        vec(dim(), 0..=2),
        features.clone(),
        features,
        any::<bool>(),
        activation(),
    )
        .prop_flat_map(|(lead, in_f, out_f, bias, act)| {
            let x_dims: Vec<usize> = lead.iter().copied().chain([in_f]).collect();
            let y_dims: Vec<usize> = lead.iter().copied().chain([out_f]).collect();
            layer_with_values(
                FullyConnectedParams { act },
                x_dims,
                [out_f, in_f],
                y_dims,
                bias,
            )
        })
}

fn run_fully_connected(k: &Kernels, c: &FullyConnectedCase) -> Vec<f32> {
    c.run_with_scratch(k, OpKind::FullyConnected(c.p), k.fully_connected)
}

/// The table's fully connected kernel against `y[r, o] = act(sum_i x[r, i] w[o, i] + b[o])`.
pub fn check_fully_connected(k: &Kernels, c: &FullyConnectedCase) -> Result<(), TestCaseError> {
    let verdict = c.validate_with(|x, w, b, y| fully_connected::validate(&c.p, x, w, b, y));
    prop_assert_eq!(verdict, Ok(()));
    let [out_f, in_f] = c.w_dims;
    let rows = numel(&c.x_dims[..c.x_dims.len() - 1]);
    let mut want = Vec::new();
    for r in 0..rows {
        for o in 0..out_f {
            let mut acc = Want::exact(c.b.as_ref().map_or(0.0, |b| f64::from(b[o])));
            for i in 0..in_f {
                let term = f64::from(c.x[r * in_f + i]) * f64::from(c.w[o * in_f + i]);
                acc.value += term;
                acc.magnitude += term.abs();
            }
            want.push(activate(c.p.act, acc));
        }
    }
    assert_close(&run_fully_connected(k, c), &want)
}

/// Hand-computed fully connected layers.
pub fn known_fully_connected(k: &Kernels) {
    // x [2, 3], w [2, 3]: rows (1, 2, 3) and (-1, 0, 1); w rows (1, 1, 1) and (0, 1, -1); b (0.5, -10).
    //   row 0: 6 + 0.5 = 6.5, 2 - 3 - 10 = -11     row 1: 0 + 0.5 = 0.5, 0 - 1 - 10 = -11
    let c = FullyConnectedCase {
        p: FullyConnectedParams {
            act: Activation::None,
        },
        x_dims: vec![2, 3],
        w_dims: [2, 3],
        y_dims: vec![2, 2],
        x: vec![1.0, 2.0, 3.0, -1.0, 0.0, 1.0],
        w: vec![1.0, 1.0, 1.0, 0.0, 1.0, -1.0],
        b: Some(vec![0.5, -10.0]),
        q: (),
    };
    assert_known(&run_fully_connected(k, &c), &[6.5, -11.0, 0.5, -11.0]);
    let relu = FullyConnectedCase {
        p: FullyConnectedParams {
            act: Activation::Relu,
        },
        ..c
    };
    assert_known(&run_fully_connected(k, &relu), &[6.5, 0.0, 0.5, 0.0]);
}

/// `validate` rejects wrong ranks and mismatched features or batch dims.
pub fn fully_connected_validate_rejects_bad_shapes() {
    let p = FullyConnectedParams {
        act: Activation::None,
    };
    assert_eq!(
        fully_connected::validate(&p, &[2, 3], &[4, 3], Some(&[4]), &[2, 4]),
        Ok(())
    );
    let bad: [Shapes; 8] = [
        (&[], &[4, 3], None, &[4]),              // x rank 0
        (&[2, 3], &[4, 3, 1], None, &[2, 4]),    // w rank 3
        (&[2, 3], &[4, 2], None, &[2, 4]),       // IN mismatch
        (&[2, 3], &[4, 3], Some(&[3]), &[2, 4]), // bias length
        (&[2, 3], &[4, 3], None, &[3, 4]),       // batch mismatch
        (&[2, 3], &[4, 3], None, &[2, 3]),       // OUT mismatch
        (&[2, 3], &[4, 3], None, &[8]),          // rank mismatch
        (&[2, 3], &[4, 3], None, &[]),           // y rank 0
    ];
    assert_rejects_shapes(&bad, |x, w, b, y| fully_connected::validate(&p, x, w, b, y));
}

// --------------------------------------------------------------------------------------------- matmul

/// A batched matrix multiply `[..., M, K] @ [..., K, N]`.
#[derive(Clone, Debug)]
pub struct MatMulCase {
    a_dims: Vec<usize>,
    b_dims: Vec<usize>,
    y_dims: Vec<usize>,
    a: Vec<f32>,
    b: Vec<f32>,
}

/// Batch dims of rank 0 to 3 that broadcast, M, K, N 1 to 4 (now and then 0).
pub fn matmul_case() -> impl Strategy<Value = MatMulCase> {
    (vec(dim(), 0..=3), dim(), dim(), dim())
        .prop_flat_map(|(batch, m, k, n)| {
            (
                broadcast_operand(batch.clone()),
                broadcast_operand(batch),
                Just((m, k, n)),
            )
        })
        .prop_flat_map(|(a_batch, b_batch, (m, k, n))| {
            let y_batch = broadcast_shape(&a_batch, &b_batch);
            let a_dims: Vec<usize> = a_batch.into_iter().chain([m, k]).collect();
            let b_dims: Vec<usize> = b_batch.into_iter().chain([k, n]).collect();
            let y_dims: Vec<usize> = y_batch.into_iter().chain([m, n]).collect();
            let (na, nb) = (numel(&a_dims), numel(&b_dims));
            (
                Just(a_dims),
                Just(b_dims),
                Just(y_dims),
                values(na),
                values(nb),
            )
        })
        .prop_map(|(a_dims, b_dims, y_dims, a, b)| MatMulCase {
            a_dims,
            b_dims,
            y_dims,
            a,
            b,
        })
}

fn run_matmul(k: &Kernels, a: In<'_>, b: In<'_>, y_dims: &[usize]) -> Vec<f32> {
    assert_eq!(
        matmul::validate(&MatMulParams {}, a.dims, b.dims, y_dims),
        Ok(())
    );
    let mut y = vec![f32::NAN; numel(y_dims)];
    let kind = OpKind::MatMul(MatMulParams {});
    with_scratch(k, &kind, &[a.dims, b.dims], y_dims, |ws| {
        (k.matmul)(
            &MatMulParams {},
            a,
            b,
            Out {
                data: &mut y,
                dims: y_dims,
            },
            ws,
        )
    });
    y
}

/// The table's matmul kernel against `y[..., i, j] = sum_k a[..., i, k] b[..., k, j]`, batch indices
/// broadcast by explicit index mapping.
pub fn check_matmul(k: &Kernels, c: &MatMulCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(
        matmul::validate(&MatMulParams {}, &c.a_dims, &c.b_dims, &c.y_dims),
        Ok(())
    );
    let inner = c.a_dims[c.a_dims.len() - 1];
    let a_batch = &c.a_dims[..c.a_dims.len() - 2];
    let b_batch = &c.b_dims[..c.b_dims.len() - 2];
    let want: Vec<Want> = (0..numel(&c.y_dims))
        .map(|pos| {
            let index = unflat(pos, &c.y_dims);
            let (batch, ij) = index.split_at(index.len() - 2);
            let mut acc = Want::exact(0.0);
            for kk in 0..inner {
                let mut a_index = broadcast_index(batch, a_batch);
                a_index.extend([ij[0], kk]);
                let mut b_index = broadcast_index(batch, b_batch);
                b_index.extend([kk, ij[1]]);
                let term = f64::from(c.a[flat(&a_index, &c.a_dims)])
                    * f64::from(c.b[flat(&b_index, &c.b_dims)]);
                acc.value += term;
                acc.magnitude += term.abs();
            }
            acc
        })
        .collect();
    let y = run_matmul(
        k,
        In {
            data: &c.a,
            dims: &c.a_dims,
        },
        In {
            data: &c.b,
            dims: &c.b_dims,
        },
        &c.y_dims,
    );
    assert_close(&y, &want)
}

/// Hand-computed matrix products.
pub fn known_matmul(k: &Kernels) {
    // [[1, 2], [3, 4]] @ [[5, 6], [7, 8]] = [[19, 22], [43, 50]]
    let a = In {
        data: &[1.0, 2.0, 3.0, 4.0],
        dims: &[2, 2],
    };
    let b = In {
        data: &[5.0, 6.0, 7.0, 8.0],
        dims: &[2, 2],
    };
    assert_known(&run_matmul(k, a, b, &[2, 2]), &[19.0, 22.0, 43.0, 50.0]);
    // A batch of two [1, 2] rows times one shared [2, 1] column (5, 7): 1*5 + 2*7 = 19, 3*5 + 4*7 = 43.
    let rows = In {
        data: &[1.0, 2.0, 3.0, 4.0],
        dims: &[2, 1, 2],
    };
    let col = In {
        data: &[5.0, 7.0],
        dims: &[2, 1],
    };
    assert_known(&run_matmul(k, rows, col, &[2, 1, 1]), &[19.0, 43.0]);
    // K = 0: an empty sum is 0.
    let a = In {
        data: &[],
        dims: &[2, 0],
    };
    let b = In {
        data: &[],
        dims: &[0, 3],
    };
    assert_known(&run_matmul(k, a, b, &[2, 3]), &[0.0; 6]);
}

/// `validate` rejects low ranks, mismatched K, wrong outputs and batch dims that do not broadcast.
pub fn matmul_validate_rejects_bad_shapes() {
    let p = MatMulParams {};
    let bad: [(&[usize], &[usize], &[usize]); 8] = [
        (&[3], &[3, 2], &[2]),                   // a rank 1
        (&[2, 3], &[3], &[2]),                   // b rank 1
        (&[2, 3], &[4, 2], &[2, 2]),             // K mismatch
        (&[2, 3], &[3, 4], &[2, 3]),             // N
        (&[2, 3], &[3, 4], &[3, 4]),             // M
        (&[2, 2, 3], &[3, 3, 4], &[3, 2, 4]),    // batch 2 vs 3
        (&[2, 2, 3], &[3, 4], &[2, 4]),          // y rank
        (&[1, 2, 2, 3], &[3, 4], &[2, 2, 2, 4]), // batch does not stretch
    ];
    for (a, b, y) in bad {
        assert!(
            matches!(matmul::validate(&p, a, b, y), Err(Error::Shape { .. })),
            "{a:?} @ {b:?} -> {y:?}"
        );
    }
    assert_eq!(
        matmul::validate(&p, &[5, 1, 2, 3], &[4, 3, 6], &[5, 4, 2, 6]),
        Ok(())
    );
}

// -------------------------------------------------------------------------------------------- softmax

/// A softmax along one axis.
#[derive(Clone, Debug)]
pub struct SoftmaxCase {
    p: SoftmaxParams,
    dims: Vec<usize>,
    x: Vec<f32>,
}

/// Rank 1 to 4, any axis.
pub fn softmax_case() -> impl Strategy<Value = SoftmaxCase> {
    vec(dim(), 1..=4)
        .prop_flat_map(|dims| {
            let (rank, n) = (dims.len() as u8, numel(&dims));
            (0..rank, Just(dims), values(n))
        })
        .prop_map(|(axis, dims, x)| SoftmaxCase {
            p: SoftmaxParams { axis },
            dims,
            x,
        })
}

fn run_softmax(k: &Kernels, p: &SoftmaxParams, x: &[f32], dims: &[usize]) -> Vec<f32> {
    assert_eq!(softmax::validate(p, dims, dims), Ok(()));
    let mut y = vec![f32::NAN; x.len()];
    (k.softmax)(p, In { data: x, dims }, Out { data: &mut y, dims });
    y
}

/// The table's softmax against `exp(x_i) / sum_j exp(x_j)` along the axis, in f64.
pub fn check_softmax(k: &Kernels, c: &SoftmaxCase) -> Result<(), TestCaseError> {
    prop_assert_eq!(softmax::validate(&c.p, &c.dims, &c.dims), Ok(()));
    let axis = usize::from(c.p.axis);
    let want: Vec<Want> = (0..c.x.len())
        .map(|pos| {
            let mut index = unflat(pos, &c.dims);
            let own = f64::from(c.x[pos]).exp();
            let mut sum = 0.0;
            for j in 0..c.dims[axis] {
                index[axis] = j;
                sum += f64::from(c.x[flat(&index, &c.dims)]).exp();
            }
            Want::exact(own / sum)
        })
        .collect();
    assert_close(&run_softmax(k, &c.p, &c.x, &c.dims), &want)
}

/// Hand-computed softmaxes, including values whose plain `exp` overflows f32.
pub fn known_softmax(k: &Kernels) {
    // softmax(1, 2, 3) = (e^-2, e^-1, 1) / (e^-2 + e^-1 + 1)
    let want = [0.090_030_57, 0.244_728_47, 0.665_240_94];
    let p = SoftmaxParams { axis: 0 };
    assert_known(&run_softmax(k, &p, &[1.0, 2.0, 3.0], &[3]), &want);
    // Shifting by 1000 changes nothing (exp(1000) is inf in f32: the kernel must subtract the max).
    assert_known(&run_softmax(k, &p, &[1000.0, 1001.0, 1002.0], &[3]), &want);
    assert_known(&run_softmax(k, &p, &[-1000.0, -999.0, -998.0], &[3]), &want);
    // Axis 0 of a [3, 2]: columns (1, 2, 3) and (0, 0, 0).
    let x = [1.0, 0.0, 2.0, 0.0, 3.0, 0.0];
    let third = 1.0 / 3.0;
    let want = [want[0], third, want[1], third, want[2], third];
    assert_known(&run_softmax(k, &p, &x, &[3, 2]), &want);
}

/// `validate` rejects an axis past the rank and outputs of another shape.
pub fn softmax_validate_rejects_bad_shapes() {
    let axis = |axis| SoftmaxParams { axis };
    assert!(softmax::validate(&axis(2), &[2, 3], &[2, 3]).is_err());
    assert!(softmax::validate(&axis(0), &[], &[]).is_err());
    assert!(softmax::validate(&axis(1), &[2, 3], &[3, 2]).is_err());
    assert!(softmax::validate(&axis(1), &[2, 3], &[2, 3, 1]).is_err());
    assert!(softmax::validate(&axis(6), &[1; 7], &[1; 7]).is_err());
    assert_eq!(softmax::validate(&axis(1), &[2, 3], &[2, 3]), Ok(()));
}

// ----------------------------------------------------------------------------------------- log softmax

fn run_log_softmax(k: &Kernels, p: &SoftmaxParams, x: &[f32], dims: &[usize]) -> Vec<f32> {
    assert_eq!(softmax::validate(p, dims, dims), Ok(()));
    let mut y = vec![f32::NAN; x.len()];
    (k.log_softmax)(p, In { data: x, dims }, Out { data: &mut y, dims });
    y
}

/// The table's log softmax against `x_i - log(sum_j exp(x_j))` along the axis, in f64.
pub fn check_log_softmax(k: &Kernels, c: &SoftmaxCase) -> Result<(), TestCaseError> {
    let axis = usize::from(c.p.axis);
    let want: Vec<Want> = (0..c.x.len())
        .map(|pos| {
            let mut index = unflat(pos, &c.dims);
            let own = f64::from(c.x[pos]);
            let mut sum = 0.0;
            let mut largest = 0.0f64;
            for j in 0..c.dims[axis] {
                index[axis] = j;
                let v = f64::from(c.x[flat(&index, &c.dims)]);
                sum += v.exp();
                largest = largest.max(v.abs());
            }
            let value = own - sum.ln();
            Want {
                value,
                magnitude: own.abs() + largest + value.abs(),
            }
        })
        .collect();
    assert_close(&run_log_softmax(k, &c.p, &c.x, &c.dims), &want)
}

/// Hand-computed log softmaxes, including values whose plain `exp` overflows f32.
pub fn known_log_softmax(k: &Kernels) {
    // log softmax(1, 2, 3) = (1, 2, 3) - 3 - log(e^-2 + e^-1 + 1)
    let want = [-2.407_606, -1.407_606, -0.407_606];
    let p = SoftmaxParams { axis: 0 };
    assert_known(&run_log_softmax(k, &p, &[1.0, 2.0, 3.0], &[3]), &want);
    let shifted = run_log_softmax(k, &p, &[1001.0, 1002.0, 1003.0], &[3]);
    assert_known(&shifted, &want);
    // Axis 1 of a [2, 2]: rows (0, 0) and (0, 100): log(1/2) twice, then -100 and ~0.
    let p = SoftmaxParams { axis: 1 };
    let y = run_log_softmax(k, &p, &[0.0, 0.0, 0.0, 100.0], &[2, 2]);
    assert_known(
        &y,
        &[
            -std::f32::consts::LN_2,
            -std::f32::consts::LN_2,
            -100.0,
            0.0,
        ],
    );
}

// ------------------------------------------------------------------------------------------ layer norm

/// A layer normalization over the axes from `axis` on.
#[derive(Clone, Debug)]
pub struct LayerNormCase {
    p: LayerNormParams,
    dims: Vec<usize>,
    x: Vec<f32>,
    scale: Vec<f32>,
    bias: Option<Vec<f32>>,
}

/// Rank 1 to 4, any axis, bias or not, a small or a large epsilon.
pub fn layer_norm_case() -> impl Strategy<Value = LayerNormCase> {
    (
        vec(dim(), 1..=4),
        any::<bool>(),
        prop_oneof![Just(1e-5f32), Just(0.5f32)],
    )
        .prop_flat_map(|(dims, bias, epsilon)| {
            let rank = dims.len() as u8;
            (0..rank).prop_flat_map(move |axis| {
                let inner = numel(&dims[usize::from(axis)..]);
                let b = if bias {
                    values(inner).prop_map(Some).boxed()
                } else {
                    Just(None).boxed()
                };
                (
                    Just(LayerNormParams { axis, epsilon }),
                    Just(dims.clone()),
                    values(numel(&dims)),
                    values(inner),
                    b,
                )
            })
        })
        .prop_map(|(p, dims, x, scale, bias)| LayerNormCase {
            p,
            dims,
            x,
            scale,
            bias,
        })
}

fn run_layer_norm(k: &Kernels, c: &LayerNormCase) -> Vec<f32> {
    let inner = &c.dims[usize::from(c.p.axis)..];
    let verdict = layer_norm::validate(
        &c.p,
        &c.dims,
        inner,
        c.bias.as_ref().map(|_| inner),
        &c.dims,
    );
    assert_eq!(verdict, Ok(()));
    let mut y = vec![f32::NAN; c.x.len()];
    (k.layer_norm)(
        &c.p,
        In {
            data: &c.x,
            dims: &c.dims,
        },
        In {
            data: &c.scale,
            dims: inner,
        },
        c.bias.as_deref(),
        Out {
            data: &mut y,
            dims: &c.dims,
        },
    );
    y
}

/// The table's layer norm against `(x - mean) / sqrt(var + eps) * scale + bias` per row, in f64. The
/// rounding error of `x - mean` is amplified by `1 / sqrt(var + eps)`: the magnitude says so.
pub fn check_layer_norm(k: &Kernels, c: &LayerNormCase) -> Result<(), TestCaseError> {
    let len = numel(&c.dims[usize::from(c.p.axis)..]);
    if len == 0 {
        // An empty row: the whole tensor is empty, and so is the output.
        prop_assert!(c.x.is_empty());
        return Ok(());
    }
    let mut want = Vec::new();
    for row in c.x.chunks(len) {
        let row: Vec<f64> = row.iter().map(|&v| f64::from(v)).collect();
        let n = row.len() as f64;
        let mean = row.iter().sum::<f64>() / n;
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
        let inv_std = 1.0 / (var + f64::from(c.p.epsilon)).sqrt();
        for (i, v) in row.iter().enumerate() {
            let scale = f64::from(c.scale[i]);
            let bias = c.bias.as_ref().map_or(0.0, |b| f64::from(b[i]));
            want.push(Want {
                value: (v - mean) * inv_std * scale + bias,
                magnitude: (v.abs() + mean.abs()) * inv_std * scale.abs() + bias.abs(),
            });
        }
    }
    assert_close(&run_layer_norm(k, c), &want)
}

/// Hand-computed layer norms.
pub fn known_layer_norm(k: &Kernels) {
    let params = |axis, epsilon| LayerNormParams { axis, epsilon };
    // Rows (1, 3) and (4, 0), epsilon 0: (-1, 1) and (1, -1), then scale (2, 3) and bias (0.5, -0.5).
    let c = LayerNormCase {
        p: params(1, 0.0),
        dims: vec![2, 2],
        x: vec![1.0, 3.0, 4.0, 0.0],
        scale: vec![2.0, 3.0],
        bias: Some(vec![0.5, -0.5]),
    };
    assert_known(&run_layer_norm(k, &c), &[-1.5, 2.5, 2.5, -3.5]);
    // Axis 0 of [2, 2] normalizes all four: mean 2.5, var 1.25, epsilon 0.75: sqrt(2) = 1.414...
    let c = LayerNormCase {
        p: params(0, 0.75),
        dims: vec![2, 2],
        x: vec![1.0, 2.0, 3.0, 4.0],
        scale: vec![1.0; 4],
        bias: None,
    };
    let s = std::f32::consts::FRAC_1_SQRT_2;
    assert_known(
        &run_layer_norm(k, &c),
        &[-1.5 * s, -0.5 * s, 0.5 * s, 1.5 * s],
    );
}

/// `validate` rejects an axis past the rank, scale and bias of other shapes, and outputs of another
/// shape.
pub fn layer_norm_validate_rejects_bad_shapes() {
    let p = |axis| LayerNormParams {
        axis,
        epsilon: 1e-5,
    };
    let x: &[usize] = &[2, 3, 4];
    assert!(layer_norm::validate(&p(3), x, &[], None, x).is_err());
    assert!(layer_norm::validate(&p(1), x, &[4], None, x).is_err());
    assert!(layer_norm::validate(&p(1), x, &[3, 4], Some(&[4]), x).is_err());
    assert!(layer_norm::validate(&p(2), x, &[4], None, &[2, 3, 5]).is_err());
    assert_eq!(
        layer_norm::validate(&p(1), x, &[3, 4], Some(&[3, 4]), x),
        Ok(())
    );
    assert_eq!(layer_norm::validate(&p(2), x, &[4], None, x), Ok(()));
}
