//! The read API's pruning questions: what the block and undo files hold
//! (`getblockchaininfo`'s `size_on_disk` and `pruneheight`) and the first
//! block of the active chain at or after a time (`pruneblockchain` given a
//! timestamp).
//!
//! # Napkin math
//! The time search walks the active chain from genesis and stops at the
//! answer: at most one index lookup a block (~900k on mainnet, a few ms),
//! once per operator's `pruneblockchain`. Core keeps each entry's
//! `nTimeMax` to search in `log n`; an index without that field pays the
//! walk instead of 4 bytes a block. The prune height walks down from the
//! tip while blocks are stored: asked only of a pruning node, whose stored
//! run is short.

use super::ReadView;
use crate::engine::reader::ReadError;
use crate::engine::Chainstate;

/// The block and undo files as `getblockchaininfo` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockStorage {
    /// Bytes of block and undo data in the files (Core's
    /// `CalculateCurrentUsage`).
    pub files_bytes: u64,
    /// Core's `GetPruneHeight`: the highest block of the active chain below
    /// the run of blocks with data and undo data that ends at the tip
    /// (`None`: nothing pruned, or not asked).
    pub prune_height: Option<u32>,
}

impl ReadView<'_> {
    /// What the block and undo files hold; the prune height only when
    /// `with_prune_height` (it walks the stored run below the tip).
    pub fn block_storage(&self, with_prune_height: bool) -> Result<BlockStorage, ReadError> {
        self.ask(move |chainstate| block_storage(chainstate, with_prune_height))
    }

    /// The height of the active chain's first block whose time, or one of
    /// its ancestors', is at least `time_seconds` (Core's
    /// `CChain::FindEarliestAtLeast(time, 0)`); `None` when there is none.
    pub fn earliest_at_least(&self, time_seconds: i64) -> Result<Option<u32>, ReadError> {
        self.ask(move |chainstate| earliest_at_least(chainstate, time_seconds))
    }
}

fn block_storage(chainstate: &Chainstate, with_prune_height: bool) -> BlockStorage {
    BlockStorage {
        files_bytes: chainstate.block_files_bytes(),
        prune_height: if with_prune_height { chainstate.prune_height() } else { None },
    }
}

/// See [`ReadView::earliest_at_least`].
pub(crate) fn earliest_at_least(chainstate: &Chainstate, time_seconds: i64) -> Option<u32> {
    let chain = chainstate.chain();
    let index = chainstate.index();
    let times = (0..).map_while(|height| chain.at(height)).map(|id| index.entry(id).header.time);
    first_reaching(times, time_seconds)
}

/// The position of the first of `times` whose running maximum (the time
/// of it and of every one before it) is at least `time_seconds`.
fn first_reaching(times: impl Iterator<Item = u32>, time_seconds: i64) -> Option<u32> {
    let mut time_max = 0u32;
    for (height, time) in (0u32..).zip(times) {
        time_max = time_max.max(time);
        if i64::from(time_max) >= time_seconds {
            return Some(height);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::test_chain::accepted_chain;

    #[test]
    fn the_running_maximum_of_the_times_decides_as_cores_time_max() {
        let times = [100, 300, 200, 250, 400];
        let first = |time| first_reaching(times.into_iter(), time);
        assert_eq!(first(i64::MIN), Some(0));
        assert_eq!(first(100), Some(0));
        assert_eq!(first(101), Some(1));
        // Block 2 (200) and 3 (250) have an ancestor at 300 already.
        assert_eq!(first(250), Some(1));
        assert_eq!(first(301), Some(4));
        assert_eq!(first(400), Some(4));
        assert_eq!(first(401), None);
        assert_eq!(first_reaching(std::iter::empty(), 0), None);
    }

    #[test]
    fn a_chain_is_searched_from_genesis_and_an_unpruned_one_reports_nothing_pruned() {
        let root = tempfile::tempdir().unwrap();
        let (_, mut chainstate) = accepted_chain(root.path());
        chainstate.activate_best_chain().unwrap();
        let tip_height = chainstate.chain().height().unwrap();
        let time_at = |height| {
            let id = chainstate.chain().at(height).unwrap();
            i64::from(chainstate.index().entry(id).header.time)
        };
        assert_eq!(earliest_at_least(&chainstate, 0), Some(0));
        assert_eq!(earliest_at_least(&chainstate, time_at(tip_height)), Some(tip_height));
        assert_eq!(earliest_at_least(&chainstate, time_at(tip_height) + 1), None);

        let storage = block_storage(&chainstate, true);
        assert_eq!(storage.prune_height, None);
        assert_eq!(storage.files_bytes, chainstate.block_files_bytes());
        assert!(storage.files_bytes > 0);
        assert_eq!(block_storage(&chainstate, false).prune_height, None);
    }
}
