//! Sessions hand their heavy kernels a `Workspace`: the scratch the kernel table asked for, reserved in the
//! arena when the session opens, and the session's workers. Checked with a table whose convolution kernel
//! asks for a scratch size of its own and records what it is given (then runs the reference kernel, so the
//! model's outputs stay checkable against onnxruntime's).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use ember_core::kernels::Kernels;
use ember_core::ops::nn::conv::{self, Conv2dParams};
use ember_core::ops::{In, Out};
use ember_core::{
    AlignedBuf, Error, Model, OpKind, Parallel, Session, SessionOptions, Workspace, REFERENCE,
};

/// What the recording kernel saw on its last call: scratch length, workers, 16-byte alignment.
static SEEN: Mutex<Option<(usize, usize, bool)>> = Mutex::new(None);
/// Serializes the tests (they share `SEEN`).
static SERIAL: Mutex<()> = Mutex::new(());

/// Scratch the recording table asks for per convolution: its output's element count, in bytes.
fn scratch(kind: &OpKind, _: &[&[usize]], y: &[usize], workers: usize) -> usize {
    match kind {
        OpKind::Conv2d(_) => y.iter().product::<usize>() * workers,
        _ => 0,
    }
}

fn recording_conv(
    p: &Conv2dParams,
    x: In<'_>,
    w: In<'_>,
    b: Option<&[f32]>,
    y: Out<'_>,
    ws: Option<&mut Workspace<'_>>,
) {
    let seen = ws.map(|ws| {
        // The scratch is the kernel's to write.
        ws.scratch.fill(0xA5);
        (
            ws.scratch.len(),
            ws.workers(),
            (ws.scratch.as_ptr() as usize).is_multiple_of(16),
        )
    });
    *SEEN.lock().unwrap() = seen;
    conv::conv2d(p, x, w, b, y)
}

static RECORDING: Kernels = Kernels {
    name: "recording",
    scratch: Some(scratch),
    conv2d: recording_conv,
    ..REFERENCE
};

/// Two workers that run the job on the calling thread one after the other (enough to check the count).
struct TwoWorkers(AtomicUsize);

impl Parallel for TwoWorkers {
    fn workers(&self) -> usize {
        2
    }
    fn run(&self, job: &(dyn Fn(usize) + Sync)) {
        self.0.fetch_add(1, Ordering::Relaxed);
        job(0);
        job(1);
    }
}

fn digits() -> AlignedBuf {
    let onnx = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/models/digits/model.onnx"
    ))
    .unwrap();
    let converted = ember_convert::convert(&onnx, &Default::default()).unwrap();
    AlignedBuf::from_bytes(&converted.blob)
}

/// The largest convolution output of the digits CNN, in elements (its first layer).
fn largest_conv_output(model: &Model<'_>) -> usize {
    (0..model.op_count())
        .filter_map(|i| {
            let op = model.op(i)?;
            matches!(op.kind, OpKind::Conv2d(_)).then(|| {
                let t = model.tensor(op.output as usize).unwrap();
                t.dims.iter().map(|&d| d as usize).product::<usize>()
            })
        })
        .max()
        .unwrap()
}

#[test]
fn the_arena_holds_the_scratch_the_table_asks_for() {
    let _serial = SERIAL.lock().unwrap();
    let blob = digits();
    let model = Model::parse(blob.as_bytes()).unwrap();
    let ask = largest_conv_output(&model);
    let options = SessionOptions::new(&RECORDING);
    let need = Session::arena_bytes_for(&model, &options).unwrap();
    assert_eq!(need, model.arena_bytes() + ask.div_ceil(16) * 16);

    // One byte short is refused, naming both sizes.
    let mut small = AlignedBuf::zeroed(need - 1);
    match Session::with_options(&model, small.as_mut_bytes(), &options) {
        Err(Error::ArenaTooSmall { need: n, have }) => assert_eq!((n, have), (need, need - 1)),
        Err(e) => panic!("expected ArenaTooSmall, got {e}"),
        Ok(_) => panic!("expected ArenaTooSmall, the session opened"),
    }

    let mut arena = AlignedBuf::zeroed(need);
    let mut s = Session::with_options(&model, arena.as_mut_bytes(), &options).unwrap();
    assert_eq!(s.memory_report().scratch_bytes, ask.div_ceil(16) * 16);
    assert_eq!(s.workers(), 1);
    s.input(0).unwrap().write_f32(&[0.25; 64]).unwrap();
    s.run().unwrap();
    let (len, workers, aligned) = SEEN.lock().unwrap().expect("the kernel got a workspace");
    assert!(len >= ask, "scratch {len} < {ask}");
    assert_eq!(workers, 1);
    assert!(aligned);
    // The scratch the kernel scribbled on is not the activations: the outputs are still probabilities.
    let y = s.output(0).unwrap().as_f32().unwrap();
    assert!((y.iter().sum::<f32>() - 1.0).abs() < 1e-5, "{y:?}");
}

#[test]
fn workers_reach_the_kernels_and_size_the_scratch() {
    let _serial = SERIAL.lock().unwrap();
    let blob = digits();
    let model = Model::parse(blob.as_bytes()).unwrap();
    let pool = TwoWorkers(AtomicUsize::new(0));
    let options = SessionOptions {
        kernels: &RECORDING,
        parallel: Some(&pool),
    };
    let need = Session::arena_bytes_for(&model, &options).unwrap();
    let ask = largest_conv_output(&model) * 2;
    assert_eq!(need, model.arena_bytes() + ask.div_ceil(16) * 16);
    let mut arena = AlignedBuf::zeroed(need);
    let mut s = Session::with_options(&model, arena.as_mut_bytes(), &options).unwrap();
    assert_eq!(s.workers(), 2);
    s.input(0).unwrap().write_f32(&[0.5; 64]).unwrap();
    s.run().unwrap();
    let (len, workers, _) = SEEN.lock().unwrap().expect("the kernel got a workspace");
    assert!(len >= ask);
    assert_eq!(workers, 2);
}

#[test]
fn a_session_opened_with_a_table_alone_gives_only_the_planned_scratch() {
    let _serial = SERIAL.lock().unwrap();
    let blob = digits();
    let model = Model::parse(blob.as_bytes()).unwrap();
    // `with_kernels` reserves what the converter planned (nothing), whatever the table asks for.
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut s = Session::with_kernels(&model, arena.as_mut_bytes(), &RECORDING).unwrap();
    s.input(0).unwrap().write_f32(&[0.5; 64]).unwrap();
    s.run().unwrap();
    let (len, workers, _) = SEEN
        .lock()
        .unwrap()
        .expect("a host session passes a workspace");
    assert_eq!((len, workers), (0, 1));
}

#[test]
fn a_firmware_build_passes_no_workspace() {
    let _serial = SERIAL.lock().unwrap();
    let blob = digits();
    let entries = Model::parse(blob.as_bytes())
        .unwrap()
        .kernel_entries()
        .unwrap();
    // The digits CNN's entries: what its firmware's `KERNEL_ENTRIES` holds (no `WORKSPACE` bit).
    const DIGITS: u64 = ember_core::kernels::entry::CONV2D
        | ember_core::kernels::entry::FULLY_CONNECTED
        | ember_core::kernels::entry::MAX_POOL
        | ember_core::kernels::entry::SOFTMAX;
    assert_eq!(entries & !DIGITS, 0, "the digits CNN uses more entries");
    let model = Model::parse_only::<DIGITS>(blob.as_bytes()).unwrap();
    let mut arena = AlignedBuf::zeroed(model.arena_bytes() + 4096);
    let mut s = Session::with_kernels(&model, arena.as_mut_bytes(), &RECORDING).unwrap();
    s.input(0).unwrap().write_f32(&[0.5; 64]).unwrap();
    s.run().unwrap();
    assert_eq!(*SEEN.lock().unwrap(), None);
}
