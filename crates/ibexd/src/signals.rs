//! SIGINT and SIGTERM ask the node to stop; SIGHUP asks the log to reopen.
//!
//! The handlers only set an atomic flag (the `signal-hook` crate's flag
//! registration, async-signal-safe). The node polls the flag between blocks
//! and shuts down in order: finish the block, flush the coins cache and the
//! block index, close the databases.
//!
//! A second SIGINT or SIGTERM does nothing more than the first, as in Bitcoin
//! Core: killing the process in the middle of a flush would only make the
//! next start replay more blocks, and an impatient second Ctrl-C is common.
//! Whoever really wants the process gone has SIGKILL, which the databases
//! survive (see the crash-consistency notes in `ibex-chainstate`).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

/// A handler could not be installed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SignalError {
    /// The operating system refused the registration.
    #[error("cannot install the handler for signal {signal}: {source}")]
    Register {
        /// The signal number.
        signal: i32,
        /// Why.
        source: std::io::Error,
    },
}

fn register(signal: i32, flag: &Arc<AtomicBool>) -> Result<(), SignalError> {
    signal_hook::flag::register(signal, Arc::clone(flag))
        .map(|_| ())
        .map_err(|source| SignalError::Register { signal, source })
}

/// Makes SIGINT and SIGTERM set `shutdown`.
pub fn register_shutdown_flag(shutdown: &Arc<AtomicBool>) -> Result<(), SignalError> {
    register(SIGINT, shutdown)?;
    register(SIGTERM, shutdown)
}

/// A new shutdown flag that SIGINT and SIGTERM set.
pub fn register_shutdown_signals() -> Result<Arc<AtomicBool>, SignalError> {
    let shutdown = Arc::new(AtomicBool::new(false));
    register_shutdown_flag(&shutdown)?;
    Ok(shutdown)
}

/// Makes SIGHUP set `reopen` (give it [`crate::logging::Logger::reopen_flag`]),
/// so that `logrotate` can move `debug.log` away, as with Core.
pub fn register_log_reopen(reopen: &Arc<AtomicBool>) -> Result<(), SignalError> {
    register(SIGHUP, reopen)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[test]
    fn signals_set_flags_and_a_second_one_is_harmless() {
        let shutdown = register_shutdown_signals().unwrap();
        let reopen = Arc::new(AtomicBool::new(false));
        register_log_reopen(&reopen).unwrap();
        assert!(!shutdown.load(Ordering::Acquire));
        signal_hook::low_level::raise(SIGTERM).unwrap();
        assert!(shutdown.load(Ordering::Acquire));
        // The process is still here after a second signal of either kind.
        signal_hook::low_level::raise(SIGINT).unwrap();
        signal_hook::low_level::raise(SIGTERM).unwrap();
        assert!(shutdown.load(Ordering::Acquire));
        assert!(!reopen.load(Ordering::Acquire));
        signal_hook::low_level::raise(SIGHUP).unwrap();
        assert!(reopen.load(Ordering::Acquire));
    }
}
