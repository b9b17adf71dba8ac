//! The room a generated block's transactions may fill: consensus's weight
//! and sigops limits less what the coinbase and header need, and how long
//! planning keeps trying to fill it.

pub use ibex_consensus::limits::{BLOCK_SIGOPS_COST_MAX, BLOCK_WEIGHT_MAX};

/// Weight kept free for the header, the coinbase and the transaction count.
pub(crate) const BLOCK_WEIGHT_RESERVED: usize = 4_000;
/// Sigops cost kept free for the coinbase.
pub(crate) const BLOCK_SIGOPS_RESERVED: u64 = 400;
/// Sigops cost a block's planned transactions may have.
pub(crate) const BLOCK_SIGOPS_BUDGET: u64 = BLOCK_SIGOPS_COST_MAX - BLOCK_SIGOPS_RESERVED;
/// Planning stops after this many transactions in a row did not fit.
pub(crate) const PLAN_FAILURES_MAX: u32 = 8;

const _: () = assert!(BLOCK_WEIGHT_RESERVED < BLOCK_WEIGHT_MAX);
const _: () = assert!(BLOCK_SIGOPS_RESERVED < BLOCK_SIGOPS_COST_MAX);

/// Weight a block's planned transactions may have, filling toward
/// `target_weight` (never past consensus's limit).
pub(crate) fn block_weight_budget(target_weight: usize) -> usize {
    target_weight.min(BLOCK_WEIGHT_MAX).saturating_sub(BLOCK_WEIGHT_RESERVED)
}
