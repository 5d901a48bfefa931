//! The GPU step of `cargo xtask ci`: Mesa's software Vulkan (lavapipe), installed through apt-get, for
//! `ember-gpu`'s test suite, which the workspace test step then runs with `EMBER_REQUIRE_GPU=1` (a
//! missing device fails instead of skipping). Running it there reuses the workspace's build.

use std::process::Command;

use anyhow::{bail, Result};

const PACKAGES: &[&str] = &["mesa-vulkan-drivers", "libvulkan1", "vulkan-tools"];

/// True when `vulkaninfo --summary` runs and lists at least one device.
fn vulkan_present() -> bool {
    Command::new("vulkaninfo")
        .arg("--summary")
        .output()
        .map(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("deviceName"))
        .unwrap_or(false)
}

/// Installs lavapipe unless a Vulkan device is already there.
pub fn install_lavapipe() -> Result<()> {
    if vulkan_present() {
        eprintln!("a Vulkan device is present (vulkaninfo --summary lists one)");
        return Ok(());
    }
    let mut args = vec!["install", "-y", "--no-install-recommends"];
    args.extend_from_slice(PACKAGES);
    eprintln!("$ apt-get {}", args.join(" "));
    let status = Command::new("apt-get").args(&args).status();
    if !matches!(status, Ok(s) if s.success()) || !vulkan_present() {
        bail!(
            "could not install Mesa's software Vulkan driver (lavapipe): run `apt-get install -y {}` \
             as root (or with sudo), then check that `vulkaninfo --summary` lists a device",
            PACKAGES.join(" ")
        );
    }
    Ok(())
}
