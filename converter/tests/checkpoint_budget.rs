//! A hostile checkpoint of about 1 KB makes the reader allocate at most a few MB: measured with a
//! counting allocator around each read (peak bytes live on the reading thread), never with a clock.
//! The work of the reader is linear in the file's size by construction (each opcode consumes bytes
//! or pops values); the allocation is what a hostile file could otherwise blow up.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::PathBuf;

use ember_convert::weights::Checkpoint;

struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn track(delta: isize) {
    // try_with: allocations during thread teardown are not counted.
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every method forwards to the system allocator with the caller's arguments unchanged and
// only adds bookkeeping in thread-local cells, which allocate nothing (const-initialized, no
// destructor).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as is; the caller upholds `alloc`'s contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            track(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as is; `ptr` came from this allocator, i.e. from `System`.
        unsafe { System.dealloc(ptr, layout) };
        track(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as is; `ptr` came from `System` with `layout`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            track(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Peak bytes allocated (above what was live before) while running `f` on this thread.
fn peak_of<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let start = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(start));
    let r = f();
    let peak = PEAK.with(Cell::get) - start;
    (r, peak.max(0) as usize)
}

/// A few MB: what the brief allows a 1 KB hostile file to cost.
const BUDGET: usize = 4 << 20;

#[test]
fn one_kilobyte_hostile_checkpoints_allocate_a_few_megabytes_at_most() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/models/checkpoints/hostile");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "pt" || x == "pkl"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 17, "{files:?}");
    let mut worst = (0, String::new());
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        assert!(
            bytes.len() <= 1200,
            "{} is {} bytes",
            f.display(),
            bytes.len()
        );
        let (result, peak) = peak_of(|| Checkpoint::parse(&bytes).map(|c| c.len()));
        let err = result.expect_err("a hostile file is refused").to_string();
        println!(
            "{:<28} {:>5} bytes, peak allocation {:>8} bytes: {}",
            f.file_name().unwrap().to_string_lossy(),
            bytes.len(),
            peak,
            err.chars().take(90).collect::<String>()
        );
        assert!(peak <= BUDGET, "{}: {peak} bytes", f.display());
        if peak > worst.0 {
            worst = (peak, f.display().to_string());
        }
    }
    println!("worst: {} bytes ({})", worst.0, worst.1);
}

#[test]
fn a_storage_claiming_two_to_the_forty_elements_is_an_error_before_any_allocation() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/models/checkpoints/hostile");
    for (file, says) in [
        ("huge_storage_zip.pt", "claims 1099511627776 elements"),
        ("huge_storage_legacy.pt", "past the end of the file"),
    ] {
        let bytes = std::fs::read(dir.join(file)).unwrap();
        let (result, peak) = peak_of(|| Checkpoint::parse(&bytes).map(|c| c.len()));
        let err = result.unwrap_err().to_string();
        assert!(err.contains(says), "{file}: {err}");
        assert!(peak < 1 << 20, "{file}: {peak} bytes");
    }
}
