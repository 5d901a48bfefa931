//! Links `memory.x` and embeds the digits model and the first 100 test images (25.6 KB of flash); see
//! `../ember-firmware-build` for what lands in `OUT_DIR`.

/// How many test images the firmware carries.
const IMAGE_COUNT: usize = 100;

fn main() {
    // `--icf=all` folds identical functions (such as the kernel table's stubs for the entries a model
    // leaves out): some 240 bytes of flash on the digits firmware.
    ember_firmware_build::build_digits_firmware(
        &["-Tlink.x", "-Tdefmt.x", "--icf=all"],
        IMAGE_COUNT,
    );
}
