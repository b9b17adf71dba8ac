//! Proof of work: 256-bit targets, their compact form (`nBits`), checking a
//! block hash, the work a block adds to its chain, and the difficulty
//! retarget, all bit for bit as Bitcoin Core computes them.
//!
//! The 256-bit integer is our own ([`U256`], ~200 lines) rather than a crate:
//! consensus needs Core's exact `arith_uint256` behaviour (multiplication
//! and addition wrapping modulo 2^256, shifts that drop bits, `getdouble`'s
//! limb-by-limb rounding for `log2_work`), only a handful of operations, and
//! no dependency to audit or build on a shared two-core machine.
//!
//! Cold path: one target check and one work sum per header, a retarget per
//! 2,016 blocks; no napkin math needed.

mod compact;
mod retarget;
mod u256;
mod work;

pub use compact::{CompactTarget, ExpandedCompact, Target};
pub use retarget::{
    calculate_next_work_required, next_work_required, permitted_difficulty_transition,
    BlockSummary, RetargetError,
};
pub use u256::U256;
pub use work::{block_proof, check_proof_of_work, log2_work, ChainWork};
