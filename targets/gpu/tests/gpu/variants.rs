//! Shape variants on a GPU (issue 30): one keyword-spotting blob converted for utterances of 25, 49 and
//! 97 frames opens once on Vulkan; after each variant's first run, cycling through them 60 times leaves
//! CubeCL's live allocations and reserved bytes where they were, and every run's probabilities are
//! within 1e-4 x max|y| of the CPU's for the same variant (and the CPU's match onnxruntime's goldens,
//! `tests/models/kws/lengths/y<frames>.npy`). Skips (printing why) without a Vulkan device unless
//! `EMBER_REQUIRE_GPU=1`.

use crate::common;

use common::vulkan;
use ember_core::AlignedBuf;
use ember_gpu::{Device, DeviceMemoryReport, DeviceSession};
use ember_tests::{convert_variants, model_dir, read_npy_f32};

const LENGTHS: [u32; 3] = [25, 49, 97];

/// An utterance and onnxruntime's probabilities for it.
struct Utterance {
    x: Vec<f32>,
    y: Vec<f32>,
}

/// The blob for every length, and each length's utterance and onnxruntime's answer.
fn kws_lengths() -> (AlignedBuf, Vec<Utterance>) {
    let dir = model_dir("kws").join("lengths");
    let blob = convert_variants("kws/lengths", "T=25,49,97", "input=1,10,T");
    let data = LENGTHS
        .iter()
        .map(|t| {
            let (_, x) = read_npy_f32(&dir.join(format!("x{t}.npy")));
            let (_, y) = read_npy_f32(&dir.join(format!("y{t}.npy")));
            Utterance { x, y }
        })
        .collect();
    (AlignedBuf::from_bytes(&blob), data)
}

/// Selects the variant of `frames` by its input shape, writes `x` and runs; returns the output.
fn run_length(s: &mut DeviceSession<'_>, frames: u32, x: &[f32]) -> Vec<f32> {
    let dims = [1, 10, frames];
    s.set_input_shapes(&[&dims]).expect("a variant per length");
    s.input(0).expect("an input").write_f32(x).expect("sized");
    s.run().expect("runs");
    s.output(0).expect("an output").into_vec()
}

/// Live allocations and reserved bytes of the device's pools.
fn pool(s: &DeviceSession<'_>) -> (u64, u64) {
    match s.memory_report() {
        DeviceMemoryReport::Gpu(r) => (r.allocations, r.bytes_reserved),
        DeviceMemoryReport::Cpu(_) => panic!("a GPU session reports its pools"),
    }
}

/// Set in the child process that runs the pool test alone.
const ALONE: &str = "EMBER_GPU_POOL_TEST_ALONE";

#[test]
fn cycling_through_shape_variants_allocates_nothing_and_matches_the_cpu() {
    if std::env::var_os(ALONE).is_none() {
        // CubeCL's pools belong to the process, and the other tests of this binary allocate in them at
        // the same time: this one runs again alone, in a child process.
        let name = "variants::cycling_through_shape_variants_allocates_nothing_and_matches_the_cpu";
        let out = std::process::Command::new(std::env::current_exe().expect("the test binary"))
            .args([name, "--exact", "--nocapture", "--test-threads=1"])
            .env(ALONE, "1")
            .output()
            .expect("the test binary runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "alone, the test failed:\n{text}");
        assert!(
            text.contains("1 passed"),
            "alone, the test did not run:\n{text}"
        );
        eprintln!(
            "{}",
            text.lines()
                .filter(|l| l.contains("switches") || l.contains("host ops"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        return;
    }
    let Some(gpu) = vulkan() else { return };
    let (blob, data) = kws_lengths();
    let mut cpu = DeviceSession::new(blob.as_bytes(), Device::Cpu).expect("opens on the CPU");
    let want: Vec<Vec<f32>> = LENGTHS
        .iter()
        .zip(&data)
        .map(|(&t, Utterance { x, y })| {
            let got = run_length(&mut cpu, t, x);
            let diff = got
                .iter()
                .zip(y)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0, f32::max);
            assert!(
                diff <= 1e-5,
                "T={t}: CPU differs from onnxruntime by {diff}"
            );
            got
        })
        .collect();

    let mut s = DeviceSession::new(blob.as_bytes(), gpu).expect("opens on Vulkan");
    assert_eq!(s.variant_count(), 3);
    // Each variant's first run compiles its kernels and may fill the pools.
    for (&t, u) in LENGTHS.iter().zip(&data) {
        run_length(&mut s, t, &u.x);
    }
    let before = pool(&s);
    for round in 0..60 {
        let k = [2, 0, 1, 0][round % 4];
        let got = run_length(&mut s, LENGTHS[k], &data[k].x);
        assert_eq!(
            s.variant(),
            k,
            "T={} ran on variant {}",
            LENGTHS[k],
            s.variant()
        );
        let scale = want[k].iter().fold(0.0f32, |m, v| m.max(v.abs()));
        for (i, (g, c)) in got.iter().zip(&want[k]).enumerate() {
            assert!(
                (g - c).abs() <= 1e-4 * scale,
                "T={}, round {round}, element {i}: GPU {g}, CPU {c}",
                LENGTHS[k]
            );
        }
        assert_eq!(
            pool(&s),
            before,
            "round {round} (T={}): live allocations and reserved bytes moved",
            LENGTHS[k]
        );
    }
    eprintln!(
        "{gpu}: 3 variants, 60 switches, pools at {} allocations and {} reserved bytes throughout",
        before.0, before.1
    );

    // A model with ops on the host (bool masks): every run reads device tensors back and writes the
    // host ops' outputs into device buffers in place, and writes the graph input in place too.
    let (blob, x, want) = crate::models::op_model("where");
    let mut h = DeviceSession::new(blob.as_bytes(), gpu).expect("opens on Vulkan");
    assert!(!h.host_ops().is_empty());
    let run = |h: &mut DeviceSession<'_>| {
        h.input(0).expect("an input").write_f32(&x).expect("sized");
        h.run().expect("runs");
        h.output(0).expect("an output").into_vec()
    };
    run(&mut h);
    let before = pool(&h);
    for round in 0..100 {
        assert_eq!(run(&mut h), run(&mut h), "round {round}: runs differ");
        assert_eq!(
            pool(&h),
            before,
            "round {round}: live allocations or reserved bytes moved"
        );
    }
    let got = run(&mut h);
    assert!(
        got.iter().zip(&want).all(|(g, w)| (g - w).abs() <= 1e-5),
        "{got:?}"
    );
    eprintln!(
        "{gpu}: a model with {} host ops, 200 runs, pools at {} allocations and {} reserved bytes throughout",
        h.host_ops().len(),
        before.0,
        before.1
    );
}

#[test]
fn a_shape_without_a_variant_is_an_error_listing_none_and_the_session_survives() {
    let Some(gpu) = vulkan() else { return };
    let (blob, data) = kws_lengths();
    let mut s = DeviceSession::new(blob.as_bytes(), gpu).expect("opens on Vulkan");
    let err = s.set_input_shapes(&[&[1, 10, 50]]).unwrap_err();
    assert!(err.to_string().contains("variant"), "{err}");
    // The variant that ran before still runs.
    let got = run_length(&mut s, 49, &data[1].x);
    assert_eq!(got.len(), 4);
}
