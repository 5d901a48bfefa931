//! The loop shared by the int8 pooling kernels, over the pooling window walk of
//! [`ops::pool`](crate::ops::pool).

use crate::ops::pool::for_each_window;
use crate::ops::{In, Out};
use crate::schema::Pool2dParams;

/// For each output pixel and channel: `init`, fold every valid input value of the window into it with
/// `combine` (padding cells are never visited), then write `finish(acc, valid_cells)`.
#[inline(always)]
pub(crate) fn pool2d(
    p: &Pool2dParams,
    x: In<'_, i8>,
    y: Out<'_, i8>,
    init: i32,
    combine: impl Fn(i32, i8) -> i32,
    finish: impl Fn(i32, usize) -> i8,
) {
    let (in_h, in_w, channels) = (x.dims[1], x.dims[2], x.dims[3]);
    for_each_window(p, x.dims, y, |out, n, (y0, y1), (x0, x1)| {
        let cells = (y1 - y0) * (x1 - x0);
        for (c, out) in out.iter_mut().enumerate() {
            let mut acc = init;
            for iy in y0..y1 {
                let row = ((n * in_h + iy) * in_w) * channels;
                for ix in x0..x1 {
                    acc = combine(acc, x.data[row + ix * channels + c]);
                }
            }
            *out = finish(acc, cells);
        }
    })
}
