//! Splitting an op over the workers of a [`Parallel`]: contiguous ranges per worker, and mutable buffers
//! that several workers write in disjoint parts.

use core::marker::PhantomData;
use core::ops::Range;

use ember_core::Parallel;

/// Calls `job(w)` for `w` in `0..workers`: on the pool's workers when there is a pool and more than one
/// worker is asked for (a pool with more workers leaves the others idle), else `job(0)` here.
pub(crate) fn run(par: Option<&dyn Parallel>, workers: usize, job: &(dyn Fn(usize) + Sync)) {
    match par {
        Some(p) if workers > 1 => p.run(&|w| {
            if w < workers {
                job(w)
            }
        }),
        _ => job(0),
    }
}

/// The part of `0..total` that worker `w` of `parts` takes: contiguous ranges whose starts are multiples
/// of `align`, in worker order, together covering `0..total` (some may be empty).
pub(crate) fn chunk(total: usize, parts: usize, w: usize, align: usize) -> Range<usize> {
    let units = total.div_ceil(align);
    let per = units.div_ceil(parts.max(1));
    let start = (w * per * align).min(total);
    let end = ((w + 1) * per * align).min(total);
    start..end
}

/// Workers for an op of `work` units (e.g. multiply-adds) when each should get at least `min_per_worker`,
/// at most `workers`.
pub(crate) fn workers_for(work: usize, min_per_worker: usize, workers: usize) -> usize {
    (work / min_per_worker.max(1)).clamp(1, workers.max(1))
}

/// A mutable slice handed to several workers, each of which takes a part no other worker takes.
pub(crate) struct Shared<'a> {
    ptr: *mut f32,
    len: usize,
    _borrow: PhantomData<&'a mut [f32]>,
}

// SAFETY: a `Shared` is only a pointer to a `&mut [f32]` it borrows; handing out parts is `unsafe`
// (`Shared::part`), whose callers keep the parts disjoint, so sharing it between threads adds no race.
unsafe impl Sync for Shared<'_> {}
// SAFETY: as for `Sync`.
unsafe impl Send for Shared<'_> {}

impl<'a> Shared<'a> {
    /// Shares `data`.
    pub(crate) fn new(data: &'a mut [f32]) -> Self {
        Shared {
            ptr: data.as_mut_ptr(),
            len: data.len(),
            _borrow: PhantomData,
        }
    }

    /// The elements `range` (panics if it is out of bounds).
    ///
    /// # Safety
    ///
    /// While the returned slice lives, no other part overlapping `range` may be used.
    pub(crate) unsafe fn part(&self, range: Range<usize>) -> &'a mut [f32] {
        assert!(range.start <= range.end && range.end <= self.len);
        // SAFETY: in bounds (checked above) of the slice borrowed for 'a; not aliased (caller).
        unsafe { core::slice::from_raw_parts_mut(self.ptr.add(range.start), range.len()) }
    }

    /// The raw pointer to the first element, for writers that check their own bounds (the GEMM's
    /// output, written tile by tile).
    pub(crate) fn as_ptr(&self) -> *mut f32 {
        self.ptr
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_the_range_in_order() {
        for total in [0, 1, 5, 24, 25, 100] {
            for parts in 1..5 {
                for align in [1, 4, 6] {
                    let mut next = 0;
                    for w in 0..parts {
                        let r = chunk(total, parts, w, align);
                        assert_eq!(r.start, next.min(total));
                        assert!(r.start.is_multiple_of(align) || r.is_empty());
                        next = r.end.max(next);
                    }
                    assert_eq!(next, total);
                }
            }
        }
    }
}
