//! Shape variants (`--dim`): one blob that runs a model at several input lengths. Each variant must
//! give bit for bit what a blob converted for that shape alone gives, the weights must be stored once
//! (a table the graph slices per length included), and the arena must be the largest shape's.
//! `Model::parse` must refuse a variant table that claims more arena than the largest, that repeats a
//! shape, or whose tables run past their section.

use ember_convert::variants::ShapeDim;
use ember_convert::{convert, ConvertError, ConvertOptions, Converted};
use ember_core::format::write::{fix_crc, write_blob, BlobParts, VariantBody, VariantParts};
use ember_core::format::{ModelInfo, OpRecord, TensorRecord, VariantRecord, MAX_VARIANT_DIMS};
use ember_core::{AlignedBuf, Error, Fit, Model, Session};

use crate::common::{self, floats, ints, node1, pseudo_random, unshaped, value, D};

const LENGTHS: [usize; 3] = [8, 16, 32];

/// `y = relu((x + pos[:L]) @ w)` for `x` of shape `[1, L, 8]`: the slice of the position table is
/// computed from `x`'s shape, as transformer exports do, so each length folds it into a table of its
/// own, the start of the longest one.
fn sliced_table_model() -> Vec<u8> {
    let nodes = vec![
        node1("Shape", "shape", &["x"], "s"),
        node1("Gather", "length", &["s", "one"], "l"),
        common::node(
            "Slice",
            "positions",
            &["pos", "zero", "l", "zero"],
            &["p"],
            vec![],
        ),
        node1("Add", "add", &["x", "p"], "a"),
        node1("MatMul", "project", &["a", "w"], "m"),
        node1("Relu", "relu", &["m"], "y"),
    ];
    common::model(
        13,
        nodes,
        vec![value("x", &[D::N(1), D::P("L"), D::N(8)])],
        vec![unshaped("y")],
        vec![
            floats("pos", &[64, 8], &pseudo_random(64 * 8, 1)),
            floats("w", &[8, 4], &pseudo_random(8 * 4, 2)),
            ints("one", &[1]),
            ints("zero", &[0]),
        ],
    )
}

fn with_dims(dims: &str, shape: &str) -> ConvertOptions {
    let mut opts = ConvertOptions::default();
    opts.dims.push(ConvertOptions::parse_dim(dims).unwrap());
    opts.add_shape(shape).unwrap();
    opts
}

fn single(onnx: &[u8], len: usize) -> Converted {
    let opts = ConvertOptions {
        shapes: vec![("x".into(), vec![1, len, 8])],
        ..ConvertOptions::default()
    };
    convert(onnx, &opts).unwrap()
}

/// The model converted with `--dim dims --shape x=1,L,8`, and its blob aligned.
fn variant_blob(dims: &str) -> (Converted, AlignedBuf) {
    let converted = convert(&sliced_table_model(), &with_dims(dims, "x=1,L,8")).unwrap();
    let blob = AlignedBuf::from_bytes(&converted.blob);
    (converted, blob)
}

fn bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn each_variant_matches_its_own_blob_with_one_weights_section_and_the_largest_arena() {
    let onnx = sliced_table_model();
    let (converted, blob) = variant_blob("L=8,16,32");
    let model = Model::parse(blob.as_bytes()).unwrap();
    assert_eq!(model.variant_count(), 3);
    assert_eq!(model.dim_name(0), Some("L"));
    assert_eq!(model.dim_name(1), None);
    // The largest runs when nothing is chosen (what a reader without variants runs).
    assert_eq!(model.variant_dims(model.variant_index()).unwrap(), [32]);

    let largest = single(&onnx, 32);
    let largest_blob = AlignedBuf::from_bytes(&largest.blob);
    let largest_model = Model::parse(largest_blob.as_bytes()).unwrap();
    assert_eq!(model.arena_bytes(), largest_model.arena_bytes());
    assert_eq!(model.weights_bytes(), largest_model.weights_bytes());
    assert_eq!(converted.report.weights_bytes, largest.report.weights_bytes);

    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut session = Session::new(&model, arena.as_mut_bytes()).unwrap();
    // Switch back and forth: each run must match a fresh blob of that length.
    for &len in LENGTHS.iter().chain(LENGTHS.iter().rev()) {
        let i = session.set_dims(&[len as u32]).unwrap();
        assert_eq!(model.variant_dims(i).unwrap(), [len as u32]);
        let x = pseudo_random(len * 8, len as u64);
        session.input(0).unwrap().write_f32(&x).unwrap();
        session.run().unwrap();
        let out = session.output(0).unwrap();
        assert_eq!(out.dims(), [1, len as u32, 4]);
        let want = ember_testkit::model::run(&single(&onnx, len).blob, &x);
        assert_eq!(bits(out.as_f32().unwrap()), bits(&want), "L={len}");
    }
    for (i, len) in LENGTHS.iter().enumerate() {
        let used = session.variant_use(model.find_variant(&[*len as u32]).unwrap());
        assert_eq!(used.map(|u| u.runs), Some(2), "variant {i}");
    }
    // The input shapes pick the variant too, and a shape without one is an error naming the count.
    assert!(session.set_input_shapes(&[&[1, 16, 8]]).is_ok());
    assert_eq!(
        session.model().variant_dims(session.variant()).unwrap(),
        [16]
    );
    assert_eq!(
        session.set_input_shapes(&[&[1, 12, 8]]).err(),
        Some(Error::NoVariant { variants: 3 })
    );
    assert_eq!(
        session.set_dims(&[64]).err(),
        Some(Error::NoVariant { variants: 3 })
    );

    let report = &converted.report.variants;
    assert_eq!(report.len(), 3);
    assert!(report[2].largest && !report[0].largest);
    assert_eq!(report[0].inputs[0].1, [1, 8, 8]);
}

/// `x` as little-endian bytes, as `Session::write_input` takes it.
fn le_bytes(x: &[f32]) -> Vec<u8> {
    x.iter().flat_map(|v| v.to_le_bytes()).collect()
}

#[test]
fn a_shorter_input_runs_padded_in_the_smallest_variant_that_covers_it() {
    let onnx = sliced_table_model();
    let mut opts = with_dims("L=8,16,32", "x=1,L,8");
    opts.pads.push(("x".into(), 0.0));
    let blob = AlignedBuf::from_bytes(&convert(&onnx, &opts).unwrap().blob);
    let model = Model::parse(blob.as_bytes()).unwrap();
    assert_eq!(model.pad_value(0), Some(0.0));
    assert_eq!(model.pad_value(1), None);
    let variant = |len: u32| model.find_variant(&[len]).unwrap();
    // An exact shape first; else the smallest plan that covers it; nothing past the largest.
    assert_eq!(
        model.variant_covering(&[&[1, 16, 8]]),
        Some(Fit {
            variant: variant(16),
            padded: false
        })
    );
    assert_eq!(model.variant_covering(&[&[1, 33, 8]]), None);
    assert_eq!(model.variant_covering(&[&[1, 12, 9]]), None);

    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut session = Session::new(&model, arena.as_mut_bytes()).unwrap();
    for (len, covering) in [(12usize, 16u32), (5, 8), (17, 32), (8, 8)] {
        let fit = session.set_input_shapes(&[&[1, len as u32, 8]]).unwrap();
        assert_eq!(fit.variant, variant(covering), "L={len}");
        assert_eq!(fit.padded, len as u32 != covering, "L={len}");
        let x = pseudo_random(len * 8, len as u64 + 100);
        session
            .write_input(0, &[1, len as u32, 8], &le_bytes(&x))
            .unwrap();
        session.run().unwrap();
        let out = session.output(0).unwrap();
        // The output has the variant's shape; its first rows are what a blob of that length gives
        // (rows do not mix in this model), the rest what zero rows give.
        assert_eq!(out.dims(), [1, covering, 4]);
        let got = out.as_f32().unwrap();
        let want = ember_testkit::model::run(&single(&onnx, len).blob, &x);
        assert_eq!(bits(&got[..len * 4]), bits(&want), "L={len}");
        let mut zero_padded = x.clone();
        zero_padded.resize(covering as usize * 8, 0.0);
        let whole = ember_testkit::model::run(&single(&onnx, covering as usize).blob, &zero_padded);
        assert_eq!(bits(got), bits(&whole), "L={len} padded to {covering}");
    }
}

#[test]
fn padding_needs_a_pad_value_declared_at_conversion() {
    // Without --pad, a shorter input has no variant and cannot be written into a longer one.
    let (_, blob) = variant_blob("L=8,16,32");
    let model = Model::parse(blob.as_bytes()).unwrap();
    assert_eq!(model.pad_value(0), None);
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut session = Session::new(&model, arena.as_mut_bytes()).unwrap();
    assert_eq!(
        session.set_input_shapes(&[&[1, 12, 8]]).err(),
        Some(Error::NoVariant { variants: 3 })
    );
    session.set_dims(&[16]).unwrap();
    let x = le_bytes(&pseudo_random(12 * 8, 7));
    assert_eq!(
        session.write_input(0, &[1, 12, 8], &x).err(),
        Some(Error::NoPadValue { input: 0 })
    );
    assert!(Error::NoPadValue { input: 0 }
        .to_string()
        .contains("--pad NAME=VALUE"));

    // --pad names a graph input, and needs --dim.
    let mut opts = with_dims("L=8,16", "x=1,L,8");
    opts.pads.push(("mask".into(), 0.0));
    let e = convert(&sliced_table_model(), &opts)
        .err()
        .unwrap()
        .to_string();
    common::assert_contains(&e, "the model has no input \"mask\"; its inputs are x");
    let opts = ConvertOptions {
        shapes: vec![("x".into(), vec![1, 8, 8])],
        pads: vec![("x".into(), 0.0)],
        ..ConvertOptions::default()
    };
    let e = convert(&sliced_table_model(), &opts)
        .err()
        .unwrap()
        .to_string();
    common::assert_contains(&e, "--dim");
    assert!(ConvertOptions::parse_pad("x=nan").is_err());
    assert_eq!(
        ConvertOptions::parse_pad("attention_mask=0").unwrap(),
        ("attention_mask".to_string(), 0.0)
    );
}

#[test]
fn a_short_input_leaves_the_arena_tail_to_the_application() {
    let (_, blob) = variant_blob("L=8..=32:x2");
    let model = Model::parse(blob.as_bytes()).unwrap();
    assert_eq!(model.variant_count(), 3);
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut session = Session::new(&model, arena.as_mut_bytes()).unwrap();
    assert!(session.spare_mut().is_empty(), "the largest leaves nothing");
    session.set_dims(&[8]).unwrap();
    let x = pseudo_random(8 * 8, 3);
    let mut outputs = Vec::new();
    for fill in [0x00, 0xff, 0x7f] {
        let spare = session.spare_mut();
        assert!(!spare.is_empty());
        spare.fill(fill);
        session.input(0).unwrap().write_f32(&x).unwrap();
        session.run().unwrap();
        outputs.push(bits(session.output(0).unwrap().as_f32().unwrap()));
    }
    assert!(outputs.windows(2).all(|w| w[0] == w[1]));
}

#[test]
fn dim_arguments_are_checked_with_a_message_saying_what_to_give() {
    let onnx = sliced_table_model();
    let err = |opts: &ConvertOptions| convert(&onnx, opts).unwrap_err().to_string();

    let mut unused = with_dims("L=8,16", "x=1,L,8");
    unused.dims.push(("W".into(), vec![1, 2]));
    common::assert_contains(&err(&unused), "--dim W is used by no --shape");

    let mut undeclared = ConvertOptions::default();
    undeclared.add_shape("x=1,L,8").unwrap();
    common::assert_contains(&err(&undeclared), "uses L, which no --dim gives values");

    let mut too_many = with_dims("L=1,2,3,4,5,6", "x=1,L,8");
    too_many.dims.push(("C".into(), vec![8, 9, 10]));
    too_many.dim_shapes[0].1[2] = ShapeDim::Named("C".into());
    common::assert_contains(&err(&too_many), "more than 16 variants");

    // A variant that does not convert says which one.
    let bad = with_dims("L=8,65", "x=1,L,8");
    match convert(&onnx, &bad) {
        Err(ConvertError::Variant { dims, .. }) => assert_eq!(dims, "L=65"),
        other => panic!("expected the L=65 variant to fail: {other:?}"),
    }

    for (arg, part) in [
        ("L=8,8", "a value is given twice"),
        ("L=0,8", "expected NAME=V1,V2"),
        ("8=1,2", "is not a dim name"),
        ("L=1..=100000:x2", "a dim takes 1 to 16"),
        ("L", "expected NAME=V1,V2"),
    ] {
        common::assert_contains(&ConvertOptions::parse_dim(arg).unwrap_err(), part);
    }
    assert_eq!(
        ConvertOptions::parse_dim("S=16..=128:x2").unwrap().1,
        [16, 32, 64, 128]
    );
    common::assert_contains(
        &ConvertOptions::default().add_shape("x=1,3,?").unwrap_err(),
        "neither a size nor a dim name",
    );
}

/// The tables of every variant of `model`, decoded, to write them again with changes.
struct Tables {
    dims: Vec<heapless::Vec<u32, MAX_VARIANT_DIMS>>,
    infos: Vec<ModelInfo<'static>>,
    tensors: Vec<Vec<TensorRecord>>,
    ops: Vec<Vec<OpRecord>>,
}

fn tables(model: &Model<'_>) -> Tables {
    let mut t = Tables {
        dims: Vec::new(),
        infos: Vec::new(),
        tensors: Vec::new(),
        ops: Vec::new(),
    };
    for i in 0..model.variant_count() {
        let v = model.variant(i).unwrap();
        t.dims.push(model.variant_dims(i).unwrap());
        let info = v.info();
        t.infos.push(ModelInfo {
            producer: b"test",
            source_hash: info.source_hash,
            tensor_count: info.tensor_count,
            op_count: info.op_count,
            inputs: info.inputs.clone(),
            outputs: info.outputs.clone(),
            arena: info.arena,
        });
        t.tensors.push(
            (0..v.tensor_count())
                .map(|j| v.tensor(j).unwrap())
                .collect(),
        );
        t.ops
            .push((0..v.op_count()).map(|j| v.op(j).unwrap()).collect());
    }
    t
}

/// Writes `t` with variant `main` in the main sections.
fn write(t: &Tables, main: usize, weights: &[u8]) -> Vec<u8> {
    let bodies: Vec<_> = (0..t.dims.len())
        .map(|i| {
            let body = (i != main).then(|| VariantBody {
                info: &t.infos[i],
                tensors: &t.tensors[i],
                ops: &t.ops[i],
            });
            (t.dims[i].clone(), body)
        })
        .collect();
    write_blob(&BlobParts {
        info: &t.infos[main],
        tensors: &t.tensors[main],
        ops: &t.ops[main],
        weights,
        names: None,
        variants: Some(VariantParts {
            dim_names: &["L"],
            variants: &bodies,
            pads: &[],
        }),
    })
    .unwrap()
}

/// Rewrites record `k` of `blob`'s variant table in place with `change` applied, and its checksum.
/// The new record must not be longer than the old one (trailing bytes are allowed in a record).
fn patch_variant_record(blob: &mut [u8], k: usize, change: impl FnOnce(&mut VariantRecord)) {
    let u32_at =
        |b: &[u8], at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap()) as usize;
    let sections = u16::from_le_bytes([blob[20], blob[21]]) as usize;
    let entry = (0..sections)
        .map(|i| 24 + 16 * i)
        .find(|&at| u32_at(blob, at) == 6)
        .expect("a Variants section");
    let section = u32_at(blob, entry + 4);
    // Record 0 is the dim names; variant k is record k + 1.
    let start = section + u32_at(blob, section + 4 + 4 * (k + 1));
    let end = section + u32_at(blob, section + 8 + 4 * (k + 1));
    let mut record: VariantRecord = postcard::from_bytes(&blob[start..end]).unwrap();
    change(&mut record);
    let bytes = postcard::to_allocvec(&record).unwrap();
    assert!(bytes.len() <= end - start, "the patched record grew");
    blob[start..end].fill(0);
    blob[start..start + bytes.len()].copy_from_slice(&bytes);
    fix_crc(blob);
}

fn parse_err(blob: &[u8]) -> String {
    let blob = AlignedBuf::from_bytes(blob);
    match Model::parse(blob.as_bytes()) {
        Ok(_) => panic!("the blob parsed"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn parse_refuses_a_variant_table_that_lies() {
    let (_, blob) = variant_blob("L=8,16,32");
    let model = Model::parse(blob.as_bytes()).unwrap();
    let main = model.variant_index();
    let t = tables(&model);

    // Written again unchanged, it parses.
    let same = AlignedBuf::from_bytes(&write(&t, main, model.weights()));
    assert_eq!(Model::parse(same.as_bytes()).unwrap().variant_count(), 3);

    let mut greedy = tables(&model);
    greedy.infos[0].arena.activation_bytes = t.infos[main].arena.activation_bytes + 16;
    common::assert_contains(
        &parse_err(&write(&greedy, main, model.weights())),
        "needs more arena than the largest",
    );

    let mut twice = tables(&model);
    twice.dims[1] = twice.dims[0].clone();
    common::assert_contains(
        &parse_err(&write(&twice, main, model.weights())),
        "repeats dims",
    );

    // One variant's tensor table moved onto the start of the section, where the first variant's
    // info record is: the tables overlap.
    let mut overlapping = write(&t, main, model.weights());
    let k = (0..3).rev().find(|&k| k != main).unwrap();
    patch_variant_record(&mut overlapping, k, |r| {
        r.tables.as_mut().unwrap().tensors.offset = 0;
    });
    common::assert_contains(&parse_err(&overlapping), "variant tables overlap");

    // The VariantTables section cut short: the last variant's tables run past it.
    let mut cut = write(&t, main, model.weights());
    let sections = u16::from_le_bytes([cut[20], cut[21]]) as usize;
    let entry = (0..sections)
        .map(|i| 24 + 16 * i)
        .find(|&at| u32::from_le_bytes(cut[at..at + 4].try_into().unwrap()) == 7)
        .expect("a VariantTables section");
    let len = u32::from_le_bytes(cut[entry + 8..entry + 12].try_into().unwrap());
    cut[entry + 8..entry + 12].copy_from_slice(&(len - 8).to_le_bytes());
    fix_crc(&mut cut);
    common::assert_contains(&parse_err(&cut), "runs past the section");
}
