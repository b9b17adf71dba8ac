//! Giving freed heap memory back to the operating system.
//!
//! glibc's `malloc` keeps memory freed by a thread in that thread's arena
//! and returns it to the kernel only when the top of the heap is free. A
//! background flush frees a whole frozen table (up to `-dbcache`) and its
//! write batches, allocated on several threads: the pages stay resident,
//! and with `-dbcache=100` the process measured ~460 MB instead of the
//! ~350 MB its bounded structures add up to. `malloc_trim(0)` walks every
//! arena and releases their free pages (`madvise`), ~1-5 ms here, once per
//! flush.
//!
//! glibc also raises its `mmap` threshold (up to 32 MiB) each time a large
//! mapped block is freed, after which the cache's shard tables (a few MiB
//! each at small caches), blocks and their prepared forms come from the
//! arenas and fragment them. [`bound_heap_retention`] pins the threshold at
//! [`MMAP_THRESHOLD_BYTES`]: anything from 512 KiB up (shard tables, block
//! buffers, per-block vectors of inputs) is mapped and unmapped whole, a
//! few dozen `mmap`s per block, while transactions' small allocations stay
//! in the arenas. Measured on the whole 2,400-block bench chain at
//! `-dbcache=100` (40 background flushes), peak RSS and import time:
//!
//! | threshold | peak RSS | import | system CPU |
//! |---|---:|---:|---:|
//! | 4 MiB | 362 MiB | 446 s | 42.8 s |
//! | 1 MiB | 340 MiB | 436 s | 42.7 s |
//! | 512 KiB | 309 MiB | 434 s | 43.0 s |
//! | 256 KiB | 309 MiB | 458 s | 47.7 s |
//!
//! (Earlier, over the first 900 blocks: glibc's sliding threshold 392 MiB,
//! 4 MiB 376 MiB.)
#![allow(unsafe_code)]

/// Allocations from this size up are mapped on their own (glibc).
pub const MMAP_THRESHOLD_BYTES: usize = 512 << 10;

/// glibc's own environment variable for the threshold; when the operator
/// sets it, their value stands.
pub const MMAP_THRESHOLD_VARIABLE: &str = "MALLOC_MMAP_THRESHOLD_";

/// Pins glibc's `mmap` threshold at [`MMAP_THRESHOLD_BYTES`] for the whole
/// process (a node calls it once at start; elsewhere a no-op), unless
/// [`MMAP_THRESHOLD_VARIABLE`] is set.
pub fn bound_heap_retention() {
    if std::env::var_os(MMAP_THRESHOLD_VARIABLE).is_some() {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` takes no pointers; it sets an allocator parameter
    // under the allocator's own lock.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES as libc::c_int);
    }
}

/// Releases the free pages of every `malloc` arena (glibc only; elsewhere a
/// no-op).
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes no pointers and only changes the
    // allocator's internal state under its own locks.
    unsafe {
        libc::malloc_trim(0);
    }
}
