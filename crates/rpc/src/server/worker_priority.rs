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
}
