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
        Err(Error::KernelMissing { name, kernels, .. }) => {
            assert_eq!(kernels, "reference-f32");
            assert!(name.starts_with("Quant"), "{name}");
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
