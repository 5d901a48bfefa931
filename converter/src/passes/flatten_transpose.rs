//! Folds the Transpose before a flatten into the fully connected weights that read the flattened values.
//!
//! A CNN whose activations run NHWC ends with `x (NHWC) -> Transpose to NCHW -> Reshape [N, K] ->
//! FullyConnected`: the transpose only restores the element order the FC weights were trained on. Reading
//! `x` in its own order instead and permuting the weight columns to match gives the same products, with
//! no transpose at run time (no kernel, no bytes moved, nothing to link on a microcontroller). The
//! products are summed in `x`'s order: exact for int8, and for f32 a different rounding of the same sum
//! (as any reordering is). Both the f32 FullyConnected and the int8 one qualify; an int8 weight keeps its
//! per-output-channel requantization, since its rows do not change.
//!
//! The rewrite applies when the Transpose keeps the batch dim first, the Reshape flattens everything
//! else into one dim (`[N, K]`), each of them has one reader and is not a graph output, and every
//! reader of the flattened tensor is a fully connected op reading it as input `x` with a constant weight
//! `[OUT, K]` that nothing else reads (a shared weight would have to be stored twice, which costs more
//! flash than the transpose saves). Otherwise the graph is left as it is.

use std::collections::HashMap;

use crate::ir::quant::{Quant, QuantOp};
use crate::ir::{ConstData, Graph, Op, Tensor, TensorId, TensorLayout};
use crate::ConvertError;

/// Folds every flatten transpose it can.
pub fn run(g: &mut Graph) -> Result<bool, ConvertError> {
    let producers = g.producers();
    let uses = g.use_counts();
    let mut changed = false;
    for r in 0..g.nodes.len() {
        let Op::Reshape { shape } = &g.nodes[r].op else {
            continue;
        };
        let (t_out, flat) = (g.nodes[r].inputs[0], g.nodes[r].output);
        let Some(&t) = producers.get(&t_out) else {
            continue;
        };
        let Op::Transpose { perm } = &g.nodes[t].op else {
            continue;
        };
        let x = g.nodes[t].inputs[0];
        let dims = &g.tensor(x).shape;
        // Checked: a hostile model's dims may multiply past usize (then there is nothing to fold).
        let Ok(k) = crate::ir::shape::numel(&dims[dims.len().min(1)..]) else {
            continue;
        };
        let flattens = perm.first() == Some(&0)
            && k > 0
            && shape.len() == 2
            && Some(&shape[0]) == dims.first()
            && shape[1] == k;
        if !flattens || g.is_kept(t_out) || g.is_kept(flat) || uses.get(&t_out) != Some(&1) {
            continue;
        }
        let Some(readers) = fc_readers(g, flat, k, &uses) else {
            continue;
        };
        let columns = column_order(dims, perm);
        let suffix = match g.tensor(x).layout {
            TensorLayout::Nhwc => "nhwc",
            TensorLayout::Onnx => "columns",
        };
        for (node, w) in readers {
            let old = g.tensor(w);
            let data = match &old.data {
                Some(ConstData::F32(v)) => ConstData::F32(permute_columns(v, &columns)),
                Some(ConstData::I64(v)) => ConstData::I64(permute_columns(v, &columns)),
                // `fc_readers` only returns constant weights.
                None => continue,
            };
            let permuted = Tensor {
                name: format!("{}.{suffix}", old.name),
                data: Some(data),
                quant: old.quant.as_ref().map(|q| permute_quant(q, &columns)),
                ..old.clone()
            };
            let new_w = g.add_tensor(permuted);
            g.nodes[node].inputs[1] = new_w;
        }
        g.nodes[r].inputs[0] = x;
        changed = true;
    }
    Ok(changed)
}

/// The fully connected nodes reading `flat` and their weights, if every reader of `flat` is one that
/// reads it as input 0 with a constant `[OUT, k]` weight nothing else reads.
fn fc_readers(
    g: &Graph,
    flat: TensorId,
    k: usize,
    uses: &HashMap<TensorId, usize>,
) -> Option<Vec<(usize, TensorId)>> {
    let mut readers = Vec::new();
    for (i, n) in g.nodes.iter().enumerate() {
        if !n.inputs.contains(&flat) {
            continue;
        }
        let is_fc = matches!(
            n.op,
            Op::FullyConnected { .. } | Op::Quant(QuantOp::FullyConnected(_))
        );
        let w = *n.inputs.get(1)?;
        let w_shape = &g.tensor(w).shape;
        let ok = is_fc
            && n.inputs[0] == flat
            && n.inputs[1..].iter().all(|&id| id != flat)
            && g.is_const(w)
            && uses.get(&w) == Some(&1)
            && w_shape.len() == 2
            && w_shape[1] == k;
        if !ok {
            return None;
        }
        readers.push((i, w));
    }
    (!readers.is_empty()).then_some(readers)
}

/// For a flatten of `transpose(x, perm)` (batch dim first and kept): `order[kx]` is the flat index, in
/// the transposed tensor, of the element at flat index `kx` of `x` (both over the dims after the batch).
pub fn column_order(x_dims: &[usize], perm: &[usize]) -> Vec<usize> {
    let rank = x_dims.len();
    let t_dims: Vec<usize> = perm.iter().map(|&p| x_dims[p]).collect();
    // Row-major strides of the transposed tensor, per transposed axis.
    let mut t_strides = vec![1usize; rank];
    for a in (0..rank.saturating_sub(1)).rev() {
        t_strides[a] = t_strides[a + 1] * t_dims[a + 1];
    }
    // Transposed axis `a` is x's axis `perm[a]`, so x's axis `perm[a]` moves with stride t_strides[a].
    let mut stride_of_x_axis = vec![0usize; rank];
    for (a, &p) in perm.iter().enumerate() {
        stride_of_x_axis[p] = t_strides[a];
    }
    let k: usize = x_dims.iter().skip(1).product();
    let mut order = Vec::with_capacity(k);
    let mut index = vec![0usize; rank];
    for _ in 0..k {
        order.push((1..rank).map(|d| index[d] * stride_of_x_axis[d]).sum());
        // Next index of x over its dims after the batch, row-major.
        for d in (1..rank).rev() {
            index[d] += 1;
            if index[d] < x_dims[d] {
                break;
            }
            index[d] = 0;
        }
    }
    order
}

/// `w [OUT, K]` with column `kx` taken from column `order[kx]`.
fn permute_columns<T: Copy>(w: &[T], order: &[usize]) -> Vec<T> {
    w.chunks(order.len())
        .flat_map(|row| order.iter().map(move |&c| row[c]))
        .collect()
}

/// The quantization of a weight whose columns moved: per-column parameters (axis 1) move with them;
/// per-tensor and per-row ones stay.
fn permute_quant(q: &Quant, order: &[usize]) -> Quant {
    if q.axis != 1 || q.scales.len() != order.len() {
        return q.clone();
    }
    Quant {
        scales: order.iter().map(|&c| q.scales[c]).collect(),
        zero_points: order.iter().map(|&c| q.zero_points[c]).collect(),
        ..q.clone()
    }
}

#[cfg(test)]
mod tests {
    use ember_core::ops::math::activation::Activation;
    use ember_core::ops::quant::fully_connected::QuantFullyConnectedParams;
    use ember_core::ops::quant::requant::RequantRounding;
    use ember_core::DType;

    use super::*;
    use crate::ir::Node;

    /// Against the definition: element `x[n, h, w, c]` of an NHWC tensor sits at NCHW flat index
    /// `c * H * W + h * W + w` after `Transpose[0, 3, 1, 2]`.
    #[test]
    fn column_order_of_nhwc_to_nchw() {
        let (h, w, c) = (2, 3, 4);
        let order = column_order(&[1, h, w, c], &[0, 3, 1, 2]);
        let mut expected = Vec::new();
        for hi in 0..h {
            for wi in 0..w {
                for ci in 0..c {
                    expected.push(ci * h * w + hi * w + wi);
                }
            }
        }
        assert_eq!(order, expected);
        // The identity permutation keeps the order.
        assert_eq!(
            column_order(&[2, 3, 4], &[0, 1, 2]),
            (0..12).collect::<Vec<_>>()
        );
    }

    #[test]
    fn columns_move_within_each_row() {
        let w = [10, 11, 12, 20, 21, 22];
        assert_eq!(permute_columns(&w, &[2, 0, 1]), [12, 10, 11, 22, 20, 21]);
    }

    /// `x (graph input) -> Transpose(perm) -> Reshape(flat_shape) -> FullyConnected(w [OUT, K])`,
    /// f32, or int8 with `QuantFullyConnected` (int8 weights held as i64, a requantization row per
    /// output).
    struct FlattenFc {
        g: Graph,
        x: TensorId,
        t: TensorId,
        flat: TensorId,
        w: TensorId,
    }

    const X_ZERO_POINT: i8 = 3;

    fn flatten_fc(x_dims: &[usize], perm: &[usize], flat_shape: &[usize], int8: bool) -> FlattenFc {
        let out = 5;
        let k = *flat_shape.last().expect("the flat shape has a last dim");
        let dtype = if int8 { DType::I8 } else { DType::F32 };
        let mut g = Graph::new(13);
        let x = g.add_activation_of("x", x_dims.to_vec(), dtype);
        g.inputs.push(x);
        let t_dims: Vec<usize> = perm.iter().map(|&p| x_dims[p]).collect();
        let t = g.add_activation_of("t", t_dims, dtype);
        let flat = g.add_activation_of("flat", flat_shape.to_vec(), dtype);
        let mut y_dims = flat_shape.to_vec();
        *y_dims.last_mut().expect("rank >= 1") = out;
        let y = g.add_activation_of("y", y_dims, dtype);
        // Small whole numbers, none repeated within a row: any column mix-up changes the sums.
        let w_values = (0..out * k).map(|i| (i % k) as i64 * 3 - (i / k) as i64 - 7);
        let w = if int8 {
            g.add_constant_of(
                "w",
                vec![out, k],
                ConstData::I64(w_values.collect()),
                DType::I8,
            )
        } else {
            let data = w_values.map(|v| v as f32).collect();
            g.add_constant("w", vec![out, k], ConstData::F32(data))
        };
        let node = |name: &str, op: Op, inputs: Vec<TensorId>, output: TensorId| Node {
            name: name.into(),
            onnx_op: String::new(),
            op,
            inputs,
            output,
        };
        let fc = if int8 {
            g.tensor_mut(x).quant = Some(Quant::per_tensor(0.5, X_ZERO_POINT));
            let requant = g.add_constant_of(
                "requant",
                vec![out, 2],
                ConstData::I64([1 << 30, 0].repeat(out)),
                DType::I32,
            );
            let params = QuantFullyConnectedParams {
                x_zero_point: X_ZERO_POINT,
                y_zero_point: 0,
                act_min: i8::MIN,
                act_max: i8::MAX,
                rounding: RequantRounding::Single,
            };
            let op = Op::Quant(QuantOp::FullyConnected(params));
            node("fc", op, vec![flat, w, requant], y)
        } else {
            let op = Op::FullyConnected {
                act: Activation::None,
            };
            node("fc", op, vec![flat, w], y)
        };
        let perm = perm.to_vec();
        g.nodes = vec![
            node("transpose", Op::Transpose { perm }, vec![x], t),
            node(
                "flatten",
                Op::Reshape {
                    shape: flat_shape.to_vec(),
                },
                vec![t],
                flat,
            ),
            fc,
        ];
        g.outputs.push(y);
        g.check().expect("the test graph is consistent");
        FlattenFc { g, x, t, flat, w }
    }

    /// The weight the fully connected node (the last) reads, and its values.
    fn fc_weight(g: &Graph) -> (TensorId, Vec<i64>) {
        let w = g.nodes.last().expect("the graph has nodes").inputs[1];
        (w, values_of(g, w))
    }

    /// A constant's values as i64 (exact for the whole numbers these tests use).
    fn values_of(g: &Graph, id: TensorId) -> Vec<i64> {
        match g.tensor(id).data.as_ref().expect("a constant") {
            ConstData::F32(v) => v.iter().map(|&x| x as i64).collect(),
            ConstData::I64(v) => v.clone(),
        }
    }

    /// `y[n][o] = sum_k flat[n][k] * w[o][k]`, summed in k's order.
    fn matmul(flat: &[i64], w: &[i64], k: usize) -> Vec<i64> {
        flat.chunks(k)
            .flat_map(|row| {
                w.chunks(k)
                    .map(|wr| row.iter().zip(wr).map(|(a, b)| a * b).sum())
            })
            .collect()
    }

    /// The pass on `x [1, 2, 3, 4] -> Transpose[0, 3, 1, 2] -> flatten [1, 24] -> FC`: the flatten
    /// reads `x`, the transpose has no reader left, and the FC with the new weights on `x`'s own
    /// order gives what ONNX gives (transpose, then flatten, then `flat W^T`, written out below).
    fn folds_nhwc_to_nchw_flatten(int8: bool) {
        let (h, w, c) = (2usize, 3usize, 4usize);
        let k = h * w * c;
        let mut f = flatten_fc(&[1, h, w, c], &[0, 3, 1, 2], &[1, k], int8);
        // x[0, hi, wi, ci], row-major, and the int8 FC's `x - x_zero_point` (zero for f32).
        let zp = if int8 { i64::from(X_ZERO_POINT) } else { 0 };
        let x: Vec<i64> = (0..k as i64).map(|i| (i * 5) % 11 - 4).collect();
        // ONNX: t[0, ci, hi, wi] = x[0, hi, wi, ci]; flatten t row-major; y = flat W^T.
        let mut t_flat = Vec::with_capacity(k);
        for ci in 0..c {
            for hi in 0..h {
                for wi in 0..w {
                    t_flat.push(x[(hi * w + wi) * c + ci] - zp);
                }
            }
        }
        let (_, w_before) = fc_weight(&f.g);
        let expected = matmul(&t_flat, &w_before, k);

        assert!(run(&mut f.g).unwrap());
        f.g.check().unwrap();
        assert_eq!(f.g.nodes[1].inputs, [f.x], "the flatten reads x");
        assert_eq!(f.g.use_count(f.t), 0, "nothing reads the transpose");
        let (new_w, w_after) = fc_weight(&f.g);
        assert_ne!(new_w, f.w);
        assert_eq!(f.g.tensor(new_w).dtype, f.g.tensor(f.w).dtype);
        // The reshape leaves x's bytes in place: the FC reads x's row-major order.
        let x_flat: Vec<i64> = x.iter().map(|v| v - zp).collect();
        assert_eq!(matmul(&x_flat, &w_after, k), expected);
        // The original weight is untouched, so the transpose's order would still give the same.
        assert_eq!(values_of(&f.g, f.w), w_before);
        // A second run finds nothing more to fold.
        assert!(!run(&mut f.g).unwrap());
    }

    #[test]
    fn folds_the_transpose_into_f32_weights() {
        folds_nhwc_to_nchw_flatten(false);
    }

    /// The int8 FC: `sum_k (x[k] - x_zero_point) * w[o][k]` is the same integer sum (the requantization
    /// rows are per output, so they do not move).
    #[test]
    fn folds_the_transpose_into_int8_weights() {
        folds_nhwc_to_nchw_flatten(true);
    }

    /// Batch 2 and a rank-3 swap: `t[n, ci, li] = x[n, li, ci]`, each sample flattened on its own.
    #[test]
    fn folds_a_batched_rank_3_transpose() {
        let (n, l, c) = (2usize, 3usize, 4usize);
        let k = l * c;
        let mut f = flatten_fc(&[n, l, c], &[0, 2, 1], &[n, k], false);
        let x: Vec<i64> = (0..(n * k) as i64).map(|i| (i * 7) % 13 - 6).collect();
        let mut t_flat = Vec::with_capacity(n * k);
        for ni in 0..n {
            for ci in 0..c {
                for li in 0..l {
                    t_flat.push(x[ni * k + li * c + ci]);
                }
            }
        }
        let (_, w_before) = fc_weight(&f.g);
        let expected = matmul(&t_flat, &w_before, k);
        assert!(run(&mut f.g).unwrap());
        f.g.check().unwrap();
        assert_eq!(f.g.nodes[1].inputs, [f.x]);
        assert_eq!(f.g.tensor(fc_weight(&f.g).0).name, "w.columns");
        assert_eq!(matmul(&x, &fc_weight(&f.g).1, k), expected);
    }

    /// Asserts the pass leaves `f` as it was.
    fn assert_skipped(mut f: FlattenFc, why: &str) {
        let before = format!("{:?}", f.g.nodes);
        assert!(!run(&mut f.g).unwrap(), "{why}");
        assert_eq!(format!("{:?}", f.g.nodes), before, "{why}");
        assert_eq!(f.g.nodes[1].inputs, [f.t], "{why}");
        assert_eq!(f.g.nodes[2].inputs[..2], [f.flat, f.w], "{why}");
    }

    #[test]
    fn the_batch_dim_must_stay_first() {
        // t [3, 1, 2, 4] flattened to [1, 24]: the shapes fit, but x's dim 2 leads the order.
        let f = flatten_fc(&[1, 2, 3, 4], &[2, 0, 1, 3], &[1, 24], false);
        assert_skipped(f, "perm[0] != 0");
        // t [4, 1, 2, 3] flattened to [4, 6]: the "batch" of the flatten is x's channel dim.
        let f = flatten_fc(&[1, 2, 3, 4], &[3, 0, 1, 2], &[4, 6], false);
        assert_skipped(f, "perm[0] != 0, and the flatten does not keep x's batch");
    }

    #[test]
    fn a_transpose_with_another_reader_stays() {
        let mut f = flatten_fc(&[1, 2, 3, 4], &[0, 3, 1, 2], &[1, 24], false);
        let other = f.g.add_activation("other", vec![24]);
        f.g.nodes.push(Node {
            name: "other".into(),
            onnx_op: String::new(),
            op: Op::Reshape { shape: vec![24] },
            inputs: vec![f.t],
            output: other,
        });
        f.g.outputs.push(other);
        assert_skipped(f, "the transpose output has two readers");

        let mut f = flatten_fc(&[1, 2, 3, 4], &[0, 3, 1, 2], &[1, 24], false);
        f.g.outputs.push(f.t);
        assert_skipped(f, "the transpose output is a graph output");
    }

    #[test]
    fn a_shared_weight_stays() {
        let mut f = flatten_fc(&[1, 2, 3, 4], &[0, 3, 1, 2], &[1, 24], false);
        let z = f.g.add_activation("z", vec![1, 24]);
        f.g.inputs.push(z);
        let y2 = f.g.add_activation("y2", vec![1, 5]);
        f.g.nodes.push(Node {
            name: "fc2".into(),
            onnx_op: String::new(),
            op: Op::FullyConnected {
                act: Activation::None,
            },
            inputs: vec![z, f.w],
            output: y2,
        });
        f.g.outputs.push(y2);
        f.g.check().unwrap();
        assert_skipped(f, "the weight is shared");
    }

    #[test]
    fn a_flatten_to_3d_or_read_elsewhere_stays() {
        // The FC maps the last dim only: per row of 6 transposed values, or per single value.
        let f = flatten_fc(&[1, 2, 3, 4], &[0, 3, 1, 2], &[1, 4, 6], false);
        assert_skipped(f, "the reshape is to [1, 4, 6]");
        let f = flatten_fc(&[1, 2, 3, 4], &[0, 3, 1, 2], &[1, 24, 1], false);
        assert_skipped(f, "the reshape is to [1, 24, 1]");

        let mut f = flatten_fc(&[1, 2, 3, 4], &[0, 3, 1, 2], &[1, 24], false);
        f.g.outputs.push(f.flat);
        assert_skipped(f, "the flattened values are a graph output");
    }

    /// A float weight that carries per-column quantization (axis 1) keeps `value = (q - zp) * scale`
    /// per column: the scales move with the columns.
    #[test]
    fn per_column_quantization_moves_with_the_columns() {
        let q = Quant {
            scales: vec![1.0, 2.0, 3.0],
            zero_points: vec![0, 1, 2],
            axis: 1,
            dtype: DType::I8,
        };
        let moved = permute_quant(&q, &[2, 0, 1]);
        assert_eq!(moved.scales, [3.0, 1.0, 2.0]);
        assert_eq!(moved.zero_points, [2, 0, 1]);
        let per_row = Quant { axis: 0, ..q };
        assert_eq!(permute_quant(&per_row, &[2, 0, 1]), per_row);
    }
}
