//! Measuring one node process: wall time from just before its start to its
//! exit, and its own resource usage from `wait4` (user and system CPU time
//! of all its threads, peak resident set size), with a time limit.
//!
//! How the limit stays safe: the process is first waited for *without*
//! being reaped (`waitid` with `WNOWAIT`), so its process id cannot be
//! reused while the watchdog thread might still kill it; only then, under
//! the lock the watchdog takes to kill, is it reaped with `wait4`. The
//! wall time is taken when `waitid` returns, before the reaping.
#![allow(unsafe_code)]

use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use super::BenchError;

/// How a measured process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// It exited with this status code.
    Exited(i32),
    /// A signal ended it.
    Signalled(i32),
    /// It outlived its time limit and was killed.
    TimedOut,
}

impl RunEnd {
    /// Whether the run succeeded (exit status 0).
    pub fn is_success(self) -> bool {
        self == RunEnd::Exited(0)
    }

    /// The exit status code, if it exited.
    pub fn exit_code(self) -> Option<i32> {
        match self {
            RunEnd::Exited(code) => Some(code),
            RunEnd::Signalled(_) | RunEnd::TimedOut => None,
        }
    }

    /// The signal that ended it, if one did (`SIGKILL` after a time-out).
    pub fn signal(self) -> Option<i32> {
        match self {
            RunEnd::Exited(_) => None,
            RunEnd::Signalled(signal) => Some(signal),
            RunEnd::TimedOut => Some(libc::SIGKILL),
        }
    }

    /// How it ended, in words.
    pub fn describe(self) -> String {
        match self {
            RunEnd::Exited(code) => format!("exit status {code}"),
            RunEnd::Signalled(signal) => format!("killed by signal {signal}"),
            RunEnd::TimedOut => "killed after its time limit (--timeout-s)".to_owned(),
        }
    }
}

/// What one process run measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Measurement {
    /// From just before the start to the exit.
    pub wall: Duration,
    /// CPU time in user mode, all threads.
    pub user: Duration,
    /// CPU time in the kernel, all threads.
    pub system: Duration,
    /// Peak resident set size, in KiB (`ru_maxrss`).
    pub peak_rss_kibibytes: u64,
    /// How it ended.
    pub end: RunEnd,
}

fn timeval_duration(time: libc::timeval) -> Duration {
    let seconds = u64::try_from(time.tv_sec).unwrap_or(0);
    let micros = u64::try_from(time.tv_usec).unwrap_or(0);
    Duration::from_secs(seconds) + Duration::from_micros(micros)
}

/// Waits until process `pid` (a child of this process) has exited, leaving
/// it a zombie: its id stays reserved until [`reap`].
fn wait_without_reaping(pid: libc::pid_t) -> io::Result<()> {
    let id = libc::id_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    loop {
        // SAFETY: `siginfo_t` is a plain C struct; all zeros is a valid value.
        let mut information: libc::siginfo_t = unsafe { std::mem::zeroed() };
        // SAFETY: `information` is a valid, writable `siginfo_t` for the call.
        let result = unsafe {
            libc::waitid(libc::P_PID, id, &mut information, libc::WEXITED | libc::WNOWAIT)
        };
        if result == 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Reaps exited child `pid`: its exit status and resource usage.
fn reap(pid: libc::pid_t) -> io::Result<(ExitStatus, libc::rusage)> {
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `rusage` is a plain C struct; all zeros is a valid value.
        let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `status` and `usage` are valid and writable for the call.
        let result = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if result == pid {
            return Ok((ExitStatus::from_raw(status), usage));
        }
        let error = io::Error::last_os_error();
        if result != -1 || error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Kills `pid` unless it has been reaped (`reaped` under its lock).
fn kill_unless_reaped(pid: libc::pid_t, reaped: &Mutex<bool>) -> bool {
    let guard = reaped.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if *guard {
        return false;
    }
    // SAFETY: kill has no memory effects; `pid` is our unreaped child (a
    // zombie at worst), so the id cannot belong to another process.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    true
}

/// Starts `command` and waits for it, killing it after `timeout`.
pub fn run_measured(command: &mut Command, timeout: Duration) -> io::Result<Measurement> {
    let started = Instant::now();
    let child = command.spawn()?;
    let pid = libc::pid_t::try_from(child.id())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
    let reaped = Arc::new(Mutex::new(false));
    let (finished, finished_receiver) = mpsc::channel::<()>();
    let watchdog_reaped = Arc::clone(&reaped);
    let watchdog = std::thread::spawn(move || match finished_receiver.recv_timeout(timeout) {
        Err(mpsc::RecvTimeoutError::Timeout) => kill_unless_reaped(pid, &watchdog_reaped),
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => false,
    });
    let waited = wait_without_reaping(pid);
    let wall = started.elapsed();
    let reaped_result = {
        let mut guard = reaped.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let result = waited.and_then(|()| reap(pid));
        *guard = result.is_ok();
        result
    };
    let _ = finished.send(());
    let timed_out = watchdog.join().unwrap_or(false);
    // The child is reaped: dropping the handle waits for nothing.
    drop(child);
    let (status, usage) = reaped_result?;
    let end = match (timed_out, status.code(), status.signal()) {
        (true, _, _) => RunEnd::TimedOut,
        (false, Some(code), _) => RunEnd::Exited(code),
        (false, None, signal) => RunEnd::Signalled(signal.unwrap_or(0)),
    };
    Ok(Measurement {
        wall,
        user: timeval_duration(usage.ru_utime),
        system: timeval_duration(usage.ru_stime),
        peak_rss_kibibytes: u64::try_from(usage.ru_maxrss).unwrap_or(0),
        end,
    })
}

/// Sends `signal` to `child` if it has not been reaped (a zombie still
/// holds its id, so the signal reaches no other process).
pub fn send_signal(child: &mut Child, signal: libc::c_int) -> io::Result<()> {
    if child.try_wait()?.is_some() {
        return Ok(());
    }
    let pid = libc::pid_t::try_from(child.id())
        .map_err(|_| io::Error::from(io::ErrorKind::InvalidData))?;
    // SAFETY: kill has no memory effects; `child` is not reaped (checked
    // above, and only this handle reaps it), so `pid` is still its id.
    if unsafe { libc::kill(pid, signal) } == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A command running `program` (at niceness `nice` through `nice -n`,
/// which executes it in place: the measured process is the program).
pub fn niced_command(program: &Path, nice: Option<i32>) -> Command {
    match nice {
        Some(niceness) => {
            let mut command = Command::new("nice");
            command.arg("-n").arg(niceness.to_string()).arg(program);
            command
        }
        None => Command::new(program),
    }
}

/// Writes dirty pages out (`sync`) and drops the page cache, dentries and
/// inodes (`3` to `/proc/sys/vm/drop_caches`, which needs root).
pub fn drop_page_cache() -> Result<(), BenchError> {
    // SAFETY: sync takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::fs::write("/proc/sys/vm/drop_caches", b"3")
        .map_err(|source| BenchError::DropCaches { source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_cpu_time_and_exit_status() {
        // A shell busy for a while, then exiting with 3.
        let script = "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; exit 3";
        let measurement =
            run_measured(Command::new("sh").args(["-c", script]), Duration::from_secs(60))
                .expect("ran");
        assert_eq!(measurement.end, RunEnd::Exited(3));
        assert!(!measurement.end.is_success());
        assert!(measurement.user + measurement.system > Duration::from_millis(10));
        assert!(measurement.wall >= measurement.user / 2, "{measurement:?}");
        assert!(measurement.peak_rss_kibibytes > 0);
    }

    #[test]
    fn kills_a_run_past_its_limit() {
        let started = Instant::now();
        let measurement =
            run_measured(Command::new("sleep").arg("30"), Duration::from_millis(200)).expect("ran");
        assert_eq!(measurement.end, RunEnd::TimedOut);
        assert_eq!(measurement.end.signal(), Some(libc::SIGKILL));
        assert!(started.elapsed() < Duration::from_secs(10));
        let quick = run_measured(&mut Command::new("true"), Duration::from_secs(60)).expect("ran");
        assert!(quick.end.is_success());
    }
}
