//! A pool of worker threads, created once per session and reused by every op: the
//! [`Parallel`](ember_core::Parallel) that `ember-cpu`'s kernels split their tiles over.
//!
//! `run` publishes one job to every worker and returns when all have run it. Nothing is allocated per job:
//! the job is a borrowed closure, handed over as a pointer through an atomic generation counter, and the
//! caller does the first share itself. Workers spin for a short while after a job (an inference runs its
//! ops back to back, microseconds apart) and then sleep on a condition variable, so an idle pool costs
//! no CPU.

use std::cell::UnsafeCell;
use std::format;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use std::vec::Vec;

use ember_core::Parallel;

/// How long an idle worker spins for the next job before it sleeps.
const SPIN: Duration = Duration::from_micros(200);

/// A job as the workers see it: a borrowed closure with its lifetime erased (see [`ThreadPool::run`]).
type JobPtr = *const (dyn Fn(usize) + Sync);

struct Shared {
    /// Bumped by `run` after it stores a job; a worker runs each generation's job once.
    generation: AtomicUsize,
    /// The current job. Written only by `run` before it bumps `generation`, read by workers after they
    /// see the new generation, and never used after `pending` reaches 0.
    job: UnsafeCell<Option<JobPtr>>,
    /// Workers (besides the caller) that have not finished the current job.
    pending: AtomicUsize,
    /// Set when a worker's share of the job panicked.
    panicked: AtomicBool,
    /// Set when the pool is dropped.
    stop: AtomicBool,
    /// Workers sleep here once they have spun for [`SPIN`] without a job.
    sleep: Mutex<()>,
    wake: Condvar,
    /// Workers asleep (or about to be): `run` notifies only when there is one.
    sleepers: AtomicUsize,
}

// SAFETY: `job` is the only field that is not `Sync` by itself. It is written only by `ThreadPool::run`
// while no worker reads it (every worker has finished the previous generation: `pending` is 0, and `run`
// takes `&self` of a pool whose `run` calls are serialized by `run_lock`), and read by workers only after
// they observe, with Acquire, the generation bump that `run` makes with Release after the write.
unsafe impl Sync for Shared {}
// SAFETY: the pointer in `job` is only dereferenced under the protocol above; the closure it points to is
// `Sync`, so calling it from another thread is allowed.
unsafe impl Send for Shared {}

/// A fixed set of worker threads; see the module documentation.
pub struct ThreadPool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// Serializes `run` calls from several threads sharing one pool.
    run_lock: Mutex<()>,
}

impl ThreadPool {
    /// A pool of `workers` workers in all: the calling thread and `workers - 1` threads started now.
    /// `0` means one per available CPU core.
    pub fn new(workers: usize) -> std::io::Result<Self> {
        let workers = if workers == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            workers
        };
        let shared = Arc::new(Shared {
            generation: AtomicUsize::new(0),
            job: UnsafeCell::new(None),
            pending: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
            sleepers: AtomicUsize::new(0),
        });
        let mut threads = Vec::with_capacity(workers.saturating_sub(1));
        for index in 1..workers {
            let theirs = Arc::clone(&shared);
            let handle = std::thread::Builder::new()
                .name(format!("ember-cpu-{index}"))
                .spawn(move || worker(&theirs, index));
            match handle {
                Ok(h) => threads.push(h),
                Err(e) => {
                    // Stop the ones already started before reporting.
                    drop(ThreadPool {
                        shared,
                        threads,
                        run_lock: Mutex::new(()),
                    });
                    return Err(e);
                }
            }
        }
        Ok(ThreadPool {
            shared,
            threads,
            run_lock: Mutex::new(()),
        })
    }
}

impl Parallel for ThreadPool {
    fn workers(&self) -> usize {
        self.threads.len() + 1
    }

    fn run(&self, job: &(dyn Fn(usize) + Sync)) {
        if self.threads.is_empty() {
            job(0);
            return;
        }
        // A poisoned lock only means another caller panicked; the pool's state is still consistent
        // (that call waited for its workers before unwinding).
        let _serial = self.run_lock.lock().unwrap_or_else(|e| e.into_inner());
        let s = &*self.shared;
        let ptr: *const (dyn Fn(usize) + Sync + '_) = job;
        // SAFETY: only the lifetime is erased (the two pointer types differ in nothing else). The
        // pointer is used by workers only until they decrement `pending`, and this function does not
        // return before `pending` is 0, so `job` outlives every use.
        let ptr: JobPtr = unsafe { std::mem::transmute(ptr) };
        s.pending.store(self.threads.len(), Ordering::Relaxed);
        // SAFETY: no worker reads `job` now: each finished the previous generation (the wait below) and
        // reads it again only after the bump that follows.
        unsafe { *s.job.get() = Some(ptr) };
        s.generation.fetch_add(1, Ordering::SeqCst);
        if s.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = s.sleep.lock().unwrap_or_else(|e| e.into_inner());
            s.wake.notify_all();
        }
        let mine = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(0)));
        while s.pending.load(Ordering::Acquire) != 0 {
            std::hint::spin_loop();
        }
        if let Err(payload) = mine {
            std::panic::resume_unwind(payload);
        }
        if s.panicked.swap(false, Ordering::Relaxed) {
            panic!("an ember-cpu worker thread panicked while running a kernel");
        }
    }
}

/// A worker's loop: wait for each new generation, run its share, report it done.
fn worker(s: &Shared, index: usize) {
    let mut seen = 0usize;
    loop {
        // Spin, then sleep, until the generation moves.
        let start = Instant::now();
        let mut current = s.generation.load(Ordering::Acquire);
        while current == seen {
            if s.stop.load(Ordering::Relaxed) {
                return;
            }
            if start.elapsed() < SPIN {
                std::hint::spin_loop();
            } else {
                s.sleepers.fetch_add(1, Ordering::SeqCst);
                let guard = s.sleep.lock().unwrap_or_else(|e| e.into_inner());
                // Checked again under the lock, after announcing this sleeper (both SeqCst, as `run`'s
                // bump of the generation and its check of `sleepers`): either `run` sees this sleeper
                // and notifies it, or this load sees the new generation.
                if s.generation.load(Ordering::SeqCst) == seen && !s.stop.load(Ordering::Relaxed) {
                    let _g = s
                        .wake
                        .wait_timeout(guard, Duration::from_millis(50))
                        .unwrap_or_else(|e| e.into_inner());
                }
                s.sleepers.fetch_sub(1, Ordering::SeqCst);
            }
            current = s.generation.load(Ordering::Acquire);
        }
        seen = current;
        if s.stop.load(Ordering::Relaxed) {
            return;
        }
        // SAFETY: the Acquire load of the new generation makes `run`'s write of `job` visible, and `run`
        // does not write it again before this worker decrements `pending`.
        let job = unsafe { *s.job.get() };
        if let Some(job) = job {
            // SAFETY: `run` keeps the closure alive until `pending` is 0 (see `ThreadPool::run`).
            let f = unsafe { &*job };
            if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(index))).is_err() {
                s.panicked.store(true, Ordering::Relaxed);
            }
        }
        s.pending.fetch_sub(1, Ordering::Release);
    }
}

impl Drop for ThreadPool {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        {
            let _g = self.shared.sleep.lock().unwrap_or_else(|e| e.into_inner());
            self.shared.wake.notify_all();
        }
        for t in self.threads.drain(..) {
            // A worker that panicked outside a job has nothing left to report.
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU64;

    #[test]
    fn every_worker_runs_each_job_once() {
        let pool = ThreadPool::new(4).unwrap();
        assert_eq!(pool.workers(), 4);
        for round in 0..1000u64 {
            let hits: [AtomicU64; 4] = Default::default();
            pool.run(&|w| {
                hits[w].fetch_add(round + 1, Ordering::Relaxed);
            });
            for h in &hits {
                assert_eq!(h.load(Ordering::Relaxed), round + 1);
            }
        }
    }

    #[test]
    fn a_pool_of_one_runs_on_the_caller() {
        let pool = ThreadPool::new(1).unwrap();
        let me = std::thread::current().id();
        pool.run(&|w| {
            assert_eq!(w, 0);
            assert_eq!(std::thread::current().id(), me);
        });
    }

    #[test]
    fn workers_wake_after_sleeping() {
        let pool = ThreadPool::new(3).unwrap();
        std::thread::sleep(SPIN * 5);
        let sum = AtomicU64::new(0);
        pool.run(&|w| {
            sum.fetch_add(w as u64 + 1, Ordering::Relaxed);
        });
        assert_eq!(sum.load(Ordering::Relaxed), 6);
    }

    #[test]
    fn a_panicking_share_reaches_the_caller() {
        let pool = ThreadPool::new(2).unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            pool.run(&|w| {
                if w == 1 {
                    panic!("share 1");
                }
            })
        }));
        assert!(r.is_err());
        // The pool still works.
        let n = AtomicU64::new(0);
        pool.run(&|_| {
            n.fetch_add(1, Ordering::Relaxed);
        });
        assert_eq!(n.load(Ordering::Relaxed), 2);
    }

    #[test]
    fn one_pool_serves_several_callers() {
        let pool = ThreadPool::new(3).unwrap();
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for _ in 0..200 {
                        let n = AtomicU64::new(0);
                        pool.run(&|_| {
                            n.fetch_add(1, Ordering::Relaxed);
                        });
                        assert_eq!(n.load(Ordering::Relaxed), 3);
                    }
                });
            }
        });
    }
}
