//! Finds or installs the QEMU system emulators the firmware check runs: from PATH, from Debian's packages
//! unpacked under `target/qemu/` by an earlier run, by `apt-get install`, or, where that can't install
//! (see `shared/TOOLCHAIN.md`: a newer `qemu-utils` from backports blocks Debian's QEMU 7.2), by unpacking
//! Debian's packages under `target/qemu/` again ([`apt::unpack`]).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, ensure, Context, Result};

use super::Qemu;
use crate::apt::{self, apt_get};

/// Debian packages every unpacked `qemu-system-*` needs besides its own, for the unpack-under-`target/`
/// fallback.
const QEMU_COMMON_DEBS: &[&str] = &["qemu-system-common", "qemu-system-data"];
/// Shared libraries the unpacked QEMU 7.2 needs (Debian 12 package names).
const QEMU_LIBS: &[&str] = &[
    "libfdt1",
    "libcapstone4",
    "libpmem1",
    "librdmacm1",
    "libibverbs1",
    "libslirp0",
    "libvdeplug2",
];

/// The QEMU binary from PATH, or from `target/qemu/`, or installed now.
pub(super) fn find_or_install_qemu(root: &Path, qemu: Qemu) -> Result<PathBuf> {
    let binary = qemu.binary();
    let unpacked_dir = root.join("target").join("qemu");
    let unpacked = unpacked_dir.join("usr/bin").join(binary);
    for candidate in [PathBuf::from(binary), unpacked.clone()] {
        if qemu_version(&candidate).is_ok() {
            return Ok(candidate);
        }
    }

    eprintln!("{binary} not found: installing it");
    // `--no-remove`: never make room by removing a system package (on the image TOOLCHAIN.md describes,
    // apt would remove a newer qemu-utils from backports to install Debian's QEMU 7.2).
    if apt_get(&[
        "install",
        "-y",
        "--no-install-recommends",
        "--no-remove",
        qemu.package(),
    ])
    .is_ok()
        && qemu_version(Path::new(binary)).is_ok()
    {
        return Ok(PathBuf::from(binary));
    }

    // Fallback: unpack Debian's packages under target/qemu (works where the package can't be installed
    // because of conflicting system packages, e.g. a newer qemu-utils from backports).
    eprintln!(
        "apt-get install failed; unpacking the QEMU packages into {}",
        unpacked_dir.display()
    );
    let mut libs = vec!["install", "-y", "--no-install-recommends", "--no-remove"];
    libs.extend_from_slice(QEMU_LIBS);
    apt_get(&libs)?;
    let mut packages = vec![qemu.package()];
    packages.extend_from_slice(QEMU_COMMON_DEBS);
    apt::unpack(&packages, &unpacked_dir)?;
    if let Err(e) = qemu_version(&unpacked) {
        let missing = Command::new("ldd").arg(&unpacked).output().map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter(|l| l.contains("not found"))
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(", ")
        });
        bail!(
            "the unpacked {} does not run ({e:#}); missing libraries: {}",
            unpacked.display(),
            missing.unwrap_or_default()
        );
    }
    Ok(unpacked)
}

/// The first line of `qemu --version`.
pub(crate) fn qemu_version(qemu: &Path) -> Result<String> {
    let out = Command::new(qemu)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("cannot run {}", qemu.display()))?;
    ensure!(
        out.status.success(),
        "{} --version failed: {}",
        qemu.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string())
}
