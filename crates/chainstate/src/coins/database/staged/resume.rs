//! Keeping a SwiftSync attempt's staged coins across a shutdown or a crash
//! (`crate::swiftsync::checkpoint`): the `'S'` record then holds the
//! attempt's checkpoint instead of the plain marker, and each bucket file
//! is synced and its length recorded in it. A start that resumes cuts each
//! file back to that length: whatever was appended after the checkpoint
//! (before a crash) is in none of its sums.

use std::fs::OpenOptions;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::sync::Mutex;

use rocksdb::WriteOptions;

use super::{CoinBuckets, BUCKET_COUNT_MAX, STAGING_KEY};
use crate::coins::database::CoinsDatabase;
use crate::error::ChainstateError;

/// The `'S'` record of an attempt that keeps no checkpoint.
pub(crate) const STAGING_MARKER: [u8; 1] = [1];

impl CoinsDatabase {
    /// The `'S'` record: `None` when no attempt's coins are staged.
    pub(crate) fn staging_record(&self) -> Result<Option<Vec<u8>>, ChainstateError> {
        Ok(self.raw().get(STAGING_KEY)?)
    }

    /// Replaces the `'S'` record (a checkpoint, or the plain marker again
    /// before the bucket files are consumed), durable before this returns.
    pub(crate) fn write_staging_record(&self, record: &[u8]) -> Result<(), ChainstateError> {
        let mut options = WriteOptions::default();
        options.disable_wal(true);
        self.raw().put_opt(STAGING_KEY, record, &options)?;
        self.persist_memtables()
    }
}

impl CoinBuckets {
    /// Writes out and syncs every bucket file; their lengths in bytes, in
    /// bucket order. No worker may append meanwhile.
    pub(crate) fn sync_lengths(&self) -> Result<Vec<u64>, ChainstateError> {
        let io = |source| ChainstateError::TableDirectory { path: self.directory.clone(), source };
        let mut lengths = Vec::with_capacity(self.files.len());
        for file in &self.files {
            let mut guard = file.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let closed =
                || io(std::io::Error::other("bucket checkpointed after its tables were written"));
            let writer = guard.as_mut().ok_or_else(closed)?;
            writer.flush().map_err(io)?;
            let file = writer.get_mut();
            file.sync_all().map_err(io)?;
            lengths.push(file.stream_position().map_err(io)?);
        }
        Ok(lengths)
    }

    /// The bucket files of a checkpoint that recorded `lengths`, each cut
    /// back to its length and open for appending. An error when their
    /// count is not one the buckets are made with, or a file is missing
    /// or shorter than recorded (the attempt then starts again).
    pub(crate) fn reopen(
        database: &CoinsDatabase,
        lengths: &[u64],
    ) -> Result<CoinBuckets, ChainstateError> {
        let directory = database.buckets_directory();
        let io = |source| ChainstateError::TableDirectory { path: directory.clone(), source };
        let count = lengths.len();
        if !count.is_power_of_two() || count > BUCKET_COUNT_MAX {
            return Err(io(std::io::Error::other("a checkpoint names no valid bucket count")));
        }
        let mut files = Vec::with_capacity(count);
        for (bucket, &length) in lengths.iter().enumerate() {
            let path = directory.join(format!("bucket-{bucket}"));
            let mut file = OpenOptions::new().write(true).open(&path).map_err(io)?;
            if file.metadata().map_err(io)?.len() < length {
                return Err(io(std::io::Error::other(
                    "a bucket file is shorter than checkpointed",
                )));
            }
            file.set_len(length).map_err(io)?;
            file.seek(SeekFrom::Start(length)).map_err(io)?;
            files.push(Mutex::new(Some(BufWriter::with_capacity(64 << 10, file))));
        }
        let bits = count.trailing_zeros();
        Ok(CoinBuckets { directory, bits, files })
    }
}
