//! The block index: every header met, as a tree, with chain work, validity
//! and storage positions (Core's `BlockManager::m_block_index`), persisted in
//! its own RocksDB (`blocks/index`, see [`store`]).
//!
//! Entries live in an arena (`Vec`) and refer to each other by [`EntryId`];
//! a hash map finds them by hash. Each entry also keeps a skip pointer
//! (Core's `pskip`) so [`BlockIndex::ancestor`] takes O(log n) steps: the
//! retarget rule and fork finding ask for ancestors thousands of blocks back.
//!
//! # Napkin math
//! An entry is ~200 bytes (80-byte header, 32-byte hash, 32-byte work,
//! positions, ids) plus ~50 in the hash map: 900,000 blocks take ~225 MB.

mod chain;
mod entry;
pub mod store;

use std::collections::HashMap;

pub use chain::ActiveChain;
pub use entry::{BlockIndexEntry, BlockStatus, EntryId};
use ibex_primitives::pow::block_proof;
use ibex_primitives::{BlockHash, ChainWork, CompactTarget, Header};

use crate::error::ChainstateError;

/// Core's `GetSkipHeight`: the height an entry's skip pointer jumps to,
/// chosen so that ancestor searches take logarithmic steps.
fn skip_height(height: u32) -> u32 {
    fn clear_lowest_one(value: u32) -> u32 {
        value & value.wrapping_sub(1)
    }
    if height < 2 {
        return 0;
    }
    if height & 1 == 1 {
        clear_lowest_one(clear_lowest_one(height - 1)) + 1
    } else {
        clear_lowest_one(height)
    }
}

/// The header tree.
#[derive(Debug, Default)]
pub struct BlockIndex {
    entries: Vec<BlockIndexEntry>,
    skips: Vec<Option<EntryId>>,
    by_hash: HashMap<BlockHash, EntryId>,
    dirty: Vec<EntryId>,
    is_dirty: Vec<bool>,
    next_sequence: u64,
}

impl BlockIndex {
    /// An empty index.
    pub fn new() -> BlockIndex {
        BlockIndex { next_sequence: 1, ..BlockIndex::default() }
    }

    /// How many blocks are indexed.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry for `hash`.
    pub fn get(&self, hash: &BlockHash) -> Option<EntryId> {
        self.by_hash.get(hash).copied()
    }

    /// The entry `id` (ids come from this index, so it exists).
    pub fn entry(&self, id: EntryId) -> &BlockIndexEntry {
        &self.entries[id.index()]
    }

    /// The entry `id`, to change; it is written at the next index flush.
    pub fn entry_mut(&mut self, id: EntryId) -> &mut BlockIndexEntry {
        self.mark_dirty(id);
        &mut self.entries[id.index()]
    }

    /// Every id, in insertion order (parents before children).
    pub fn ids(&self) -> impl Iterator<Item = EntryId> + '_ {
        (0..self.entries.len() as u32).map(EntryId)
    }

    /// Marks `id` to be written at the next index flush.
    pub fn mark_dirty(&mut self, id: EntryId) {
        if !self.is_dirty[id.index()] {
            self.is_dirty[id.index()] = true;
            self.dirty.push(id);
        }
    }

    /// The entries changed since the last call, and clears the list.
    pub fn take_dirty(&mut self) -> Vec<EntryId> {
        for id in &self.dirty {
            self.is_dirty[id.index()] = false;
        }
        std::mem::take(&mut self.dirty)
    }

    /// Sets the next sequence number (after loading from disk).
    pub(crate) fn set_next_sequence(&mut self, next: u64) {
        self.next_sequence = next.max(1);
    }

    /// A fresh sequence number for a block whose data was just met.
    pub fn next_sequence(&mut self) -> u64 {
        let sequence = self.next_sequence;
        self.next_sequence += 1;
        sequence
    }

    /// Adds a header whose parent is indexed (or a genesis header, with a
    /// zero parent hash, into an empty index). Returns the existing entry if
    /// the header is already known.
    pub fn insert_header(
        &mut self,
        header: &Header,
        hash: BlockHash,
    ) -> Result<EntryId, ChainstateError> {
        if let Some(id) = self.get(&hash) {
            return Ok(id);
        }
        let parent = if header.previous_block_hash == BlockHash::ZERO && self.is_empty() {
            None
        } else {
            Some(self.get(&header.previous_block_hash).ok_or(ChainstateError::UnknownParent {
                hash,
                parent: header.previous_block_hash,
            })?)
        };
        let proof = block_proof(CompactTarget(header.bits));
        let (height, chain_work, status) = match parent {
            None => (0, proof, BlockStatus::new_header(None)),
            Some(parent_id) => {
                let parent_entry = self.entry(parent_id);
                (
                    parent_entry.height + 1,
                    parent_entry.chain_work.wrapping_add(proof),
                    BlockStatus::new_header(Some(parent_entry.status)),
                )
            }
        };
        let entry = BlockIndexEntry {
            hash,
            header: *header,
            height,
            chain_work,
            parent,
            status,
            transaction_count: 0,
            chain_transaction_count: 0,
            block_position: None,
            undo_position: None,
            sequence: 0,
        };
        Ok(self.push(entry))
    }

    /// Appends a complete entry (loading from disk); its parent must be indexed.
    pub(crate) fn push(&mut self, entry: BlockIndexEntry) -> EntryId {
        let id = EntryId(self.entries.len() as u32);
        let skip = entry.parent.and_then(|parent| self.ancestor(parent, skip_height(entry.height)));
        self.by_hash.insert(entry.hash, id);
        self.entries.push(entry);
        self.skips.push(skip);
        self.is_dirty.push(false);
        self.mark_dirty(id);
        id
    }

    /// The ancestor of `id` at `height` (itself at its own height).
    pub fn ancestor(&self, id: EntryId, height: u32) -> Option<EntryId> {
        let mut walk = id;
        let mut walk_height = self.entry(walk).height;
        if height > walk_height {
            return None;
        }
        while walk_height > height {
            let jump = skip_height(walk_height);
            let jump_previous = skip_height(walk_height - 1);
            let skip = self.skips[walk.index()];
            // Take the skip pointer unless it overshoots, or the parent's
            // skip would land closer (Core's `GetAncestor` rule).
            let take_skip = jump == height
                || (jump > height && !(jump_previous + 2 < jump && jump_previous >= height));
            match (skip, take_skip) {
                (Some(target), true) => {
                    walk = target;
                    walk_height = jump;
                }
                _ => {
                    walk = self.entry(walk).parent?;
                    walk_height -= 1;
                }
            }
        }
        Some(walk)
    }

    /// The median of the last 11 block times ending at `id` (Core's
    /// `GetMedianTimePast`).
    pub fn median_time_past(&self, id: EntryId) -> i64 {
        let mut times = [0u32; 11];
        let mut count = 0;
        let mut current = Some(id);
        while let Some(walk) = current {
            if count == times.len() {
                break;
            }
            let entry = self.entry(walk);
            times[count] = entry.header.time;
            count += 1;
            current = entry.parent;
        }
        let slice = &mut times[..count];
        slice.sort_unstable();
        i64::from(slice[count / 2])
    }

    /// Whether `ancestor` is `id` or one of its ancestors.
    pub fn is_ancestor(&self, ancestor: EntryId, id: EntryId) -> bool {
        let height = self.entry(ancestor).height;
        self.ancestor(id, height) == Some(ancestor)
    }

    /// Marks `id` failed and every indexed descendant failed-child (Core's
    /// `InvalidBlockFound` / `SetBlockFailureFlags`). Returns the ids changed.
    pub fn mark_failed(&mut self, id: EntryId) -> Vec<EntryId> {
        self.entry_mut(id).status.mark_failed_valid();
        let height = self.entry(id).height;
        let descendants: Vec<EntryId> = self
            .ids()
            .filter(|&other| {
                let entry = self.entry(other);
                entry.height > height
                    && !entry.status.is_failed()
                    && self.ancestor(other, height) == Some(id)
            })
            .collect();
        for &descendant in &descendants {
            self.entry_mut(descendant).status.mark_failed_child();
        }
        descendants
    }

    /// Clears the failure marks of `id`, of its descendants and of its
    /// ancestors (Core's `ResetBlockFailureFlags`, for `reconsiderblock`);
    /// other branches below a cleared ancestor keep theirs. Returns the
    /// ids changed. One pass over the index.
    pub fn reset_failure_flags(&mut self, id: EntryId) -> Vec<EntryId> {
        let height = self.entry(id).height;
        let related: Vec<EntryId> = self
            .ids()
            .filter(|&other| {
                let entry = self.entry(other);
                entry.status.is_failed()
                    && (self.ancestor(other, height) == Some(id)
                        || self.ancestor(id, entry.height) == Some(other))
            })
            .collect();
        for &cleared in &related {
            self.entry_mut(cleared).status.clear_failure();
        }
        related
    }

    /// The chain work of `id`.
    pub fn chain_work(&self, id: EntryId) -> ChainWork {
        self.entry(id).chain_work
    }
}
