//! `ember convert --emit rust|object`: what firmware links. The arena size is enforced by the compiler: an
//! arena one byte smaller than `ARENA_BYTES` does not compile (a compile-fail test with a real crate).

mod common;

use std::path::Path;
use std::process::{Command, Output};

use common::{convert, ember, model, ok_text, scratch_dir, text};

use object::{Object, ObjectSection, ObjectSymbol};

fn digits() -> String {
    model("digits/model.onnx")
}

/// Writes a binary crate that uses the generated module with an arena of `ARENA_BYTES - short` bytes and
/// runs `cargo check` on it.
fn check_firmware_like_crate(dir: &Path, short: usize) -> Output {
    let core = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../core")
        .canonicalize()
        .unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"arena-check\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[workspace]\n\n\
             [dependencies]\nember-core = {{ path = {:?}, default-features = false }}\n",
            core.to_string_lossy()
        ),
    )
    .unwrap();
    let size = if short == 0 {
        "model::ARENA_BYTES".to_string()
    } else {
        format!("model::ARENA_BYTES - {short}")
    };
    std::fs::write(
        dir.join("src/main.rs"),
        format!(
            "mod model;\n\nstatic KERNELS: ember_core::Kernels = \
             ember_core::REFERENCE.only(model::KERNEL_ENTRIES);\n\n\
             fn main() {{\n    let model = model::model().expect(\"blob\");\n    \
             assert_eq!(KERNELS.entries, model::KERNEL_ENTRIES);\n    \
             let mut arena = ember_core::AlignedBytes([0u8; {size}]);\n    \
             let session = model::session(&model, &mut arena);\n    assert!(session.is_ok());\n}}\n"
        ),
    )
    .unwrap();
    // A target folder shared by both checks, so ember-core's dependencies are checked once.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("arena-check-target");
    Command::new(env!("CARGO"))
        .args(["check", "--quiet", "--offline"])
        .current_dir(dir)
        .env("CARGO_TARGET_DIR", target)
        .env_remove("RUSTFLAGS")
        // A user's crate, checked as a user's `cargo check` does: not linted by the clippy wrapper CI
        // builds Ember itself with (xtask/src/clippy.rs).
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CLIPPY_ARGS")
        .output()
        .expect("cargo starts")
}

#[test]
fn emit_rust_enforces_the_arena_size_at_compile_time() {
    for (short, name) in [(0usize, "arena-exact"), (1, "arena-short")] {
        let dir = scratch_dir(name);
        std::fs::create_dir_all(dir.join("src")).unwrap();
        let module = dir.join("src/model.rs");
        let out = convert(&digits(), &module, &["--emit", "rust"]);
        ok_text(&out);
        let generated = std::fs::read_to_string(&module).unwrap();
        assert!(
            generated.contains("pub const ARENA_BYTES: usize = 2560;"),
            "{generated}"
        );
        let blob = std::fs::read(dir.join("src/model.ember")).unwrap();
        let aligned = ember_core::AlignedBuf::from_bytes(&blob);
        let entries = ember_core::Model::parse(aligned.as_bytes())
            .unwrap()
            .kernel_entries()
            .unwrap();
        assert!(
            generated.contains(&format!("pub const KERNEL_ENTRIES: u64 = {entries:#x};")),
            "{generated}"
        );
        let out = check_firmware_like_crate(&dir, short);
        if short == 0 {
            assert!(
                out.status.success(),
                "the exact arena must compile:\n{}",
                text(&out)
            );
        } else {
            assert!(!out.status.success(), "an arena one byte short compiled");
            assert!(text(&out).contains("mismatched types"), "{}", text(&out));
        }
    }
}

#[test]
fn emit_object_writes_an_arm_hard_float_relocatable_with_the_blob() {
    let dir = scratch_dir("emit-object");
    let obj_path = dir.join("digits.o");
    let out = convert(
        &digits(),
        &obj_path,
        &["--emit", "object", "--target-arch", "thumbv7em"],
    );
    ok_text(&out);
    let blob_out = dir.join("digits.ember");
    assert!(
        ember(&["convert", &digits(), "-o", blob_out.to_str().unwrap()])
            .status
            .success()
    );
    let blob = std::fs::read(&blob_out).unwrap();

    let bytes = std::fs::read(&obj_path).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    assert_eq!(file.architecture(), object::Architecture::Arm);
    assert_eq!(file.kind(), object::ObjectKind::Relocatable);
    match file.flags() {
        object::FileFlags::Elf { e_flags, .. } => {
            assert_eq!(
                e_flags & object::elf::EF_ARM_EABIMASK,
                object::elf::EF_ARM_EABI_VER5
            );
            assert_ne!(e_flags & object::elf::EF_ARM_ABI_FLOAT_HARD, 0);
        }
        other => panic!("not ELF flags: {other:?}"),
    }
    let section = file
        .section_by_name(".ember.model")
        .expect(".ember.model section");
    assert_eq!(section.align(), 16);
    assert_eq!(section.data().unwrap(), blob.as_slice());
    let sym = file
        .symbols()
        .find(|s| s.name() == Ok("ember_model"))
        .expect("ember_model symbol");
    assert!(sym.is_global());
    assert_eq!(sym.size(), blob.len() as u64);
    assert!(file.symbols().any(|s| s.name() == Ok("ember_model_end")));

    let script = std::fs::read_to_string(dir.join("digits.x")).unwrap();
    assert!(
        script.contains("KEEP(*(.ember.model")
            && script.contains("> FLASH")
            && script.contains("INSERT AFTER .rodata")
    );
    let glue = std::fs::read_to_string(dir.join("digits.rs")).unwrap();
    assert!(glue.contains("pub const ARENA_BYTES: usize = 2560;") && glue.contains("SAFETY"));
}

#[test]
fn an_unknown_target_arch_is_a_clear_error() {
    let dir = scratch_dir("emit-bad-arch");
    let out = ember(&[
        "convert",
        &digits(),
        "-o",
        dir.join("m.o").to_str().unwrap(),
        "--emit",
        "object",
        "--target-arch",
        "mips",
    ]);
    assert!(!out.status.success());
    assert!(
        text(&out).contains("\"mips\"") && text(&out).contains("thumbv7em"),
        "{}",
        text(&out)
    );
    assert!(!dir.join("m.o").exists());
}

#[test]
fn emit_rust_lists_the_shape_variants_for_set_dims() {
    let dir = scratch_dir("emit-variants");
    let module = dir.join("model.rs");
    let out = convert(
        &model("kws/lengths/model.onnx"),
        &module,
        &[
            "--emit",
            "rust",
            "--dim",
            "T=25,49,97",
            "--shape",
            "input=1,10,T",
        ],
    );
    ok_text(&out);
    let generated = std::fs::read_to_string(&module).unwrap();
    for line in [
        "pub const DIM_NAMES: [&str; 1] = [\"T\"];",
        "pub const VARIANTS: [[u32; 1]; 3] = [[25], [49], [97]];",
        // The largest variant's arena (its plan, as `ember inspect` prints it).
        "pub const ARENA_BYTES: usize = 10816;",
    ] {
        assert!(generated.contains(line), "{line} missing:\n{generated}");
    }
    // A blob without variants has neither.
    let plain = dir.join("plain.rs");
    ok_text(&convert(&digits(), &plain, &["--emit", "rust"]));
    let generated = std::fs::read_to_string(&plain).unwrap();
    assert!(!generated.contains("VARIANTS"), "{generated}");
}
