//! The read API: the questions other threads (P2P, RPC) ask the engine,
//! each answered with an owned value ([`IndexedBlock`], [`CoinsAtTip`],
//! a locator, headers, ...) so nothing outside the crate reaches into the
//! block index, the active chain or the coins.
//!
//! A [`ChainReader`] hands out a [`ReadView`]: [`ChainReader::settled`] for
//! reads that answer clients and peers (the RPC, serving blocks and
//! headers, tip announcements), [`ChainReader::unsettled`] for the sync's
//! own reads of the block index and the header chains (see
//! [`crate::engine::reader`] for what each sees and costs). Each method is
//! one query run on the engine's thread between blocks; block and undo
//! bytes are read on the caller's thread from the positions an
//! [`IndexedBlock`] gives ([`ChainReader::read_stored_block`],
//! [`ChainReader::read_stored_undo`]), each checked to belong to its block.

mod answers;
mod assumeutxo;
pub(crate) mod coin_set;
mod header_chains;
mod pruning;
#[cfg(test)]
mod settled_state_tests;
#[cfg(test)]
mod tests;

use std::time::Duration;

use ibex_primitives::txoutset::TxOutSetHashType;
use ibex_primitives::{BlockHash, Header, OutPoint};

pub use answers::{
    BestChainBlocks, BlockAncestry, BlocksAtTip, CoinsAtTip, ForkPoint, IndexedBlock, TipState,
    TxOutSetAtTip, LOCATOR_ENTRIES_MAX, LOCATOR_HASHES_READ_MAX, MAX_TIP_AGE_SECONDS,
};
pub use assumeutxo::ChainstatesAnswer;
pub use coin_set::{ChainBlock, ChainToHeight, CoinSetAtTip, CoinSetTargetError};
pub use pruning::BlockStorage;

use super::reader::{ChainReader, ReadError};
use super::tips::ChainTip;
use super::Chainstate;
use crate::coins::txoutset::stats_of_view;
use crate::error::ChainstateError;
use crate::undo::BlockUndo;

/// Questions to the engine through a reader, all against the same kind of
/// state (settled or not) and each waiting at most the same timeout.
#[derive(Debug, Clone, Copy)]
pub struct ReadView<'a> {
    reader: &'a ChainReader,
    settled: bool,
    timeout: Duration,
}

impl ChainReader {
    /// Reads against a settled state (the pending script verdicts are
    /// settled first), each waiting at most `timeout`.
    pub fn settled(&self, timeout: Duration) -> ReadView<'_> {
        ReadView { reader: self, settled: true, timeout }
    }

    /// Reads at the engine's next pause without settling the pending
    /// verdicts (no pipeline bubble): for the block index and the header
    /// chains; the active chain may include blocks a failed verdict would
    /// roll back. Each waits at most `timeout`.
    pub fn unsettled(&self, timeout: Duration) -> ReadView<'_> {
        ReadView { reader: self, settled: false, timeout }
    }

    /// The undo data of `block` (an entry read with a [`ReadView`]), read
    /// and decoded on the calling thread. It must be that block's: its
    /// checksum covers the block's parent hash, and it has one record per
    /// transaction after the coinbase, else an error
    /// ([`ChainstateError::UndoMismatch`], or the block store's checksum
    /// error).
    pub fn read_stored_undo(&self, block: &IndexedBlock) -> Result<BlockUndo, ChainstateError> {
        let hash = block.hash;
        let position = block.undo_position.ok_or(ChainstateError::MissingBlockData { hash })?;
        let files = self.files();
        let payload = ibex_blockstore::read_undo(
            &files.directory,
            position,
            &files.obfuscation,
            &block.header.previous_block_hash,
        )?;
        let undo = BlockUndo::decode(&payload)
            .map_err(|reason| ChainstateError::CorruptUndo { hash, reason })?;
        let transactions_after_coinbase =
            usize::try_from(block.transaction_count).ok().and_then(|count| count.checked_sub(1));
        if transactions_after_coinbase != Some(undo.transactions.len()) {
            return Err(ChainstateError::UndoMismatch { hash });
        }
        Ok(undo)
    }
}

impl ReadView<'_> {
    fn ask<R: Send + 'static>(
        &self,
        read: impl FnOnce(&Chainstate) -> R + Send + 'static,
    ) -> Result<R, ReadError> {
        self.reader.send_query(self.settled, read, self.timeout)
    }

    /// The block `hash`, if indexed.
    pub fn block(&self, hash: &BlockHash) -> Result<Option<IndexedBlock>, ReadError> {
        let hash = *hash;
        self.ask(move |chainstate| answers::block(chainstate, &hash))
    }

    /// The blocks `hashes` and the tip, read together.
    pub fn blocks_at_tip(&self, hashes: &[BlockHash]) -> Result<BlocksAtTip, ReadError> {
        let hashes = hashes.to_vec();
        self.ask(move |chainstate| answers::blocks_at_tip(chainstate, &hashes))
    }

    /// The tip (`None` before the genesis block is connected).
    pub fn tip(&self) -> Result<Option<IndexedBlock>, ReadError> {
        self.ask(answers::tip)
    }

    /// The tip with the best header's height and the initial block
    /// download state at `now_unix_seconds`.
    pub fn tip_state(&self, now_unix_seconds: i64) -> Result<Option<TipState>, ReadError> {
        self.ask(move |chainstate| answers::tip_state(chainstate, now_unix_seconds))
    }

    /// Core's `IsInitialBlockDownload` without its latch: no tip, a tip
    /// below the minimum chain work, or one older than
    /// [`MAX_TIP_AGE_SECONDS`] at `now_unix_seconds`.
    pub fn initial_block_download(&self, now_unix_seconds: i64) -> Result<bool, ReadError> {
        self.ask(move |chainstate| answers::initial_block_download(chainstate, now_unix_seconds))
    }

    /// The best header (Core's `m_best_header`; the tip before any header).
    pub fn best_header(&self) -> Result<Option<IndexedBlock>, ReadError> {
        self.ask(|chainstate| {
            answers::best_header_id(chainstate).map(|id| answers::indexed_block(chainstate, id))
        })
    }

    /// The ancestor at `height` of the block `hash`.
    pub fn ancestor(
        &self,
        hash: &BlockHash,
        height: u32,
    ) -> Result<Option<IndexedBlock>, ReadError> {
        let hash = *hash;
        self.ask(move |chainstate| answers::ancestor(chainstate, &hash, height))
    }

    /// The active chain's blocks from `start` on, at most `count_max`
    /// (empty when `start` is not in the active chain).
    pub fn active_blocks(
        &self,
        start: &BlockHash,
        count_max: usize,
    ) -> Result<Vec<IndexedBlock>, ReadError> {
        let start = *start;
        self.ask(move |chainstate| answers::active_blocks(chainstate, &start, count_max))
    }

    /// The active chain's headers from `first_height` to the tip (empty
    /// when the tip is below it); `None` when there are more than
    /// `count_max`.
    pub fn active_headers(
        &self,
        first_height: u32,
        count_max: usize,
    ) -> Result<Option<Vec<Header>>, ReadError> {
        self.ask(move |chainstate| answers::active_headers(chainstate, first_height, count_max))
    }

    /// Every chain tip, highest first (Core's `getchaintips`).
    pub fn chain_tips(&self) -> Result<Vec<ChainTip>, ReadError> {
        self.ask(Chainstate::chain_tips)
    }

    /// The unspent coins at `outpoints`, read at one tip (`None`: no tip).
    pub fn coins(
        &self,
        outpoints: &[OutPoint],
    ) -> Result<Result<Option<CoinsAtTip>, ChainstateError>, ReadError> {
        let outpoints = outpoints.to_vec();
        self.ask(move |chainstate| answers::coins_at_tip(chainstate, &outpoints))
    }

    /// `gettxoutsetinfo`'s figures at the tip (`None`: no tip). The engine
    /// hands out a view of the coins ([`crate::CoinSetView`]); the walk of
    /// every coin runs on the calling thread while the engine goes on.
    pub fn txoutset(
        &self,
        hash_type: TxOutSetHashType,
    ) -> Result<Result<Option<TxOutSetAtTip>, ChainstateError>, ReadError> {
        let captured = self.ask(answers::txoutset_view_at_tip)?;
        Ok(captured.and_then(|captured| {
            let Some(captured) = captured else { return Ok(None) };
            let stats = stats_of_view(&captured.view, hash_type)?;
            let disk_size_bytes = captured.disk_size_bytes;
            Ok(Some(TxOutSetAtTip { tip: captured.tip, stats, disk_size_bytes }))
        }))
    }

    /// The coin set at the tip as a view to walk on the calling thread
    /// (the engine goes on meanwhile: [`crate::CoinSetView`]), with the
    /// active chain's blocks above `target` for a rollback (none when
    /// `target` is `None`, the tip).
    pub fn coin_set(
        &self,
        target: Option<&BlockHash>,
    ) -> Result<Result<CoinSetAtTip, CoinSetTargetError>, ReadError> {
        let target = target.copied();
        self.ask(move |chainstate| coin_set::coin_set_at_tip(chainstate, target.as_ref()))
    }

    /// [`Self::coin_set`] for the active chain's block at `height` (the
    /// tip when `None`), with the active chain's blocks from 1 to it (a
    /// hints file's source).
    pub fn chain_to_height(
        &self,
        height: Option<u32>,
    ) -> Result<Result<ChainToHeight, CoinSetTargetError>, ReadError> {
        self.ask(move |chainstate| coin_set::chain_to_height(chainstate, height))
    }

    /// Where each of `hashes` stands against the active chain.
    pub fn fork_points(&self, hashes: &[BlockHash]) -> Result<Vec<Option<ForkPoint>>, ReadError> {
        let hashes = hashes.to_vec();
        self.ask(move |chainstate| answers::fork_points(chainstate, &hashes))
    }

    /// The block `hash` (the tip when `None`) with its chain's header
    /// versions and times.
    pub fn ancestry(&self, hash: Option<&BlockHash>) -> Result<Option<BlockAncestry>, ReadError> {
        let hash = hash.copied();
        self.ask(move |chainstate| answers::ancestry(chainstate, hash.as_ref()))
    }

    /// The locator of the block `hash` (Core's `GetLocator`; empty for an
    /// unknown block).
    pub fn locator(&self, hash: &BlockHash) -> Result<Vec<BlockHash>, ReadError> {
        let hash = *hash;
        self.ask(move |chainstate| header_chains::locator(chainstate, &hash))
    }

    /// The active chain's headers answering a `getheaders` of `locator`
    /// and `stop`, at most `count_max` (Core's handler, without its
    /// minimum-chain-work rule): `None` to send nothing, empty when the
    /// peer has our tip.
    pub fn headers_after_locator(
        &self,
        locator: &[BlockHash],
        stop: &BlockHash,
        count_max: usize,
    ) -> Result<Option<Vec<Header>>, ReadError> {
        let (locator, stop) = (locator.to_vec(), *stop);
        self.ask(move |chainstate| {
            header_chains::headers_after_locator(chainstate, &locator, &stop, count_max)
        })
    }

    /// Whether `hash` is in the best header's chain or the active chain.
    pub fn on_best_header_or_active_chain(&self, hash: &BlockHash) -> Result<bool, ReadError> {
        let hash = *hash;
        self.ask(move |chainstate| header_chains::on_best_header_or_active_chain(chainstate, &hash))
    }

    /// The height where the chain of `hash` meets the best header's chain
    /// (`None`: unknown block).
    pub fn meeting_height_with_best_header(
        &self,
        hash: &BlockHash,
    ) -> Result<Option<u32>, ReadError> {
        let hash = *hash;
        self.ask(move |chainstate| {
            header_chains::meeting_height_with_best_header(chainstate, &hash)
        })
    }

    /// The best header's chain above `tip_height`, up to `last_height_max`
    /// (`None`: no header).
    pub fn best_chain_blocks(
        &self,
        tip_height: u32,
        last_height_max: u32,
    ) -> Result<Option<BestChainBlocks>, ReadError> {
        self.ask(move |chainstate| {
            header_chains::best_chain_blocks(chainstate, tip_height, last_height_max)
        })
    }
}
