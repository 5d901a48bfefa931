//! Replays every committed fuzz corpus file (`fuzz/corpus/<target>/`) through its target's body
//! (`ember_tests::fuzz`), on stable and without libFuzzer: what coverage-guided fuzzing found once,
//! and the seeds it grew from, are checked on every CI run. A body panics when a property fails (see
//! the module's doc); this harness also counts the bytes each input makes the body allocate at once
//! and fails past `max_allocation` (256 MiB plus 64 times the input).

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use ember_tests::fuzz::{max_allocation, TARGETS};

/// The system allocator, tracking the bytes live and their peak.
struct Peak;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(by: usize) {
    let now = LIVE.fetch_add(by, Ordering::SeqCst) + by;
    PEAK.fetch_max(now, Ordering::SeqCst);
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so `System`'s
// guarantees hold; the counters are atomics and allocate nothing.
unsafe impl GlobalAlloc for Peak {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: forwarded as received (see the impl's comment).
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: forwarded as received.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        grew(new_size);
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: forwarded as received.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::SeqCst);
        // SAFETY: forwarded as received.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Peak = Peak;

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus");
    let mut failures = Vec::new();
    let mut total = 0;
    for (name, body) in TARGETS {
        let dir = root.join(name);
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| {
                panic!(
                    "{}: {e} (every target has a committed corpus)",
                    dir.display()
                )
            })
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        assert!(
            !files.is_empty(),
            "{}: an empty corpus checks nothing",
            dir.display()
        );
        // The seeds the structure-aware targets mutate are made on first use: not counted.
        body(&[]);
        let mut peak_seen = 0;
        for f in &files {
            let data = std::fs::read(f).unwrap();
            let base = LIVE.load(Ordering::SeqCst);
            PEAK.store(base, Ordering::SeqCst);
            let r = std::panic::catch_unwind(|| body(&data));
            let used = PEAK.load(Ordering::SeqCst).saturating_sub(base);
            peak_seen = peak_seen.max(used);
            if r.is_err() {
                failures.push(format!("{name}: {} panics", f.display()));
            } else if used > max_allocation(data.len()) {
                failures.push(format!(
                    "{name}: {} made the body allocate {used} bytes at once (limit {})",
                    f.display(),
                    max_allocation(data.len())
                ));
            }
        }
        println!(
            "{name:14} {:5} inputs replayed, largest allocation at once {:.1} MiB",
            files.len(),
            peak_seen as f64 / (1 << 20) as f64
        );
        total += files.len();
    }
    assert!(
        failures.is_empty(),
        "{} of {total} inputs fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
    println!("fuzz corpus: {total} inputs, every property holds");
}
