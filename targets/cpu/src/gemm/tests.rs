//! The GEMM against a plain f64 definition, on every level this CPU runs: shapes from 1 to a few hundred
//! (primes, multiples of the tile sizes and one off them, past the `k` and row blocks), both layouts of
//! `B`, bias, residual and every activation, on 1, 2 and 3 workers, which must agree bit for bit.

use std::sync::LazyLock;
use std::vec;
use std::vec::Vec;

use ember_core::ops::math::activation::Activation;
use ember_core::Parallel;
use proptest::prelude::*;

use super::{AMat, BMat, Epilogue, Gemm};
use crate::level::Level;
use crate::pool::ThreadPool;

/// The levels of this architecture that this CPU runs.
pub(crate) fn levels() -> Vec<&'static Level> {
    let all: Vec<&'static Level> = vec![
        &crate::levels::SCALAR,
        #[cfg(target_arch = "x86_64")]
        &crate::levels::SSE2,
        #[cfg(target_arch = "x86_64")]
        &crate::levels::AVX2,
        #[cfg(target_arch = "x86_64")]
        &crate::levels::AVX512,
        #[cfg(target_arch = "x86_64")]
        &crate::levels::AVX512_HALF,
        #[cfg(target_arch = "aarch64")]
        &crate::levels::NEON,
    ];
    all.into_iter().filter(|l| l.runs_here()).collect()
}

/// Pools of 2 and 3 workers, shared by the tests.
pub(crate) static POOLS: LazyLock<[ThreadPool; 2]> =
    LazyLock::new(|| [ThreadPool::new(2).unwrap(), ThreadPool::new(3).unwrap()]);

/// No pool, then the pools of 2 and 3 workers.
pub(crate) fn parallels() -> [Option<&'static dyn Parallel>; 3] {
    let [two, three] = &*POOLS;
    [None, Some(two), Some(three)]
}

/// A size: small ones, primes, tile multiples and their neighbours, block edges.
fn size(max: usize) -> impl Strategy<Value = usize> {
    let picks = [
        1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 15, 16, 17, 23, 24, 25, 31, 32, 33, 47, 48, 49, 95,
        96, 97, 127, 131, 191, 192, 193, 255, 256, 257, 263, 300, 511, 512, 513, 600,
    ];
    let picks: Vec<usize> = picks.into_iter().filter(|&s| s <= max).collect();
    prop_oneof![3 => proptest::sample::select(picks), 1 => 1..=max]
}

/// One GEMM problem.
#[derive(Debug, Clone)]
struct Case {
    m: usize,
    n: usize,
    k: usize,
    /// `B` as `[K, N]` rows (true) or as `[N, K]` columns.
    b_rows: bool,
    bias: bool,
    residual: bool,
    act: Activation,
    /// Extra row stride of `A`, `B` and `C` beyond the dense one.
    pad: usize,
}

fn activation() -> impl Strategy<Value = Activation> {
    prop_oneof![
        Just(Activation::None),
        Just(Activation::Relu),
        Just(Activation::Relu6),
        (-2.0f32..0.0, 0.0f32..2.0).prop_map(|(min, max)| Activation::Clip { min, max }),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        // k past the levels' k block (512) now and then, so that tiles accumulate through C.
        size(300),
        size(300),
        size(600),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        activation(),
        0usize..3,
    )
        .prop_filter("at most 2M multiply-adds (20k under Miri)", |c| {
            c.0 * c.1 * c.2 <= if cfg!(miri) { 20_000 } else { 2_000_000 }
        })
        .prop_map(|(m, n, k, b_rows, bias, residual, act, pad)| Case {
            m,
            n,
            k,
            b_rows,
            bias,
            residual,
            act,
            pad,
        })
}

/// Values in -1..1 from a seed (deterministic, cheap).
fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

fn check(c: &Case) -> Result<(), TestCaseError> {
    let (m, n, k) = (c.m, c.n, c.k);
    let (lda, ldb_rows, ldb_cols, ldc) = (k + c.pad, n + c.pad, k + c.pad, n + c.pad);
    let a = values(m * lda, 1);
    let b = values(if c.b_rows { k * ldb_rows } else { n * ldb_cols }, 2);
    let bias = values(n, 3);
    let res = values(m * ldc, 4);
    let b_at = |kk: usize, j: usize| {
        if c.b_rows {
            b[kk * ldb_rows + j]
        } else {
            b[j * ldb_cols + kk]
        }
    };
    // The definition, in f64, with the sum of the magnitudes of its terms.
    let mut want = vec![(0.0f64, 0.0f64); m * n];
    for i in 0..m {
        for j in 0..n {
            let (mut v, mut mag) = (0.0f64, 0.0f64);
            for kk in 0..k {
                let t = f64::from(a[i * lda + kk]) * f64::from(b_at(kk, j));
                v += t;
                mag += t.abs();
            }
            if c.bias {
                v += f64::from(bias[j]);
                mag += f64::from(bias[j]).abs();
            }
            if c.residual {
                v += f64::from(res[i * ldc + j]);
                mag += f64::from(res[i * ldc + j]).abs();
            }
            want[i * n + j] = (f64::from(c.act.apply(v as f32)), mag);
        }
    }
    let bm = if c.b_rows {
        BMat::Rows {
            data: &b,
            ld: ldb_rows,
        }
    } else {
        BMat::Cols {
            data: &b,
            ld: ldb_cols,
        }
    };
    let ep = Epilogue {
        bias: c.bias.then_some(&bias[..]),
        residual: c.residual.then_some(AMat {
            data: &res,
            ld: ldc,
        }),
        act: c.act,
    };
    for level in levels() {
        let g = Gemm::new(level, m, n, k);
        let mut first: Option<Vec<f32>> = None;
        // Under Miri one thread, and the shared pools are never started: interpreting idle workers
        // that spin would take most of the time, a pool kept for the whole test binary is a thread
        // still running when Miri's main thread ends (an error), and the pool's own tests cover its
        // sharing.
        let pars: Vec<Option<&dyn Parallel>> = if cfg!(miri) {
            vec![None]
        } else {
            parallels().to_vec()
        };
        for &par in &pars {
            let workers = par.map_or(1, |p| p.workers());
            let mut scratch = vec![0.0f32; g.scratch_len(&bm)];
            // Sentinels between the rows of C must survive.
            let mut out = vec![f32::NAN; m * ldc];
            let a = AMat { data: &a, ld: lda };
            prop_assert!(g.gemm(a, bm, &ep, &mut out, ldc, &mut scratch, par, workers));
            for i in 0..m {
                for j in 0..n {
                    let got = out[i * ldc + j];
                    let (v, mag) = want[i * n + j];
                    let tol = 1e-5 * mag.max(v.abs()).max(1.0);
                    prop_assert!(
                        (f64::from(got) - v).abs() <= tol,
                        "{:?} {:?}: C[{i}, {j}] = {got}, want {v} (tolerance {tol})",
                        level.isa,
                        g.tile()
                    );
                }
                prop_assert!(out[i * ldc + n..][..c.pad.min(ldc * (m - i) - n)]
                    .iter()
                    .all(|v| v.is_nan()));
            }
            match &first {
                None => first = Some(out),
                Some(f) => prop_assert!(
                    f.iter().zip(&out).all(|(x, y)| x.to_bits() == y.to_bits()),
                    "{:?}: {workers} workers differ from one",
                    level.isa
                ),
            }
        }
        // Too little scratch: refused, C untouched.
        if g.scratch_len(&bm) > 0 {
            let mut short = vec![0.0f32; g.scratch_len(&bm) - 1];
            let mut out = vec![f32::NAN; m * ldc];
            let a = AMat { data: &a, ld: lda };
            prop_assert!(!g.gemm(a, bm, &ep, &mut out, ldc, &mut short, None, 1));
            prop_assert!(out.iter().all(|v| v.is_nan()));
        }
    }
    Ok(())
}

proptest! {
    // Under Miri (about a thousand times slower) a few cases: it looks for undefined behaviour in
    // the pointer arithmetic, which small shapes reach as well as large ones.
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 3 } else { 48 }))]
    #[test]
    fn gemm_matches_definition(c in case()) {
        check(&c)?;
    }
}

#[test]
fn gemm_edges_match_definition() {
    // One row (GEMV for columns), one column, k = 0, k across the k block, rows across the row block,
    // few rows and long dot products (dots blocks for columns).
    // Under Miri the same edges with short dot products and few tiles (the k block edge keeps a few
    // cheap cases): 13 x 19 is two full row tiles and an edge row, a full panel and an edge panel at
    // every level, and 97 rows cross the row block (96) once.
    let miri_shapes = [
        (13, 19, 3),
        (5, 7, 20),
        (1, 1, 1),
        (1, 30, 17),
        (1, 7, 0),
        (30, 1, 3),
        (5, 9, 0),
        (2, 2, 513),
        (97, 3, 2),
    ];
    let shapes = [
        (31, 41, 263),
        (5, 7, 300),
        (1, 1, 1),
        (1, 300, 257),
        (1, 7, 0),
        (300, 1, 3),
        (5, 9, 0),
        (97, 33, 300),
        (193, 25, 17),
        (2, 2, 513),
        (7, 19, 1100),
        (61, 17, 600),
    ];
    let shapes: &[(usize, usize, usize)] = if cfg!(miri) { &miri_shapes } else { &shapes };
    for &(m, n, k) in shapes {
        for b_rows in [false, true] {
            let c = Case {
                m,
                n,
                k,
                b_rows,
                bias: true,
                residual: true,
                act: Activation::Relu6,
                pad: 1,
            };
            check(&c).unwrap();
        }
    }
}

#[test]
fn every_level_lists_its_tiles_as_the_driver_expects() {
    for level in levels() {
        assert!(!level.tiles.is_empty());
        for pair in level.tiles.windows(2) {
            assert!(pair[0].nr <= pair[1].nr, "{:?}: narrowest first", level.isa);
        }
        for t in level.tiles {
            assert!(t.mr >= 1 && t.nr.is_multiple_of(level.lanes) && t.speed > 0);
            assert!(
                t.mr * t.nr <= super::MAX_TILE,
                "{:?}: edge buffer too small",
                level.isa
            );
        }
        assert!(level.kc >= 1 && level.mc >= 1 && level.dots_rows >= 1 && level.dots_cols >= 1);
    }
}

#[test]
fn the_tile_follows_the_columns() {
    // AVX2: 6x16 for the bulk, the narrowest tile that covers the remainder last; 8 columns: 8x8.
    #[cfg(target_arch = "x86_64")]
    {
        let tile = |n| Gemm::new(&crate::levels::AVX2, 1000, n, 64).tile();
        assert_eq!(tile(24), (6, 16));
        assert_eq!(tile(32), (6, 16));
        assert_eq!(tile(8), (8, 8));
        let g = Gemm::new(&crate::levels::AVX2, 1000, 24, 64);
        assert_eq!((g.main.nr, g.last.nr, g.panels), (16, 8, 2));
    }
}

/// Times the GEMM of each shape with `B` by columns on the packed path and on dots blocks,
/// interleaved (so that a busy machine slows both alike), and prints the ratio:
/// `cargo test --release -p ember-cpu --lib dots_or_packed -- --ignored --nocapture`.
#[test]
#[ignore]
fn dots_or_packed() {
    use std::time::Instant;
    let shapes: Vec<(usize, usize, usize)> = match std::env::var("SHAPES") {
        Ok(s) => s
            .split(';')
            .map(|t| {
                let v: Vec<usize> = t.split(',').map(|x| x.parse().unwrap()).collect();
                (v[0], v[1], v[2])
            })
            .collect(),
        Err(_) => vec![
            (2, 384, 384),
            (8, 384, 384),
            (25, 384, 384),
            (40, 6625, 120),
            (64, 240, 240),
            (100, 192, 192),
            (40, 60, 2880),
            (240, 480, 480),
            (1600, 24, 864),
        ],
    };
    for level in levels() {
        for &(m, n, k) in &shapes {
            let a = values(m * k, 1);
            let w = values(n * k, 2);
            let b = BMat::Cols { data: &w, ld: k };
            let ep = Epilogue::act(Activation::Relu);
            let mut g = Gemm::new(level, m, n, k);
            let mut c = vec![0.0f32; m * n];
            // Packed panels start on a cache line, as the ops' scratch does.
            let mut buf = vec![0.0f32; g.packed_len() + 16];
            let skip = buf.as_ptr().align_offset(64);
            let scratch = &mut buf[skip..];
            let mut best = [f64::MAX; 2];
            for _ in 0..30 {
                for (i, max_m) in [0, usize::MAX].into_iter().enumerate() {
                    g.dots_max_m = max_m;
                    let t = Instant::now();
                    let a = AMat { data: &a, ld: k };
                    assert!(g.gemm(a, b, &ep, &mut c, n, scratch, None, 1));
                    best[i] = best[i].min(t.elapsed().as_secs_f64());
                }
            }
            let gf = |t: f64| 2.0 * (m * n * k) as f64 / t / 1e9;
            std::println!(
                "{:?} m={m} n={n} k={k}: packed {:.1} GF/s, dots {:.1} GF/s",
                level.isa,
                gf(best[0]),
                gf(best[1])
            );
        }
    }
}

/// Times packing `B` by columns and by rows (ns per value):
/// `cargo test --release -p ember-cpu --lib pack_speed -- --ignored --nocapture`.
#[test]
#[ignore]
fn pack_speed() {
    use std::time::Instant;
    for level in levels() {
        for (n, k) in [(384, 384), (240, 240), (24, 864), (6625, 120)] {
            let w = values(n * k, 2);
            let g = Gemm::new(level, 1000, n, k);
            let mut out = vec![0.0f32; g.packed_len()];
            let mut best = [f64::MAX; 2];
            for _ in 0..30 {
                for (i, b) in [
                    BMat::Cols { data: &w, ld: k },
                    BMat::Rows { data: &w, ld: n },
                ]
                .into_iter()
                .enumerate()
                {
                    let t = Instant::now();
                    g.pack(b, 0..g.panels(), &mut out);
                    best[i] = best[i].min(t.elapsed().as_secs_f64());
                }
            }
            std::println!(
                "{:?} n={n} k={k} tile {:?}: columns {:.2} ns/value, rows {:.2} ns/value",
                level.isa,
                g.tile(),
                best[0] * 1e9 / (n * k) as f64,
                best[1] * 1e9 / (n * k) as f64
            );
        }
    }
}
