//! Links `memory.x` (the MPS2 memory map of QEMU's `mps2-an386`) and embeds the keyword model with its
//! three test utterances.

fn main() {
    ember_firmware_build::build_firmware(
        &["-Tlink.x", "--icf=all"],
        &[&ember_firmware_build::link_memory_x, &|| {
            ember_firmware_build::embed_kws_lengths().map(drop)
        }],
    );
}
