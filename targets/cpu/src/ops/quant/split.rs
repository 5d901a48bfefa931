//! Splitting a kernel's work over the workspace's workers: disjoint parts of the output (and of the
//! scratch) handed to concurrent workers, and how many workers a layer is worth.
//!
//! Parts are contiguous ranges of whole output rows, so every output value is computed by one worker
//! exactly as on one thread: the result is the same for any number of workers.

use core::marker::PhantomData;
use core::ops::Range;

use ember_core::Parallel;

/// A mutable slice whose disjoint parts go to concurrent workers.
pub(crate) struct Parts<'a, T> {
    ptr: *mut T,
    len: usize,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: a `Parts` only gives out mutable parts through `part`, whose callers keep them disjoint, so
// sharing it among threads is sending each thread its own `&mut [T]`, which `T: Send` allows.
unsafe impl<T: Send> Sync for Parts<'_, T> {}

impl<'a, T> Parts<'a, T> {
    /// Takes `slice` for the lifetime of the `Parts`.
    pub fn new(slice: &'a mut [T]) -> Self {
        Parts {
            ptr: slice.as_mut_ptr(),
            len: slice.len(),
            _borrow: PhantomData,
        }
    }

    /// Elements `range` (clipped to the slice).
    ///
    /// # Safety
    /// No two parts in use at the same time may overlap.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn part(&self, range: Range<usize>) -> &mut [T] {
        let end = range.end.min(self.len);
        let start = range.start.min(end);
        // SAFETY: `start..end` lies within the slice borrowed for 'a (and `self` lives no longer), and
        // the caller keeps the parts in use disjoint, so this is the only reference to these elements.
        unsafe { core::slice::from_raw_parts_mut(self.ptr.add(start), end - start) }
    }
}

/// Part `i` of `0..total` cut into `parts` near-equal contiguous ranges.
pub(crate) fn range(total: usize, parts: usize, i: usize) -> Range<usize> {
    let parts = parts.max(1);
    let at = |j: usize| (total as u128 * j as u128 / parts as u128) as usize;
    at(i)..at(i + 1)
}

/// Work (multiply-adds) each worker must get before a layer is split: about 5 microseconds of AVX2
/// work, several times what handing a job to a spinning pool worker costs. (Chosen rather than
/// measured: on the shared 2-core machine these kernels were written on, a second worker's timings
/// were dominated by other processes; `examples/int8_bench.rs` shows both columns to check it.)
pub(crate) const MIN_WORK_PER_WORKER: usize = 1 << 18;

/// How many parts to split `units` units (output rows) of `work` multiply-adds into, on `workers`.
pub(crate) fn parts(workers: usize, units: usize, work: usize) -> usize {
    workers.min(units).min(work / MIN_WORK_PER_WORKER).max(1)
}

/// Runs `job(i)` for every part `i` in `0..parts`, on `parallel`'s workers when there are several parts
/// (`parts` at most its workers), else on this thread.
pub(crate) fn run(parallel: Option<&dyn Parallel>, parts: usize, job: &(dyn Fn(usize) + Sync)) {
    match parallel {
        Some(p) if parts > 1 => p.run(&|w| {
            if w < parts {
                job(w)
            }
        }),
        _ => (0..parts).for_each(job),
    }
}
