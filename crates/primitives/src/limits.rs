//! Size limits that several crates check (Core's `consensus/consensus.h` and
//! `script/script.h`), defined once here, in the lowest crate: `script`,
//! `consensus`, `blockstore` and `chainstate` all read these.

/// BIP141 weight limit of a block (Core's `MAX_BLOCK_WEIGHT`), in weight units.
pub const BLOCK_WEIGHT_MAX: usize = 4_000_000;
/// Witness bytes weigh one unit, every other byte this many (Core's
/// `WITNESS_SCALE_FACTOR`).
pub const WITNESS_SCALE_FACTOR: usize = 4;
/// Core's `MAX_SCRIPT_SIZE`, in bytes: the largest script the legacy and
/// segwit v0 interpreters run. Longer output scripts are unspendable, so
/// they never enter the UTXO set (and are never spent).
pub const SCRIPT_BYTES_MAX: usize = 10_000;
