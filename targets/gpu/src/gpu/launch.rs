//! Turning a lowered op into CubeCL launches: binding the tensors' buffers and picking the grid.

use cubecl::prelude::*;
use cubecl::server::CubeCountSelection;

use super::lower::{Launch, Work};
use super::{Buffer, GpuSession, Step};
use crate::kernels::{array, math, nn, pool, quant};
use crate::Error;

/// Units per cube (workgroup size).
const CUBE: u32 = 256;

impl GpuSession {
    fn buffer(&self, step: &Step, id: usize) -> Result<&Buffer, Error> {
        self.tensors[id]
            .as_ref()
            .ok_or_else(|| Error::UnsupportedOp {
                index: step.index,
                op: step.name,
                device: self.device.clone(),
                reason: format!("input tensor {id} is produced by no earlier op"),
            })
    }

    /// Enough cubes of [`CUBE`] units for `units` (the kernels skip the units past the end).
    fn grid(&self, units: usize) -> (CubeCount, CubeDim) {
        let cubes = u32::try_from(units.div_ceil(CUBE as usize)).unwrap_or(u32::MAX);
        let count = CubeCountSelection::new(&self.client, cubes.max(1)).cube_count();
        (count, CubeDim::new_1d(CUBE))
    }

    /// Launches the kernels of one op (nothing for an empty output or an alias).
    pub(super) fn launch_step(&self, step: &Step) -> Result<(), Error> {
        let Work::Launches(launches) = &step.work else {
            return Ok(());
        };
        if step.out_len == 0 {
            return Ok(());
        }
        let y = self.buffer(step, step.output)?;
        let t = |k: usize| &step.tables[k];
        let opt = |id: Option<usize>| -> Result<&Buffer, Error> {
            match id {
                Some(id) => self.buffer(step, id),
                None => Ok(&self.dummy),
            }
        };
        let c = &self.client;
        for launch in launches {
            match *launch {
                Launch::Unary { x, op, a, b } => {
                    let (count, dim) = self.grid(step.out_len);
                    math::unary::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(y),
                        op,
                        a,
                        b,
                    );
                }
                Launch::Binary {
                    a,
                    b,
                    meta,
                    op,
                    act,
                } => {
                    let (count, dim) = self.grid(step.out_len);
                    math::binary::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, a)?),
                        arg(self.buffer(step, b)?),
                        arg(y),
                        arg(t(meta)),
                        op,
                        act.code,
                        act.lo,
                        act.hi,
                    );
                }
                Launch::Conv2d { x, w, b, meta, act } => {
                    let (count, dim) = self.grid(step.out_len);
                    nn::conv2d::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(self.buffer(step, w)?),
                        arg(opt(b)?),
                        arg(y),
                        arg(t(meta)),
                        act.code,
                        act.lo,
                        act.hi,
                    );
                }
                Launch::FullyConnected { x, w, b, meta, act } => {
                    let (count, dim) = self.grid(step.out_len);
                    nn::fully_connected::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(self.buffer(step, w)?),
                        arg(opt(b)?),
                        arg(y),
                        arg(t(meta)),
                        act.code,
                        act.lo,
                        act.hi,
                    );
                }
                Launch::MatMul { a, b, meta } => {
                    let (count, dim) = self.grid(step.out_len);
                    nn::matmul::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, a)?),
                        arg(self.buffer(step, b)?),
                        arg(y),
                        arg(t(meta)),
                    );
                }
                Launch::Softmax {
                    x,
                    meta,
                    log,
                    lanes,
                } => {
                    let (count, dim) = self.grid(lanes);
                    nn::softmax::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(y),
                        arg(t(meta)),
                        u32::from(log),
                    );
                }
                Launch::LayerNorm {
                    x,
                    scale,
                    bias,
                    meta,
                    epsilon,
                    rows,
                } => {
                    let (count, dim) = self.grid(rows);
                    nn::layer_norm::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(self.buffer(step, scale)?),
                        arg(opt(bias)?),
                        arg(y),
                        arg(t(meta)),
                        epsilon,
                    );
                }
                Launch::Reduce { x, meta, op } => {
                    let (count, dim) = self.grid(step.out_len);
                    nn::reduce::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(y),
                        arg(t(meta)),
                        op,
                    );
                }
                Launch::Pool { x, meta, avg } => {
                    let (count, dim) = self.grid(step.out_len);
                    pool::pool2d::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(y),
                        arg(t(meta)),
                        u32::from(avg),
                    );
                }
                Launch::GlobalAvgPool { x, meta } => {
                    let (count, dim) = self.grid(step.out_len);
                    pool::global_avg_pool::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(y),
                        arg(t(meta)),
                    );
                }
                Launch::GatherMap {
                    x,
                    map,
                    lo,
                    hi,
                    fill,
                    into,
                } => {
                    let target = match into {
                        Some(id) => self.buffer(step, id)?,
                        None => y,
                    };
                    let (count, dim) = self.grid(target.len);
                    array::gather_map::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(t(map)),
                        arg(target),
                        lo,
                        hi,
                        u32::from(fill.is_some()),
                        fill.unwrap_or(0.0),
                    );
                }
                Launch::QuantConv2d {
                    x,
                    w,
                    b,
                    rows,
                    meta,
                    params,
                } => {
                    let (count, dim) = self.grid(step.out_len);
                    quant::quant_conv2d::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(self.buffer(step, w)?),
                        arg(opt(b)?),
                        arg(self.buffer(step, rows)?),
                        arg(y),
                        arg(t(meta)),
                        arg(t(params)),
                    );
                }
                Launch::QuantFullyConnected {
                    x,
                    w,
                    b,
                    rows,
                    meta,
                    params,
                } => {
                    let (count, dim) = self.grid(step.out_len);
                    quant::quant_fully_connected::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(self.buffer(step, w)?),
                        arg(opt(b)?),
                        arg(self.buffer(step, rows)?),
                        arg(y),
                        arg(t(meta)),
                        arg(t(params)),
                    );
                }
                Launch::QuantBinary {
                    a,
                    b,
                    meta,
                    params,
                    op,
                } => {
                    let (count, dim) = self.grid(step.out_len);
                    quant::quant_binary::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, a)?),
                        arg(self.buffer(step, b)?),
                        arg(y),
                        arg(t(meta)),
                        arg(t(params)),
                        op,
                    );
                }
                Launch::QuantPool {
                    x,
                    meta,
                    params,
                    avg,
                } => {
                    let (count, dim) = self.grid(step.out_len);
                    quant::quant_pool2d::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(y),
                        arg(t(meta)),
                        arg(t(params)),
                        u32::from(avg),
                    );
                }
                Launch::Quantize {
                    x,
                    scale,
                    zero_point,
                    even,
                } => {
                    let (count, dim) = self.grid(step.out_len);
                    quant::quantize::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(y),
                        scale,
                        zero_point,
                        u32::from(even),
                    );
                }
                Launch::Dequantize {
                    x,
                    scale,
                    zero_point,
                } => {
                    let (count, dim) = self.grid(step.out_len);
                    quant::dequantize::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(y),
                        scale,
                        zero_point,
                    );
                }
                Launch::Requantize { x, params } => {
                    let (count, dim) = self.grid(step.out_len);
                    quant::requantize::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(y),
                        arg(t(params)),
                    );
                }
                Launch::QuantSoftmax {
                    x,
                    exps,
                    meta,
                    lanes,
                } => {
                    let (count, dim) = self.grid(lanes);
                    quant::quant_softmax::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(y),
                        arg(t(exps)),
                        arg(t(meta)),
                    );
                }
                Launch::ResizeLinear { x, rows, fracs } => {
                    let (count, dim) = self.grid(step.out_len);
                    array::resize_linear::launch(
                        c,
                        count,
                        dim,
                        arg(self.buffer(step, x)?),
                        arg(y),
                        arg(t(rows)),
                        arg(t(fracs)),
                    );
                }
            }
        }
        Ok(())
    }
}

/// A kernel argument over a whole buffer.
fn arg(buffer: &Buffer) -> BufferArg {
    // SAFETY: `len` is the element count the buffer was created with (4-byte elements), so the kernel
    // sees exactly the allocation; kernels are launched in checked mode on top.
    unsafe { BufferArg::from_raw_parts(buffer.handle.clone(), buffer.len) }
}
