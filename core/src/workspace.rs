//! What the heavy kernels (convolutions, fully connected, matrix multiply) get besides their tensors:
//! scratch bytes for their temporaries (packed operands, im2col rows, accumulators), and, on a host with
//! threads, workers to split their tiles over.
//!
//! A kernel table says how much scratch each op asks for ([`ScratchFn`]), for a given number of workers;
//! a session opened with [`Session::with_options`](crate::Session::with_options) reserves the largest
//! request in its arena when it opens, so nothing is allocated while running. The reference kernels ask
//! for none and run on one thread. A kernel must run correctly (if slower) with less scratch than it asked
//! for, or with none: a session opened with [`Session::with_kernels`](crate::Session::with_kernels) gives
//! only what the converter planned.

use crate::op::OpKind;

/// Workers that share the parts of one job: a thread pool on a host (`ember-cpu` has one); there is
/// none on a microcontroller.
pub trait Parallel: Sync {
    /// Number of workers, the calling thread included (at least 1).
    fn workers(&self) -> usize;

    /// Calls `job(w)` once for every part `w` in `0..self.workers()` and returns when every call has
    /// returned. The calls may run concurrently on different workers, or some of them one after the
    /// other on one worker (the calling thread takes over the part of a worker that is late), so a part
    /// must not wait for another. Must not allocate.
    fn run(&self, job: &(dyn Fn(usize) + Sync));

    /// Calls `job(task, worker)` once for every task in `0..tasks` and returns when every call has
    /// returned, using at most `workers` workers: `worker` (below `workers`) names the one running the
    /// task, and no two calls with the same `worker` overlap (so it may index buffers of its own).
    /// Must not allocate.
    ///
    /// The default deals the tasks out in turn over [`Parallel::run`]'s parts; a pool does better by
    /// letting each worker take the next task when it is free, so that a worker slowed down by another
    /// process leaves its tasks to the others.
    fn run_tasks(&self, workers: usize, tasks: usize, job: &(dyn Fn(usize, usize) + Sync)) {
        let workers = workers.clamp(1, self.workers().max(1));
        self.run(&|w| {
            if w < workers {
                (w..tasks).step_by(workers).for_each(|t| job(t, w));
            }
        });
    }
}

/// The scratch bytes and workers a kernel may use during one call.
pub struct Workspace<'s> {
    /// Scratch bytes, 16-byte aligned, owned by this call alone; their content on entry is unspecified.
    pub scratch: &'s mut [u8],
    /// Workers to split the work over, if any.
    pub parallel: Option<&'s dyn Parallel>,
}

impl<'s> Workspace<'s> {
    /// `scratch` and `parallel` as given.
    pub fn new(scratch: &'s mut [u8], parallel: Option<&'s dyn Parallel>) -> Self {
        Workspace { scratch, parallel }
    }

    /// Number of workers (1 without a [`Parallel`]).
    pub fn workers(&self) -> usize {
        self.parallel.map_or(1, |p| p.workers().max(1))
    }
}

/// Scratch bytes a kernel table asks for to run `kind` with inputs of dims `inputs` (in order) and an
/// output of dims `output`, on `workers` workers.
pub type ScratchFn =
    fn(kind: &OpKind, inputs: &[&[usize]], output: &[usize], workers: usize) -> usize;

/// Calls `f` with the scratch `kernels` asks for to run `kind` on these dims (one worker, 16-byte
/// aligned, allocated here): for calling a table's kernel directly, as the kernel test suites do.
#[cfg(feature = "alloc")]
pub fn with_scratch<R>(
    kernels: &crate::Kernels,
    kind: &OpKind,
    inputs: &[&[usize]],
    output: &[usize],
    f: impl FnOnce(Option<&mut Workspace<'_>>) -> R,
) -> R {
    let bytes = kernels.scratch.map_or(0, |f| f(kind, inputs, output, 1));
    let mut buf = crate::AlignedBuf::zeroed(bytes);
    f(Some(&mut Workspace::new(buf.as_mut_bytes(), None)))
}
