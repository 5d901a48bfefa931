//! Debian packages for the tools `cargo xtask` needs: `apt-get` as root (or through `sudo -n`), retried once
//! after `apt-get update`; and packages unpacked into a folder without installing them (`apt-get download`
//! and `dpkg -x`), for a tool whose package can't or needn't be installed system-wide (see
//! `shared/TOOLCHAIN.md`: QEMU 7.2 system emulators, `qemu-user-static`).

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::Result;

use crate::run_command;

/// Runs `apt-get ARGS` in the current directory (see [`apt_get_in`]).
pub fn apt_get(args: &[&str]) -> Result<()> {
    apt_get_in(args, Path::new("."))
}

/// Runs `apt-get ARGS` in `dir` (through `sudo -n` when not root); on failure runs `apt-get update` once
/// and retries.
pub fn apt_get_in(args: &[&str], dir: &Path) -> Result<()> {
    let attempt = |args: &[&str]| {
        let root = Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0"));
        let mut cmd = if root {
            Command::new("apt-get")
        } else {
            let mut sudo = Command::new("sudo");
            sudo.args(["-n", "apt-get"]);
            sudo
        };
        cmd.args(args)
            .current_dir(dir)
            .env("DEBIAN_FRONTEND", "noninteractive");
        run_command(&mut cmd)
    };
    if attempt(args).is_ok() {
        return Ok(());
    }
    eprintln!("retrying after `apt-get update`");
    attempt(&["update"])?;
    attempt(args)
}

/// Downloads `packages` (this machine's architecture) into `dir/debs` and unpacks each into `dir`, so
/// that their files land under `dir/usr/...`. Their dependencies are not fetched.
pub fn unpack(packages: &[&str], dir: &Path) -> Result<()> {
    let debs = dir.join("debs");
    fs::create_dir_all(&debs)?;
    let mut download = vec!["download"];
    download.extend_from_slice(packages);
    apt_get_in(&download, &debs)?;
    for entry in fs::read_dir(&debs)? {
        let path = entry?.path();
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // `apt-get download` names files `<package>_<version>_<arch>.deb`.
        let wanted = packages
            .iter()
            .any(|p| name.starts_with(&format!("{p}_")) && name.ends_with(".deb"));
        if wanted {
            run_command(Command::new("dpkg").arg("-x").arg(&path).arg(dir))?;
        }
    }
    Ok(())
}
