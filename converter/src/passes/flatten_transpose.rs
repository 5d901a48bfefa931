//! Folds the Transpose before a flatten into the fully connected weights that read the flattened values.
//!
//! A CNN whose activations run NHWC ends with `x (NHWC) -> Transpose to NCHW -> Reshape [N, K] ->
//! FullyConnected`: the transpose only restores the element order the FC weights were trained on. Reading
//! `x` in its own order instead and permuting the weight columns to match gives the same products, with
//! no transpose at run time (no kernel, no bytes moved, nothing to link on a
//! microcontroller). The products are summed in `x`'s order: exact for int8, and for f32 a different
//! rounding of the same sum (as any reordering is). Both the f32 FullyConnected and the int8 one qualify; an int8 weight keeps its
//! per-output-channel quantization, since its rows do not change.
//!
//! The rewrite applies when the Transpose keeps the batch dim first, the Reshape flattens everything
//! else into one dim, each of them has one reader and is not a graph output, and every reader of the
//! flattened tensor is a fully connected op reading it as input `x` with a constant weight `[OUT, K]`.

use crate::ir::quant::QuantOp;
use crate::ir::{ConstData, Graph, Op, TensorId};
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
        let k: usize = dims.iter().skip(1).product();
        let flattens = perm.first() == Some(&0) && shape.len() == 2 && shape[1] == k;
        if !flattens || g.is_output(t_out) || g.is_output(flat) || uses.get(&t_out) != Some(&1) {
            continue;
        }
        let Some(readers) = fc_readers(g, flat, k, &uses) else {
            continue;
        };
        let columns = column_order(dims, perm);
        for (node, w) in readers {
            let permuted = g.tensor(w).clone();
            let data = match permuted.data.as_ref() {
                Some(ConstData::F32(v)) => ConstData::F32(permute_columns(v, &columns)),
                Some(ConstData::I64(v)) => ConstData::I64(permute_columns(v, &columns)),
                None => continue,
            };
            let name = format!("{}.nhwc", permuted.name);
            let new_w = g.add_tensor(crate::ir::Tensor {
                name,
                data: Some(data),
                ..permuted
            });
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
    uses: &std::collections::HashMap<TensorId, usize>,
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
