//! The fully validating mode's recent coins (BIP 455's `cutoff`): the
//! coins a block spends that were created in the last
//! [`SPENT_COINS_RECENT_BLOCKS`] blocks before it, or in itself, are not
//! asked of peers; the pass takes them from those blocks, which it has.
//!
//! A block at height `h` is asked for with the cutoff
//! [`spent_coins_cutoff`]`(h)`: the peer sends only the coins created
//! below it, each with its input's index; the worker fills in the others
//! from the outputs of the blocks `cutoff..h` (this module's
//! [`RecentBlocks`], or read back) and of `h` itself
//! (`super::claimed`). The pass hands a block over only once every block
//! below it is stored, so those blocks are there to read.
//!
//! # Napkin math
//! BIP 455 counts 41 % of mainnet's spent coins as created within 10
//! blocks of their spend: of ~95 GB of `bspent` for the whole chain, ~39 GB
//! are not sent. The cost on the asking side is a look-up by transaction id
//! in at most 11 blocks' tables per coin left out (~50 ns each), and the
//! recent blocks' outputs kept: mainnet blocks create ~5,000 outputs, ~40
//! bytes each with their script, so [`RECENT_BLOCKS_CACHED_MAX`] blocks
//! hold ~13 MB. A block none of its followers found in the table is read
//! back from its file once (~1-2 ms), as a block is for its own check.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use foldhash::fast::SeedableRandomState;
use ibex_primitives::{Amount, BlockHash, BlockView, Height, OutPoint, SpentCoinBuf, Txid};

use crate::coins::hasher::salted_hash_builder;

/// Blocks before a block whose created coins it spends are not asked of
/// peers (the coins it spends from itself neither).
pub const SPENT_COINS_RECENT_BLOCKS: u32 = 10;

/// Recent blocks' outputs kept for the blocks after them; the lowest
/// heights go first.
pub const RECENT_BLOCKS_CACHED_MAX: usize = 64;

/// The cutoff a block at `height` is asked for with: coins created at or
/// above it are taken from the blocks (at least 1: the genesis block's
/// coin is never spendable, so 0, "every coin", is never asked).
pub fn spent_coins_cutoff(height: u32) -> u32 {
    height.saturating_sub(SPENT_COINS_RECENT_BLOCKS).max(1)
}

/// One output of a [`RecentBlock`].
#[derive(Debug, Clone, Copy)]
struct RecentOutput {
    value: i64,
    script_start: u32,
    script_length: u32,
}

/// The outputs of one block, by transaction id.
#[derive(Debug)]
pub(crate) struct RecentBlock {
    hash: BlockHash,
    height: u32,
    /// A transaction id's first output in `outputs`, its output count,
    /// whether it is the coinbase.
    transactions: HashMap<Txid, (u32, u32, bool), SeedableRandomState>,
    outputs: Vec<RecentOutput>,
    scripts: Vec<u8>,
}

impl RecentBlock {
    /// The outputs of block `hash` at `height`, whose transaction ids are
    /// `txids`.
    pub(crate) fn of(view: &BlockView<'_>, txids: &[Txid], hash: BlockHash, height: u32) -> Self {
        // Keyed foldhash, as the coins cache: a transaction id is looked
        // up in up to 11 tables per coin left out.
        let mut transactions =
            HashMap::with_capacity_and_hasher(txids.len(), salted_hash_builder());
        let mut outputs = Vec::new();
        let mut scripts = Vec::new();
        for (position, (transaction, txid)) in view.transactions().zip(txids).enumerate() {
            let first = outputs.len() as u32;
            for output in transaction.outputs() {
                let script_start = scripts.len() as u32;
                scripts.extend_from_slice(output.script_pubkey);
                let script_length = output.script_pubkey.len() as u32;
                outputs.push(RecentOutput { value: output.value, script_start, script_length });
            }
            let count = outputs.len() as u32 - first;
            // A repeated transaction id within one block spends an output
            // twice and fails the block's checks; the first is kept.
            transactions.entry(*txid).or_insert((first, count, position == 0));
        }
        RecentBlock { hash, height, transactions, outputs, scripts }
    }

    /// The coin `outpoint` names when this block created it: `Some(None)`
    /// for a value out of range (the block fails its own checks).
    pub(crate) fn coin(&self, outpoint: &OutPoint) -> Option<Option<SpentCoinBuf>> {
        self.coin_before(outpoint, u32::MAX)
    }

    /// [`RecentBlock::coin`] for a transaction whose outputs start before
    /// the block's output number `outputs_before` (within a block, only an
    /// earlier transaction's outputs may be spent).
    pub(crate) fn coin_before(
        &self,
        outpoint: &OutPoint,
        outputs_before: u32,
    ) -> Option<Option<SpentCoinBuf>> {
        let &(first, count, is_coinbase) = self.transactions.get(&outpoint.txid)?;
        if outpoint.vout >= count || first >= outputs_before {
            return None;
        }
        let output = self.outputs.get((first + outpoint.vout) as usize)?;
        let start = output.script_start as usize;
        let script = self.scripts.get(start..start + output.script_length as usize)?;
        let Ok(value) = Amount::from_sat(output.value) else { return Some(None) };
        Some(Some(SpentCoinBuf {
            value,
            script_pubkey: script.to_vec(),
            height: Height::new(self.height),
            is_coinbase,
        }))
    }
}

/// Recent blocks' outputs, shared by the pass's workers: each worker puts
/// in the block it accounts and takes out those a later block needs.
#[derive(Debug, Default)]
pub(crate) struct RecentBlocks {
    blocks: Mutex<BTreeMap<u32, Arc<RecentBlock>>>,
}

impl RecentBlocks {
    /// The outputs of block `hash` at `height`, when kept.
    pub(crate) fn get(&self, height: u32, hash: &BlockHash) -> Option<Arc<RecentBlock>> {
        let blocks = self.blocks.lock().unwrap_or_else(PoisonError::into_inner);
        blocks.get(&height).filter(|block| block.hash == *hash).cloned()
    }

    /// Keeps `block`, dropping the lowest heights past
    /// [`RECENT_BLOCKS_CACHED_MAX`].
    pub(crate) fn insert(&self, block: Arc<RecentBlock>) {
        let mut blocks = self.blocks.lock().unwrap_or_else(PoisonError::into_inner);
        blocks.insert(block.height, block);
        while blocks.len() > RECENT_BLOCKS_CACHED_MAX {
            blocks.pop_first();
        }
    }
}
