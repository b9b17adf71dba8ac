//! Reading the chainstate from other threads while validation runs (the RPC,
//! the P2P serving side, progress displays): a [`ChainReader`] is a cheap,
//! cloneable handle with two ways in.
//!
//! - **Snapshots** ([`ChainReader::snapshot`], [`ChainReader::block_hash_at`]):
//!   after each settled block (its scripts passed, its undo data written,
//!   `UpdateTip` announced), each disconnected block and each new best
//!   header, the engine publishes a small [`ChainSnapshot`] (tip, best
//!   header, counts) and the active chain's block hashes. Reading them takes
//!   a lock held by the engine for well under a microsecond per block, so
//!   they answer at once, even during a flush. The tip and the hash list are
//!   published together, under one lock: a reader never sees a tip whose
//!   hash is not at its height in the list.
//! - **Queries** (the read API, [`crate::engine::read_api`]): anything
//!   else (index entries, locators and headers, coins from the cache then
//!   the database, chain tips) is a typed question whose answer is computed
//!   *on the engine's thread* between blocks and handed back owned. A
//!   settled one ([`ChainReader::settled`]) runs after the engine settles
//!   every pending script verdict, so it sees the index, the active chain
//!   and the coins as of one settled tip: the state Core's `cs_main` gives
//!   its RPC. Validation is not stopped; it pauses for the queries waiting
//!   (a pipeline bubble of one block per batch, nothing when no query
//!   waits). An unsettled one ([`ChainReader::unsettled`]) settles
//!   nothing: the P2P sync reads the block index and header chains so.
//!   Block and undo bytes are read on the asking thread, from the
//!   positions an answer gives.
//!
//! # Bounds
//! At most [`READ_QUERIES_WAITING_MAX`] queries wait; more are refused at
//! once ([`ReadError::Busy`]), as Core's `-rpcworkqueue` refuses work. A
//! query that gets no answer within its timeout is [`ReadError::TimedOut`]
//! (the engine may be in a long flush, or stopped). The published hash list
//! costs 32 bytes a block (29 MB at mainnet's 900,000 blocks).

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use ibex_primitives::{BlockHash, Header, HEADER_BYTES};

use super::Chainstate;
use crate::block_read_ahead::BlockFiles;
use crate::error::ChainstateError;
use crate::index::{BlockIndex, EntryId};

/// Queries that may wait for the engine's thread at once.
pub const READ_QUERIES_WAITING_MAX: usize = 64;

/// The settled tip, as readers see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TipSummary {
    /// Its hash.
    pub hash: BlockHash,
    /// Its height.
    pub height: u32,
    /// Its header time.
    pub time: u32,
    /// The median time past of it and its ten ancestors.
    pub median_time_past: i64,
    /// Transactions in the chain up to it.
    pub chain_transaction_count: u64,
}

/// AssumeUTXO's chainstates, as readers see them: the active chainstate
/// was loaded from a snapshot of `base`, and a background chainstate
/// validates from genesis towards it until it proves the snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AssumeUtxoSummary {
    /// The snapshot's base block.
    pub base_hash: BlockHash,
    /// Its height.
    pub base_height: u32,
    /// The background chainstate's tip (hash and height); `None` once
    /// the snapshot is validated and the background chainstate dropped,
    /// or before it has the genesis block.
    pub background_tip: Option<(BlockHash, u32)>,
    /// Whether the background chainstate proved the snapshot.
    pub validated: bool,
}

/// What the engine publishes after each settled block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChainSnapshot {
    /// The settled tip (`None` before the genesis block is connected).
    pub tip: Option<TipSummary>,
    /// The most-work valid header's hash and height (Core's `m_best_header`).
    pub best_header: Option<(BlockHash, u32)>,
    /// Entries in the block index.
    pub index_entries: usize,
    /// The snapshot the active chainstate was loaded from, and the
    /// background chainstate validating it (`None`: no snapshot). The
    /// blocks below the base the background needs are on the active
    /// chain's published hashes ([`ChainReader::block_hash_at`]).
    pub assumeutxo: Option<AssumeUtxoSummary>,
    /// While a SwiftSync plan waits for its blocks: the height to which
    /// every block of its chain is stored (a download window starts there,
    /// not at the tip, which stays at genesis meanwhile).
    pub swiftsync_stored_height: Option<u32>,
    /// Spent coins a fully validating SwiftSync pass refused (BIP 455
    /// answers its blocks' checks failed), oldest first, at most
    /// [`crate::SPENT_COINS_REFUSALS_PER_ATTEMPT_MAX`]: the network side
    /// punishes each sender and asks another peer. Emptied when the plan
    /// ends.
    pub swiftsync_refusals: Arc<[crate::SpentCoinsRefusal]>,
    /// The running SwiftSync pass: its terminal block and the heights it
    /// had accounted when it started (a resumed pass). `None` while no
    /// pass runs.
    pub swiftsync_pass: Option<Arc<crate::SwiftSyncPassStart>>,
    /// How many times the engine has published (a reader can tell whether
    /// anything changed).
    pub sequence: u64,
}

/// Why a read could not be answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// [`READ_QUERIES_WAITING_MAX`] queries already wait.
    #[error("the engine has {READ_QUERIES_WAITING_MAX} queries waiting already")]
    Busy,
    /// No answer within the timeout.
    #[error("no answer from the engine within {timeout_ms} ms")]
    TimedOut {
        /// The timeout.
        timeout_ms: u64,
    },
    /// The engine is gone (shut down).
    #[error("the engine has stopped")]
    Stopped,
}

/// A closure to run on the engine's thread.
type QueryFunction = Box<dyn FnOnce(&Chainstate) + Send>;

/// A query waiting for the engine's thread.
pub(crate) struct Query {
    /// Whether pending blocks are settled before it runs.
    settled: bool,
    run: QueryFunction,
}

/// The snapshot and the active chain's hashes, published together.
#[derive(Debug, Default)]
struct Published {
    snapshot: Arc<ChainSnapshot>,
    active_hashes: Vec<BlockHash>,
}

/// A handle for other threads to read the chainstate (see the module docs).
#[derive(Clone)]
pub struct ChainReader {
    published: Arc<RwLock<Published>>,
    queries: SyncSender<Query>,
    files: Arc<BlockFiles>,
}

impl std::fmt::Debug for ChainReader {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("ChainReader").finish_non_exhaustive()
    }
}

impl ChainReader {
    /// The last published snapshot.
    pub fn snapshot(&self) -> Arc<ChainSnapshot> {
        self.published.read().unwrap_or_else(PoisonError::into_inner).snapshot.clone()
    }

    /// The active chain's block at `height` (settled blocks only).
    pub fn block_hash_at(&self, height: u32) -> Option<BlockHash> {
        let published = self.published.read().unwrap_or_else(PoisonError::into_inner);
        published.active_hashes.get(usize::try_from(height).ok()?).copied()
    }

    /// The snapshot with the active chain's hashes from `start_height` on,
    /// at most `count_max` of them, read at one instant.
    pub fn snapshot_with_hashes(
        &self,
        start_height: u32,
        count_max: usize,
    ) -> (Arc<ChainSnapshot>, Vec<BlockHash>) {
        let published = self.published.read().unwrap_or_else(PoisonError::into_inner);
        let start = usize::try_from(start_height).unwrap_or(usize::MAX);
        let hashes = published.active_hashes.iter().skip(start).take(count_max).copied().collect();
        (published.snapshot.clone(), hashes)
    }

    /// The serialised block `hash` stored at `position` (a position read
    /// from its index entry, [`crate::IndexedBlock::position`]), read on the calling
    /// thread: serving a block to a peer or an RPC client neither parses it
    /// nor holds up the engine. The bytes must hold that block (its header
    /// hashes to `hash`), else [`ChainstateError::WrongBlockInFile`].
    pub fn read_stored_block(
        &self,
        position: ibex_blockstore::BlockPosition,
        hash: &BlockHash,
    ) -> Result<Vec<u8>, ChainstateError> {
        let files = &self.files;
        let bytes = ibex_blockstore::read_block(
            &files.directory,
            position,
            files.magic,
            &files.obfuscation,
        )?;
        let found = bytes
            .first_chunk::<HEADER_BYTES>()
            .map_or(BlockHash::ZERO, |header| Header::decode(header).block_hash());
        if found != *hash {
            return Err(ChainstateError::WrongBlockInFile { expected: *hash, found });
        }
        Ok(bytes)
    }

    /// The block and undo files, for reads on the calling thread.
    pub(crate) fn files(&self) -> &BlockFiles {
        &self.files
    }

    /// Runs `read` on the engine's thread against a settled state and
    /// returns its result, waiting at most `timeout` (the crate's tests
    /// read the engine's inner state so; other readers ask the read API).
    #[cfg(test)]
    pub(crate) fn query<R: Send + 'static>(
        &self,
        read: impl FnOnce(&Chainstate) -> R + Send + 'static,
        timeout: Duration,
    ) -> Result<R, ReadError> {
        self.send_query(true, read, timeout)
    }

    /// Runs `read` on the engine's thread at its next pause between blocks
    /// *without* settling the pending script verdicts first, so it makes
    /// no pipeline bubble. For reads of the block index and the header
    /// chains (what a download scheduler or a headers sync needs): the
    /// active chain and the coins it sees may include blocks whose scripts
    /// are still being checked, which a failed verdict would roll back.
    #[cfg(test)]
    pub(crate) fn query_unsettled<R: Send + 'static>(
        &self,
        read: impl FnOnce(&Chainstate) -> R + Send + 'static,
        timeout: Duration,
    ) -> Result<R, ReadError> {
        self.send_query(false, read, timeout)
    }

    /// Runs `read` on the engine's thread, after settling the pending
    /// verdicts when `settled`, waiting at most `timeout`.
    pub(crate) fn send_query<R: Send + 'static>(
        &self,
        settled: bool,
        read: impl FnOnce(&Chainstate) -> R + Send + 'static,
        timeout: Duration,
    ) -> Result<R, ReadError> {
        let (answer_sender, answer) = sync_channel(1);
        let run: QueryFunction = Box::new(move |chainstate| {
            // The asker may have given up: nothing to do then.
            let _ = answer_sender.send(read(chainstate));
        });
        let query = Query { settled, run };
        match self.queries.try_send(query) {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => return Err(ReadError::Busy),
            Err(TrySendError::Disconnected(_)) => return Err(ReadError::Stopped),
        }
        answer.recv_timeout(timeout).map_err(|error| match error {
            std::sync::mpsc::RecvTimeoutError::Timeout => ReadError::TimedOut {
                timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            },
            std::sync::mpsc::RecvTimeoutError::Disconnected => ReadError::Stopped,
        })
    }
}

/// The engine's side: publishes snapshots and answers queries.
pub(crate) struct ReadService {
    published: Arc<RwLock<Published>>,
    files: Arc<BlockFiles>,
    queries: Receiver<Query>,
    /// Kept to hand out readers.
    sender: SyncSender<Query>,
    sequence: u64,
    /// What [`ChainSnapshot::assumeutxo`] says, kept between publications.
    assumeutxo: Option<AssumeUtxoSummary>,
    /// What [`ChainSnapshot::swiftsync_stored_height`] says.
    swiftsync_stored_height: Option<u32>,
    /// What [`ChainSnapshot::swiftsync_refusals`] says.
    swiftsync_refusals: Arc<[crate::SpentCoinsRefusal]>,
    /// What [`ChainSnapshot::swiftsync_pass`] says.
    swiftsync_pass: Option<Arc<crate::SwiftSyncPassStart>>,
}

impl ReadService {
    /// A service with nothing published yet.
    pub(crate) fn new(files: BlockFiles) -> ReadService {
        let (sender, queries) = sync_channel(READ_QUERIES_WAITING_MAX);
        let files = Arc::new(files);
        ReadService {
            published: Arc::default(),
            files,
            queries,
            sender,
            sequence: 0,
            assumeutxo: None,
            swiftsync_stored_height: None,
            swiftsync_refusals: Arc::default(),
            swiftsync_pass: None,
        }
    }

    /// A reader handle.
    pub(crate) fn reader(&self) -> ChainReader {
        ChainReader {
            published: self.published.clone(),
            queries: self.sender.clone(),
            files: self.files.clone(),
        }
    }

    /// The next waiting query, if any.
    pub(crate) fn next_query(&self) -> Option<Query> {
        self.queries.try_recv().ok()
    }

    /// Waits up to `timeout` for a query.
    pub(crate) fn wait_query(&self, timeout: Duration) -> Option<Query> {
        self.queries.recv_timeout(timeout).ok()
    }

    /// Publishes how far a SwiftSync plan's blocks are stored, the rest of
    /// the snapshot unchanged.
    pub(crate) fn publish_swiftsync(&mut self, stored_height: Option<u32>) {
        if self.swiftsync_stored_height == stored_height {
            return;
        }
        self.swiftsync_stored_height = stored_height;
        self.republish(|snapshot| snapshot.swiftsync_stored_height = stored_height);
    }

    /// Publishes the refused spent coins as `refusals` says, the rest of
    /// the snapshot unchanged.
    pub(crate) fn publish_swiftsync_refusals(&mut self, refusals: Arc<[crate::SpentCoinsRefusal]>) {
        if self.swiftsync_refusals == refusals {
            return;
        }
        self.swiftsync_refusals = refusals.clone();
        self.republish(|snapshot| snapshot.swiftsync_refusals = refusals);
    }

    /// Publishes the running SwiftSync pass as `pass` says, the rest of
    /// the snapshot unchanged.
    pub(crate) fn publish_swiftsync_pass(&mut self, pass: Option<Arc<crate::SwiftSyncPassStart>>) {
        if self.swiftsync_pass == pass {
            return;
        }
        self.swiftsync_pass = pass.clone();
        self.republish(|snapshot| snapshot.swiftsync_pass = pass);
    }

    /// Publishes the current snapshot with `change` made to it and a new
    /// sequence number.
    fn republish(&mut self, change: impl FnOnce(&mut ChainSnapshot)) {
        self.sequence += 1;
        let mut published = self.published.write().unwrap_or_else(PoisonError::into_inner);
        let mut snapshot = ChainSnapshot::clone(&published.snapshot);
        change(&mut snapshot);
        snapshot.sequence = self.sequence;
        published.snapshot = Arc::new(snapshot);
    }

    /// Publishes AssumeUTXO's chainstates as `summary` says, the rest of
    /// the snapshot unchanged.
    pub(crate) fn publish_assumeutxo(&mut self, summary: Option<AssumeUtxoSummary>) {
        if self.assumeutxo == summary {
            return;
        }
        self.assumeutxo = summary;
        self.republish(|snapshot| snapshot.assumeutxo = summary);
    }

    /// Publishes `tip` as the settled tip (the active chain's hashes are
    /// made to end at it) and `best_header`, as `index` has them.
    pub(crate) fn publish(
        &mut self,
        index: &BlockIndex,
        best_header: Option<EntryId>,
        tip: Option<EntryId>,
    ) {
        self.sequence += 1;
        let tip_summary = tip.map(|id| {
            let entry = index.entry(id);
            TipSummary {
                hash: entry.hash,
                height: entry.height,
                time: entry.header.time,
                median_time_past: index.median_time_past(id),
                chain_transaction_count: entry.chain_transaction_count,
            }
        });
        let best_header = best_header.map(|id| {
            let entry = index.entry(id);
            (entry.hash, entry.height)
        });
        let snapshot = Arc::new(ChainSnapshot {
            tip: tip_summary,
            best_header,
            index_entries: index.len(),
            assumeutxo: self.assumeutxo,
            swiftsync_stored_height: self.swiftsync_stored_height,
            swiftsync_refusals: self.swiftsync_refusals.clone(),
            swiftsync_pass: self.swiftsync_pass.clone(),
            sequence: self.sequence,
        });
        let mut published = self.published.write().unwrap_or_else(PoisonError::into_inner);
        let length = tip.map_or(0, |id| index.entry(id).height as usize + 1);
        published.active_hashes.truncate(length);
        // Walk down from the tip to where the list agrees (one block for a
        // new tip, the branch after a reorganisation, all at open).
        let mut missing = Vec::new();
        let mut walk = tip;
        while let Some(id) = walk {
            let entry = index.entry(id);
            let at = entry.height as usize;
            if published.active_hashes.get(at) == Some(&entry.hash) {
                break;
            }
            missing.push(entry.hash);
            walk = entry.parent;
        }
        let keep = length - missing.len();
        published.active_hashes.truncate(keep);
        published.active_hashes.extend(missing.into_iter().rev());
        published.snapshot = snapshot;
        drop(published);
    }
}

impl Chainstate {
    /// A handle for other threads to read this chainstate: snapshots and
    /// the read API ([`ChainReader::settled`], [`ChainReader::unsettled`]).
    pub fn reader(&self) -> ChainReader {
        self.shared.reads.reader()
    }

    /// Publishes the active chainstate's settled tip `tip` (see
    /// [`CoinsChain::publish`]).
    pub(crate) fn publish(&mut self, tip: Option<EntryId>) {
        self.active.publish(&mut self.shared, tip);
    }

    /// Publishes again with the same settled tip (a new best header).
    pub(crate) fn publish_headers(&mut self) {
        let settled = match self.active.scripts.oldest() {
            Some(oldest) => self.shared.index.entry(oldest).parent,
            None => self.active.chain.tip(),
        };
        self.publish(settled);
    }

    /// Answers the queries waiting, after settling the pending blocks (so
    /// they see one settled state). False when settling found a pending
    /// block invalid (the chain changed: the caller picks its target again).
    pub fn serve_reads(&mut self) -> Result<bool, crate::ChainstateError> {
        let mut unchanged = true;
        let mut settled = false;
        // Bounded: the channel holds at most READ_QUERIES_WAITING_MAX.
        for _ in 0..READ_QUERIES_WAITING_MAX {
            let Some(query) = self.shared.reads.next_query() else { break };
            unchanged &= self.run_query(query, &mut settled)?;
        }
        Ok(unchanged)
    }

    /// Runs `query`, settling the pending blocks first if it asks for a
    /// settled state and they were not settled yet (`settled`). False when
    /// settling found a failed block.
    fn run_query(
        &mut self,
        query: Query,
        settled: &mut bool,
    ) -> Result<bool, crate::ChainstateError> {
        let mut unchanged = true;
        if query.settled && !*settled {
            if !self.active.scripts.is_empty() {
                self.shared.statistics.reads_settled += 1;
            }
            unchanged = self.settle_pending()?;
            *settled = true;
        }
        (query.run)(self);
        Ok(unchanged)
    }

    /// Waits up to `timeout` for queries and answers them (an idle engine:
    /// no block to connect). True when one was answered.
    pub fn wait_and_serve_reads(
        &mut self,
        timeout: Duration,
    ) -> Result<bool, crate::ChainstateError> {
        let Some(first) = self.shared.reads.wait_query(timeout) else { return Ok(false) };
        let mut settled = false;
        self.run_query(first, &mut settled)?;
        self.serve_reads()?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use crate::test_chain::{accept, chain_and_chainstate};

    /// Serves reads until `asker` has its answer.
    fn answer<R>(chainstate: &mut super::Chainstate, asker: std::thread::JoinHandle<R>) -> R {
        while !asker.is_finished() {
            chainstate.serve_reads().unwrap();
            std::thread::sleep(Duration::from_millis(1));
        }
        asker.join().unwrap()
    }

    #[test]
    fn unsettled_queries_leave_pending_blocks_pending_and_settled_ones_settle_them() {
        let root = tempfile::tempdir().unwrap();
        let (blocks, mut chainstate) = chain_and_chainstate(root.path());
        for bytes in &blocks {
            accept(&mut chainstate, bytes);
            chainstate.advance_best_chain().unwrap();
        }
        let pending = chainstate.active.scripts.len();
        assert!(pending > 0, "the chain left no block pending");
        let top = u32::try_from(blocks.len() - 1).unwrap();

        let reader = chainstate.reader();
        let asker = std::thread::spawn(move || {
            reader
                .query_unsettled(|chainstate| chainstate.chain().height(), Duration::from_secs(10))
        });
        // The unsettled read sees the chain with its pending blocks.
        assert_eq!(answer(&mut chainstate, asker).unwrap(), Some(top));
        assert_eq!(chainstate.active.scripts.len(), pending);
        assert_eq!(chainstate.statistics().reads_settled, 0);
        // The published (settled) tip is below the pending blocks.
        let settled_height = chainstate.reader().snapshot().tip.as_ref().map(|tip| tip.height);
        assert!(settled_height.is_none_or(|height| height < top));

        let reader = chainstate.reader();
        let asker = std::thread::spawn(move || {
            reader.query(|chainstate| chainstate.active.scripts.len(), Duration::from_secs(10))
        });
        assert_eq!(answer(&mut chainstate, asker).unwrap(), 0, "a settled read saw pending blocks");
        assert_eq!(chainstate.statistics().reads_settled, 1);
        assert_eq!(chainstate.reader().snapshot().tip.as_ref().map(|tip| tip.height), Some(top));
    }
}
