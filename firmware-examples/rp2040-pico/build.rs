//! Links `memory.x` and embeds the digits model and the first 100 test images (25.6 KB of flash); see
//! `../ember-firmware-build` for what lands in `OUT_DIR`.

/// How many test images the firmware carries.
const IMAGE_COUNT: usize = 100;

fn main() {
    let result = ember_firmware_build::link_memory_x()
        .and_then(|()| ember_firmware_build::embed_digits(IMAGE_COUNT));
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
