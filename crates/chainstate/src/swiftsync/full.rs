//! The fully validating mode's work on one block in a pass worker: Core's
//! connect rules and the scripts, run with the coins claimed for the
//! block's inputs (BIP 455's spent coins from a peer), and the accounting
//! over whole coins ([`ibex_consensus::swiftsync::full`]) that proves
//! the claims at the terminal height.
//!
//! A block waits in the pass until both it and its claimed coins came;
//! then any worker takes it. The chain's context a block's rules need is
//! fixed when the pass starts: each height's median time past on the
//! terminal block's chain (8 bytes a block: 7.4 MB for mainnet's 930,000).
//!
//! # Napkin math
//! Scripts dominate: ~32 us of signature work an input on one core, the
//! same as the usual connect, but no input waits for a coin lookup and
//! every worker checks its own block, so the cores stay busy without the
//! connect stage's ordering; the aggregate adds two compressions an input
//! (the claimed coin's hash runs 1-2 SHA-256 blocks, the created coin's as
//! many), ~1 us against the signature's 32.

use ibex_consensus::swiftsync::full::account_block_with_coins;
use ibex_consensus::swiftsync::{BlockAccount, BlockToAccount};
use ibex_consensus::{block_script_flags, BlockRejection, ConnectRules};
use ibex_primitives::hints::OutpointHasher;
use ibex_primitives::params::BuriedDeployment;
use ibex_primitives::{Height, Params, SpentCoin, SpentCoinBuf};

use super::SwiftSyncFailure;
use crate::error::ChainstateError;
use crate::scripts::verify_transaction_here;

/// Median times past of the terminal block's chain, by height.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChainTimes {
    median_time_past: Vec<i64>,
}

impl ChainTimes {
    /// The times of heights `0..times.len()`.
    pub(crate) fn new(median_time_past: Vec<i64>) -> ChainTimes {
        ChainTimes { median_time_past }
    }

    /// The median time past at `height` (0 beyond the chain, which no
    /// block below the terminal asks for).
    fn at(&self, height: u32) -> i64 {
        self.median_time_past.get(height as usize).copied().unwrap_or(0)
    }
}

/// Checks and accounts one block with the coins claimed for its inputs.
/// The outer error is a fault of the machine (a broken invariant of the
/// script check); the inner one ends the attempt.
pub(crate) fn account_with_coins<'b>(
    to_account: &BlockToAccount<'_, 'b>,
    spent: &[SpentCoinBuf],
    params: &Params,
    times: &ChainTimes,
    hasher: &OutpointHasher,
) -> Result<Result<BlockAccount<'b>, SwiftSyncFailure>, ChainstateError> {
    let (height, hash) = (to_account.height, to_account.hash);
    let coins: Vec<SpentCoin<'_>> = spent.iter().map(SpentCoinBuf::as_spent_coin).collect();
    let median_time_past_at = |at: Height| times.at(at.to_u32());
    let flags = block_script_flags(params, Height::new(height), &hash);
    let rules = ConnectRules {
        params,
        height: Height::new(height),
        flags,
        enforce_sequence_locks: params
            .deployment_active_at(BuriedDeployment::CheckSequenceVerify, Height::new(height)),
        previous_median_time_past: times.at(height.saturating_sub(1)),
        median_time_past_at: &median_time_past_at,
    };
    let account = match account_block_with_coins(to_account, &coins, &rules, hasher) {
        Ok(account) => account.account,
        Err(source) => return Ok(Err(SwiftSyncFailure::FullBlock { hash, source })),
    };
    // The accounting checked one coin per input: split them per
    // transaction in block order.
    let mut remaining = coins.as_slice();
    for (index, transaction) in to_account.block.transactions().enumerate().skip(1) {
        let (claimed, rest) = remaining.split_at(transaction.inputs().len());
        remaining = rest;
        match verify_transaction_here(index, &transaction, claimed, flags) {
            Ok(()) => {}
            Err(Ok((input, error))) => {
                let txid = to_account.txids[index];
                let rejection = BlockRejection::Script { txid, input, error };
                return Ok(Err(SwiftSyncFailure::Script { height, hash, rejection }));
            }
            Err(Err(reason)) => return Err(ChainstateError::ScriptCheckBroken { hash, reason }),
        }
    }
    Ok(Ok(account))
}
