//! A run's peak disk use: a thread samples the bytes of the node's block
//! files and coins database while it runs, and keeps the largest.
//!
//! What is counted: in `blocks/`, the `blk?????.dat` and `rev?????.dat`
//! files the node wrote (the files `-prune` bounds; a link to the shared
//! chain's files is not the node's disk use, and the block index under
//! `blocks/index/` is left out, a few MiB); in `chainstate/`, every file,
//! subdirectories included. Both nodes keep them at the same places
//! (`datadir::blocks_directory`, `datadir::chainstate_directory`).
//!
//! Napkin math: a node at `-prune=550` keeps ~550 MiB of block and undo
//! files and looks at pruning each time it starts a 16 MiB chunk of a
//! block file, so its true peak lasts until the next look. A sample every
//! 100 ms misses at most what the node writes in 100 ms: at the 30 to
//! 100 MB/s of blocks an IBD over loopback writes, 3 to 10 MB, under 2 %
//! of 550 MiB. A walk of ~50 block files and a few hundred database
//! tables is well under a millisecond of one core.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

/// How often a run's disk use is sampled, in milliseconds.
pub const SAMPLE_INTERVAL_MS: u64 = 100;
/// The deepest directory walked under `chainstate/` (RocksDB's and Ibex's
/// tables are at most two levels down).
pub const TREE_DEPTH_MAX: usize = 8;

/// The largest disk use seen over a run's samples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskUsePeaks {
    /// The largest size of the block and undo files, bytes.
    pub peak_blocks_bytes: u64,
    /// The largest size of the coins database, bytes.
    pub peak_chainstate_bytes: u64,
    /// The largest sum of both in one sample, bytes (at most the sum of
    /// the two peaks, which may come at different times).
    pub peak_total_bytes: u64,
    /// The samples taken.
    pub sample_count: u64,
}

impl DiskUsePeaks {
    /// Takes one sample into the peaks.
    pub fn record(&mut self, blocks_bytes: u64, chainstate_bytes: u64) {
        self.peak_blocks_bytes = self.peak_blocks_bytes.max(blocks_bytes);
        self.peak_chainstate_bytes = self.peak_chainstate_bytes.max(chainstate_bytes);
        self.peak_total_bytes =
            self.peak_total_bytes.max(blocks_bytes.saturating_add(chainstate_bytes));
        self.sample_count += 1;
    }
}

/// Whether `name` is a block or undo file's (`blk00042.dat`, `rev00042.dat`).
pub fn is_block_or_undo_file(name: &str) -> bool {
    let Some(number) = name.strip_prefix("blk").or_else(|| name.strip_prefix("rev")) else {
        return false;
    };
    let Some(digits) = number.strip_suffix(".dat") else { return false };
    digits.len() == 5 && digits.bytes().all(|byte| byte.is_ascii_digit())
}

/// The length of a regular file at `path` (0 for a link, a directory, or
/// a file removed since it was listed: a node deletes files while it is
/// sampled).
fn regular_file_bytes(path: &Path) -> u64 {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.is_file() => metadata.len(),
        _ => 0,
    }
}

/// Bytes of the block and undo files directly in `blocks_directory`; 0 if
/// it does not exist yet.
pub fn block_files_bytes(blocks_directory: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(blocks_directory) else { return 0 };
    entries
        .flatten()
        .filter(|entry| entry.file_name().to_str().is_some_and(is_block_or_undo_file))
        .map(|entry| regular_file_bytes(&entry.path()))
        .fold(0u64, u64::saturating_add)
}

/// Bytes of the regular files under `directory` down to `depth_left`
/// levels, links not followed; what vanishes or cannot be read while it
/// is walked counts 0 (a database compacts while it is sampled).
pub fn tree_bytes(directory: &Path, depth_left: usize) -> u64 {
    let Ok(entries) = std::fs::read_dir(directory) else { return 0 };
    let mut bytes = 0u64;
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else { continue };
        let entry_bytes = if kind.is_dir() && depth_left > 0 {
            tree_bytes(&path, depth_left - 1)
        } else if kind.is_file() {
            regular_file_bytes(&path)
        } else {
            0
        };
        bytes = bytes.saturating_add(entry_bytes);
    }
    bytes
}

/// A thread sampling a run's disk use until [`DiskUseSampler::finish`].
#[derive(Debug)]
pub struct DiskUseSampler {
    stop: mpsc::Sender<()>,
    samples_taken: Arc<AtomicU64>,
    thread: JoinHandle<DiskUsePeaks>,
}

impl DiskUseSampler {
    /// Starts sampling `blocks_directory`'s block and undo files and
    /// `chainstate_directory` every `sample_interval` (directories that do
    /// not exist yet hold 0 bytes).
    pub fn start(
        blocks_directory: PathBuf,
        chainstate_directory: PathBuf,
        sample_interval: Duration,
    ) -> io::Result<DiskUseSampler> {
        let (stop, stop_receiver) = mpsc::channel::<()>();
        let samples_taken = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&samples_taken);
        let thread = std::thread::Builder::new().name("disk-use".to_owned()).spawn(move || {
            let mut peaks = DiskUsePeaks::default();
            let mut stopping = false;
            loop {
                let blocks_bytes = block_files_bytes(&blocks_directory);
                peaks.record(blocks_bytes, tree_bytes(&chainstate_directory, TREE_DEPTH_MAX));
                counter.store(peaks.sample_count, Ordering::Release);
                if stopping {
                    return peaks;
                }
                // Told to stop (or the sampler dropped): one last sample.
                stopping = !matches!(
                    stop_receiver.recv_timeout(sample_interval),
                    Err(mpsc::RecvTimeoutError::Timeout)
                );
            }
        })?;
        Ok(DiskUseSampler { stop, samples_taken, thread })
    }

    /// The samples taken so far.
    pub fn samples_taken(&self) -> u64 {
        self.samples_taken.load(Ordering::Acquire)
    }

    /// Takes a last sample (what the node left), stops the thread and
    /// returns the peaks.
    pub fn finish(self) -> DiskUsePeaks {
        // A send fails only if the thread has ended, which it does only
        // when told to: the join below reports a panic either way.
        let _ = self.stop.send(());
        match self.thread.join() {
            Ok(peaks) => peaks,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    const TEST_INTERVAL_MS: u64 = 5;

    /// Waits until `sampler` has taken two samples more than now: one may
    /// have been under way when the files changed; the next saw them.
    fn wait_for_new_samples(sampler: &DiskUseSampler) {
        let target = sampler.samples_taken() + 2;
        let started = Instant::now();
        while sampler.samples_taken() < target {
            assert!(started.elapsed() < Duration::from_secs(60), "the sampler stalled");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn records_peaks_per_directory_and_of_the_sum_at_one_sample() {
        let mut peaks = DiskUsePeaks::default();
        peaks.record(3_000, 1_000);
        peaks.record(500, 2_000);
        peaks.record(0, 0);
        let expected = DiskUsePeaks {
            peak_blocks_bytes: 3_000,
            peak_chainstate_bytes: 2_000,
            peak_total_bytes: 4_000,
            sample_count: 3,
        };
        assert_eq!(peaks, expected);
    }

    #[test]
    fn counts_block_and_undo_files_and_every_chainstate_file_but_links() {
        let root = tempfile::tempdir().expect("temporary directory");
        let (blocks, chainstate) = (root.path().join("blocks"), root.path().join("chainstate"));
        assert_eq!((block_files_bytes(&blocks), tree_bytes(&chainstate, 8)), (0, 0));
        std::fs::create_dir_all(blocks.join("index")).expect("mkdir");
        std::fs::create_dir_all(chainstate.join("tables")).expect("mkdir");
        for (name, bytes) in [("blk00000.dat", 100), ("rev00000.dat", 10), ("xor.dat", 8)] {
            std::fs::write(blocks.join(name), vec![0u8; bytes]).expect("write");
        }
        std::fs::write(blocks.join("index/000003.ldb"), [0u8; 50]).expect("write");
        std::fs::write(blocks.join("blk0001.dat"), [0u8; 7]).expect("write");
        std::os::unix::fs::symlink(blocks.join("blk00000.dat"), blocks.join("blk00001.dat"))
            .expect("link");
        assert_eq!(block_files_bytes(&blocks), 110, "only blk/rev files, links not followed");
        std::fs::write(chainstate.join("000004.sst"), [0u8; 40]).expect("write");
        std::fs::write(chainstate.join("tables/1.sst"), [0u8; 2]).expect("write");
        assert_eq!(tree_bytes(&chainstate, 8), 42);
        assert_eq!(tree_bytes(&chainstate, 0), 40, "the depth is bounded");
    }

    #[test]
    fn keeps_the_peak_of_files_that_grow_and_shrink() {
        let root = tempfile::tempdir().expect("temporary directory");
        let (blocks, chainstate) = (root.path().join("blocks"), root.path().join("chainstate"));
        let interval = Duration::from_millis(TEST_INTERVAL_MS);
        let sampler =
            DiskUseSampler::start(blocks.clone(), chainstate.clone(), interval).expect("started");
        wait_for_new_samples(&sampler);
        std::fs::create_dir_all(&blocks).expect("mkdir");
        std::fs::create_dir_all(&chainstate).expect("mkdir");
        std::fs::write(blocks.join("blk00000.dat"), vec![1u8; 3_000]).expect("write");
        std::fs::write(blocks.join("rev00000.dat"), vec![1u8; 1_000]).expect("write");
        std::fs::write(chainstate.join("000001.sst"), vec![1u8; 1_000]).expect("write");
        wait_for_new_samples(&sampler);
        // Pruned: the first pair removed; the database grows by compaction.
        std::fs::remove_file(blocks.join("blk00000.dat")).expect("remove");
        std::fs::remove_file(blocks.join("rev00000.dat")).expect("remove");
        std::fs::write(blocks.join("blk00001.dat"), vec![1u8; 500]).expect("write");
        std::fs::write(chainstate.join("000002.sst"), vec![1u8; 1_500]).expect("write");
        wait_for_new_samples(&sampler);
        std::fs::remove_file(chainstate.join("000001.sst")).expect("remove");
        let peaks = sampler.finish();
        assert_eq!(peaks.peak_blocks_bytes, 4_000);
        assert_eq!(peaks.peak_chainstate_bytes, 2_500);
        assert_eq!(peaks.peak_total_bytes, 5_000, "4,000 + 1,000, then 500 + 2,500");
        assert!(peaks.sample_count >= 7, "{peaks:?}");
        // What the node left is below the peaks: the last sample saw it.
        assert_eq!(block_files_bytes(&blocks) + tree_bytes(&chainstate, 8), 2_000);
    }
}
