//! Header checks against the block index (Core's `AcceptBlockHeader` and
//! the contextual half of `AcceptBlock`): the part of the headers stage
//! that needs the parent's context. Pure functions of the index, the
//! parameters and the clock; chain selection ([`super::selection`]) is the
//! other half of the stage.

use std::time::{SystemTime, UNIX_EPOCH};

use ibex_consensus::{
    check_block_header, contextual_check_block_header, contextual_check_block_known, BlockError,
    HeaderContext,
};
use ibex_primitives::pow::{next_work_required, BlockSummary};
use ibex_primitives::{BlockHash, BlockView, CompactTarget, Header, Params};

use crate::index::{BlockIndex, EntryId};

/// `ContextualCheckBlockHeader` of `header` on the indexed `parent`:
/// difficulty bits, time against the median time past and the clock,
/// version.
pub(crate) fn check_header_context(
    index: &BlockIndex,
    params: &Params,
    header: &Header,
    parent: EntryId,
) -> Result<(), BlockError> {
    let parent_entry = index.entry(parent);
    let summary = |id: EntryId| {
        let entry = index.entry(id);
        BlockSummary {
            height: entry.height,
            bits: CompactTarget(entry.header.bits),
            time: entry.header.time,
        }
    };
    let expected_bits = next_work_required(params, summary(parent), header.time, |height| {
        index.ancestor(parent, height).map(summary)
    })
    .map_err(|_| BlockError::BadDifficultyBits { bits: header.bits, expected: 0 })?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |elapsed| elapsed.as_secs());
    let context = HeaderContext {
        height: parent_entry.height + 1,
        previous_median_time_past: index.median_time_past(parent),
        previous_time: parent_entry.header.time,
        expected_bits,
        adjusted_time_seconds: i64::try_from(now).unwrap_or(i64::MAX),
    };
    contextual_check_block_header(header, &context, params)
}

/// `ContextualCheckBlock` of `block` on the indexed `parent`: finality,
/// BIP34's height in the coinbase, the witness commitment (unless
/// `witness_checked`: matched already, with segwit active), the weight.
pub(crate) fn check_block_context(
    index: &BlockIndex,
    params: &Params,
    block: &BlockView<'_>,
    parent: EntryId,
    witness_checked: bool,
) -> Result<(), BlockError> {
    let height = index.entry(parent).height + 1;
    let median_time_past = index.median_time_past(parent);
    contextual_check_block_known(block, height, median_time_past, params, witness_checked)
}

/// Whether a header alone may be indexed: proof of work, a known parent
/// that has not failed, and the header's context.
pub(crate) fn header_acceptable(
    index: &BlockIndex,
    params: &Params,
    header: &Header,
    hash: &BlockHash,
) -> bool {
    let Some(parent) = index.get(&header.previous_block_hash) else { return false };
    if index.entry(parent).status.is_failed() {
        return false;
    }
    check_block_header(header, hash, params).is_ok()
        && check_header_context(index, params, header, parent).is_ok()
}
