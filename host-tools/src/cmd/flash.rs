//! `ember flash` and `ember probes`: put firmware on a board through a debug probe (probe-rs, as a
//! library), or check it without one (`--dry-run`): every loadable byte of the ELF must land in the chip's
//! flash, and the erase/program plan is printed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use object::elf::PT_LOAD;
use object::read::elf::{ElfFile32, FileHeader, ProgramHeader};
use object::Endianness;
use probe_rs::config::{MemoryRegion, Registry, Target};

#[derive(clap::Args)]
pub struct Args {
    /// The firmware ELF.
    pub elf: PathBuf,
    /// The chip, as probe-rs names it (e.g. nRF52840_xxAA, STM32F411RETx, RP2040).
    #[arg(long)]
    pub chip: String,
    /// Check the ELF against the chip's memory map and print the erase/program plan; touch no hardware.
    #[arg(long)]
    pub dry_run: bool,
    /// After flashing, print the firmware's RTT output for this many seconds (0: until interrupted).
    #[arg(long, default_value_t = 0)]
    pub log_seconds: u64,
}

/// One loadable piece of the ELF: where it goes in the chip's address space and its bytes.
struct Segment<'a> {
    address: u64,
    data: &'a [u8],
}

/// The PT_LOAD segments with file bytes, at their load (physical) addresses: what a flasher writes.
fn loadable_segments(elf: &[u8]) -> Result<Vec<Segment<'_>>> {
    let file = ElfFile32::<Endianness>::parse(elf)
        .context("not a 32-bit ELF file (is this firmware for an MCU?)")?;
    let endian = file.endian();
    let mut out = Vec::new();
    for ph in file.elf_program_headers() {
        if ph.p_type(endian) != PT_LOAD || ph.p_filesz(endian) == 0 {
            continue;
        }
        let data = ph
            .data(endian, elf)
            .map_err(|_| anyhow::anyhow!("a segment's bytes lie outside the file"))?;
        out.push(Segment {
            address: u64::from(ph.p_paddr(endian)),
            data,
        });
    }
    let _ = file.elf_header().e_machine(endian);
    if out.is_empty() {
        bail!("the ELF has no loadable bytes");
    }
    Ok(out)
}

fn target(chip: &str) -> Result<Target> {
    let registry = Registry::from_builtin_families();
    registry.get_target_by_name(chip).map_err(|e| {
        let lower = chip.to_lowercase();
        let prefix: String = lower.chars().take(7).collect();
        let mut similar: Vec<String> = registry
            .families()
            .iter()
            .flat_map(|f| f.variants.iter().map(|v| v.name.clone()))
            .filter(|n| n.to_lowercase().starts_with(&prefix))
            .take(8)
            .collect();
        similar.sort();
        anyhow::anyhow!(
            "unknown chip {chip:?} ({e}){}",
            if similar.is_empty() {
                String::new()
            } else {
                format!("; similar names: {}", similar.join(", "))
            }
        )
    })
}

/// The chip's flash regions (not aliases), as `start..end` text for messages.
fn flash_ranges(t: &Target) -> Vec<(u64, u64)> {
    t.memory_map
        .iter()
        .filter_map(|r| match r {
            MemoryRegion::Nvm(n) if !n.is_alias => Some((n.range.start, n.range.end)),
            _ => None,
        })
        .collect()
}

fn hex_ranges(ranges: &[(u64, u64)]) -> String {
    ranges
        .iter()
        .map(|(s, e)| format!("{s:#010x}..{e:#010x}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What writing the ELF takes: the sectors to erase and the pages to program.
struct FlashPlan {
    /// `(start address, size)` of each sector to erase, in address order.
    sectors: Vec<(u64, u64)>,
    /// Pages to program.
    pages: u64,
    /// Bytes per page.
    page_size: u32,
}

/// The erase/program plan for `segments`, per the chip's default flash algorithms.
fn plan(t: &Target, segments: &[Segment<'_>]) -> Result<FlashPlan> {
    let mut sectors: Vec<(u64, u64)> = Vec::new();
    let mut pages = 0u64;
    let mut page_size = 0u32;
    for s in segments {
        let (start, end) = (s.address, s.address + s.data.len() as u64);
        let algo = t
            .flash_algorithms
            .iter()
            .filter(|a| a.flash_properties.address_range.contains(&start))
            .max_by_key(|a| a.default)
            .with_context(|| format!("no flash algorithm of {} covers {start:#010x}", t.name))?;
        let props = &algo.flash_properties;
        page_size = props.page_size;
        pages += (end - start).div_ceil(u64::from(props.page_size.max(1)));
        let base = props.address_range.start;
        let mut groups = props.sectors.clone();
        groups.sort_by_key(|g| g.address);
        for (k, g) in groups.iter().enumerate() {
            let group_end = groups
                .get(k + 1)
                .map(|n| base + n.address)
                .unwrap_or(props.address_range.end);
            let mut at = base + g.address;
            while at < group_end && g.size > 0 {
                if at < end && start < at + g.size && !sectors.iter().any(|&(a, _)| a == at) {
                    sectors.push((at, g.size));
                }
                at += g.size;
            }
        }
    }
    sectors.sort();
    Ok(FlashPlan {
        sectors,
        pages,
        page_size,
    })
}

pub fn run(args: &Args) -> Result<ExitCode> {
    let elf =
        std::fs::read(&args.elf).with_context(|| format!("cannot read {}", args.elf.display()))?;
    let segments = loadable_segments(&elf).with_context(|| format!("{}", args.elf.display()))?;
    let t = target(&args.chip)?;
    let flash = flash_ranges(&t);
    for (i, s) in segments.iter().enumerate() {
        let (start, end) = (s.address, s.address + s.data.len() as u64);
        if !flash.iter().any(|&(a, b)| a <= start && end <= b) {
            bail!(
                "{}: segment {i} ({start:#010x}..{end:#010x}, {} bytes) lies outside the flash of {} ({}); \
                 the ELF was linked for another memory map: check memory.x (FLASH ORIGIN/LENGTH) for this chip",
                args.elf.display(),
                s.data.len(),
                t.name,
                hex_ranges(&flash)
            );
        }
    }
    // probe-rs's own check of the same data, without a probe.
    let mut loader = t.flash_loader();
    for s in &segments {
        loader
            .add_data(s.address, s.data)
            .with_context(|| format!("probe-rs rejects the data at {:#010x}", s.address))?;
    }
    let FlashPlan {
        sectors,
        pages,
        page_size,
    } = plan(&t, &segments)?;
    let bytes: usize = segments.iter().map(|s| s.data.len()).sum();
    let erase_bytes: u64 = sectors.iter().map(|&(_, n)| n).sum();
    println!(
        "{} -> {} (flash {})",
        args.elf.display(),
        t.name,
        hex_ranges(&flash)
    );
    for s in &segments {
        println!(
            "  load   {:#010x}..{:#010x} {:>8} bytes",
            s.address,
            s.address + s.data.len() as u64,
            s.data.len()
        );
    }
    println!(
        "  erase  {} sectors, {} bytes: {}",
        sectors.len(),
        erase_bytes,
        sector_list(&sectors)
    );
    println!("  program {pages} pages of {page_size} bytes ({bytes} bytes of data)");
    if args.dry_run {
        println!("dry run: the ELF fits {}; no probe was touched", t.name);
        return Ok(ExitCode::SUCCESS);
    }
    flash_with_probe(&args.elf, &t.name, args.log_seconds)
}

fn sector_list(sectors: &[(u64, u64)]) -> String {
    let shown: Vec<String> = sectors
        .iter()
        .take(6)
        .map(|&(a, n)| format!("{a:#010x} ({} KiB)", n / 1024))
        .collect();
    let more = if sectors.len() > 6 {
        format!(" and {} more", sectors.len() - 6)
    } else {
        String::new()
    };
    format!("{}{more}", shown.join(", "))
}

fn flash_with_probe(elf: &Path, chip: &str, log_seconds: u64) -> Result<ExitCode> {
    let lister = probe_rs::probe::list::Lister::new();
    let probes = lister.list_all();
    let Some(info) = probes.first() else {
        bail!("no debug probe found: connect one (CMSIS-DAP, ST-Link, J-Link), or check the ELF with --dry-run");
    };
    eprintln!(
        "probe: {} ({:04x}:{:04x})",
        info.identifier, info.vendor_id, info.product_id
    );
    let probe = info.open().context("cannot open the debug probe")?;
    let mut session = probe
        .attach(chip, probe_rs::Permissions::default())
        .with_context(|| format!("cannot attach to {chip}"))?;
    let pb = super::common::spinner("flashing");
    let result = probe_rs::flashing::download_file(
        &mut session,
        elf,
        probe_rs::flashing::ElfLoader(Default::default()),
    );
    pb.finish_and_clear();
    result.context("flashing failed")?;
    let mut core = session.core(0).context("cannot reach core 0")?;
    core.reset().context("cannot reset the core")?;
    let elf_bytes = std::fs::read(elf).with_context(|| format!("cannot read {}", elf.display()))?;
    let table = crate::defmt_log::table(&elf_bytes)?;
    eprintln!(
        "flashed and reset; RTT output follows ({})",
        if table.is_some() {
            "defmt, decoded"
        } else {
            "text"
        }
    );
    let mut log = crate::defmt_log::LogStream::new(table.as_ref());
    let mut print = |line: String| println!("{line}");
    let mut rtt = match probe_rs::rtt::Rtt::attach(&mut core) {
        Ok(rtt) => rtt,
        Err(e) => {
            eprintln!("no RTT control block found ({e}); the firmware runs without log output");
            return Ok(ExitCode::SUCCESS);
        }
    };
    let start = Instant::now();
    let mut buf = [0u8; 1024];
    while log_seconds == 0 || start.elapsed() < Duration::from_secs(log_seconds) {
        let n = match rtt.up_channel(0) {
            Some(ch) => ch.read(&mut core, &mut buf).context("RTT read failed")?,
            None => break,
        };
        if n == 0 {
            std::thread::sleep(Duration::from_millis(10));
        } else {
            log.feed(&buf[..n], &mut print);
        }
    }
    let malformed = log.finish(&mut print);
    if malformed > 0 {
        eprintln!("error: {malformed} defmt frames did not decode (is the ELF the one flashed?)");
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// `ember probes`: the debug probes attached to this machine.
pub fn list_probes() -> Result<ExitCode> {
    let probes = probe_rs::probe::list::Lister::new().list_all();
    if probes.is_empty() {
        println!("no debug probes found");
    }
    for p in probes {
        println!(
            "{} ({:04x}:{:04x}){}",
            p.identifier,
            p.vendor_id,
            p.product_id,
            p.serial_number
                .map(|s| format!(" serial {s}"))
                .unwrap_or_default()
        );
    }
    Ok(ExitCode::SUCCESS)
}
