//! Header checks against the block index (Core's `AcceptBlockHeader` and
//! the contextual half of `AcceptBlock`): the part of the headers stage
//! that needs the parent's context. Pure functions of the index, the
//! parameters and the clock; chain selection ([`super::selection`]) is the
//! other half of the stage.

use std::time::{SystemTime, UNIX_EPOCH};

/// The Unix time now, or `mock_time_seconds` when set (Core's `NodeClock`,
/// which `-mocktime` sets on regtest).
pub(crate) fn now_seconds(mock_time_seconds: Option<i64>) -> i64 {
    mock_time_seconds.unwrap_or_else(|| {
        let elapsed = SystemTime::now().duration_since(UNIX_EPOCH);
        elapsed.map_or(0, |elapsed| i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX))
    })
}

use ibex_consensus::{
    check_block_header, contextual_check_block_header, contextual_check_block_known, BlockError,
    HeaderContext,
};
use ibex_primitives::pow::{next_work_required, BlockSummary};
use ibex_primitives::{BlockHash, BlockView, CompactTarget, Header, Params};

use crate::index::{BlockIndex, EntryId};

/// `ContextualCheckBlockHeader` of `header` on the indexed `parent`:
/// difficulty bits, time against the median time past and the clock
/// (`now_seconds`: Unix time, `-mocktime`'s when set), version.
pub(crate) fn check_header_context(
    index: &BlockIndex,
    params: &Params,
    header: &Header,
    parent: EntryId,
    now_seconds: i64,
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
    let context = HeaderContext {
        height: (parent_entry.height + 1).into(),
        previous_median_time_past: index.median_time_past(parent),
        previous_time: parent_entry.header.time,
        expected_bits,
        adjusted_time_seconds: now_seconds,
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
    contextual_check_block_known(block, height.into(), median_time_past, params, witness_checked)
}

/// Whether a header alone may be indexed: proof of work, a known parent
/// that has not failed, and the header's context.
pub(crate) fn header_acceptable(
    index: &BlockIndex,
    params: &Params,
    header: &Header,
    hash: &BlockHash,
    now_seconds: i64,
) -> bool {
    let Some(parent) = index.get(&header.previous_block_hash) else { return false };
    if index.entry(parent).status.is_failed() {
        return false;
    }
    check_block_header(header, hash, params).is_ok()
        && check_header_context(index, params, header, parent, now_seconds).is_ok()
}
