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
//! arenas and fragment them. [`bound_heap_retention`] pins the threshold:
//! for a small coins cache (below [`SMALL_CACHE_BYTES`]) at
//! [`SMALL_CACHE_MMAP_THRESHOLD_BYTES`], so that anything from 512 KiB up
//! (shard tables, block buffers, per-block vectors of inputs) is mapped and
//! unmapped whole, a few dozen `mmap`s per block; otherwise at
//! [`MMAP_THRESHOLD_BYTES`]. Measured on the whole 2,400-block bench chain
//! at `-dbcache=100` (40 background flushes), peak RSS and import time:
//!
//! | threshold | peak RSS | import | system CPU |
//! |---|---:|---:|---:|
//! | 4 MiB | 362 MiB | 446 s | 42.8 s |
//! | 1 MiB | 340 MiB | 436 s | 42.7 s |
//! | 512 KiB | 309 MiB | 434 s | 43.0 s |
//! | 256 KiB | 309 MiB | 458 s | 47.7 s |
//!
//! The mapped pages are fresh each time: with scripts skipped at
//! `-dbcache=450` (90 blocks/s, no flush before the exit) 512 KiB doubled
//! the page faults (0.72 -> 1.45 M) and cost 1.5 s of 27 (5 %), while the
//! peak RSS with 4 MiB stays well inside `-dbcache` + 256 MiB there (593
//! MiB), hence the larger threshold for large caches. Small caches pay the
//! same price with scripts skipped: `-reindex-chainstate -dbcache=100` to
//! height 800 took 30.8-34.8 s against 28.3 s with 4 MiB (338 -> 304 MiB).
//! The fix at the right depth is reusing block and prepared-block buffers
//! across blocks, so that large allocations neither fault in fresh pages
//! nor fragment the arenas; until then small caches trade that time for
//! staying inside `-dbcache` + 256 MiB with every script checked.
//!
//! Since each block is parsed once (`ParsedBlock`, issue 13) most of that
//! time is gone: `-reindex-chainstate -assumevalid=<tip>` on the bench
//! chain (2026-11-24, Xeon VM) to height 800 at `-dbcache=100` took
//! 16.5-16.8 s with 512 KiB (0.87-0.90 M faults, 304-305 MiB) against
//! 16.6-16.7 s with 4 MiB (0.46 M faults, 323-333 MiB); to height 2,400 at
//! `-dbcache=450`, 15.9-16.1 s with 4 MiB (0.27 M faults, 581-595 MiB)
//! against 16.3-16.4 s with 512 KiB (0.89 M faults, 556-559 MiB). The
//! split stays: 512 KiB is now free for small caches, and costs 2 % for
//! 30 MiB at large ones.
#![allow(unsafe_code)]

/// Allocations from this size up are mapped on their own (glibc), for a
/// coins cache of at least [`SMALL_CACHE_BYTES`].
pub const MMAP_THRESHOLD_BYTES: usize = 4 << 20;
/// ... and for a smaller cache.
pub const SMALL_CACHE_MMAP_THRESHOLD_BYTES: usize = 512 << 10;
/// Coins caches below this size get [`SMALL_CACHE_MMAP_THRESHOLD_BYTES`].
pub const SMALL_CACHE_BYTES: usize = 256 << 20;

/// glibc's own environment variable for the threshold; when the operator
/// sets it, their value stands.
pub const MMAP_THRESHOLD_VARIABLE: &str = "MALLOC_MMAP_THRESHOLD_";

/// The `mmap` threshold for a coins cache of `cache_bytes_max`.
pub fn mmap_threshold_bytes_for(cache_bytes_max: usize) -> usize {
    if cache_bytes_max < SMALL_CACHE_BYTES {
        SMALL_CACHE_MMAP_THRESHOLD_BYTES
    } else {
        MMAP_THRESHOLD_BYTES
    }
}

/// Pins glibc's `mmap` threshold at [`mmap_threshold_bytes_for`] the coins
/// cache for the whole process (a node calls it once, before it opens the
/// chainstate; elsewhere a no-op), unless [`MMAP_THRESHOLD_VARIABLE`] is
/// set.
pub fn bound_heap_retention(cache_bytes_max: usize) {
    if std::env::var_os(MMAP_THRESHOLD_VARIABLE).is_some() {
        return;
    }
    let threshold_bytes = mmap_threshold_bytes_for(cache_bytes_max);
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` takes no pointers; it sets an allocator parameter
    // under the allocator's own lock.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, threshold_bytes as libc::c_int);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = threshold_bytes;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_caches_map_smaller_allocations() {
        assert_eq!(mmap_threshold_bytes_for(90 << 20), 512 << 10);
        assert_eq!(mmap_threshold_bytes_for(SMALL_CACHE_BYTES - 1), 512 << 10);
        assert_eq!(mmap_threshold_bytes_for(SMALL_CACHE_BYTES), 4 << 20);
        assert_eq!(mmap_threshold_bytes_for(440 << 20), 4 << 20);
    }
}
