//! Turning a lowered op into CubeCL launches: binding the tensors' buffers and picking the grid.

use cubecl::prelude::*;
use cubecl::server::CubeCountSelection;

use super::lower::{Launch as L, LayerKernel, Work};
use super::{Buffer, GpuSession, Step};
use crate::kernels::{array, math, nn, pool, quant, rnn};
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
    #[rustfmt::skip] // the table of launches below: one row per kernel
    pub(super) fn launch_step(&self, step: &Step) -> Result<(), Error> {
        let Work::Launches(launches) = &step.work else {
            return Ok(());
        };
        if step.out_len == 0 {
            return Ok(());
        }
        let c = &self.client;
        // Kernel arguments: an input tensor, an optional one (the dummy buffer where absent), the op's
        // table `k`, and the output `y` (or, for a gather into scratch, the tensor `into` names).
        let buf = |id: usize| self.buffer(step, id).map(arg);
        let opt = |id: Option<usize>| id.map_or(Ok(&self.dummy), |id| self.buffer(step, id)).map(arg);
        let t = |k: usize| arg(&step.tables[k]);
        let y = self.buffer(step, step.output)?;
        let target = |into: Option<usize>| into.map_or(Ok(y), |id| self.buffer(step, id));
        let n = step.out_len;
        // One launch of `kernel` over enough cubes for `units` units, the client and grid before the
        // kernel's own arguments.
        macro_rules! go {
            ($($kernel:ident)::+, $units:expr; $($arg:expr),+) => {{
                let (count, dim) = self.grid($units);
                $($kernel)::+::launch(c, count, dim, $($arg),+)
            }};
        }
        // One row per kernel: its launch's units (one per output value, but for the per-lane and per-row
        // kernels) and arguments.
        for launch in launches {
            match *launch {
                #[cfg(test)]
                L::Refused { what } => {
                    use crate::kernels::refused;
                    if what == refused::TOO_MUCH_SHARED_MEMORY {
                        go!(refused::too_much_shared, n; arg(y))
                    } else {
                        go!(refused::rejected, n; arg(y), "a kernel that must not compile".to_string())
                    }
                }
                L::Unary { x, op, a, b } => go!(math::unary, n; buf(x)?, arg(y), op, a, b),
                L::Binary { a, b, meta, op, act } => go!(math::binary, n; buf(a)?, buf(b)?, arg(y), t(meta), op, act.code, act.lo, act.hi),
                L::Layer { kernel, x, w, b, meta, act } => go!(nn::layer, n; buf(x)?, buf(w)?, opt(b)?, arg(y), t(meta), act.code, act.lo, act.hi, kernel == LayerKernel::Conv2d),
                L::MatMul { a, b, meta } => go!(nn::matmul, n; buf(a)?, buf(b)?, arg(y), t(meta)),
                L::Softmax { x, meta, log, lanes } => go!(nn::softmax, lanes; buf(x)?, arg(y), t(meta), u32::from(log)),
                L::LayerNorm { x, scale, bias, meta, epsilon, rows } => go!(nn::layer_norm, rows; buf(x)?, buf(scale)?, opt(bias)?, arg(y), t(meta), epsilon),
                L::Reduce { x, meta, op } => go!(nn::reduce, n; buf(x)?, arg(y), t(meta), op),
                L::Pool { x, meta, avg } => go!(pool::pool2d, n; buf(x)?, arg(y), t(meta), u32::from(avg)),
                L::GlobalAvgPool { x, meta } => go!(pool::global_avg_pool, n; buf(x)?, arg(y), t(meta)),
                L::GatherMap { x, map, lo, hi, fill, into } => {
                    let to = target(into)?;
                    go!(array::gather_map, to.len; buf(x)?, t(map), arg(to), lo, hi, u32::from(fill.is_some()), fill.unwrap_or(0.0))
                }
                L::ResizeLinear { x, rows, fracs } => go!(array::resize_linear, n; buf(x)?, arg(y), t(rows), t(fracs)),
                L::ResizeFilter { x, rows, weights } => go!(array::resize_filter, n; buf(x)?, arg(y), t(rows), t(weights)),
                L::QuantLayer { kernel, x, w, b, rows, meta, params } => go!(quant::quant_layer, n; buf(x)?, buf(w)?, opt(b)?, buf(rows)?, arg(y), t(meta), t(params), kernel == LayerKernel::Conv2d),
                L::QuantBinary { a, b, meta, params, op } => go!(quant::quant_binary, n; buf(a)?, buf(b)?, arg(y), t(meta), t(params), op),
                L::QuantPool { x, meta, params, avg } => go!(quant::quant_pool2d, n; buf(x)?, arg(y), t(meta), t(params), u32::from(avg)),
                L::Quantize { x, scale, zero_point, even } => go!(quant::quantize, n; buf(x)?, arg(y), scale, zero_point, u32::from(even)),
                L::Dequantize { x, scale, zero_point } => go!(quant::dequantize, n; buf(x)?, arg(y), scale, zero_point),
                L::Requantize { x, params } => go!(quant::requantize, n; buf(x)?, arg(y), t(params)),
                L::Rnn { x, w, r, b, h0, c0, p, meta, clip, phase, step, units } => go!(rnn::rnn, units; buf(x)?, buf(w)?, buf(r)?, opt(b)?, opt(h0)?, opt(c0)?, opt(p)?, arg(y), t(meta), clip, phase, step),
                L::QuantSoftmax { x, exps, meta, lanes } => go!(quant::quant_softmax, lanes; buf(x)?, arg(y), t(exps), t(meta)),
                L::QuantLut { x, table } => go!(quant::quant_lut, n; buf(x)?, buf(table)?, arg(y)),
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
