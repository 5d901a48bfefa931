//! Links `memory.x` (the MPS2 memory map QEMU's `mps2-an386` and `mps2-an500` share).

fn main() {
    // `--icf=all` folds identical functions (such as the kernel table's stubs for the entries a model
    // leaves out): some 240 bytes of flash on the digits firmware.
    ember_firmware_build::link_args(&["-Tlink.x", "--icf=all"]);
    if let Err(e) = ember_firmware_build::link_memory_x() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
