//! What an import is about to connect, for the node's progress display:
//! once the headers-first pass has indexed every header of the files, the
//! size of each block of the best header chain above the active tip, as its
//! record in the files gives it. Bytes of block data are a better measure of
//! the work left than blocks (a mainnet block of 2010 is a few hundred bytes,
//! one of 2024 is ~1.5 MB), and the headers-first pass already reads every
//! record's length: the plan costs one hash per header (~0.3 s for mainnet's
//! 900,000) and 4 bytes per block (3.6 MB for mainnet), sent once per
//! import in [`crate::ChainEvent::ImportPlanned`].

use ibex_primitives::Header;

use crate::engine::Chainstate;
pub use crate::vocabulary::ImportPlan;

/// The plan for `records` (each header with its block's size in bytes)
/// against `chainstate`'s index, after the headers were offered. `None`
/// when there is no best header or the tip is already at or above it.
pub(crate) fn build_import_plan(
    chainstate: &Chainstate,
    records: &[(Header, u32)],
) -> Option<ImportPlan> {
    let index = &chainstate.shared.index;
    let best = chainstate.shared.selection.best_header()?;
    let best_header_height = index.entry(best).height;
    let first_height =
        chainstate.active.chain.height().map_or(0, |height| height.saturating_add(1));
    if first_height > best_header_height {
        return None;
    }
    let length = usize::try_from(best_header_height - first_height).ok()?.checked_add(1)?;
    let mut block_bytes = vec![0u32; length];
    for (header, bytes) in records {
        let Some(id) = index.get(&header.block_hash()) else { continue };
        let height = index.entry(id).height;
        if height < first_height || index.ancestor(best, height) != Some(id) {
            continue;
        }
        if let Some(slot) = block_bytes.get_mut((height - first_height) as usize) {
            *slot = *bytes;
        }
    }
    Some(ImportPlan { best_header_height, first_height, block_bytes })
}
