//! Zero heap allocations while running: every bundled model (the float ones, the digits CNN quantized to
//! int8 as `ember convert --quantize int8` does it, and `digits_qdq`), a Loop whose body holds a
//! convolution, and a chain of element-wise ops
//! large enough that the session splits them over its workers, opened with `ember_cpu::Cpu` at every
//! instruction-set level this CPU runs, on one thread and on a pool of three workers, runs without a single
//! allocation on any thread, from the first run after the session opens on; and its outputs on three
//! workers equal its outputs on one, bit for bit. A blob with shape variants (the digits CNN at
//! batches 1, 4 and 16, `--dim N=1,4,16`) switches between them twenty times round
//! (16 -> 1 -> 4 -> 1 -> 16) without allocating, each run equal to a fresh session's.
//!
//! A counting global allocator counts every allocation of the process, whichever thread makes it (the
//! pool's workers included). The file runs without libtest's harness (`harness = false` in Cargo.toml), so
//! that no other test and no harness thread allocates while a run is being counted; it ends with a
//! `no_alloc: N passed, N failed` line.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use ember_convert::build::Builder;
use ember_convert::ir::DType;
use ember_convert::quantize::{self, Calibration};
use ember_convert::weights::Checkpoint;
use ember_convert::{ConvertOptions, WeightStorage};
use ember_core::{AlignedBuf, Model};
use ember_cpu::{Cpu, Isa};
use ember_tests::{convert_variants, model_dir, read_npy_f32};

/// The system allocator, counting allocations (not frees) of every thread.
struct Counting;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees hold; the counter is an atomic and allocates nothing.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: forwarded as received (see the impl's comment).
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: forwarded as received.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        // SAFETY: forwarded as received.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as received.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs counted per session: the first (right after opening) and two more.
const RUNS: usize = 3;

/// A model to run: its name, blob and input.
struct Case {
    name: String,
    blob: Vec<u8>,
    input: Vec<f32>,
}

fn convert(onnx: &[u8]) -> Vec<u8> {
    ember_convert::convert(onnx, &ConvertOptions::default())
        .expect("the bundled model converts")
        .blob
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for name in ["digits", "dscnn", "kws"] {
        let onnx = std::fs::read(model_dir(name).join("model.onnx")).expect("bundled model");
        let (_, input) = read_npy_f32(&model_dir(name).join("x1.npy"));
        cases.push(Case {
            name: name.to_string(),
            blob: convert(&onnx),
            input,
        });
    }
    let (_, digit) = read_npy_f32(&model_dir("digits").join("x1.npy"));
    // The int8 digits CNN, as `ember convert --quantize int8 --calibrate calib.npy` makes it.
    let onnx = std::fs::read(model_dir("digits").join("model.onnx")).expect("bundled model");
    let (_, calib) = read_npy_f32(&model_dir("digits").join("calib.npy"));
    let samples: Vec<Vec<Vec<f32>>> = calib.chunks(64).map(|c| vec![c.to_vec()]).collect();
    let opts = ConvertOptions::default();
    let ranges = quantize::calibrate(&onnx, &opts, &samples, Calibration::MinMax, &mut |_, _| {})
        .expect("calibration runs");
    let (qdq, _) = quantize::quantize_qdq(&onnx, &ranges).expect("the digits CNN quantizes");
    cases.push(Case {
        name: "digits --quantize int8".into(),
        blob: convert(&qdq),
        input: digit.clone(),
    });
    let onnx = std::fs::read(model_dir("digits_qdq").join("model.onnx")).expect("bundled model");
    cases.push(Case {
        name: "digits_qdq".into(),
        blob: convert(&onnx),
        input: digit,
    });
    // A Loop of three iterations whose body holds a convolution (`loop_conv` of the converter's
    // control-flow cases).
    let ops =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../converter/tests/models/ops");
    let onnx = std::fs::read(ops.join("loop_conv.onnx")).expect("the control-flow case");
    let (_, input) = read_npy_f32(&ops.join("loop_conv.x.npy"));
    cases.push(Case {
        name: "loop_conv (a Loop whose body holds a conv)".into(),
        blob: convert(&onnx),
        input,
    });
    cases.push(Case {
        name: "element-wise 1x16x64x64".into(),
        blob: element_wise(),
        input: (0..16 * 64 * 64)
            .map(|i| ((i % 97) as f32 - 48.0) / 17.0)
            .collect(),
    });
    cases
}

/// `sigmoid((x + relu(x)) * scale[c])` on a 1x16x64x64 input: 65,536 elements, which the session splits
/// over three workers (`split_rows`: from 16k elements per worker), the scale broadcast per channel.
fn element_wise() -> Vec<u8> {
    let ckpt = Checkpoint::new();
    let mut b = Builder::new(&ckpt);
    let x = b.input("x", &[1, 16, 64, 64], DType::F32);
    let scale: Vec<f32> = (0..16).map(|c| 0.5 + c as f32 / 16.0).collect();
    let scale = b.constant("scale", &[16, 1, 1], scale).expect("a constant");
    let r = b.relu("relu", x).expect("relu");
    let s = b.add("residual", x, r).expect("add");
    let m = b.mul("scaled", s, scale).expect("mul");
    let y = b.sigmoid("sigmoid", m).expect("sigmoid");
    b.output("y", y);
    let built = b.finish().expect("the graph is complete");
    ember_convert::convert_built(built, &ConvertOptions::default(), WeightStorage::Float)
        .expect("the element-wise chain converts")
        .blob
}

/// The digits CNN with batch variants 1, 4 and 16 switched 16 -> 1 -> 4 -> 1 -> 16, twenty times
/// round, on one thread and three, at the best level: no allocation while switching or running, and
/// every run's output equal to a fresh session's for that batch. Returns the runs counted.
fn variant_switching(failures: &mut Vec<String>) -> usize {
    let blob = AlignedBuf::from_bytes(&convert_variants("digits", "N=1,4,16", "input=N,1,8,8"));
    let model = Model::parse(blob.as_bytes()).expect("the blob parses");
    let (_, images) = read_npy_f32(&model_dir("digits").join("x1.npy"));
    let input = |n: usize| -> Vec<f32> { images.iter().copied().cycle().take(n * 64).collect() };
    let mut counted = 0;
    for threads in [1, 3] {
        let cpu = Cpu::new(threads).expect("the host CPU");
        if let Some(pool) = cpu.options().parallel {
            pool.run(&|_| {});
        }
        // What a fresh session gives for each batch.
        let fresh: Vec<Vec<u8>> = [1usize, 4, 16]
            .iter()
            .map(|&n| {
                let mut arena = AlignedBuf::zeroed(cpu.arena_bytes(&model).expect("sized"));
                let mut s = cpu.session(&model, arena.as_mut_bytes()).expect("opens");
                s.set_dims(&[n as u32]).expect("a variant");
                s.input(0)
                    .expect("an input")
                    .write_f32(&input(n))
                    .expect("sized");
                s.run().expect("runs");
                s.output(0).expect("an output").bytes().to_vec()
            })
            .collect();
        let mut arena = AlignedBuf::zeroed(cpu.arena_bytes(&model).expect("sized"));
        let mut session = cpu
            .session(&model, arena.as_mut_bytes())
            .expect("the session opens");
        let inputs: Vec<Vec<f32>> = [1, 4, 16].iter().map(|&n| input(n)).collect();
        for round in 0..20 {
            for n in [16u32, 1, 4, 1, 16] {
                let k = [1, 4, 16].iter().position(|&b| b == n).unwrap_or(0);
                let before = ALLOCATIONS.load(Ordering::SeqCst);
                let result = session.set_dims(&[n]).map(|_| ()).and_then(|()| {
                    session.input(0)?.write_f32(&inputs[k])?;
                    session.run()
                });
                let made = ALLOCATIONS.load(Ordering::SeqCst) - before;
                counted += 1;
                if let Err(e) = result {
                    failures.push(format!("batch variant {n}, round {round}: {e}"));
                    continue;
                }
                if made != 0 {
                    failures.push(format!(
                        "switching to batch {n} on {threads} thread(s), round {round}: {made} \
                         allocation(s)"
                    ));
                }
                let y = session.output(0).map(|o| o.bytes().to_vec());
                if y.as_ref().ok() != Some(&fresh[k]) {
                    failures.push(format!(
                        "batch {n} on {threads} thread(s), round {round}: the output differs \
                         from a fresh session's"
                    ));
                }
                // The application's use of what this variant leaves free: the next run, of any
                // variant, must not read it (its output is compared with a fresh session's above).
                session.spare_mut().fill(0xA5);
            }
        }
    }
    counted
}

/// The counter sees allocations on the calling thread and on a pool's workers (else a pass would mean
/// nothing).
fn check_the_counter() {
    let before = ALLOCATIONS.load(Ordering::SeqCst);
    drop(std::hint::black_box(Box::new(1u64)));
    assert!(
        ALLOCATIONS.load(Ordering::SeqCst) > before,
        "the counting allocator is not installed"
    );
    let cpu = Cpu::with_isa(Isa::Scalar, 3).expect("a pool starts");
    let pool = cpu.options().parallel.expect("three workers make a pool");
    pool.run(&|_| {});
    // A part runs on a worker thread, or on the calling one when the worker is late: repeat until
    // parts ran on worker threads, and check that their allocations were counted. The calling thread
    // sleeps a millisecond in each part it takes, so that workers get the others even on a machine
    // whose cores are all busy (CI ran this beside a fuzzer once, and the caller took every part of
    // 10,000 jobs).
    let mut checked = false;
    for _ in 0..10_000 {
        let on_workers = AtomicUsize::new(0);
        let before = ALLOCATIONS.load(Ordering::SeqCst);
        pool.run(&|_| {
            let name = std::thread::current();
            if name.name().is_some_and(|n| n.starts_with("ember-cpu-")) {
                drop(std::hint::black_box(vec![0u8; 64]));
                on_workers.fetch_add(1, Ordering::SeqCst);
            } else {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        });
        let made = ALLOCATIONS.load(Ordering::SeqCst) - before;
        let expected = on_workers.load(Ordering::SeqCst);
        if expected > 0 {
            assert!(
                made >= expected,
                "an allocation on a worker thread was not counted"
            );
            checked = true;
            break;
        }
    }
    assert!(checked, "no part of 10,000 jobs ran on a worker thread");
}

fn main() {
    check_the_counter();
    let cases = cases();
    let mut failures = Vec::new();
    let mut sessions = 0;
    for case in &cases {
        let blob = AlignedBuf::from_bytes(&case.blob);
        let model = Model::parse(blob.as_bytes()).expect("the blob parses");
        for isa in Isa::supported() {
            // The outputs of the level's one-thread session, for the three-worker one to match.
            let mut one_thread: Option<Vec<u8>> = None;
            for threads in [1, 3] {
                let cpu = Cpu::with_isa(isa, threads).expect("a supported level opens");
                // One empty job first: it returns when every worker has started and run it, so that a
                // worker's own start-up (thread-local set-up) is not counted against a run.
                if let Some(pool) = cpu.options().parallel {
                    pool.run(&|_| {});
                }
                let mut arena = AlignedBuf::zeroed(cpu.arena_bytes(&model).expect("sized"));
                let mut session = cpu
                    .session(&model, arena.as_mut_bytes())
                    .expect("the session opens");
                sessions += 1;
                for run in 0..RUNS {
                    session
                        .input(0)
                        .expect("an input")
                        .write_f32(&case.input)
                        .expect("the input's size");
                    let before = ALLOCATIONS.load(Ordering::SeqCst);
                    let result = session.run();
                    let made = ALLOCATIONS.load(Ordering::SeqCst) - before;
                    result.expect("the model runs");
                    if made != 0 {
                        failures.push(format!(
                            "{} at {isa} on {threads} thread(s), run {}: {made} allocation(s)",
                            case.name,
                            run + 1
                        ));
                    }
                }
                let y = session.output(0).expect("an output").bytes().to_vec();
                match &one_thread {
                    None => one_thread = Some(y),
                    Some(want) => {
                        if *want != y {
                            failures.push(format!(
                                "{} at {isa}: the outputs on {threads} threads differ from one",
                                case.name
                            ));
                        }
                    }
                }
            }
        }
    }
    let switches = variant_switching(&mut failures);
    let levels: Vec<&str> = Isa::supported().map(Isa::name).collect();
    println!(
        "no_alloc: {} models x levels {} x 1 and 3 threads = {sessions} sessions, {} runs counted",
        cases.len(),
        levels.join(", "),
        sessions * RUNS
    );
    println!("no_alloc: {switches} runs switching between shape variants counted");
    for f in &failures {
        println!("  failed: {f}");
    }
    let failed = usize::from(!failures.is_empty());
    println!("no_alloc: {} passed, {failed} failed", 1 - failed);
    std::process::exit(failed as i32);
}
