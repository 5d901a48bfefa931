//! Prepares what the firmware embeds, all in `OUT_DIR`:
//!
//! - `memory.x` for `cortex-m-rt`'s `link.x`;
//! - `digits.ember`, copied from `EMBER_DIGITS_MODEL` (default `target/digits.ember`, which `cargo xtask`
//!   writes), checked with `Model::parse`, and its arena size as the `const ARENA_BYTES` in `model.rs`;
//! - `images.rs`: the digits test images and labels from `tests/models/digits/{x,labels}.npy`.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// How many test images the firmware carries (all of `x.npy`: 360 x 256 B = 92 KB of flash).
const IMAGE_COUNT: usize = 360;
/// Pixels per image (1 x 8 x 8).
const PIXELS: usize = 64;

fn main() {
    if let Err(e) = run() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), String> {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").map_err(|e| e.to_string())?);
    let out = PathBuf::from(env::var("OUT_DIR").map_err(|e| e.to_string())?);
    let root = manifest.join("../..");
    let data = root.join("tests/models/digits");

    fs::copy(manifest.join("memory.x"), out.join("memory.x"))
        .map_err(|e| format!("memory.x: {e}"))?;
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");

    // The model.
    println!("cargo:rerun-if-env-changed=EMBER_DIGITS_MODEL");
    let model_path = env::var_os("EMBER_DIGITS_MODEL")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("target/digits.ember"));
    println!("cargo:rerun-if-changed={}", model_path.display());
    let blob = fs::read(&model_path).map_err(|e| {
        format!(
            "cannot read the model {} ({e}).\n  Make it with `cargo xtask` from the repository root, or by hand:\n  \
             cargo run -p ember-cli -- convert tests/models/digits/model.onnx -o {}",
            model_path.display(),
            model_path.display()
        )
    })?;
    let aligned = ember_core::AlignedBuf::from_bytes(&blob);
    let model = ember_core::Model::parse(aligned.as_bytes())
        .map_err(|e| format!("{} is not a valid Ember blob: {e}", model_path.display()))?;
    fs::write(out.join("digits.ember"), &blob).map_err(|e| e.to_string())?;
    let model_rs = format!(
        "/// Arena bytes the model plans, plus up to 15 bytes to align the arena's start.\n\
         pub const ARENA_BYTES: usize = {};\n",
        model.arena_bytes() + 15
    );
    fs::write(out.join("model.rs"), model_rs).map_err(|e| e.to_string())?;

    // The test images and labels.
    let (x_shape, x) = read_npy(&data.join("x.npy"), "<f4")?;
    let (l_shape, labels) = read_npy(&data.join("labels.npy"), "<i8")?;
    if x_shape.len() != 4
        || x_shape[1..] != [1, 8, 8]
        || x_shape[0] < IMAGE_COUNT
        || l_shape[0] < IMAGE_COUNT
    {
        return Err(format!("expected x.npy [N,1,8,8] and labels.npy [N] with N >= {IMAGE_COUNT}, got {x_shape:?} and {l_shape:?}"));
    }
    // (`write!` into a `String` cannot fail: the `unwrap`s below never panic.)
    let mut src = String::new();
    writeln!(src, "/// Test images, row-major 8x8 pixels in [0, 1].").unwrap();
    writeln!(
        src,
        "pub static IMAGES: [[f32; {PIXELS}]; {IMAGE_COUNT}] = ["
    )
    .unwrap();
    for image in x.chunks_exact(4 * PIXELS).take(IMAGE_COUNT) {
        src.push('[');
        for px in image.chunks_exact(4) {
            let v = f32::from_le_bytes([px[0], px[1], px[2], px[3]]);
            write!(src, "{v:?},").unwrap();
        }
        src.push_str("],\n");
    }
    src.push_str("];\n");
    writeln!(src, "/// The digit each image shows.").unwrap();
    writeln!(src, "pub static LABELS: [u8; {IMAGE_COUNT}] = [").unwrap();
    for l in labels.chunks_exact(8).take(IMAGE_COUNT) {
        let v = i64::from_le_bytes(l.try_into().unwrap());
        write!(
            src,
            "{},",
            u8::try_from(v).map_err(|_| format!("label {v} is not a digit"))?
        )
        .unwrap();
    }
    src.push_str("];\n");
    fs::write(out.join("images.rs"), src).map_err(|e| e.to_string())?;
    println!("cargo:rerun-if-changed={}", data.join("x.npy").display());
    println!(
        "cargo:rerun-if-changed={}",
        data.join("labels.npy").display()
    );
    Ok(())
}

/// Reads a C-order `.npy` file whose dtype is `descr`; returns its shape and raw little-endian data.
fn read_npy(path: &Path, descr: &str) -> Result<(Vec<usize>, Vec<u8>), String> {
    let bytes = fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let bad = |why: &str| format!("{}: {why}", path.display());
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        return Err(bad("not a .npy file"));
    }
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize,
            12,
        ),
        _ => return Err(bad("unsupported .npy version")),
    };
    let header = bytes
        .get(start..start + header_len)
        .and_then(|h| std::str::from_utf8(h).ok())
        .ok_or_else(|| bad("truncated header"))?;
    if !header.contains(&format!("'descr': '{descr}'"))
        || !header.contains("'fortran_order': False")
    {
        return Err(bad(&format!(
            "expected dtype {descr} in C order, header is {header}"
        )));
    }
    let shape_src = header
        .split("'shape': (")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| bad("no shape in header"))?;
    let shape = shape_src
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>().map_err(|_| bad("bad shape")))
        .collect::<Result<Vec<_>, _>>()?;
    let elem = if descr.ends_with('8') { 8 } else { 4 };
    let data = bytes[start + header_len..].to_vec();
    if data.len() != shape.iter().product::<usize>() * elem {
        return Err(bad("data length does not match the shape"));
    }
    Ok((shape, data))
}
