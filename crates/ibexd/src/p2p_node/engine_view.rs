//! The engine as the sync state machines read it, through the
//! chainstate's read API ([`ChainReader`]'s views): the block index for
//! headers sync ([`ReaderIndex`]), the best header chain above the tip for
//! the block download, with AssumeUTXO's background chainstate's blocks
//! below the snapshot's base ([`BestChainWindow`]), and the reads that answer
//! peers (`getheaders`, `getdata`), each one question answered on the
//! engine's thread.
//!
//! The sync's own reads (index lookups, locators, the window, where a
//! peer's chain meets ours) are unsettled ([`ChainReader::unsettled`]):
//! they read the block index and the header chains, which no pending
//! script verdict changes, and make no pipeline bubble. What answers peers
//! and announces tips reads a settled state: nothing is served that a
//! failed verdict could take back.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use ibex_chainstate::{
    AssumeUtxoSummary, BestChainBlocks, BlockStatus, ChainReader, IndexedBlock, ReadView,
};
use ibex_p2p::sync::block_download::{BackgroundRange, BLOCK_DOWNLOAD_WINDOW_BLOCKS};
use ibex_p2p::sync::headers::anti_dos_work_threshold;
use ibex_p2p::sync::IndexedHeader;
use ibex_p2p::sync::{HeaderChain, HeaderIndex};
use ibex_p2p::{LocatorRequest, HEADERS_PER_MESSAGE_MAX};
use ibex_primitives::{BlockHash, ChainWork, Header};

/// How long a read may wait for the engine (a long flush at worst).
pub const QUERY_TIMEOUT: Duration = Duration::from_secs(5);

fn indexed_header(block: &IndexedBlock) -> IndexedHeader {
    IndexedHeader {
        hash: block.hash,
        previous_block_hash: block.header.previous_block_hash,
        height: block.height,
        chain_work: block.chain_work,
        bits: block.header.bits,
        time: block.header.time,
        median_time_past: block.median_time_past,
    }
}

/// The headers sync's view of the engine's index: each call one question.
/// A question the engine does not answer (stopped or busy) reads as
/// "unknown".
#[derive(Debug, Clone)]
pub struct ReaderIndex {
    reader: ChainReader,
    /// Answer when the engine cannot: genesis, at height 0.
    genesis: IndexedHeader,
    /// The chain's minimum chain work (`-minimumchainwork`): fixed for the
    /// node's run, so it is never asked of the engine.
    minimum_chain_work: ChainWork,
}

impl ReaderIndex {
    /// A view over `reader` on the chain of `params`; `genesis` stands in
    /// when the engine is gone.
    pub fn new(
        reader: ChainReader,
        genesis: IndexedHeader,
        params: &ibex_primitives::Params,
    ) -> ReaderIndex {
        ReaderIndex { reader, genesis, minimum_chain_work: params.minimum_chain_work }
    }

    fn view(&self) -> ReadView<'_> {
        self.reader.unsettled(QUERY_TIMEOUT)
    }
}

impl HeaderIndex for ReaderIndex {
    fn lookup(&self, hash: &BlockHash) -> Option<IndexedHeader> {
        let block = self.view().block(hash).ok().flatten()?;
        (!block.status.is_failed()).then(|| indexed_header(&block))
    }

    fn is_ancestor_of_best_header_or_tip(&self, hash: &BlockHash) -> bool {
        self.view().on_best_header_or_active_chain(hash).unwrap_or(false)
    }

    fn best_header(&self) -> IndexedHeader {
        let best = self.view().best_header().ok().flatten();
        best.map_or_else(|| self.genesis.clone(), |block| indexed_header(&block))
    }

    fn locator(&self, hash: &BlockHash) -> Vec<BlockHash> {
        self.view().locator(hash).unwrap_or_default()
    }

    fn anti_dos_work_threshold(&self) -> ChainWork {
        match self.view().tip() {
            Ok(Some(tip)) => {
                anti_dos_work_threshold(tip.chain_work, tip.header.bits, self.minimum_chain_work)
            }
            Ok(None) => self.minimum_chain_work,
            // Fail closed: a threshold the engine cannot tell (busy, timed
            // out, gone) is one no header chain reaches, so low-work
            // headers go to presync instead of into the index.
            Err(_) => ChainWork::MAX,
        }
    }

    fn minimum_chain_work(&self) -> ChainWork {
        self.minimum_chain_work
    }

    fn is_initial_block_download(&self) -> bool {
        self.view().initial_block_download(unix_seconds()).unwrap_or(true)
    }
}

/// Whether the settled tip `tip` is too old for anything to be announced
/// (initial block download by its age alone): decided from a snapshot, so
/// an IBD makes no settled query per tip move.
pub fn tip_is_stale(tip: &ibex_chainstate::TipSummary, now_unix_seconds: i64) -> bool {
    i64::from(tip.time) < now_unix_seconds - ibex_chainstate::MAX_TIP_AGE_SECONDS
}

/// Core's `Synchronizing blockheaders, height: N (~P%)` line for the
/// indexed header `hash`, logged while in initial block download: the
/// share of the chain its height is, estimating the blocks after it from
/// its age (`spacing_seconds` a block). `None` out of initial block
/// download or for an unknown hash.
pub fn headers_progress_line(
    reader: &ChainReader,
    hash: BlockHash,
    spacing_seconds: i64,
) -> Option<String> {
    let now = unix_seconds();
    let view = reader.unsettled(QUERY_TIMEOUT);
    if !view.initial_block_download(now).ok()? {
        return None;
    }
    let block = view.block(&hash).ok()??;
    let blocks_left = ((now - i64::from(block.header.time)) / spacing_seconds.max(1)).max(0);
    let height = i64::from(block.height);
    let total = (height + blocks_left).max(1) as f64;
    let progress = 100.0 * height as f64 / total;
    Some(format!("Synchronizing blockheaders, height: {height} (~{progress:.2}%)"))
}

/// What announces a new tip to peers that asked for `headers` (BIP130):
/// the headers of the active chain above `from_height` up to the tip, at
/// most `count_max`; `None` in initial block download (Core announces
/// nothing then) or when there are none; empty when there are more than
/// `count_max` (Core sends an `inv` of the tip instead: the caller does).
pub fn announcement_headers(
    reader: &ChainReader,
    from_height: u32,
    count_max: usize,
) -> Option<Vec<Header>> {
    let view = reader.settled(QUERY_TIMEOUT);
    if view.initial_block_download(unix_seconds()).ok()? {
        return None;
    }
    match view.active_headers(from_height.saturating_add(1), count_max).ok()? {
        Some(headers) if headers.is_empty() => None,
        Some(headers) => Some(headers),
        None => Some(Vec::new()),
    }
}

/// `-mocktime` (0: none): the time the P2P side takes for now.
static MOCK_TIME_SECONDS: AtomicI64 = AtomicI64::new(0);

/// Makes [`unix_seconds`] answer `seconds` (Core's `SetMockTime`, for
/// `-mocktime` on regtest); 0 goes back to the real clock.
pub fn set_mock_time(seconds: i64) {
    MOCK_TIME_SECONDS.store(seconds, Ordering::Relaxed);
}

/// The clock the P2P side decides by (initial block download, headers
/// sync, tip announcements), in Unix seconds: the wall clock, or
/// `-mocktime`.
pub fn unix_seconds() -> i64 {
    let mocked = MOCK_TIME_SECONDS.load(Ordering::Relaxed);
    if mocked != 0 {
        return mocked;
    }
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX))
}

/// The best header chain's blocks above the engine's tip, as far as the
/// download window reaches and one more, and with AssumeUTXO the snapshot
/// chain's blocks above the background chainstate's tip, as far as its
/// window reaches: what the block download scheduler reads.
#[derive(Debug, Clone, Default)]
pub struct BestChainWindow {
    best: BestChainBlocks,
    background: Option<BackgroundBlocks>,
}

/// The blocks the background chainstate needs next.
#[derive(Debug, Clone)]
struct BackgroundBlocks {
    range: BackgroundRange,
    /// From the background's tip + 1 on: each block's hash and whether its
    /// data is stored.
    blocks: Vec<(BlockHash, bool)>,
}

impl BestChainWindow {
    /// Reads the window above `tip_height` (one question), and the
    /// background's (one more, with a snapshot not yet validated); `None`
    /// when the engine does not answer.
    pub fn read(reader: &ChainReader, tip_height: u32) -> Option<BestChainWindow> {
        // One block past the window too: the scheduler tells that the
        // window is what holds a peer back (Core's staller detection) only
        // by seeing a block there it may not ask for yet.
        let last_height_max =
            tip_height.saturating_add(BLOCK_DOWNLOAD_WINDOW_BLOCKS).saturating_add(1);
        let view = reader.unsettled(QUERY_TIMEOUT);
        let best = view.best_chain_blocks(tip_height, last_height_max).ok().flatten()?;
        let background = read_background(reader, &view);
        Some(BestChainWindow { best, background })
    }

    /// The background chainstate's range as the window was read.
    pub fn background(&self) -> Option<BackgroundRange> {
        self.background.as_ref().map(|background| background.range)
    }
}

/// The blocks AssumeUTXO's background chainstate still needs, from what
/// the engine publishes: `None` without a snapshot, once it is validated,
/// before the background has a tip, or with its tip at the base.
pub fn background_range(summary: &AssumeUtxoSummary) -> Option<BackgroundRange> {
    if summary.validated {
        return None;
    }
    let (_, tip_height) = summary.background_tip?;
    let range = BackgroundRange { tip_height, base_height: summary.base_height };
    range.needs_blocks().then_some(range)
}

/// The background's window: which blocks are stored comes from the best
/// header chain (one question), and only the part of it that is the
/// snapshot chain (the active chain's published hashes below the base) is
/// kept, so a best header off the base's chain yields nothing to fetch.
fn read_background(reader: &ChainReader, view: &ReadView<'_>) -> Option<BackgroundBlocks> {
    let range = background_range(reader.snapshot().assumeutxo.as_ref()?)?;
    let last_height = range.window_end(BLOCK_DOWNLOAD_WINDOW_BLOCKS);
    let stored = view.best_chain_blocks(range.tip_height, last_height).ok().flatten()?;
    let first_height = range.tip_height.saturating_add(1);
    let count = usize::try_from(last_height - range.tip_height).unwrap_or(usize::MAX);
    let (_, snapshot_chain) = reader.snapshot_with_hashes(first_height, count);
    let blocks = snapshot_chain_prefix(&stored, first_height, &snapshot_chain);
    Some(BackgroundBlocks { range, blocks })
}

/// The blocks of `stored` from `first_height` on while they are the
/// snapshot chain's (`snapshot_chain`, from `first_height` on).
fn snapshot_chain_prefix(
    stored: &BestChainBlocks,
    first_height: u32,
    snapshot_chain: &[BlockHash],
) -> Vec<(BlockHash, bool)> {
    let Some(skip) = first_height.checked_sub(stored.first_height) else { return Vec::new() };
    let skip = usize::try_from(skip).unwrap_or(usize::MAX);
    stored
        .blocks
        .iter()
        .skip(skip)
        .zip(snapshot_chain)
        .take_while(|((stored_hash, _), snapshot_hash)| stored_hash == *snapshot_hash)
        .map(|(block, _)| *block)
        .collect()
}

impl HeaderChain for BestChainWindow {
    fn best_height(&self) -> u32 {
        self.best.best_height
    }

    fn hash_at(&self, height: u32) -> Option<BlockHash> {
        let offset = height.checked_sub(self.best.first_height)?;
        self.best.blocks.get(usize::try_from(offset).ok()?).map(|(hash, _)| *hash)
    }

    fn have_block_data(&self, height: u32, hash: &BlockHash) -> bool {
        let Some(offset) = height.checked_sub(self.best.first_height) else { return true };
        let offset = usize::try_from(offset).unwrap_or(usize::MAX);
        self.best.blocks.get(offset).is_some_and(|(block, have)| block == hash && *have)
    }

    fn fork_height(&self) -> Option<u32> {
        self.best.fork_height
    }

    fn background_range(&self) -> Option<BackgroundRange> {
        self.background()
    }

    fn background_block(&self, height: u32) -> Option<(BlockHash, bool)> {
        let background = self.background.as_ref()?;
        let offset = height.checked_sub(background.range.tip_height.saturating_add(1))?;
        let block = background.blocks.get(usize::try_from(offset).ok()?)?;
        background.range.is_needed(height).then_some(*block)
    }
}

/// Where `peer_best`'s chain meets our best header chain (the height the
/// block download may fetch from that peer up to); `None` when unknown.
pub fn common_height_with_best(reader: &ChainReader, peer_best: BlockHash) -> Option<u32> {
    let view = reader.unsettled(QUERY_TIMEOUT);
    view.meeting_height_with_best_header(&peer_best).ok().flatten()
}

/// The headers answering `request` from our active chain (Core's
/// `GETHEADERS` handler); `None`: send nothing. With `minimum_chain_work`,
/// a tip below it gets an empty answer (Core: "active chain has too little
/// work; sending empty response").
pub fn headers_for(
    reader: &ChainReader,
    request: LocatorRequest,
    minimum_chain_work: Option<ChainWork>,
) -> Option<Vec<Header>> {
    let view = reader.settled(QUERY_TIMEOUT);
    let tip_work = view.tip().ok()?.map(|tip| tip.chain_work);
    let too_little_work = match (tip_work, minimum_chain_work) {
        (None, _) => true,
        (Some(work), Some(minimum)) => work < minimum,
        (Some(_), None) => false,
    };
    if too_little_work {
        return Some(Vec::new());
    }
    let (locator, stop) = (&request.locator_hashes, &request.stop_hash);
    view.headers_after_locator(locator, stop, HEADERS_PER_MESSAGE_MAX).ok().flatten()
}

/// How far a block off the active chain may lie behind the best header, in
/// its time and in the time its missing work stands for, and still be
/// served (Core's `STALE_RELAY_AGE_LIMIT`, 30 days).
const STALE_RELAY_AGE_LIMIT_SECONDS: u64 = 30 * 24 * 60 * 60;

/// Core's `BlockRequestAllowed`: a block of the active chain, or one that
/// was fully validated (connected once) and is less than 30 days behind the
/// best header both by its time and by its work
/// (`GetBlockProofEquivalentTime`, blocks of `spacing_seconds`). Stale
/// blocks older than that are not served, so a peer cannot learn which old
/// forks we saw.
pub(super) fn block_request_allowed(
    view: &ReadView<'_>,
    block: &IndexedBlock,
    spacing_seconds: u64,
) -> Option<bool> {
    if block.in_active_chain {
        return Some(true);
    }
    let Some(best) = view.best_header().ok()? else { return Some(false) };
    let age_seconds = i64::from(best.header.time) - i64::from(block.header.time);
    let work_seconds = proof_equivalent_seconds(
        best.chain_work,
        block.chain_work,
        best.header.bits,
        spacing_seconds,
    );
    Some(
        block.status.is_valid(BlockStatus::VALID_SCRIPTS)
            && age_seconds < STALE_RELAY_AGE_LIMIT_SECONDS as i64
            && work_seconds < STALE_RELAY_AGE_LIMIT_SECONDS,
    )
}

/// Core's `GetBlockProofEquivalentTime(best, block, best)`: the seconds of
/// blocks at the best header's difficulty (`spacing` seconds each) that
/// the work between them stands for (0 when the block has as much work). A
/// difference too large to count reads as `u64::MAX`, where Core's
/// arithmetic would wrap.
fn proof_equivalent_seconds(
    best_work: ChainWork,
    block_work: ChainWork,
    best_bits: u32,
    spacing: u64,
) -> u64 {
    if block_work >= best_work {
        return 0;
    }
    let difference = best_work.to_u256().wrapping_sub(block_work.to_u256());
    let proof = ibex_primitives::pow::block_proof(ibex_primitives::CompactTarget(best_bits));
    // 2^192 times a spacing under 2^64 cannot wrap.
    if difference.bits() > 192 {
        return u64::MAX;
    }
    match difference.wrapping_mul_u64(spacing).checked_div(proof.to_u256()) {
        Some(seconds) if seconds.bits() <= 63 => seconds.low_u64(),
        _ => u64::MAX,
    }
}

/// Core's `NODE_NETWORK_LIMITED_MIN_BLOCKS`: the blocks below the tip a
/// `NODE_NETWORK_LIMITED` node serves.
pub const LIMITED_SERVING_BLOCKS: u32 = 288;
/// Core's "two blocks buffer extension for possible races" past
/// [`LIMITED_SERVING_BLOCKS`].
const LIMITED_SERVING_SLACK_BLOCKS: u32 = 2;

/// What a `getdata` block request gets ([`block_for`]).
#[derive(Debug, PartialEq, Eq)]
pub enum BlockAnswer {
    /// The block's stored bytes.
    Block(Vec<u8>),
    /// Nothing: unknown, never stored (below an AssumeUTXO snapshot's
    /// base), invalid, or not allowed (Core's `BlockRequestAllowed`).
    NotServed,
    /// Nothing, and no word of it: the block's data was stored and has
    /// been pruned. Core ignores such a request (no `notfound`, no
    /// disconnect).
    Pruned,
    /// Deeper below the tip than a `NODE_NETWORK_LIMITED` node serves,
    /// asked of one that announced only that: Core disconnects the peer
    /// rather than let it wait for a block that never comes.
    BelowLimitedThreshold,
}

/// Whether a block at `block_height` lies deeper below the active tip at
/// `tip_height` than a `NODE_NETWORK_LIMITED` node serves (Core's
/// `tip->nHeight - pindex->nHeight > NODE_NETWORK_LIMITED_MIN_BLOCKS + 2`).
pub fn below_limited_threshold(tip_height: u32, block_height: u32) -> bool {
    tip_height.saturating_sub(block_height) > LIMITED_SERVING_BLOCKS + LIMITED_SERVING_SLACK_BLOCKS
}

/// Answers a block request in Core's `ProcessGetBlockData` order: an
/// unknown or not allowed block is not served; then, when `limited` (we
/// announced `NODE_NETWORK_LIMITED` without `NODE_NETWORK` to a peer
/// without `noban`), one below [`below_limited_threshold`] is refused
/// whether stored or not, so the peer learns nothing of what we keep;
/// then one not stored or invalid is not served (one pruned gets
/// [`BlockAnswer::Pruned`]: its transaction count tells that its data was
/// stored once, Core's `IsBlockPruned`). The engine only looks
/// up where it is (settled reads: one for a block of the active chain,
/// and the best header for one off it); the bytes are read here,
/// unparsed, off the engine's thread.
pub fn block_for(
    reader: &ChainReader,
    hash: BlockHash,
    spacing_seconds: i64,
    limited: bool,
) -> BlockAnswer {
    let view = reader.settled(QUERY_TIMEOUT);
    let Some(block) = view.block(&hash).ok().flatten() else { return BlockAnswer::NotServed };
    let spacing_seconds = u64::try_from(spacing_seconds).unwrap_or(600);
    if block_request_allowed(&view, &block, spacing_seconds) != Some(true) {
        return BlockAnswer::NotServed;
    }
    let tip_height = block.active_tip_height.unwrap_or(0);
    if limited && below_limited_threshold(tip_height, block.height) {
        return BlockAnswer::BelowLimitedThreshold;
    }
    if !block.status.has(BlockStatus::HAVE_DATA) && block.transaction_count > 0 {
        return BlockAnswer::Pruned;
    }
    if !block.status.has(BlockStatus::HAVE_DATA) || block.status.is_failed() {
        return BlockAnswer::NotServed;
    }
    let Some(position) = block.position else { return BlockAnswer::NotServed };
    match reader.read_stored_block(position, &hash) {
        Ok(bytes) => BlockAnswer::Block(bytes),
        Err(_) => BlockAnswer::NotServed,
    }
}

/// The header the headers sync starts from when the engine cannot answer.
pub fn genesis_header(params: &ibex_primitives::Params) -> IndexedHeader {
    IndexedHeader {
        hash: params.genesis_hash,
        previous_block_hash: BlockHash::ZERO,
        height: 0,
        chain_work: ChainWork::ZERO,
        bits: 0,
        time: 0,
        median_time_past: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(byte: u8) -> BlockHash {
        BlockHash([byte; 32])
    }

    #[test]
    fn a_work_threshold_the_engine_cannot_tell_fails_closed() {
        let root = tempfile::tempdir().unwrap();
        let params = ibex_primitives::Params::regtest();
        let options = ibex_chainstate::ChainstateOptions {
            params: params.clone(),
            blocks_directory: root.path().join("blocks"),
            chainstate_directory: root.path().join("chainstate"),
            memory: ibex_chainstate::MemoryBudget::for_coins_bytes(1 << 20, 1 << 16),
            script_threads: 1,
            assume_valid: None,
            periodic_flush_interval: Duration::from_secs(3600),
            stop_at_height: None,
            prune: ibex_chainstate::PruneMode::Disabled,
            fast_prune: false,
        };
        let chainstate = ibex_chainstate::Chainstate::open(
            options,
            Box::new(|_: &ibex_chainstate::ChainEvent| {}),
        )
        .unwrap();
        let index = ReaderIndex::new(chainstate.reader(), genesis_header(&params), &params);
        // The engine is gone: no answer can come.
        drop(chainstate);
        assert_eq!(index.anti_dos_work_threshold(), ChainWork::MAX);
        assert_eq!(index.minimum_chain_work(), params.minimum_chain_work, "needs no engine");
    }

    #[test]
    fn a_limited_node_serves_the_last_288_blocks_and_two_more() {
        assert!(!below_limited_threshold(300, 300));
        assert!(!below_limited_threshold(300, 10), "290 deep: Core's buffer of two");
        assert!(below_limited_threshold(300, 9));
        assert!(below_limited_threshold(300, 0));
        assert!(!below_limited_threshold(0, 5), "above the tip");
    }

    #[test]
    fn proof_equivalent_time_counts_blocks_at_the_best_difficulty() {
        use ibex_primitives::U256;
        let regtest_bits = 0x207f_ffff;
        // A regtest block proves 2: 100 blocks of work are 100 intervals.
        let work = |blocks: u64| ChainWork::from_u256(U256::from_u64(2 * blocks));
        assert_eq!(proof_equivalent_seconds(work(300), work(200), regtest_bits, 600), 60_000);
        assert_eq!(proof_equivalent_seconds(work(200), work(300), regtest_bits, 600), 0);
        let far = ChainWork::from_u256(U256::from_u64(1).shl(200));
        assert_eq!(proof_equivalent_seconds(far, work(1), regtest_bits, 600), u64::MAX);
        let past_limit = STALE_RELAY_AGE_LIMIT_SECONDS / 600 + 1;
        let seconds = proof_equivalent_seconds(work(past_limit), work(0), regtest_bits, 600);
        assert!(seconds >= STALE_RELAY_AGE_LIMIT_SECONDS);
    }

    #[test]
    fn the_window_answers_only_above_the_tip_and_knows_stored_blocks() {
        let best = BestChainBlocks {
            best_height: 12,
            first_height: 10,
            fork_height: Some(9),
            blocks: vec![(hash(10), true), (hash(11), false), (hash(12), false)],
        };
        let window = BestChainWindow { best, background: None };
        assert_eq!(window.background_range(), None);
        assert_eq!(window.background_block(3), None);
        assert_eq!(window.fork_height(), Some(9));
        assert_eq!(window.best_height(), 12);
        assert_eq!(window.hash_at(9), None);
        assert_eq!(window.hash_at(10), Some(hash(10)));
        assert_eq!(window.hash_at(12), Some(hash(12)));
        assert_eq!(window.hash_at(13), None);
        assert!(window.have_block_data(10, &hash(10)));
        assert!(!window.have_block_data(11, &hash(11)));
        assert!(!window.have_block_data(10, &hash(11)), "another block at that height");
        assert!(window.have_block_data(9, &hash(9)), "at or below the tip: connected");
    }

    #[test]
    fn the_background_range_needs_a_snapshot_not_yet_validated_below_its_base() {
        let summary = AssumeUtxoSummary {
            base_hash: hash(50),
            base_height: 50,
            background_tip: Some((hash(7), 7)),
            validated: false,
        };
        let range = BackgroundRange { tip_height: 7, base_height: 50 };
        assert_eq!(background_range(&summary), Some(range));
        assert_eq!(background_range(&AssumeUtxoSummary { validated: true, ..summary }), None);
        let at_base = AssumeUtxoSummary { background_tip: Some((hash(50), 50)), ..summary };
        assert_eq!(background_range(&at_base), None);
        let no_tip = AssumeUtxoSummary { background_tip: None, ..summary };
        assert_eq!(background_range(&no_tip), None);
    }

    #[test]
    fn the_background_window_keeps_only_the_snapshot_chain() {
        // Blocks 8 to 11 of the best header chain; the snapshot chain
        // leaves it after 9.
        let stored = BestChainBlocks {
            best_height: 60,
            first_height: 8,
            fork_height: None,
            blocks: vec![(hash(8), false), (hash(9), true), (hash(10), false), (hash(11), false)],
        };
        let snapshot_chain = [hash(8), hash(9), hash(99), hash(11)];
        let blocks = snapshot_chain_prefix(&stored, 8, &snapshot_chain);
        assert_eq!(blocks, [(hash(8), false), (hash(9), true)]);
        let range = BackgroundRange { tip_height: 7, base_height: 50 };
        let window = BestChainWindow {
            best: BestChainBlocks::default(),
            background: Some(BackgroundBlocks { range, blocks }),
        };
        assert_eq!(window.background_range(), Some(range));
        assert_eq!(window.background_block(7), None, "the background's tip");
        assert_eq!(window.background_block(8), Some((hash(8), false)));
        assert_eq!(window.background_block(9), Some((hash(9), true)));
        assert_eq!(window.background_block(10), None, "off the snapshot chain");
        assert!(snapshot_chain_prefix(&stored, 7, &snapshot_chain).is_empty(), "below the read");
    }
}
