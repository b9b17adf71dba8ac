//! What each block file pair holds (Core's `CBlockFileInfo`): bytes of
//! block and undo data, how many blocks and the lowest and highest of their
//! heights; and which pairs pruning removes (Core's `FindFilesToPrune` and
//! `FindFilesToPruneManual`), as pure functions of that table.
//!
//! Core keeps the table in its block index database; here it is rebuilt
//! when the index loads, from the index's block positions and the files'
//! lengths (the writers append without preallocating, so a file's length is
//! the bytes it uses), and kept up to date as blocks and undo data are
//! appended. Rebuilding costs one pass over the index (~900,000 entries on
//! mainnet, a few milliseconds) and a `stat` per file.

use std::collections::BTreeSet;

/// Core's `BLOCKFILE_CHUNK_SIZE` (16 MiB): block files grow by this much
/// at a time in Core, and pruning is looked at each time one more is used.
pub const BLOCK_FILE_CHUNK_BYTES: u64 = 0x100_0000;
/// Core's block file chunk under `-fastprune` (16 KiB).
pub const FAST_PRUNE_CHUNK_BYTES: u64 = 0x4000;
/// Core's largest block file under `-fastprune` (64 KiB; a larger block
/// gets a file of its own).
pub const FAST_PRUNE_FILE_BYTES_MAX: u64 = 0x1_0000;
/// Core's `UNDOFILE_CHUNK_SIZE` (1 MiB).
pub const UNDO_FILE_CHUNK_BYTES: u64 = 0x10_0000;
/// Core's `MIN_BLOCKS_TO_KEEP`: the blocks below the tip pruning never
/// removes (a reorganisation this deep still finds its undo data).
pub const BLOCKS_TO_KEEP_MIN: u32 = 288;
/// Core's average block size for the IBD buffer of `FindFilesToPrune`.
const IBD_BUFFER_BYTES_PER_BLOCK: u64 = 1_000_000;

/// One file pair's contents.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockFileInfo {
    /// Bytes of the `blk` file in use (Core's `nSize`).
    pub block_bytes: u64,
    /// Bytes of the `rev` file in use (Core's `nUndoSize`).
    pub undo_bytes: u64,
    /// Blocks stored in it (Core's `nBlocks`).
    pub block_count: u32,
    /// Lowest height of a block in it (Core's `nHeightFirst`).
    pub height_first: u32,
    /// Highest height of a block in it (Core's `nHeightLast`).
    pub height_last: u32,
}

impl BlockFileInfo {
    /// Counts a block at `height` in this file.
    fn add_block(&mut self, height: u32) {
        if self.block_count == 0 || height < self.height_first {
            self.height_first = height;
        }
        if self.block_count == 0 || height > self.height_last {
            self.height_last = height;
        }
        self.block_count += 1;
    }
}

/// The table of every file pair, numbered from 0.
#[derive(Debug, Clone, Default)]
pub struct BlockFileTable {
    files: Vec<BlockFileInfo>,
    /// The sum of every file's block and undo bytes.
    usage_bytes: u64,
}

/// Which blocks a prune may remove: files whose blocks all lie between
/// `height_min` and `height_max` (Core's `GetPruneRange`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PruneRange {
    /// Lowest height a pruned file may hold.
    pub height_min: u32,
    /// Highest height a pruned file may hold.
    pub height_max: u32,
}

impl BlockFileTable {
    /// A table for files `0..file_count`, all empty.
    pub fn with_files(file_count: usize) -> BlockFileTable {
        BlockFileTable { files: vec![BlockFileInfo::default(); file_count], usage_bytes: 0 }
    }

    fn file_mut(&mut self, file_number: u32) -> &mut BlockFileInfo {
        let slot = file_number as usize;
        if self.files.len() <= slot {
            self.files.resize(slot + 1, BlockFileInfo::default());
        }
        &mut self.files[slot]
    }

    /// File `file_number`'s contents (empty when unknown).
    pub fn file(&self, file_number: u32) -> BlockFileInfo {
        self.files.get(file_number as usize).copied().unwrap_or_default()
    }

    /// Every file's number and contents.
    pub fn files(&self) -> impl Iterator<Item = (u32, &BlockFileInfo)> {
        (0u32..).zip(self.files.iter())
    }

    /// Records the bytes files `file_number` holds (read from the disk).
    pub fn set_lengths(&mut self, file_number: u32, block_bytes: u64, undo_bytes: u64) {
        let file = self.file_mut(file_number);
        let before = file.block_bytes + file.undo_bytes;
        file.block_bytes = block_bytes;
        file.undo_bytes = undo_bytes;
        self.usage_bytes = self.usage_bytes - before + block_bytes + undo_bytes;
    }

    /// Counts a block at `height` stored in `file_number` (bytes apart).
    pub fn count_block(&mut self, file_number: u32, height: u32) {
        self.file_mut(file_number).add_block(height);
    }

    /// Counts a block at `height` appended to `file_number`, its record
    /// `record_bytes` long.
    pub fn add_block(&mut self, file_number: u32, height: u32, record_bytes: u64) {
        let file = self.file_mut(file_number);
        file.add_block(height);
        file.block_bytes += record_bytes;
        self.usage_bytes += record_bytes;
    }

    /// Counts `record_bytes` of undo data appended to `file_number`.
    pub fn add_undo(&mut self, file_number: u32, record_bytes: u64) {
        self.file_mut(file_number).undo_bytes += record_bytes;
        self.usage_bytes += record_bytes;
    }

    /// Forgets file `file_number` (Core's `CBlockFileInfo::SetNull`).
    pub fn clear(&mut self, file_number: u32) {
        if let Some(file) = self.files.get_mut(file_number as usize) {
            self.usage_bytes -= file.block_bytes + file.undo_bytes;
            *file = BlockFileInfo::default();
        }
    }

    /// Bytes of block and undo data in all files (Core's
    /// `CalculateCurrentUsage`).
    pub fn usage_bytes(&self) -> u64 {
        debug_assert_eq!(
            self.usage_bytes,
            self.files.iter().map(|file| file.block_bytes + file.undo_bytes).sum::<u64>()
        );
        self.usage_bytes
    }

    /// Core's `FindFilesToPrune`: the files to remove, lowest first, until
    /// the usage plus a buffer is under `target_bytes`. The buffer is one
    /// chunk of each file kind, plus, during initial block download, 1 MB
    /// for each block of `blocks_remaining` (so a syncing node prunes well
    /// ahead of the target rather than flushing for a prune every chunk).
    /// Only files whose blocks all lie in `range` go; `current_file` (being
    /// appended to) and files after it never do.
    pub fn files_to_prune(
        &self,
        target_bytes: u64,
        range: PruneRange,
        blocks_remaining: Option<u64>,
        current_file: u32,
    ) -> Vec<u32> {
        let mut usage = self.usage_bytes();
        let mut buffer = BLOCK_FILE_CHUNK_BYTES + UNDO_FILE_CHUNK_BYTES;
        let mut pruned = Vec::new();
        if usage.saturating_add(buffer) < target_bytes {
            return pruned;
        }
        if let Some(remaining) = blocks_remaining {
            buffer = buffer.saturating_add(remaining.saturating_mul(IBD_BUFFER_BYTES_PER_BLOCK));
        }
        for (number, file) in self.files().take(current_file as usize) {
            if file.block_bytes == 0 {
                continue;
            }
            if usage.saturating_add(buffer) < target_bytes {
                break;
            }
            if file.height_last > range.height_max || file.height_first < range.height_min {
                continue;
            }
            usage -= file.block_bytes + file.undo_bytes;
            pruned.push(number);
        }
        pruned
    }

    /// Core's `FindFilesToPruneManual`: every file (before `current_file`)
    /// whose blocks all lie in `range`.
    pub fn files_to_prune_manual(&self, range: PruneRange, current_file: u32) -> Vec<u32> {
        self.files()
            .take(current_file as usize)
            .filter(|(_, file)| file.block_bytes != 0)
            .filter(|(_, file)| {
                file.height_last <= range.height_max && file.height_first >= range.height_min
            })
            .map(|(number, _)| number)
            .collect()
    }

    /// Files below `current_file` that hold nothing: left on disk by a
    /// prune that recorded them pruned and stopped before removing them
    /// (Core's `ScanAndUnlinkAlreadyPrunedFiles`).
    pub fn empty_files_before(&self, current_file: u32) -> BTreeSet<u32> {
        self.files()
            .take(current_file as usize)
            .filter(|(_, file)| file.block_count == 0)
            .map(|(number, _)| number)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    /// Ten files of 100 MiB of blocks and 10 MiB of undo data, file `n`
    /// holding heights `100n..100n+99`.
    fn ten_files() -> BlockFileTable {
        let mut table = BlockFileTable::default();
        for number in 0..10u32 {
            for height in number * 100..number * 100 + 100 {
                table.add_block(number, height, MIB);
            }
            table.add_undo(number, 10 * MIB);
        }
        table
    }

    #[test]
    fn usage_counts_block_and_undo_bytes() {
        let table = ten_files();
        assert_eq!(table.usage_bytes(), 1100 * MIB);
        let file = table.file(3);
        assert_eq!((file.height_first, file.height_last, file.block_count), (300, 399, 100));
    }

    #[test]
    fn pruning_stops_under_the_target_and_keeps_the_range() {
        let table = ten_files();
        let range = PruneRange { height_min: 0, height_max: 1000 - 1 - BLOCKS_TO_KEEP_MIN };
        // 1,100 MiB in use, a 550 MiB target: files of 110 MiB go until
        // usage plus the 17 MiB buffer is under it: six files (440 MiB).
        let pruned = table.files_to_prune(550 * MIB, range, None, 9);
        assert_eq!(pruned, vec![0, 1, 2, 3, 4, 5]);
        // A file with a block above the range stays: file 7 ends at 799,
        // over 711.
        let pruned = table.files_to_prune(100 * MIB, range, None, 9);
        assert_eq!(pruned, vec![0, 1, 2, 3, 4, 5, 6]);
        // Under the target nothing goes.
        assert!(table.files_to_prune(2000 * MIB, range, None, 9).is_empty());
    }

    #[test]
    fn the_ibd_buffer_prunes_ahead_and_the_current_file_never_goes() {
        let table = ten_files();
        let range = PruneRange { height_min: 0, height_max: 999 };
        // 1,000 blocks still to come add 1,000 MB to the buffer: every
        // file but the current one goes.
        let pruned = table.files_to_prune(550 * MIB, range, Some(1000), 9);
        assert_eq!(pruned, (0..9).collect::<Vec<_>>());
        let pruned = table.files_to_prune(550 * MIB, range, Some(1000), 4);
        assert_eq!(pruned, vec![0, 1, 2, 3]);
    }

    #[test]
    fn a_range_floor_keeps_files_below_it() {
        let table = ten_files();
        // A snapshot chainstate may prune only above its base.
        let range = PruneRange { height_min: 250, height_max: 711 };
        assert_eq!(table.files_to_prune(0, range, None, 9), vec![3, 4, 5, 6]);
        assert_eq!(table.files_to_prune_manual(range, 9), vec![3, 4, 5, 6]);
    }

    #[test]
    fn cleared_files_count_nothing_and_are_found_empty() {
        let mut table = ten_files();
        table.clear(0);
        table.clear(2);
        assert_eq!(table.usage_bytes(), 880 * MIB);
        assert_eq!(table.empty_files_before(9), BTreeSet::from([0, 2]));
        let range = PruneRange { height_min: 0, height_max: 999 };
        assert_eq!(table.files_to_prune_manual(range, 4), vec![1, 3]);
    }
}
