//! The IR's max and average pooling windows ([`Op::MaxPool`](super::Op::MaxPool),
//! [`Op::AvgPool`](super::Op::AvgPool), and their int8 forms in [`crate::ir::quant`]) and global
//! average pooling ([`Op::GlobalAvgPool`](super::Op::GlobalAvgPool)), and their shape inference.

use super::nn::SpatialLayout;
use crate::ir::shape::window_out;

/// A 2-D max or average pooling window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pool2d {
    /// `[h, w]`.
    pub kernel: [usize; 2],
    /// `[h, w]`.
    pub strides: [usize; 2],
    /// `[top, left, bottom, right]`.
    pub pads: [usize; 4],
    /// Average pooling counts padded cells.
    pub count_include_pad: bool,
    /// Layout of input and output.
    pub layout: SpatialLayout,
}

/// The output dims of pooling `x` with window `p`, or why they do not fit.
pub(crate) fn infer_pool(p: &Pool2d, x: &[usize]) -> Result<Vec<usize>, String> {
    let (n, c, h, w) = match (x, p.layout) {
        ([n, c, h, w], SpatialLayout::Nchw) => (*n, *c, *h, *w),
        ([n, h, w, c], SpatialLayout::Nhwc) => (*n, *c, *h, *w),
        _ => return Err(format!("input {x:?} must have rank 4")),
    };
    let [pt, pl, pb, pr] = p.pads;
    if pt >= p.kernel[0] || pb >= p.kernel[0] || pl >= p.kernel[1] || pr >= p.kernel[1] {
        return Err(format!(
            "pads {:?} must be smaller than the window {:?}",
            p.pads, p.kernel
        ));
    }
    let oh = window_out(h, p.kernel[0], p.strides[0], 1, pt, pb)?;
    let ow = window_out(w, p.kernel[1], p.strides[1], 1, pl, pr)?;
    Ok(match p.layout {
        SpatialLayout::Nchw => vec![n, c, oh, ow],
        SpatialLayout::Nhwc => vec![n, oh, ow, c],
    })
}

/// The output dims of the mean of `x` over its spatial dims in `layout`: those dims become 1.
pub(crate) fn infer_global_pool(layout: SpatialLayout, x: &[usize]) -> Result<Vec<usize>, String> {
    match (x, layout) {
        ([n, c, _, _], SpatialLayout::Nchw) => Ok(vec![*n, *c, 1, 1]),
        ([n, _, _, c], SpatialLayout::Nhwc) => Ok(vec![*n, 1, 1, *c]),
        _ => Err(format!("input {x:?} must have rank 4")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(layout: SpatialLayout, pads: [usize; 4]) -> Pool2d {
        Pool2d {
            kernel: [3, 2],
            strides: [2, 2],
            pads,
            count_include_pad: false,
            layout,
        }
    }

    #[test]
    fn pool_output_dims_follow_the_layout() {
        let nchw = pool(SpatialLayout::Nchw, [1, 0, 1, 1]);
        assert_eq!(infer_pool(&nchw, &[1, 8, 9, 8]), Ok(vec![1, 8, 5, 4]));
        let nhwc = pool(SpatialLayout::Nhwc, [1, 0, 1, 1]);
        assert_eq!(infer_pool(&nhwc, &[1, 9, 8, 8]), Ok(vec![1, 5, 4, 8]));
    }

    #[test]
    fn pool_rejects_pads_as_wide_as_the_window() {
        let wide = pool(SpatialLayout::Nchw, [0, 2, 0, 0]);
        assert!(infer_pool(&wide, &[1, 8, 9, 8]).is_err());
        assert!(infer_pool(&pool(SpatialLayout::Nchw, [0; 4]), &[8, 9, 8]).is_err());
    }

    #[test]
    fn pool_output_size_follows_the_onnx_formula() {
        // floor((10 + 0 + 0 - 3) / 3) + 1 = 3 by floor((7 + 1 + 0 - 2) / 2) + 1 = 4.
        let p = Pool2d {
            kernel: [3, 2],
            strides: [3, 2],
            pads: [0, 1, 0, 0],
            count_include_pad: true,
            layout: SpatialLayout::Nchw,
        };
        assert_eq!(infer_pool(&p, &[2, 5, 10, 7]), Ok(vec![2, 5, 3, 4]));
        assert!(infer_pool(&p, &[2, 5, 2, 7]).is_err());
    }

    #[test]
    fn global_pool_keeps_batch_and_channels() {
        assert_eq!(
            infer_global_pool(SpatialLayout::Nchw, &[2, 8, 5, 7]),
            Ok(vec![2, 8, 1, 1])
        );
        assert_eq!(
            infer_global_pool(SpatialLayout::Nhwc, &[2, 5, 7, 8]),
            Ok(vec![2, 1, 1, 8])
        );
        assert!(infer_global_pool(SpatialLayout::Nchw, &[2, 8, 5]).is_err());
    }
}
