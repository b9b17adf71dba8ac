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
//!
//! The number of arenas is left to glibc (8 a core): on the `utxo-heavy`
//! chain to height 2,000 (2026-11-25, with every large user counted in
//! `-dbcache`: [`crate::budget`]) `MALLOC_ARENA_MAX=2` raised the peak RSS
//! from 497 to 532 MiB at `-dbcache=450` and from 150 to 160 MiB at
//! `-dbcache=100`, with glibc's free chunks about the same (80-90 MiB).
#![allow(unsafe_code)]

/// Allocations from this size up are mapped on their own (glibc), for a
/// coins cache of at least [`SMALL_CACHE_BYTES`].
pub const MMAP_THRESHOLD_BYTES: usize = 4 << 20;
/// ... and for a smaller cache.
pub const SMALL_CACHE_MMAP_THRESHOLD_BYTES: usize = 512 << 10;
/// Coins caches below this size get [`SMALL_CACHE_MMAP_THRESHOLD_BYTES`].
pub const SMALL_CACHE_BYTES: usize = 256 << 20;

/// Allocations of the coins cache's tables from this size up are backed by
/// transparent huge pages where the kernel offers them
/// ([`TableAllocator`]).
pub const HUGE_PAGE_TABLE_BYTES_MIN: usize = 4 << 20;
/// The size of a transparent huge page on x86-64 and most arm64 kernels.
const HUGE_PAGE_BYTES: usize = 2 << 20;

/// The allocator of the coins cache's hash tables: the global allocator,
/// plus `madvise(MADV_HUGEPAGE)` on the 2 MiB-aligned part of every table
/// of at least [`HUGE_PAGE_TABLE_BYTES_MIN`].
///
/// # Why
/// A lookup in a cache of hundreds of MiB lands on a random 4 KiB page:
/// the TLB (a few thousand entries) covers ~8 MiB of it, so nearly every
/// lookup also walks the page tables. `perf` on the bench chain's
/// scripts-skipped `-reindex-chainstate` (Xeon VM, `-dbcache=450`, 2M
/// coins in a 440 MiB table) put a third of the connecting thread's time in
/// `CoinMap::contains_key`, ~280 ns per lookup. With 2 MiB pages the table
/// needs ~220 TLB entries. Linux's default THP mode is `madvise`, so the
/// table must ask for them; the kernel falls back to small pages when it
/// has no huge page to give, and ignores the advice where THP is off.
#[derive(Debug, Clone, Copy, Default)]
pub struct TableAllocator;

// SAFETY: every block comes from and goes back to the global allocator
// with the same layout; `madvise` with MADV_HUGEPAGE changes only how the
// kernel backs pages inside the block, never its contents or its validity.
unsafe impl allocator_api2::alloc::Allocator for TableAllocator {
    fn allocate(
        &self,
        layout: std::alloc::Layout,
    ) -> Result<std::ptr::NonNull<[u8]>, allocator_api2::alloc::AllocError> {
        let block = allocator_api2::alloc::Global.allocate(layout)?;
        if layout.size() >= HUGE_PAGE_TABLE_BYTES_MIN {
            advise_huge_pages(block.cast::<u8>().as_ptr(), layout.size());
        }
        Ok(block)
    }

    unsafe fn deallocate(&self, pointer: std::ptr::NonNull<u8>, layout: std::alloc::Layout) {
        // SAFETY: the caller passes a block this allocator gave with this
        // layout, which came from `Global` unchanged.
        unsafe { allocator_api2::alloc::Global.deallocate(pointer, layout) }
    }
}

/// Asks the kernel to back the 2 MiB-aligned pages inside `start..start +
/// length` with huge pages (Linux; elsewhere a no-op).
fn advise_huge_pages(start: *mut u8, length: usize) {
    let address = start as usize;
    let first = address.next_multiple_of(HUGE_PAGE_BYTES);
    let end = (address + length) / HUGE_PAGE_BYTES * HUGE_PAGE_BYTES;
    if end <= first {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: the range lies inside a block just allocated and owned by
    // the caller; MADV_HUGEPAGE is advice and never changes its contents.
    // A failure (THP not built in) leaves small pages: nothing to handle.
    unsafe {
        libc::madvise(first as *mut libc::c_void, end - first, libc::MADV_HUGEPAGE);
    }
}

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
    fn table_blocks_of_every_size_hold_their_bytes() {
        use allocator_api2::alloc::Allocator;
        for size in [64, HUGE_PAGE_TABLE_BYTES_MIN - 1, HUGE_PAGE_TABLE_BYTES_MIN, 9 << 20] {
            let layout = std::alloc::Layout::from_size_align(size, 16).unwrap_or_else(|_| {
                unreachable!("valid layout");
            });
            let block = TableAllocator.allocate(layout).unwrap_or_else(|_| unreachable!("memory"));
            let pointer = block.cast::<u8>().as_ptr();
            // SAFETY: the block is `size` bytes long and owned here.
            let bytes = unsafe { std::slice::from_raw_parts_mut(pointer, size) };
            bytes.iter_mut().enumerate().for_each(|(index, byte)| *byte = index as u8);
            assert!(bytes.iter().enumerate().all(|(index, byte)| *byte == index as u8));
            // SAFETY: allocated above with this layout.
            unsafe { TableAllocator.deallocate(block.cast(), layout) };
        }
    }

    #[test]
    fn small_caches_map_smaller_allocations() {
        assert_eq!(mmap_threshold_bytes_for(90 << 20), 512 << 10);
        assert_eq!(mmap_threshold_bytes_for(SMALL_CACHE_BYTES - 1), 512 << 10);
        assert_eq!(mmap_threshold_bytes_for(SMALL_CACHE_BYTES), 4 << 20);
        assert_eq!(mmap_threshold_bytes_for(440 << 20), 4 << 20);
    }
}
