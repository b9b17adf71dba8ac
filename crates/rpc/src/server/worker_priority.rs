//! The workers run below the HTTP threads' priority: ten nice levels (a
//! CPU weight of about a tenth; they still take every core nobody else
//! wants). Workers do the long jobs (a
//! block's JSON is milliseconds to hundreds of milliseconds); the HTTP
//! thread does short ones (parsing, the fast lane's snapshot reads,
//! copying replies to sockets). On a machine whose cores the workers keep
//! busy, equal priorities made a `getblockcount` wait for the scheduler:
//! at 12 REST clients on 2 cores its 99th percentile was 16.8 ms (p50
//! 1.3 ms); 9.2 ms five levels lower, 5.5 ms ten levels lower with two HTTP
//! threads (docs/benchmarks.md). Linux only (per-thread nice values);
//! elsewhere a no-op.

#![allow(unsafe_code)]

/// Nice levels the workers run below the thread that starts them.
const WORKER_NICE_OFFSET: libc::c_int = 10;

/// Lowers the calling thread's priority by [`WORKER_NICE_OFFSET`]; a
/// failure (not permitted, say) leaves it as it was.
#[cfg(target_os = "linux")]
pub(crate) fn lower_this_thread() {
    // SAFETY: gettid has no preconditions; getpriority and setpriority take
    // plain integers and only read or change this thread's nice value.
    unsafe {
        let thread = libc::gettid();
        let Ok(who) = libc::id_t::try_from(thread) else { return };
        // getpriority can return -1 as a value; errno is not worth
        // checking: a wrong base only shifts the offset's starting point.
        let current = libc::getpriority(libc::PRIO_PROCESS, who);
        let lowered = current.saturating_add(WORKER_NICE_OFFSET).min(19);
        libc::setpriority(libc::PRIO_PROCESS, who, lowered);
    }
}

/// Lowers the calling thread's priority (Linux only).
#[cfg(not(target_os = "linux"))]
pub(crate) fn lower_this_thread() {}

/// The time slice the HTTP threads ask of Linux's EEVDF scheduler (6.12 and
/// later), in nanoseconds; the default is 0.75 ms times 1 + log2(cores).
///
/// On a loaded machine a waking thread waits for the running one's slice
/// to end unless its own deadline is earlier: a short slice gives an HTTP
/// thread woken by a `getblockcount` an early deadline, so it runs at once
/// instead of after another thread's slice; each wake-up on a request's
/// path (the HTTP thread, then the client) could cost up to a slice. The
/// HTTP threads' bursts are microseconds (parse, a snapshot read, one
/// bounded socket write), so a short slice costs them nothing.
const HTTP_THREAD_SLICE_NS: u64 = 100_000;

/// `struct sched_attr` as of Linux 3.14 (`SCHED_ATTR_SIZE_VER0`, 48 bytes).
#[cfg(target_os = "linux")]
#[repr(C)]
#[derive(Default)]
struct SchedulingAttributes {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime_ns: u64,
    deadline_ns: u64,
    period_ns: u64,
}

/// Asks for [`HTTP_THREAD_SLICE_NS`] as the calling thread's time slice,
/// keeping its policy (`SCHED_OTHER`) and nice value. Kernels before 6.12
/// ignore the slice; a refusal leaves the thread as it was.
#[cfg(target_os = "linux")]
pub(crate) fn ask_short_time_slice() {
    // SAFETY: getpriority takes plain integers; sched_setattr reads a live,
    // fully initialised `sched_attr` of the size its `size` field states,
    // and only changes this thread's (pid 0) scheduling.
    unsafe {
        let Ok(who) = libc::id_t::try_from(libc::gettid()) else { return };
        let nice = libc::getpriority(libc::PRIO_PROCESS, who);
        let attributes = SchedulingAttributes {
            size: std::mem::size_of::<SchedulingAttributes>() as u32,
            policy: libc::SCHED_OTHER as u32,
            nice,
            runtime_ns: HTTP_THREAD_SLICE_NS,
            ..SchedulingAttributes::default()
        };
        libc::syscall(libc::SYS_sched_setattr, 0, &attributes as *const SchedulingAttributes, 0);
    }
}

/// Asks for a short time slice (Linux only).
#[cfg(not(target_os = "linux"))]
pub(crate) fn ask_short_time_slice() {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_worker_runs_ten_levels_below_its_starter() {
        // SAFETY: as above.
        let nice_of_this_thread = || unsafe {
            libc::getpriority(libc::PRIO_PROCESS, libc::id_t::try_from(libc::gettid()).unwrap())
        };
        let before = nice_of_this_thread();
        let after = std::thread::spawn(move || {
            lower_this_thread();
            nice_of_this_thread()
        })
        .join()
        .unwrap();
        assert_eq!(after, (before + WORKER_NICE_OFFSET).min(19));
        assert_eq!(nice_of_this_thread(), before, "only the worker's own priority changes");
    }

    /// The slice the kernel reports for the calling thread (0 before 6.12).
    fn slice_of_this_thread() -> u64 {
        let mut attributes = SchedulingAttributes::default();
        let size = std::mem::size_of::<SchedulingAttributes>() as libc::c_uint;
        // SAFETY: sched_getattr writes at most `size` bytes into the live
        // struct it is given.
        let result = unsafe {
            libc::syscall(
                libc::SYS_sched_getattr,
                0,
                &mut attributes as *mut SchedulingAttributes,
                size,
                0,
            )
        };
        assert_eq!(result, 0, "sched_getattr");
        attributes.runtime_ns
    }

    /// The running kernel's (major, minor) version.
    fn kernel_version() -> (u32, u32) {
        let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
        let mut numbers = release.trim().split(['.', '-']).map(|part| part.parse().unwrap_or(0));
        (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0))
    }

    #[test]
    fn an_http_thread_gets_a_short_slice_and_keeps_its_nice_value() {
        let (slice, nice_before, nice_after) = std::thread::spawn(|| {
            let nice = || unsafe {
                // SAFETY: as above.
                libc::getpriority(libc::PRIO_PROCESS, libc::id_t::try_from(libc::gettid()).unwrap())
            };
            let before = nice();
            ask_short_time_slice();
            (slice_of_this_thread(), before, nice())
        })
        .join()
        .unwrap();
        assert_eq!(nice_after, nice_before);
        if kernel_version() >= (6, 12) {
            assert_eq!(slice, HTTP_THREAD_SLICE_NS, "the kernel took the slice");
        } else {
            println!("kernel {:?} predates custom slices: the slice is ignored", kernel_version());
        }
    }
}
