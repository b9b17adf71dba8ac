//! Every file the node creates is readable by its user only.
//!
//! `ibex_peers.dat` holds the address manager's secret key (the one that
//! places addresses in buckets: whoever reads it can plan an eclipse), the
//! RPC cookie is a password, and the log and databases tell what the node
//! knows. Core's `SetupEnvironment` sets a umask of 077 before it creates
//! anything; [`set_private_umask`] does the same as the first act of
//! `ibexd`'s `main`.
#![allow(unsafe_code)]

/// The permission bits a new file or directory never gets: everything for
/// the group and for others (Core's `private_umask`).
pub const PRIVATE_UMASK_BITS: u32 = 0o077;

/// Sets the process's umask to [`PRIVATE_UMASK_BITS`], for every thread and
/// every file created from now on (RocksDB's, the log, the block files).
pub fn set_private_umask() {
    // SAFETY: `umask` only replaces the process's file-creation mask; it
    // cannot fail and touches no memory of ours.
    unsafe {
        libc::umask(PRIVATE_UMASK_BITS as libc::mode_t);
    }
}
