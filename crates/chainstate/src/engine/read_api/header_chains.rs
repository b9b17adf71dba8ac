//! The read API's questions about header chains, as headers sync, block
//! download and `getheaders` serving ask them: locators (Core's
//! `GetLocator`), the headers after a peer's locator (Core's
//! `FindForkInGlobalIndex` and its `GETHEADERS` handler), where chains meet,
//! and the best header's chain above the tip.

use ibex_primitives::{BlockHash, Header};

use super::answers::{
    best_header_id, BestChainBlocks, LOCATOR_ENTRIES_MAX, LOCATOR_HASHES_READ_MAX,
};
use crate::engine::Chainstate;
use crate::index::{BlockStatus, EntryId};

/// Entries of a locator taken one block apart before the steps double.
const LOCATOR_DENSE_ENTRIES: usize = 10;

/// The locator of the block `hash` (Core's `GetLocator`): it and the ten
/// blocks before it, then steps back doubling each time, then genesis.
/// Empty for an unknown block.
pub(crate) fn locator(chainstate: &Chainstate, hash: &BlockHash) -> Vec<BlockHash> {
    let index = chainstate.index();
    let Some(id) = index.get(hash) else { return Vec::new() };
    let mut entries = Vec::with_capacity(LOCATOR_ENTRIES_MAX);
    let mut height = index.entry(id).height;
    let mut step: u32 = 1;
    while let Some(ancestor) = index.ancestor(id, height) {
        entries.push(index.entry(ancestor).hash);
        if height == 0 || entries.len() >= LOCATOR_ENTRIES_MAX {
            break;
        }
        height = height.saturating_sub(step);
        if entries.len() > LOCATOR_DENSE_ENTRIES {
            step = step.saturating_mul(2);
        }
    }
    entries
}

/// The height of `hash` when it is in the active chain.
fn active_height(chainstate: &Chainstate, hash: &BlockHash) -> Option<u32> {
    let id = chainstate.index().get(hash)?;
    let height = chainstate.index().entry(id).height;
    chainstate.chain().contains(id, height).then_some(height)
}

/// Where a peer's `locator` meets the active chain (Core's
/// `FindForkInGlobalIndex`): the first locator block in the active chain;
/// else the tip, if a locator block descends from it; else genesis. `None`
/// without an active chain.
pub(crate) fn fork_with_locator(chainstate: &Chainstate, locator: &[BlockHash]) -> Option<u32> {
    let chain = chainstate.chain();
    let index = chainstate.index();
    let (tip, tip_height) = (chain.tip()?, chain.height()?);
    for hash in locator.iter().take(LOCATOR_HASHES_READ_MAX) {
        if let Some(height) = active_height(chainstate, hash) {
            return Some(height);
        }
        if index.get(hash).is_some_and(|id| index.is_ancestor(tip, id)) {
            return Some(tip_height);
        }
    }
    Some(0)
}

/// The active chain's headers answering a peer's `getheaders` (Core's
/// `GETHEADERS` handler; its minimum-chain-work rule is the caller's):
/// - `None`: send nothing (no active chain, or an empty locator whose
///   stop block is not in the active chain);
/// - an empty list: the peer has our tip already;
/// - otherwise the headers after where the locator meets the active chain,
///   at most `count_max`, up to and including `stop` when it is among them.
pub(crate) fn headers_after_locator(
    chainstate: &Chainstate,
    locator: &[BlockHash],
    stop: &BlockHash,
    count_max: usize,
) -> Option<Vec<Header>> {
    let chain = chainstate.chain();
    let tip_height = chain.height()?;
    let (first, last) = if locator.is_empty() {
        let height = active_height(chainstate, stop)?;
        (height, height)
    } else {
        let first = fork_with_locator(chainstate, locator)?.saturating_add(1);
        if first > tip_height || count_max == 0 {
            return Some(Vec::new());
        }
        let span = u32::try_from(count_max - 1).unwrap_or(u32::MAX);
        let limit_last = first.saturating_add(span).min(tip_height);
        let last = match active_height(chainstate, stop) {
            Some(stop_height) if stop_height >= first => stop_height.min(limit_last),
            _ => limit_last,
        };
        (first, last)
    };
    let index = chainstate.index();
    let headers = (first..=last)
        .filter_map(|height| chain.at(height))
        .map(|id| index.entry(id).header)
        .collect();
    Some(headers)
}

/// Whether `hash` is in the best header's chain or the active chain.
pub(crate) fn on_best_header_or_active_chain(chainstate: &Chainstate, hash: &BlockHash) -> bool {
    let index = chainstate.index();
    let Some(id) = index.get(hash) else { return false };
    let on_best = best_header_id(chainstate).is_some_and(|best| index.is_ancestor(id, best));
    on_best || chainstate.chain().contains(id, index.entry(id).height)
}

/// The height where the chain of `hash` meets the best header's chain;
/// `None` for an unknown block.
pub(crate) fn meeting_height_with_best_header(
    chainstate: &Chainstate,
    hash: &BlockHash,
) -> Option<u32> {
    let index = chainstate.index();
    let other = index.get(hash)?;
    let best = best_header_id(chainstate)?;
    let mut height = index.entry(other).height.min(index.entry(best).height);
    // Bounded by the height: one step down per block of a fork.
    loop {
        let ours = index.ancestor(best, height)?;
        if index.ancestor(other, height) == Some(ours) {
            return Some(height);
        }
        height = height.checked_sub(1)?;
    }
}

/// The best header's chain above `tip_height` up to `last_height_max`:
/// each block's hash and whether its data is stored, from where that
/// chain leaves the active chain (or the tip) on. `None` without a header.
pub(crate) fn best_chain_blocks(
    chainstate: &Chainstate,
    tip_height: u32,
    last_height_max: u32,
) -> Option<BestChainBlocks> {
    let index = chainstate.index();
    let best = best_header_id(chainstate)?;
    let best_height = index.entry(best).height;
    let fork_height = fork_below_tip(chainstate, best, tip_height);
    let first_height = fork_height.unwrap_or(tip_height).saturating_add(1);
    let mut blocks = Vec::new();
    let mut walk = index.ancestor(best, best_height.min(last_height_max));
    while let Some(id) = walk {
        let entry = index.entry(id);
        if entry.height < first_height {
            break;
        }
        blocks.push((entry.hash, entry.status.has(BlockStatus::HAVE_DATA)));
        walk = entry.parent;
    }
    blocks.reverse();
    Some(BestChainBlocks { best_height, fork_height, first_height, blocks })
}

/// The height where the chain of `best` leaves the active chain, when that
/// is below `tip_height` (the tip is on another branch): one step down per
/// block of the fork.
fn fork_below_tip(chainstate: &Chainstate, best: EntryId, tip_height: u32) -> Option<u32> {
    // While a SwiftSync plan waits, the window starts where the best
    // chain's stored blocks end (the caller's `tip_height`), far above the
    // genesis block the active chain holds: no fork.
    if chainstate.swiftsync_stored_height().is_some_and(|stored| stored >= tip_height) {
        return None;
    }
    let index = chainstate.index();
    let chain = chainstate.chain();
    let start_height = tip_height.min(index.entry(best).height);
    let mut walk = index.ancestor(best, start_height);
    while let Some(id) = walk {
        let height = index.entry(id).height;
        if chain.at(height) == Some(id) {
            return (height < tip_height).then_some(height);
        }
        walk = index.entry(id).parent;
    }
    None
}
