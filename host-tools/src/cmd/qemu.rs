//! `ember qemu firmware.elf`: runs firmware under QEMU with semihosting and prints its log, decoding
//! defmt frames in-process when the ELF has a defmt table, so the log reads as it does from a board with
//! `ember flash`. Exits with the firmware's semihosting exit status.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use object::{Architecture, Object};

use crate::defmt_log::{self, LogStream};

#[derive(clap::Args)]
pub struct Args {
    /// The firmware ELF (Arm Cortex-M or RV32).
    pub elf: PathBuf,
    /// QEMU machine: mps2-an386 (default for Arm), mps2-an500, lm3s6965evb, virt (default for RISC-V), ...
    #[arg(long)]
    pub machine: Option<String>,
    /// QEMU CPU (default: the machine's core: cortex-m4, cortex-m7, cortex-m3).
    #[arg(long)]
    pub cpu: Option<String>,
    /// `-icount shift=N`: one instruction every 2^N ns of virtual time, so timer profiles repeat exactly.
    #[arg(long, value_name = "N")]
    pub icount: Option<u32>,
    /// Kill QEMU and fail after this many seconds (a fault without a handler hangs it forever).
    #[arg(long, default_value_t = 120)]
    pub timeout: u64,
}

/// The QEMU binary, machine and CPU for an ELF of `arch`.
fn target(arch: Architecture, args: &Args) -> Result<(&'static str, String, Option<String>)> {
    let (binary, default_machine) = match arch {
        Architecture::Arm => ("qemu-system-arm", "mps2-an386"),
        Architecture::Riscv32 => ("qemu-system-riscv32", "virt"),
        other => bail!(
            "{other:?} firmware: `ember qemu` runs Arm Cortex-M and RV32 ELFs (for a host program, run it \
             directly)"
        ),
    };
    let machine = args.machine.clone().unwrap_or(default_machine.into());
    let cpu = args.cpu.clone().or(match machine.as_str() {
        "mps2-an386" => Some("cortex-m4".into()),
        "mps2-an500" => Some("cortex-m7".into()),
        "mps2-an505" => Some("cortex-m33".into()),
        "lm3s6965evb" => Some("cortex-m3".into()),
        "microbit" => Some("cortex-m0".into()),
        _ => None,
    });
    Ok((binary, machine, cpu))
}

/// `binary` on PATH, or in a `target/qemu/usr/bin` (where `cargo xtask` unpacks QEMU) above the current
/// folder or above the ELF.
fn find_qemu(binary: &str, elf: &Path) -> Result<PathBuf> {
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let candidate = dir.join(binary);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    let cwd = std::env::current_dir().unwrap_or_default();
    let elf = elf.canonicalize().unwrap_or_else(|_| elf.to_path_buf());
    for start in [cwd.as_path(), elf.as_path()] {
        for dir in start.ancestors() {
            let candidate = dir.join("target/qemu/usr/bin").join(binary);
            if candidate.is_file() {
                return Ok(candidate);
            }
        }
    }
    let package = if binary.ends_with("riscv32") {
        "qemu-system-misc"
    } else {
        "qemu-system-arm"
    };
    bail!(
        "{binary} not found on PATH or in a target/qemu/usr/bin: install it (apt-get install {package}) or \
         run `cargo xtask firmware` in the Ember repository, which unpacks one there"
    )
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let elf =
        std::fs::read(&args.elf).with_context(|| format!("cannot read {}", args.elf.display()))?;
    let file = object::File::parse(&*elf)
        .with_context(|| format!("{} is not an ELF file", args.elf.display()))?;
    let (binary, machine, cpu) = target(file.architecture(), args)?;
    let table = defmt_log::table(&elf)?;
    let qemu = find_qemu(binary, &args.elf)?;

    let mut cmd = Command::new(&qemu);
    cmd.args(["-M", &machine]);
    if let Some(cpu) = &cpu {
        cmd.args(["-cpu", cpu]);
    }
    if binary.ends_with("riscv32") {
        cmd.args(["-bios", "none"]);
    }
    cmd.args([
        "-nographic",
        "-semihosting-config",
        "enable=on,target=native",
    ]);
    if let Some(shift) = args.icount {
        cmd.args(["-icount", &format!("shift={shift}")]);
    }
    cmd.arg("-kernel")
        .arg(&args.elf)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    eprintln!(
        "running {} on QEMU {machine}{} ({}; log {})",
        args.elf.display(),
        cpu.as_deref()
            .map(|c| format!(" ({c})"))
            .unwrap_or_default(),
        qemu.display(),
        if table.is_some() {
            "defmt, decoded"
        } else {
            "text"
        }
    );
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", qemu.display()))?;

    // QEMU's stdout is read to its end on another thread (a reader that stops early makes QEMU spin).
    let mut stdout = child.stdout.take().context("QEMU's stdout is not piped")?;
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    let reader = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        loop {
            match stdout.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send(buf[..n].to_vec()).is_err() {
                        break;
                    }
                }
            }
        }
    });

    let mut log = LogStream::new(table.as_ref());
    let mut print = |line: String| println!("{line}");
    let deadline = Instant::now() + Duration::from_secs(args.timeout);
    let status = loop {
        while let Ok(bytes) = rx.try_recv() {
            log.feed(&bytes, &mut print);
        }
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = reader.join();
    while let Ok(bytes) = rx.try_recv() {
        log.feed(&bytes, &mut print);
    }
    let malformed = log.finish(&mut print);
    if malformed > 0 {
        eprintln!("error: {malformed} defmt frames did not decode (is the ELF the one that ran?)");
    }
    match status {
        None => {
            eprintln!(
                "error: QEMU did not finish within {} s (a fault handler that never exits, or a firmware \
                 that never calls semihosting exit); killed it",
                args.timeout
            );
            Ok(ExitCode::FAILURE)
        }
        Some(s) if s.success() && malformed == 0 => Ok(ExitCode::SUCCESS),
        Some(s) => {
            let code = s.code().unwrap_or(1);
            eprintln!("firmware exited with status {code}");
            Ok(ExitCode::from(u8::try_from(code).unwrap_or(1).max(1)))
        }
    }
}
