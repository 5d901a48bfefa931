//! Limits and failure behaviour: one parsed `Model` serves sessions on several threads at once (each
//! thread's outputs are those of a single-threaded run, bit for bit), and a session whose run fails
//! stays usable (the next run with good inputs gives what a fresh session gives).

use ember_convert::onnx::proto::{
    data_type, Dimension, DimensionValue, GraphProto, ModelProto, NodeProto, OperatorSetIdProto,
    TensorProto, TensorShapeProto, TypeProto, TypeProtoTensor, TypeValue, ValueInfoProto,
};
use ember_core::{AlignedBuf, Error, Model, Session};
use ember_cpu::{Cpu, Isa};
use ember_tests::{convert_model, model_dir, read_npy_f32};
use prost::Message;

const fn send_and_sync<T: Send + Sync>() {}
const _: () = send_and_sync::<Model<'static>>();

/// The outputs of `model` on each sample, through the reference kernels (`cpu: None`) or an
/// ember-cpu table at `isa` on one thread.
fn outputs(model: &Model<'_>, samples: &[&[f32]], isa: Option<Isa>) -> Vec<Vec<u8>> {
    let run_all = |s: &mut Session<'_>| {
        samples
            .iter()
            .map(|x| {
                s.input(0).unwrap().write_f32(x).unwrap();
                s.run().unwrap();
                s.output(0).unwrap().bytes().to_vec()
            })
            .collect()
    };
    match isa {
        None => {
            let mut arena = AlignedBuf::zeroed(model.arena_bytes());
            run_all(&mut Session::new(model, arena.as_mut_bytes()).unwrap())
        }
        Some(isa) => {
            let cpu = Cpu::with_isa(isa, 1).unwrap();
            let mut arena = AlignedBuf::zeroed(cpu.arena_bytes(model).unwrap());
            run_all(&mut cpu.session(model, arena.as_mut_bytes()).unwrap())
        }
    }
}

#[test]
fn one_model_serves_sessions_on_eight_threads() {
    for (name, input) in [("digits", "input"), ("dscnn", "input"), ("kws", "input")] {
        let (shape, x) = read_npy_f32(&model_dir(name).join("x.npy"));
        let per = x.len() / shape[0];
        let mut one = shape.clone();
        one[0] = 1;
        let blob = AlignedBuf::from_bytes(&convert_model(name, &[(input, &one)]));
        let model = Model::parse(blob.as_bytes()).unwrap();
        let samples: Vec<&[f32]> = x.chunks(per).take(24).collect();
        let isa = Isa::detect().unwrap();
        let want = [
            outputs(&model, &samples, None),
            outputs(&model, &samples, Some(isa)),
        ];
        let model = &model;
        std::thread::scope(|scope| {
            let threads: Vec<_> = (0..8)
                .map(|t| {
                    let samples = &samples;
                    scope.spawn(move || {
                        // Each thread starts at another sample, so that the threads run different
                        // inputs at the same time; even threads on the reference, odd on ember-cpu.
                        let mut order: Vec<&[f32]> = samples.to_vec();
                        order.rotate_left(t * 3 % samples.len());
                        let kernels = if t % 2 == 0 { None } else { Some(isa) };
                        let mut got = outputs(model, &order, kernels);
                        got.rotate_right(t * 3 % samples.len());
                        (t, got)
                    })
                })
                .collect();
            for h in threads {
                let (t, got) = h.join().expect("no thread panics");
                assert!(
                    got == want[t % 2],
                    "{name}: thread {t} differs from a single-threaded run"
                );
            }
        });
    }
}

fn value_info(name: &str, elem: i32, dims: &[i64]) -> ValueInfoProto {
    let dim = dims
        .iter()
        .map(|&d| Dimension {
            value: Some(DimensionValue::DimValue(d)),
            ..Default::default()
        })
        .collect();
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            value: Some(TypeValue::TensorType(TypeProtoTensor {
                elem_type: elem,
                shape: Some(TensorShapeProto { dim }),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// `y = Gather(table, ids)`: a 4x3 table of constants, 2 run-time INT64 ids.
fn gather_model() -> Vec<u8> {
    let table: Vec<f32> = (0..12).map(|i| i as f32 * 0.5 - 1.0).collect();
    let graph = GraphProto {
        name: "gather".into(),
        node: vec![NodeProto {
            input: vec!["table".into(), "ids".into()],
            output: vec!["y".into()],
            name: "lookup".into(),
            op_type: "Gather".into(),
            ..Default::default()
        }],
        initializer: vec![TensorProto {
            dims: vec![4, 3],
            data_type: data_type::FLOAT,
            float_data: table,
            name: "table".into(),
            ..Default::default()
        }],
        input: vec![value_info("ids", data_type::INT64, &[2])],
        output: vec![value_info("y", data_type::FLOAT, &[2, 3])],
        ..Default::default()
    };
    ModelProto {
        ir_version: 8,
        opset_import: vec![OperatorSetIdProto {
            domain: String::new(),
            version: 13,
        }],
        graph: Some(graph),
        ..Default::default()
    }
    .encode_to_vec()
}

#[test]
fn a_session_whose_run_fails_stays_usable() {
    let converted =
        ember_convert::convert(&gather_model(), &ember_convert::ConvertOptions::default()).unwrap();
    let blob = AlignedBuf::from_bytes(&converted.blob);
    let model = Model::parse(blob.as_bytes()).unwrap();
    let mut arena = AlignedBuf::zeroed(model.arena_bytes());
    let mut s = Session::new(&model, arena.as_mut_bytes()).unwrap();
    let run = |s: &mut Session<'_>, ids: [i64; 2]| -> Result<Vec<f32>, Error> {
        s.input(0)?.as_mut_slice::<i64>()?.copy_from_slice(&ids);
        s.run()?;
        Ok(s.output(0)?.as_f32()?.to_vec())
    };
    // Row r of the table is r*1.5 - 1 + [0, 0.5, 1].
    let row = |r: i64| (0..3).map(move |c| (r * 3 + c) as f32 * 0.5 - 1.0);
    let want: Vec<f32> = row(3).chain(row(1)).collect();
    assert_eq!(run(&mut s, [3, 1]).unwrap(), want);
    for bad in [[4, 0], [0, -5], [i64::MAX, 1], [i64::MIN, 2]] {
        let e = run(&mut s, bad).expect_err("an id outside the table's 4 rows is an error");
        assert!(format!("{e}").contains("outside its table"), "{bad:?}: {e}");
    }
    // The same session, after four failed runs: the right rows again (a negative id counts from the end).
    assert_eq!(run(&mut s, [3, 1]).unwrap(), want);
    let want: Vec<f32> = row(0).chain(row(3)).collect();
    assert_eq!(run(&mut s, [0, -1]).unwrap(), want);
}
