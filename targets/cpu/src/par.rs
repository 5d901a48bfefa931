//! Splitting an op over the workers of a [`Parallel`]: contiguous ranges the workers take as they free
//! up, and mutable buffers
//! that several workers write in disjoint parts.

use core::marker::PhantomData;
use core::ops::Range;

use ember_core::Parallel;

/// Pieces per worker an op is cut into by [`ranges`]: enough that a worker slowed down by another
/// process leaves most of its share to the others (they take pieces as they free up), few enough that
/// each piece is still a long run of work.
const PIECES_PER_WORKER: usize = 4;

/// Calls `job(range, worker)` over ranges that together cover `0..total`, each starting at a multiple of
/// `align`: on up to `workers` workers of `par`, which take the ranges as they free up (`worker` names
/// the one running a call, below `workers`; its calls never overlap), or as one call here.
pub(crate) fn ranges(
    par: Option<&dyn Parallel>,
    workers: usize,
    total: usize,
    align: usize,
    job: &(dyn Fn(Range<usize>, usize) + Sync),
) {
    let units = total.div_ceil(align.max(1));
    match par {
        Some(p) if workers > 1 && units > 1 => {
            let pieces = units.min(workers * PIECES_PER_WORKER);
            // Piece `i` is units `units * i / pieces ..`: near-equal pieces, none empty.
            let at = |i: usize| (units * i / pieces * align).min(total);
            p.run_tasks(workers, pieces, &|piece, worker| {
                let range = at(piece)..at(piece + 1);
                if !range.is_empty() {
                    job(range, worker)
                }
            });
        }
        _ if total > 0 => job(0..total, 0),
        _ => {}
    }
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
    fn ranges_cover_the_whole_once_in_aligned_pieces() {
        let pool = crate::ThreadPool::new(3).unwrap();
        for par in [None, Some(&pool as &dyn Parallel)] {
            for total in [0, 1, 5, 24, 25, 100, 1000] {
                for workers in 1..5 {
                    for align in [1, 4, 6] {
                        let seen = std::sync::Mutex::new(std::vec::Vec::new());
                        ranges(par, workers, total, align, &|r, w| {
                            assert!(w < workers);
                            assert!(r.start.is_multiple_of(align) && r.end <= total);
                            seen.lock().unwrap().push(r);
                        });
                        let mut seen = seen.into_inner().unwrap();
                        seen.sort_by_key(|r| r.start);
                        let mut next = 0;
                        for r in seen {
                            assert_eq!(r.start, next);
                            next = r.end;
                        }
                        assert_eq!(next, total);
                    }
                }
            }
        }
    }
}
