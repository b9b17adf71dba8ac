//! The active chain: one entry per height from genesis to the tip.

use super::{BlockIndex, EntryId};

/// The blocks of the chain the coins reflect, by height (Core's `CChain`).
#[derive(Debug, Clone, Default)]
pub struct ActiveChain {
    entries: Vec<EntryId>,
}

impl ActiveChain {
    /// The tip, if the chain has at least genesis.
    pub fn tip(&self) -> Option<EntryId> {
        self.entries.last().copied()
    }

    /// The tip's height (`None` when empty).
    pub fn height(&self) -> Option<u32> {
        u32::try_from(self.entries.len()).ok()?.checked_sub(1)
    }

    /// The block at `height`.
    pub fn at(&self, height: u32) -> Option<EntryId> {
        self.entries.get(height as usize).copied()
    }

    /// Whether `id` (at `height`) is on the chain.
    pub fn contains(&self, id: EntryId, height: u32) -> bool {
        self.at(height) == Some(id)
    }

    /// Appends `id`, which must be a child of the tip.
    pub fn push(&mut self, id: EntryId) {
        self.entries.push(id);
    }

    /// Removes the tip.
    pub fn pop(&mut self) -> Option<EntryId> {
        self.entries.pop()
    }

    /// Makes the chain end at `tip` (rebuilding it from `index`).
    pub fn set_tip(&mut self, index: &BlockIndex, tip: Option<EntryId>) {
        self.entries.clear();
        let Some(tip) = tip else { return };
        let mut current = Some(tip);
        while let Some(id) = current {
            self.entries.push(id);
            current = index.entry(id).parent;
        }
        self.entries.reverse();
    }

    /// The last block `id`'s chain shares with this one (Core's `FindFork`).
    pub fn find_fork(&self, index: &BlockIndex, id: EntryId) -> Option<EntryId> {
        let mut current = Some(id);
        if let Some(height) = self.height() {
            if index.entry(id).height > height {
                current = index.ancestor(id, height);
            }
        }
        while let Some(candidate) = current {
            let entry = index.entry(candidate);
            if self.contains(candidate, entry.height) {
                return Some(candidate);
            }
            current = entry.parent;
        }
        None
    }
}
