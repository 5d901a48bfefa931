//! A truncated, corrupt or hostile blob gives an `Err`, never a panic. Mutations are applied with the CRC
//! recomputed afterwards, so that the structural validation is exercised and not just the checksum.

use std::panic::{catch_unwind, AssertUnwindSafe};

use ember_core::format::write::fix_crc;
use ember_core::format::HEADER_LEN;
use ember_core::{AlignedBuf, Error, Model, Session};
use ember_tests::{convert_model, model_dir, read_npy_f32};

/// What happened to one candidate blob.
#[derive(Debug, PartialEq)]
enum Outcome {
    ParseError,
    SessionError,
    RunError,
    Ran,
}

/// Parses, opens a session, runs once. Any panic propagates to the caller's `catch_unwind`.
fn exercise(bytes: &[u8], input: &[f32]) -> Outcome {
    let blob = AlignedBuf::from_bytes(bytes);
    let Ok(model) = Model::parse(blob.as_bytes()) else {
        return Outcome::ParseError;
    };
    // A hostile plan could ask for a huge arena; cap it so the test stays small (a real device would
    // simply fail with ArenaTooSmall).
    let mut arena = AlignedBuf::zeroed(model.arena_bytes().min(1 << 24));
    let Ok(mut session) = Session::new(&model, arena.as_mut_bytes()) else {
        return Outcome::SessionError;
    };
    let written = session.input(0).and_then(|mut t| {
        let n = t.len();
        let data: Vec<f32> = input.iter().copied().cycle().take(n).collect();
        t.write_f32(&data)
    });
    if written.is_err() || session.run().is_err() {
        return Outcome::RunError;
    }
    // Reading the outputs must not panic either.
    for k in 0..model.outputs().len() {
        if let Ok(out) = session.output(k) {
            let _ = out.as_f32().map(|v| v.iter().sum::<f32>());
        }
    }
    Outcome::Ran
}

fn digits_blob() -> (Vec<u8>, Vec<f32>) {
    let blob = convert_model("digits", &[("input", &[1, 1, 8, 8])]);
    let (_, x) = read_npy_f32(&model_dir("digits").join("x1.npy"));
    (blob, x)
}

#[test]
fn the_unmodified_blob_runs() {
    let (blob, x) = digits_blob();
    assert_eq!(exercise(&blob, &x), Outcome::Ran);
}

#[test]
fn every_truncation_is_an_error() {
    let (blob, x) = digits_blob();
    for len in 0..blob.len() {
        let outcome = catch_unwind(AssertUnwindSafe(|| exercise(&blob[..len], &x)))
            .unwrap_or_else(|_| panic!("truncation to {len} bytes panicked"));
        assert_eq!(
            outcome,
            Outcome::ParseError,
            "truncation to {len} bytes was accepted"
        );
        // With the CRC fixed up for the shorter length (and the declared length patched), the structure
        // itself must still be rejected or run safely.
        if len >= HEADER_LEN {
            let mut cut = blob[..len].to_vec();
            cut[12..16].copy_from_slice(&(len as u32).to_le_bytes());
            fix_crc(&mut cut);
            catch_unwind(AssertUnwindSafe(|| exercise(&cut, &x))).unwrap_or_else(|_| {
                panic!("truncation to {len} bytes with a fixed header panicked")
            });
        }
    }
}

/// A small deterministic generator (xorshift64*), so failures are reproducible from the printed seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn ten_thousand_byte_and_bit_mutations_never_panic() {
    let (blob, x) = digits_blob();
    let mut rng = Rng(0x005E_ED0F_E3B3);
    let mut counts = [0usize; 4];
    let mut panics = Vec::new();
    // Most of the blob is weights, where a mutation only changes numbers; three mutations in four go to
    // the header, section table and metadata before the weights section, where the structure lives.
    let weights_at = weights_offset(&blob);
    for i in 0..12_000 {
        let mut m = blob.clone();
        let at = if i % 4 == 3 {
            rng.below(m.len())
        } else {
            rng.below(weights_at)
        };
        if i % 2 == 0 {
            m[at] = rng.next() as u8;
        } else {
            m[at] ^= 1 << rng.below(8);
        }
        fix_crc(&mut m);
        match catch_unwind(AssertUnwindSafe(|| exercise(&m, &x))) {
            Ok(o) => {
                counts[match o {
                    Outcome::ParseError => 0,
                    Outcome::SessionError => 1,
                    Outcome::RunError => 2,
                    Outcome::Ran => 3,
                }] += 1
            }
            Err(_) => panics.push((i, at, m[at])),
        }
    }
    println!(
        "12000 mutations: {} parse errors, {} session errors, {} run errors, {} ran",
        counts[0], counts[1], counts[2], counts[3]
    );
    assert!(
        panics.is_empty(),
        "mutations that panicked (iteration, offset, new byte): {panics:?}"
    );
    // The structural checks must be doing the work (the CRC was fixed up): most mutations of metadata
    // bytes are rejected, while mutations of weights still run.
    assert!(counts[0] > 0 && counts[3] > 0, "{counts:?}");
}

/// Offset of the weights section (kind 4), from the section table.
fn weights_offset(blob: &[u8]) -> usize {
    let count = u16::from_le_bytes([blob[20], blob[21]]) as usize;
    (0..count)
        .map(|k| HEADER_LEN + 16 * k)
        .find(|&e| u32::from_le_bytes(blob[e..e + 4].try_into().unwrap()) == 4)
        .map(|e| u32::from_le_bytes(blob[e + 4..e + 8].try_into().unwrap()) as usize)
        .expect("a weights section")
}

#[test]
fn checksum_catches_an_unfixed_mutation() {
    let (mut blob, _) = digits_blob();
    let last = blob.len() - 1;
    blob[last] ^= 0xFF;
    let buf = AlignedBuf::from_bytes(&blob);
    assert!(matches!(
        Model::parse(buf.as_bytes()),
        Err(Error::ChecksumMismatch { .. })
    ));
}

#[test]
fn a_future_major_version_is_rejected_clearly() {
    let (mut blob, _) = digits_blob();
    blob[4..6].copy_from_slice(&2u16.to_le_bytes());
    fix_crc(&mut blob);
    let buf = AlignedBuf::from_bytes(&blob);
    let err = Model::parse(buf.as_bytes()).unwrap_err();
    assert_eq!(
        err,
        Error::UnsupportedVersion {
            found: 2,
            supported: 1
        }
    );
    assert!(err.to_string().contains("version 2"), "{err}");
}

#[test]
fn a_misaligned_blob_is_rejected() {
    let (blob, _) = digits_blob();
    let mut buf = AlignedBuf::zeroed(blob.len() + 4);
    buf.as_mut_bytes()[4..].copy_from_slice(&blob);
    let err = Model::parse(&buf.as_bytes()[4..]).unwrap_err();
    assert_eq!(err, Error::MisalignedBlob { align: 16 });
}

#[test]
fn an_arena_one_byte_short_reports_the_exact_need() {
    let (blob, _) = digits_blob();
    let buf = AlignedBuf::from_bytes(&blob);
    let model = Model::parse(buf.as_bytes()).unwrap();
    let need = model.arena_bytes();
    let plan = model.plan();
    // The need is the sum of the three planned regions, each rounded to 16 bytes, and nothing else.
    let round = |n: u32| (n as usize).div_ceil(16) * 16;
    assert_eq!(
        need,
        round(plan.persistent_bytes) + round(plan.activation_bytes) + round(plan.scratch_bytes)
    );
    let mut arena = AlignedBuf::zeroed(need - 1);
    let err = Session::new(&model, arena.as_mut_bytes()).err().unwrap();
    assert_eq!(
        err,
        Error::ArenaTooSmall {
            need,
            have: need - 1
        }
    );
    let mut arena = AlignedBuf::zeroed(need);
    assert!(Session::new(&model, arena.as_mut_bytes()).is_ok());
    // A misaligned arena needs the padding on top, and says so.
    let mut arena = AlignedBuf::zeroed(need + 16);
    let err = Session::new(&model, &mut arena.as_mut_bytes()[1..need + 1])
        .err()
        .unwrap();
    assert_eq!(
        err,
        Error::ArenaTooSmall {
            need: need + 15,
            have: need
        }
    );
}
