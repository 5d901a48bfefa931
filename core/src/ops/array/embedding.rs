//! Embedding lookup: rows of a constant table picked by indices computed at run time (PyTorch's
//! `nn.Embedding`, ONNX `Gather` on axis 0 of an initializer with run-time indices: a transformer's
//! token ids).
//!
//! Inputs `table, ids[, scales]`. The table is `[ROWS, ...]`, f32, or int8 with one f32 scale per row
//! (`scales` `[ROWS]`, weight-only int8: row `r` is `scales[r] * table[r]`). The ids are int32 or
//! int64 of any shape; an id `i` in `-ROWS..0` counts from the end (`ROWS + i`), as ONNX `Gather`
//! says. The output is f32 `ids.dims ++ table.dims[1..]`. Ids are data, unknown when the model is
//! parsed, so the kernel checks each one and fails with [`OUT_OF_RANGE`] on an id outside the table
//! (a reason, like `Gather`'s index check, rather than a variant carrying the id: every firmware links
//! `Error`'s formatting, and an `i64` field would make every `Result` it moves larger).

use crate::ops::element::AnyIn;
use crate::ops::shape::{dims_fit, require, same_dims, validate_by_check, Checked};
use crate::ops::Out;
use crate::schema::DType;
use crate::Error;

/// The error for an id outside the table.
pub const OUT_OF_RANGE: Error = Error::Shape {
    reason: "an embedding id is outside its table's rows (a token id beyond the vocabulary?)",
};
use crate::ops::entry::{out, DTypes, KernelEntry, OpArgs, OpEntry, Operands, LEFT_OUT};

validate_by_check! {
    /// Checks the shapes: `table` `[ROWS, ...]` with `ROWS > 0`, `scales` `[ROWS]` when present, and `y`
    /// the dims of `ids` followed by the table's dims after the first.
    (table: &[usize], ids: &[usize], scales: Option<&[usize]>, y: &[usize])
}

/// [`validate`] as a [`Checked`].
pub(crate) fn check(
    table: &[usize],
    ids: &[usize],
    scales: Option<&[usize]>,
    y: &[usize],
) -> Checked {
    dims_fit(table)?;
    dims_fit(ids)?;
    dims_fit(y)?;
    let Some((&rows, row)) = table.split_first() else {
        return Err("embedding table has rank 0");
    };
    require(rows > 0, "embedding table has no rows")?;
    if let Some(s) = scales {
        require(
            s.len() == 1 && s[0] == rows,
            "embedding scales are not [ROWS]",
        )?;
    }
    require(
        y.len() == ids.len() + row.len()
            && same_dims(&y[..ids.len()], ids)
            && same_dims(&y[ids.len()..], row),
        "embedding output dims are not the ids' dims followed by a table row's",
    )
}

/// The row an id picks in a table of `rows` rows, or `None` outside `-rows..rows`.
#[inline]
pub fn row_of(id: i64, rows: usize) -> Option<usize> {
    let rows = i64::try_from(rows).ok()?;
    let r = if id < 0 { id.checked_add(rows)? } else { id };
    (0..rows).contains(&r).then_some(r as usize)
}

/// Id `k` of `ids` (int32 or int64, checked by the model), widened.
#[inline]
fn id_at(ids: &AnyIn<'_>, k: usize) -> Option<i64> {
    match ids.dtype {
        DType::I32 => {
            let b = ids.bytes.get(4 * k..4 * k + 4)?;
            Some(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
        }
        DType::I64 => {
            let b = ids.bytes.get(8 * k..8 * k + 8)?;
            let mut a = [0u8; 8];
            a.copy_from_slice(b);
            Some(i64::from_le_bytes(a))
        }
        _ => None,
    }
}

/// `y[k, ...] = table[row(ids[k]), ...]` (times `scales[row]` for an int8 table).
pub fn embedding(
    table: AnyIn<'_>,
    ids: AnyIn<'_>,
    scales: Option<&[f32]>,
    y: Out<'_>,
) -> Result<(), Error> {
    let rows = table.dims.first().copied().unwrap_or(0);
    let width: usize = table.dims.iter().skip(1).product();
    if y.data.is_empty() || width == 0 {
        return Ok(());
    }
    let bad_dtype = Error::Unsupported {
        reason: "embedding needs an f32 or int8 table and int32 or int64 ids",
    };
    enum Rows<'a> {
        F32(&'a [f32]),
        I8(&'a [i8], &'a [f32]),
    }
    let rows_of = match (table.dtype, scales) {
        (DType::F32, None) => Rows::F32(table.typed::<f32>().ok_or(bad_dtype)?.data),
        (DType::I8, Some(s)) => Rows::I8(table.typed::<i8>().ok_or(bad_dtype)?.data, s),
        _ => return Err(bad_dtype),
    };
    for (k, out) in y.data.chunks_exact_mut(width).enumerate() {
        let id = id_at(&ids, k).ok_or(bad_dtype)?;
        let r = row_of(id, rows).ok_or(OUT_OF_RANGE)?;
        let span = r * width..(r + 1) * width;
        match rows_of {
            Rows::F32(t) => out.copy_from_slice(t.get(span).ok_or(bad_dtype)?),
            Rows::I8(t, s) => {
                let src = t.get(span).ok_or(bad_dtype)?;
                let s = s.get(r).copied().ok_or(bad_dtype)?;
                for (o, &q) in out.iter_mut().zip(src) {
                    *o = s * f32::from(q);
                }
            }
        }
    }
    Ok(())
}

/// Signature of an embedding lookup (`table, ids, scales, y`); fails on an id outside the table.
pub type EmbeddingFn = fn(AnyIn<'_>, AnyIn<'_>, Option<&[f32]>, Out<'_>) -> Result<(), Error>;

/// The [`Kernels::embedding`](crate::Kernels::embedding) entry, which runs
/// [`OpKind::Embedding`](crate::OpKind::Embedding).
pub struct Embedding;

impl KernelEntry for Embedding {
    type Kernel = EmbeddingFn;
    const REFERENCE: EmbeddingFn = embedding;
    const STUB: EmbeddingFn = |_, _, _, _| Err(LEFT_OUT);
}

impl OpEntry for Embedding {
    type Params = ();
    const DTYPES: DTypes = DTypes::Own;

    fn validate(p: &(), o: &impl Operands) -> Checked {
        let () = p;
        let table_ok = match (o.dtype(0), o.count()) {
            (DType::F32, 2) => true,
            (DType::I8, 3) => o.dtype(2) == DType::F32,
            _ => false,
        };
        require(
            o.out_dtype() == DType::F32 && table_ok && matches!(o.dtype(1), DType::I32 | DType::I64),
            "embedding needs an f32 table (or int8 with f32 scales), int32 or int64 ids and an f32 output",
        )?;
        check(o.dims(0), o.dims(1), o.opt(2), o.out_dims())
    }

    #[inline(always)]
    fn run(kernel: EmbeddingFn, p: &(), a: OpArgs<'_, '_>) -> Result<(), Error> {
        let () = p;
        let scales = a.opt(2)?;
        kernel(a.any(0), a.any(1), scales, out(a.y)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn any<'a>(dtype: DType, bytes: &'a [u8], dims: &'a [usize]) -> AnyIn<'a> {
        AnyIn { dtype, bytes, dims }
    }

    /// The little-endian bytes of `N` values of `W` bytes each.
    fn le<const N: usize, const B: usize, const W: usize>(v: [[u8; W]; N]) -> [u8; B] {
        let mut out = [0u8; B];
        for (chunk, x) in out.chunks_exact_mut(W).zip(v) {
            chunk.copy_from_slice(&x);
        }
        out
    }

    #[test]
    fn picks_rows_counts_negative_ids_from_the_end_and_refuses_others() {
        let table: [u8; 24] = le([0.0f32, 1.0, 10.0, 11.0, 20.0, 21.0].map(f32::to_le_bytes));
        let ids: [u8; 24] = le([2i64, 0, -1].map(i64::to_le_bytes));
        let mut y = [0.0f32; 6];
        let out = Out {
            data: &mut y,
            dims: &[3, 2],
        };
        let table_f32 = || any(DType::F32, &table, &[3, 2]);
        embedding(table_f32(), any(DType::I64, &ids, &[3]), None, out).unwrap();
        assert_eq!(y, [20.0, 21.0, 0.0, 1.0, 20.0, 21.0]);

        let q = [1i8, -2, 127, -127].map(|v| v as u8);
        let ids32: [u8; 8] = le([1i32, 0].map(i32::to_le_bytes));
        let mut y = [0.0f32; 4];
        let out = Out {
            data: &mut y,
            dims: &[2, 2],
        };
        let scales = [0.5, 0.25];
        let ids = any(DType::I32, &ids32, &[2]);
        embedding(any(DType::I8, &q, &[2, 2]), ids, Some(&scales), out).unwrap();
        assert_eq!(y, [31.75, -31.75, 0.5, -1.0]);

        let far = 3i32.to_le_bytes();
        let mut y = [0.0f32; 2];
        let out = Out {
            data: &mut y,
            dims: &[1, 2],
        };
        let err = embedding(table_f32(), any(DType::I32, &far, &[1]), None, out);
        assert_eq!(err, Err(OUT_OF_RANGE));
        assert_eq!(row_of(-4, 3), None);
        assert_eq!(row_of(i64::MIN, 3), None);
    }

    #[test]
    fn shapes() {
        assert!(validate(&[5, 4], &[1, 7], None, &[1, 7, 4]).is_ok());
        assert!(validate(&[5, 4], &[1, 7], Some(&[5]), &[1, 7, 4]).is_ok());
        assert!(validate(&[5, 4], &[1, 7], Some(&[4]), &[1, 7, 4]).is_err());
        assert!(validate(&[0, 4], &[1], None, &[1, 4]).is_err());
        assert!(validate(&[5, 4], &[1, 7], None, &[7, 4]).is_err());
    }
}
