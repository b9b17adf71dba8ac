//! The start's check of the last blocks (Core's `CVerifyDB::VerifyDB`,
//! `-checkblocks` 6 unless told otherwise): each of the active chain's last blocks is read back
//! from its block file (level 0), checked as `CheckBlock` checks it (level
//! 1), and its undo record, where it has one, read back against its checksum (level 2), so
//! that a cut-off tip block, a wrong or missing `xor.dat` or a damaged undo
//! record stops the start with the remedy named, rather than failing later
//! in an RPC call or a reorganisation. Core's level 3 (disconnecting the
//! blocks in memory) is not done: reading the undo record whole already
//! finds a damaged one by its checksum.
//!
//! When a block does not read, the genesis block tells whether the key is
//! to blame: its bytes are known, so the key its record is stored with
//! follows from them ([`Chainstate::stored_obfuscation_key`]).

use std::os::unix::fs::FileExt;
use std::path::PathBuf;

use ibex_blockstore::obfuscation::KEY_BYTES;
use ibex_blockstore::{block_file_path, Obfuscation};
use ibex_consensus::check_block_on_network;
use ibex_primitives::BlockHash;

use super::Chainstate;
use crate::error::ChainstateError;
use crate::index::{BlockStatus, EntryId};

/// The highest level of the check done (Core's `-checklevel` numbering: 0
/// reads the block, 1 checks it, 2 reads its undo record); a higher level
/// asked for does what this one does.
pub const CHECK_LEVEL_DONE_MAX: u32 = 2;

/// Bytes of the genesis block compared to find the key it is stored with.
const GENESIS_PROBE_BYTES: usize = 2 * KEY_BYTES;

/// What the check of the last blocks found (Core's "Verification error").
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BlockCheckError {
    /// A block could not be read back, or is not the block indexed.
    #[error("ReadBlock failed at {height}, hash={hash}: {source}")]
    ReadBlock {
        /// Its height.
        height: u32,
        /// Its hash.
        hash: BlockHash,
        /// Why.
        source: Box<ChainstateError>,
    },
    /// A block read back fails `CheckBlock`.
    #[error("found bad block at {height}, hash={hash}: {reason}")]
    BadBlock {
        /// Its height.
        height: u32,
        /// Its hash.
        hash: BlockHash,
        /// Why.
        reason: ibex_consensus::BlockError,
    },
    /// A block's undo record could not be read back or fails its checksum.
    #[error("found bad undo data at {height}, hash={hash}: {source}")]
    BadUndo {
        /// Its height.
        height: u32,
        /// Its hash.
        hash: BlockHash,
        /// Why.
        source: Box<ChainstateError>,
    },
    /// The block files are stored with another key than the one in use:
    /// `xor.dat` was replaced or removed.
    #[error(
        "the block files are obfuscated with the key {} (found from the genesis block), but {} {}",
        hex(.stored_key),
        .key_file.display(),
        match .key_in_use { Some(key) => format!("holds {}", hex(key)), None => "is missing".to_owned() }
    )]
    WrongObfuscationKey {
        /// `xor.dat`.
        key_file: PathBuf,
        /// The key the files are stored with.
        stored_key: [u8; KEY_BYTES],
        /// The key `xor.dat` holds; `None` when it is missing.
        key_in_use: Option<[u8; KEY_BYTES]>,
    },
}

fn hex(key: &[u8; KEY_BYTES]) -> String {
    ibex_primitives::hex::encode(key)
}

impl BlockCheckError {
    /// What the operator should do, as a sentence.
    pub fn remedy(&self) -> String {
        match self {
            BlockCheckError::WrongObfuscationKey { key_file, stored_key, .. } => format!(
                "Please restore {} (its 8 bytes are {} in hex) to recover; -reindex would read the block files with the wrong key too.",
                key_file.display(),
                hex(stored_key)
            ),
            // Core names "-reindex or -reindex-chainstate" here, but only
            // -reindex cures a damaged block or undo record: a chainstate
            // rebuild reads the same block and keeps the undo records the
            // block index points to (as Core's `WriteUndoDataForBlock`
            // keeps a block's undo position once it has one).
            _ => "Please restart with -reindex to recover.".to_owned(),
        }
    }
}

/// What a successful check covered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CheckedBlocks {
    /// Blocks checked.
    pub blocks: u32,
    /// Their transactions.
    pub transactions: u64,
    /// A shutdown request stopped the check before `depth` blocks.
    pub interrupted: bool,
    /// The check stopped above this snapshot base block's height: the
    /// snapshot chainstate has no blocks below it (Core logs
    /// [`crate::SnapshotEvent::VerificationStopped`]'s line).
    pub stopped_at_snapshot_base: Option<u32>,
    /// The check stopped at this height, the first going down whose block
    /// is not stored (pruned); Core logs the same line as for a snapshot.
    pub stopped_without_data: Option<u32>,
}

impl Chainstate {
    /// Checks the active chain's last `depth` blocks at `level` (see the
    /// module docs), from the tip down; a shutdown request (the interrupt
    /// flag) stops it between blocks, as Core's `VerifyDB` checks its
    /// interrupt: `-checkblocks=0` reads every block of the chain.
    pub fn verify_last_blocks(
        &self,
        depth: u32,
        level: u32,
    ) -> Result<CheckedBlocks, BlockCheckError> {
        let mut checked = CheckedBlocks::default();
        let Some(tip_height) = self.active.chain.height() else { return Ok(checked) };
        if depth == 0 {
            return Ok(checked);
        }
        let mut lowest = tip_height.saturating_sub(depth - 1);
        // A snapshot chainstate has no blocks below its base, and no undo
        // data at it: Core's `VerifyDB` stops where the data ends.
        if let Some(snapshot) = &self.snapshot {
            let base_height = self.shared.index.entry(snapshot.base).height;
            if lowest <= base_height {
                checked.stopped_at_snapshot_base = Some(base_height);
                lowest = base_height + 1;
            }
        }
        for height in (lowest..=tip_height).rev() {
            if self.interrupted() {
                checked.interrupted = true;
                break;
            }
            let Some(id) = self.active.chain.at(height) else { break };
            // Core's `VerifyDB` goes back only as far as a pruning node
            // has data.
            let stored = self.shared.index.entry(id).status.has(BlockStatus::HAVE_DATA);
            if self.shared.options.prune.is_enabled() && !stored {
                checked.stopped_without_data = Some(height);
                break;
            }
            checked.transactions += self.verify_block(id, level)?;
            checked.blocks += 1;
        }
        Ok(checked)
    }

    /// Levels 0 to `level` (at most 2) for block `id`; its transaction count.
    fn verify_block(&self, id: EntryId, level: u32) -> Result<u64, BlockCheckError> {
        let entry = self.shared.index.entry(id);
        let (height, hash) = (entry.height, entry.hash);
        let block = match self.read_block(id) {
            Ok(block) => block,
            Err(source) => {
                return Err(self.wrong_key().unwrap_or(BlockCheckError::ReadBlock {
                    height,
                    hash,
                    source: Box::new(source),
                }))
            }
        };
        if level >= 1 {
            check_block_on_network(block.view(), block.block.txids(), &hash, self.params())
                .map_err(|reason| BlockCheckError::BadBlock { height, hash, reason })?;
        }
        // Core reads the undo record only where the index has one: the
        // blocks a SwiftSync sync accounted below its terminal height have
        // none (`crate::engine::swiftsync`).
        if level >= 2 && height > 0 && entry.undo_position.is_some() {
            self.read_undo(id).map_err(|source| BlockCheckError::BadUndo {
                height,
                hash,
                source: Box::new(source),
            })?;
        }
        Ok(block.view().transaction_count() as u64)
    }

    /// [`BlockCheckError::WrongObfuscationKey`] when the genesis block is
    /// stored with another key than the one in use.
    fn wrong_key(&self) -> Option<BlockCheckError> {
        let stored_key = self.stored_obfuscation_key()?;
        if stored_key == self.obfuscation().key() {
            return None;
        }
        let key_file = self.blocks_directory().join("xor.dat");
        let key_in_use = key_file.exists().then(|| self.obfuscation().key());
        Some(BlockCheckError::WrongObfuscationKey { key_file, stored_key, key_in_use })
    }

    /// The key the genesis block's record is stored with, from its known
    /// bytes; `None` when it cannot be read or its bytes fit no one key.
    pub fn stored_obfuscation_key(&self) -> Option<[u8; KEY_BYTES]> {
        let params = self.params();
        let id = self.shared.index.get(&params.genesis_hash)?;
        let position = self.shared.index.entry(id).block_position?;
        let path = block_file_path(self.blocks_directory(), position.file_number);
        let mut stored = [0u8; GENESIS_PROBE_BYTES];
        std::fs::File::open(path).ok()?.read_exact_at(&mut stored, position.data_offset).ok()?;
        let genesis = params.genesis.encode();
        let plain = genesis.get(..GENESIS_PROBE_BYTES)?;
        let mut key = [0u8; KEY_BYTES];
        for (index, (stored_byte, plain_byte)) in stored.iter().zip(plain).enumerate() {
            let key_index = (position.data_offset as usize + index) % KEY_BYTES;
            key[key_index] = stored_byte ^ plain_byte;
        }
        // The second half must decode with the key the first gave.
        let mut decoded = stored;
        Obfuscation::new(key).apply(&mut decoded, position.data_offset);
        (decoded[..] == plain[..]).then_some(key)
    }
}
