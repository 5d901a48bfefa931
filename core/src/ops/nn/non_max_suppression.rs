//! Non-maximum suppression (ONNX `NonMaxSuppression`, opsets 10, 11), as onnxruntime computes it.
//! Per batch and class, candidates are the boxes scoring above `score_threshold`, taken by score
//! (equal scores: lower box index first); a candidate is selected unless its IoU with a box already
//! selected for that batch and class is above `iou_threshold` (a box of zero area overlaps nothing),
//! until `max_per_class` are selected. The output is int64 `[max, 3]`, rows
//! `[batch, class, box]` in that order: the count depends on the data while Ember plans static
//! shapes, so it has room for `max` rows (the converter's `--max-count`); rows past the count hold
//! -1, and selections past `max` are left out.
//!
//! The kernel allocates nothing: the next candidate is the best one ranked after the previous, found
//! by a scan, and the boxes selected so far are read back from the output.

pub use crate::schema::nn::non_max_suppression::NmsParams;

use crate::ops::entry::{out, shape_reason, DTypes, KernelEntry, OpArgs, OpEntry, Operands, OutDims};
use crate::ops::shape::{check_dims, ensure, Checked};
use crate::ops::{In, Out};
use crate::schema::DType;
use crate::Error;

/// The output's dims, `[max, 3]`.
pub fn out_dims(p: &NmsParams) -> Result<OutDims, &'static str> {
    let max = usize::try_from(p.max).map_err(|_| "nms max does not fit this machine")?;
    OutDims::from_slice(&[max, 3]).map_err(|_| "the format's rank limit is below 2")
}

/// Checks `boxes` `[B, N, 4]`, `scores` `[B, C, N]`, both f32, and `y` int64 `[max, 3]`.
pub fn validate(p: &NmsParams, boxes: &[usize], scores: &[usize], y: &[usize]) -> Result<(), Error> {
    check_dims(boxes)?;
    check_dims(scores)?;
    check_dims(y)?;
    ensure(
        boxes.len() == 3 && boxes[2] == 4,
        "nms boxes are not [batches, boxes, 4]",
    )?;
    ensure(
        scores.len() == 3 && scores[0] == boxes[0] && scores[2] == boxes[1],
        "nms scores are not [batches, classes, boxes] for these boxes",
    )?;
    let want = out_dims(p).map_err(|reason| Error::Shape { reason })?;
    ensure(want.as_slice() == y, "nms output is not [max, 3]")
}

/// A box as `(y1, x1, y2, x2)` with `y1 <= y2` and `x1 <= x2`.
fn corners(p: &NmsParams, b: &[f32]) -> (f32, f32, f32, f32) {
    if p.center_point_box {
        let (xc, yc, w, h) = (b[0], b[1], b[2], b[3]);
        (yc - h / 2.0, xc - w / 2.0, yc + h / 2.0, xc + w / 2.0)
    } else {
        (b[0].min(b[2]), b[1].min(b[3]), b[0].max(b[2]), b[1].max(b[3]))
    }
}

/// Whether `a` and `b` overlap with an IoU above `threshold` (neither of zero area).
fn suppresses(p: &NmsParams, a: &[f32], b: &[f32]) -> bool {
    let (ay1, ax1, ay2, ax2) = corners(p, a);
    let (by1, bx1, by2, bx2) = corners(p, b);
    let area_a = (ay2 - ay1) * (ax2 - ax1);
    let area_b = (by2 - by1) * (bx2 - bx1);
    if area_a <= 0.0 || area_b <= 0.0 {
        return false;
    }
    let h = (ay2.min(by2) - ay1.max(by1)).max(0.0);
    let w = (ax2.min(bx2) - ax1.max(bx1)).max(0.0);
    let inter = h * w;
    inter / (area_a + area_b - inter) > p.iou_threshold
}

/// `(score, index)` `a` ranks before `b`: higher score, then lower index.
fn before(a: (f32, usize), b: (f32, usize)) -> bool {
    a.0 > b.0 || (a.0 == b.0 && a.1 < b.1)
}

/// `y` = the selected `[batch, class, box]` rows, -1 past the count.
pub fn non_max_suppression(p: &NmsParams, boxes: In<'_>, scores: In<'_>, y: Out<'_, i64>) {
    y.data.fill(-1);
    let (batches, n) = (boxes.dims[0], boxes.dims[1]);
    let classes = scores.dims[1];
    let max = y.data.len() / 3;
    let mut count = 0;
    for b in 0..batches {
        let bx = |i: usize| boxes.data.get((b * n + i) * 4..(b * n + i) * 4 + 4).unwrap_or(&[0.0; 4]);
        for c in 0..classes {
            let score = |i: usize| scores.data.get((b * classes + c) * n + i).copied().unwrap_or(0.0);
            let first = count;
            let mut last: Option<(f32, usize)> = None;
            while count - first < p.max_per_class as usize {
                let mut best: Option<(f32, usize)> = None;
                for i in 0..n {
                    let cand = (score(i), i);
                    if cand.0 > p.score_threshold
                        && last.is_none_or(|l| before(l, cand))
                        && best.is_none_or(|bst| before(cand, bst))
                    {
                        best = Some(cand);
                    }
                }
                let Some(cand) = best else { break };
                last = best;
                let kept = (first..count).all(|r| {
                    let sel = y.data[r * 3 + 2] as usize;
                    !suppresses(p, bx(sel), bx(cand.1))
                });
                if kept {
                    if count == max {
                        return;
                    }
                    y.data[count * 3..count * 3 + 3].copy_from_slice(&[b as i64, c as i64, cand.1 as i64]);
                    count += 1;
                }
            }
        }
    }
}

/// Signature of a non-maximum suppression kernel.
pub type NmsFn = fn(&NmsParams, In<'_>, In<'_>, Out<'_, i64>);

/// The [`Kernels::non_max_suppression`](crate::Kernels::non_max_suppression) entry, which runs
/// [`OpKind::NonMaxSuppression`](crate::OpKind::NonMaxSuppression).
pub struct NonMaxSuppression;

impl KernelEntry for NonMaxSuppression {
    type Kernel = NmsFn;
    const REFERENCE: NmsFn = non_max_suppression;
    const STUB: NmsFn = |_, _, _, _| {};
}

impl OpEntry for NonMaxSuppression {
    type Params = NmsParams;
    const DTYPES: DTypes = DTypes::Own;

    fn validate(p: &NmsParams, o: &impl Operands) -> Checked {
        if o.dtype(0) != DType::F32 || o.dtype(1) != DType::F32 || o.out_dtype() != DType::I64 {
            return Err("nms needs f32 boxes and scores and an int64 output");
        }
        shape_reason(validate(p, o.dims(0), o.dims(1), o.out_dims()))
    }

    fn infer(p: &NmsParams, _x: &[&[usize]]) -> Result<OutDims, &'static str> {
        out_dims(p)
    }

    fn infer_dtype(_p: &NmsParams, _x: &[DType]) -> Result<DType, &'static str> {
        Ok(DType::I64)
    }

    #[inline(always)]
    fn run(kernel: NmsFn, p: &NmsParams, a: OpArgs<'_, '_>) -> Result<(), Error> {
        kernel(p, a.x(0)?, a.x(1)?, out(a.y)?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(max_per_class: u32, iou: f32, score: f32, max: u32) -> NmsParams {
        NmsParams {
            center_point_box: false,
            max_per_class,
            iou_threshold: iou,
            score_threshold: score,
            max,
        }
    }

    fn run<const R: usize>(p: NmsParams, boxes: &[f32], scores: &[f32], classes: usize) -> [i64; R] {
        let n = boxes.len() / 4;
        let mut y = [7i64; R];
        let ydims = [R / 3, 3];
        non_max_suppression(
            &p,
            In { data: boxes, dims: &[1, n, 4] },
            In { data: scores, dims: &[1, classes, n] },
            Out { data: &mut y, dims: &ydims },
        );
        y
    }

    // Box 0 [0,0,1,1]; box 1 [0,0.5,1,1.5] (IoU with box 0: 0.5/1.5 = 1/3); box 2 [2,2,3,3] (apart).
    const BOXES: [f32; 12] = [0.0, 0.0, 1.0, 1.0, 0.0, 0.5, 1.0, 1.5, 2.0, 2.0, 3.0, 3.0];

    #[test]
    fn suppresses_above_the_iou_threshold_only() {
        let scores = [0.9, 0.8, 0.7];
        // IoU 1/3 > 0.3: box 1 suppressed; room for 4 rows, the last -1.
        let y = run::<12>(p(3, 0.3, f32::NEG_INFINITY, 4), &BOXES, &scores, 1);
        assert_eq!(y, [0, 0, 0, 0, 0, 2, -1, -1, -1, -1, -1, -1]);
        // IoU 1/3 is not above 0.5: all three, by score.
        let y = run::<9>(p(3, 0.5, f32::NEG_INFINITY, 3), &BOXES, &scores, 1);
        assert_eq!(y, [0, 0, 0, 0, 0, 1, 0, 0, 2]);
    }

    #[test]
    fn ties_by_lower_index_thresholds_and_limits() {
        // Equal scores: box 1 before box 2; box 0 scores at the threshold, not above it.
        let scores = [0.5, 0.8, 0.8];
        let y = run::<9>(p(3, 0.9, 0.5, 3), &BOXES, &scores, 1);
        assert_eq!(y, [0, 0, 1, 0, 0, 2, -1, -1, -1]);
        // One per class, two classes; the total room (1 row) cuts the second.
        let scores = [0.9, 0.8, 0.7, 0.1, 0.2, 0.3];
        assert_eq!(run::<6>(p(1, 0.5, 0.0, 2), &BOXES, &scores, 2), [0, 0, 0, 0, 1, 2]);
        assert_eq!(run::<3>(p(1, 0.5, 0.0, 1), &BOXES, &scores, 2), [0, 0, 0]);
    }

    #[test]
    fn centre_boxes_and_shapes() {
        // Centre form: [0.5,0.5,1,1] is box 0; [1,0.5,1,1] is box 1 shifted by half: IoU 1/3.
        let boxes = [0.5, 0.5, 1.0, 1.0, 1.0, 0.5, 1.0, 1.0];
        let q = NmsParams { center_point_box: true, ..p(2, 0.3, f32::NEG_INFINITY, 2) };
        assert_eq!(run::<6>(q, &boxes, &[0.9, 0.8], 1), [0, 0, 0, -1, -1, -1]);
        let q = p(1, 0.5, 0.0, 2);
        assert!(validate(&q, &[1, 3, 4], &[1, 2, 3], &[2, 3]).is_ok());
        assert!(validate(&q, &[1, 3, 4], &[1, 2, 4], &[2, 3]).is_err());
        assert!(validate(&q, &[1, 3, 5], &[1, 2, 3], &[2, 3]).is_err());
    }
}
