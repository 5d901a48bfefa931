//! Per-op times of a profiled run, as both backends report them (below the session and the backends,
//! which all name these types).

use std::fmt;

/// How a [`Profile`]'s times were taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimingSource {
    /// The host clock around each op (CPU).
    HostClock,
    /// GPU timestamps around each op's kernels.
    GpuTimestamps,
    /// The host clock around each op's launch followed by a device synchronization (the device offers
    /// no timestamps); includes launch and synchronization overhead.
    HostSynchronized,
}

impl fmt::Display for TimingSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TimingSource::HostClock => "host clock",
            TimingSource::GpuTimestamps => "GPU timestamps",
            TimingSource::HostSynchronized => {
                "host clock around each op with a device sync (no GPU timestamps on this device)"
            }
        })
    }
}

/// One op's time.
#[derive(Clone, Copy, Debug)]
pub struct OpTiming {
    /// Op index in execution order.
    pub index: usize,
    /// Op name (`Conv2d`, `Add`, ...).
    pub op: &'static str,
    /// What ran it (`cpu`, `cubecl`).
    pub kernels: &'static str,
    /// Nanoseconds.
    pub nanos: u64,
}

/// Per-op times of one run.
#[derive(Clone, Debug)]
pub struct Profile {
    /// How the times were taken.
    pub source: TimingSource,
    /// Wall time of the whole run, in nanoseconds.
    pub total_nanos: u64,
    /// One entry per op, in execution order.
    pub ops: Vec<OpTiming>,
}
