//! Writes a RocksDB table (an SST file) of the coins database for ingestion,
//! through `cpp/table_writer.cc`: RocksDB's `SstFileWriter` made with
//! `invalidate_page_cache = false`, which RocksDB's C API (and so the
//! `rocksdb` crate's `SstFileWriter`) cannot ask for.
//!
//! # Why by hand
//! A flush writes its coins as tables that the database then ingests
//! ([`crate::coins::database::ingest::TableFlush`]). The young
//! coins in it are read again within seconds. With the C API's writer every
//! table leaves the page cache as it is written, and those reads go to
//! the disk: on the `utxo-heavy` chain to height 2,000 at `-dbcache=100`
//! an import read 3.9 GB from the disk instead of 2.4 and took 55-61 s
//! instead of 48-50 (docs/utxo-heavy.md).
//!
//! The table has the database's format (bloom filters of
//! [`BLOOM_BITS_PER_KEY`] over whole keys or `'C' || txid` prefixes, no
//! compression), so reads of it use its filters like those of any table.
#![allow(unsafe_code)]

use std::ffi::{c_char, c_int, CStr};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::error::ChainstateError;

/// Bits a key of the tables' bloom filters (the database's setting).
pub const BLOOM_BITS_PER_KEY: f64 = 10.0;

#[repr(C)]
struct RawTableWriter {
    _opaque: [u8; 0],
}

extern "C" {
    fn ibex_table_writer_open(
        path: *const c_char,
        path_bytes: usize,
        bloom_bits_per_key: f64,
        whole_key_filtering: c_int,
        prefix_bytes: usize,
        direct_writes: c_int,
        error: *mut *mut c_char,
    ) -> *mut RawTableWriter;
    fn ibex_table_writer_put(
        writer: *mut RawTableWriter,
        key: *const c_char,
        key_bytes: usize,
        value: *const c_char,
        value_bytes: usize,
        error: *mut *mut c_char,
    ) -> c_int;
    fn ibex_table_writer_delete(
        writer: *mut RawTableWriter,
        key: *const c_char,
        key_bytes: usize,
        error: *mut *mut c_char,
    ) -> c_int;
    fn ibex_table_writer_finish(
        writer: *mut RawTableWriter,
        file_bytes: *mut u64,
        error: *mut *mut c_char,
    ) -> c_int;
    fn ibex_table_writer_destroy(writer: *mut RawTableWriter);
    fn ibex_table_writer_free_error(error: *mut c_char);
}

/// How a table's file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableWrites {
    /// Through the page cache: tables whose keys are read again soon (a
    /// flush's young coins).
    PageCache,
    /// Past it (`O_DIRECT`), for tables written once and not read soon: on
    /// the VMs measured, a page-cache write into memory the machine has not
    /// used for a few seconds costs a fault a page (module docs of
    /// [`crate::coins::database::staged`]). The file system must take it
    /// ([`TableWriter::direct_writes_work`]). Direct writes go in whole
    /// pages: RocksDB's writer truncates the last one's padding and syncs
    /// the file again when it closes it, so a finished table is as durable
    /// as a buffered one.
    Direct,
}

/// Which bloom filters a table carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableFilters {
    /// Over whole keys and over each key's prefix.
    WholeKeysAndPrefixes,
    /// Over each key's prefix only.
    Prefixes,
    /// None: a table of the last level, where the database builds none
    /// either ([`super::options::LAST_LEVEL_FILTERS`]).
    None,
}

impl TableFilters {
    /// The filters a table of a level above the last carries: whole keys
    /// too while the database filters on them.
    pub fn above_last_level(whole_keys: bool) -> TableFilters {
        if whole_keys {
            TableFilters::WholeKeysAndPrefixes
        } else {
            TableFilters::Prefixes
        }
    }

    /// The filters of a table ingested into the last level (a bulk load,
    /// SwiftSync's staged coins), as the database's own tables there.
    pub fn last_level(whole_keys: bool) -> TableFilters {
        if super::options::LAST_LEVEL_FILTERS {
            TableFilters::above_last_level(whole_keys)
        } else {
            TableFilters::None
        }
    }
}

/// A table being written: keys must be added in increasing byte order
/// (RocksDB checks, and a key out of order is an error, not a crash).
pub struct TableWriter {
    raw: *mut RawTableWriter,
    path: PathBuf,
}

// SAFETY: the writer is used by one thread at a time (`&mut self`), and
// RocksDB's `SstFileWriter` holds no thread-affine state.
unsafe impl Send for TableWriter {}

impl TableWriter {
    /// Creates the table file at `path` (replacing one there), with the
    /// `filters` given (prefixes: the first `prefix_bytes` of each key),
    /// written the way `writes` says.
    pub fn create(
        path: &Path,
        filters: TableFilters,
        prefix_bytes: usize,
        writes: TableWrites,
    ) -> Result<TableWriter, ChainstateError> {
        let bytes = path.as_os_str().as_bytes();
        let mut error = std::ptr::null_mut();
        // No bits a key: no filter at all (the shim's convention).
        let bits_per_key = if filters == TableFilters::None { 0.0 } else { BLOOM_BITS_PER_KEY };
        // SAFETY: `bytes` outlives the call; `error` is a valid out pointer.
        let raw = unsafe {
            ibex_table_writer_open(
                bytes.as_ptr().cast(),
                bytes.len(),
                bits_per_key,
                c_int::from(filters == TableFilters::WholeKeysAndPrefixes),
                prefix_bytes,
                c_int::from(writes == TableWrites::Direct),
                &mut error,
            )
        };
        if raw.is_null() {
            return Err(table_error(path, error));
        }
        Ok(TableWriter { raw, path: path.to_path_buf() })
    }

    /// Whether tables written past the page cache work in `directory`:
    /// one written, finished and removed (tmpfs may refuse `O_DIRECT`, and
    /// some file systems open such files and fail the writes: a whole table
    /// tells).
    pub fn direct_writes_work(directory: &Path) -> bool {
        let path = directory.join("ibex-direct-write-probe.sst");
        let written =
            TableWriter::create(&path, TableFilters::WholeKeysAndPrefixes, 1, TableWrites::Direct)
                .and_then(|mut table| {
                    table.put(b"probe", b"probe")?;
                    table.finish()
                });
        let _ = std::fs::remove_file(&path);
        written.is_ok()
    }

    /// Adds `key` -> `value`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<(), ChainstateError> {
        let mut error = std::ptr::null_mut();
        // SAFETY: `self.raw` is a live writer; the slices outlive the call.
        let ok = unsafe {
            ibex_table_writer_put(
                self.raw,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                &mut error,
            )
        };
        self.check(ok, error)
    }

    /// Adds an erasure of `key`.
    pub fn delete(&mut self, key: &[u8]) -> Result<(), ChainstateError> {
        let mut error = std::ptr::null_mut();
        // SAFETY: as in `put`.
        let ok = unsafe {
            ibex_table_writer_delete(self.raw, key.as_ptr().cast(), key.len(), &mut error)
        };
        self.check(ok, error)
    }

    /// Finishes and syncs the table; returns its path and size in bytes.
    pub fn finish(self) -> Result<(PathBuf, u64), ChainstateError> {
        let mut error = std::ptr::null_mut();
        let mut file_bytes = 0u64;
        // SAFETY: `self.raw` is a live writer; the out pointers are valid.
        let ok = unsafe { ibex_table_writer_finish(self.raw, &mut file_bytes, &mut error) };
        self.check(ok, error)?;
        Ok((self.path.clone(), file_bytes))
    }

    fn check(&self, ok: c_int, error: *mut c_char) -> Result<(), ChainstateError> {
        if ok == 1 {
            return Ok(());
        }
        Err(table_error(&self.path, error))
    }
}

impl Drop for TableWriter {
    fn drop(&mut self) {
        // SAFETY: `self.raw` came from `ibex_table_writer_open` and is freed
        // once, here.
        unsafe { ibex_table_writer_destroy(self.raw) };
    }
}

/// The error of a failed call, its message freed.
fn table_error(path: &Path, error: *mut c_char) -> ChainstateError {
    let reason = if error.is_null() {
        "no message".to_owned()
    } else {
        // SAFETY: a non-null `error` is a NUL-terminated string the shim
        // allocated, freed here once.
        let text = unsafe { CStr::from_ptr(error) }.to_string_lossy().into_owned();
        unsafe { ibex_table_writer_free_error(error) };
        text
    };
    ChainstateError::TableWrite { path: path.to_path_buf(), reason }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_without_filters_is_smaller_and_reads_the_same() {
        let directory = tempfile::tempdir().unwrap();
        let keys: Vec<[u8; 12]> = (0..20_000u32)
            .map(|index| {
                let mut key = [0u8; 12];
                key[..4].copy_from_slice(&index.to_be_bytes());
                key[4..8].copy_from_slice(&index.wrapping_mul(2_654_435_761).to_be_bytes());
                key
            })
            .collect();
        let mut sizes = Vec::new();
        for (number, filters) in
            [TableFilters::WholeKeysAndPrefixes, TableFilters::Prefixes, TableFilters::None]
                .into_iter()
                .enumerate()
        {
            let path = directory.path().join(format!("table-{number}.sst"));
            let mut table = TableWriter::create(&path, filters, 4, TableWrites::PageCache).unwrap();
            for key in &keys {
                table.put(key, b"value").unwrap();
            }
            let (written, file_bytes) = table.finish().unwrap();
            sizes.push(file_bytes);
            let database =
                rocksdb::DB::open_default(directory.path().join(format!("database-{number}")))
                    .unwrap();
            database.ingest_external_file(vec![written]).unwrap();
            assert_eq!(database.get(keys[12_345]).unwrap().as_deref(), Some(&b"value"[..]));
            assert_eq!(database.get([0xff; 12]).unwrap(), None);
        }
        // Ten bits a key: whole keys and prefixes (here unique too) ~2 x 25
        // KB of filter, prefixes alone ~25 KB, none 0.
        assert!(sizes[2] + 20_000 < sizes[1], "{sizes:?}");
        assert!(sizes[1] + 20_000 < sizes[0], "{sizes:?}");
    }

    #[test]
    fn the_direct_write_probe_leaves_nothing_and_fails_where_no_table_can_be_written() {
        let directory = tempfile::tempdir().unwrap();
        // Whether the temporary directory's file system takes O_DIRECT
        // varies; the probe answers without leaving its table behind.
        let _ = TableWriter::direct_writes_work(directory.path());
        assert_eq!(std::fs::read_dir(directory.path()).unwrap().count(), 0);
        assert!(!TableWriter::direct_writes_work(&directory.path().join("missing")));
        // A table written either way is a table RocksDB reads back.
        let path = directory.path().join("direct.sst");
        let writes = if TableWriter::direct_writes_work(directory.path()) {
            TableWrites::Direct
        } else {
            TableWrites::PageCache
        };
        let mut table =
            TableWriter::create(&path, TableFilters::WholeKeysAndPrefixes, 1, writes).unwrap();
        table.put(b"a", b"1").unwrap();
        table.put(b"b", b"2").unwrap();
        let (written, file_bytes) = table.finish().unwrap();
        assert_eq!(std::fs::metadata(&written).unwrap().len(), file_bytes);
        let database = rocksdb::DB::open_default(directory.path().join("database")).unwrap();
        database.ingest_external_file(vec![written]).unwrap();
        assert_eq!(database.get(b"b").unwrap().as_deref(), Some(&b"2"[..]));
    }
}
