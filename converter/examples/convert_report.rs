//! Converts an ONNX file and prints the report: `cargo run -p ember-convert --example convert_report
//! -- model.onnx [NAME=d0,d1,...]...`.

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: convert_report MODEL.onnx [NAME=d0,d1,...]...");
        std::process::exit(2);
    };
    let mut opts = ember_convert::ConvertOptions::default();
    for a in args {
        match ember_convert::ConvertOptions::parse_shape(&a) {
            Ok(s) => opts.shapes.push(s),
            Err(e) => {
                eprintln!("{e}");
                std::process::exit(2);
            }
        }
    }
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{path}: {e}");
            std::process::exit(1);
        }
    };
    match ember_convert::convert(&bytes, &opts) {
        Ok(c) => {
            let r = &c.report;
            for n in &r.notices {
                println!("notice: {n}");
            }
            println!("inputs:  {:?}", r.inputs);
            println!("outputs: {:?}", r.outputs);
            for (i, (node, op)) in r.ops.iter().enumerate() {
                println!("  op {i:3}  {op:16} {node}");
            }
            println!("arena:   {:?}", r.arena);
            println!(
                "weights: {} bytes, blob: {} bytes",
                r.weights_bytes, r.blob_bytes
            );
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
