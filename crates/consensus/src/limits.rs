//! Consensus limits (Core's `consensus/consensus.h`).

// Defined in `primitives`, which computes weight and which `blockstore`
// (bounding undo sizes) can reach.
pub use ibex_primitives::limits::{BLOCK_WEIGHT_MAX, WITNESS_SCALE_FACTOR};

/// Signature-operation cost limit of a block.
pub const BLOCK_SIGOPS_COST_MAX: u64 = 80_000;
/// Blocks before a coinbase output can be spent.
pub const COINBASE_MATURITY: u32 = 100;
pub use ibex_primitives::lock_time::{
    LOCKTIME_THRESHOLD, SEQUENCE_FINAL, SEQUENCE_LOCKTIME_DISABLE_FLAG,
    SEQUENCE_LOCKTIME_GRANULARITY, SEQUENCE_LOCKTIME_MASK, SEQUENCE_LOCKTIME_TYPE_FLAG,
};
/// Headers may be this far in the future of the node's adjusted time.
pub const MAX_FUTURE_BLOCK_TIME_SECONDS: i64 = 2 * 60 * 60;
/// BIP94: the first block of a retarget period may be at most this many
/// seconds before its parent (Core's `MAX_TIMEWARP`).
pub const TIMEWARP_SECONDS_MAX: i64 = 600;
/// Blocks whose times make a median time past (Core's `nMedianTimeSpan`).
pub const MEDIAN_TIME_SPAN_BLOCKS: usize = 11;
