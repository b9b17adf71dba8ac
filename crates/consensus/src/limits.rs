//! Consensus limits (Core's `consensus/consensus.h`).

/// BIP141 weight limit of a block.
pub const BLOCK_WEIGHT_MAX: usize = 4_000_000;
/// Witness bytes count once, other bytes this many times.
pub const WITNESS_SCALE_FACTOR: usize = 4;
/// Signature-operation cost limit of a block.
pub const BLOCK_SIGOPS_COST_MAX: u64 = 80_000;
/// Blocks before a coinbase output can be spent.
pub const COINBASE_MATURITY: u32 = 100;
/// nLockTime values below this are heights, at or above it times.
pub const LOCKTIME_THRESHOLD: u32 = 500_000_000;
/// An input with this nSequence does not take part in nLockTime.
pub const SEQUENCE_FINAL: u32 = 0xffff_ffff;
/// BIP68: this nSequence bit disables the relative lock.
pub const SEQUENCE_LOCKTIME_DISABLE_FLAG: u32 = 1 << 31;
/// BIP68: this nSequence bit makes the relative lock a time (512-second units).
pub const SEQUENCE_LOCKTIME_TYPE_FLAG: u32 = 1 << 22;
/// BIP68: the lock value's bits.
pub const SEQUENCE_LOCKTIME_MASK: u32 = 0x0000_ffff;
/// BIP68: time locks count in units of 2^9 = 512 seconds.
pub const SEQUENCE_LOCKTIME_GRANULARITY: u32 = 9;
/// Headers may be this far in the future of the node's adjusted time.
pub const MAX_FUTURE_BLOCK_TIME_SECONDS: i64 = 2 * 60 * 60;
/// BIP94: the first block of a retarget period may be at most this many
/// seconds before its parent (Core's `MAX_TIMEWARP`).
pub const TIMEWARP_SECONDS_MAX: i64 = 600;
/// Blocks whose times make a median time past (Core's `nMedianTimeSpan`).
pub const MEDIAN_TIME_SPAN_BLOCKS: usize = 11;
