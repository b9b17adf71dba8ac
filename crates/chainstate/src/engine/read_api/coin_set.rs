//! The coin set at the tip as a view another thread walks (`dumptxoutset`,
//! `gettxoutsetinfo`), with the blocks between a target and the tip for a
//! rollback: all read in one query, so the view and the blocks agree.

use ibex_blockstore::BlockPosition;
use ibex_primitives::BlockHash;

use super::answers::{indexed_block, IndexedBlock};
use crate::coins::view::CoinSetView;
use crate::engine::Chainstate;

/// The coin set at the tip, and the blocks a rollback to a target undoes.
#[derive(Debug)]
pub struct CoinSetAtTip {
    /// The coins at the tip.
    pub view: CoinSetView,
    /// The tip.
    pub tip: IndexedBlock,
    /// The block the caller asked for (the tip when it asked for none).
    pub target: IndexedBlock,
    /// The active chain's blocks above the target, the tip first.
    pub blocks_above_target: Vec<IndexedBlock>,
}

/// Why there is no coin set for a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CoinSetTargetError {
    /// No tip yet.
    #[error("the chain has no tip yet")]
    NoTip,
    /// The block is not in the block index.
    #[error("block {hash} not found")]
    UnknownBlock {
        /// The block asked for.
        hash: BlockHash,
    },
    /// The block is not in the active chain, so no rollback reaches it.
    #[error("block {hash} is not in the active chain")]
    NotInActiveChain {
        /// The block asked for.
        hash: BlockHash,
    },
    /// The height is above the active chain's tip.
    #[error("height {height} is above the tip's height {tip_height}")]
    HeightAboveTip {
        /// The height asked for.
        height: u32,
        /// The tip's height.
        tip_height: u32,
    },
}

/// A block of the active chain, with where its bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChainBlock {
    /// Its hash.
    pub hash: BlockHash,
    /// Its height.
    pub height: u32,
    /// Where its bytes are stored, if they are.
    pub position: Option<BlockPosition>,
}

/// The coin set at the tip with the blocks a rollback to `height` undoes,
/// and the active chain's blocks from 1 to that height: what a hints file
/// for that height is written from.
#[derive(Debug)]
pub struct ChainToHeight {
    /// The coins at the tip, and the blocks above the target.
    pub at: CoinSetAtTip,
    /// The active chain's blocks from height 1 to the target, in order.
    pub blocks: Vec<ChainBlock>,
}

/// [`coin_set_at_tip`] for the active chain's block at `height` (the tip
/// when `None`), with that chain's blocks up to it.
pub(crate) fn chain_to_height(
    chainstate: &Chainstate,
    height: Option<u32>,
) -> Result<ChainToHeight, CoinSetTargetError> {
    let tip_id = chainstate.chain().tip().ok_or(CoinSetTargetError::NoTip)?;
    let tip_height = chainstate.index().entry(tip_id).height;
    let height = height.unwrap_or(tip_height);
    let target = chainstate
        .chain()
        .at(height)
        .ok_or(CoinSetTargetError::HeightAboveTip { height, tip_height })?;
    let target_hash = chainstate.index().entry(target).hash;
    let at = coin_set_at_tip(chainstate, Some(&target_hash))?;
    let blocks = (1..=height)
        .filter_map(|block_height| chainstate.chain().at(block_height))
        .map(|id| {
            let entry = chainstate.index().entry(id);
            ChainBlock { hash: entry.hash, height: entry.height, position: entry.block_position }
        })
        .collect();
    Ok(ChainToHeight { at, blocks })
}

/// The view at the tip with the blocks above `target` (the tip when
/// `None`).
pub(crate) fn coin_set_at_tip(
    chainstate: &Chainstate,
    target: Option<&BlockHash>,
) -> Result<CoinSetAtTip, CoinSetTargetError> {
    let tip_id = chainstate.chain().tip().ok_or(CoinSetTargetError::NoTip)?;
    let target_id = match target {
        None => tip_id,
        Some(hash) => {
            let id = chainstate
                .index()
                .get(hash)
                .ok_or(CoinSetTargetError::UnknownBlock { hash: *hash })?;
            let height = chainstate.index().entry(id).height;
            if !chainstate.chain().contains(id, height) {
                return Err(CoinSetTargetError::NotInActiveChain { hash: *hash });
            }
            id
        }
    };
    let target_height = chainstate.index().entry(target_id).height;
    let tip_height = chainstate.index().entry(tip_id).height;
    let blocks_above_target = (target_height + 1..=tip_height)
        .rev()
        .filter_map(|height| chainstate.chain().at(height))
        .map(|id| indexed_block(chainstate, id))
        .collect();
    Ok(CoinSetAtTip {
        view: chainstate.cache().coin_set_view(),
        tip: indexed_block(chainstate, tip_id),
        target: indexed_block(chainstate, target_id),
        blocks_above_target,
    })
}

impl Chainstate {
    /// The coin set at the tip with the blocks a rollback to `height` (the
    /// tip when `None`) undoes, and the active chain's blocks up to it:
    /// the source of a hints file, on the engine's own thread (a tool on a
    /// stopped node; a running node asks through [`crate::ReadView`]).
    pub fn chain_to_height(
        &self,
        height: Option<u32>,
    ) -> Result<ChainToHeight, CoinSetTargetError> {
        chain_to_height(self, height)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use ibex_primitives::txoutset::TxOutSetHashType;

    use super::*;
    use crate::coins::cache::FlushMode;
    use crate::coins::txoutset::stats_of_view;
    use crate::snapshot::roll_back_to_target;
    use crate::test_chain::accepted_chain;
    use crate::FlushReason;

    /// Views taken at the tip keep their coins while the engine
    /// disconnects blocks and flushes; a view rolled back in memory with
    /// the undo data has the coins the engine's own disconnects leave.
    #[test]
    fn views_stay_put_while_the_chain_moves_and_a_rollback_matches_disconnecting() {
        let root = tempfile::tempdir().unwrap();
        let (blocks, mut chainstate) = accepted_chain(root.path());
        chainstate.activate_best_chain().unwrap();
        let hash_type = TxOutSetHashType::HashSerialized3;
        let top = u32::try_from(blocks.len() - 1).unwrap();
        assert!(top >= 4, "a chain of at least five blocks");
        let at_tip_stats = chainstate.txoutset_stats(hash_type).unwrap();
        let target_height = top - 3;
        let target = chainstate.index().entry(chainstate.chain().at(target_height).unwrap()).hash;
        let first_undone =
            chainstate.index().entry(chainstate.chain().at(target_height + 1).unwrap()).hash;

        let at_tip = coin_set_at_tip(&chainstate, None).unwrap();
        assert!(at_tip.blocks_above_target.is_empty());
        assert_eq!(at_tip.target, at_tip.tip);
        let mut rolled = coin_set_at_tip(&chainstate, Some(&target)).unwrap();
        let heights: Vec<u32> =
            rolled.blocks_above_target.iter().map(|block| block.height).collect();
        assert_eq!(heights, [top, top - 1, top - 2]);
        assert_eq!(stats_of_view(&at_tip.view, hash_type).unwrap(), at_tip_stats);

        // The engine disconnects three blocks and writes its coins out.
        chainstate.invalidate_block(&first_undone).unwrap();
        assert_eq!(chainstate.tip().map(|tip| tip.1), Some(target_height));
        chainstate.flush(FlushReason::Shutdown, FlushMode::EmptyCache).unwrap();
        let at_target_stats = chainstate.txoutset_stats(hash_type).unwrap();
        assert_ne!(at_target_stats, at_tip_stats);

        // The views still see the tip's coins.
        assert_eq!(stats_of_view(&at_tip.view, hash_type).unwrap(), at_tip_stats);
        assert_eq!(stats_of_view(&rolled.view, hash_type).unwrap(), at_tip_stats);
        // Rolled back in memory: the engine's coins after its disconnects.
        roll_back_to_target(&chainstate.reader(), &mut rolled).unwrap();
        assert_eq!(stats_of_view(&rolled.view, hash_type).unwrap(), at_target_stats);

        let unknown = BlockHash([0x42; 32]);
        assert_eq!(
            coin_set_at_tip(&chainstate, Some(&unknown)).unwrap_err(),
            CoinSetTargetError::UnknownBlock { hash: unknown }
        );
        assert_eq!(
            coin_set_at_tip(&chainstate, Some(&first_undone)).unwrap_err(),
            CoinSetTargetError::NotInActiveChain { hash: first_undone }
        );
    }
}
