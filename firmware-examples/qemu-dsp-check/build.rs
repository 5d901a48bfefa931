//! Links `memory.x` (the MPS2 memory map QEMU's `mps2-an386` and `mps2-an500` share).

fn main() {
    if let Err(e) = ember_firmware_build::link_memory_x() {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
