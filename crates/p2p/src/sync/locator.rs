//! Block locators: building one from a chain (Core's `LocatorEntries` /
//! `CChain::GetLocator`), finding where a received one forks from our
//! active chain (Core's `FindForkInGlobalIndex`), and which headers a
//! `getheaders` request gets (net_processing.cpp's `GETHEADERS` handler).
//!
//! Pure functions over a [`ChainView`]: hash at a height, height of a hash.
//! [`HashChain`] is a ready-made view over a list of hashes.
//!
//! A locator holds the last 11 blocks one by one, then steps back twice as
//! far each time, and ends with genesis: 11 + log2(height) + 1 hashes, 31
//! for mainnet's 900,000 blocks, always under [`LOCATOR_HASHES_MAX`]
//! (101) for any 32-bit height (11 + 32 + 1 = 44).

use std::collections::HashMap;
use std::ops::RangeInclusive;

use ibex_primitives::BlockHash;

use crate::messages::headers::{LocatorRequest, HEADERS_PER_MESSAGE_MAX, LOCATOR_HASHES_MAX};

/// Locator entries one block apart before the steps start doubling.
const LOCATOR_DENSE_ENTRIES: usize = 10;
/// The longest locator [`locator_entries`] makes: 11 dense entries, one per
/// doubling of the step (at most 32 for 32-bit heights) and genesis.
pub const LOCATOR_ENTRIES_MAX: usize = LOCATOR_DENSE_ENTRIES + 1 + 32 + 1;
const _: () = assert!(LOCATOR_ENTRIES_MAX <= LOCATOR_HASHES_MAX);
/// Blocks a [`HashChain`] may hold: 2^26, more than 1,200 years of blocks.
pub const HASH_CHAIN_BLOCKS_MAX: usize = 1 << 26;

/// A chain of blocks by height, from genesis (height 0) to its tip.
pub trait ChainView {
    /// The tip's height; `None` for an empty chain.
    fn tip_height(&self) -> Option<u32>;
    /// The hash of the block at `height`, if the chain reaches it.
    fn hash_at(&self, height: u32) -> Option<BlockHash>;
    /// The height of `hash` if it is on this chain.
    fn height_of(&self, hash: &BlockHash) -> Option<u32>;
    /// Whether `hash` is a known block whose ancestor at the tip's height is
    /// the tip (Core's second test in `FindForkInGlobalIndex`). A view that
    /// knows only its own chain answers `false`, the default.
    fn descends_from_tip(&self, _hash: &BlockHash) -> bool {
        false
    }
}

/// A chain as a list of hashes by height, with a map back from hash to
/// height: 32 + ~48 bytes a block.
#[derive(Debug, Clone, Default)]
pub struct HashChain {
    hashes: Vec<BlockHash>,
    heights: HashMap<BlockHash, u32>,
}

/// A [`HashChain`] is full ([`HASH_CHAIN_BLOCKS_MAX`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a hash chain holds at most {HASH_CHAIN_BLOCKS_MAX} blocks")]
pub struct HashChainFull;

impl HashChain {
    /// An empty chain.
    pub fn new() -> HashChain {
        HashChain::default()
    }

    /// The chain of `hashes`, genesis first.
    pub fn from_hashes(hashes: &[BlockHash]) -> Result<HashChain, HashChainFull> {
        let mut chain = HashChain::new();
        for hash in hashes {
            chain.push(*hash)?;
        }
        Ok(chain)
    }

    /// Appends a block at the next height.
    pub fn push(&mut self, hash: BlockHash) -> Result<(), HashChainFull> {
        let height = u32::try_from(self.hashes.len()).map_err(|_| HashChainFull)?;
        if self.hashes.len() >= HASH_CHAIN_BLOCKS_MAX {
            return Err(HashChainFull);
        }
        self.hashes.push(hash);
        self.heights.insert(hash, height);
        Ok(())
    }

    /// Removes every block above `height` (a reorganisation's first half).
    pub fn truncate_above(&mut self, height: u32) {
        let keep = (height as usize).saturating_add(1);
        for hash in self.hashes.iter().skip(keep) {
            self.heights.remove(hash);
        }
        self.hashes.truncate(keep);
    }

    /// Blocks in the chain (tip height + 1).
    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    /// Whether the chain has no block.
    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }
}

impl ChainView for HashChain {
    fn tip_height(&self) -> Option<u32> {
        self.hashes.len().checked_sub(1).and_then(|height| u32::try_from(height).ok())
    }

    fn hash_at(&self, height: u32) -> Option<BlockHash> {
        self.hashes.get(height as usize).copied()
    }

    fn height_of(&self, hash: &BlockHash) -> Option<u32> {
        self.heights.get(hash).copied()
    }
}

/// The locator of the block at `height` on `chain` (Core's
/// `LocatorEntries`): that block and the ten before it, then steps back
/// doubling each time, then genesis. Empty if `chain` has no block at
/// `height`.
pub fn locator_entries(chain: &impl ChainView, height: u32) -> Vec<BlockHash> {
    let mut entries = Vec::with_capacity(LOCATOR_ENTRIES_MAX);
    let mut current = height;
    let mut step: u32 = 1;
    while let Some(hash) = chain.hash_at(current) {
        entries.push(hash);
        if current == 0 || entries.len() >= LOCATOR_ENTRIES_MAX {
            break;
        }
        current = current.saturating_sub(step);
        if entries.len() > LOCATOR_DENSE_ENTRIES {
            step = step.saturating_mul(2);
        }
    }
    entries
}

/// The height on our chain where a peer's locator meets it (Core's
/// `FindForkInGlobalIndex`): the first locator hash on our chain; else our
/// tip if a locator hash descends from it; else genesis. `None` only for an
/// empty chain.
pub fn find_fork(chain: &impl ChainView, locator: &[BlockHash]) -> Option<u32> {
    let tip_height = chain.tip_height()?;
    for hash in locator.iter().take(LOCATOR_HASHES_MAX) {
        if let Some(height) = chain.height_of(hash) {
            return Some(height);
        }
        if chain.descends_from_tip(hash) {
            return Some(tip_height);
        }
    }
    Some(0)
}

/// Which headers of our active chain answer a `getheaders` request, by
/// height (Core's `GETHEADERS` handler):
/// - `None`: send nothing (an empty locator naming a block not on `chain`).
/// - `Some(range)` with `range` empty: send an empty `headers` message (the
///   peer already has our tip).
/// - otherwise the headers after the fork point, at most 2,000, up to and
///   including the stop hash when it is among them.
///
/// An empty locator asks for the stop hash's header alone. Core serves that
/// one from its whole block index (if `BlockRequestAllowed`); a
/// [`ChainView`] sees only the active chain, so a header off it gets
/// nothing. Core also answers with an empty `headers` message while its own
/// tip is below the minimum chain work; that check is the caller's.
pub fn headers_to_serve(
    chain: &impl ChainView,
    request: &LocatorRequest,
) -> Option<RangeInclusive<u32>> {
    let tip_height = chain.tip_height()?;
    if request.locator_hashes.is_empty() {
        let height = chain.height_of(&request.stop_hash)?;
        return Some(height..=height);
    }
    let first = find_fork(chain, &request.locator_hashes)?.saturating_add(1);
    if first > tip_height {
        return Some(empty_range());
    }
    let limit_last = first.saturating_add(HEADERS_PER_MESSAGE_MAX as u32 - 1).min(tip_height);
    let last = match chain.height_of(&request.stop_hash) {
        Some(stop_height) if stop_height >= first => stop_height.min(limit_last),
        _ => limit_last,
    };
    Some(first..=last)
}

/// A range that yields nothing (`1..=0`).
fn empty_range() -> RangeInclusive<u32> {
    #[allow(clippy::reversed_empty_ranges)]
    let empty = 1..=0;
    empty
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(height: u32) -> BlockHash {
        let mut bytes = [0u8; 32];
        bytes[..4].copy_from_slice(&height.to_le_bytes());
        bytes[31] = 1;
        BlockHash(bytes)
    }

    fn chain(tip_height: u32) -> HashChain {
        let hashes: Vec<BlockHash> = (0..=tip_height).map(hash).collect();
        HashChain::from_hashes(&hashes).unwrap()
    }

    #[test]
    fn locator_heights_follow_core() {
        let chain = chain(100);
        let heights: Vec<u32> = locator_entries(&chain, 100)
            .iter()
            .map(|entry| chain.height_of(entry).unwrap())
            .collect();
        assert_eq!(
            heights,
            [100, 99, 98, 97, 96, 95, 94, 93, 92, 91, 90, 89, 87, 83, 75, 59, 27, 0]
        );
        assert_eq!(locator_entries(&chain, 0), [hash(0)]);
        assert!(locator_entries(&chain, 101).is_empty());
    }

    #[test]
    fn truncate_forgets_hashes_above() {
        let mut chain = chain(10);
        chain.truncate_above(4);
        assert_eq!(chain.tip_height(), Some(4));
        assert_eq!(chain.height_of(&hash(5)), None);
        assert_eq!(chain.height_of(&hash(4)), Some(4));
    }
}
