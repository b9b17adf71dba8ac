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
//! each) come from the arenas and fragment them. [`bound_heap_retention`]
//! pins the threshold at [`MMAP_THRESHOLD_BYTES`]: blocks (at most 4 MB)
//! still come from the arenas, tables above it are mapped and unmapped
//! whole. Measured at `-dbcache=100` over 900 bench blocks: peak RSS 392 ->
//! 376 MiB (and to 329 MiB with flush batches scaled to the cache).
#![allow(unsafe_code)]

/// Allocations from this size up are mapped on their own (glibc).
pub const MMAP_THRESHOLD_BYTES: usize = 4 << 20;

/// Pins glibc's `mmap` threshold at [`MMAP_THRESHOLD_BYTES`] for the whole
/// process (a node calls it once at start; elsewhere a no-op).
pub fn bound_heap_retention() {
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
