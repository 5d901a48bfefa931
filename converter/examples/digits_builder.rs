//! The bundled digits CNN written with the model builder, its weights from a PyTorch checkpoint, no
//! ONNX involved: `cargo run -p ember-convert --example digits_builder -- [CHECKPOINT] [-o OUT.ember]`
//! (default `tests/models/checkpoints/digits_zip.pt`, the `torch.save` zip layout; any checkpoint
//! format Ember reads works, with or without `model.`/`module.` prefixes). Prints the conversion
//! report and writes the blob when asked. `converter/tests/converter/builder.rs` runs [`digits`] and checks
//! the digits goldens.
//!
//! The architecture, as its PyTorch module would say it:
//!
//! ```text
//! conv1 = Conv2d(1, 8, 3, padding=1)   -> relu -> max_pool2d(2)
//! conv2 = Conv2d(8, 16, 3, padding=1)  -> relu -> max_pool2d(2) -> flatten
//! fc1 = Linear(64, 32) -> relu
//! fc2 = Linear(32, 10) -> softmax
//! ```

use ember_convert::build::{Builder, Built, Conv2d};
use ember_convert::ir::DType;
use ember_convert::weights::Checkpoint;
use ember_convert::ConvertError;

/// The digits CNN for `batch` images of `[1, 8, 8]`: input `input`, output `probs` `[batch, 10]`.
pub fn digits(ckpt: &Checkpoint<'_>, batch: usize) -> Result<Built, ConvertError> {
    let mut b = Builder::new(ckpt);
    let x = b.input("input", &[batch, 1, 8, 8], DType::F32);
    let same = Conv2d {
        padding: [1, 1],
        ..Conv2d::default()
    };
    let x = b.conv2d("conv1", x, same)?;
    let x = b.relu("relu1", x)?;
    let x = b.max_pool2d("pool1", x, [2, 2], [2, 2], [0, 0])?;
    let x = b.conv2d("conv2", x, same)?;
    let x = b.relu("relu2", x)?;
    let x = b.max_pool2d("pool2", x, [2, 2], [2, 2], [0, 0])?;
    let x = b.flatten("flatten", x, 1)?;
    let x = b.linear("fc1", x)?;
    let x = b.relu("relu3", x)?;
    let x = b.linear("fc2", x)?;
    let y = b.softmax("softmax", x, -1)?;
    b.output("probs", y);
    b.finish()
}

#[allow(dead_code)]
fn main() {
    let mut args = std::env::args().skip(1);
    let mut ckpt_path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/models/checkpoints/digits_zip.pt"
    )
    .to_string();
    let mut out = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "-o" => out = args.next(),
            _ => ckpt_path = a,
        }
    }
    let result = std::fs::read(&ckpt_path)
        .map_err(|e| format!("{ckpt_path}: {e}"))
        .and_then(|bytes| {
            let ckpt = Checkpoint::parse(&bytes).map_err(|e| e.to_string())?;
            let built = digits(&ckpt, 1).map_err(|e| e.to_string())?;
            for line in built.report.lines() {
                println!("{line}");
            }
            let opts = ember_convert::ConvertOptions::default();
            ember_convert::convert_built(built, &opts, ember_convert::WeightStorage::Float)
                .map_err(|e| e.to_string())
        });
    let converted = match result {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    let r = &converted.report;
    for (name, op) in &r.ops {
        println!("  {name}: {op}");
    }
    println!(
        "blob {} bytes, weights {} bytes, arena {} bytes",
        r.blob_bytes, r.weights_bytes, r.arena.activation_bytes
    );
    if let Some(path) = out {
        if let Err(e) = std::fs::write(&path, &converted.blob) {
            eprintln!("error: {path}: {e}");
            std::process::exit(1);
        }
        println!("wrote {path}");
    }
}
