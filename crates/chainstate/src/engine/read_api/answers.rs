//! The read API's answers: owned values computed on the engine's thread
//! from the block index, the active chain and the coins, so no reader
//! holds a reference into the engine. Each function here is one question
//! (see [`super::ReadView`] for which thread runs it and when).

use ibex_blockstore::BlockPosition;
use ibex_primitives::txoutset::TxOutSetStats;
use ibex_primitives::{BlockHash, ChainWork, Header, OutPoint};

use crate::coins::coin::Coin;
use crate::coins::view::CoinSetView;
use crate::engine::Chainstate;
use crate::error::ChainstateError;
use crate::index::{BlockStatus, EntryId};

/// Core's `DEFAULT_MAX_TIP_AGE`: a tip older than this (in seconds) means
/// initial block download.
pub const MAX_TIP_AGE_SECONDS: i64 = 24 * 60 * 60;
/// Entries of a locator at most: ten one block apart and the block
/// itself, then one per doubling of a 32-bit height's step, then genesis.
pub const LOCATOR_ENTRIES_MAX: usize = 10 + 1 + 32 + 1;
/// Hashes of a peer's locator looked at, at most (Core's `MAX_LOCATOR_SZ`:
/// a longer one is refused when decoded; this bounds the walk anyway).
pub const LOCATOR_HASHES_READ_MAX: usize = 101;

/// One block index entry as a reader sees it: an owned copy taken on the
/// engine's thread, with its place in the active chain at that moment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexedBlock {
    /// Its hash.
    pub hash: BlockHash,
    /// Its height.
    pub height: u32,
    /// Its header.
    pub header: Header,
    /// Its validity and data flags (Core's `nStatus`).
    pub status: BlockStatus,
    /// Total work of the chain up to and including it.
    pub chain_work: ChainWork,
    /// The median time past of it and its ten ancestors.
    pub median_time_past: i64,
    /// Transactions in the block (0 while only its header is known).
    pub transaction_count: u32,
    /// Transactions in its chain up to it (0 until its data is known).
    pub chain_transaction_count: u64,
    /// Where its bytes are stored, if they are.
    pub position: Option<BlockPosition>,
    /// Where its undo data is stored, if it has been connected.
    pub undo_position: Option<BlockPosition>,
    /// Whether its data was stored and then pruned (Core's
    /// `IsBlockPruned`: a block file was ever pruned, the block has no
    /// data, and its transaction count is known).
    pub pruned: bool,
    /// Whether it is in the active chain.
    pub in_active_chain: bool,
    /// The next block of the active chain, when it is in the active chain.
    pub next_in_active_chain: Option<BlockHash>,
    /// The active chain's height when it was read (`None`: no tip yet).
    pub active_tip_height: Option<u32>,
}

/// The tip with what `getblockchaininfo` and the P2P side decide from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TipState {
    /// The tip.
    pub tip: IndexedBlock,
    /// The best header's height (Core's `m_best_header`), if any.
    pub best_header_height: Option<u32>,
    /// Core's `IsInitialBlockDownload` without its latch: the tip is below
    /// the minimum chain work or older than [`MAX_TIP_AGE_SECONDS`].
    pub initial_block_download: bool,
}

/// Unspent coins read at one tip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoinsAtTip {
    /// The tip's hash and height.
    pub tip: (BlockHash, u32),
    /// The coin at each outpoint asked, in order (`None`: spent or unknown).
    pub coins: Vec<Option<Coin>>,
}

/// `gettxoutsetinfo`'s figures at one tip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxOutSetAtTip {
    /// The tip's hash and height.
    pub tip: (BlockHash, u32),
    /// The coins' statistics, cache included.
    pub stats: TxOutSetStats,
    /// The coins database's estimated size on disk.
    pub disk_size_bytes: u64,
}

/// Blocks looked up by hash, read at one tip.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlocksAtTip {
    /// Each block asked, in order (`None`: not in the index).
    pub blocks: Vec<Option<IndexedBlock>>,
    /// The tip (`None` before the genesis block is connected).
    pub tip: Option<IndexedBlock>,
}

/// The best header's chain above the tip, as the block download needs it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BestChainBlocks {
    /// The best header's height.
    pub best_height: u32,
    /// Where the best header's chain leaves the active chain, when that is
    /// below the tip height asked about.
    pub fork_height: Option<u32>,
    /// The height of `blocks[0]`.
    pub first_height: u32,
    /// Each block's hash and whether its data is stored, by height.
    pub blocks: Vec<(BlockHash, bool)>,
}

/// Where a known block stands against the active chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForkPoint {
    /// The block's height.
    pub height: u32,
    /// The height of the last block it shares with the active chain
    /// (`None`: none, or no active chain).
    pub fork_height: Option<u32>,
}

/// A block and the versions and times of its chain, genesis first: what
/// version-bits deployments are computed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockAncestry {
    /// The block.
    pub block: IndexedBlock,
    /// The header version of each block of its chain, by height.
    pub versions: Vec<i32>,
    /// The header time of each block of its chain, by height.
    pub times: Vec<u32>,
}

impl BlockAncestry {
    /// The header version of its chain's block at `height` (0 above it).
    pub fn version(&self, height: u32) -> i32 {
        usize::try_from(height).ok().and_then(|at| self.versions.get(at)).copied().unwrap_or(0)
    }

    /// The median time past of its chain's block at `height` (0 above it):
    /// the median of that block's time and its ten ancestors'.
    pub fn median_time_past(&self, height: u32) -> i64 {
        let Some(end) = usize::try_from(height).ok().filter(|at| *at < self.times.len()) else {
            return 0;
        };
        let mut times: Vec<u32> = self.times[end.saturating_sub(10)..=end].to_vec();
        times.sort_unstable();
        times.get(times.len() / 2).map_or(0, |time| i64::from(*time))
    }
}

/// The entry `id` as a reader sees it.
pub(crate) fn indexed_block(chainstate: &Chainstate, id: EntryId) -> IndexedBlock {
    let index = chainstate.index();
    let chain = chainstate.chain();
    let entry = index.entry(id);
    let in_active_chain = chain.contains(id, entry.height);
    let next_in_active_chain = in_active_chain
        .then(|| chain.at(entry.height.saturating_add(1)))
        .flatten()
        .map(|next| index.entry(next).hash);
    IndexedBlock {
        hash: entry.hash,
        height: entry.height,
        header: entry.header,
        status: entry.status,
        chain_work: entry.chain_work,
        median_time_past: index.median_time_past(id),
        transaction_count: entry.transaction_count,
        chain_transaction_count: entry.chain_transaction_count,
        position: entry.block_position,
        undo_position: entry.undo_position,
        pruned: chainstate.have_pruned()
            && !entry.status.has(BlockStatus::HAVE_DATA)
            && entry.transaction_count > 0,
        in_active_chain,
        next_in_active_chain,
        active_tip_height: chain.height(),
    }
}

/// The block `hash`, if indexed.
pub(crate) fn block(chainstate: &Chainstate, hash: &BlockHash) -> Option<IndexedBlock> {
    chainstate.index().get(hash).map(|id| indexed_block(chainstate, id))
}

/// The tip, if any.
pub(crate) fn tip(chainstate: &Chainstate) -> Option<IndexedBlock> {
    chainstate.chain().tip().map(|id| indexed_block(chainstate, id))
}

/// The best header's entry (the tip's before any header is indexed).
pub(crate) fn best_header_id(chainstate: &Chainstate) -> Option<EntryId> {
    chainstate
        .best_header()
        .and_then(|hash| chainstate.index().get(&hash))
        .or_else(|| chainstate.chain().tip())
}

/// Core's `IsInitialBlockDownload` without its latch, at `now_unix_seconds`.
pub(crate) fn initial_block_download(chainstate: &Chainstate, now_unix_seconds: i64) -> bool {
    let Some(tip) = chainstate.chain().tip() else { return true };
    let entry = chainstate.index().entry(tip);
    entry.chain_work < chainstate.params().minimum_chain_work
        || i64::from(entry.header.time) < now_unix_seconds.saturating_sub(MAX_TIP_AGE_SECONDS)
}

/// The tip, the best header's height and the initial block download state.
pub(crate) fn tip_state(chainstate: &Chainstate, now_unix_seconds: i64) -> Option<TipState> {
    let tip = tip(chainstate)?;
    let best_header_height = chainstate
        .best_header()
        .and_then(|hash| chainstate.index().get(&hash))
        .map(|id| chainstate.index().entry(id).height);
    let initial_block_download = initial_block_download(chainstate, now_unix_seconds);
    Some(TipState { tip, best_header_height, initial_block_download })
}

/// The ancestor at `height` of the block `hash` (itself at its height).
pub(crate) fn ancestor(
    chainstate: &Chainstate,
    hash: &BlockHash,
    height: u32,
) -> Option<IndexedBlock> {
    let id = chainstate.index().get(hash)?;
    chainstate.index().ancestor(id, height).map(|ancestor| indexed_block(chainstate, ancestor))
}

/// The active chain's blocks from `start` on, at most `count_max`; empty
/// when `start` is not in the active chain.
pub(crate) fn active_blocks(
    chainstate: &Chainstate,
    start: &BlockHash,
    count_max: usize,
) -> Vec<IndexedBlock> {
    let Some(id) = chainstate.index().get(start) else { return Vec::new() };
    let height = chainstate.index().entry(id).height;
    if !chainstate.chain().contains(id, height) {
        return Vec::new();
    }
    (height..)
        .map_while(|at| chainstate.chain().at(at))
        .take(count_max)
        .map(|at| indexed_block(chainstate, at))
        .collect()
}

/// The headers of the active chain from `first_height` to the tip (empty
/// when the tip is below it); `None` when there are more than `count_max`.
pub(crate) fn active_headers(
    chainstate: &Chainstate,
    first_height: u32,
    count_max: usize,
) -> Option<Vec<Header>> {
    let Some(tip_height) = chainstate.chain().height() else { return Some(Vec::new()) };
    let Some(span) = tip_height.checked_sub(first_height) else { return Some(Vec::new()) };
    if usize::try_from(span).unwrap_or(usize::MAX) >= count_max {
        return None;
    }
    let index = chainstate.index();
    let headers = (first_height..=tip_height)
        .filter_map(|height| chainstate.chain().at(height))
        .map(|id| index.entry(id).header)
        .collect();
    Some(headers)
}

/// The blocks `hashes` and the tip, read together.
pub(crate) fn blocks_at_tip(chainstate: &Chainstate, hashes: &[BlockHash]) -> BlocksAtTip {
    let blocks = hashes.iter().map(|hash| block(chainstate, hash)).collect();
    BlocksAtTip { blocks, tip: tip(chainstate) }
}

/// The coins at `outpoints` at the tip; `None` without a tip.
pub(crate) fn coins_at_tip(
    chainstate: &Chainstate,
    outpoints: &[OutPoint],
) -> Result<Option<CoinsAtTip>, ChainstateError> {
    let Some(tip) = chainstate.tip() else { return Ok(None) };
    let coins: Result<Vec<Option<Coin>>, ChainstateError> =
        outpoints.iter().map(|outpoint| chainstate.coin(outpoint)).collect();
    Ok(Some(CoinsAtTip { tip, coins: coins? }))
}

/// The coin set at the tip for `gettxoutsetinfo`, walked by the asker.
#[derive(Debug)]
pub(crate) struct TxOutSetViewAtTip {
    /// The tip's hash and height.
    pub tip: (BlockHash, u32),
    /// The coins at the tip.
    pub view: CoinSetView,
    /// The coins database's estimated size on disk.
    pub disk_size_bytes: u64,
}

/// The coin set at the tip for `gettxoutsetinfo`; `None` without a tip.
pub(crate) fn txoutset_view_at_tip(
    chainstate: &Chainstate,
) -> Result<Option<TxOutSetViewAtTip>, ChainstateError> {
    let Some(tip) = chainstate.tip() else { return Ok(None) };
    let disk_size_bytes = chainstate.cache().database().estimated_size_bytes()?;
    let view = chainstate.cache().coin_set_view();
    Ok(Some(TxOutSetViewAtTip { tip, view, disk_size_bytes }))
}

/// Where each of `hashes` stands against the active chain (`None`: not in
/// the index).
pub(crate) fn fork_points(chainstate: &Chainstate, hashes: &[BlockHash]) -> Vec<Option<ForkPoint>> {
    let index = chainstate.index();
    let chain = chainstate.chain();
    hashes
        .iter()
        .map(|hash| {
            let id = index.get(hash)?;
            let fork_height = chain.find_fork(index, id).map(|fork| index.entry(fork).height);
            Some(ForkPoint { height: index.entry(id).height, fork_height })
        })
        .collect()
}

/// The block `hash` (the tip when `None`) with its chain's versions and
/// times.
pub(crate) fn ancestry(chainstate: &Chainstate, hash: Option<&BlockHash>) -> Option<BlockAncestry> {
    let index = chainstate.index();
    let id = match hash {
        Some(hash) => index.get(hash)?,
        None => chainstate.chain().tip()?,
    };
    let height = usize::try_from(index.entry(id).height).ok()?;
    let mut versions = Vec::with_capacity(height + 1);
    let mut times = Vec::with_capacity(height + 1);
    // Bounded by the height: one step a block.
    let mut walk = Some(id);
    while let Some(ancestor) = walk {
        let entry = index.entry(ancestor);
        versions.push(entry.header.version);
        times.push(entry.header.time);
        walk = entry.parent;
    }
    versions.reverse();
    times.reverse();
    Some(BlockAncestry { block: indexed_block(chainstate, id), versions, times })
}
