//! The bundled models (`tests/models/`) through ember-cpu at every instruction-set level this CPU runs, on
//! one thread and on a pool of three workers: float outputs against onnxruntime's golden outputs
//! (`y1.npy`), int8 models' outputs byte-identical to those of ember-core's reference kernels.
//!
//! The blobs are converted on the host by `cargo xtask` (the `ci` and `aarch64` tasks), which writes them
//! with a `manifest.tsv` into the folder that `EMBER_CPU_MODELS` names: this test needs no converter, so
//! it runs the same way cross-built for aarch64 under QEMU. Without the variable it passes with a message
//! saying it checked nothing; with `EMBER_REQUIRE_MODELS=1` it fails instead.
//!
//! Tolerance, as `tests/models/check_goldens.py`: `|ember - golden| <= RTOL * max(1, max |golden|)`.

use std::path::{Path, PathBuf};

use ember_core::{AlignedBuf, Model, Session};
use ember_cpu::{Cpu, Isa};

/// Relative to the output's scale (see `tests/models/check_goldens.py` for why this bound).
const RTOL: f32 = 1e-5;

/// Worker counts each level runs with: the calling thread alone, and a pool (more workers than this
/// machine's cores is fine: only the split is checked, not the speed).
const THREADS: [usize; 2] = [1, 3];

/// How a model's outputs are checked.
enum Check {
    /// The first output against a float32 golden file.
    Golden(PathBuf),
    /// Every output byte-identical to the reference kernels' (int8 models).
    Reference,
}

/// One line of the manifest: `name <TAB> f32|int8 <TAB> blob <TAB> input.npy <TAB> golden.npy|-`.
struct Entry {
    name: String,
    blob: PathBuf,
    input: PathBuf,
    check: Check,
}

fn manifest(dir: &Path) -> Vec<Entry> {
    let path = dir.join("manifest.tsv");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(
                f.len(),
                5,
                "manifest line {line:?}: expected 5 tab-separated fields"
            );
            let check = match (f[1], f[4]) {
                ("f32", golden) => Check::Golden(golden.into()),
                ("int8", "-") => Check::Reference,
                _ => panic!("manifest line {line:?}: kind must be f32 (with a golden) or int8 (-)"),
            };
            Entry {
                name: f[0].to_string(),
                blob: f[2].into(),
                input: f[3].into(),
                check,
            }
        })
        .collect()
}

/// A float32, C-order `.npy` file's values (the only kind the bundled inputs and goldens are).
fn read_f32_npy(path: &Path) -> Vec<f32> {
    let bytes =
        std::fs::read(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    assert!(
        bytes.starts_with(b"\x93NUMPY"),
        "{} is not a .npy file",
        path.display()
    );
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        _ => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
    };
    let header = std::str::from_utf8(&bytes[start..start + header_len]).expect("ASCII header");
    assert!(
        header.contains("'descr': '<f4'") && header.contains("'fortran_order': False"),
        "{}: expected little-endian float32 in C order, got {header}",
        path.display()
    );
    bytes[start + header_len..]
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Runs `model` once on `input` with `session`, returning every output's bytes.
fn run(session: &mut Session<'_>, input: &[f32]) -> Vec<Vec<u8>> {
    session
        .input(0)
        .expect("the model has an input")
        .write_f32(input)
        .expect("the input file has the model's input size");
    session.run().expect("the model runs");
    (0..session.model().outputs().len())
        .map(|i| session.output(i).expect("output exists").bytes().to_vec())
        .collect()
}

fn reference_outputs(model: &Model<'_>, input: &[f32]) -> Vec<Vec<u8>> {
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut session = Session::new(model, arena.as_mut_bytes()).expect("reference session opens");
    run(&mut session, input)
}

/// What is wrong with `got` (first output, as f32) against `golden`, if anything.
fn against_golden(got: &[u8], golden: &[f32]) -> Option<String> {
    let got: Vec<f32> = got
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if got.len() != golden.len() {
        return Some(format!("{} values, golden has {}", got.len(), golden.len()));
    }
    let scale = golden.iter().fold(1.0f32, |m, v| m.max(v.abs()));
    let worst = got
        .iter()
        .zip(golden)
        .map(|(a, b)| (a - b).abs())
        .fold(0.0f32, f32::max);
    (worst.is_nan() || worst > RTOL * scale).then(|| {
        format!(
            "max |ember - golden| = {worst:e} > {RTOL:e} * {scale}: got {got:?}, golden {golden:?}"
        )
    })
}

#[test]
fn bundled_models_match_at_every_level() {
    let Some(dir) = std::env::var_os("EMBER_CPU_MODELS") else {
        let required = std::env::var("EMBER_REQUIRE_MODELS").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "EMBER_REQUIRE_MODELS=1 but EMBER_CPU_MODELS is not set: run `cargo xtask aarch64` or set it \
             to the folder `cargo xtask` converts the bundled models into"
        );
        eprintln!(
            "skipped: EMBER_CPU_MODELS is not set (the folder of blobs `cargo xtask aarch64` or `ci` \
             converts); nothing was checked"
        );
        return;
    };
    let entries = manifest(Path::new(&dir));
    assert!(!entries.is_empty(), "the manifest lists no model");
    let levels: Vec<Isa> = Isa::supported().collect();
    let mut failures = Vec::new();
    let mut checked = 0;
    for e in &entries {
        let blob = AlignedBuf::from_bytes(
            &std::fs::read(&e.blob)
                .unwrap_or_else(|err| panic!("cannot read {}: {err}", e.blob.display())),
        );
        let model = Model::parse(blob.as_bytes())
            .unwrap_or_else(|err| panic!("{}: the blob does not parse: {err}", e.name));
        let input = read_f32_npy(&e.input);
        let want = match &e.check {
            Check::Golden(path) => Err(read_f32_npy(path)),
            Check::Reference => Ok(reference_outputs(&model, &input)),
        };
        for &isa in &levels {
            for threads in THREADS {
                let cpu = Cpu::with_isa(isa, threads).expect("a supported level opens");
                let mut arena = AlignedBuf::zeroed(cpu.arena_bytes(&model).expect("sized"));
                let mut session = cpu
                    .session(&model, arena.as_mut_bytes())
                    .expect("the session opens");
                let got = run(&mut session, &input);
                let wrong = match &want {
                    Err(golden) => against_golden(&got[0], golden),
                    Ok(reference) => (got != *reference)
                        .then(|| "outputs differ from the reference kernels' bytes".to_string()),
                };
                if let Some(why) = wrong {
                    failures.push(format!("{} at {isa} on {threads} thread(s): {why}", e.name));
                }
                checked += 1;
            }
        }
    }
    eprintln!(
        "{} models x {} levels ({}) x {:?} threads: {checked} runs checked",
        entries.len(),
        levels.len(),
        levels
            .iter()
            .map(|l| l.name())
            .collect::<Vec<_>>()
            .join(", "),
        THREADS
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `EMBER_EXPECT_BEST_ISA` (set by `cargo xtask aarch64` for each QEMU CPU it runs on): the best level this
/// CPU must be detected at, so that a run meant to cover a level cannot fall back to a lower one unseen.
#[test]
fn the_expected_best_level_is_detected() {
    if let Ok(want) = std::env::var("EMBER_EXPECT_BEST_ISA") {
        assert_eq!(
            Isa::best().name(),
            want,
            "supported: {:?}",
            Isa::supported().collect::<Vec<_>>()
        );
    }
}
