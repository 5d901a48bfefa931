//! Shapes, slicing, padding, concatenation, gathering and resizing.

use ember_core::schema::array::{CoordMode, NearestMode, ResizeMode, ResizeParams};

use super::{positive, Ctx, R};
use crate::ir::op::{Resize, Slice};
use crate::ir::shape::resolve_axis;
use crate::ir::{ConstData, Op};
use crate::tflite::schema::{ActivationFunctionType, BuiltinOperator as B, BuiltinOptionsRef as O};
use crate::tflite::OpError;

/// RESHAPE (new shape from its second input or its options), SQUEEZE and EXPAND_DIMS: the output's
/// shape as the file gives it, checked against the op's own shape where it has one.
pub(super) fn reshape(c: &mut Ctx<'_, '_>, op: B, options: Option<O<'_>>) -> R<()> {
    let x = c.float_in(0)?;
    let n: usize = c.shape(x).iter().product();
    let target: Option<Vec<i64>> = match op {
        B::Reshape if c.opt_in(1).is_some() => Some(c.ints(1, "shape")?),
        B::Reshape => match options {
            Some(O::ReshapeOptions(o)) => o.new_shape()?.map(|v| v.iter().map(i64::from).collect()),
            _ => None,
        },
        _ => None,
    };
    let shape = match target {
        Some(t) => resolve_shape(&t, n)?,
        None => c.out_file(0)?.shape.clone(),
    };
    let y = c.node(Op::Reshape { shape }, vec![x])?;
    c.finish(y)
}

/// A shape with at most one -1, resolved for `n` elements.
fn resolve_shape(t: &[i64], n: usize) -> R<Vec<usize>> {
    let known = t
        .iter()
        .filter(|&&d| d >= 0)
        .try_fold(1usize, |a, &d| a.checked_mul(d as usize))
        .ok_or_else(|| OpError(format!("shape {t:?} holds more elements than memory")))?;
    let unknown = t.iter().filter(|&&d| d < 0).count();
    t.iter()
        .map(|&d| match d {
            -1 if unknown == 1 && known > 0 && n.is_multiple_of(known) => Ok(n / known),
            d if d >= 0 => Ok(d as usize),
            _ => Err(OpError(format!(
                "shape {t:?} does not resolve for {n} elements"
            ))),
        })
        .collect()
}

pub(super) fn pad(c: &mut Ctx<'_, '_>) -> R<()> {
    let x = c.float_in(0)?;
    let rank = c.rank(x);
    let p = c.ints(1, "paddings")?;
    if p.len() != 2 * rank || p.iter().any(|&v| v < 0) {
        return Err(OpError(format!(
            "paddings {p:?} must be [{rank}, 2] of non-negative values"
        )));
    }
    let value = match c.opt_in(2) {
        Some(_) => {
            let v = c.float_in(2)?;
            match &c.imp.graph.tensor(v).data {
                Some(ConstData::F32(d)) if d.len() == 1 => d[0],
                _ => return Err(OpError("the pad value must be a constant scalar".into())),
            }
        }
        // PAD fills with zero, the zero point of a quantized tensor: 0.0 once dequantized.
        None => 0.0,
    };
    let before = (0..rank).map(|a| p[2 * a] as usize).collect();
    let after = (0..rank).map(|a| p[2 * a + 1] as usize).collect();
    let pad = Op::Pad {
        before,
        after,
        value,
    };
    let y = c.node(pad, vec![x])?;
    c.finish(y)
}

pub(super) fn concat(c: &mut Ctx<'_, '_>, axis: i32, act: ActivationFunctionType) -> R<()> {
    let xs = (0..c.inputs.len())
        .map(|k| c.float_in(k))
        .collect::<R<Vec<_>>>()?;
    let rank = xs.first().map_or(0, |&x| c.rank(x));
    let axis = resolve_axis(axis.into(), rank).map_err(OpError)?;
    let y = c.node(Op::Concat { axis }, xs)?;
    c.finish_unfused(y, act)
}

/// PACK: each input reshaped with a dim of 1 at `axis`, then concatenated there.
pub(super) fn pack(c: &mut Ctx<'_, '_>, options: Option<O<'_>>) -> R<()> {
    let axis = match options {
        Some(O::PackOptions(o)) => o.axis()?,
        _ => 0,
    };
    let xs = (0..c.inputs.len())
        .map(|k| c.float_in(k))
        .collect::<R<Vec<_>>>()?;
    let rank = xs.first().map_or(0, |&x| c.rank(x));
    let axis = resolve_axis(axis.into(), rank + 1).map_err(OpError)?;
    let mut parts = Vec::with_capacity(xs.len());
    for (k, x) in xs.into_iter().enumerate() {
        let mut shape = c.shape(x);
        shape.insert(axis, 1);
        parts.push(c.tmp(&format!("expanded{k}"), Op::Reshape { shape }, vec![x])?);
    }
    let y = c.node(Op::Concat { axis }, parts)?;
    c.finish(y)
}

/// SPLIT (`axis, x`), SPLIT_V (`x, size_splits, axis`) and UNPACK: one Slice per output.
pub(super) fn split(c: &mut Ctx<'_, '_>, op: B, options: Option<O<'_>>) -> R<()> {
    let (xk, axis) = match op {
        B::Split => (1, None),
        B::SplitV => (0, None),
        _ => (
            0,
            Some(match options {
                Some(O::UnpackOptions(o)) => i64::from(o.axis()?),
                _ => 0,
            }),
        ),
    };
    let x = c.float_in(xk)?;
    let dims = c.shape(x);
    let axis = match (op, axis) {
        (_, Some(a)) => resolve_axis(a, dims.len()).map_err(OpError)?,
        (B::Split, None) => single_axis(c, 0, dims.len())?,
        _ => single_axis(c, 2, dims.len())?,
    };
    let n = c.outputs.len();
    let len = dims[axis];
    let sizes: Vec<usize> = if op == B::SplitV {
        let s = c.ints(1, "size_splits")?;
        let known: i64 = s.iter().filter(|&&v| v >= 0).sum();
        s.iter()
            .map(|&v| if v < 0 { len as i64 - known } else { v })
            .map(|v| {
                usize::try_from(v)
                    .map_err(|_| OpError(format!("size_splits {s:?} do not fit {len}")))
            })
            .collect::<R<_>>()?
    } else {
        if n == 0 || !len.is_multiple_of(n) {
            return Err(OpError(format!(
                "axis {axis} of {dims:?} does not split into {n}"
            )));
        }
        vec![len / n; n]
    };
    if sizes.len() != n || sizes.iter().sum::<usize>() != len {
        return Err(OpError(format!(
            "sizes {sizes:?} do not split axis {axis} of {dims:?} into {n}"
        )));
    }
    let mut start = 0;
    for (k, &size) in sizes.iter().enumerate() {
        let mut s = Slice {
            start: vec![0; dims.len()],
            step: vec![1; dims.len()],
            size: dims.clone(),
        };
        s.start[axis] = start;
        s.size[axis] = size;
        start += size;
        let mut y = c.tmp(&format!("part{k}"), Op::Slice(s), vec![x])?;
        if op == B::Unpack {
            let mut shape = c.shape(y);
            shape.remove(axis);
            y = c.tmp(&format!("part{k}.squeezed"), Op::Reshape { shape }, vec![y])?;
        }
        c.finish_k(k, y)?;
    }
    Ok(())
}

fn single_axis(c: &Ctx<'_, '_>, k: usize, rank: usize) -> R<usize> {
    match c.axes(k, rank, "axis")?[..] {
        [a] => Ok(a),
        _ => Err(OpError("the axis input must hold one axis".into())),
    }
}

pub(super) fn slice(c: &mut Ctx<'_, '_>) -> R<()> {
    let x = c.float_in(0)?;
    let dims = c.shape(x);
    let (begin, size) = (c.ints(1, "begin")?, c.ints(2, "size")?);
    if begin.len() != dims.len() || size.len() != dims.len() {
        return Err(OpError(format!(
            "begin {begin:?} and size {size:?} must have {} values",
            dims.len()
        )));
    }
    let mut s = Slice {
        start: Vec::new(),
        step: vec![1; dims.len()],
        size: Vec::new(),
    };
    for a in 0..dims.len() {
        let b = usize::try_from(begin[a]).ok().filter(|&b| b <= dims[a]);
        let Some(b) = b else {
            return Err(OpError(format!("begin {begin:?} is outside {dims:?}")));
        };
        let n = if size[a] < 0 {
            dims[a] - b
        } else {
            size[a] as usize
        };
        if b + n > dims[a] {
            return Err(OpError(format!(
                "begin {begin:?} and size {size:?} reach past {dims:?}"
            )));
        }
        s.start.push(b);
        s.size.push(n);
    }
    let y = c.node(Op::Slice(s), vec![x])?;
    c.finish(y)
}

/// STRIDED_SLICE with TensorFlow's rules: masks pick the full range, negative indices count from
/// the end, indices are clamped, `shrink_axis_mask` drops an axis (a Reshape after the Slice).
pub(super) fn strided_slice(c: &mut Ctx<'_, '_>, options: Option<O<'_>>) -> R<()> {
    let (bm, em, shrink, offset) = match options {
        Some(O::StridedSliceOptions(o)) => {
            if o.ellipsis_mask()? != 0 || o.new_axis_mask()? != 0 {
                return Err(OpError(
                    "ellipsis_mask and new_axis_mask are not supported".into(),
                ));
            }
            (
                o.begin_mask()?,
                o.end_mask()?,
                o.shrink_axis_mask()?,
                o.offset()?,
            )
        }
        _ => (0, 0, 0, false),
    };
    let x = c.float_in(0)?;
    let dims = c.shape(x);
    let (begin, end) = (c.ints(1, "begin")?, c.ints(2, "end")?);
    let strides = match c.opt_in(3) {
        Some(_) => c.ints(3, "strides")?,
        None => vec![1; begin.len()],
    };
    if begin.len() > dims.len() || end.len() != begin.len() || strides.len() != begin.len() {
        return Err(OpError(format!(
            "begin {begin:?}, end {end:?} and strides {strides:?} do not fit {dims:?}"
        )));
    }
    let mut s = Slice {
        start: Vec::new(),
        step: Vec::new(),
        size: Vec::new(),
    };
    let mut out_shape = Vec::new();
    for (a, &d) in dims.iter().enumerate() {
        let d = d as i64;
        let bit = |m: i32| a < 32 && m & (1 << a) != 0;
        let (b, e, st) = match (begin.get(a), end.get(a), strides.get(a)) {
            (Some(&b), Some(&e), Some(&st)) => (b, if offset { b + e } else { e }, st),
            _ => (0, d, 1),
        };
        if st == 0 {
            return Err(OpError("a stride is 0".into()));
        }
        let norm = |v: i64| if v < 0 { v + d } else { v };
        let (start, size) = if bit(shrink) {
            let i = norm(b);
            if !(0..d).contains(&i) {
                return Err(OpError(format!(
                    "index {b} is outside axis {a} of {dims:?}"
                )));
            }
            (i, 1)
        } else if st > 0 {
            let lo = if bit(bm) { 0 } else { norm(b).clamp(0, d) };
            let hi = if bit(em) { d } else { norm(e).clamp(0, d) };
            (lo, if hi > lo { (hi - lo + st - 1) / st } else { 0 })
        } else {
            let lo = if bit(bm) {
                d - 1
            } else {
                norm(b).clamp(-1, d - 1)
            };
            let hi = if bit(em) {
                -1
            } else {
                norm(e).clamp(-1, d - 1)
            };
            (
                lo.max(0),
                if lo > hi { (lo - hi - st - 1) / -st } else { 0 },
            )
        };
        s.start.push(start as usize);
        s.step.push(if bit(shrink) { 1 } else { st });
        s.size.push(size as usize);
        if !bit(shrink) {
            out_shape.push(size as usize);
        }
    }
    let mut y = c.node(Op::Slice(s), vec![x])?;
    if out_shape.len() != dims.len() {
        y = c.tmp("shrunk", Op::Reshape { shape: out_shape }, vec![y])?;
    }
    c.finish(y)
}

pub(super) fn resize(c: &mut Ctx<'_, '_>, options: Option<O<'_>>) -> R<()> {
    let (nearest, align, half) = match options {
        Some(O::ResizeBilinearOptions(o)) => (false, o.align_corners()?, o.half_pixel_centers()?),
        Some(O::ResizeNearestNeighborOptions(o)) => {
            (true, o.align_corners()?, o.half_pixel_centers()?)
        }
        _ => return Err(OpError("the operator has no resize options".into())),
    };
    let x = c.float_in(0)?;
    let [_, h, w, _] = c.shape(x)[..] else {
        return Err(OpError(format!("input {:?} must have rank 4", c.shape(x))));
    };
    let size = c.ints(1, "size")?;
    let [oh, ow] = size[..] else {
        return Err(OpError(format!("size {size:?} must hold [height, width]")));
    };
    let (oh, ow) = (
        positive(oh as i32, "output height")?,
        positive(ow as i32, "output width")?,
    );
    // TFLite's coordinate rules in ONNX's terms: align_corners maps corner to corner; half pixel
    // centres shift by half a cell (nearest then rounds halves up: floor((o + 0.5) * in / out));
    // neither is the asymmetric map (nearest floors).
    let coord = if align {
        CoordMode::AlignCorners
    } else if half {
        CoordMode::HalfPixel
    } else {
        CoordMode::Asymmetric
    };
    let mode = match (nearest, align || half) {
        (true, true) => ResizeMode::Nearest(NearestMode::RoundPreferCeil),
        (true, false) => ResizeMode::Nearest(NearestMode::Floor),
        (false, _) => ResizeMode::Linear,
    };
    let params = ResizeParams {
        mode,
        coord,
        scale_h: oh as f32 / h.max(1) as f32,
        scale_w: ow as f32 / w.max(1) as f32,
        channels_last: true,
    };
    let y = c.node(
        Op::Resize(Resize {
            params,
            size: [oh, ow],
        }),
        vec![x],
    )?;
    c.finish(y)
}

pub(super) fn gather(c: &mut Ctx<'_, '_>, options: Option<O<'_>>) -> R<()> {
    let (axis, batch_dims) = match options {
        Some(O::GatherOptions(o)) => (o.axis()?, o.batch_dims()?),
        _ => (0, 0),
    };
    if batch_dims != 0 {
        return Err(OpError("batch_dims other than 0 are not supported".into()));
    }
    let x = c.float_in(0)?;
    let dims = c.shape(x);
    let axis = resolve_axis(axis.into(), dims.len()).map_err(OpError)?;
    let idx_file = c.in_index(1)?;
    if c.imp.tensors[idx_file].data.is_none() {
        // Indices computed at run time: the embedding lookup of a constant table's rows.
        let idx = c.value_in(1)?;
        if axis != 0 || !c.imp.graph.is_const(x) {
            return Err(OpError(
                "indices computed at run time are supported on axis 0 of a constant table only"
                    .into(),
            ));
        }
        let y = c.node(Op::Embedding, vec![x, idx])?;
        return c.finish(y);
    }
    let raw = c.ints(1, "indices")?;
    let shape = c.imp.tensors[idx_file].shape.clone();
    let len = dims[axis] as i64;
    let values = raw
        .iter()
        .map(|&i| {
            let r = if i < 0 { i + len } else { i };
            if (0..len).contains(&r) {
                Ok(r as f32)
            } else {
                Err(OpError(format!(
                    "index {i} is outside axis {axis} of {dims:?}"
                )))
            }
        })
        .collect::<R<Vec<_>>>()?;
    let idx = c.imp.graph.add_constant(
        &format!("{}.indices", c.name),
        shape,
        ConstData::F32(values),
    );
    let y = c.node(Op::Gather { axis }, vec![x, idx])?;
    c.finish(y)
}
