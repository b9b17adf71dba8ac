//! Lock times the way wallets use them: Core's anti-fee-sniping nLockTime at
//! the previous height, old-style final transactions, absolute time locks,
//! and BIP68 relative locks by height and by time, each chosen so it is met
//! by the block the transaction goes into (and, for invalid blocks, missed).

use crate::coin::Coin;
use crate::random::DeterministicRng;

use ibex_primitives::lock_time::SEQUENCE_LOCKTIME_GRANULARITY;
pub use ibex_primitives::lock_time::{
    LOCKTIME_THRESHOLD, SEQUENCE_FINAL, SEQUENCE_LOCKTIME_MASK, SEQUENCE_LOCKTIME_TYPE_FLAG,
};

/// nSequence that enables nLockTime but not BIP68 (and not replacement).
pub const SEQUENCE_LOCKTIME_ONLY: u32 = 0xffff_fffe;
/// nSequence signalling replacement (BIP125) with lock time enabled; bit 31
/// (BIP68's disable flag) is set, so no relative lock applies.
pub const SEQUENCE_REPLACEABLE: u32 = 0xffff_fffd;

/// What the block being built knows about time.
#[derive(Debug, Clone, Copy)]
pub struct LockContext<'a> {
    /// Height of the block.
    pub height: u32,
    /// Median time past of the previous block (BIP113's cutoff).
    pub previous_median_time_past: i64,
    /// Median time past of every block of the chain so far, by height.
    pub median_time_past_by_height: &'a [i64],
}

/// A transaction's version, lock time and per-input sequences.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockPolicy {
    /// nVersion (2 where BIP68 must apply).
    pub version: i32,
    /// nLockTime.
    pub lock_time: u32,
    /// nSequence per input.
    pub sequences: Vec<u32>,
}

impl LockPolicy {
    /// nSequence of input `index`.
    pub fn sequence(&self, index: usize) -> u32 {
        self.sequences.get(index).copied().unwrap_or(SEQUENCE_FINAL)
    }
}

/// The median time past a BIP68 time lock starts from for `coin`: that of the
/// block before the coin's block (Core's `CalculateSequenceLocks`).
fn coin_median_time_past(context: &LockContext<'_>, coin: &Coin) -> i64 {
    let index = coin.height.saturating_sub(1) as usize;
    context.median_time_past_by_height.get(index).copied().unwrap_or(0)
}

/// A relative height lock `coin` meets at `context.height`: 1 to its age.
fn height_lock(rng: &mut DeterministicRng, context: &LockContext<'_>, coin: &Coin) -> u32 {
    let age = context.height.saturating_sub(coin.height).min(SEQUENCE_LOCKTIME_MASK);
    rng.between(1, u64::from(age.max(1))) as u32
}

/// A relative time lock `coin` meets, or `None` when too little time passed.
fn time_lock(rng: &mut DeterministicRng, context: &LockContext<'_>, coin: &Coin) -> Option<u32> {
    let elapsed = context.previous_median_time_past - coin_median_time_past(context, coin);
    let units_max =
        (elapsed >> SEQUENCE_LOCKTIME_GRANULARITY).min(i64::from(SEQUENCE_LOCKTIME_MASK));
    (units_max >= 1).then(|| SEQUENCE_LOCKTIME_TYPE_FLAG | rng.between(1, units_max as u64) as u32)
}

/// Picks a lock policy for a transaction spending `spent` that is final and
/// whose sequence locks are met in the block described by `context`.
pub fn choose_lock_policy(
    rng: &mut DeterministicRng,
    context: &LockContext<'_>,
    spent: &[Coin],
) -> LockPolicy {
    let count = spent.len();
    let anti_fee_sniping = context.height.saturating_sub(1 + rng.below(3) as u32);
    match rng.weighted(&[550, 330, 40, 30, 30, 20]) {
        // Core's wallet: version 2, anti-fee-sniping nLockTime near the tip,
        // opt-in replaceable sequences.
        0 => LockPolicy {
            version: 2,
            lock_time: anti_fee_sniping,
            sequences: vec![SEQUENCE_REPLACEABLE; count],
        },
        1 => LockPolicy { version: 1, lock_time: 0, sequences: vec![SEQUENCE_FINAL; count] },
        2 => {
            let seconds_back = 1 + rng.below(7_200) as i64;
            let lock_time = (context.previous_median_time_past - seconds_back)
                .max(i64::from(LOCKTIME_THRESHOLD));
            LockPolicy {
                version: 1,
                lock_time: lock_time as u32,
                sequences: vec![SEQUENCE_LOCKTIME_ONLY; count],
            }
        }
        3 => {
            let sequences = spent.iter().map(|coin| height_lock(rng, context, coin)).collect();
            LockPolicy { version: 2, lock_time: 0, sequences }
        }
        4 => {
            let sequences = spent
                .iter()
                .map(|coin| time_lock(rng, context, coin).unwrap_or(SEQUENCE_FINAL))
                .collect();
            LockPolicy { version: 2, lock_time: 0, sequences }
        }
        _ => LockPolicy {
            version: 2,
            lock_time: anti_fee_sniping,
            sequences: vec![SEQUENCE_LOCKTIME_ONLY; count],
        },
    }
}

/// A sequence that BIP68 does not let `coin` meet at `height` (one block short).
pub fn unmet_height_lock(height: u32, coin: &Coin) -> u32 {
    (height.saturating_sub(coin.height) + 1).min(SEQUENCE_LOCKTIME_MASK)
}
