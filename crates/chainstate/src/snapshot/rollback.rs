//! The coin changes that take the tip's coin set back to an earlier block:
//! each later block's outputs removed and the coins it spent put back from
//! its undo data, as Core's `DisconnectBlock` does, without touching the
//! chain (Core v30 rolled the node itself back with `invalidateblock`;
//! Core's master copies the coins into a temporary database and
//! disconnects there).
//!
//! # Memory
//! One change per output created and per input spent after the target:
//! ~100 bytes each. A mainnet block has ~5,000 of them, so a rollback of
//! 1,000 blocks holds ~0.5 GB. [`ROLLBACK_COIN_CHANGES_MAX`] bounds it.

use std::collections::HashMap;

use ibex_primitives::txoutset::is_unspendable;
use ibex_primitives::{BlockHash, BlockView, OutPoint, Txid};

use crate::coins::coin::Coin;
use crate::coins::view::CoinChange;
use crate::error::ChainstateError;
use crate::undo::BlockUndo;

/// Most coin changes a rollback holds in memory (~4 GB at ~100 bytes each).
pub const ROLLBACK_COIN_CHANGES_MAX: usize = 40_000_000;

/// The changes of a rollback, added block by block from the tip down.
#[derive(Debug, Default)]
pub struct RollbackChanges {
    /// A block's change replaces a later block's at the same outpoint: the
    /// state at the target is the one the lowest block undone leaves.
    changes: HashMap<OutPoint, Option<Coin>>,
}

impl RollbackChanges {
    /// Undoes `block` (hash `hash`, transactions `txids`) with its undo
    /// data; blocks must come from the tip down.
    pub fn undo_block(
        &mut self,
        block: &BlockView<'_>,
        txids: &[Txid],
        hash: &BlockHash,
        undo: &BlockUndo,
    ) -> Result<(), ChainstateError> {
        let transaction_count = block.transaction_count();
        if undo.transactions.len() + 1 != transaction_count || txids.len() != transaction_count {
            return Err(ChainstateError::UndoMismatch { hash: *hash });
        }
        // Last transaction first: an output spent later in the same block
        // is put back by the spender's undo, then removed by its creator.
        for index in (0..transaction_count).rev() {
            let transaction =
                block.transaction(index).ok_or(ChainstateError::UndoMismatch { hash: *hash })?;
            for (vout, output) in transaction.outputs().iter().enumerate() {
                if is_unspendable(output.script_pubkey) {
                    continue;
                }
                let vout = u32::try_from(vout)
                    .map_err(|_| ChainstateError::UndoMismatch { hash: *hash })?;
                self.changes.insert(OutPoint { txid: txids[index], vout }, None);
            }
            if index == 0 {
                continue;
            }
            let spent = &undo.transactions[index - 1].spent;
            if spent.len() != transaction.inputs().len() {
                return Err(ChainstateError::UndoMismatch { hash: *hash });
            }
            for (input, coin) in transaction.inputs().iter().zip(spent).rev() {
                self.changes.insert(input.previous_output(), Some(coin.clone()));
            }
        }
        if self.changes.len() > ROLLBACK_COIN_CHANGES_MAX {
            return Err(ChainstateError::RollbackTooDeep {
                coin_changes_max: ROLLBACK_COIN_CHANGES_MAX,
            });
        }
        Ok(())
    }

    /// The changes, one per outpoint.
    pub fn into_changes(self) -> Vec<CoinChange> {
        self.changes.into_iter().collect()
    }
}
