//! The sizes of an int8 convolution (its validated dims, as `usize`) and which input pixel each kernel
//! tap of an output pixel reads: shared by the convolution's two paths, the GEMM over im2col rows
//! ([`super::conv`]) and the depthwise kernel ([`super::depthwise`]).

use ember_core::ops::quant::conv::QuantConv2dParams;

/// The sizes of a convolution (validated dims, as `usize`).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Geometry {
    pub batch: usize,
    pub in_h: usize,
    pub in_w: usize,
    pub in_c: usize,
    pub out_c: usize,
    pub k_h: usize,
    pub k_w: usize,
    pub out_h: usize,
    pub out_w: usize,
    pub groups: usize,
    pub stride_h: usize,
    pub stride_w: usize,
    pub dil_h: usize,
    pub dil_w: usize,
    pub pad_top: usize,
    pub pad_left: usize,
}

impl Geometry {
    /// The geometry of a convolution with these dims (`None` if they are not 4-D or groups is 0).
    pub fn new(p: &QuantConv2dParams, x: &[usize], w: &[usize], y: &[usize]) -> Option<Geometry> {
        let (&[batch, in_h, in_w, in_c], &[out_c, k_h, k_w, _], &[_, out_h, out_w, _]) = (x, w, y)
        else {
            return None;
        };
        (p.groups > 0).then_some(Geometry {
            batch,
            in_h,
            in_w,
            in_c,
            out_c,
            k_h,
            k_w,
            out_h,
            out_w,
            groups: p.groups.into(),
            stride_h: p.stride_h.into(),
            stride_w: p.stride_w.into(),
            dil_h: p.dilation_h.into(),
            dil_w: p.dilation_w.into(),
            pad_top: p.pad_top.into(),
            pad_left: p.pad_left.into(),
        })
    }

    /// Input channels per group.
    pub fn group_in_c(&self) -> usize {
        self.in_c / self.groups
    }

    /// Output channels per group.
    pub fn group_out_c(&self) -> usize {
        self.out_c / self.groups
    }

    /// Kernel taps.
    pub fn taps(&self) -> usize {
        self.k_h * self.k_w
    }

    /// Output pixels.
    pub fn pixels(&self) -> usize {
        self.batch * self.out_h * self.out_w
    }

    /// `(n, oy, ox)` of output pixel `m`.
    pub fn pixel(&self, m: usize) -> (usize, usize, usize) {
        let (rest, ox) = (m / self.out_w.max(1), m % self.out_w.max(1));
        (rest / self.out_h.max(1), rest % self.out_h.max(1), ox)
    }

    /// The input row (`iy`) that kernel row `ky` of output row `oy` reads, if it is not padding.
    pub fn input_y(&self, oy: usize, ky: usize) -> Option<usize> {
        (oy * self.stride_h + ky * self.dil_h)
            .checked_sub(self.pad_top)
            .filter(|&iy| iy < self.in_h)
    }

    /// The input column (`ix`) that kernel column `kx` of output column `ox` reads, if not padding.
    pub fn input_x(&self, ox: usize, kx: usize) -> Option<usize> {
        (ox * self.stride_w + kx * self.dil_w)
            .checked_sub(self.pad_left)
            .filter(|&ix| ix < self.in_w)
    }
}
