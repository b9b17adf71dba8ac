//! What a transaction's nLockTime and its inputs' nSequence values mean
//! (Core's `LOCKTIME_THRESHOLD` in `script/script.h` and the `CTxIn`
//! constants in `primitives/transaction.h`), defined once here for the
//! interpreter (`CHECKLOCKTIMEVERIFY`, `CHECKSEQUENCEVERIFY`), the rules
//! (`IsFinalTx`, BIP68) and the generator.

/// nLockTime values below this are block heights, at or above it Unix times.
pub const LOCKTIME_THRESHOLD: u32 = 500_000_000;
/// nSequence of a final input: it takes no part in nLockTime or CLTV.
pub const SEQUENCE_FINAL: u32 = 0xffff_ffff;
/// BIP68: set in nSequence, the input has no relative lock time (and
/// `OP_CHECKSEQUENCEVERIFY` with this bit in its operand is a NOP).
pub const SEQUENCE_LOCKTIME_DISABLE_FLAG: u32 = 1 << 31;
/// BIP68: set in nSequence, the relative lock time counts 512-second units.
pub const SEQUENCE_LOCKTIME_TYPE_FLAG: u32 = 1 << 22;
/// BIP68: the relative lock time's value bits.
pub const SEQUENCE_LOCKTIME_MASK: u32 = 0x0000_ffff;
/// BIP68: time locks count in units of 2^9 = 512 seconds.
pub const SEQUENCE_LOCKTIME_GRANULARITY: u32 = 9;
