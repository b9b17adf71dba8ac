//! Chain tips as Core's `getchaintips` reports them.

use ibex_primitives::BlockHash;

use super::Chainstate;
use crate::index::BlockStatus;

/// One tip of the block tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainTip {
    /// Its height.
    pub height: u32,
    /// Its hash.
    pub hash: BlockHash,
    /// Blocks between it and the active chain (0 for the active tip).
    pub branch_length: u32,
    /// Core's status word.
    pub status: &'static str,
}

impl Chainstate {
    /// Every block without children, plus the active tip; highest first
    /// (Core's `getchaintips`).
    pub fn chain_tips(&self) -> Vec<ChainTip> {
        let mut has_child = vec![false; self.shared.index.len()];
        for id in self.shared.index.ids() {
            if let Some(parent) = self.shared.index.entry(id).parent {
                has_child[parent.index()] = true;
            }
        }
        let mut tips: Vec<ChainTip> = self
            .shared
            .index
            .ids()
            .filter(|id| !has_child[id.index()] || Some(*id) == self.active.chain.tip())
            .map(|id| {
                let entry = self.shared.index.entry(id);
                let fork_height = self
                    .active
                    .chain
                    .find_fork(&self.shared.index, id)
                    .map_or(0, |fork| self.shared.index.entry(fork).height);
                let status = if self.active.chain.contains(id, entry.height) {
                    "active"
                } else if entry.status.is_failed() {
                    "invalid"
                } else if !entry.has_chain_data() {
                    "headers-only"
                } else if entry.status.is_valid(BlockStatus::VALID_SCRIPTS) {
                    "valid-fork"
                } else if entry.status.is_valid(BlockStatus::VALID_TREE) {
                    "valid-headers"
                } else {
                    "unknown"
                };
                ChainTip {
                    height: entry.height,
                    hash: entry.hash,
                    branch_length: entry.height - fork_height.min(entry.height),
                    status,
                }
            })
            .collect();
        tips.sort_by(|a, b| b.height.cmp(&a.height).then(a.hash.cmp(&b.hash)));
        tips
    }
}
