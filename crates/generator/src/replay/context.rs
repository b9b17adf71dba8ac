//! Header and contextual block checks: proof of work, Core's `CheckBlock`,
//! nBits, median time past, finality (BIP113 cutoff), BIP34, the witness
//! commitment and the weight limit, in Core's order.

use ibex_consensus::check_block;
use ibex_consensus::finality::{bip34_height_prefix, is_final};
use ibex_primitives::{check_witness_commitment, BlockView};

use super::{ChainView, Rejection};
use crate::chain::BLOCK_WEIGHT_MAX;
use crate::regtest::{meets_target, REGTEST_BITS};

/// Checks everything before the inputs are looked at.
pub(crate) fn check_header_and_context(
    base: &ChainView,
    block: &BlockView<'_>,
) -> Result<(), Rejection> {
    let header = block.header();
    if !meets_target(&block.block_hash(), header.bits) {
        return Err(Rejection::new("high-hash"));
    }
    check_block(block).map_err(|error| Rejection::new(error.reject_reason()))?;
    if header.bits != REGTEST_BITS {
        return Err(Rejection::new("bad-diffbits"));
    }
    let median_time_past = base.median_time_past.last().copied().unwrap_or(0);
    if i64::from(header.time) <= median_time_past {
        return Err(Rejection::new("time-too-old"));
    }
    let height = base.height + 1;
    if !block.transactions().all(|transaction| is_final(&transaction, height, median_time_past)) {
        return Err(Rejection::new("bad-txns-nonfinal"));
    }
    let prefix = bip34_height_prefix(height);
    let coinbase_ok = block
        .transaction(0)
        .and_then(|coinbase| {
            coinbase.inputs().first().map(|input| input.script_sig.starts_with(&prefix))
        })
        .unwrap_or(false);
    if !coinbase_ok {
        return Err(Rejection::new("bad-cb-height"));
    }
    check_witness_commitment(block).map_err(|error| Rejection::new(error.to_string()))?;
    if block.weight() > BLOCK_WEIGHT_MAX {
        return Err(Rejection::new("bad-blk-weight"));
    }
    Ok(())
}
