//! SwiftSync's assumevalid mode (BIP 457 draft, `docs/swiftsync.md`): the
//! coin set at the hints file's terminal height `H` built from the stored
//! blocks 1 to `H` without looking a coin up, the blocks accounted on
//! every core in any order, and proven by the aggregate before the
//! chainstate takes it.
//!
//! # What a block still gets checked for, and what is replaced
//! Each block was accepted (Core's `CheckBlock` and `ContextualCheckBlock`:
//! size, weight, merkle root and its mutation, witness commitment, BIP34
//! height, finality against the header chain's median time) and is
//! checked again with `CheckBlock` when read back, as Core's `ConnectBlock`
//! does. Scripts are not run: the terminal block must be one whose scripts
//! Core would skip (`-assumevalid`, with its two weeks of work above),
//! else the attempt is not made. What needs the spent coins is replaced:
//! - that every input spends an output created earlier and not spent
//!   before: the aggregate ([`ibex_consensus::swiftsync`]) is zero at `H`
//!   exactly when the inputs spend each output the hints leave out once
//!   (with odds of 2^-256 against, under a salt no one else knows);
//! - the amounts (`bad-txns-in-belowout`, fees, `bad-cb-amount`): one
//!   check of the whole supply at `H`, the outputs left unspent plus those
//!   burnt being at most the subsidies of blocks 1 to `H`;
//! - BIP30 where BIP34 does not imply it (mainnet and testnet3 before the
//!   BIP34 height): no coinbase transaction id may repeat an earlier one,
//!   the two repeats Core knows aside;
//! - coinbase maturity, BIP68 sequence locks and the sigop cost of P2SH
//!   and witness inputs need the spent coins' heights and scripts: they
//!   are not checked below `H`, which the assumevalid block's ancestry
//!   vouches for, as it does for scripts.
//!
//! A check that fails ends the attempt ([`SwiftSyncFailure`]): its coins
//! are discarded and the node connects the blocks the usual way, which
//! finds whatever is wrong with the chain, if anything is.
//!
//! # Napkin math
//! Per block: read and parse (~0.5 ms for 1.4 MB), `CheckBlock` (the
//! merkle root, ~0.1 ms), and per input or output left out one SHA-256
//! compression (~0.2 us with SHA-NI) and a hash-map probe for the block's
//! own transactions. Mainnet to 930,000: ~6 billion compressions, ~20
//! CPU-minutes; ~165 M coins written twice (~10 GB to bucket files, then
//! as tables RocksDB never compacts). No lookups, no erasures: the
//! connect stage's work is gone, and the blocks take every core at once.
//! Measured on the `utxo-heavy` chain (2,000 blocks, 2.2 GB, 26 M coins
//! kept, 7 M inputs) from stored blocks at `-dbcache=100`: 16 s on two
//! cores, 27 CPU-s (`docs/benchmarks.md`).
//!
//! # Crash safety
//! The coins are staged in the active chainstate's empty database under
//! the `'S'` record (`crate::coins::database::staged`): a crash leaves
//! coins no block names, which the next open discards; the attempt then
//! starts again from block 1 with a new salt (the partial aggregate means
//! nothing under another salt). A pass keeps a checkpoint every few
//! minutes and at a shutdown (mode, sums, salt, the heights accounted, the
//! bucket files' lengths), from which the next start in the same mode with
//! the same hints resumes (`checkpoint`); the fully validating mode's fetch
//! then asks no peer for the coins of a height accounted.

mod checkpoint;
mod claimed;
pub mod full;
mod holding;
mod job;
mod recent;
mod refusals;
mod run;
mod sums;
#[cfg(test)]
mod tests;
mod worker;

use std::sync::Arc;

use ibex_consensus::swiftsync::full::FullAccountError;
use ibex_consensus::swiftsync::SwiftSyncBlockError;
use ibex_consensus::BlockError;
use ibex_primitives::hints::{HintsError, HintsFile};
use ibex_primitives::BlockHash;

pub(crate) use checkpoint::{hints_digest, PassCheckpoint};
pub use claimed::{ClaimMismatch, ClaimedSpentCoins};
pub(crate) use job::RunBlock;
pub use recent::{spent_coins_cutoff, RECENT_BLOCKS_CACHED_MAX, SPENT_COINS_RECENT_BLOCKS};
pub use refusals::{
    SpentCoinsRefusal, SPENT_COINS_REFUSALS_PER_ATTEMPT_MAX, SPENT_COINS_REFUSALS_PER_BLOCK_MAX,
};
pub(crate) use run::{LivePass, PassEnd, PassSetup};

/// How blocks below the terminal height are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwiftSyncMode {
    /// Without the spent coins: scripts and the rules that need the coins
    /// are vouched for by `-assumevalid` (see the module docs).
    AssumeValid,
    /// With the coins each block spent, as peers claim them (BIP 455):
    /// every rule Core's `ConnectBlock` checks, scripts included, and the
    /// aggregate over whole coins proves the claims ([`full`]).
    FullyValidating,
}

/// A running pass as the network side sees it: which spent coins it still
/// needs (the fully validating mode fetches those of every height not
/// accounted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwiftSyncPassStart {
    /// The terminal block the heights belong to.
    pub terminal: BlockHash,
    /// Whether the block at height `h` was accounted when the pass started
    /// (resumed from a checkpoint), at `h - 1`; one entry a height to the
    /// terminal height.
    pub accounted: Arc<[bool]>,
}

/// A hints file to sync with: checked whole when read, handed to the
/// engine before blocks are connected.
#[derive(Debug, Clone)]
pub struct SwiftSyncPlan {
    hints: Arc<HintsFile>,
    mode: SwiftSyncMode,
}

impl SwiftSyncPlan {
    /// A plan over `hints` in the assumevalid mode.
    pub fn new(hints: HintsFile) -> SwiftSyncPlan {
        SwiftSyncPlan { hints: Arc::new(hints), mode: SwiftSyncMode::AssumeValid }
    }

    /// A plan over `hints` in the fully validating mode: each block waits
    /// for its spent coins ([`crate::Chainstate::swiftsync_spent_coins`]).
    pub fn fully_validating(hints: HintsFile) -> SwiftSyncPlan {
        SwiftSyncPlan { hints: Arc::new(hints), mode: SwiftSyncMode::FullyValidating }
    }

    /// How blocks are checked.
    pub fn mode(&self) -> SwiftSyncMode {
        self.mode
    }

    /// The same hints in `mode`.
    pub fn with_mode(self, mode: SwiftSyncMode) -> SwiftSyncPlan {
        SwiftSyncPlan { mode, ..self }
    }

    /// The hints.
    pub fn hints(&self) -> &HintsFile {
        &self.hints
    }

    /// The hints, shared.
    pub(crate) fn shared_hints(&self) -> Arc<HintsFile> {
        self.hints.clone()
    }

    /// The last block the hints cover.
    pub fn terminal_height(&self) -> u32 {
        self.hints.terminal_height()
    }
}

/// Why a SwiftSync attempt was given up, the node syncing the usual way.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SwiftSyncFailure {
    /// The chain ended below the terminal height.
    #[error("the hints end at height {terminal_height}, above the best header ({best_height})")]
    TerminalAboveChain {
        /// The hints' terminal height.
        terminal_height: u32,
        /// The best header's height.
        best_height: u32,
    },
    /// Blocks below the terminal height are not stored, and no more come.
    #[error("block {height} ({hash}) is not stored")]
    BlockMissing {
        /// The first block missing.
        height: u32,
        /// Its hash.
        hash: BlockHash,
    },
    /// The terminal block's scripts would be checked (`-assumevalid` does
    /// not cover it): the assumevalid mode may not skip them.
    #[error(
        "the scripts of block {height} ({hash}) are to be checked: -assumevalid does not cover it"
    )]
    ScriptsRequired {
        /// The terminal height.
        height: u32,
        /// The terminal block.
        hash: BlockHash,
    },
    /// The fully validating mode: every block is stored, but no coins
    /// came for this one, and no more blocks or coins come.
    #[error("no spent coins came for block {height} ({hash})")]
    SpentCoinsMissing {
        /// The first block without its coins.
        height: u32,
        /// Its hash.
        hash: BlockHash,
    },
    /// The coins database holds coins already.
    #[error("the coins database is not empty")]
    CoinsPresent,
    /// A block fails `CheckBlock` when read back.
    #[error("block {height} ({hash}) fails CheckBlock: {reason}")]
    CheckBlock {
        /// Its height.
        height: u32,
        /// Its hash.
        hash: BlockHash,
        /// Core's reason.
        reason: BlockError,
    },
    /// A block's accounting failed (a hint beyond it, a spend of a later
    /// output of its own).
    #[error("block {hash}: {source}")]
    Block {
        /// Its hash.
        hash: BlockHash,
        /// Why.
        source: SwiftSyncBlockError,
    },
    /// A block fails its fully validating accounting with the coins
    /// claimed for it (a rule of `ConnectBlock`, or claims that do not fit
    /// its inputs).
    #[error("block {hash}: {source}")]
    FullBlock {
        /// Its hash.
        hash: BlockHash,
        /// Why.
        source: FullAccountError,
    },
    /// Spent coins claimed for a block that do not fit the request (its
    /// cutoff, `claimed`).
    #[error("block {height} ({hash}), input {input}: {mismatch}")]
    SpentCoinsClaim {
        /// Its height.
        height: u32,
        /// Its hash.
        hash: BlockHash,
        /// The input's index among the block's inputs after the coinbase.
        input: u32,
        /// How.
        mismatch: ClaimMismatch,
    },
    /// An input's script fails with the coin claimed for it.
    #[error("block {height} ({hash}): {rejection}")]
    Script {
        /// Its height.
        height: u32,
        /// Its hash.
        hash: BlockHash,
        /// Core's reason.
        rejection: ibex_consensus::BlockRejection,
    },
    /// An output value out of range, or a coin not storable.
    #[error("block {height} ({hash}): an output's value is out of range")]
    ValueOutOfRange {
        /// Its height.
        height: u32,
        /// Its hash.
        hash: BlockHash,
    },
    /// The hints file could not be read for a block.
    #[error("the hints file: {0}")]
    Hints(#[from] HintsError),
    /// A coinbase repeats an earlier one's transaction id (BIP30).
    #[error("coinbase {txid} repeats an earlier coinbase's transaction id (BIP30)")]
    RepeatedCoinbase {
        /// The transaction id.
        txid: ibex_primitives::Txid,
    },
    /// The outputs left unspent and burnt hold more than the subsidies.
    #[error("the outputs left unspent and burnt hold {found} sat, the subsidies to height {terminal_height} {limit} sat")]
    SupplyExceeded {
        /// Their value.
        found: u128,
        /// The subsidies of blocks 1 to the terminal height.
        limit: u64,
        /// The terminal height.
        terminal_height: u32,
    },
    /// The inputs do not spend exactly the outputs the hints leave out.
    #[error(
        "the aggregate is not zero at height {terminal_height}: the hints do not match the chain"
    )]
    AggregateNotZero {
        /// The terminal height.
        terminal_height: u32,
    },
    /// The OS gave no random salt.
    #[error("no random salt for the aggregate")]
    NoRandomness,
}

/// What a SwiftSync attempt did, for the log.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum SwiftSyncEvent {
    /// An attempt waits for the blocks to the terminal height.
    Waiting {
        /// The terminal height.
        terminal_height: u32,
    },
    /// An attempt started: every block to the terminal height is stored.
    Started {
        /// The terminal block.
        terminal: BlockHash,
        /// Its height.
        terminal_height: u32,
        /// Accounting threads.
        worker_count: usize,
    },
    /// The proof held: the chainstate is at the terminal block.
    Completed {
        /// The terminal block.
        terminal: BlockHash,
        /// Its height.
        terminal_height: u32,
        /// Coins written.
        coin_count: u64,
        /// Inputs subtracted from the aggregate.
        input_count: u64,
        /// Wall time, in milliseconds.
        elapsed_ms: u64,
        /// Of which writing the staged coins as tables, once every block
        /// was accounted, in milliseconds.
        tables_ms: u64,
    },
    /// A peer's spent coins for a block were refused by the block's
    /// checks: the block waits for another peer's.
    SpentCoinsRefused(SpentCoinsRefusal),
    /// The attempt was given up; the node syncs the usual way.
    GivenUp {
        /// Why.
        failure: SwiftSyncFailure,
    },
    /// The chain was past genesis already: nothing to do.
    NotNeeded {
        /// The chain's height.
        height: u32,
    },
    /// A start found the coins of an attempt that did not finish and
    /// discarded them.
    UnfinishedDiscarded,
    /// The node stopped in the middle of a pass and kept a checkpoint.
    Suspended {
        /// Blocks accounted so far.
        accounted_count: u32,
        /// The terminal height.
        terminal_height: u32,
    },
    /// A pass kept a checkpoint while it runs.
    Checkpointed {
        /// Blocks accounted so far.
        accounted_count: u32,
        /// The terminal height.
        terminal_height: u32,
    },
    /// A pass resumed from the last checkpoint (a shutdown's or one kept
    /// while it ran).
    Resumed {
        /// Blocks accounted before.
        accounted_count: u32,
        /// The terminal height.
        terminal_height: u32,
    },
}

impl SwiftSyncEvent {
    /// Whether it is logged as a warning.
    pub fn is_warning(&self) -> bool {
        matches!(
            self,
            SwiftSyncEvent::GivenUp { .. }
                | SwiftSyncEvent::UnfinishedDiscarded
                | SwiftSyncEvent::SpentCoinsRefused(_)
        )
    }
}

impl std::fmt::Display for SwiftSyncEvent {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SwiftSyncEvent::Waiting { terminal_height } => write!(
                formatter,
                "[swiftsync] waiting for every block to height {terminal_height} before connecting"
            ),
            SwiftSyncEvent::Started { terminal, terminal_height, worker_count } => write!(
                formatter,
                "[swiftsync] accounting blocks 1 to {terminal_height} ({terminal}) on {worker_count} threads"
            ),
            SwiftSyncEvent::Completed {
                terminal,
                terminal_height,
                coin_count,
                input_count,
                elapsed_ms,
                tables_ms,
            } => write!(
                formatter,
                "[swiftsync] the aggregate is zero: chainstate at height {terminal_height} ({terminal}), {coin_count} coins written, {input_count} inputs accounted in {:.1} s (tables {:.1} s)",
                *elapsed_ms as f64 / 1000.0,
                *tables_ms as f64 / 1000.0
            ),
            SwiftSyncEvent::SpentCoinsRefused(refusal) => write!(
                formatter,
                "[swiftsync] spent coins of block {} ({}) from {} refused, asking another peer: {}",
                refusal.height,
                refusal.hash,
                refusal.source,
                refusal.failure
            ),
            SwiftSyncEvent::GivenUp { failure } => write!(
                formatter,
                "[swiftsync] given up, syncing without hints: {failure}"
            ),
            SwiftSyncEvent::NotNeeded { height } => write!(
                formatter,
                "[swiftsync] not used: the chain is at height {height} already"
            ),
            SwiftSyncEvent::Suspended { accounted_count, terminal_height } => write!(
                formatter,
                "[swiftsync] checkpoint kept: {accounted_count} of {terminal_height} blocks accounted; the next start with the same hints resumes from it"
            ),
            SwiftSyncEvent::Checkpointed { accounted_count, terminal_height } => write!(
                formatter,
                "[swiftsync] checkpoint: {accounted_count} of {terminal_height} blocks accounted"
            ),
            SwiftSyncEvent::Resumed { accounted_count, terminal_height } => write!(
                formatter,
                "[swiftsync] resuming from the last checkpoint: {accounted_count} of {terminal_height} blocks accounted before"
            ),
            SwiftSyncEvent::UnfinishedDiscarded => formatter.write_str(
                "[swiftsync] discarded the coins of an attempt that did not finish; it starts again",
            ),
        }
    }
}
