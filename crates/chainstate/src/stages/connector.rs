//! The connect stage: owns the UTXO cache (over the coins database) and
//! what feeds it ahead of the tip: the block accepted last (kept parsed, so
//! connecting it reads nothing), the stored blocks read and parsed ahead by
//! `block_read_ahead`, and each block's prevouts fetched in
//! parallel before its coins are spent ([`CoinsCache::prefetch`]): the next
//! block's are read while the current block connects
//! (`Connector::start_next_prefetch`), so rayon's threads are not idle
//! while the connecting thread works, nor it while they read.
//!
//! Its steps are the one apply ([`crate::connect`]) and the one undo
//! ([`crate::disconnect`]) of coin changes: connect, roll back a block
//! whose scripts failed, disconnect with undo data, and replay after a
//! crash. It reads no index and writes no file: the engine gives it the
//! block, the rules in force and the undo data.
//!
//! # Napkin math: the connecting thread's floor per block
//! A full block of the bench chain (~1.4 MB, ~3,000 transactions, ~7,500
//! inputs and outputs) with scripts skipped:
//! - parse, hash and txids: 0 on this thread (the reader or the read-ahead
//!   did them; ~0.25 ms and ~1 ms of SHA-256 there);
//! - prefetch: `MultiGet`s of 256 outpoints on rayon's threads, during
//!   the previous block's connect; ~0 on this thread when the read is
//!   done by then (the bench chain's set fits the cache; on `utxo-heavy`
//!   at `-dbcache=100`, late in the run, the reads took ~13 ms of CPU a
//!   block on two threads, ~6.7 ms of wall time, against ~5.6 ms of
//!   connect: the profile in docs/utxo-heavy.md);
//! - spends and adds: ~7,500 hash-map operations at ~100-200 ns
//!   (`foldhash`, a cache miss each): ~1-1.5 ms;
//! - BIP30 where it is looked up before the block (Core checks it at every
//!   height on regtest; Ibex only for failing blocks there:
//!   [`crate::connect::Bip30Check`]): ~7,500 lookups spread over the
//!   script threads, ~1 ms of wall time;
//! - the rules on the spent coins and the undo record (~3,700 coins
//!   copied): ~0.5 ms; writing the undo data ~0.3 ms.
//!
//! About 3-4 ms a full block, ~250-300 full blocks/s. Measured: the
//! scripts-skipped `-reindex-chainstate` to height 2,400 takes ~14-15 s,
//! ~5.8 ms a block on average. `perf` shows why: each input's first lookup
//! in the 440 MiB table is a cache miss (~250-280 ns, not the ~100-200 ns
//! above), and so is each new output's insert; the cache's tables use huge
//! pages ([`crate::coins::heap::TableAllocator`]) so that at least the TLB does
//! not add a page walk to each (`docs/benchmarks.md`).

use crate::block_read_ahead::{BlockFiles, BlockReadAhead, BlockToRead};
use crate::coins::cache::CoinsCache;
use crate::coins::prefetch::PrefetchInFlight;
use crate::connect::ConnectedBlock;
use crate::connect::{connect_block, roll_forward, rollback, ConnectContext, ConnectError};
use crate::disconnect::{disconnect_block, DisconnectResult};
use crate::error::ChainstateError;
use crate::index::EntryId;
use crate::prepared::PreparedBlock;
use crate::undo::BlockUndo;

/// The UTXO cache and the blocks ready ahead of the tip.
pub(crate) struct Connector {
    cache: CoinsCache,
    /// The block accepted last, kept so connecting it needs no disk read.
    recent: Option<(EntryId, PreparedBlock)>,
    /// Stored blocks being read ahead of the tip for the current
    /// activation step.
    read_ahead: Option<BlockReadAhead>,
    /// The path the read-ahead was started for: its first height and the
    /// block at each height from there (the one kept recent included).
    read_ahead_path: Option<(u32, Vec<EntryId>)>,
    /// The block after the one connecting, taken from the read-ahead to
    /// start its prefetch ([`Self::start_next_prefetch`]).
    next: Option<(EntryId, Result<PreparedBlock, ChainstateError>)>,
    /// That block's coins, being read while the current block connects.
    next_prefetch: Option<(EntryId, PrefetchInFlight)>,
    /// Reused for each block's outpoints.
    outpoints: Vec<ibex_primitives::OutPoint>,
    /// Reused for each block's transaction ids.
    block_txids: hashbrown::HashSet<ibex_primitives::Txid>,
}

impl Connector {
    /// The stage over `cache`.
    pub(crate) fn new(cache: CoinsCache) -> Connector {
        Connector {
            cache,
            recent: None,
            read_ahead: None,
            read_ahead_path: None,
            next: None,
            next_prefetch: None,
            outpoints: Vec::new(),
            block_txids: hashbrown::HashSet::new(),
        }
    }

    /// The UTXO cache.
    pub(crate) fn cache(&self) -> &CoinsCache {
        &self.cache
    }

    /// The UTXO cache, to flush it.
    pub(crate) fn cache_mut(&mut self) -> &mut CoinsCache {
        &mut self.cache
    }

    /// Keeps `block` (just accepted as `id`) parsed for its connect.
    pub(crate) fn keep_recent(&mut self, id: EntryId, block: PreparedBlock) {
        self.recent = Some((id, block));
    }

    /// The block kept by [`Self::keep_recent`], if any.
    pub(crate) fn recent_id(&self) -> Option<EntryId> {
        self.recent.as_ref().map(|(id, _)| *id)
    }

    /// Block `id` if it is ready in memory (kept or read ahead); `None`
    /// when it must be read from its file.
    pub(crate) fn take_ready(
        &mut self,
        id: EntryId,
    ) -> Option<Result<PreparedBlock, ChainstateError>> {
        if self.recent_id() == Some(id) {
            return self.recent.take().map(|(_, block)| Ok(block));
        }
        if self.next_id() == Some(id) {
            return self.next.take().map(|(_, block)| block);
        }
        self.read_ahead.as_mut().and_then(|read_ahead| read_ahead.take(id))
    }

    /// Starts reading `blocks` ahead, in the order they will be connected,
    /// holding at most `bytes_max` of them unread, counted in `gauge` (any
    /// earlier read-ahead is stopped).
    pub(crate) fn start_read_ahead(
        &mut self,
        files: BlockFiles,
        blocks: Vec<BlockToRead>,
        path: (u32, Vec<EntryId>),
        bytes_max: usize,
        gauge: std::sync::Arc<crate::metrics::QueueGauge>,
    ) -> Result<(), ChainstateError> {
        self.stop_read_ahead();
        self.read_ahead = Some(BlockReadAhead::start(files, blocks, bytes_max, gauge)?);
        self.read_ahead_path = Some(path);
        Ok(())
    }

    /// Whether the running read-ahead was started for a path with block
    /// `id` at `height` (it may have failed since: then the block is read
    /// where it is needed, and its error reported there).
    pub(crate) fn reads_ahead(&self, height: u32, id: EntryId) -> bool {
        let Some((start_height, path)) = &self.read_ahead_path else { return false };
        let offset = height.checked_sub(*start_height).map(|offset| offset as usize);
        self.read_ahead.is_some() && offset.and_then(|offset| path.get(offset)) == Some(&id)
    }

    /// The block taken ahead by [`Self::start_next_prefetch`], if any.
    fn next_id(&self) -> Option<EntryId> {
        self.next.as_ref().map(|(id, _)| *id)
    }

    /// Stops reading ahead, drops the block taken ahead and waits for its
    /// prefetch (whose coins are dropped).
    pub(crate) fn stop_read_ahead(&mut self) {
        self.read_ahead = None;
        self.read_ahead_path = None;
        self.next = None;
        if let Some((_, in_flight)) = self.next_prefetch.take() {
            in_flight.discard();
        }
    }

    /// Reads the coins block `id`'s inputs spend into the cache, in
    /// parallel: not those its own transactions make, which no table holds
    /// (each would cost a read that finds nothing). When its read was
    /// started while the block before it connected, this waits for it;
    /// if a flush came in between, the coins are read again.
    pub(crate) fn prefetch_inputs(
        &mut self,
        id: EntryId,
        block: &PreparedBlock,
    ) -> Result<(), ChainstateError> {
        if let Some((prefetch_id, in_flight)) = self.next_prefetch.take() {
            if prefetch_id != id {
                in_flight.discard();
            } else if self.cache.finish_prefetch(in_flight)? {
                return Ok(());
            }
        }
        list_spent_outpoints(&mut self.outpoints, &mut self.block_txids, block, None);
        self.cache.prefetch(&self.outpoints).map(|_inserted| ())
    }

    /// Starts reading the coins of block `next_id` (the block after
    /// `current`, about to connect), if the read-ahead has it: its read
    /// then overlaps `current`'s connect, which leaves rayon's threads
    /// idle. Neither block's own outputs are read: `current` is about to
    /// make them. See [`CoinsCache::start_prefetch`] for why the read stays
    /// right whatever `current` does to the cache.
    pub(crate) fn start_next_prefetch(&mut self, next_id: EntryId, current: &PreparedBlock) {
        if self.next.is_none() {
            let Some(read_ahead) = self.read_ahead.as_mut() else { return };
            let Some(next) = read_ahead.take(next_id) else { return };
            self.next = Some((next_id, next));
        }
        // A block the read-ahead failed to read keeps its error for the
        // connect, which reports it.
        let Some((id, Ok(next))) = &self.next else { return };
        if *id != next_id {
            return;
        }
        list_spent_outpoints(&mut self.outpoints, &mut self.block_txids, next, Some(current));
        self.next_prefetch =
            self.cache.start_prefetch(&self.outpoints).map(|in_flight| (next_id, in_flight));
    }

    /// Applies `block`'s coins with every rule but its scripts; on a
    /// failure the cache is as before.
    pub(crate) fn connect(
        &mut self,
        block: &PreparedBlock,
        context: &ConnectContext<'_>,
    ) -> Result<ConnectedBlock, ConnectError> {
        connect_block(&mut self.cache, block.view(), block.txids(), context)
    }

    /// Undoes a connected block's coins (its scripts failed).
    pub(crate) fn roll_back(
        &mut self,
        block: &PreparedBlock,
        connected: &ConnectedBlock,
        height: u32,
    ) -> Result<(), ChainstateError> {
        let view = block.view();
        let transaction_count = view.transaction_count();
        rollback(&mut self.cache, view, block.txids(), height, &connected.undo, transaction_count)
    }

    /// Disconnects `block` at `height` with its undo data.
    pub(crate) fn disconnect(
        &mut self,
        block: &PreparedBlock,
        undo: &BlockUndo,
        height: u32,
    ) -> Result<DisconnectResult, ChainstateError> {
        let hash = block.hash();
        disconnect_block(&mut self.cache, block.view(), block.txids(), height, &hash, undo)
    }

    /// Applies `block`'s coin changes at `height` without checks (replay).
    pub(crate) fn roll_forward(
        &mut self,
        block: &PreparedBlock,
        height: u32,
    ) -> Result<(), ChainstateError> {
        let hash = block.hash();
        roll_forward(&mut self.cache, block.view(), block.txids(), height).map_err(|error| {
            match error {
                ConnectError::Chainstate(error) => error,
                // Only a stored, accepted block is rolled forward: one
                // that breaks a rule means the block files are corrupt.
                ConnectError::Invalid(_) => ChainstateError::ReplayFailed { hash },
            }
        })
    }
}

impl Drop for Connector {
    /// No read of the database outlives the connector (an activation step
    /// that ended in an error leaves one running).
    fn drop(&mut self) {
        self.stop_read_ahead();
    }
}

/// Lists in `outpoints` the outpoints `block`'s inputs spend, but for those
/// made by `block` or by `before` (the block connected just before it);
/// `txids` is scratch space.
fn list_spent_outpoints(
    outpoints: &mut Vec<ibex_primitives::OutPoint>,
    txids: &mut hashbrown::HashSet<ibex_primitives::Txid>,
    block: &PreparedBlock,
    before: Option<&PreparedBlock>,
) {
    txids.clear();
    txids.extend(block.txids().iter().copied());
    if let Some(before) = before {
        txids.extend(before.txids().iter().copied());
    }
    outpoints.clear();
    for transaction in block.view().transactions().skip(1) {
        let spent = transaction.inputs().iter().map(|input| input.previous_output());
        outpoints.extend(spent.filter(|outpoint| !txids.contains(&outpoint.txid)));
    }
}
