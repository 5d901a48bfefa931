//! Build-script support shared by the firmware examples in `firmware-examples/`: each example's `build.rs`
//! calls [`link_memory_x`] and one of [`embed_digits`] or [`embed_kws_lengths`], which write into
//! `OUT_DIR`:
//!
//! - `memory.x`, copied from the crate's folder, for the runtime crate's `link.x` (`cortex-m-rt`, `riscv-rt`);
//! - the model ([`embed_model`]): `digits.ember`, copied from `EMBER_DIGITS_MODEL` (default
//!   `target/digits.ember`, which `cargo xtask` writes), or `kws_lengths.ember` from `EMBER_KWS_MODEL`,
//!   checked with `Model::parse`, and in `model.rs` its arena size as `const ARENA_BYTES` and the
//!   kernel-table entries its ops use as `const KERNEL_ENTRIES` (for `Kernels::only`);
//! - the test data: for the digits, `images.rs` with the first `image_count` test images and labels from
//!   `tests/models/digits/{x,labels}.npy`, as `IMAGES: [[f32; 64]; N]` and `LABELS: [u8; N]`; for the
//!   keyword model at three lengths, `inputs.rs` with `UTTERANCES: [(u32, &[f32]); 3]` (frames, features)
//!   from `tests/models/kws/lengths/x{25,49,97}.npy`.
//!
//! Errors are messages for the person running the build, who may not have converted the model yet.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// Pixels per image (1 x 8 x 8).
const PIXELS: usize = 64;

/// The firmware crate's folder (`CARGO_MANIFEST_DIR`) and the build's `OUT_DIR`.
fn dirs() -> Result<(PathBuf, PathBuf), String> {
    let manifest =
        env::var("CARGO_MANIFEST_DIR").map_err(|e| format!("CARGO_MANIFEST_DIR: {e}"))?;
    let out = env::var("OUT_DIR").map_err(|e| format!("OUT_DIR: {e}"))?;
    Ok((PathBuf::from(manifest), PathBuf::from(out)))
}

/// Passes `args` to the linker for the crate's binaries (`-Tlink.x`, `--icf=all`, ...).
///
/// They live in the build script rather than in `.cargo/config.toml`'s `rustflags`: rustflags are part
/// of every dependency's build, so crates with different link scripts could not share one target
/// directory, and `cargo xtask` builds every firmware example in one shared directory.
pub fn link_args(args: &[&str]) {
    for arg in args {
        println!("cargo:rustc-link-arg-bins={arg}");
    }
}

/// The whole build script of a firmware crate: passes `args` to the linker ([`link_args`]), then runs
/// `steps` (such as [`link_memory_x`] and [`embed_digits`]) in order; the first error ends the build
/// with its message and exit status 1.
pub fn build_firmware(args: &[&str], steps: &[&dyn Fn() -> Result<(), String>]) {
    link_args(args);
    for step in steps {
        if let Err(e) = step() {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}

/// [`build_firmware`] for a digits firmware: `memory.x` and the model with its first `image_count`
/// test images.
pub fn build_digits_firmware(args: &[&str], image_count: usize) {
    build_firmware(
        args,
        &[&link_memory_x, &|| embed_digits(image_count).map(drop)],
    );
}

/// Copies the crate's `memory.x` into `OUT_DIR` and puts `OUT_DIR` on the linker's search path.
pub fn link_memory_x() -> Result<(), String> {
    let (manifest, out) = dirs()?;
    fs::copy(manifest.join("memory.x"), out.join("memory.x"))
        .map_err(|e| format!("memory.x: {e}"))?;
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=memory.x");
    Ok(())
}

/// Copies the blob that the environment variable `var` names (default: `target/<file>` in the crate's
/// folder) into `OUT_DIR` as `<file>`, checked with `Model::parse`, and writes `model.rs` with its
/// `ARENA_BYTES` and `KERNEL_ENTRIES`; `make` is the command that converts it, for the error when it is
/// missing. Returns the model's arena bytes.
pub fn embed_model(var: &str, file: &str, make: &str) -> Result<usize, String> {
    let (manifest, out) = dirs()?;
    println!("cargo:rerun-if-env-changed={var}");
    let model_path = env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest.join("target").join(file));
    println!("cargo:rerun-if-changed={}", model_path.display());
    let blob = fs::read(&model_path).map_err(|e| {
        format!(
            "cannot read the model {} ({e}).\n  Make it with `cargo xtask` from the repository root, or by hand:\n  \
             cargo run -p ember-cli -- convert {make} -o {}",
            model_path.display(),
            model_path.display()
        )
    })?;
    let aligned = ember_core::AlignedBuf::from_bytes(&blob);
    let model = ember_core::Model::parse(aligned.as_bytes())
        .map_err(|e| format!("{} is not a valid Ember blob: {e}", model_path.display()))?;
    fs::write(out.join(file), &blob).map_err(|e| e.to_string())?;
    let arena_bytes = model.arena_bytes() + 15;
    let entries = model
        .build_entries()
        .map_err(|e| format!("{}: {e}", model_path.display()))?;
    let model_rs = format!(
        "/// Arena bytes the model plans, plus up to 15 bytes to align the arena's start.\n\
         pub const ARENA_BYTES: usize = {arena_bytes};\n\
         /// The kernel-table entries the model's ops use (`Kernels::only` keeps just these), and its\n\
         /// shape variants' bit where it has several.\n\
         pub const KERNEL_ENTRIES: u64 = {entries:#x};\n"
    );
    fs::write(out.join("model.rs"), model_rs).map_err(|e| e.to_string())?;
    Ok(arena_bytes)
}

/// Embeds the digits model (`digits.ember`, `model.rs`, see [`embed_model`]) and its first
/// `image_count` test images (`images.rs`) in `OUT_DIR`; returns the model's arena bytes.
pub fn embed_digits(image_count: usize) -> Result<usize, String> {
    let (manifest, out) = dirs()?;
    let data = manifest.join("../../tests/models/digits");
    let arena_bytes = embed_model(
        "EMBER_DIGITS_MODEL",
        "digits.ember",
        "tests/models/digits/model.onnx",
    )?;

    // The test images and labels.
    let (x_shape, x) = read_npy(&data.join("x.npy"), "<f4")?;
    let (l_shape, labels) = read_npy(&data.join("labels.npy"), "<i8")?;
    if x_shape.len() != 4
        || x_shape[1..] != [1, 8, 8]
        || x_shape[0] < image_count
        || l_shape.first().is_none_or(|&n| n < image_count)
    {
        return Err(format!(
            "expected x.npy [N,1,8,8] and labels.npy [N] with N >= {image_count}, got {x_shape:?} and {l_shape:?}"
        ));
    }
    // (`write!` into a `String` cannot fail: the `unwrap`s below never panic.)
    let mut src = String::new();
    writeln!(src, "/// Test images, row-major 8x8 pixels in [0, 1].").unwrap();
    writeln!(
        src,
        "pub static IMAGES: [[f32; {PIXELS}]; {image_count}] = ["
    )
    .unwrap();
    for image in x.chunks_exact(4 * PIXELS).take(image_count) {
        src.push('[');
        for px in image.chunks_exact(4) {
            let v = f32::from_le_bytes([px[0], px[1], px[2], px[3]]);
            write!(src, "{v:?},").unwrap();
        }
        src.push_str("],\n");
    }
    src.push_str("];\n");
    writeln!(src, "/// The digit each image shows.").unwrap();
    writeln!(src, "pub static LABELS: [u8; {image_count}] = [").unwrap();
    for l in labels.chunks_exact(8).take(image_count) {
        // `chunks_exact(8)` yields 8-byte slices: the conversion cannot fail.
        let v = i64::from_le_bytes(l.try_into().unwrap());
        let digit = u8::try_from(v).map_err(|_| format!("label {v} is not a digit"))?;
        write!(src, "{digit},").unwrap();
    }
    src.push_str("];\n");
    fs::write(out.join("images.rs"), src).map_err(|e| e.to_string())?;
    println!("cargo:rerun-if-changed={}", data.join("x.npy").display());
    println!(
        "cargo:rerun-if-changed={}",
        data.join("labels.npy").display()
    );
    Ok(arena_bytes)
}

/// The frame counts of the keyword model's test utterances (`tests/models/kws/lengths/`).
const KWS_LENGTHS: [u32; 3] = [25, 49, 97];
/// Feature rows per frame (mel bins) of the keyword model.
const KWS_MELS: usize = 10;

/// Embeds the keyword model converted for three input lengths (`kws_lengths.ember` from
/// `EMBER_KWS_MODEL`, `model.rs`, see [`embed_model`]) and one test utterance per length (`inputs.rs`:
/// `UTTERANCES`, frames and features, from `tests/models/kws/lengths/x<frames>.npy`); returns the
/// model's arena bytes.
pub fn embed_kws_lengths() -> Result<usize, String> {
    let (manifest, out) = dirs()?;
    let data = manifest.join("../../tests/models/kws/lengths");
    let arena_bytes = embed_model(
        "EMBER_KWS_MODEL",
        "kws_lengths.ember",
        "tests/models/kws/lengths/model.onnx --dim T=25,49,97 --shape input=1,10,T",
    )?;
    let mut src = String::new();
    let mut table = String::new();
    for frames in KWS_LENGTHS {
        let path = data.join(format!("x{frames}.npy"));
        let (shape, x) = read_npy(&path, "<f4")?;
        if shape != [1, KWS_MELS, frames as usize] {
            return Err(format!(
                "{}: expected shape [1, {KWS_MELS}, {frames}], got {shape:?}",
                path.display()
            ));
        }
        // (`write!` into a `String` cannot fail: the `unwrap`s below never panic.)
        write!(src, "static X{frames}: [f32; {}] = [", x.len() / 4).unwrap();
        for v in x.chunks_exact(4) {
            write!(src, "{:?},", f32::from_le_bytes([v[0], v[1], v[2], v[3]])).unwrap();
        }
        src.push_str("];\n");
        write!(table, "({frames}, &X{frames}), ").unwrap();
        println!("cargo:rerun-if-changed={}", path.display());
    }
    writeln!(
        src,
        "/// The test utterances: frames, then the features, row-major [1, {KWS_MELS}, frames].\n\
         pub static UTTERANCES: [(u32, &[f32]); {}] = [{table}];",
        KWS_LENGTHS.len()
    )
    .unwrap();
    fs::write(out.join("inputs.rs"), src).map_err(|e| e.to_string())?;
    Ok(arena_bytes)
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
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
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
