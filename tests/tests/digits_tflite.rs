//! A TFLM user's file as it is: `tests/models/digits_tflite/model.tflite` (the int8 digits CNN that
//! `tests/tflm/digits.py` writes as a full-int8 `.tflite`) converted by `ember convert`'s TFLite reader
//! with TFLite's double rounding (the CLI's default for a `.tflite`), then run on each of the 360 test
//! images, int8 in and int8 out, on the reference kernels and on `ember-cpu` at this CPU's level.
//! Every output byte must be TFLM's (`tflm_q.npy`, from TFLM's Python interpreter on the same file).

use std::path::PathBuf;

use ember_convert::{convert, ConvertOptions, RequantRounding};
use ember_core::{AlignedBuf, DType, Model, Session};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("models/digits_tflite")
}

fn read_i8(file: &str) -> (Vec<usize>, Vec<i8>) {
    let bytes = std::fs::read(dir().join(file)).expect("the file is in the repository");
    let npy = npyz::NpyFile::new(&bytes[..]).expect("a valid .npy");
    let shape = npy.shape().iter().map(|&d| d as usize).collect();
    (shape, npy.into_vec::<i8>().expect("int8 values"))
}

#[test]
fn the_digits_tflite_gives_tflms_bytes_on_every_test_image() {
    let bytes = std::fs::read(dir().join("model.tflite")).expect("the model is in the repository");
    let opts = ConvertOptions {
        rounding: RequantRounding::Double,
        ..ConvertOptions::default()
    };
    let converted = convert(&bytes, &opts).expect("the .tflite converts");
    let blob = AlignedBuf::from_bytes(&converted.blob);
    let model = Model::parse(blob.as_bytes()).expect("the blob parses");
    let (xs, x) = read_i8("x_q.npy");
    let (ys, want) = read_i8("tflm_q.npy");
    let (images, per_image, classes) = (xs[0], x.len() / xs[0], ys[1]);
    assert_eq!(images, 360);

    let cpu = ember_cpu::Cpu::new(1).expect("the host CPU");
    let mut ref_arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut reference = Session::new(&model, ref_arena.as_mut_bytes()).expect("opens");
    let mut cpu_arena = AlignedBuf::zeroed(cpu.arena_bytes(&model).expect("sized"));
    let mut fast = cpu
        .session(&model, cpu_arena.as_mut_bytes())
        .expect("opens");
    for (name, s) in [("reference", &mut reference), ("ember-cpu", &mut fast)] {
        let mut differing = 0;
        for i in 0..images {
            let mut input = s.input(0).unwrap();
            assert_eq!(input.dtype(), DType::I8, "the file's int8 input stays int8");
            let image = &x[i * per_image..(i + 1) * per_image];
            input
                .bytes_mut()
                .iter_mut()
                .zip(image)
                .for_each(|(b, &v)| *b = v as u8);
            s.run().expect("runs");
            let out = s.output(0).unwrap();
            assert_eq!(out.dtype(), DType::I8, "the file's int8 output stays int8");
            let row = &want[i * classes..(i + 1) * classes];
            differing += out
                .bytes()
                .iter()
                .zip(row)
                .filter(|(&a, &b)| a as i8 != b)
                .count();
        }
        println!(
            "{name}: {differing} of {} output values differ from TFLM's",
            images * classes
        );
        assert_eq!(differing, 0, "{name}: Ember's bytes are not TFLM's");
    }
}
