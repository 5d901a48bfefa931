//! The importer of ONNX RNN, GRU and LSTM: what it refuses, with the attribute or input named, and the
//! zeros it writes for an absent bias or initial hidden state that comes before a given input.

use crate::common;

use common::{attr_i, convert_err, fixed, floats, ints, model, node, pseudo_random, unshaped};
use ember_convert::onnx::proto::{attribute_type, AttributeProto, TensorProto};
use ember_convert::{convert, ConvertOptions};
use ember_testkit::model::run_outputs;

const SEQ: usize = 3;
const BATCH: usize = 2;
const INPUT: usize = 2;
const HIDDEN: usize = 2;

fn attr_strings(name: &str, v: &[&str]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        r#type: attribute_type::STRINGS,
        strings: v.iter().map(|s| s.as_bytes().to_vec()).collect(),
        ..AttributeProto::default()
    }
}

/// A one-LSTM model (forward) over `x` `[SEQ, BATCH, INPUT]` with the node's `inputs` (after `x, w,
/// r`), extra initializers and attributes; outputs `y, y_h, y_c`.
fn lstm(inputs: &[&str], extra: Vec<TensorProto>, attrs: Vec<AttributeProto>) -> Vec<u8> {
    let rows = 4 * HIDDEN;
    let mut inits = vec![
        floats(
            "w",
            &[1, rows as i64, INPUT as i64],
            &pseudo_random(rows * INPUT, 1),
        ),
        floats(
            "r",
            &[1, rows as i64, HIDDEN as i64],
            &pseudo_random(rows * HIDDEN, 2),
        ),
    ];
    inits.extend(extra);
    let mut names = vec!["x", "w", "r"];
    names.extend_from_slice(inputs);
    let n = node("LSTM", "lstm", &names, &["y", "y_h", "y_c"], attrs);
    let x = fixed("x", &[SEQ as i64, BATCH as i64, INPUT as i64]);
    let outs = vec![unshaped("y"), unshaped("y_h"), unshaped("y_c")];
    model(14, vec![n], vec![x], outs, inits)
}

#[test]
fn refuses_other_activations_naming_them() {
    let bytes = lstm(
        &[],
        vec![],
        vec![attr_strings("activations", &["Relu", "Tanh", "Tanh"])],
    );
    let e = convert_err(&bytes);
    assert!(
        e.contains("activations") && e.contains("Relu") && e.contains("lstm"),
        "{e}"
    );
}

#[test]
fn accepts_the_default_activations_spelled_out() {
    let acts = attr_strings("activations", &["Sigmoid", "Tanh", "Tanh"]);
    convert(&lstm(&[], vec![], vec![acts]), &ConvertOptions::default()).unwrap();
}

#[test]
fn refuses_input_forget() {
    let e = convert_err(&lstm(&[], vec![], vec![attr_i("input_forget", 1)]));
    assert!(e.contains("input_forget"), "{e}");
}

#[test]
fn refuses_a_sequence_length_shorter_than_the_sequence() {
    let lens = ints("lens", &[SEQ as i64, 1]);
    let e = convert_err(&lstm(&["", "lens"], vec![lens], vec![]));
    assert!(e.contains("sequence_lens") && e.contains("[3, 1]"), "{e}");
    // The full length for every row is the same as no sequence_lens.
    let lens = ints("lens", &[SEQ as i64; BATCH]);
    convert(
        &lstm(&["", "lens"], vec![lens], vec![]),
        &ConvertOptions::default(),
    )
    .unwrap();
}

/// An initial cell state alone (no bias, no initial hidden state) runs as with both given as zeros.
#[test]
fn absent_bias_and_hidden_state_before_a_cell_state_are_zeros() {
    let state = [1, BATCH as i64, HIDDEN as i64];
    let c0 = pseudo_random(BATCH * HIDDEN, 3);
    let given = lstm(&["", "", "", "c0"], vec![floats("c0", &state, &c0)], vec![]);
    let zeros = lstm(
        &["b", "", "h0", "c0"],
        vec![
            floats("b", &[1, 8 * HIDDEN as i64], &[0.0; 8 * HIDDEN]),
            floats("h0", &state, &[0.0; BATCH * HIDDEN]),
            floats("c0", &state, &c0),
        ],
        vec![],
    );
    let x = pseudo_random(SEQ * BATCH * INPUT, 4);
    let run = |bytes: &[u8]| {
        let c = convert(bytes, &ConvertOptions::default()).unwrap_or_else(|e| panic!("{e}"));
        run_outputs(&c.blob, &x)
    };
    let (a, b) = (run(&given), run(&zeros));
    assert_eq!(a.len(), 3);
    assert_eq!(a, b);
    assert_eq!(a[2].1, [1, BATCH, HIDDEN], "y_c dims");
}
