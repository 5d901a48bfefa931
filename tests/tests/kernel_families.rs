//! Kernel tables that leave families out (what firmware links): a session refuses a model whose ops
//! they lack, by name, and runs the models they cover exactly as the full reference table does.

use ember_core::{AlignedBuf, Error, Model, Session, REFERENCE, REFERENCE_F32, REFERENCE_INT8};
use ember_tests::{convert_model, model_dir, read_npy_f32};

fn outputs(blob: &[u8], kernels: &'static ember_core::Kernels) -> Result<Vec<u8>, Error> {
    let aligned = AlignedBuf::from_bytes(blob);
    let model = Model::parse(aligned.as_bytes())?;
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut s = Session::with_kernels(&model, arena.as_mut_bytes(), kernels)?;
    let (_, x) = read_npy_f32(&model_dir("digits").join("x1.npy"));
    s.input(0)?.write_f32(&x)?;
    s.run()?;
    Ok(s.output(0)?.bytes().to_vec())
}

#[test]
fn f32_table_refuses_int8_ops_and_int8_table_runs_them() {
    let int8 = convert_model("digits_qdq", &[]);
    match outputs(&int8, &REFERENCE_F32) {
        Err(Error::KernelMissing { entry, kernels, .. }) => {
            assert_eq!(kernels, "reference-f32");
            assert!(entry.starts_with("quant"), "{entry}");
        }
        other => panic!("expected KernelMissing, got {other:?}"),
    }
    assert_eq!(
        outputs(&int8, &REFERENCE_INT8).unwrap(),
        outputs(&int8, &REFERENCE).unwrap()
    );
    let float = convert_model("digits", &[]);
    assert_eq!(
        outputs(&float, &REFERENCE_F32).unwrap(),
        outputs(&float, &REFERENCE).unwrap()
    );
}

/// `Kernels::only(model.kernel_entries())` keeps exactly what the model runs: the same bytes as the full
/// table, and a table missing any one of those entries is refused, naming that entry.
#[test]
fn a_table_of_the_models_own_entries_runs_it_and_one_entry_less_does_not() {
    for (name, blob) in [
        ("digits", convert_model("digits", &[])),
        ("digits_qdq", convert_model("digits_qdq", &[])),
    ] {
        let aligned = AlignedBuf::from_bytes(&blob);
        let model = Model::parse(aligned.as_bytes()).unwrap();
        let entries = model.kernel_entries().unwrap();
        assert_ne!(entries, 0, "{name}");
        // What parsing found is what the ops say one by one.
        let per_op = (0..model.op_count()).fold(0, |acc, i| acc | model.op_entry(i).unwrap());
        assert_eq!(entries, per_op, "{name}");
        let only: &'static ember_core::Kernels = Box::leak(Box::new(REFERENCE.only(entries)));
        assert_eq!(only.entries, entries, "{name}");
        assert_eq!(
            outputs(&blob, only).unwrap(),
            outputs(&blob, &REFERENCE).unwrap(),
            "{name}"
        );
        for bit in (0..64).map(|b| 1u64 << b).filter(|b| entries & b != 0) {
            let less: &'static ember_core::Kernels =
                Box::leak(Box::new(REFERENCE.only(entries & !bit)));
            match outputs(&blob, less) {
                Err(Error::KernelMissing { entry, .. }) => {
                    assert_eq!(
                        entry,
                        ember_core::kernels::entry::NAMES[bit.trailing_zeros() as usize],
                        "{name}"
                    )
                }
                other => {
                    panic!("{name}: entry {bit:#x} left out, expected KernelMissing, got {other:?}")
                }
            }
        }
    }
}

/// `Model::parse_only::<ENTRIES>` accepts a model whose ops all run through `ENTRIES` and refuses one
/// with an op outside them, naming that op's index.
#[test]
fn parse_only_refuses_ops_outside_its_entries() {
    use ember_core::kernels::{entry, family};
    let float = convert_model("digits", &[]);
    let aligned = AlignedBuf::from_bytes(&float);
    let full = Model::parse(aligned.as_bytes()).unwrap();
    assert!(Model::parse_only::<{ family::F32 }>(aligned.as_bytes()).is_ok());
    let conv = (0..full.op_count())
        .find(|&i| full.op_entry(i).unwrap() == entry::CONV2D)
        .expect("the digits CNN has a Conv2d");
    match Model::parse_only::<{ family::F32 & !entry::CONV2D }>(aligned.as_bytes()) {
        Err(Error::BadOp { op, reason }) => {
            assert_eq!(op as usize, conv);
            assert!(reason.contains("leaves out this op kind"), "{reason}");
        }
        other => panic!("expected BadOp for the Conv2d, got {other:?}"),
    }
    let int8 = convert_model("digits_qdq", &[]);
    let aligned = AlignedBuf::from_bytes(&int8);
    assert!(Model::parse_only::<{ family::F32 }>(aligned.as_bytes()).is_err());
    assert!(Model::parse_only::<{ family::INT8 | family::F32 }>(aligned.as_bytes()).is_ok());
}

/// Every entry bit has a name, and the names are the table's fields in bit order.
#[test]
fn entry_names_follow_the_bits() {
    use ember_core::kernels::{entry, family};
    // Every bit but `WORKSPACE` and `VARIANTS`, which are not kernels (see their docs) and have no
    // table field.
    let kernels = family::ALL & !(entry::WORKSPACE | entry::VARIANTS);
    assert_eq!(entry::NAMES.len() as u32, kernels.count_ones());
    assert_eq!(kernels, (1u64 << entry::NAMES.len()) - 1);
    let names: Vec<&str> =
        entry::names(entry::QUANT_CONV2D | entry::MOVEMENT8 | entry::REQUANTIZE).collect();
    assert_eq!(names, ["movement8", "quant_conv2d", "requantize"]);
}
