//! What the firmware steps share: the emulated boards and QEMU, how a run is started and timed, and
//! the results a board run reports.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};

/// A firmware example and the emulated board that runs it.
pub(crate) struct Board {
    /// Short name in the report (the QEMU machine, or the machine and CPU where one ELF runs on two).
    pub(crate) name: &'static str,
    /// What the board emulates, in words.
    pub(crate) core: &'static str,
    /// The firmware crate, relative to the repository root.
    pub(crate) dir: &'static str,
    /// Its target triple (also set in the crate's `.cargo/config.toml`).
    pub(crate) target: &'static str,
    /// The QEMU system emulator.
    pub(crate) qemu: Qemu,
    /// `-M`.
    pub(crate) machine: &'static str,
    /// `-cpu`, where the machine's default is not the one the ELF is built for.
    pub(crate) cpu: Option<&'static str>,
    /// Further QEMU arguments.
    pub(crate) extra_args: &'static [&'static str],
    /// The board's RAM, to print what share the firmware uses.
    pub(crate) ram_bytes: u64,
}

impl Board {
    /// One of QEMU's MPS2 boards (4 MiB of RAM), named after its `machine`, with `-cpu` `cpu`, running
    /// the `thumbv7em-none-eabihf` crate `dir`.
    pub(crate) const fn mps2(
        machine: &'static str,
        cpu: &'static str,
        core: &'static str,
        dir: &'static str,
    ) -> Board {
        Board {
            name: machine,
            core,
            dir,
            target: "thumbv7em-none-eabihf",
            qemu: Qemu::Arm,
            machine,
            cpu: Some(cpu),
            extra_args: &[],
            ram_bytes: 4 << 20,
        }
    }
}

/// A QEMU system emulator and the Debian package that ships it.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Qemu {
    Arm,
    Riscv32,
}

impl Qemu {
    pub(crate) fn binary(self) -> &'static str {
        match self {
            Qemu::Arm => "qemu-system-arm",
            Qemu::Riscv32 => "qemu-system-riscv32",
        }
    }

    pub(crate) fn package(self) -> &'static str {
        match self {
            Qemu::Arm => "qemu-system-arm",
            Qemu::Riscv32 => "qemu-system-misc",
        }
    }
}

/// A run takes seconds; a fault or a lost exit would otherwise hang QEMU forever.
pub(crate) const QEMU_TIMEOUT: Duration = Duration::from_secs(60);

/// `-icount shift=N`: one instruction every 2^N ns of virtual time, so that the firmware's timer profile
/// depends on the instructions executed only, and repeats exactly from run to run.
pub(crate) const ICOUNT_SHIFT: u32 = 6;

/// The host's view of the test images: the reference's top-1 classes and the labels.
pub(crate) struct HostResults {
    /// Who computed `top1`: onnxruntime (the f32 model) or Ember on the host (the int8 blob).
    pub(crate) source: &'static str,
    pub(crate) top1: Vec<usize>,
    pub(crate) labels: Vec<i64>,
}

/// A model a firmware example is built with, and the host results its runs must equal.
pub(crate) struct Variant {
    /// `f32`, `int8`, or `int8-ref` (int8 on the portable reference kernels instead of a target's).
    pub(crate) name: &'static str,
    /// The blob.
    pub(crate) model: PathBuf,
    /// Cargo features of the firmware build.
    pub(crate) features: &'static [&'static str],
    /// Which crates build this variant (`None`: every one).
    pub(crate) only: Option<&'static str>,
    pub(crate) host: HostResults,
}

/// The output of a firmware run under QEMU that exited with status 0, and its wall time.
pub(crate) struct QemuRun {
    /// The log: the firmware's output.
    pub(crate) text: String,
    /// The run's wall time.
    pub(crate) wall: Duration,
    log: PathBuf,
}

impl QemuRun {
    /// Runs as [`run_qemu`] does and reads the log; a timeout, or `what` (such as "the firmware")
    /// exiting with a status other than 0, is an error with the log's last lines.
    pub(crate) fn start(
        qemu: &Path,
        board: &Board,
        elf: &Path,
        log: &Path,
        ember: Option<&Path>,
        what: &str,
    ) -> Result<Self> {
        let (status, wall) = run_qemu(qemu, board, elf, log, ember)?;
        let text =
            fs::read_to_string(log).with_context(|| format!("cannot read {}", log.display()))?;
        let run = QemuRun {
            text,
            wall,
            log: log.to_path_buf(),
        };
        match status {
            None => Err(run.fail(format!("QEMU did not finish within {QEMU_TIMEOUT:?}"))),
            Some(0) => Ok(run),
            Some(code) => Err(run.fail(format!("{what} exited with status {code}"))),
        }
    }

    /// The error `why`, followed by the last 20 lines of the log.
    pub(crate) fn fail(&self, why: String) -> anyhow::Error {
        anyhow::anyhow!(
            "{why}\n--- last lines of {} ---\n{}",
            self.log.display(),
            tail(&self.text, 20)
        )
    }
}

/// Runs the firmware on the board under QEMU with its output in `log`: QEMU itself, or, with `ember`,
/// `ember qemu` (which decodes a defmt log). Returns the exit code (`None` on timeout) and the wall time.
pub(crate) fn run_qemu(
    qemu: &Path,
    board: &Board,
    elf: &Path,
    log: &Path,
    ember: Option<&Path>,
) -> Result<(Option<i32>, Duration)> {
    let out = fs::File::create(log).with_context(|| format!("cannot create {}", log.display()))?;
    let err = out.try_clone()?;
    let mut cmd;
    if let Some(ember) = ember {
        cmd = Command::new(ember);
        cmd.arg("qemu").arg(elf).args(["--machine", board.machine]);
        if let Some(cpu) = board.cpu {
            cmd.args(["--cpu", cpu]);
        }
        cmd.args(["--icount", &ICOUNT_SHIFT.to_string()])
            .args(["--timeout", &QEMU_TIMEOUT.as_secs().to_string()]);
        // `ember qemu` looks for QEMU on PATH first: the one found or unpacked above.
        let path = std::env::var_os("PATH").unwrap_or_default();
        let dirs = qemu
            .parent()
            .map(Path::to_path_buf)
            .into_iter()
            .chain(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(dirs)?);
    } else {
        cmd = Command::new(qemu);
        cmd.args(["-M", board.machine]);
        if let Some(cpu) = board.cpu {
            cmd.args(["-cpu", cpu]);
        }
        cmd.args(board.extra_args)
            .arg("-nographic")
            .args(["-semihosting-config", "enable=on,target=native"])
            .args(["-icount", &format!("shift={ICOUNT_SHIFT}")])
            .arg("-kernel")
            .arg(elf);
    }
    cmd.stdin(Stdio::null()).stdout(out).stderr(err);
    eprintln!("$ {cmd:?} > {}", log.display());
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start {}", qemu.display()))?;
    loop {
        if let Some(status) = child.try_wait()? {
            // A signal (no code) counts as a failure.
            return Ok((Some(status.code().unwrap_or(-1)), start.elapsed()));
        }
        if start.elapsed() > QEMU_TIMEOUT {
            child.kill()?;
            child.wait()?;
            return Ok((None, start.elapsed()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Runs `cmd`, echoing it; fails if it exits non-zero.
pub(crate) fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("$ {cmd:?}");
    let status = cmd
        .status()
        .with_context(|| format!("cannot start {cmd:?}"))?;
    ensure!(status.success(), "{cmd:?} failed ({status})");
    Ok(())
}

/// The last `n` lines of `text`.
pub(crate) fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
