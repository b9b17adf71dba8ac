//! `pruneblockchain` (Core's `rpc/blockchain.cpp`): removes the block and
//! undo files whose blocks all lie at or below a height, or below the
//! first block at least two hours older than a timestamp. Core's checks in
//! Core's order, with its codes and words; the node prunes (flushing its
//! coins first) and answers Core's `GetPruneHeight`, or -1 when nothing is
//! pruned.

use super::error::{RpcError, RpcErrorCode};
use super::params::{integer, ArgType, Params};
use super::{arg, Method, MethodContext};
use crate::backend::PruneSettings;
use crate::number::write_i64;

/// Core's `MIN_BLOCKS_TO_KEEP`: blocks below the tip never pruned.
pub(crate) const BLOCKS_TO_KEEP_MIN: u32 = 288;
/// Above this, `pruneblockchain`'s argument is a time, not a height (too
/// high for a height, too low for a time after September 2001).
pub(crate) const HEIGHT_OR_TIME_SPLIT: i32 = 1_000_000_000;
/// Core's `TIMESTAMP_WINDOW`: how much older than the time asked a block
/// may be and still be kept (`MAX_FUTURE_BLOCK_TIME`), in seconds.
pub(crate) const TIMESTAMP_WINDOW_SECONDS: i64 = 2 * 60 * 60;

pub(super) const PRUNEBLOCKCHAIN: Method = Method {
    name: "pruneblockchain",
    category: "blockchain",
    args: &[arg(
        "height",
        ArgType::Number,
        false,
        "The block height to prune up to. May be set to a discrete height, or to a UNIX epoch time\n                  to prune blocks whose block time is at least 2 hours older than the provided timestamp.",
    )],
    description: "Attempts to delete block and undo data up to a specified height or timestamp, if eligible for pruning.\nRequires `-prune` to be enabled at startup. While pruned data may be re-fetched in some cases (e.g., via `getblockfrompeer`), local deletion is irreversible.",
    result: "n    (numeric) Height of the last block pruned",
    handler: pruneblockchain,
};

fn pruneblockchain(
    context: &MethodContext,
    params: &Params<'_>,
    out: &mut Vec<u8>,
) -> Result<(), RpcError> {
    let backend = &context.backend;
    let pruning = backend.pruning().ok_or_else(not_in_prune_mode)?;
    let requested = integer::<i32>(params.get(0))?;
    let height = height_to_prune(
        requested,
        pruning,
        || Ok(backend.tip()?.height),
        |time| Ok(backend.earliest_block_at_least(time)?),
    )?;
    let pruned = backend.prune_block_files(height)?;
    write_i64(out, pruned.map_or(-1, i64::from));
    Ok(())
}

fn not_in_prune_mode() -> RpcError {
    RpcError::new(RpcErrorCode::MiscError, "Cannot prune blocks because node is not in prune mode.")
}

/// Core's checks of `requested` (a height, or a time above
/// [`HEIGHT_OR_TIME_SPLIT`]) in Core's order: the height to prune up to.
/// `tip_height` gives the active chain's height, `earliest_at_least` the
/// first active block whose time or an ancestor's reaches a time.
fn height_to_prune(
    requested: i32,
    pruning: PruneSettings,
    tip_height: impl FnOnce() -> Result<u32, RpcError>,
    earliest_at_least: impl FnOnce(i64) -> Result<Option<u32>, RpcError>,
) -> Result<u32, RpcError> {
    if requested < 0 {
        return Err(RpcError::invalid_parameter("Negative block height.".to_owned()));
    }
    let height = if requested > HEIGHT_OR_TIME_SPLIT {
        // Blocks with a time up to two hours older than a later one's are
        // still kept.
        earliest_at_least(i64::from(requested) - TIMESTAMP_WINDOW_SECONDS)?.ok_or_else(|| {
            RpcError::invalid_parameter(
                "Could not find block with at least the specified timestamp.".to_owned(),
            )
        })?
    } else {
        requested.unsigned_abs()
    };
    let tip_height = tip_height()?;
    if tip_height < pruning.prune_after_height {
        return Err(RpcError::new(RpcErrorCode::MiscError, "Blockchain is too short for pruning."));
    }
    if height > tip_height {
        return Err(RpcError::invalid_parameter(
            "Blockchain is shorter than the attempted prune height.".to_owned(),
        ));
    }
    // Core subtracts in unsigned arithmetic: below 288 blocks the
    // difference wraps and no height is above it.
    match tip_height.checked_sub(BLOCKS_TO_KEEP_MIN) {
        Some(keep_above) if height > keep_above => Ok(keep_above),
        _ => Ok(height),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::methods::control::full_help;

    const MANUAL: PruneSettings =
        PruneSettings { automatic_target_bytes: None, prune_after_height: 1_000 };

    /// The checks against a chain of `tip` blocks whose block at height
    /// `h` has time `1_300_000_000 + 600 h`.
    fn checked(requested: i32, tip: u32, pruning: PruneSettings) -> Result<u32, RpcError> {
        height_to_prune(
            requested,
            pruning,
            || Ok(tip),
            |time| {
                let since = u64::try_from(time - 1_300_000_000).unwrap_or(0);
                Ok(u32::try_from(since.div_ceil(600)).ok().filter(|height| *height <= tip))
            },
        )
    }

    fn error(result: Result<u32, RpcError>) -> (i32, String) {
        let error = result.unwrap_err();
        (error.code.number(), error.message.into_owned())
    }

    #[test]
    fn heights_are_checked_and_clamped_as_core_does() {
        assert_eq!(checked(500, 2_000, MANUAL).unwrap(), 500);
        assert_eq!(checked(0, 2_000, MANUAL).unwrap(), 0);
        assert_eq!(checked(1_712, 2_000, MANUAL).unwrap(), 1_712);
        // Within 288 of the tip: the highest height that keeps 288.
        assert_eq!(checked(1_713, 2_000, MANUAL).unwrap(), 1_712);
        assert_eq!(checked(2_000, 2_000, MANUAL).unwrap(), 1_712);
        assert_eq!(error(checked(-1, 2_000, MANUAL)), (-8, "Negative block height.".to_owned()));
        assert_eq!(
            error(checked(2_001, 2_000, MANUAL)),
            (-8, "Blockchain is shorter than the attempted prune height.".to_owned())
        );
        // Exactly a billion is still a height.
        assert_eq!(
            error(checked(HEIGHT_OR_TIME_SPLIT, 2_000, MANUAL)),
            (-8, "Blockchain is shorter than the attempted prune height.".to_owned())
        );
        assert_eq!(
            error(checked(5, 999, MANUAL)),
            (-1, "Blockchain is too short for pruning.".to_owned())
        );
        assert_eq!(checked(5, 1_000, MANUAL).unwrap(), 5);
        // Below 288 blocks Core's unsigned difference wraps: no clamp.
        let fast = PruneSettings { prune_after_height: 100, ..MANUAL };
        assert_eq!(checked(200, 200, fast).unwrap(), 200);
        assert_eq!(checked(200, 288, fast).unwrap(), 0);
    }

    #[test]
    fn a_time_names_the_first_block_two_hours_older_or_later() {
        // Block 500 has time 1_300_300_000; a time two hours later names it.
        let time = 1_300_300_000 + 7_200;
        assert_eq!(checked(time, 2_000, MANUAL).unwrap(), 500);
        assert_eq!(checked(time + 1, 2_000, MANUAL).unwrap(), 501);
        // A time near the tip is clamped as a height would be.
        assert_eq!(checked(1_300_000_000 + 600 * 1_900 + 7_200, 2_000, MANUAL).unwrap(), 1_712);
        assert_eq!(
            error(checked(i32::MAX, 2_000, MANUAL)),
            (-8, "Could not find block with at least the specified timestamp.".to_owned())
        );
        // The time is looked up before the chain's length is checked.
        assert_eq!(
            error(checked(i32::MAX, 10, MANUAL)),
            (-8, "Could not find block with at least the specified timestamp.".to_owned())
        );
        assert_eq!(error(checked(-5, 10, MANUAL)), (-8, "Negative block height.".to_owned()));
    }

    #[test]
    fn help_is_cores() {
        let help = full_help(&PRUNEBLOCKCHAIN);
        assert!(help.starts_with(
            "pruneblockchain height\n\nAttempts to delete block and undo data up to a specified height or timestamp, if eligible for pruning.\nRequires `-prune` to be enabled at startup. While pruned data may be re-fetched in some cases (e.g., via `getblockfrompeer`), local deletion is irreversible.\n"
        ), "{help}");
        assert!(help.contains("1. height (numeric, required) The block height to prune up to. May be set to a discrete height, or to a UNIX epoch time\n                  to prune blocks whose block time is at least 2 hours older than the provided timestamp.\n"), "{help}");
        assert!(help.ends_with("Height of the last block pruned"), "{help}");
    }
}
