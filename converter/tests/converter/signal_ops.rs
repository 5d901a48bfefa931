//! Signal ops against independent goldens: the models made by `tests/models/ops/signal_cases.py`
//! (STFT of one second at 16 kHz in frames of 512 and of 400 samples, goldens from numpy's float64
//! FFT; Pad with negative pads in every mode, golden onnxruntime's) are converted, run through an
//! ember-core `Session`, and compared within `rtol` of the output's largest value.

use crate::common;

use common::golden::*;

/// 512-sample frames: the radix-2 FFT of 256 complex points, unpacked into 257 one-sided bins.
#[test]
fn stft_of_power_of_two_frames() {
    let c = check_case_within("stft_512", 1e-5);
    // The window is folded into a constant; the STFT is one op.
    assert_eq!(op_names(&c), ["Reshape", "Dft"]);
}

/// Whisper's 400-sample frames: a mixed-radix FFT (200 = 2^3 5^2 complex points).
#[test]
fn stft_of_mixed_radix_frames() {
    check_case_within("stft_400", 1e-5);
}

/// Negative pads crop before the positive ones pad, in constant, reflect, edge and wrap modes.
#[test]
fn pad_with_negative_pads_crops() {
    let c = check_case("pad_negative");
    assert!(op_names(&c).contains(&"Slice"), "{:?}", op_names(&c));
}
