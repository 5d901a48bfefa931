//! `ember flash --dry-run` checks an ELF against a chip's memory map from probe-rs's built-in database,
//! with no probe attached. The ELFs here are written by the test: minimal ARM executables whose one
//! PT_LOAD segment sits where a linker script would have put it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{ember, err_text, ok_text, text};

/// A little-endian ELF32 ARM executable with one PT_LOAD segment of `len` bytes loaded at `paddr`.
fn arm_elf(paddr: u32, len: u32) -> Vec<u8> {
    let (ehsize, phentsize) = (52u16, 32u16);
    let data_off = u32::from(ehsize + phentsize);
    let mut e = Vec::new();
    e.extend_from_slice(&[0x7f, b'E', b'L', b'F', 1, 1, 1, 0]); // ELF32, little endian, version 1
    e.extend_from_slice(&[0; 8]);
    e.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    e.extend_from_slice(&40u16.to_le_bytes()); // EM_ARM
    e.extend_from_slice(&1u32.to_le_bytes()); // EV_CURRENT
    e.extend_from_slice(&(paddr | 1).to_le_bytes()); // entry (thumb)
    e.extend_from_slice(&u32::from(ehsize).to_le_bytes()); // phoff
    e.extend_from_slice(&0u32.to_le_bytes()); // shoff
    e.extend_from_slice(&0x0500_0400u32.to_le_bytes()); // EABI5, hard float
    e.extend_from_slice(&ehsize.to_le_bytes());
    e.extend_from_slice(&phentsize.to_le_bytes());
    e.extend_from_slice(&1u16.to_le_bytes()); // phnum
    e.extend_from_slice(&40u16.to_le_bytes()); // shentsize
    e.extend_from_slice(&0u16.to_le_bytes()); // shnum
    e.extend_from_slice(&0u16.to_le_bytes()); // shstrndx
    for v in [1u32, data_off, paddr, paddr, len, len, 5, 4] {
        // PT_LOAD, offset, vaddr, paddr, filesz, memsz, flags R+X, align
        e.extend_from_slice(&v.to_le_bytes());
    }
    e.extend((0..len).map(|i| i as u8));
    e
}

fn write(name: &str, bytes: &[u8]) -> PathBuf {
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// `ember flash --dry-run --chip <chip> <elf>`.
fn dry_run(chip: &str, elf: &Path) -> Output {
    ember(&["flash", "--dry-run", "--chip", chip, elf.to_str().unwrap()])
}

/// [`dry_run`] on the STM32F411RE (512 KiB of flash at `0x0800_0000`) of an ELF `name` with one
/// segment of `len` bytes at `paddr`.
fn dry_run_stm32f411(name: &str, paddr: u32, len: u32) -> Output {
    dry_run("STM32F411RETx", &write(name, &arm_elf(paddr, len)))
}

#[test]
fn an_elf_in_stm32_flash_is_accepted_with_an_erase_plan() {
    let out = dry_run_stm32f411("stm32.elf", 0x0800_0000, 40_000);
    let t = ok_text(&out);
    // 40,000 bytes from the start of flash: the first three 16 KiB sectors, 40 pages of 1 KiB.
    assert!(t.contains("erase  3 sectors, 49152 bytes"), "{t}");
    assert!(
        t.contains("0x08000000 (16 KiB), 0x08004000 (16 KiB), 0x08008000 (16 KiB)"),
        "{t}"
    );
    assert!(t.contains("no probe was touched"), "{t}");
}

#[test]
fn an_elf_linked_for_another_memory_map_is_rejected_with_the_range() {
    let out = dry_run_stm32f411("mps2.elf", 0x0000_0000, 1024);
    let t = err_text(&out);
    assert!(
        t.contains("0x00000000..0x00000400") && t.contains("0x08000000..0x08080000"),
        "{t}"
    );
    assert!(t.contains("memory.x"), "{t}");
}

#[test]
fn an_elf_overrunning_flash_is_rejected() {
    // 512 KiB of flash: a segment starting 1 KiB before the end and 2 KiB long runs past it.
    let out = dry_run_stm32f411("overrun.elf", 0x0807_FC00, 2048);
    let t = err_text(&out);
    assert!(t.contains("0x0807fc00..0x08080400"), "{t}");
}

#[test]
fn an_unknown_chip_suggests_names() {
    let elf = write("any.elf", &arm_elf(0x0800_0000, 16));
    let out = dry_run("STM32F411XYZ", &elf);
    let t = err_text(&out);
    assert!(t.contains("unknown chip") && t.contains("STM32F411"), "{t}");
}

#[test]
fn flashing_without_a_probe_is_a_clear_error() {
    let elf = write("noprobe.elf", &arm_elf(0x0800_0000, 16));
    let out = ember(&["flash", "--chip", "STM32F411RETx", elf.to_str().unwrap()]);
    if out.status.success() {
        // A probe is attached to this machine: nothing to check here.
        return;
    }
    let t = text(&out);
    assert!(
        t.contains("no debug probe found") && t.contains("--dry-run"),
        "{t}"
    );
    assert!(!t.contains("panicked"), "{t}");
}
