//! Random small graphs of supported ops with random (sometimes invalid) attributes: conversion never
//! panics, and every blob it writes passes `Model::parse` (which re-checks every shape and the memory
//! plan) and runs.

use crate::common;

use common::*;
use ember_convert::onnx::proto::{NodeProto, TensorProto};
use ember_convert::{convert, ConvertOptions};
use proptest::prelude::*;

/// One step: which op, and a few numbers to derive its attributes from.
type Step = (u8, [u8; 4]);

struct Builder {
    nodes: Vec<NodeProto>,
    inits: Vec<TensorProto>,
    /// Values produced so far with their shapes (the generator's guess; the converter decides).
    values: Vec<(String, Vec<i64>)>,
}

impl Builder {
    fn fresh(&self) -> String {
        format!("v{}", self.values.len())
    }

    fn constant(&mut self, dims: &[i64], seed: u64) -> String {
        let name = format!("k{}", self.inits.len());
        let n = dims.iter().product::<i64>().max(0) as usize;
        self.inits
            .push(floats(&name, dims, &pseudo_random(n, seed)));
        name
    }

    fn step(&mut self, (op, p): Step) {
        let (cur, shape) = self.values.last().cloned().expect("starts with the input");
        let rank = shape.len();
        let out = self.fresh();
        let pick = |i: usize, n: u8| i64::from(p[i] % n);
        let node = match op % 16 {
            0 if rank == 4 => {
                let c = shape[1];
                let (k, s, pad) = (1 + pick(0, 3), 1 + pick(1, 2), pick(2, 2));
                let depthwise = p[3] % 3 == 0;
                let (oc, ic) = if depthwise {
                    (c, 1)
                } else {
                    (1 + pick(3, 5), c)
                };
                let w = self.constant(&[oc, ic, k, k], u64::from(p[0]));
                let b = self.constant(&[oc], 7);
                let mut attrs = vec![
                    attr_ints("strides", &[s, s]),
                    attr_ints("dilations", &[1 + pick(3, 2); 2]),
                ];
                match p[1] % 4 {
                    0 => attrs.push(attr_s("auto_pad", "SAME_UPPER")),
                    1 => attrs.push(attr_s("auto_pad", "SAME_LOWER")),
                    _ => attrs.push(attr_ints("pads", &[pad, 0, pad, 1])),
                }
                if depthwise {
                    attrs.push(attr_i("group", c));
                }
                node("Conv", &out, &[&cur, &w, &b], &[&out], attrs)
            }
            1 if rank == 4 => {
                let op = if p[0] % 2 == 0 {
                    "MaxPool"
                } else {
                    "AveragePool"
                };
                let k = 1 + pick(1, 3);
                let attrs = vec![
                    attr_ints("kernel_shape", &[k, k]),
                    attr_ints("strides", &[1 + pick(2, 2); 2]),
                    attr_ints("pads", &[pick(3, 2), 0, 0, pick(3, 2)]),
                    attr_i("count_include_pad", pick(0, 2)),
                    attr_i("ceil_mode", i64::from(p[2] % 5 == 0)),
                ];
                node(op, &out, &[&cur], &[&out], attrs)
            }
            2 if rank == 4 => node("GlobalAveragePool", &out, &[&cur], &[&out], vec![]),
            3 => node(
                ["Relu", "Sigmoid", "Tanh"][usize::from(p[0] % 3)],
                &out,
                &[&cur],
                &[&out],
                vec![],
            ),
            4 => {
                let lo = self.constant(&[], 1);
                let hi = self.constant(&[], 2);
                node("Clip", &out, &[&cur, &lo, &hi], &[&out], vec![])
            }
            5 | 6 => {
                let op = ["Add", "Sub", "Mul", "Div"][usize::from(p[0] % 4)];
                // A constant broadcast along some dims, or an earlier value.
                let other = if p[1] % 3 == 0 && self.values.len() > 1 {
                    self.values[usize::from(p[2]) % self.values.len()].0.clone()
                } else {
                    let dims: Vec<i64> = shape
                        .iter()
                        .enumerate()
                        .skip(usize::from(p[3]) % (rank + 1))
                        .map(|(i, &d)| if (p[2] >> (i % 8)) & 1 == 1 { 1 } else { d })
                        .collect();
                    self.constant(&dims, u64::from(p[1]))
                };
                if p[0] % 8 < 4 {
                    node(op, &out, &[&cur, &other], &[&out], vec![])
                } else {
                    node(op, &out, &[&other, &cur], &[&out], vec![])
                }
            }
            7 => node(
                "Flatten",
                &out,
                &[&cur],
                &[&out],
                vec![attr_i("axis", pick(0, 3) - 1)],
            ),
            8 if rank > 1 => {
                let mut perm: Vec<i64> = (0..rank as i64).collect();
                perm.rotate_left(usize::from(p[0]) % rank);
                perm.swap(0, usize::from(p[1]) % rank);
                node(
                    "Transpose",
                    &out,
                    &[&cur],
                    &[&out],
                    vec![attr_ints("perm", &perm)],
                )
            }
            9 => {
                let axis = i64::from(p[0] % 8) - rank as i64;
                node(
                    "Softmax",
                    &out,
                    &[&cur],
                    &[&out],
                    vec![attr_i("axis", axis)],
                )
            }
            10 => {
                let s = format!("s{}", self.inits.len());
                let target: &[i64] = if p[0] % 2 == 0 { &[-1] } else { &[0, -1] };
                self.inits.push(ints(&s, target));
                node("Reshape", &out, &[&cur, &s], &[&out], vec![])
            }
            11 => {
                let pads: Vec<i64> = (0..2 * rank)
                    .map(|i| i64::from((p[i % 4] >> (i / 4)) % 2))
                    .collect();
                let pv = format!("p{}", self.inits.len());
                self.inits.push(ints(&pv, &pads));
                node("Pad", &out, &[&cur, &pv], &[&out], vec![])
            }
            12 if rank >= 1 => {
                let axis = i64::from(p[0]) % rank as i64;
                node(
                    "Concat",
                    &out,
                    &[&cur, &cur],
                    &[&out],
                    vec![attr_i("axis", axis)],
                )
            }
            13 if rank == 2 => {
                let n = 1 + pick(0, 6);
                let trans_b = p[1] % 2 == 1;
                let w = if trans_b {
                    self.constant(&[n, shape[1]], 3)
                } else {
                    self.constant(&[shape[1], n], 3)
                };
                let c = self.constant(&[n], 4);
                node(
                    "Gemm",
                    &out,
                    &[&cur, &w, &c],
                    &[&out],
                    vec![attr_i("transB", i64::from(trans_b))],
                )
            }
            14 if rank >= 1 => {
                let w = self.constant(&[*shape.last().unwrap_or(&1), 1 + pick(0, 4)], 5);
                node("MatMul", &out, &[&cur, &w], &[&out], vec![])
            }
            15 => node(
                ["Identity", "Dropout"][usize::from(p[0] % 2)],
                &out,
                &[&cur],
                &[&out],
                vec![],
            ),
            _ => return,
        };
        self.nodes.push(node);
        // Track the shape only roughly: the next op may not fit, and that is allowed to fail.
        let guess = match op % 16 {
            2 => vec![shape[0], shape[1], 1, 1],
            7 => vec![
                shape.iter().take(1).product(),
                shape.iter().skip(1).product(),
            ],
            10 => vec![shape.iter().product()],
            13 => vec![shape[0], 1 + pick(0, 6)],
            14 => {
                let mut s = shape.clone();
                if let Some(l) = s.last_mut() {
                    *l = 1 + pick(0, 4);
                }
                s
            }
            _ => shape,
        };
        self.values.push((out, guess));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn converted_blobs_parse_and_run(
        dims in proptest::collection::vec(1i64..6, 1..5),
        steps in proptest::collection::vec((any::<u8>(), any::<[u8; 4]>()), 1..8),
    ) {
        let mut b = Builder { nodes: vec![], inits: vec![], values: vec![("x".into(), dims.clone())] };
        for s in steps {
            b.step(s);
        }
        let last = b.values.last().map(|v| v.0.clone()).unwrap_or_default();
        let bytes = model(13, b.nodes, vec![fixed("x", &dims)], vec![unshaped(&last)], b.inits);
        let Ok(c) = convert(&bytes, &ConvertOptions::default()) else {
            return Ok(());
        };
        let blob = ember_core::AlignedBuf::from_bytes(&c.blob);
        let parsed = ember_core::Model::parse(blob.as_bytes());
        prop_assert!(parsed.is_ok(), "{:?} for ops {:?}", parsed.err(), c.report.ops);
        let model = parsed.unwrap();
        prop_assert!(c.report.arena.activation_bytes >= c.report.arena.lower_bound_bytes);
        let mut arena = ember_core::AlignedBuf::zeroed(model.arena_bytes());
        let mut s = ember_core::Session::new(&model, arena.as_mut_bytes()).unwrap();
        let n: i64 = dims.iter().product();
        s.input(0).unwrap().write_f32(&pseudo_random(n as usize, 11)).unwrap();
        let ran = s.run();
        prop_assert!(ran.is_ok(), "{:?} for ops {:?}", ran.err(), c.report.ops);
    }
}
