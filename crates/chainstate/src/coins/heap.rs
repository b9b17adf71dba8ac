//! Giving freed heap memory back to the operating system, and keeping
//! some of it for the next map.
//!
//! glibc's `malloc` keeps memory freed by a thread in its arena and
//! returns it to the kernel when the top of a heap is free past its trim
//! threshold, or on `malloc_trim`. Allocations from its `mmap` threshold up
//! are mapped on their own and unmapped when freed.
//!
//! # What is kept, and why
//! The cache's map grows from empty to its planned size after every flush
//! (its shard tables doubling), while the frozen map's tables of the same
//! sizes are freed as the writer gives them back. With the `mmap`
//! threshold pinned at 512 KiB for small caches and 4 MiB for large ones,
//! and `malloc_trim(0)` after every flush (without the trim, the frozen
//! table and the writer's batches stay resident, and the process measured
//! ~460 MB instead of ~350 at `-dbcache=100`), every table, block buffer
//! and sort buffer comes as fresh pages, zeroed by the kernel one 4 KiB
//! page at a time: on the `utxo-heavy` chain to height 600 at
//! `-dbcache=100`, 846,000 page faults; to height 2,000, ~4 CPU seconds of
//! the connecting thread in `reserve_rehash`'s faults alone and 17-18 s of
//! system time in a 38-40 s import (docs/utxo-heavy.md).
//!
//! So allocations up to [`MMAP_THRESHOLD_BYTES`] come from the arenas, the
//! trim threshold (free bytes at the top of a heap) is
//! [`RETAINED_FREE_HEAP_BYTES_MAX`], and the trim after a flush runs only
//! when the process's resident size has passed `-dbcache` +
//! [`RETAINED_FREE_HEAP_BYTES_MAX`] (`release_free_memory`): a freed
//! table is the next map's table. Page faults to height 600 come to
//! ~37,000. At each flush the process is brought back inside that bound,
//! itself inside the 256 MiB it may use over `-dbcache`.
//!
//! Keeping the cache's emptied tables for the live map to take whole
//! instead (measured on the same chain) saved the faults but cost as much
//! in cache misses: a full-size table holding a few thousand entries
//! spreads them over all its pages, where a growing table keeps them
//! close.
//!
//! The number of arenas is left to glibc (8 a core): on the `utxo-heavy`
//! chain to height 2,000 (2026-11-25, with every large user counted in
//! `-dbcache`: [`crate::budget`]) `MALLOC_ARENA_MAX=2` raised the peak RSS
//! from 497 to 532 MiB at `-dbcache=450` and from 150 to 160 MiB at
//! `-dbcache=100`, with glibc's free chunks about the same (80-90 MiB).
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicUsize, Ordering};

/// Allocations from this size up are mapped on their own (glibc); below
/// it they come from the arenas, where freed blocks are reused. 32 MiB is
/// the most glibc takes for arenas other than the main one (half their 64
/// MiB heaps): caches of more than ~600 MiB map their shard tables, and
/// flush seldom.
pub const MMAP_THRESHOLD_BYTES: usize = 32 << 20;
/// Free bytes the arenas may keep for reuse: their trim threshold, and what
/// the process may hold over `-dbcache` before the trim after a flush runs
/// (`release_free_memory`).
pub const RETAINED_FREE_HEAP_BYTES_MAX: usize = 192 << 20;

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

/// The resident size past which [`release_free_memory`] trims (0: always).
static RESIDENT_BYTES_MAX: AtomicUsize = AtomicUsize::new(0);

/// Sets glibc's `mmap` threshold to [`MMAP_THRESHOLD_BYTES`] and its trim
/// threshold to [`RETAINED_FREE_HEAP_BYTES_MAX`] for the whole process (a
/// node calls it once, before it opens the chainstate; elsewhere a no-op),
/// unless [`MMAP_THRESHOLD_VARIABLE`] is set; and lets
/// `release_free_memory` keep freed memory while the process's resident
/// size stays within `dbcache_bytes` + [`RETAINED_FREE_HEAP_BYTES_MAX`].
pub fn bound_heap_retention(dbcache_bytes: usize) {
    let resident_bytes_max = dbcache_bytes.saturating_add(RETAINED_FREE_HEAP_BYTES_MAX);
    RESIDENT_BYTES_MAX.store(resident_bytes_max, Ordering::Relaxed);
    if std::env::var_os(MMAP_THRESHOLD_VARIABLE).is_some() {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` takes no pointers; it sets an allocator parameter
    // under the allocator's own lock. Both values fit an `int`.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES as libc::c_int);
        libc::mallopt(libc::M_TRIM_THRESHOLD, RETAINED_FREE_HEAP_BYTES_MAX as libc::c_int);
    }
}

/// Releases the free pages of every `malloc` arena (glibc only; elsewhere
/// a no-op), unless [`bound_heap_retention`] was called and the process's
/// resident size is within its bound.
pub(crate) fn release_free_memory() {
    let resident_bytes_max = RESIDENT_BYTES_MAX.load(Ordering::Relaxed);
    if trim_kept(resident_bytes(), resident_bytes_max) {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes no pointers and only changes the
    // allocator's internal state under its own locks.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Whether freed memory may stay: a bound is set (not 0) and the resident
/// size, when known, is within it.
fn trim_kept(resident_bytes: Option<usize>, resident_bytes_max: usize) -> bool {
    resident_bytes_max > 0 && resident_bytes.is_some_and(|bytes| bytes <= resident_bytes_max)
}

/// The process's resident size (`/proc/self/statm`, Linux; `None`
/// elsewhere or if it cannot be read): ~10 us, once per flush.
fn resident_bytes() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: usize = statm.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: `sysconf` takes no pointers.
    #[cfg(unix)]
    let page_bytes = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
    #[cfg(not(unix))]
    let page_bytes = 4096;
    pages.checked_mul(page_bytes)
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
    fn freed_memory_stays_only_within_the_bound() {
        assert!(trim_kept(Some(100 << 20), 292 << 20));
        assert!(trim_kept(Some(292 << 20), 292 << 20));
        assert!(!trim_kept(Some((292 << 20) + 1), 292 << 20), "past the bound");
        assert!(!trim_kept(Some(1 << 20), 0), "no bound set: always trimmed");
        assert!(!trim_kept(None, 292 << 20), "size unknown: trimmed");
    }

    #[test]
    fn the_resident_size_counts_touched_pages() {
        if !cfg!(target_os = "linux") {
            return;
        }
        let before = resident_bytes().unwrap_or(0);
        assert!(before > 0);
        let touched = std::hint::black_box(vec![1u8; 128 << 20]);
        let after = resident_bytes().unwrap_or(0);
        // Other tests of this binary allocate and free meanwhile (caches of
        // at most 24 MiB): a wide margin.
        assert!(after > before + (64 << 20), "{before} -> {after}");
        drop(touched);
    }
}
