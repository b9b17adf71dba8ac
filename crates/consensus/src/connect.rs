//! The rules of Core's `ConnectBlock` that need the spent coins but no
//! storage: for each transaction in block order `CheckTxInputs` (maturity,
//! amounts, fee), the running fee total within `MoneyRange`, BIP68
//! sequence locks and the block's sigop cost limit; at the end the
//! coinbase amount. Pure: the caller finds the coins (a UTXO cache, a
//! test's map) and hands them in, one transaction at a time, so the first
//! failure is the one Core reports.
//!
//! What stays with the caller, because it needs the coins themselves:
//! whether each input's coin exists and is unspent
//! (`bad-txns-inputs-missingorspent`), BIP30 (no output may overwrite an
//! unspent coin, checked for every transaction before any is applied, as in
//! Core), and the scripts.
//!
//! Order per transaction, as in Core: `CheckTxInputs`, then the fee total,
//! then the sequence locks, then the sigop cost.

use ibex_primitives::{Amount, BlockView, Height, Params, SpentCoin, TransactionView, Txid};
use ibex_script::VerifyFlags;

use crate::contextual::{check_coinbase_amount, transaction_sigop_cost};
use crate::error::BlockError;
use crate::finality::{sequence_locks, sequence_locks_satisfied};
use crate::inputs::check_transaction_inputs;
use crate::limits::BLOCK_SIGOPS_COST_MAX;
use crate::rejection::BlockRejection;

/// The block's place in the chain, as the connect rules need it.
pub struct ConnectRules<'a> {
    /// Network parameters.
    pub params: &'a Params,
    /// The block's height.
    pub height: Height,
    /// Script flags in force (the sigop cost counts P2SH and witness
    /// sigops only where they apply).
    pub flags: VerifyFlags,
    /// Whether BIP68 sequence locks apply (CSV active).
    pub enforce_sequence_locks: bool,
    /// Median time past of the parent.
    pub previous_median_time_past: i64,
    /// Median time past of the active-chain block at a height up to the
    /// parent's (for time-based sequence locks).
    pub median_time_past_at: &'a dyn Fn(Height) -> i64,
}

/// What a block's transactions add up to once every rule here passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockTotals {
    /// The fees of all its transactions.
    pub fees: Amount,
    /// Its sigop cost.
    pub sigop_cost: u64,
}

/// The connect rules for one block, fed its transactions in order.
pub struct BlockConnectCheck<'a> {
    rules: &'a ConnectRules<'a>,
    totals: BlockTotals,
}

impl<'a> BlockConnectCheck<'a> {
    /// A block with no transaction checked yet.
    pub fn new(rules: &'a ConnectRules<'a>) -> BlockConnectCheck<'a> {
        BlockConnectCheck { rules, totals: BlockTotals { fees: Amount::ZERO, sigop_cost: 0 } }
    }

    /// The coinbase (the first transaction): its sigop cost.
    pub fn coinbase(&mut self, coinbase: &TransactionView<'_>) -> Result<(), BlockRejection> {
        self.add_sigop_cost(coinbase, &[])
    }

    /// A transaction after the coinbase whose inputs spend `spent` (one
    /// coin per input, in input order); its fee.
    pub fn transaction(
        &mut self,
        transaction: &TransactionView<'_>,
        txid: &Txid,
        spent: &[SpentCoin<'_>],
    ) -> Result<Amount, BlockRejection> {
        let rules = self.rules;
        let fee = check_transaction_inputs(transaction, spent, rules.height)
            .map_err(|source| BlockRejection::Transaction { txid: *txid, source })?;
        // Core's `MoneyRange(nFees)` after each addition.
        self.totals.fees =
            self.totals.fees.checked_add(fee).ok_or(BlockRejection::FeesOutOfRange)?;
        if rules.enforce_sequence_locks {
            let heights = spent.iter().map(|coin| coin.height);
            let locks = sequence_locks(transaction, true, heights, rules.median_time_past_at);
            if !sequence_locks_satisfied(locks, rules.height, rules.previous_median_time_past) {
                return Err(BlockRejection::SequenceLocks { txid: *txid });
            }
        }
        let scripts: Vec<&[u8]> = spent.iter().map(|coin| coin.script_pubkey).collect();
        self.add_sigop_cost(transaction, &scripts)?;
        Ok(fee)
    }

    /// The coinbase amount against the subsidy and the fees; the totals.
    pub fn finish(self, block: &BlockView<'_>) -> Result<BlockTotals, BlockRejection> {
        check_coinbase_amount(block, self.totals.fees, self.rules.height, self.rules.params)?;
        Ok(self.totals)
    }

    fn add_sigop_cost(
        &mut self,
        transaction: &TransactionView<'_>,
        spent_scripts: &[&[u8]],
    ) -> Result<(), BlockRejection> {
        let cost = transaction_sigop_cost(transaction, spent_scripts, self.rules.flags);
        self.totals.sigop_cost = self.totals.sigop_cost.saturating_add(cost);
        if self.totals.sigop_cost > BLOCK_SIGOPS_COST_MAX {
            return Err(BlockError::Sigops { cost: self.totals.sigop_cost }.into());
        }
        Ok(())
    }
}
