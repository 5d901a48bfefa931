//! A pool of worker threads, created once per session and reused by every op: the
//! [`Parallel`](ember_core::Parallel) that `ember-cpu`'s kernels split their work over.
//!
//! A job is a number of tasks and a borrowed closure. `run_tasks` publishes it, and every worker that
//! arrives while it is open takes tasks from a shared counter until none is left; the calling thread
//! does the same, then closes the job and waits only for the workers that took part. A worker that
//! arrives late (its core busy with another process, or asleep) finds the job closed and leaves it
//! alone, so an op never waits for a worker that has not started: on a machine shared with other
//! programs the caller simply does more of the tasks. Nothing is allocated per job. Workers spin for a
//! short while after a job (an inference runs its ops back to back, microseconds apart) and then sleep on
//! a condition variable, so an idle pool costs no CPU.

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

/// Spins of the caller waiting for the workers of a job before it yields its core to them.
const WAIT_SPINS: u32 = 1 << 12;

/// The job's state word: its generation in the high bits, then [`CLOSED`], then the number of workers
/// taking part ([`ACTIVE`]). One word, so that entering (a compare-and-swap that also checks the
/// generation and that the job is open) and closing cannot miss each other.
const GEN_SHIFT: u32 = 16;
const CLOSED: usize = 1 << 15;
const ACTIVE: usize = CLOSED - 1;

/// A job as the workers see it: a borrowed closure with its lifetime erased (see [`ThreadPool::run_tasks`]).
type JobPtr = *const (dyn Fn(usize, usize) + Sync);

#[derive(Clone, Copy)]
struct Job {
    f: JobPtr,
    tasks: usize,
    /// Workers with an index below this take part.
    workers: usize,
}

struct Shared {
    /// Generation, [`CLOSED`] and active workers (see [`GEN_SHIFT`]).
    state: AtomicUsize,
    /// The current job. Written only by `run_tasks` while no worker takes part (the previous job is
    /// closed and its active count is 0), before it opens the next generation with a Release store;
    /// read only by a worker that entered that generation (an Acquire compare-and-swap on `state`).
    job: UnsafeCell<Option<Job>>,
    /// The next task to take.
    next: AtomicUsize,
    /// Set when a worker's task panicked.
    panicked: AtomicBool,
    /// Set when the pool is dropped.
    stop: AtomicBool,
    /// Workers sleep here once they have spun for [`SPIN`] without a job.
    sleep: Mutex<()>,
    wake: Condvar,
    /// Workers asleep (or about to be): `run_tasks` notifies only when there is one.
    sleepers: AtomicUsize,
    /// Workers that have started their loop.
    started: AtomicUsize,
}

// SAFETY: `job` is the only field that is not `Sync` by itself. It is written only by
// `ThreadPool::run_tasks` while no worker can read it (the previous generation is closed with no worker
// active, and `run_tasks` calls are serialized by `run_lock`), and read only by workers that entered the
// generation published after the write (see `Shared::job`).
unsafe impl Sync for Shared {}
// SAFETY: the pointer in `job` is only dereferenced under the protocol above; the closure it points to is
// `Sync`, so calling it from another thread is allowed.
unsafe impl Send for Shared {}

/// A fixed set of worker threads; see the module documentation.
pub struct ThreadPool {
    shared: Arc<Shared>,
    threads: Vec<JoinHandle<()>>,
    /// Serializes `run_tasks` calls from several threads sharing one pool.
    run_lock: Mutex<()>,
}

impl ThreadPool {
    /// A pool of `workers` workers in all: the calling thread and `workers - 1` threads started now
    /// (this returns once each has started). `0` means one per available CPU core.
    pub fn new(workers: usize) -> std::io::Result<Self> {
        let workers = if workers == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            workers
        }
        .min(ACTIVE);
        let shared = Arc::new(Shared {
            state: AtomicUsize::new(CLOSED),
            job: UnsafeCell::new(None),
            next: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            stop: AtomicBool::new(false),
            sleep: Mutex::new(()),
            wake: Condvar::new(),
            sleepers: AtomicUsize::new(0),
            started: AtomicUsize::new(0),
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
        // A worker's start-up (the thread's own set-up) happens before the first job, not in a run.
        while shared.started.load(Ordering::Acquire) < threads.len() {
            std::thread::yield_now();
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
        let parts = self.workers();
        self.run_tasks(parts, parts, &|part, _| job(part));
    }

    fn run_parts(
        &self,
        workers: usize,
        data: &mut [f32],
        part_len: usize,
        job: &(dyn Fn(usize, &mut [f32]) + Sync),
    ) {
        let part_len = part_len.max(1);
        let (len, data) = (data.len(), crate::par::Shared::new(data));
        self.run_tasks(workers, len.div_ceil(part_len), &|i, _| {
            let start = i * part_len;
            // SAFETY: part `i` is the elements `i * part_len..`, disjoint from every other part, and
            // `run_tasks` runs each task once.
            job(i, unsafe { data.part(start..(start + part_len).min(len)) })
        });
    }

    fn run_tasks(&self, workers: usize, tasks: usize, job: &(dyn Fn(usize, usize) + Sync)) {
        if self.threads.is_empty() || workers <= 1 || tasks <= 1 {
            (0..tasks).for_each(|t| job(t, 0));
            return;
        }
        // A poisoned lock only means another caller panicked; the pool's state is still consistent
        // (that call waited for its workers before unwinding).
        let _serial = self.run_lock.lock().unwrap_or_else(|e| e.into_inner());
        let s = &*self.shared;
        let ptr: *const (dyn Fn(usize, usize) + Sync + '_) = job;
        // SAFETY: only the lifetime is erased (the two pointer types differ in nothing else). Workers
        // use the pointer only while they take part in this generation, and this function does not
        // return before the generation is closed with no worker taking part, so `job` outlives every use.
        let f: JobPtr = unsafe { std::mem::transmute(ptr) };
        s.next.store(0, Ordering::Relaxed);
        // SAFETY: no worker reads `job` now: the previous generation is closed with none active (the
        // wait at the end of the previous call), and workers read it only after entering the next one.
        unsafe { *s.job.get() = Some(Job { f, tasks, workers }) };
        // Open the next generation. A plain store is enough: while the state is closed with no worker
        // active, nothing else writes it (workers only enter an open generation).
        let generation = (s.state.load(Ordering::Relaxed) >> GEN_SHIFT).wrapping_add(1);
        s.state.store(generation << GEN_SHIFT, Ordering::SeqCst);
        if s.sleepers.load(Ordering::SeqCst) > 0 {
            let _g = s.sleep.lock().unwrap_or_else(|e| e.into_inner());
            s.wake.notify_all();
        }
        let mine = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            take_tasks(s, tasks, 0, job)
        }));
        // Every task is taken (or this thread's task panicked): close, then wait for the workers that
        // entered to finish theirs.
        s.state.fetch_or(CLOSED, Ordering::AcqRel);
        let mut spins = 0u32;
        while s.state.load(Ordering::Acquire) & ACTIVE != 0 {
            if spins < WAIT_SPINS {
                spins += 1;
                std::hint::spin_loop();
            } else {
                // A worker holding a task may be waiting for this core.
                std::thread::yield_now();
            }
        }
        if let Err(payload) = mine {
            std::panic::resume_unwind(payload);
        }
        if s.panicked.swap(false, Ordering::Relaxed) {
            panic!("an ember-cpu worker thread panicked while running a kernel");
        }
    }
}

/// Runs tasks of the current job as worker `index` until none is left.
fn take_tasks(s: &Shared, tasks: usize, index: usize, job: &(dyn Fn(usize, usize) + Sync)) {
    loop {
        let task = s.next.fetch_add(1, Ordering::Relaxed);
        if task >= tasks {
            return;
        }
        job(task, index);
    }
}

/// A worker's loop: wait for each new generation, enter it if it is still open, take tasks, leave.
fn worker(s: &Shared, index: usize) {
    let mut seen = s.state.load(Ordering::Acquire) >> GEN_SHIFT;
    s.started.fetch_add(1, Ordering::Release);
    loop {
        // Spin, then sleep, until the generation moves.
        let start = Instant::now();
        let mut state = s.state.load(Ordering::Acquire);
        while state >> GEN_SHIFT == seen {
            if s.stop.load(Ordering::Relaxed) {
                return;
            }
            if start.elapsed() < SPIN {
                std::hint::spin_loop();
            } else {
                s.sleepers.fetch_add(1, Ordering::SeqCst);
                let guard = s.sleep.lock().unwrap_or_else(|e| e.into_inner());
                // Checked again under the lock, after announcing this sleeper (both SeqCst, as
                // `run_tasks`'s opening store and its check of `sleepers`): either `run_tasks` sees this
                // sleeper and notifies it, or this load sees the new generation.
                if s.state.load(Ordering::SeqCst) >> GEN_SHIFT == seen
                    && !s.stop.load(Ordering::Relaxed)
                {
                    let _g = s
                        .wake
                        .wait_timeout(guard, Duration::from_millis(50))
                        .unwrap_or_else(|e| e.into_inner());
                }
                s.sleepers.fetch_sub(1, Ordering::SeqCst);
            }
            state = s.state.load(Ordering::Acquire);
        }
        seen = state >> GEN_SHIFT;
        if s.stop.load(Ordering::Relaxed) {
            return;
        }
        // Enter generation `seen` while it is open: one more active worker.
        let entered = loop {
            if state & CLOSED != 0 || state >> GEN_SHIFT != seen {
                break false;
            }
            match s.state.compare_exchange_weak(
                state,
                state + 1,
                Ordering::Acquire,
                Ordering::Acquire,
            ) {
                Ok(_) => break true,
                Err(now) => state = now,
            }
        };
        if !entered {
            continue;
        }
        // SAFETY: this worker entered the generation (an Acquire read of the state `run_tasks` stored
        // with Release after writing `job`), and `run_tasks` does not write `job` again before this
        // worker leaves.
        let job = unsafe { *s.job.get() };
        if let Some(job) = job.filter(|j| index < j.workers) {
            // SAFETY: `run_tasks` keeps the closure alive until every entered worker has left.
            let f = unsafe { &*job.f };
            let run = std::panic::AssertUnwindSafe(|| take_tasks(s, job.tasks, index, f));
            if std::panic::catch_unwind(run).is_err() {
                s.panicked.store(true, Ordering::Relaxed);
            }
        }
        s.state.fetch_sub(1, Ordering::Release);
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

    /// `run_parts` hands every part of the buffer to exactly one call, with its index and length.
    #[test]
    fn every_part_of_a_buffer_goes_to_one_call() {
        let pool = ThreadPool::new(3).unwrap();
        for (workers, len, part_len) in
            [(3, 1000, 7), (2, 64, 64), (3, 5, 9), (3, 0, 4), (1, 10, 3)]
        {
            let mut data = std::vec![-1.0f32; len];
            let calls = AtomicU64::new(0);
            pool.run_parts(workers, &mut data, part_len, &|i, part| {
                calls.fetch_add(1, Ordering::Relaxed);
                assert_eq!(part.len(), part_len.min(len - i * part_len));
                for (j, v) in part.iter_mut().enumerate() {
                    assert_eq!(*v, -1.0, "element written twice");
                    *v = (i * part_len + j) as f32;
                }
            });
            assert_eq!(
                calls.load(Ordering::Relaxed) as usize,
                len.div_ceil(part_len)
            );
            assert!(data.iter().enumerate().all(|(j, &v)| v == j as f32));
        }
    }

    /// Every task runs once, on a worker below the limit, and one worker's calls never overlap.
    #[test]
    fn every_task_runs_once_on_a_worker_of_its_own() {
        let pool = ThreadPool::new(4).unwrap();
        for (workers, tasks) in [(4, 37), (2, 9), (3, 1), (4, 0), (1, 5), (9, 64)] {
            for _ in 0..200 {
                let hits: Vec<AtomicU64> = (0..tasks).map(|_| AtomicU64::new(0)).collect();
                let busy: [AtomicBool; 4] = Default::default();
                pool.run_tasks(workers, tasks, &|t, w| {
                    assert!(w < workers.clamp(1, 4), "worker {w} of {workers}");
                    assert!(!busy[w].swap(true, Ordering::SeqCst), "worker {w} overlaps");
                    hits[t].fetch_add(1, Ordering::Relaxed);
                    busy[w].store(false, Ordering::SeqCst);
                });
                assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
            }
        }
    }

    /// Jobs published while the workers sleep complete, whether the workers wake in time to take part
    /// or the caller has taken every task by then.
    #[test]
    fn jobs_complete_when_workers_wake_late() {
        let pool = ThreadPool::new(3).unwrap();
        for _ in 0..5 {
            std::thread::sleep(SPIN * 3);
            let n = AtomicU64::new(0);
            pool.run_tasks(3, 50, &|_, _| {
                n.fetch_add(1, Ordering::Relaxed);
            });
            assert_eq!(n.load(Ordering::Relaxed), 50);
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
