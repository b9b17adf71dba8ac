//! The read API's AssumeUTXO questions: whether a snapshot of a block
//! could be activated now (`loadtxoutset` asks before it loads), and the
//! chainstates as `getchainstates` and `getblockchaininfo` show them.

use ibex_primitives::params::AssumeUtxoEntry;
use ibex_primitives::BlockHash;

use super::answers::{indexed_block, IndexedBlock};
use super::ReadView;
use crate::engine::assumeutxo::SnapshotActivationError;
use crate::engine::reader::ReadError;
use crate::engine::Chainstate;

/// The chainstates beside the active one's tip (Core's
/// `ChainstateManager`'s, as `getchainstates` lists them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainstatesAnswer {
    /// The active chainstate's tip.
    pub active_tip: Option<IndexedBlock>,
    /// The snapshot the active chainstate was loaded from: its base block
    /// and whether the background chainstate proved it.
    pub snapshot_base: Option<(IndexedBlock, bool)>,
    /// The background chainstate's tip, while one validates towards the
    /// base.
    pub background_tip: Option<IndexedBlock>,
    /// The best header's height (`None`: no header).
    pub best_header_height: Option<u32>,
    /// The active chainstate's share of `-dbcache` for its UTXO cache, in
    /// bytes.
    pub active_cache_bytes_max: usize,
    /// The background chainstate's, while it validates.
    pub background_cache_bytes_max: Option<usize>,
}

impl ReadView<'_> {
    /// Core's checks before a snapshot of `base_hash` is loaded
    /// ([`Chainstate::check_snapshot_base`]): the block's AssumeUTXO entry,
    /// or why it cannot be activated.
    pub fn check_snapshot_base(
        &self,
        base_hash: &BlockHash,
    ) -> Result<Result<AssumeUtxoEntry, SnapshotActivationError>, ReadError> {
        let base_hash = *base_hash;
        self.ask(move |chainstate| chainstate.check_snapshot_base(&base_hash))
    }

    /// The chainstates: the active tip, the snapshot and the background
    /// chainstate's tip.
    pub fn chainstates(&self) -> Result<ChainstatesAnswer, ReadError> {
        self.ask(chainstates)
    }
}

fn chainstates(chainstate: &Chainstate) -> ChainstatesAnswer {
    let index = chainstate.index();
    let snapshot_base = chainstate
        .snapshot
        .map(|snapshot| (indexed_block(chainstate, snapshot.base), snapshot.validated));
    let background_tip = chainstate
        .background
        .as_ref()
        .and_then(|background| background.chain.tip())
        .map(|id| indexed_block(chainstate, id));
    let best_header_height =
        chainstate.best_header().and_then(|hash| index.get(&hash)).map(|id| index.entry(id).height);
    ChainstatesAnswer {
        active_tip: chainstate.chain().tip().map(|id| indexed_block(chainstate, id)),
        snapshot_base,
        background_tip,
        best_header_height,
        active_cache_bytes_max: chainstate.cache().cache_bytes_max(),
        background_cache_bytes_max: chainstate
            .background
            .as_ref()
            .map(|background| background.connector.cache().cache_bytes_max()),
    }
}
