//! Header and contextual block checks, in Core's order: `CheckBlockHeader`
//! and `ContextualCheckBlockHeader` (as `AcceptBlockHeader` runs them), then
//! `CheckBlock` and `ContextualCheckBlock` (as `AcceptBlock` does), all from
//! `ibex_consensus` with the replay's network parameters.

use ibex_consensus::{
    check_block_header, check_block_on_network, contextual_check_block,
    contextual_check_block_header, HeaderContext,
};
use ibex_primitives::pow::{next_work_required, BlockSummary};
use ibex_primitives::{BlockView, CompactTarget, Height, Params};

use super::{ChainView, Rejection};

/// The header context of the block after `base`'s tip.
fn header_context(
    params: &Params,
    base: &ChainView,
    new_time: u32,
    adjusted_time_seconds: i64,
) -> Result<HeaderContext, Rejection> {
    let summary = |height: u32| {
        let index = height as usize;
        Some(BlockSummary {
            height,
            bits: CompactTarget(*base.bits.get(index)?),
            time: *base.times.get(index)?,
        })
    };
    let last = summary(base.height).ok_or_else(|| Rejection::new("prev-blk-not-found"))?;
    let expected_bits = next_work_required(params, last, new_time, summary)
        .map_err(|_| Rejection::new("prev-blk-not-found"))?;
    Ok(HeaderContext {
        height: Height::new(base.height + 1),
        previous_median_time_past: base.median_time_past.last().copied().unwrap_or(0),
        previous_time: last.time,
        expected_bits,
        adjusted_time_seconds,
    })
}

/// Checks everything before the inputs are looked at.
pub(crate) fn check_header_and_context(
    params: &Params,
    base: &ChainView,
    block: &BlockView<'_>,
    adjusted_time_seconds: i64,
) -> Result<(), Rejection> {
    let header = block.header();
    let block_hash = block.block_hash();
    check_block_header(header, &block_hash, params)?;
    let context = header_context(params, base, header.time, adjusted_time_seconds)?;
    contextual_check_block_header(header, &context, params)?;
    check_block_on_network(block, &block.txids(), &block_hash, params)?;
    contextual_check_block(block, context.height, context.previous_median_time_past, params)?;
    Ok(())
}
