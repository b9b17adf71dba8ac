//! Dropping a record's pages from the kernel's page cache once it has been
//! read for the last time.
//!
//! # Why
//! An import (`-reindex`, `-reindex-chainstate`) reads each block once, in
//! order, and meanwhile the coins database writes tables and compactions of
//! about the same size. Every page the kernel puts in its page cache is one
//! it must find free; left cached, the blocks already connected fill memory
//! with pages nobody will read again, and each new page (a block read, a
//! table written) comes from memory not used recently. On the 2-core VM of
//! `docs/benchmarks.md` that costs ~3 us a page against ~0.5 (reading 1.33
//! GB of block files after dropping the caches: 0.98 s of system time,
//! 0.15 s once cached).
//! Telling the kernel the block's pages are done with
//! (`POSIX_FADV_DONTNEED`) frees them at once, and the next pages it needs
//! are those: on the `utxo-heavy` chain to height 2,000 at
//! `-dbcache=100`, system time 8.6-9.4 s against 12.1-13.2 s and the import
//! 32.5-34.6 s against 34.4-34.7 s (docs/utxo-heavy.md).
//!
//! Blocks read for peers or RPC keep the page cache's usual policy.
#![allow(unsafe_code)]

use std::fs::File;

/// Tells the kernel that bytes `offset..offset + length_bytes` of `file`
/// will not be read again soon, so their cached pages can be freed (Linux
/// and other Unixes with `posix_fadvise`; elsewhere nothing). Advice only:
/// a failure changes nothing that can be read.
pub(crate) fn forget_pages(file: &File, offset: u64, length_bytes: u64) {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    {
        use std::os::unix::io::AsRawFd;
        let (Ok(offset), Ok(length)) = (i64::try_from(offset), i64::try_from(length_bytes)) else {
            return;
        };
        // SAFETY: `posix_fadvise` takes a descriptor this `File` owns and
        // plain integers; it reads or writes no memory of ours.
        unsafe {
            libc::posix_fadvise(file.as_raw_fd(), offset, length, libc::POSIX_FADV_DONTNEED);
        }
    }
    #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
    let _ = (file, offset, length_bytes);
}
