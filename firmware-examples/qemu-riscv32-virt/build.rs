//! Links `memory.x` and embeds the digits model and all 360 test images; see `../ember-firmware-build` for
//! what lands in `OUT_DIR`.

/// How many test images the firmware carries: all of `x.npy`.
const IMAGE_COUNT: usize = 360;

fn main() {
    // `--icf=all` folds identical functions (such as the kernel table's stubs for the entries a model
    // leaves out): some 240 bytes of flash on the digits firmware.
    ember_firmware_build::build_digits_firmware(
        &["-Tmemory.x", "-Tlink.x", "--icf=all"],
        IMAGE_COUNT,
    );
}
