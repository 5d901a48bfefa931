//! Links `memory.x` (the MPS2 memory map QEMU's `mps2-an386` and `mps2-an500` share).

fn main() {
    // `--icf=all` folds identical functions (such as the kernel table's stubs for the entries a model
    // leaves out): some 240 bytes of flash on the digits firmware.
    ember_firmware_build::build_firmware(
        &["-Tlink.x", "--icf=all"],
        &[&ember_firmware_build::link_memory_x],
    );
}
