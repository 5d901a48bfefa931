//! `ember-cortex-m`'s DSP int8 kernels against `ember-core`'s reference kernels, on the core itself
//! (QEMU mps2-an386, Cortex-M4F; the same ELF on mps2-an500, Cortex-M7). Run: `cargo run --release`.
//!
//! It first compares the `SXTB16`/`SXTAB16`/`SMLAD` instructions with their portable emulation (which
//! the host tests run) on pseudo-random words. Then it runs a few hundred pseudo-random int8
//! convolutions, depthwise convolutions and fully connected layers (shapes, strides, dilations, padding,
//! groups, zero points, biases, fused clamps, per-channel or per-tensor requantization rows, receptive
//! fields over the conv kernel's 1 KiB gather buffer; a fixed-seed xorshift generator, so every run
//! checks the same cases), and a few fixed layer shapes of small CNNs, through both tables. It compares
//! the output bytes and times each call with SysTick (repeatable under `-icount shift=6`: one
//! instruction every 64 ns, 1.6 ticks at 25 MHz). One fact per line, which `cargo xtask firmware` parses:
//!
//! ```text
//! dsp-check kernels=cortex-m-dsp dsp=true
//! primitives words=4096 mismatches=0
//! kernel conv cases=150 mismatches=0 ref_ticks=... dsp_ticks=...
//! kernel depthwise cases=75 mismatches=0 ref_ticks=... dsp_ticks=...
//! kernel fully_connected cases=75 mismatches=0 ref_ticks=... dsp_ticks=...
//! kernel layer_8x8x1_3x3x8 cases=4 mismatches=0 ref_ticks=... dsp_ticks=...   (one per layer of LAYERS)
//! summary cases=320 mismatches=0 invalid=0 ticks_per_second=25000000
//! ```
//!
//! plus a `mismatch ...` line for each of the first differing outputs. It exits through semihosting with
//! status 0, or 1 on any mismatch, an invalid generated case, a panic or a hard fault.
#![no_std]
#![no_main]

use core::fmt::Write;

use cortex_m_rt::entry;
use cortex_m_semihosting::debug;
use ember_core::ops::quant::conv::QuantConv2dFn;
use ember_core::ops::quant::conv::{validate as validate_conv, QuantConv2dParams};
use ember_core::ops::quant::fully_connected::QuantFullyConnectedFn;
use ember_core::ops::quant::fully_connected::{validate as validate_fc, QuantFullyConnectedParams};
use ember_core::ops::quant::requant::RequantRounding;
use ember_core::ops::{In, Out};
use ember_core::{Clock, REFERENCE};
use ember_cortex_m::{dsp, ACCELERATED, DSP_KERNELS, KERNELS};
use ember_firmware_demo::cortex_m_glue::{exit, start};

/// Cases per kind: convolutions (plain, grouped, dilated), depthwise, fully connected.
const CONV_CASES: u32 = 150;
const DEPTHWISE_CASES: u32 = 75;
const FC_CASES: u32 = 75;
/// Words for the instruction-against-emulation check.
const PRIMITIVE_WORDS: u32 = 4096;
/// Largest tensor of any case, in elements (the generators stay within it).
const MAX_ELEMS: usize = 4096;
/// Largest channel count.
const MAX_CHANNELS: usize = 64;
/// `mismatch` lines printed at most.
const MAX_REPORTED: u32 = 8;

/// Marsaglia's xorshift32: small, fast, and the same sequence on every run.
struct XorShift(u32);

impl XorShift {
    fn next(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }

    /// Uniform-ish in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next() as usize) % (hi - lo + 1)
    }

    /// True one time in `n`.
    fn one_in(&mut self, n: u32) -> bool {
        self.next().is_multiple_of(n)
    }

    fn byte(&mut self) -> i8 {
        (self.next() >> 24) as i8
    }

    fn fill(&mut self, out: &mut [i8]) {
        for v in out {
            *v = self.byte();
        }
    }
}

/// The shape of a convolution case: channels per group, kernel, stride, dilation, padding (top, left,
/// bottom, right) and input size, all (height, width).
#[derive(Clone, Copy)]
struct ConvShape {
    groups: usize,
    icg: usize,
    ocg: usize,
    k: (usize, usize),
    stride: (usize, usize),
    dilation: (usize, usize),
    pads: [usize; 4],
    hw: (usize, usize),
}

impl ConvShape {
    /// A stride-1, "same"-padded layer of a small CNN on an `h x h x in_c` input.
    const fn layer(groups: usize, icg: usize, ocg: usize, k: usize, h: usize) -> Self {
        let pad = k / 2;
        ConvShape {
            groups,
            icg,
            ocg,
            k: (k, k),
            stride: (1, 1),
            dilation: (1, 1),
            pads: [pad; 4],
            hw: (h, h),
        }
    }
}

/// Layers of the shapes small CNNs have (the digits CNN's two convolutions, a wider 3x3, a pointwise and
/// a depthwise one), each run [`LAYER_RUNS`] times with fresh data, so that the figures say what a model
/// gains.
const LAYERS: &[(&str, ConvShape)] = &[
    ("layer_8x8x1_3x3x8", ConvShape::layer(1, 1, 8, 3, 8)),
    ("layer_4x4x8_3x3x16", ConvShape::layer(1, 8, 16, 3, 4)),
    ("layer_10x10x16_3x3x24", ConvShape::layer(1, 16, 24, 3, 10)),
    ("layer_8x8x32_1x1x64", ConvShape::layer(1, 32, 64, 1, 8)),
    ("layer_8x8x32_dw3x3", ConvShape::layer(32, 1, 1, 3, 8)),
];
const LAYER_RUNS: u32 = 4;

/// Tensors and parameters shared by the cases (one set of buffers, reused).
struct Buffers {
    x: [i8; MAX_ELEMS],
    w: [i8; MAX_ELEMS],
    y_ref: [i8; MAX_ELEMS],
    y_dsp: [i8; MAX_ELEMS],
    bias: [i32; MAX_CHANNELS],
    requant: [i32; 2 * MAX_CHANNELS],
}

/// Totals for one kind of case.
#[derive(Default)]
struct Tally {
    cases: u32,
    mismatches: u32,
    ref_ticks: u64,
    dsp_ticks: u64,
}

/// The checks' state: the generator, the clock, the output, what was found.
struct Check<'a> {
    rng: XorShift,
    clock: &'a dyn Clock,
    out: &'a mut dyn Write,
    reported: u32,
    invalid: u32,
}

impl Check<'_> {
    /// Bias (or none), zero points, clamp bounds and requantization rows for `channels` outputs.
    fn output_stage(&mut self, buf: &mut Buffers, channels: usize) -> (bool, usize, [i8; 4]) {
        let with_bias = !self.rng.one_in(4);
        for b in &mut buf.bias[..channels] {
            *b = self.rng.range(0, 20_000) as i32 - 10_000;
        }
        let rows = if self.rng.one_in(4) { 1 } else { channels };
        for row in buf.requant[..2 * rows].chunks_exact_mut(2) {
            row[0] = (1 << 30) | (self.rng.next() & 0x3fff_ffff) as i32;
            row[1] = -(self.rng.range(2, 14) as i32);
        }
        let (a, b) = (self.rng.byte(), self.rng.byte());
        let (act_min, act_max) = if self.rng.one_in(4) {
            (a.min(b), a.max(b))
        } else {
            (i8::MIN, i8::MAX)
        };
        let zps = [self.rng.byte(), self.rng.byte(), act_min, act_max];
        (with_bias, rows, zps)
    }

    /// Compares the two outputs, reporting the first differences; true when equal.
    fn compare(&mut self, kind: &str, case: u32, y_ref: &[i8], y_dsp: &[i8]) -> bool {
        let mut equal = true;
        for (i, (&r, &d)) in y_ref.iter().zip(y_dsp).enumerate() {
            if r != d {
                equal = false;
                if self.reported < MAX_REPORTED {
                    self.reported += 1;
                    let _ = writeln!(
                        self.out,
                        "mismatch {kind} case={case} index={i} ref={r} dsp={d}"
                    );
                }
            }
        }
        equal
    }

    /// A random convolution shape; `depthwise` picks a depthwise one (groups = input channels,
    /// multiplier 1 or 2), otherwise a plain, grouped (at least four channels per group), dilated or
    /// wide one.
    fn random_conv_shape(&mut self, depthwise: bool) -> ConvShape {
        let rng = &mut self.rng;
        let (groups, icg, ocg) = if depthwise {
            (rng.range(1, 16), 1, rng.range(1, 2))
        } else if rng.one_in(8) {
            // Receptive fields around and over the kernel's 1 KiB gather buffer (3x3 x 114 = 1026).
            (1, rng.range(100, 130), rng.range(1, 3))
        } else if rng.one_in(4) {
            (2, rng.range(4, 8), rng.range(1, 8))
        } else {
            (1, rng.range(1, 16), rng.range(1, 16))
        };
        let (kh, kw) = (rng.range(1, 3), rng.range(1, 3));
        let (sh, sw) = (rng.range(1, 2), rng.range(1, 2));
        let dil = |rng: &mut XorShift| if rng.one_in(4) { 2 } else { 1 };
        let (dh, dw) = (dil(rng), dil(rng));
        let pads = [
            rng.range(0, 2),
            rng.range(0, 2),
            rng.range(0, 2),
            rng.range(0, 2),
        ];
        let extra = if icg >= 100 { 2 } else { 6 };
        let h = dh * (kh - 1) + 1 + rng.range(0, extra);
        let w = dw * (kw - 1) + 1 + rng.range(0, extra);
        ConvShape {
            groups,
            icg,
            ocg,
            k: (kh, kw),
            stride: (sh, sw),
            dilation: (dh, dw),
            pads,
            hw: (h, w),
        }
    }

    /// One convolution of `shape` with random data and output stage, through both tables.
    fn conv_case(
        &mut self,
        buf: &mut Buffers,
        case: u32,
        kind: &str,
        shape: &ConvShape,
        tally: &mut Tally,
    ) {
        let ConvShape {
            groups,
            icg,
            ocg,
            k: (kh, kw),
            stride: (sh, sw),
            dilation: (dh, dw),
            pads,
            hw: (h, w),
        } = *shape;
        let out_len = |len: usize, k: usize, s: usize, d: usize, p: usize| {
            (len + p - (d * (k - 1) + 1)) / s + 1
        };
        let oh = out_len(h, kh, sh, dh, pads[0] + pads[2]);
        let ow = out_len(w, kw, sw, dw, pads[1] + pads[3]);
        let (in_c, out_c) = (groups * icg, groups * ocg);
        let x_dims = [1, h, w, in_c];
        let w_dims = [out_c, kh, kw, icg];
        let y_dims = [1, oh, ow, out_c];
        let (nx, nw, ny) = (h * w * in_c, out_c * kh * kw * icg, oh * ow * out_c);
        let (with_bias, rows, zps) = self.output_stage(buf, out_c);
        let p = QuantConv2dParams {
            stride_h: sh as u16,
            stride_w: sw as u16,
            dilation_h: dh as u16,
            dilation_w: dw as u16,
            pad_top: pads[0] as u16,
            pad_left: pads[1] as u16,
            pad_bottom: pads[2] as u16,
            pad_right: pads[3] as u16,
            groups: groups as u16,
            x_zero_point: zps[0],
            y_zero_point: zps[1],
            act_min: zps[2],
            act_max: zps[3],
            rounding: rounding_of(case),
        };
        let b_dims = [out_c];
        let valid = nx.max(nw).max(ny) <= MAX_ELEMS
            && validate_conv(
                &p,
                &x_dims,
                &w_dims,
                with_bias.then_some(&b_dims[..]),
                &[rows, 2],
                &y_dims,
            )
            .is_ok();
        if !valid {
            self.invalid += 1;
            return;
        }
        self.rng.fill(&mut buf.x[..nx]);
        self.rng.fill(&mut buf.w[..nw]);
        let run = |f: QuantConv2dFn, y: &mut [i8], clock: &dyn Clock| {
            let start = clock.now();
            f(
                &p,
                In {
                    data: &buf.x[..nx],
                    dims: &x_dims,
                },
                In {
                    data: &buf.w[..nw],
                    dims: &w_dims,
                },
                with_bias.then_some(&buf.bias[..out_c]),
                &buf.requant[..2 * rows],
                Out {
                    data: y,
                    dims: &y_dims,
                },
                None,
            );
            clock.now() - start
        };
        tally.ref_ticks += run(REFERENCE.quant_conv2d, &mut buf.y_ref[..ny], self.clock);
        tally.dsp_ticks += run(KERNELS.quant_conv2d, &mut buf.y_dsp[..ny], self.clock);
        tally.cases += 1;
        if !self.compare(kind, case, &buf.y_ref[..ny], &buf.y_dsp[..ny]) {
            tally.mismatches += 1;
        }
    }

    /// One fully connected layer: 1 or 2 rows, 1 to 128 inputs, 1 to 32 outputs.
    fn fc_case(&mut self, buf: &mut Buffers, case: u32, tally: &mut Tally) {
        let rows_x = self.rng.range(1, 2);
        let inputs = self.rng.range(1, 128);
        let outputs = self.rng.range(1, 32);
        let (with_bias, rows, zps) = self.output_stage(buf, outputs);
        let p = QuantFullyConnectedParams {
            x_zero_point: zps[0],
            y_zero_point: zps[1],
            act_min: zps[2],
            act_max: zps[3],
            rounding: rounding_of(case),
        };
        let (x_dims, w_dims, y_dims) = ([rows_x, inputs], [outputs, inputs], [rows_x, outputs]);
        let (nx, nw, ny) = (rows_x * inputs, outputs * inputs, rows_x * outputs);
        let b_dims = [outputs];
        let valid = validate_fc(
            &p,
            &x_dims,
            &w_dims,
            with_bias.then_some(&b_dims[..]),
            &[rows, 2],
            &y_dims,
        )
        .is_ok();
        if !valid {
            self.invalid += 1;
            return;
        }
        self.rng.fill(&mut buf.x[..nx]);
        self.rng.fill(&mut buf.w[..nw]);
        let run = |f: QuantFullyConnectedFn, y: &mut [i8], clock: &dyn Clock| {
            let start = clock.now();
            f(
                &p,
                In {
                    data: &buf.x[..nx],
                    dims: &x_dims,
                },
                In {
                    data: &buf.w[..nw],
                    dims: &w_dims,
                },
                with_bias.then_some(&buf.bias[..outputs]),
                &buf.requant[..2 * rows],
                Out {
                    data: y,
                    dims: &y_dims,
                },
                None,
            );
            clock.now() - start
        };
        tally.ref_ticks += run(
            REFERENCE.quant_fully_connected,
            &mut buf.y_ref[..ny],
            self.clock,
        );
        tally.dsp_ticks += run(
            KERNELS.quant_fully_connected,
            &mut buf.y_dsp[..ny],
            self.clock,
        );
        tally.cases += 1;
        if !self.compare("fully_connected", case, &buf.y_ref[..ny], &buf.y_dsp[..ny]) {
            tally.mismatches += 1;
        }
    }

    /// The instructions (through `asm!` on this core) against their emulation; returns the mismatches.
    fn primitives(&mut self) -> u32 {
        let mut mismatches = 0;
        for _ in 0..PRIMITIVE_WORDS {
            let (n, m) = (self.rng.next(), self.rng.next());
            let a = self.rng.next() as i32;
            let same = dsp::sxtb16(m) == dsp::portable::sxtb16(m)
                && dsp::sxtb16_ror8(m) == dsp::portable::sxtb16_ror8(m)
                && dsp::sxtab16(n, m) == dsp::portable::sxtab16(n, m)
                && dsp::sxtab16_ror8(n, m) == dsp::portable::sxtab16_ror8(n, m)
                && dsp::smlad(n, m, a) == dsp::portable::smlad(n, m, a);
            if !same {
                mismatches += 1;
                if self.reported < MAX_REPORTED {
                    self.reported += 1;
                    let _ = writeln!(
                        self.out,
                        "mismatch primitives n={n:#010x} m={m:#010x} a={a}"
                    );
                }
            }
        }
        mismatches
    }
}

#[entry]
fn main() -> ! {
    let (clock, mut out) = start(25_000_000);
    let _ = writeln!(
        out,
        "dsp-check kernels={} dsp={}",
        KERNELS.name, DSP_KERNELS
    );
    let _ = write!(out, "accelerated");
    for name in ACCELERATED {
        let _ = write!(out, " {name}");
    }
    let _ = writeln!(out);

    let mut buf = Buffers {
        x: [0; MAX_ELEMS],
        w: [0; MAX_ELEMS],
        y_ref: [0; MAX_ELEMS],
        y_dsp: [0; MAX_ELEMS],
        bias: [0; MAX_CHANNELS],
        requant: [0; 2 * MAX_CHANNELS],
    };
    let mut check = Check {
        rng: XorShift(0x2545_f491),
        clock: &clock,
        out: &mut out,
        reported: 0,
        invalid: 0,
    };
    let primitive_mismatches = check.primitives();
    let _ = writeln!(
        check.out,
        "primitives words={PRIMITIVE_WORDS} mismatches={primitive_mismatches}"
    );

    let (mut conv, mut depthwise, mut fc) = (Tally::default(), Tally::default(), Tally::default());
    for case in 0..CONV_CASES {
        let shape = check.random_conv_shape(false);
        check.conv_case(&mut buf, case, "conv", &shape, &mut conv);
    }
    for case in 0..DEPTHWISE_CASES {
        let shape = check.random_conv_shape(true);
        check.conv_case(&mut buf, case, "depthwise", &shape, &mut depthwise);
    }
    for case in 0..FC_CASES {
        check.fc_case(&mut buf, case, &mut fc);
    }
    let mut cases = 0;
    let mut mismatches = primitive_mismatches;
    for (name, t) in [
        ("conv", &conv),
        ("depthwise", &depthwise),
        ("fully_connected", &fc),
    ] {
        let _ = writeln!(
            check.out,
            "kernel {name} cases={} mismatches={} ref_ticks={} dsp_ticks={}",
            t.cases, t.mismatches, t.ref_ticks, t.dsp_ticks
        );
        cases += t.cases;
        mismatches += t.mismatches;
    }
    for (name, shape) in LAYERS {
        let mut t = Tally::default();
        for case in 0..LAYER_RUNS {
            check.conv_case(&mut buf, case, name, shape, &mut t);
        }
        let _ = writeln!(
            check.out,
            "kernel {name} cases={} mismatches={} ref_ticks={} dsp_ticks={}",
            t.cases, t.mismatches, t.ref_ticks, t.dsp_ticks
        );
        cases += t.cases;
        mismatches += t.mismatches;
    }
    let invalid = check.invalid;
    let _ = writeln!(
        check.out,
        "summary cases={cases} mismatches={mismatches} invalid={invalid} ticks_per_second={}",
        clock.ticks_per_second()
    );
    if mismatches == 0 && invalid == 0 {
        exit(debug::EXIT_SUCCESS)
    } else {
        exit(debug::EXIT_FAILURE)
    }
}

ember_firmware_demo::exit_on_fault!();

/// Odd cases round once, even cases twice, so that both requantization modes are checked.
fn rounding_of(case: u32) -> RequantRounding {
    if case.is_multiple_of(2) {
        RequantRounding::Double
    } else {
        RequantRounding::Single
    }
}
