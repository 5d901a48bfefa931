//! Index maps for the data-movement ops, computed once per session on the host by running the
//! reference kernel itself over tensors that hold their own element indices.
//!
//! A data-movement kernel only copies values, so feeding it `i` in element `i` of each input yields, in
//! each output element, the index it reads. f32 holds whole numbers exactly only below 2^24, so the
//! kernel runs twice, over the high and the low 12 bits of each index. Inputs of a concat are numbered
//! one after the other; a pad's fill value is set to -1, which marks [`NO_SOURCE`].

use ember_core::ops::{In, Out};

use crate::kernels::array::NO_SOURCE;

/// Largest total input size an index map can number: indices stay below the `NO_SOURCE` marker (the
/// high half, `i >> 12`, then stays below 2^20 and is exact in f32).
pub(crate) const MAX_ELEMENTS: usize = (NO_SOURCE - 1) as usize;

/// The map of `run`, which is handed the inputs (filled with indices) and the output to write. `None`
/// when the inputs hold more than [`MAX_ELEMENTS`] elements.
pub(crate) fn index_map(
    inputs: &[&[usize]],
    out_dims: &[usize],
    run: impl Fn(&[In<'_>], Out<'_>),
) -> Option<Vec<u32>> {
    let lens: Vec<usize> = inputs.iter().map(|d| d.iter().product()).collect();
    let total: usize = lens.iter().sum();
    if total > MAX_ELEMENTS {
        return None;
    }
    let out_len: usize = out_dims.iter().product();
    let mut halves = [vec![0f32; out_len], vec![0f32; out_len]];
    for (pass, out) in halves.iter_mut().enumerate() {
        let mut base = 0usize;
        let data: Vec<Vec<f32>> = lens
            .iter()
            .map(|&len| {
                let v = (base..base + len)
                    .map(|i| match pass {
                        0 => (i >> 12) as f32,
                        _ => (i & 0xFFF) as f32,
                    })
                    .collect();
                base += len;
                v
            })
            .collect();
        let ins: Vec<In<'_>> = data
            .iter()
            .zip(inputs)
            .map(|(d, dims)| In { data: d, dims })
            .collect();
        run(
            &ins,
            Out {
                data: out,
                dims: out_dims,
            },
        );
    }
    let [hi, lo] = halves;
    Some(
        hi.iter()
            .zip(&lo)
            .map(|(&h, &l)| {
                if h < 0.0 || l < 0.0 {
                    NO_SOURCE
                } else {
                    ((h as u32) << 12) | l as u32
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ember_core::ops::array::transpose::{transpose, TransposeParams};

    #[test]
    fn transpose_map_reads_the_permuted_index() {
        let p = TransposeParams {
            perm: [1, 0, 2, 3, 4, 5],
        };
        let map = index_map(&[&[2, 3]], &[3, 2], |x, y| transpose(&p, x[0], y)).unwrap();
        assert_eq!(map, [0, 3, 1, 4, 2, 5]);
    }

    #[test]
    fn indices_above_2_pow_24_survive() {
        let n = (1 << 24) + 5;
        let map = index_map(&[&[n]], &[n], |x, y| y.data.copy_from_slice(x[0].data)).unwrap();
        assert_eq!(map[n - 1], (n - 1) as u32);
    }
}
