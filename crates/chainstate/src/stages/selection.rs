//! Chain selection, the first stage of the engine: which blocks could be
//! the tip (candidates: their chain's data is all here and none of it is
//! marked invalid; each chainstate has its own, `Candidates`), which wait
//! for a parent's data, the most-work valid header, and the invalid marks
//! (`ChainSelection`, shared by the chainstates). It owns that state and reads the block
//! index it is given; it touches no coins, files or database, so it is
//! tested in memory.
//!
//! Candidates are ordered as Core's `CBlockIndexWorkComparator`: most work
//! first, then the block whose data was met first (its sequence number),
//! then the lower index entry.

use std::collections::{BTreeSet, HashMap, VecDeque};

use crate::index::{BlockIndex, BlockStatus, EntryId};
use ibex_primitives::ChainWork;

/// Ordering of candidate tips: most work first, then first met, then the
/// lower entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Candidate {
    work: std::cmp::Reverse<ChainWork>,
    sequence: u64,
    id: EntryId,
}

impl Candidate {
    /// Block `id`'s place in the candidate order.
    pub(crate) fn of(index: &BlockIndex, id: EntryId) -> Candidate {
        let entry = index.entry(id);
        Candidate { work: std::cmp::Reverse(entry.chain_work), sequence: entry.sequence, id }
    }
}

/// Which blocks a chainstate may take as its tip (Core's
/// `TryAddBlockIndexCandidate`, which asks the same of each chainstate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum CandidateScope {
    /// Any block (a chainstate validated from genesis).
    #[default]
    Everything,
    /// Only `base` and its descendants: a chainstate loaded from an
    /// AssumeUTXO snapshot of `base` has no coins, and no undo data, to
    /// reach any other block.
    Above(EntryId),
    /// Only `target` and its ancestors: the background chainstate
    /// validating towards a snapshot's base block (Core connects "only
    /// blocks towards the snapshot base" there).
    Toward(EntryId),
}

impl CandidateScope {
    /// Whether block `id` is within the scope.
    pub(crate) fn admits(self, index: &BlockIndex, id: EntryId) -> bool {
        match self {
            CandidateScope::Everything => true,
            CandidateScope::Above(base) => index.is_ancestor(base, id),
            CandidateScope::Toward(target) => index.is_ancestor(id, target),
        }
    }
}

/// A chainstate's candidate tips (Core's `setBlockIndexCandidates`): each
/// chainstate has its own, over the shared index, within its scope.
#[derive(Debug, Default)]
pub(crate) struct Candidates {
    set: BTreeSet<Candidate>,
    scope: CandidateScope,
}

impl Candidates {
    /// Every usable block of a loaded index within `scope` (Core's
    /// `LoadBlockIndex`).
    pub(crate) fn from_index(index: &BlockIndex, scope: CandidateScope) -> Candidates {
        let mut candidates = Candidates { set: BTreeSet::new(), scope };
        candidates.insert_from_index(index);
        candidates
    }

    /// The best candidate (the engine asks for [`Self::best_valid`]).
    #[cfg(test)]
    pub(crate) fn best(&self) -> Option<EntryId> {
        self.set.first().map(|candidate| candidate.id)
    }

    /// The best candidate not marked failed, dropping those before it
    /// that are: marks another chainstate set in the shared index (a
    /// chainstate's own failures leave its candidates when they are
    /// marked, so for the active one this drops nothing).
    pub(crate) fn best_valid(&mut self, index: &BlockIndex) -> Option<EntryId> {
        while let Some(first) = self.set.first().copied() {
            if !index.entry(first.id).status.is_failed() {
                return Some(first.id);
            }
            self.set.remove(&first);
        }
        None
    }

    /// Candidates held now.
    pub(crate) fn count(&self) -> usize {
        self.set.len()
    }

    /// Makes `id` a candidate (again) if it is within the scope; whether
    /// it was not one.
    pub(crate) fn insert(&mut self, index: &BlockIndex, id: EntryId) -> bool {
        self.scope.admits(index, id) && self.set.insert(Candidate::of(index, id))
    }

    /// Drops `id` as a candidate.
    fn remove(&mut self, index: &BlockIndex, id: EntryId) {
        self.set.remove(&Candidate::of(index, id));
    }

    /// Forgets every candidate (tests of the fixed point's repair).
    #[cfg(test)]
    pub(crate) fn clear(&mut self) {
        self.set.clear();
    }

    /// Drops the candidates worse than `settled_tip` (Core's
    /// `PruneBlockIndexCandidates`; see `engine::activate` for why the
    /// bar is the settled tip, not a pending one).
    pub(crate) fn prune_worse_than(&mut self, index: &BlockIndex, settled_tip: EntryId) {
        let bar = Candidate::of(index, settled_tip);
        while let Some(last) = self.set.last().copied() {
            if last <= bar {
                break;
            }
            self.set.remove(&last);
        }
    }

    /// Inserts every block with its chain's data, valid transactions and no
    /// failure mark as a candidate; how many were not candidates yet.
    pub(crate) fn insert_from_index(&mut self, index: &BlockIndex) -> usize {
        let mut added = 0;
        for id in index.ids() {
            if is_usable(index, id) {
                added += usize::from(self.insert(index, id));
            }
        }
        added
    }
}

/// What chain selection shares between chainstates: the blocks waiting for
/// a parent's data and the best header (Core keeps them in its
/// `BlockManager` and `ChainstateManager`). The candidates it feeds are
/// each chainstate's ([`Candidates`]).
#[derive(Debug, Default)]
pub(crate) struct ChainSelection {
    /// Blocks with data whose parent's chain data is missing, by parent.
    unlinked: HashMap<EntryId, Vec<EntryId>>,
    best_header: Option<EntryId>,
}

impl ChainSelection {
    /// The selection of a loaded index (Core's `LoadBlockIndex`): the
    /// blocks waiting for their parents and the best header (the
    /// candidates are [`Candidates::from_index`]).
    pub(crate) fn from_index(index: &BlockIndex) -> ChainSelection {
        let mut selection =
            ChainSelection { best_header: best_valid_header(index), ..ChainSelection::default() };
        for id in index.ids() {
            let entry = index.entry(id);
            // Failed blocks wait too (as in Core's `LoadBlockIndex`): a
            // `reconsiderblock` may clear their marks before their parent's
            // data arrives, and linking never makes a failed block a
            // candidate. A snapshot's base block waits for its parent
            // although its own count is assumed: linking it is what makes
            // it a candidate of the chainstate validating towards it.
            let waiting = entry.status.has(BlockStatus::HAVE_DATA);
            let parent = entry.parent.filter(|parent| !index.entry(*parent).has_chain_data());
            if let Some(parent) = parent.filter(|_| waiting) {
                selection.unlinked.entry(parent).or_default().push(id);
            }
        }
        selection
    }

    /// The most-work header not marked failed (Core's `m_best_header`).
    pub(crate) fn best_header(&self) -> Option<EntryId> {
        self.best_header
    }

    /// `id`'s data arrived: links it, or keeps it waiting for its
    /// parent's. Returns the blocks linked that are not marked failed:
    /// the caller makes them candidates of each chainstate
    /// ([`Candidates::insert`] keeps each within its scope).
    pub(crate) fn block_data_arrived(
        &mut self,
        index: &mut BlockIndex,
        id: EntryId,
    ) -> Vec<EntryId> {
        let parent = index.entry(id).parent;
        match parent.filter(|parent| !index.entry(*parent).has_chain_data()) {
            Some(parent) => {
                self.unlinked.entry(parent).or_default().push(id);
                Vec::new()
            }
            None => self.link(index, id),
        }
    }

    /// Forgets the `pruned` blocks among those waiting for a parent's data
    /// (Core's `PruneOneBlockFile` erases them from `m_blocks_unlinked`):
    /// their data is gone, so they must arrive again to count.
    pub(crate) fn forget_unlinked(&mut self, index: &BlockIndex, pruned: &[EntryId]) {
        for &id in pruned {
            let Some(parent) = index.entry(id).parent else { continue };
            if let Some(waiting) = self.unlinked.get_mut(&parent) {
                waiting.retain(|&child| child != id);
                if waiting.is_empty() {
                    self.unlinked.remove(&parent);
                }
            }
        }
    }

    /// Gives the snapshot base `base` the chain transaction count `count`
    /// (its AssumeUTXO entry's) while its ancestors' data is missing, and
    /// links the blocks waiting on it, as Core's
    /// `PopulateAndValidateSnapshot` and `LoadBlockIndex` set the base's
    /// `m_chain_tx_count`. A base whose chain data is all here keeps its
    /// own count. Returns the blocks linked (see
    /// [`Self::block_data_arrived`]).
    pub(crate) fn assume_chain_data(
        &mut self,
        index: &mut BlockIndex,
        base: EntryId,
        count: u64,
    ) -> Vec<EntryId> {
        if index.entry(base).has_chain_data() {
            return Vec::new();
        }
        index.entry_mut(base).chain_transaction_count = count.max(1);
        let waiting = self.unlinked.remove(&base).unwrap_or_default();
        waiting.into_iter().flat_map(|child| self.link(index, child)).collect()
    }

    /// Sets the chain transaction count and sequence of `id` and of every
    /// waiting descendant (Core's `ReceivedBlockTransactions`); returns
    /// those not marked failed.
    ///
    /// A snapshot's base block has its chain transaction count before its
    /// ancestors' data is here (the AssumeUTXO entry's, as Core's
    /// `PopulateAndValidateSnapshot` sets it). Linked later under its
    /// parent, it keeps that count and its sequence: its descendants'
    /// counts were computed from them and the snapshot chainstate's
    /// candidates are ordered by them.
    fn link(&mut self, index: &mut BlockIndex, id: EntryId) -> Vec<EntryId> {
        let mut linked = Vec::new();
        let mut queue = VecDeque::from([id]);
        while let Some(current) = queue.pop_front() {
            if !index.entry(current).has_chain_data() {
                let below = index
                    .entry(current)
                    .parent
                    .map_or(0, |parent| index.entry(parent).chain_transaction_count);
                let sequence = index.next_sequence();
                let entry = index.entry_mut(current);
                entry.chain_transaction_count = below + u64::from(entry.transaction_count);
                entry.sequence = sequence;
            }
            if !index.entry(current).status.is_failed() {
                linked.push(current);
            }
            if let Some(children) = self.unlinked.remove(&current) {
                queue.extend(children);
            }
        }
        linked
    }

    /// Marks `id` failed with its descendants, drops them from
    /// `candidates`, and finds the best header again if it was among them.
    pub(crate) fn mark_invalid(
        &mut self,
        index: &mut BlockIndex,
        candidates: &mut Candidates,
        id: EntryId,
    ) {
        let mut changed = index.mark_failed(id);
        changed.push(id);
        for failed in changed {
            candidates.remove(index, failed);
        }
        if self.best_header.is_some_and(|best| index.entry(best).status.is_failed()) {
            self.best_header = best_valid_header(index);
        }
    }

    /// After `reconsiderblock` cleared the failure marks of `cleared`:
    /// those usable and better than `tip` become candidates again, and the
    /// best header is found again (Core's `ResetBlockFailureFlags` and
    /// `RecalculateBestHeader`).
    pub(crate) fn reconsider(
        &mut self,
        index: &BlockIndex,
        candidates: &mut Candidates,
        cleared: &[EntryId],
        tip: Option<EntryId>,
    ) {
        let bar = tip.map(|tip| Candidate::of(index, tip));
        for &id in cleared {
            let better = bar.is_none_or(|bar| Candidate::of(index, id) < bar);
            if better && is_usable(index, id) {
                candidates.insert(index, id);
            }
        }
        self.best_header = best_valid_header(index);
    }

    /// Makes `id` the best header if it has more work and is not failed.
    pub(crate) fn consider_header(&mut self, index: &BlockIndex, id: EntryId) {
        let entry = index.entry(id);
        let better = match self.best_header {
            None => true,
            Some(best) => entry.chain_work > index.entry(best).chain_work,
        };
        if better && !entry.status.is_failed() {
            self.best_header = Some(id);
        }
    }
}

/// Whether block `id` could be a candidate: its chain's data is here, its
/// transactions passed the checks, and it is not marked failed.
fn is_usable(index: &BlockIndex, id: EntryId) -> bool {
    let entry = index.entry(id);
    entry.status.has(BlockStatus::HAVE_DATA)
        && !entry.status.is_failed()
        && entry.has_chain_data()
        && entry.status.is_valid(BlockStatus::VALID_TRANSACTIONS)
}

/// The most-work header not marked failed, by a scan of the index; the
/// first met wins ties.
fn best_valid_header(index: &BlockIndex) -> Option<EntryId> {
    index
        .ids()
        .filter(|&id| !index.entry(id).status.is_failed())
        .max_by_key(|&id| (index.entry(id).chain_work, std::cmp::Reverse(id)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use ibex_primitives::{BlockHash, Params};

    use super::*;

    /// The shared selection and one chainstate's candidates, driven
    /// together as the engine drives them for its active chainstate.
    #[derive(Default)]
    struct OneChainstate {
        shared: ChainSelection,
        candidates: Candidates,
    }

    impl OneChainstate {
        fn from_index(index: &BlockIndex) -> OneChainstate {
            let shared = ChainSelection::from_index(index);
            let candidates = Candidates::from_index(index, CandidateScope::Everything);
            OneChainstate { shared, candidates }
        }

        fn best(&self) -> Option<EntryId> {
            self.candidates.best()
        }

        fn candidate_count(&self) -> usize {
            self.candidates.count()
        }

        fn best_header(&self) -> Option<EntryId> {
            self.shared.best_header()
        }

        fn consider_header(&mut self, index: &BlockIndex, id: EntryId) {
            self.shared.consider_header(index, id);
        }

        fn mark_invalid(&mut self, index: &mut BlockIndex, id: EntryId) {
            self.shared.mark_invalid(index, &mut self.candidates, id);
        }

        fn reconsider(&mut self, index: &BlockIndex, cleared: &[EntryId], tip: Option<EntryId>) {
            self.shared.reconsider(index, &mut self.candidates, cleared, tip);
        }

        fn insert_from_index(&mut self, index: &BlockIndex) -> usize {
            self.candidates.insert_from_index(index)
        }

        fn prune_worse_than(&mut self, index: &BlockIndex, settled_tip: EntryId) {
            self.candidates.prune_worse_than(index, settled_tip);
        }
    }

    /// Indexes a header on `parent` (none: the root), named by `tag`.
    fn header(index: &mut BlockIndex, parent: Option<EntryId>, tag: u8) -> EntryId {
        let mut header = Params::regtest().genesis.header;
        header.previous_block_hash = parent.map_or(BlockHash::ZERO, |id| index.entry(id).hash);
        header.nonce = u32::from(tag);
        index.insert_header(&header, BlockHash([tag; 32])).unwrap()
    }

    /// `id`'s data arrives (one transaction, `CheckBlock` passed).
    fn data(selection: &mut OneChainstate, index: &mut BlockIndex, id: EntryId) {
        let entry = index.entry_mut(id);
        entry.transaction_count = 1;
        entry.status.set_have_data();
        entry.status.raise_validity(BlockStatus::VALID_TRANSACTIONS);
        for linked in selection.shared.block_data_arrived(index, id) {
            selection.candidates.insert(index, linked);
        }
    }

    /// A root and two children of equal work, `first` and `second`.
    fn fork() -> (BlockIndex, OneChainstate, [EntryId; 3]) {
        let mut index = BlockIndex::new();
        let root = header(&mut index, None, 1);
        let first = header(&mut index, Some(root), 2);
        let second = header(&mut index, Some(root), 3);
        (index, OneChainstate::default(), [root, first, second])
    }

    #[test]
    fn the_most_work_wins_then_the_block_met_first() {
        let (mut index, mut selection, [root, first, second]) = fork();
        data(&mut selection, &mut index, root);
        assert_eq!(selection.best(), Some(root));
        // Equal work: the one whose data arrived first wins, whatever the
        // order of the headers.
        data(&mut selection, &mut index, second);
        data(&mut selection, &mut index, first);
        assert_eq!(selection.best(), Some(second));
        let above = header(&mut index, Some(first), 4);
        data(&mut selection, &mut index, above);
        assert_eq!(selection.best(), Some(above));
    }

    #[test]
    fn a_block_waits_for_its_parents_data() {
        let (mut index, mut selection, [root, first, _]) = fork();
        let above = header(&mut index, Some(first), 4);
        data(&mut selection, &mut index, root);
        data(&mut selection, &mut index, above);
        assert_eq!(selection.best(), Some(root), "linked only once its parent's data is here");
        assert!(!index.entry(above).has_chain_data());
        data(&mut selection, &mut index, first);
        assert_eq!(selection.best(), Some(above));
        assert_eq!(index.entry(above).chain_transaction_count, 3);
    }

    #[test]
    fn an_invalid_block_takes_its_descendants_and_the_best_header_with_it() {
        let (mut index, mut selection, [root, first, second]) = fork();
        let above = header(&mut index, Some(first), 4);
        for id in [root, first, second, above] {
            selection.consider_header(&index, id);
            data(&mut selection, &mut index, id);
        }
        assert_eq!(selection.best_header(), Some(above));
        selection.mark_invalid(&mut index, first);
        assert!(index.entry(above).status.is_failed());
        assert_eq!(selection.best(), Some(second));
        assert_eq!(selection.best_header(), Some(second));
        // A descendant of a failed block never becomes a candidate again.
        assert_eq!(selection.insert_from_index(&index), 0);
        assert_eq!(selection.best(), Some(second));
    }

    #[test]
    fn reconsidering_clears_the_branch_and_its_ancestors_but_not_other_branches() {
        let (mut index, mut selection, [root, first, second]) = fork();
        let above = header(&mut index, Some(first), 4);
        for id in [root, first, second, above] {
            selection.consider_header(&index, id);
            data(&mut selection, &mut index, id);
        }
        selection.mark_invalid(&mut index, root);
        assert_eq!(selection.best(), None);
        assert_eq!(selection.best_header(), None);
        // Reconsidering `above` clears it, its ancestors `first` and the
        // root, but not the root's other child.
        let mut cleared = index.reset_failure_flags(above);
        cleared.sort();
        assert_eq!(cleared, vec![root, first, above]);
        selection.reconsider(&index, &cleared, None);
        assert!(index.entry(second).status.has(BlockStatus::FAILED_CHILD));
        assert_eq!(selection.best(), Some(above));
        assert_eq!(selection.best_header(), Some(above));
        assert_eq!(selection.candidate_count(), 3, "root, first and above");
        // Against a tip at `first`, only the better `above` comes back.
        let mut fresh = OneChainstate::default();
        fresh.reconsider(&index, &cleared, Some(first));
        assert_eq!(fresh.candidate_count(), 1);
    }

    #[test]
    fn a_failed_block_without_its_parents_data_waits_after_a_reload() {
        let (mut index, mut selection, [root, first, _]) = fork();
        let above = header(&mut index, Some(first), 4);
        data(&mut selection, &mut index, root);
        data(&mut selection, &mut index, above);
        selection.mark_invalid(&mut index, above);
        let mut reloaded = OneChainstate::from_index(&index);
        data(&mut reloaded, &mut index, first);
        assert_eq!(index.entry(above).chain_transaction_count, 3, "linked while failed");
        assert_eq!(reloaded.best(), Some(first), "linking a failed block makes no candidate");
        let cleared = index.reset_failure_flags(above);
        reloaded.reconsider(&index, &cleared, Some(first));
        assert_eq!(reloaded.best(), Some(above));
    }

    #[test]
    fn pruning_keeps_only_candidates_better_than_the_settled_tip() {
        let (mut index, mut selection, [root, first, second]) = fork();
        for id in [root, first, second] {
            data(&mut selection, &mut index, id);
        }
        assert_eq!(selection.candidate_count(), 3);
        // Against the root both children stay (a pending child must not
        // push out its sibling, which may be the valid one).
        selection.prune_worse_than(&index, root);
        assert_eq!(selection.candidate_count(), 3);
        // Against a settled `first`, the sibling met later and the root go.
        selection.prune_worse_than(&index, first);
        assert_eq!(selection.candidate_count(), 1);
        assert_eq!(selection.best(), Some(first));
        // The index still knows them: a rebuild finds both again.
        assert_eq!(selection.insert_from_index(&index), 2);
        assert_eq!(OneChainstate::from_index(&index).candidate_count(), 3);
    }
}
