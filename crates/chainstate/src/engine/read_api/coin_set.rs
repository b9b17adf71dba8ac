//! The coin set at the tip as a view another thread walks (`dumptxoutset`,
//! `gettxoutsetinfo`), with the blocks between a target and the tip for a
//! rollback: all read in one query, so the view and the blocks agree.

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
