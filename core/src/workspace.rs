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

use crate::ops::{numel, In, Out};
use crate::schema::{OpKind, MAX_RANK};

/// Declares `fn $name`, the kernel `$kernel` in its kernel table's signature: `$kernel`'s arguments and
/// then a [`Workspace`] it does not use (a kernel that needs no scratch and runs on one thread). The
/// reference kernels' table entries and the targets' (`ember-cortex-m`'s) are declared with it.
#[macro_export]
#[doc(hidden)]
macro_rules! single_threaded_kernel {
    ($(#[$doc:meta])* $vis:vis fn $name:ident = $kernel:ident($($arg:ident: $ty:ty),* $(,)?)) => {
        $(#[$doc])*
        $vis fn $name($($arg: $ty,)* _: Option<&mut $crate::Workspace<'_>>) {
            $kernel($($arg),*)
        }
    };
}

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

    /// Calls `job(i, part)` for every part `i` of `data` cut into parts of `part_len` elements (the
    /// last may be shorter), using at most `workers` workers, and returns when every call has returned.
    /// Must not allocate.
    ///
    /// The default runs the parts one after the other on the calling thread (handing parts of one
    /// buffer to several threads takes a pointer that core does not use); a pool overrides it.
    fn run_parts(
        &self,
        workers: usize,
        data: &mut [f32],
        part_len: usize,
        job: &(dyn Fn(usize, &mut [f32]) + Sync),
    ) {
        let _ = workers;
        for (i, part) in data.chunks_mut(part_len.max(1)).enumerate() {
            job(i, part);
        }
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

/// Output elements below which [`split_rows`] runs an op in one call: under about 16k floats the op
/// takes a few microseconds, which the hand-off to the workers would eat.
const SPLIT_MIN_ELEMENTS: usize = 1 << 14;

/// Parts per worker [`split_rows`] cuts an op into, so that a worker slowed down by another process
/// leaves most of its share to the others (they take parts as they free up).
const SPLIT_PARTS_PER_WORKER: usize = 4;

/// Runs the element-wise op `f` on `xs` into `y`, in parts over `parallel`'s workers when the output is
/// large enough: `y` is cut along its outermost axis longer than 1 (the axes before it are 1), and each
/// input is cut alike where its (right-aligned) dimension on that axis equals the output's, or handed
/// whole where it broadcasts along it (1 or absent there). `f` must compute each output element from
/// the input elements that broadcast to it and nothing else, as the element-wise ops do, so that the
/// parts give exactly the whole's result.
pub(crate) fn split_rows<const N: usize>(
    parallel: Option<&dyn Parallel>,
    xs: [In<'_>; N],
    y: Out<'_>,
    f: &(dyn Fn([In<'_>; N], Out<'_>) + Sync),
) {
    let total = y.data.len();
    let rank = y.dims.len();
    let workers = parallel.map_or(1, |p| p.workers().min(total / SPLIT_MIN_ELEMENTS));
    let axis = y.dims.iter().position(|&d| d > 1);
    let (Some(par), Some(axis), true) = (parallel, axis, workers > 1) else {
        return f(xs, y);
    };
    if rank > MAX_RANK || xs.iter().any(|x| x.dims.len() > rank) || total != numel(y.dims) {
        return f(xs, y);
    }
    let rows = y.dims[axis];
    let inner = total / rows;
    let rows_per_part = rows.div_ceil(rows.min(workers * SPLIT_PARTS_PER_WORKER));
    let Out { data, dims } = y;
    par.run_parts(workers, data, rows_per_part * inner, &|i, part| {
        let (first, n) = (i * rows_per_part, part.len() / inner);
        let mut y_dims = [0; MAX_RANK];
        y_dims[..rank].copy_from_slice(dims);
        y_dims[axis] = n;
        // Each input's dims for this part: cut along the axis, or whole.
        let mut x_dims = [[0; MAX_RANK]; N];
        let cut = xs.map(|x| {
            let lead = rank - x.dims.len();
            axis.checked_sub(lead).filter(|&a| x.dims[a] == rows)
        });
        for ((d, x), a) in x_dims.iter_mut().zip(&xs).zip(&cut) {
            d[..x.dims.len()].copy_from_slice(x.dims);
            if let Some(a) = *a {
                d[a] = n;
            }
        }
        let mut j = 0;
        let parts = xs.map(|x| {
            let (d, a) = (&x_dims[j][..x.dims.len()], cut[j]);
            j += 1;
            match a {
                Some(_) => {
                    let x_inner = x.data.len() / rows;
                    let start = (first * x_inner).min(x.data.len());
                    let end = (start + n * x_inner).min(x.data.len());
                    In {
                        data: &x.data[start..end],
                        dims: d,
                    }
                }
                None => x,
            }
        });
        f(
            parts,
            Out {
                data: part,
                dims: &y_dims[..rank],
            },
        );
    });
}
